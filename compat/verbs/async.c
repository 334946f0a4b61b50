/* SPDX-License-Identifier: MIT */
/* Async events: libodpemu's, with each object it names turned back into the client's
 * (the libodpemu objects carry the compat ones as their user context; MRs are looked up
 * on the context's list). The async fd is libodpemu's: epoll-able, EAGAIN when
 * non-blocking and empty, EINTR on a signal. */
#include <string.h>

#include "compat.h"

enum target { TARGET_NONE, TARGET_QP, TARGET_CQ, TARGET_SRQ, TARGET_MR };

static enum target target_of(int type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return TARGET_CQ;
	case IBV_EVENT_QP_FATAL: case IBV_EVENT_QP_REQ_ERR: case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST: case IBV_EVENT_SQ_DRAINED: case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR: case IBV_EVENT_QP_LAST_WQE_REACHED:
		return TARGET_QP;
	case IBV_EVENT_SRQ_ERR: case IBV_EVENT_SRQ_LIMIT_REACHED:
		return TARGET_SRQ;
	case ODPEMU_IBV_EVENT_MR_DECOHERENCE:
		return TARGET_MR;
	default:
		return TARGET_NONE;	/* device and port events */
	}
}

/* The client's object for a libodpemu event: false when it is gone (an MR deregistered
 * between the daemon's report and now). */
static bool to_client(struct cv_context *c, const struct odpemu_async_event *o,
		      struct ibv_async_event *e)
{
	struct cv_mr *mr;

	memset(e, 0, sizeof(*e));
	e->event_type = (enum ibv_event_type)o->event_type;
	switch (target_of((int)o->event_type)) {
	case TARGET_QP:
		e->element.qp = &((struct cv_qp *)o->element.qp->qp_context)->qpx.qp_base;
		return true;
	case TARGET_CQ:
		e->element.cq = ibv_cq_ex_to_cq(&((struct cv_cq *)o->element.cq->cq_context)->cqx);
		return true;
	case TARGET_SRQ:
		e->element.srq = &((struct cv_srq *)o->element.srq->srq_context)->srq;
		return true;
	case TARGET_MR:
		pthread_mutex_lock(&c->lock);
		mr = cv_mr_find(c, o->element.mr);
		pthread_mutex_unlock(&c->lock);
		e->element.cq = mr ? (struct ibv_cq *)(void *)&mr->mr : NULL;	/* verbs_ext.h */
		return mr != NULL;
	default:
		e->element.port_num = o->element.port_num;
		return true;
	}
}

/* rdma-core's contract: 0, or -1 with errno. */
CV_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct odpemu_async_event o;
	int rc;

	if (!context || !event) {
		errno = EINVAL;
		return -1;
	}
	for (;;) {
		if ((rc = odpemu_get_async_event(cv_odp(context), &o))) {
			errno = rc;
			return -1;
		}
		if (to_client(cv_ctx(context), &o, event))
			return 0;
		odpemu_ack_async_event(&o);	/* nobody left to tell */
	}
}

/* Rebuild libodpemu's event from the client's to acknowledge it there (destroy waits on
 * that count), and count it on the client's object as rdma-core does. */
CV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	struct odpemu_async_event o = { .event_type = (enum odpemu_event_type)event->event_type };
	struct ibv_qp *qp = event->element.qp;
	struct ibv_cq *cq = event->element.cq;
	struct ibv_srq *srq = event->element.srq;

	switch (target_of((int)event->event_type)) {
	case TARGET_QP:
		o.element.qp = cv_qp(qp)->odp;
		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_mutex_unlock(&qp->mutex);
		break;
	case TARGET_CQ:
		o.element.cq = cv_cq(cq)->odp;
		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_mutex_unlock(&cq->mutex);
		break;
	case TARGET_SRQ:
		o.element.srq = cv_srq(srq)->odp;
		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_mutex_unlock(&srq->mutex);
		break;
	case TARGET_MR:
		o.element.mr = ((struct cv_mr *)odpemu_ibv_event_mr(event))->odp;
		break;
	default:
		o.element.port_num = event->element.port_num;
		break;
	}
	odpemu_ack_async_event(&o);
}
