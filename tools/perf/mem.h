/* SPDX-License-Identifier: MIT */
/* mem — the buffers of one side (layout.h): mapping, registration as the --odp mode asks,
 * --cold recycling, --churn re-allocation, --regcache, --prefetch. */
#ifndef ODPEMU_TOOLS_PERF_MEM_H
#define ODPEMU_TOOLS_PERF_MEM_H

#include <pthread.h>

#include "ctrs.h"
#include "dev.h"
#include "odpemu/regcache.h"
#include "stats.h"

/* --regcache (perf.h): slot j keeps its address for the whole run and is freed and mapped
 * again there before each of its messages but the first; smr[j] is the registration of
 * its message in flight: the cache entry's MR from area_rc_get to area_rc_put, or (odp)
 * the slot's one ODP MR. While the area lives a thread serves the context's async events:
 * an MR_DECOHERENCE is marked in the cache (lease) *before* it is acknowledged, so the
 * munmap that raised it returns only once the cache knows, and the next get restores. */
struct perf_rc {
	enum perf_regcache mode;
	struct perf_dev *dev;
	struct odpemu_regcache *cache;		/* NULL with odp */
	struct odpemu_regcache_entry **held;	/* slot j's, while its message is out */
	pthread_t events;
	bool events_on;
	int stop;				/* atomic: the events thread is to end */
	uint64_t decoherence;			/* atomic: MR_DECOHERENCE events served */
	struct perf_rc_figs figs;		/* timings (the counters: area_rc_figs) */
};

struct perf_area {
	uint8_t *base;		/* slot j at base + j * stride; NULL: no slots */
	size_t len;		/* mapped bytes (a PROT_NONE guard page follows) */
	uint64_t stride;
	unsigned nslots;
	enum perf_odp odp;
	struct odpemu_mr *mr;	/* explicit ODP or pinned; NULL with implicit */
	uint32_t lkey, rkey;
	/* --churn: slot j is a mapping (and, unless implicit, an MR) of its own */
	uint8_t **sbase;
	struct odpemu_mr **smr;
	size_t slot_len;
	struct perf_rc *rc;	/* --regcache: the churned slots' registrations */
};

/* Map and register nslots slots; touch them (so they are present in this process) when
 * `touch`. 0 or -1 (printed). */
int area_make(struct perf_area *a, struct perf_dev *d, enum perf_odp odp, unsigned nslots,
	      uint64_t stride, bool churn, bool touch);
void area_free(struct perf_area *a);

static inline uint8_t *area_slot(const struct perf_area *a, unsigned j)
{
	return a->sbase ? a->sbase[j] : a->base + (uint64_t)j * a->stride;
}

static inline uint32_t area_lkey(const struct perf_area *a, unsigned j)
{
	return a->smr ? a->smr[j]->lkey : a->lkey;
}

/* --churn: free slot j and allocate it again (re-registering unless implicit). The page
 * counters of a dropped ODP MR go into `retired`: the device's counters are sums over
 * live MRs only. 0 or -1 (printed). */
int area_churn(struct perf_area *a, struct perf_dev *d, unsigned j, struct ctrs *retired);
/* --regcache: map nslots slots (each its own mapping) and set up the back-end `mode`; no
 * slot is registered yet (odp: each gets its ODP MR now). 0 or -1 (printed). */
int area_make_rc(struct perf_area *a, struct perf_dev *d, enum perf_regcache mode,
		 unsigned nslots, uint64_t stride);
/* --regcache, before a slot's next message: munmap it and mmap it again at the same
 * address (MAP_FIXED), each call timed. 0 or -1 (printed). */
int area_rc_remap(struct perf_area *a, unsigned j);
/* --regcache: slot j's registration for one message (area_lkey then names it), from the
 * cache (timed); a no-op with odp. 0 or -1 (printed). */
int area_rc_get(struct perf_area *a, unsigned j);
/* --regcache: slot j's message completed; its registration goes back to the cache. */
void area_rc_put(struct perf_area *a, unsigned j);
/* --regcache: the figures so far (timings, the cache's counters, events served). */
void area_rc_figs(const struct perf_area *a, struct perf_rc_figs *f);
/* --cold: give slots [first, first + n) fresh pages (MADV_DONTNEED: the daemon's notifier
 * invalidates its mappings, and the next access faults). No-op for pinned memory. */
void area_recycle(struct perf_area *a, unsigned first, unsigned n);
/* --prefetch: make the whole area present in the NIC (advise_mr PREFETCH_WRITE, FLUSH).
 * 0 or -1 (printed). */
int area_prefetch(struct perf_area *a, struct perf_dev *d);

#endif
