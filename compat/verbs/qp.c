/* SPDX-License-Identifier: MIT */
/* Queue pairs: ibv_create_qp and create_qp_ex (RC and UD), modify, query, destroy,
 * ibv_qp_to_qp_ex. The data path is in post.c and qp_ex.c. */
#include <stdlib.h>
#include <string.h>

#include "compat.h"

static_assert(offsetof(struct cv_qp, wr_flush) == offsetof(struct odpemu_ibv_qp_ex_flush, wr_flush),
	      "ibv_wr_flush finds the method");

/* The wr_* operations a QP can be created with (qp_ex.c implements each). */
#define CV_SEND_OPS	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV | \
			 IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_FLUSH | \
			 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)

static struct odpemu_cq *odp_cq(struct ibv_cq *cq)
{
	return cq ? cv_cq(cq)->odp : NULL;
}

/* The wr_* operations the device offers: FLUSH and ATOMIC WRITE only with their device
 * caps. rdma-core's mlx5 provider refuses a QP asking for either with EOPNOTSUPP
 * (providers/mlx5/qp.c mlx5_qp_fill_wr_pfns: send_ops_flags beyond
 * MLX5_SUPPORTED_SEND_OPS_FLAGS_RC); so does this library on a personality without them. */
static int send_ops_offered(struct ibv_context *context, uint64_t ops)
{
	struct odpemu_device_attr a;
	int rc;

	if (!(ops & (IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_ATOMIC_WRITE)))
		return 0;
	if ((rc = odpemu_query_device(cv_odp(context), &a)))
		return rc;
	if (((ops & IBV_QP_EX_WITH_FLUSH) && !(a.device_cap_flags & ODPEMU_DEVICE_FLUSH_ANY)) ||
	    ((ops & IBV_QP_EX_WITH_ATOMIC_WRITE) &&
	     !(a.device_cap_flags & ODPEMU_DEVICE_ATOMIC_WRITE)))
		return EOPNOTSUPP;
	return 0;
}

/* init's sizes are written back with what was granted, as rdma-core does. */
static struct cv_qp *qp_new(struct ibv_pd *pd, struct ibv_qp_init_attr *init, uint64_t send_ops)
{
	struct odpemu_qp_init_attr o = {
		.send_cq = odp_cq(init->send_cq), .recv_cq = odp_cq(init->recv_cq),
		.srq = init->srq ? cv_srq(init->srq)->odp : NULL,
		.qp_type = (enum odpemu_qp_type)init->qp_type, .sq_sig_all = init->sq_sig_all,
	};
	struct cv_qp *qp;

	if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UC &&
	    init->qp_type != IBV_QPT_UD)
		return cv_fail_null(init->qp_type == IBV_QPT_XRC_SEND ||
				    init->qp_type == IBV_QPT_XRC_RECV ||
				    init->qp_type == IBV_QPT_RAW_PACKET ? EOPNOTSUPP : EINVAL);
	if (!(qp = calloc(1, sizeof(*qp))))
		return cv_fail_null(ENOMEM);
	memcpy(&o.cap, &init->cap, sizeof(o.cap));
	o.qp_context = qp;
	if (!(qp->odp = odpemu_create_qp(cv_pd(pd)->odp, &o))) {
		int err = errno;

		free(qp);
		return cv_fail_null(err);
	}
	memcpy(&init->cap, &o.cap, sizeof(init->cap));
	qp->ctx = cv_ctx(pd->context);
	qp->send_ops = send_ops;
	qp->max_inline = o.cap.max_inline_data;
	qp->qpx.qp_base = (struct ibv_qp){
		.context = pd->context, .qp_context = init->qp_context, .pd = pd,
		.send_cq = init->send_cq, .recv_cq = init->recv_cq, .srq = init->srq,
		.handle = qp->odp->handle, .qp_num = qp->odp->qp_num, .state = IBV_QPS_RESET,
		.qp_type = init->qp_type,
	};
	pthread_mutex_init(&qp->qpx.qp_base.mutex, NULL);
	pthread_cond_init(&qp->qpx.qp_base.cond, NULL);
	return qp;
}

static void qp_free(struct cv_qp *qp)
{
	pthread_cond_destroy(&qp->qpx.qp_base.cond);
	pthread_mutex_destroy(&qp->qpx.qp_base.mutex);
	free(qp->batch.slot);
	free(qp);
}

CV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct cv_qp *qp;

	if (!pd || !init)
		return cv_fail_null(EINVAL);
	qp = qp_new(pd, init, 0);
	return qp ? &qp->qpx.qp_base : NULL;
}

