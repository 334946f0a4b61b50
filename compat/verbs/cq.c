/* SPDX-License-Identifier: MIT */
/* Completion channels and CQs (ibv_create_cq and ibv_create_cq_ex), their events and
 * acknowledgements. Polling is in post.c (the fast path) and cq_ex.c. */
#include <stdlib.h>
#include <string.h>

#include "compat.h"

/* What ibv_create_cq_ex can report (cq_ex.c reads them); CVLAN, flow tags and tag
 * matching have nothing to report here. */
#define CV_WC_EX_FLAGS	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
			 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			 IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
			 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define CV_CQ_FLAGS	(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

CV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct cv_channel *ch;

	if (!context)
		return cv_fail_null(EINVAL);
	if (!(ch = calloc(1, sizeof(*ch))))
		return cv_fail_null(ENOMEM);
	if (!(ch->odp = odpemu_create_comp_channel(cv_odp(context)))) {
		free(ch);
		return NULL;
	}
	ch->ch.context = context;
	ch->ch.fd = ch->odp->fd;
	return &ch->ch;
}

/* EBUSY while a CQ uses it (rdma-core verbs.c). */
CV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct cv_channel *ch = (struct cv_channel *)channel;
	int rc;

	if (!channel)
		return cv_fail(EINVAL);
	if ((rc = odpemu_destroy_comp_channel(ch->odp)))
		return rc;
	free(ch);
	return 0;
}

/* A CQ for both APIs: the ibv_cq head serves ibv_poll_cq, the ibv_cq_ex methods
 * start/next/end_poll (UCX creates with create_cq_ex and polls with ibv_poll_cq). */
static struct cv_cq *cq_new(struct ibv_context *context, uint32_t cqe, void *cq_context,
			    struct ibv_comp_channel *channel, int comp_vector, uint64_t wc_flags,
			    unsigned flags)
{
	struct cv_cq *cq;

	if (!context || !cqe || cqe > INT32_MAX || comp_vector < 0 ||
	    (channel && channel->context != context))
		return cv_fail_null(EINVAL);
	/* A vector beyond num_comp_vectors is EINVAL, as the kernel's uverbs answers before any
	 * provider sees it (rdma-core's test_create_cq_bad_flow); there is one per possible
	 * CPU (lib/context.c), so UCX's choice, the lowest CPU of its mask, is always one. */
	if (comp_vector >= context->num_comp_vectors)
		return cv_fail_null(EINVAL);
	if (!(cq = calloc(1, sizeof(*cq))))
		return cv_fail_null(ENOMEM);
	cq->odp = odpemu_create_cq_flags(cv_odp(context), (int)cqe, cq,
					 channel ? ((struct cv_channel *)channel)->odp : NULL,
					 comp_vector, flags);
	if (!cq->odp) {
		int err = errno;

		free(cq);
		return cv_fail_null(err);
	}
	cq->ctx = cv_ctx(context);
	cq->wc_flags = wc_flags;
	cq->cqx.context = context;
	cq->cqx.channel = channel;
	cq->cqx.cq_context = cq_context;
	cq->cqx.handle = cq->odp->handle;
	cq->cqx.cqe = cq->odp->cqe;
	pthread_mutex_init(&cq->cqx.mutex, NULL);
	pthread_cond_init(&cq->cqx.cond, NULL);
	if (channel)
		channel->refcnt++;
	cv_cq_ex_init(cq);
	return cq;
}

CV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
				       struct ibv_comp_channel *channel, int comp_vector)
{
	struct cv_cq *cq;

	if (cqe < 1)
		return cv_fail_null(EINVAL);
	cq = cq_new(context, (uint32_t)cqe, cq_context, channel, comp_vector, 0, 0);
	return cq ? ibv_cq_ex_to_cq(&cq->cqx) : NULL;
}

struct ibv_cq_ex *cv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *a)
{
	struct cv_cq *cq;

	if (a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
		return cv_fail_null(EINVAL);
	if ((a->wc_flags & ~(uint64_t)CV_WC_EX_FLAGS) ||
	    ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && (a->flags & ~(uint32_t)CV_CQ_FLAGS)))
		return cv_fail_null(EOPNOTSUPP);
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && (!a->parent_domain ||
	    a->parent_domain->context != context))
		return cv_fail_null(EINVAL);	/* no parent domains exist here */
	/* SINGLE_THREADED is a hint (the ring is lock-light already); IGNORE_OVERRUN is
	 * mlx5's: an overrun loses completions instead of failing the CQ (nic/cq.c). */
	cq = cq_new(context, a->cqe, a->cq_context, a->channel, (int)a->comp_vector, a->wc_flags,
		    (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
		    (a->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN) ? ODPEMU_CQ_IGNORE_OVERRUN : 0);
	return cq ? &cq->cqx : NULL;
}

CV_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct cv_cq *c = cv_cq(cq);
	int rc;

	if (!cq)
		return cv_fail(EINVAL);
	if ((rc = odpemu_destroy_cq(c->odp)))
		return rc;
	if (cq->channel)
		cq->channel->refcnt--;
	pthread_cond_destroy(&cq->cond);
	pthread_mutex_destroy(&cq->mutex);
	free(c);
	return 0;
}

/* rdma-core: 0 or an errno; cq->cqe is then the size granted (at least cqe). */
CV_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	struct odpemu_cq *o;
	int rc;

	if (!cq || cqe < 1)
		return cv_fail(EINVAL);
	o = cv_cq(cq)->odp;
	if ((rc = odpemu_resize_cq(o, cqe)))
		return rc;
	cq->cqe = o->cqe;
	return 0;
}

CV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
			       void **cq_context)
{
	struct odpemu_cq *ocq;
	void *owner;
	int rc;

	if (!channel || !cq || !cq_context)
		rc = EINVAL;
	else
		rc = odpemu_get_cq_event(((struct cv_channel *)channel)->odp, &ocq, &owner);
	if (rc) {	/* rdma-core: -1 and errno (EAGAIN non-blocking, EINTR a signal) */
		errno = rc;
		return -1;
	}
	*cq = ibv_cq_ex_to_cq(&((struct cv_cq *)owner)->cqx);
	*cq_context = (*cq)->cq_context;
	return 0;
}

CV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	struct odpemu_cq *o;

	if (!cq || !nevents)
		return;
	o = cv_cq(cq)->odp;
	odpemu_ack_cq_events(o, nevents);
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed = o->comp_events_completed;
	pthread_mutex_unlock(&cq->mutex);
}
