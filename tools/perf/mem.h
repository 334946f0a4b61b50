/* SPDX-License-Identifier: MIT */
/* mem — the buffers of one side (layout.h): mapping, registration as the --odp mode asks,
 * --cold recycling, --churn re-allocation, --prefetch. */
#ifndef ODPEMU_TOOLS_PERF_MEM_H
#define ODPEMU_TOOLS_PERF_MEM_H

#include "ctrs.h"
#include "dev.h"

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
/* --cold: give slots [first, first + n) fresh pages (MADV_DONTNEED: the daemon's notifier
 * invalidates its mappings, and the next access faults). No-op for pinned memory. */
void area_recycle(struct perf_area *a, unsigned first, unsigned n);
/* --prefetch: make the whole area present in the NIC (advise_mr PREFETCH_WRITE, FLUSH).
 * 0 or -1 (printed). */
int area_prefetch(struct perf_area *a, struct perf_dev *d);

#endif