struct ibv_qp *cv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	struct ibv_qp_init_attr init;
	uint64_t ops = 0;
	struct cv_qp *qp;
	int rc;

	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || a->pd->context != context)
		return cv_fail_null(EINVAL);
	if (a->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
				       IBV_QP_INIT_ATTR_CREATE_FLAGS))
		return cv_fail_null(EOPNOTSUPP);	/* XRC, TSO, RSS */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		return cv_fail_null(EOPNOTSUPP);
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ops = a->send_ops_flags;
		if (!ops || (ops & ~(uint64_t)CV_SEND_OPS))
			return cv_fail_null(EOPNOTSUPP);
		if ((rc = send_ops_offered(context, ops)))
			return cv_fail_null(rc);
	}
	init = (struct ibv_qp_init_attr){ .qp_context = a->qp_context, .send_cq = a->send_cq,
		.recv_cq = a->recv_cq, .srq = a->srq, .cap = a->cap, .qp_type = a->qp_type,
		.sq_sig_all = a->sq_sig_all };
	/* wr_atomic_write carries its 8 bytes inline: grant at least that (more than asked
	 * is allowed, and written back). */
	if ((ops & IBV_QP_EX_WITH_ATOMIC_WRITE) && init.cap.max_inline_data < 8)
		init.cap.max_inline_data = 8;
	if (!(qp = qp_new(a->pd, &init, ops)))
		return NULL;
	a->cap = init.cap;
	if (ops && (rc = cv_qp_ex_init(qp))) {
		odpemu_destroy_qp(qp->odp);
		qp_free(qp);
		return cv_fail_null(rc);
	}
	return &qp->qpx.qp_base;
}

/* rdma-core: only a QP made with send_ops_flags has the wr_* methods. */
CV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	if (!qp || !cv_qp(qp)->send_ops)
		return cv_fail_null(EOPNOTSUPP);
	return &cv_qp(qp)->qpx;
}

CV_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct odpemu_qp_attr o;
	int rc;

	if (!qp || !attr)
		return cv_fail(EINVAL);
	cv_qp_attr_to_odp(attr, &o);
	if ((rc = odpemu_modify_qp(cv_qp(qp)->odp, &o, attr_mask)))
		return rc;
	if (attr_mask & IBV_QP_AV)
		cv_qp(qp)->sgid_index = attr->ah_attr.grh.sgid_index;
	if (attr_mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

CV_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			   struct ibv_qp_init_attr *init)
{
	struct odpemu_qp_init_attr oinit;
	struct odpemu_qp_attr o;
	int rc;

	if (!qp || !attr || !init)
		return cv_fail(EINVAL);
	if ((rc = odpemu_query_qp(cv_qp(qp)->odp, &o, attr_mask, &oinit)))
		return rc;
	cv_qp_attr_from_odp(&o, attr);
	attr->ah_attr.grh.sgid_index = cv_qp(qp)->sgid_index;
	qp->state = attr->qp_state;
	*init = (struct ibv_qp_init_attr){ .qp_context = qp->qp_context, .send_cq = qp->send_cq,
		.recv_cq = qp->recv_cq, .srq = qp->srq, .qp_type = qp->qp_type,
		.sq_sig_all = oinit.sq_sig_all };
	memcpy(&init->cap, &oinit.cap, sizeof(init->cap));
	return 0;
}

CV_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	int rc;

	if (!qp)
		return cv_fail(EINVAL);
	if ((rc = odpemu_destroy_qp(cv_qp(qp)->odp)))
		return rc;
	qp_free(cv_qp(qp));
	return 0;
}

static_assert(sizeof(union ibv_gid) == sizeof(union odpemu_gid), "one GID layout");

/* UD multicast: errno as ibv_attach_mcast/ibv_detach_mcast on a kernel device (lib/mcast.c).
 * union ibv_gid and union odpemu_gid are the same 16 bytes. */
CV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (!qp || !gid)
		return cv_fail(EINVAL);
	return odpemu_attach_mcast(cv_qp(qp)->odp, (const union odpemu_gid *)gid, lid);
}

CV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (!qp || !gid)
		return cv_fail(EINVAL);
	return odpemu_detach_mcast(cv_qp(qp)->odp, (const union odpemu_gid *)gid, lid);
}

/* The responder places a message's packets in PSN order, and a packet's bytes at once. */
CV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)op;
	return qp && !flags ? 1 : 0;
}
