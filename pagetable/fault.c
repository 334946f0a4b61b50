/* SPDX-License-Identifier: MIT */
/*
 * The fault queue: misses become page requests; the handler pops batches and answers each
 * once; every waiter of a request is woken once. Nothing here blocks or needs a thread: the
 * mutex only guards short list updates (the data path takes it on a miss, never on a hit).
 */
#include <stdlib.h>

#include "fq_int.h"

int iopt_fq_create(const struct iopt_fq_config *cfg, struct iopt_fq **out)
{
	struct iopt_fq *fq = calloc(1, sizeof(*fq));

	if (!fq)
		return -ENOMEM;
	pthread_mutex_init(&fq->lock, NULL);
	pthread_cond_init(&fq->cond, NULL);
	pthread_cond_init(&fq->wcond, NULL);
	if (cfg) {
		fq->notify = cfg->notify;
		fq->notify_arg = cfg->notify_arg;
	}
	*out = fq;
	return 0;
}

int iopt_fq_destroy(struct iopt_fq *fq)
{
	if (!fq)
		return 0;
	if (atomic_load(&fq->ndomains))
		return -EBUSY;
	pthread_mutex_destroy(&fq->lock);
	pthread_cond_destroy(&fq->cond);
	pthread_cond_destroy(&fq->wcond);
	free(fq);
	return 0;
}

void iopt_fq_attach(struct iopt_fq *fq, int delta)
{
	atomic_fetch_add(&fq->ndomains, (unsigned)delta);
}

static void enqueue_locked(struct iopt_fq *fq, struct iopt_req_int *r)
{
	r->state = REQ_QUEUED;
	r->qnext = NULL;
	r->qprev = fq->tail;
	if (fq->tail)
		fq->tail->qnext = r;
	else
		fq->head = r;
	fq->tail = r;
	atomic_fetch_add_explicit(&fq->queued, 1, memory_order_release);
	if (fq->sleepers)
		pthread_cond_signal(&fq->cond);
}

static void dequeue_locked(struct iopt_fq *fq, struct iopt_req_int *r)
{
	if (r->qprev)
		r->qprev->qnext = r->qnext;
	else
		fq->head = r->qnext;
	if (r->qnext)
		r->qnext->qprev = r->qprev;
	else
		fq->tail = r->qprev;
	atomic_fetch_sub_explicit(&fq->queued, 1, memory_order_relaxed);
}

void iopt_fq_signal(struct iopt_fq *fq, bool was_empty)
{
	if (was_empty && fq->notify)
		fq->notify(fq->notify_arg);
}

struct iopt_req_int *iopt_req_new_locked(struct iopt *d, uint64_t va, uint64_t end,
	unsigned access, unsigned flags, uint64_t now)
{
	struct iopt_req_int *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->pub.dom = d;
	r->pub.va = va;
	r->pub.len = end - va;
	r->pub.need_va = va;		/* empty need unless the caller sets one */
	r->pub.access = access;
	r->pub.flags = flags;
	r->t_start = now;
	r->dnext = d->reqs;
	if (d->reqs)
		d->reqs->dprev = r;
	d->reqs = r;
	enqueue_locked(d->fq, r);
	return r;
}

void iopt_req_attach_locked(struct iopt_req_int *r, struct iopt_waiter *w)
{
	if (!w)
		return;
	atomic_store_explicit(&w->status, IOPT_WAIT_PENDING, memory_order_relaxed);
	w->req = r;
	w->next = r->waiters;
	r->waiters = w;
}

int iopt_req_attach_and_unlock(struct iopt_fq *fq, struct iopt_req_int *r,
	struct iopt_waiter *w, bool was_empty)
{
	if (r)
		iopt_req_attach_locked(r, w);
	pthread_mutex_unlock(&fq->lock);
	if (!r)
		return -ENOMEM;
	/* Signal outside the lock: the notify callback may take the handler's own locks. */
	iopt_fq_signal(fq, was_empty);
	return 0;
}

/* Fold a new need into a live request, if that is sound: an in-flight request only if it
 * already needs our pages (its handler will not look at its need again); a queued one if the
 * needs touch (so the merged need stays one interval of pages somebody needs), with the same
 * access (a read waiter must not fail because a write was refused), within max_need. */
