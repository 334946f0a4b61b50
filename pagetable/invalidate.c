/* SPDX-License-Identifier: MIT */
/*
 * Invalidate (mmu_interval_notifier's invalidate): under the domain lock bump the sequence,
 * log the range and clear the entries; then, without the lock, wait a grace period so no DMA
 * still uses them (fence.c), and free the tables unlinked on the way.
 */
#include <stdlib.h>

#include "iopt_int.h"

static uint64_t inval_table(struct iopt *d, struct iopt_table *t, uint64_t va, uint64_t end);

/* Drop slot's whole entry; returns the pages it mapped. */
static uint64_t unlink_slot(struct iopt *d, struct iopt_table *t, _Atomic uint64_t *slot,
	uint64_t e)
{
	uint64_t pages = 1;

	if (iopt_pte_table(e)) {
		pages = iopt_pte_ptr(e)->pages;
		iopt_table_retire(d, iopt_pte_ptr(e));
	} else if (iopt_pte_block(e)) {
		pages = IOPT_ENTRIES;
	}
	/* Relaxed is enough: the grace period's RMW orders this store before any bracket
	 * that does not wait for us. A concurrent A/D CAS on e fails and sees 0. */
	atomic_store_explicit(slot, 0, memory_order_relaxed);
	t->live--;
	return pages;
}

/* Part of slot's span: split a block first; if that allocation fails drop the whole block
 * (over-invalidating a cache is always allowed). Unlink the child once it is empty. */
static uint64_t inval_partial(struct iopt *d, struct iopt_table *t, _Atomic uint64_t *slot,
	uint64_t e, uint64_t va, uint64_t end)
{
	struct iopt_table *c;
	uint64_t removed;

	if (iopt_pte_block(e)) {
		c = iopt_table_split_block(d, e);
		if (!c)
			return unlink_slot(d, t, slot, e);
		/* release: the split leaves are visible before the pointer (readers may be
		 * translating through this block right now; both views are valid). */
		atomic_store_explicit(slot, iopt_pte_of_table(c), memory_order_release);
	} else {
		c = iopt_pte_ptr(e);
	}
	removed = inval_table(d, c, va, end);
	if (c->live == 0) {
		atomic_store_explicit(slot, 0, memory_order_relaxed);
		t->live--;
		iopt_table_retire(d, c);
	}
	return removed;
}

static uint64_t inval_table(struct iopt *d, struct iopt_table *t, uint64_t va, uint64_t end)
{
	int level = t->level;
	uint64_t size = iopt_level_size(level), removed = 0;

	while (va < end) {
		_Atomic uint64_t *slot = &t->e[iopt_index(va, level)];
		uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);
		uint64_t base = va & ~(size - 1), next = iopt_min(base + size, end);

		if (e) {
			if (level == 0 || (va == base && next == base + size))
				removed += unlink_slot(d, t, slot, e);
			else
				removed += inval_partial(d, t, slot, e, va, next);
		}
		va = next;
	}
	t->pages -= removed;
	return removed;
}

long iopt_invalidate_begin(struct iopt *d, uint64_t va, uint64_t len)
{
	uint64_t s, e, removed;
	struct iopt_table *retired;
	int rc = iopt_check_range(d, va, len, &s, &e);

	if (rc)
		return rc;
	if (iopt_fence_held_here(d))
		return -EDEADLK;
	pthread_mutex_lock(&d->lock);
	d->seq++;
	d->inval_active++;
	if (!d->log)
		d->log = calloc(IOPT_INVAL_LOG, sizeof(*d->log));
	if (d->log)
		d->log[d->seq % IOPT_INVAL_LOG] = (struct iopt_inval_rec){ s, e, d->seq };
	else
		d->unlogged_seq = d->seq;	/* older snapshots are stale: fill.c */
	removed = d->root ? inval_table(d, d->root, s, e) : 0;
	retired = d->retired;
	d->retired = NULL;
	if (retired)
		iopt_walk_gen_bump(d);
	pthread_mutex_unlock(&d->lock);

	iopt_fence_wait(d);
	iopt_reclaim_list(d, retired);
	if (removed) {
		iopt_ctr_add(&d->ctr.page_invalidations, 1);
		iopt_ctr_add(&d->ctr.page_invalidated_pages, removed);
	}
	return (long)removed;
}

void iopt_invalidate_end(struct iopt *d)
{
	pthread_mutex_lock(&d->lock);
	assert(d->inval_active > 0);
	d->inval_active--;
	pthread_mutex_unlock(&d->lock);
}

long iopt_invalidate(struct iopt *d, uint64_t va, uint64_t len)
{
	long rc = iopt_invalidate_begin(d, va, len);

	if (rc >= 0)
		iopt_invalidate_end(d);
	return rc;
}
