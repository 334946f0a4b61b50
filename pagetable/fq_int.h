/* SPDX-License-Identifier: MIT */
/* Private layout of the fault queue and its requests (fault.c, prefetch.c, fq_wait.c). */
#ifndef ODPEMU_FQ_INT_H
#define ODPEMU_FQ_INT_H

#include "iopt_int.h"

enum req_state { REQ_QUEUED, REQ_INFLIGHT };

struct iopt_req_int {
	struct iopt_req pub;
	enum req_state state;
	struct iopt_req_int *qnext, *qprev;	/* the fq's FIFO while queued */
	struct iopt_req_int *dnext, *dprev;	/* the domain's live requests */
	struct iopt_waiter *waiters;
	uint64_t t_start;			/* caller's clock at creation */
};

struct iopt_fq {
	pthread_mutex_t lock;		/* requests, queue, waiter lists of all domains */
	pthread_cond_t cond;		/* iopt_fq_pop_wait sleepers */
	pthread_cond_t wcond;		/* iopt_waiter_wait sleepers */
	unsigned sleepers;
	_Atomic unsigned wsleepers;
	_Atomic unsigned queued;	/* read without the lock by spinning handlers */
	_Atomic unsigned ndomains;
	bool kicked;
	struct iopt_req_int *head, *tail;
	void (*notify)(void *arg);
	void *notify_arg;
};

static inline struct iopt_req_int *req_int(struct iopt_req *r)
{
	return (struct iopt_req_int *)((char *)r - offsetof(struct iopt_req_int, pub));
}

/* Under fq->lock. */
struct iopt_req_int *iopt_req_new_locked(struct iopt *d, uint64_t va, uint64_t end,
	unsigned access, unsigned flags, uint64_t now);
void iopt_req_attach_locked(struct iopt_req_int *r, struct iopt_waiter *w);
/* Call after unlocking when iopt_req_new_locked made the queue non-empty. */
void iopt_fq_signal(struct iopt_fq *fq, bool was_empty);
/* Called with fq->lock held: attach w to r (if r), release the lock, then wake the
 * handler if the queue was empty. -ENOMEM when r is NULL (allocation failed), else 0. */
int iopt_req_attach_and_unlock(struct iopt_fq *fq, struct iopt_req_int *r,
	struct iopt_waiter *w, bool was_empty);
/* Wake iopt_waiter_wait sleepers after statuses were stored. */
void iopt_fq_wake_waiters(struct iopt_fq *fq);

#endif