static bool merge_locked(struct iopt_req_int *r, uint64_t ns, uint64_t ne, uint64_t ws,
	uint64_t we, unsigned access)
{
	struct iopt_req *p = &r->pub;
	uint64_t pe = p->need_va + p->need_len;

	if (p->flags & IOPT_REQ_PREFETCH)
		return false;
	if (r->state == REQ_INFLIGHT)
		return p->need_va <= ns && ne <= pe && (access == IOPT_READ || p->access == IOPT_WRITE);
	if (p->access != access || ns > pe || p->need_va > ne ||
	    iopt_max(ne, pe) - iopt_min(ns, p->need_va) > p->dom->max_need)
		return false;
	ws = iopt_min(ws, p->va);
	we = iopt_max(we, p->va + p->len);
	p->need_len = iopt_max(ne, pe) - iopt_min(ns, p->need_va);
	p->need_va = iopt_min(ns, p->need_va);
	p->va = ws;
	p->len = we - ws;
	return true;
}

int iopt_fault(struct iopt *d, uint64_t va, uint64_t len, unsigned access, uint64_t now,
	struct iopt_waiter *w)
{
	uint64_t ns, ne, ws, we, fa = d->fault_around;
	struct iopt_req_int *r;
	bool was_empty;
	int rc = iopt_check_range(d, va, len, &ns, &ne);

	if (rc)
		return rc;
	if (access != IOPT_READ && access != IOPT_WRITE && access != IOPT_ATOMIC)
		return -EINVAL;
	if (!d->fq)
		return -ENOTSUP;
	access = access == IOPT_READ ? IOPT_READ : IOPT_WRITE;
	ne = iopt_min(ne, ns + (d->max_need & ~IOPT_PAGE_MASK));
	/* Fault-around: the aligned window around the need, clipped to the domain. */
	ws = iopt_max(ns & ~(fa - 1), d->start);
	we = iopt_min(((ne - 1) | (fa - 1)) + 1, d->end);

	pthread_mutex_lock(&d->fq->lock);
	for (r = d->reqs; r; r = r->dnext)
		if (merge_locked(r, ns, ne, ws, we, access))
			break;
	was_empty = false;
	if (r) {
		iopt_ctr_add(&d->ctr.fault_merged, 1);
	} else {
		was_empty = d->fq->head == NULL;
		r = iopt_req_new_locked(d, ws, we, access, 0, now);
		if (r) {
			r->pub.need_va = ns;
			r->pub.need_len = ne - ns;
			iopt_ctr_add(&d->ctr.page_faults, 1);
		}
	}
	return iopt_req_attach_and_unlock(d->fq, r, w, was_empty);
}

int iopt_waiter_cancel(struct iopt *d, struct iopt_waiter *w)
{
	struct iopt_waiter **pp;
	struct iopt_req_int *r;
	int rc = -EALREADY;

	pthread_mutex_lock(&d->fq->lock);
	r = w->req;
	if (r) {
		for (pp = &r->waiters; *pp && *pp != w; pp = &(*pp)->next)
			;
		if (*pp) {
			*pp = w->next;
			rc = 0;
		}
		w->req = NULL;
	}
	pthread_mutex_unlock(&d->fq->lock);
	return rc;
}

