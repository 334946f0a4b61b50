/* SPDX-License-Identifier: MIT */
/*
 * The invalidation fence: DMA brackets and grace periods.
 *
 * A bracket increments inflight[epoch] on begin and decrements the same counter on end. A
 * grace period (after the invalidator has cleared its entries) flips the epoch, waits for the
 * old counter to drain, flips back and waits for the other: each wait covers only brackets
 * that chose their counter before a flip, so a steady stream of new DMAs cannot starve it
 * (the two-counter scheme of SRCU). Correctness rests on the counters being changed only by
 * read-modify-writes: the waiter's first look is an RMW too, so any bracket whose increment
 * comes after it in the counter's modification order synchronizes with it and sees the
 * cleared entries; any bracket before it is counted and waited for.
 *
 * This is the "wait for running accesses" half of mmu_interval_notifier invalidation; the
 * "do not install stale translations" half is read_begin/read_retry in fill.c.
 */
#include <sched.h>
#include <time.h>

#include "iopt_int.h"

/* Brackets open on this thread, to turn a self-deadlock into -EDEADLK. */
static _Thread_local struct iopt_dma *open_brackets;

void iopt_dma_begin(struct iopt *d, struct iopt_dma *dma)
{
	unsigned idx = atomic_load_explicit(&d->epoch, memory_order_relaxed) & 1;

	/* acq_rel RMW: acquire pairs with the grace period's RMW (see above), so the
	 * translations read after this see every entry cleared before it. */
	atomic_fetch_add_explicit(&d->inflight[idx], 1, memory_order_acq_rel);
	dma->dom = d;
	dma->idx = idx;
	dma->next = open_brackets;
	open_brackets = dma;
}

void iopt_dma_end(struct iopt_dma *dma)
{
	struct iopt_dma **pp = &open_brackets;

	while (*pp && *pp != dma)
		pp = &(*pp)->next;
	assert(*pp == dma && "iopt_dma_end without iopt_dma_begin on this thread");
	if (*pp)
		*pp = dma->next;
	/* release: every use of the host extents happens before the invalidator returns. */
	atomic_fetch_sub_explicit(&dma->dom->inflight[dma->idx], 1, memory_order_release);
}

bool iopt_fence_held_here(const struct iopt *d)
{
	for (const struct iopt_dma *b = open_brackets; b; b = b->next)
		if (b->dom == d)
			return true;
	return false;
}

/* Spin briefly (a DMA is a short copy), then yield, then sleep: the machine may have fewer
 * cores than threads. */
static void backoff(unsigned *round)
{
	struct timespec ts = { 0, 20000 };

	if (*round < 64)
		__asm__ volatile("" ::: "memory");
	else if (*round < 256)
		sched_yield();
	else
		nanosleep(&ts, NULL);
	(*round)++;
}

static void drain(_Atomic unsigned long *c)
{
	unsigned round = 0;
	unsigned long v = atomic_fetch_add_explicit(c, 0, memory_order_acq_rel);

	while (v) {
		backoff(&round);
		v = atomic_load_explicit(c, memory_order_acquire);
	}
}

void iopt_fence_wait(struct iopt *d)
{
	unsigned idx;

	pthread_mutex_lock(&d->fence_lock);
	idx = atomic_load_explicit(&d->epoch, memory_order_relaxed) & 1;
	atomic_store_explicit(&d->epoch, idx ^ 1, memory_order_relaxed);
	drain(&d->inflight[idx]);
	atomic_store_explicit(&d->epoch, idx, memory_order_relaxed);
	drain(&d->inflight[idx ^ 1]);
	pthread_mutex_unlock(&d->fence_lock);
}

/* Free a list of retired tables; the caller has waited a grace period since unlinking. */
void iopt_reclaim_list(struct iopt *d, struct iopt_table *list)
{
	while (list) {
		struct iopt_table *next = list->retired_next;

		iopt_table_free_tree(d, list);
		list = next;
	}
}

int iopt_reclaim(struct iopt *d)
{
	struct iopt_table *list;

	if (iopt_fence_held_here(d))
		return -EDEADLK;
	pthread_mutex_lock(&d->lock);
	list = d->retired;
	d->retired = NULL;
	pthread_mutex_unlock(&d->lock);
	iopt_fence_wait(d);
	iopt_reclaim_list(d, list);
	return 0;
}
