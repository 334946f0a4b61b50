/* SPDX-License-Identifier: MIT */
/* Prefetch advice (ibv_advise_mr PREFETCH / PREFETCH_WRITE / PREFETCH_NO_FAULT): one best
 * effort request for the span of pages that are missing, with an empty need. */
#include "fq_int.h"

struct span {
	uint64_t cur;		/* first page not yet classified */
	uint64_t first, last;	/* missing span [first, last), empty if first == last */
	bool write;
};

static void missing(struct span *s, uint64_t va, uint64_t end)
{
	if (va >= end)
		return;
	if (s->first == s->last)
		s->first = va;
	s->last = end;
}

static int span_visit(void *arg, uint64_t va, uint64_t pages, _Atomic uint64_t *slot,
	uint64_t e, uint64_t sub)
{
	struct span *s = arg;
	uint64_t end = va + (pages << IOPT_PAGE_SHIFT);

	(void)slot;
	(void)sub;
	missing(s, s->cur, va);
	if (s->write && !iopt_pte_writable(e))
		missing(s, va, end);
	s->cur = end;
	return 0;
}

int iopt_prefetch(struct iopt *d, uint64_t va, uint64_t len, enum iopt_advice advice,
	uint64_t now, struct iopt_waiter *w)
{
	struct span s = { 0 };
	struct iopt_req_int *r;
	uint64_t end;
	bool was_empty;
	unsigned flags = IOPT_REQ_PREFETCH;
	int rc = iopt_check_range(d, va, len, &s.cur, &end);

	if (rc)
		return rc;
	if ((unsigned)advice > IOPT_PREFETCH_NO_FAULT)
		return -EINVAL;
	if (!d->fq)
		return -ENOTSUP;
	s.write = advice == IOPT_PREFETCH_WRITE;
	if (advice == IOPT_PREFETCH_NO_FAULT)
		flags |= IOPT_REQ_NO_FAULT;
	pthread_mutex_lock(&d->lock);
	iopt_walk_present(d, s.cur, end, span_visit, &s);
	pthread_mutex_unlock(&d->lock);
	missing(&s, s.cur, end);
	if (s.first == s.last)
		return 1;

	pthread_mutex_lock(&d->fq->lock);
	was_empty = d->fq->head == NULL;
	r = iopt_req_new_locked(d, s.first, s.last, s.write ? IOPT_WRITE : IOPT_READ, flags, now);
	return iopt_req_attach_and_unlock(d->fq, r, w, was_empty);
}