unsigned iopt_fq_pop(struct iopt_fq *fq, struct iopt_req **out, unsigned max)
{
	unsigned n = 0;

	if (!atomic_load_explicit(&fq->queued, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&fq->lock);
	while (n < max && fq->head) {
		struct iopt_req_int *r = fq->head;

		dequeue_locked(fq, r);
		r->state = REQ_INFLIGHT;
		r->pub.dom->reqs_inflight++;
		out[n++] = &r->pub;
	}
	pthread_mutex_unlock(&fq->lock);
	/* read_begin after the request left the queue: the handler resolves after this. */
	for (unsigned i = 0; i < n; i++)
		out[i]->seq = iopt_read_begin(out[i]->dom);
	return n;
}

/* Unlink r from the queue and its domain; returns its waiters, detached. */
static struct iopt_waiter *detach_locked(struct iopt_req_int *r)
{
	struct iopt *d = r->pub.dom;
	struct iopt_waiter *w = r->waiters;

	if (r->state == REQ_QUEUED)
		dequeue_locked(d->fq, r);
	else
		d->reqs_inflight--;
	if (r->dprev)
		r->dprev->dnext = r->dnext;
	else
		d->reqs = r->dnext;
	if (r->dnext)
		r->dnext->dprev = r->dprev;
	for (struct iopt_waiter *i = w; i; i = i->next)
		i->req = NULL;
	return w;
}

/* Wake each waiter once, with no lock held (a callback may fault again). */
static void wake(struct iopt_fq *fq, struct iopt_waiter *w, int status)
{
	while (w) {
		/* Read everything before the status store: after it the owner may reuse w. */
		struct iopt_waiter *next = w->next;
		iopt_wake_fn fn = w->fn;
		void *cookie = w->cookie;

		atomic_store_explicit(&w->status, status, memory_order_seq_cst);
		if (fn)
			fn(cookie, status);
		w = next;
	}
	iopt_fq_wake_waiters(fq);
}

static void finish(struct iopt_req_int *r, int status)
{
	struct iopt_fq *fq = r->pub.dom->fq;
	struct iopt_waiter *w;

	pthread_mutex_lock(&fq->lock);
	w = detach_locked(r);
	pthread_mutex_unlock(&fq->lock);
	free(r);
	wake(fq, w, status);
}

/* Do the runs cover the need, page by page, with the needed permission? */
static bool covers_need(const struct iopt_req *p, const struct iopt_map *maps, unsigned n)
{
	uint64_t cur = p->need_va, end = p->need_va + p->need_len;
	unsigned perm = p->access == IOPT_WRITE ? IOPT_WRITE : IOPT_READ;
	bool progress = true;

	while (cur < end && progress) {
		progress = false;
		for (unsigned i = 0; i < n; i++)
			if (maps[i].va <= cur && cur < maps[i].va + maps[i].len &&
			    (maps[i].perm & perm)) {
				cur = maps[i].va + maps[i].len;
				progress = true;
			}
	}
	return cur >= end;
}

int iopt_req_complete(struct iopt_req *p, const struct iopt_map *maps, unsigned n, uint64_t now)
{
	struct iopt_req_int *r = req_int(p);
	struct iopt *d = p->dom;
	long added = 0;

	if ((n && !maps) || !covers_need(p, maps, n))
		return -EINVAL;
	if (n) {
		pthread_mutex_lock(&d->lock);
		added = iopt_fill_locked(d, maps, n, p->seq);
		pthread_mutex_unlock(&d->lock);
	}
	if (added == -EAGAIN) {
		iopt_ctr_add(&d->ctr.fault_races, 1);
		p->seq = iopt_read_begin(d);
	}
	if (added < 0)
		return (int)added;
	if (p->flags & IOPT_REQ_PREFETCH) {
		iopt_ctr_add(&d->ctr.page_prefetch, (uint64_t)added);
	} else {
		iopt_ctr_add(&d->ctr.page_fault_pages, (uint64_t)added);
		iopt_lat_record(d, now - r->t_start);
	}
	finish(r, 0);
	return 0;
}

void iopt_req_fail(struct iopt_req *p, int err, uint64_t now)
{
	struct iopt_req_int *r = req_int(p);

	assert(err < 0);
	iopt_ctr_add(&p->dom->ctr.fault_failed, 1);
	if (!(p->flags & IOPT_REQ_PREFETCH))
		iopt_lat_record(p->dom, now - r->t_start);
	finish(r, err < 0 ? err : -EIO);
}

void iopt_req_requeue(struct iopt_req *p)
{
	struct iopt_req_int *r = req_int(p);
	struct iopt_fq *fq = p->dom->fq;
	bool was_empty;

	pthread_mutex_lock(&fq->lock);
	p->dom->reqs_inflight--;
	was_empty = fq->head == NULL;
	enqueue_locked(fq, r);
	pthread_mutex_unlock(&fq->lock);
	iopt_fq_signal(fq, was_empty);
}

int iopt_fq_cancel_domain(struct iopt *d)
{
	struct iopt_fq *fq = d->fq;
	struct iopt_waiter *all = NULL;

	pthread_mutex_lock(&fq->lock);
	if (d->reqs_inflight) {
		pthread_mutex_unlock(&fq->lock);
		return -EBUSY;
	}
	while (d->reqs) {
		struct iopt_req_int *r = d->reqs;
		struct iopt_waiter *w = detach_locked(r);

		while (w) {
			struct iopt_waiter *next = w->next;

			w->next = all;
			all = w;
			w = next;
		}
		free(r);
	}
	pthread_mutex_unlock(&fq->lock);
	wake(fq, all, -ECANCELED);
	return 0;
}
