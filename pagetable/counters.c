/* SPDX-License-Identifier: MIT */
/* Per-domain counters: relaxed atomics, written under different locks, read any time. */
#include <stdlib.h>
#include <string.h>

#include "iopt_int.h"

void iopt_ctr_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* log2 buckets of the caller's clock: deterministic in a simulation with virtual time. */
void iopt_lat_record(struct iopt *d, uint64_t ns)
{
	unsigned b = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0;
	_Atomic uint64_t *lat = atomic_load_explicit(&d->ctr.lat, memory_order_acquire);

	if (b >= IOPT_LAT_BUCKETS)
		b = IOPT_LAT_BUCKETS - 1;
	if (!lat) {	/* the first: whoever loses the race frees its own */
		_Atomic uint64_t *mine = calloc(IOPT_LAT_BUCKETS, sizeof(*mine)), *none = NULL;

		if (!mine)
			return;		/* the sample is lost, not the fault */
		if (atomic_compare_exchange_strong_explicit(&d->ctr.lat, &none, mine,
							    memory_order_acq_rel, memory_order_acquire)) {
			lat = mine;
		} else {
			free((void *)mine);
			lat = none;
		}
	}
	iopt_ctr_add(&lat[b], 1);
}

static uint64_t rd(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

void iopt_counters_get(struct iopt *d, struct iopt_counters *o)
{
	_Atomic uint64_t *lat;

	memset(o, 0, sizeof(*o));
	o->page_faults = rd(&d->ctr.page_faults);
	o->page_fault_pages = rd(&d->ctr.page_fault_pages);
	o->page_invalidations = rd(&d->ctr.page_invalidations);
	o->page_invalidated_pages = rd(&d->ctr.page_invalidated_pages);
	o->page_prefetch = rd(&d->ctr.page_prefetch);
	o->fault_merged = rd(&d->ctr.fault_merged);
	o->fault_races = rd(&d->ctr.fault_races);
	o->fault_failed = rd(&d->ctr.fault_failed);
	o->table_bytes = rd(&d->ctr.table_bytes);
	o->memory_bytes = o->table_bytes + sizeof(*d);
	lat = atomic_load_explicit(&d->ctr.lat, memory_order_acquire);
	for (unsigned i = 0; lat && i < IOPT_LAT_BUCKETS; i++)
		o->fault_latency_ns[i] = rd(&lat[i]);
	if (lat)
		o->memory_bytes += IOPT_LAT_BUCKETS * sizeof(*lat);
	/* The root's page count is written under the lock; take it for a consistent value. */
	pthread_mutex_lock(&d->lock);
	o->present_pages = d->root ? d->root->pages : 0;
	if (d->log)
		o->memory_bytes += IOPT_INVAL_LOG * sizeof(*d->log);
	pthread_mutex_unlock(&d->lock);
}
