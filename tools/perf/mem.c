/* SPDX-License-Identifier: MIT */
/* mem — see mem.h. */
#include "mem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096ull

/* The counters an MR contributes to the device's sums (gauges left out). */
static const char *const mr_counts[] = { "page_faults", "page_fault_pages",
	"page_invalidations", "page_invalidated_pages", "page_prefetch", "fault_merged",
	"fault_races", "fault_failed" };

static uint64_t page_up(uint64_t v)
{
	return (v + PAGE - 1) & ~(PAGE - 1);
}

/* A fresh private mapping with a PROT_NONE page after it: the guard keeps the kernel
 * from merging it with a neighbour, so each area is a VMA the notifier watches alone. */
static uint8_t *map_fresh(size_t len)
{
	uint8_t *p = mmap(NULL, len + PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + len, PAGE, PROT_NONE)) {
		munmap(p, len + PAGE);
		return NULL;
	}
	return p;
}

static struct odpemu_mr *reg(struct perf_dev *d, enum perf_odp odp, void *p, size_t len)
{
	struct odpemu_mr *mr = odpemu_reg_mr(d->pd, p, len, PERF_MR_ACCESS |
					     (odp == PERF_ODP_EXPLICIT ? ODPEMU_ACCESS_ON_DEMAND : 0));
	const char *why;

	if (mr)
		return mr;
	why = odpemu_last_error(d->ctx);
	perf_err("reg_mr of %zu bytes (%s) on %s: %s%s%s", len, odp == PERF_ODP_OFF ? "pinned" :
		 "ODP", d->name, strerror(errno), *why ? ": " : "", why);
	return NULL;
}

static int slot_alloc(struct perf_area *a, struct perf_dev *d, unsigned j, bool touch)
{
	if (!(a->sbase[j] = map_fresh(a->slot_len))) {
		perf_err("cannot map a %zu-byte buffer: %s", a->slot_len, strerror(errno));
		return -1;
	}
	if (touch)
		memset(a->sbase[j], 0, a->slot_len);
	if (a->odp == PERF_ODP_IMPLICIT)
		return 0;
	return (a->smr[j] = reg(d, a->odp, a->sbase[j], a->slot_len)) ? 0 : -1;
}

static int make_churned(struct perf_area *a, struct perf_dev *d, bool touch)
{
	a->slot_len = page_up(a->stride);
	a->sbase = calloc(a->nslots, sizeof(*a->sbase));
	a->smr = a->odp == PERF_ODP_IMPLICIT ? NULL : calloc(a->nslots, sizeof(*a->smr));
	if (!a->sbase || (a->odp != PERF_ODP_IMPLICIT && !a->smr))
		return perf_err("out of memory"), -1;
	for (unsigned j = 0; j < a->nslots; j++)
		if (slot_alloc(a, d, j, touch))
			return -1;
	return 0;
}

int area_make(struct perf_area *a, struct perf_dev *d, enum perf_odp odp, unsigned nslots,
	      uint64_t stride, bool churn, bool touch)
{
	*a = (struct perf_area){ .stride = stride, .nslots = nslots, .odp = odp };
	if (!nslots)
		return 0;
	if (odp == PERF_ODP_IMPLICIT)
		a->lkey = d->implicit->lkey, a->rkey = d->implicit->rkey;
	if (churn)
		return make_churned(a, d, touch);
	a->len = page_up(stride * nslots);
	if (!(a->base = map_fresh(a->len))) {
		perf_err("cannot map %zu bytes of buffers: %s (use a smaller -s or --tx-depth)",
			 a->len, strerror(errno));
		return -1;
	}
	if (touch)
		memset(a->base, 0, a->len);
	if (odp == PERF_ODP_IMPLICIT)
		return 0;
	if (!(a->mr = reg(d, odp, a->base, a->len)))
		return -1;
	a->lkey = a->mr->lkey;
	a->rkey = a->mr->rkey;
	return 0;
}

static void retire(struct perf_dev *d, struct odpemu_mr *mr, struct ctrs *retired)
{
	static struct ctrs c;

	if (!retired || ctrs_query(d->ctx, ODPEMU_COUNTERS_MR, mr->handle, &c))
		return;
	for (size_t i = 0; i < sizeof(mr_counts) / sizeof(mr_counts[0]); i++)
		ctrs_add(retired, mr_counts[i], ctrs_get(&c, mr_counts[i]));
}

int area_churn(struct perf_area *a, struct perf_dev *d, unsigned j, struct ctrs *retired)
{
	if (a->smr && a->smr[j]) {
		if (a->odp == PERF_ODP_EXPLICIT)
			retire(d, a->smr[j], retired);
		odpemu_dereg_mr(a->smr[j]);
		a->smr[j] = NULL;
	}
	munmap(a->sbase[j], a->slot_len + PAGE);
	return slot_alloc(a, d, j, false);
}

void area_recycle(struct perf_area *a, unsigned first, unsigned n)
{
	uint64_t start = (uint64_t)first * a->stride, end = (uint64_t)(first + n) * a->stride;

	/* pinned pages live in the daemon's shared memory: nothing to drop, nothing faults */
	if (a->odp == PERF_ODP_OFF || !a->base || !n)
		return;
	start &= ~(PAGE - 1);
	end = page_up(end) < a->len ? page_up(end) : a->len;
	if (end > start)
		madvise(a->base + start, end - start, MADV_DONTNEED);
}

int area_prefetch(struct perf_area *a, struct perf_dev *d)
{
	const uint64_t chunk = 1u << 30;	/* an SGE length is 32 bits */

	for (unsigned j = 0; a->sbase && j < a->nslots; j++) {
		struct odpemu_sge sge = { (uintptr_t)a->sbase[j], (uint32_t)a->slot_len,
					  area_lkey(a, j) };

		if (odpemu_advise_mr(d->pd, ODPEMU_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				     ODPEMU_ADVISE_MR_FLAG_FLUSH, &sge, 1))
			goto fail;
	}
	for (uint64_t off = 0; a->base && off < a->len; off += chunk) {
		uint64_t n = a->len - off < chunk ? a->len - off : chunk;
		struct odpemu_sge sge = { (uintptr_t)(a->base + off), (uint32_t)n, a->lkey };

		if (odpemu_advise_mr(d->pd, ODPEMU_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				     ODPEMU_ADVISE_MR_FLAG_FLUSH, &sge, 1))
			goto fail;
	}
	return 0;
fail:
	perf_err("--prefetch: advise_mr on %s: %s (%s)", d->name, strerror(errno),
		 odpemu_last_error(d->ctx));
	return -1;
}

void area_free(struct perf_area *a)
{
	for (unsigned j = 0; a->sbase && j < a->nslots; j++) {
		if (a->smr && a->smr[j])
			odpemu_dereg_mr(a->smr[j]);
		if (a->sbase[j])
			munmap(a->sbase[j], a->slot_len + PAGE);
	}
	free(a->sbase);
	free(a->smr);
	if (a->mr)
		odpemu_dereg_mr(a->mr);
	if (a->base)
		munmap(a->base, a->len + PAGE);
	memset(a, 0, sizeof(*a));
}
