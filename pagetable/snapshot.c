/* SPDX-License-Identifier: MIT */
/* iopt_snapshot: which pages of a range are present (PREFETCH_NO_FAULT advice, tests). */
#include <string.h>

#include "iopt_int.h"

struct snap {
	uint64_t start;
	uint64_t *present, *writable;
	long count;
};

static void set_bits(uint64_t *map, uint64_t first, uint64_t n)
{
	for (uint64_t i = first; i < first + n; i++)
		map[i / 64] |= 1ull << (i % 64);
}

static int snap_visit(void *arg, uint64_t va, uint64_t pages, _Atomic uint64_t *slot,
	uint64_t e, uint64_t sub)
{
	struct snap *s = arg;
	uint64_t first = (va - s->start) >> IOPT_PAGE_SHIFT;

	(void)slot;
	(void)sub;
	s->count += (long)pages;
	if (s->present)
		set_bits(s->present, first, pages);
	if (s->writable && iopt_pte_writable(e))
		set_bits(s->writable, first, pages);
	return 0;
}

long iopt_snapshot(struct iopt *d, uint64_t va, uint64_t len, uint64_t *present,
	uint64_t *writable)
{
	struct snap s = { .present = present, .writable = writable };
	uint64_t end;
	int rc = iopt_check_range(d, va, len, &s.start, &end);
	size_t words;

	if (rc)
		return rc;
	words = (size_t)(((end - s.start) >> IOPT_PAGE_SHIFT) + 63) / 64;
	if (present)
		memset(present, 0, words * sizeof(uint64_t));
	if (writable)
		memset(writable, 0, words * sizeof(uint64_t));
	pthread_mutex_lock(&d->lock);
	iopt_walk_present(d, s.start, end, snap_visit, &s);
	pthread_mutex_unlock(&d->lock);
	return s.count;
}
