/* SPDX-License-Identifier: MIT */
/* iopt_dirty_walk: report (and optionally clear) dirty pages, for FLUSH and write-back. */
#include "iopt_int.h"

struct dirty {
	uint64_t run_va, run_len;	/* pending run, reported when it cannot grow */
	uint64_t start, end;
	unsigned flags;
	long pages;
	iopt_dirty_fn fn;
	void *arg;
};

static int flush_run(struct dirty *w)
{
	int rc = 0;

	if (w->run_len)
		rc = w->fn(w->arg, w->run_va, w->run_len);
	w->run_len = 0;
	return rc;
}

/* Clear DIRTY with a CAS: translate may be setting A/D on the same entry concurrently. */
static void clear_dirty(_Atomic uint64_t *slot)
{
	uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);

	while (iopt_pte_dirty(e) && !atomic_compare_exchange_weak_explicit(slot, &e,
		e & ~IOPT_PTE_DIRTY, memory_order_relaxed, memory_order_relaxed))
		;
}

static int dirty_visit(void *arg, uint64_t va, uint64_t pages, _Atomic uint64_t *slot,
	uint64_t e, uint64_t sub)
{
	struct dirty *w = arg;
	uint64_t len = pages << IOPT_PAGE_SHIFT;
	int rc = 0;

	if (!iopt_pte_dirty(e))
		return 0;
	/* A block partly outside the range keeps its bit: clearing it would lose the others. */
	if ((w->flags & IOPT_DIRTY_CLEAR) &&
	    (!iopt_pte_block(e) || (sub == 0 && pages == IOPT_ENTRIES)))
		clear_dirty(slot);
	w->pages += (long)pages;
	if (w->run_len && w->run_va + w->run_len == va) {
		w->run_len += len;
		return 0;
	}
	rc = flush_run(w);
	w->run_va = va;
	w->run_len = len;
	return rc;
}

long iopt_dirty_walk(struct iopt *d, uint64_t va, uint64_t len, unsigned flags,
	iopt_dirty_fn fn, void *arg)
{
	struct dirty w = { .flags = flags, .fn = fn, .arg = arg };
	int rc = iopt_check_range(d, va, len, &w.start, &w.end);

	if (rc)
		return rc;
	if (flags & ~IOPT_DIRTY_CLEAR || !fn)
		return -EINVAL;
	if ((flags & IOPT_DIRTY_CLEAR) && iopt_fence_held_here(d))
		return -EDEADLK;
	/* The callback runs under the domain lock: it must not call back into this domain. */
	pthread_mutex_lock(&d->lock);
	rc = iopt_walk_present(d, w.start, w.end, dirty_visit, &w);
	if (!rc)
		rc = flush_run(&w);
	pthread_mutex_unlock(&d->lock);
	/* A write that saw DIRTY already set (no CAS) may still be running: wait for it, so
	 * the caller's write-back after we return sees its data (the kernel's clear-dirty
	 * then flush-TLB). Later writes set DIRTY again. */
	if (flags & IOPT_DIRTY_CLEAR)
		iopt_fence_wait(d);
	return rc ? rc : w.pages;
}
