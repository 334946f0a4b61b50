/* SPDX-License-Identifier: MIT */
/* Fork support as rdma-core: ibv_fork_init (or RDMAV_FORK_SAFE / IBV_FORK_SAFE in the
 * environment) before the first registration makes pinned ranges MADV_DONTFORK, so a
 * child never has pages the daemon reaches. Without it, the child gets private copies of
 * pinned pages, as Linux 5.13+ gives (libodpemu's lib/pin_fork.c); rdma-core would then
 * report IBV_FORK_UNNEEDED, this keeps reporting DISABLED/ENABLED as before. What a
 * child inherits of an open device is unusable there (libodpemu's lib/fork.c). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compat.h"

static atomic_bool fork_enabled;
static atomic_bool mr_registered;

static bool env_asks(void)
{
	return getenv("RDMAV_FORK_SAFE") || getenv("IBV_FORK_SAFE");
}

bool cv_fork_enabled(void)
{
	if (!atomic_load(&fork_enabled) && env_asks() && !atomic_load(&mr_registered))
		atomic_store(&fork_enabled, true);
	return atomic_load(&fork_enabled);
}

void cv_fork_mr_registered(void)
{
	atomic_store(&mr_registered, true);
}

/* 0; EINVAL once a memory region exists (too late: its pages may already be shared). */
CV_EXPORT int ibv_fork_init(void)
{
	if (atomic_load(&fork_enabled))
		return 0;
	if (atomic_load(&mr_registered))
		return EINVAL;
	atomic_store(&fork_enabled, true);
	return 0;
}

CV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return cv_fork_enabled() ? IBV_FORK_ENABLED : IBV_FORK_DISABLED;
}

/* Registered pinned ranges, as page intervals with the number of MRs over each:
 * MADV_DONTFORK while at least one MR covers a page, MADV_DOFORK when the last one
 * goes (rdma-core's memory.c keeps the same counts). Sorted, disjoint. */
struct range {
	uintptr_t start, end;
	unsigned count;
};
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static struct range *ranges;
static size_t nranges, cap_ranges;

static int ranges_reserve(size_t more)
{
	size_t cap = cap_ranges ? cap_ranges : 16;
	struct range *r;

	while (cap < nranges + more)
		cap *= 2;
	if (cap == cap_ranges)
		return 0;
	if (!(r = realloc(ranges, cap * sizeof(*r))))
		return ENOMEM;
	ranges = r;
	cap_ranges = cap;
	return 0;
}

/* Make at a boundary of the intervals (splitting the one containing it). */
static void split_at(uintptr_t at)
{
	for (size_t i = 0; i < nranges; i++) {
		if (ranges[i].start < at && at < ranges[i].end) {
			memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof(*ranges));
			nranges++;
			ranges[i].end = at;
			ranges[i + 1].start = at;
			return;
		}
	}
}

/* Insert count-0 intervals over the holes of [start, end). */
static void fill_holes(uintptr_t start, uintptr_t end)
{
	uintptr_t cur = start;
	size_t i = 0;

	while (cur < end) {
		while (i < nranges && ranges[i].end <= cur)
			i++;
		uintptr_t stop = i < nranges && ranges[i].start < end ? ranges[i].start : end;

		if (stop > cur) {
			memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof(*ranges));
			nranges++;
			ranges[i] = (struct range){ cur, stop, 0 };
		}
		cur = i < nranges && ranges[i].start < end ? ranges[i].end : end;
		i++;
	}
}

/* Add delta to the count of every page of [start, end); advise the pages whose count
 * leaves or reaches zero. 0 or an errno. */
static int count_range(uintptr_t start, uintptr_t end, int delta)
{
	/* two splits, and at most one hole more than the intervals already there */
	int rc = ranges_reserve(nranges + 3);
	size_t k = 0;

	if (rc)
		return rc;
	split_at(start);
	split_at(end);
	if (delta > 0)
		fill_holes(start, end);
	for (size_t i = 0; i < nranges; i++) {
		struct range *r = &ranges[i];

		if (r->end <= start || r->start >= end || (delta < 0 && !r->count))
			continue;
		if ((delta > 0 && r->count == 0) || (delta < 0 && r->count == 1))
			madvise((void *)r->start, r->end - r->start,
				delta > 0 ? MADV_DONTFORK : MADV_DOFORK);
		r->count = (unsigned)((int)r->count + delta);
	}
	for (size_t i = 0; i < nranges; i++)	/* drop what no MR covers any more */
		if (ranges[i].count)
			ranges[k++] = ranges[i];
	nranges = k;
	return 0;
}

static int advise(void *base, size_t size, int delta)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)base & ~(page - 1);
	uintptr_t end = ((uintptr_t)base + size + page - 1) & ~(page - 1);
	int rc;

	if (!cv_fork_enabled() || !size)
		return 0;	/* rdma-core: a no-op without fork support */
	pthread_mutex_lock(&ranges_lock);
	rc = count_range(start, end, delta);
	pthread_mutex_unlock(&ranges_lock);
	return rc;
}

CV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return advise(base, size, 1);
}

CV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return advise(base, size, -1);
}
