/* SPDX-License-Identifier: MIT */
/* Queue pairs: created by the daemon, which hands back one memfd holding the send ring
 * and (without an SRQ) the receive ring, laid out as ipc_qp_layout() says. State changes
 * are daemon calls; the library keeps the state it was last told for the post checks
 * (the daemon may move the QP to ERR on its own: posting in ERR is allowed). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lib_int.h"
#include "qp_attr.h"

/* qp->cap holds the granted capabilities and qp->pub.srq says whether there is an RQ. */
int lib_qp_attach(struct lib_qp *qp, void *map, size_t map_len, uint32_t rq_offset)
{
	bool has_rq = !qp->pub.srq;
	struct ipc_qp_layout l = ipc_qp_layout(qp->cap.max_send_wr, qp->cap.max_send_sge,
					       qp->cap.max_inline_data, qp->cap.max_recv_wr,
					       qp->cap.max_recv_sge, has_rq);
	int rc;

	if (map_len != l.map_len || (has_rq && rq_offset != l.rq_offset))
		return -EPROTO;
	rc = lib_ring_attach(&qp->sq.ring, map, map_len, 0, l.sq_size, l.sq_slot);
	if (!rc && has_rq)
		rc = lib_ring_attach(&qp->rq.ring, map, map_len, l.rq_offset, l.rq_size, l.rq_slot);
	if (rc)
		return rc;
	lib_wq_init(&qp->sq, qp->cap.max_send_wr, qp->cap.max_send_sge, qp->cap.max_inline_data);
	lib_wq_init(&qp->rq, qp->cap.max_recv_wr, qp->cap.max_recv_sge, 0);
	lib_evc_init(&qp->evc);
	qp->map = map;
	qp->map_len = map_len;
	return 0;
}

void lib_qp_free(struct lib_qp *qp)
{
	if (qp->map) {
		pthread_spin_destroy(&qp->sq.lock);
		pthread_spin_destroy(&qp->rq.lock);
		lib_evc_fini(&qp->evc);
		munmap(qp->map, qp->map_len);
	}
	free(qp);
}

static int check_init(struct odpemu_pd *pd, const struct odpemu_qp_init_attr *init)
{
	if (!init->send_cq || !init->recv_cq || init->send_cq->context != pd->context ||
	    init->recv_cq->context != pd->context ||
	    (init->srq && init->srq->context != pd->context))
		return -EINVAL;
	return init->qp_type == ODPEMU_QPT_RC || init->qp_type == ODPEMU_QPT_UC ||
	       init->qp_type == ODPEMU_QPT_UD ? 0 : -EINVAL;
}

static int create(struct lib_context *c, struct odpemu_pd *pd,
		  const struct odpemu_qp_init_attr *init, struct ipc_create_qp_rep *rep, void **map)
{
	struct ipc_create_qp_req req = {
		.pd = pd->handle, .send_cq = init->send_cq->handle,
		.recv_cq = init->recv_cq->handle, .srq = init->srq ? init->srq->handle : 0,
		.qp_type = init->qp_type,
		.max_send_wr = init->cap.max_send_wr, .max_recv_wr = init->cap.max_recv_wr,
		.max_send_sge = init->cap.max_send_sge, .max_recv_sge = init->cap.max_recv_sge,
		.max_inline_data = init->cap.max_inline_data,
		.sq_sig_all = init->sq_sig_all ? 1 : 0, .fault_policy = init->fault_policy,
	};

	return lib_call_ring(c, IPC_CREATE_QP, IPC_DESTROY_QP, &req, sizeof(req), rep,
			     sizeof(*rep), &rep->handle, &rep->map_len, map);
}

static struct lib_qp *qp_new(struct lib_context *c, const struct ipc_create_qp_rep *rep,
			     const struct odpemu_qp_init_attr *init, void *map, int *err)
{
	struct lib_qp *qp = calloc(1, sizeof(*qp));

	if (!qp) {
		munmap(map, rep->map_len);
		*err = -ENOMEM;
		return NULL;
	}
	qp->cap = (struct odpemu_qp_cap){ rep->max_send_wr, rep->max_recv_wr, rep->max_send_sge,
					  rep->max_recv_sge, rep->max_inline_data };
	qp->pub.srq = init->srq;
	qp->device_caps = rep->device_cap_flags;
	*err = lib_qp_attach(qp, map, rep->map_len, rep->rq_offset);
	if (!*err)
		return qp;
	lib_set_error(c, "create_qp: the daemon's ring layout differs from the library's");
	free(qp);
	munmap(map, rep->map_len);
	return NULL;
}

static void fill_qp(struct lib_qp *qp, struct odpemu_pd *pd, const struct odpemu_qp_init_attr *init,
		    const struct ipc_create_qp_rep *rep)
{
	qp->pub.context = pd->context;
	qp->pub.qp_context = init->qp_context;
	qp->pub.pd = pd;
	qp->pub.send_cq = init->send_cq;
	qp->pub.recv_cq = init->recv_cq;
	qp->pub.handle = rep->handle;
	qp->pub.qp_num = rep->qp_num;
	qp->pub.state = ODPEMU_QPS_RESET;
	qp->pub.qp_type = init->qp_type;
	qp->pub.priv = qp;
	atomic_init(&qp->state, ODPEMU_QPS_RESET);
	qp->sq_sig_all = init->sq_sig_all;
	qp->fault_policy = init->fault_policy;
}

ODPEMU_EXPORT struct odpemu_qp *odpemu_create_qp(struct odpemu_pd *pd,
						 struct odpemu_qp_init_attr *init)
{
	struct ipc_create_qp_rep rep;
	struct lib_context *c;
	struct lib_qp *qp;
	void *map;
	int rc = pd && init ? check_init(pd, init) : -EINVAL;

	if (rc) {
		errno = -rc;
		return NULL;
	}
	c = lib_ctx(pd->context);
	rc = create(c, pd, init, &rep, &map);
	if (rc || !(qp = qp_new(c, &rep, init, map, &rc))) {
		if (!rc)
			lib_call_destroy(c, IPC_DESTROY_QP, rep.handle);
		errno = -rc;
		return NULL;
	}
	fill_qp(qp, pd, init, &rep);
	pthread_mutex_lock(&c->tab_lock);
	rc = lib_table_add(&c->qps, rep.handle, qp);
	pthread_mutex_unlock(&c->tab_lock);
	if (rc) {
		lib_call_destroy(c, IPC_DESTROY_QP, rep.handle);
		lib_qp_free(qp);
		errno = -rc;
		return NULL;
	}
	init->cap = qp->cap;	/* granted, as ibv_create_qp reports */
	return &qp->pub;
}

static void set_state(struct lib_qp *qp, uint32_t state)
{
	qp->pub.state = (enum odpemu_qp_state)state;
	atomic_store_explicit(&qp->state, (int)state, memory_order_relaxed);
}

ODPEMU_EXPORT int odpemu_modify_qp(struct odpemu_qp *pub, struct odpemu_qp_attr *attr,
				   int attr_mask)
{
	struct lib_qp *qp = (struct lib_qp *)pub;
	struct ipc_modify_qp_req req;
	struct ipc_qp_attr rep;
	struct lib_call call = {
		.op = IPC_MODIFY_QP, .req = &req, .req_len = sizeof(req),
		.rep = &rep, .rep_min = sizeof(rep), .rep_cap = sizeof(rep),
	};
	int rc;

	if (!pub || !attr)
		return lib_fail(EINVAL);
	memset(&req, 0, sizeof(req));
	req.mask = (uint32_t)attr_mask;
	lib_qp_attr_to_ipc(attr, attr_mask, &req.attr);
	call.handle = pub->handle;
	rc = lib_call(lib_ctx(pub->context), &call);
	if (rc)
		return lib_fail(-rc);
	set_state(qp, rep.qp_state);
	if ((attr_mask & ODPEMU_QP_STATE) && attr->qp_state == ODPEMU_QPS_RESET &&
	    lib_ctx(pub->context)->cq_clean)
		lib_cq_clean_qp(qp);
	return 0;
}

static void fill_init(const struct lib_qp *qp, struct odpemu_qp_init_attr *init)
{
	memset(init, 0, sizeof(*init));
	init->qp_context = qp->pub.qp_context;
	init->send_cq = qp->pub.send_cq;
	init->recv_cq = qp->pub.recv_cq;
	init->srq = qp->pub.srq;
	init->cap = qp->cap;
	init->qp_type = qp->pub.qp_type;
	init->sq_sig_all = qp->sq_sig_all;
	init->fault_policy = qp->fault_policy;
}

/* Like ibv_query_qp, every attribute is filled whatever attr_mask says. */
ODPEMU_EXPORT int odpemu_query_qp(struct odpemu_qp *pub, struct odpemu_qp_attr *attr,
				  int attr_mask, struct odpemu_qp_init_attr *init)
{
	struct lib_qp *qp = (struct lib_qp *)pub;
	struct ipc_qp_attr rep;
	struct lib_call call = { .op = IPC_QUERY_QP, .rep = &rep, .rep_min = sizeof(rep),
				 .rep_cap = sizeof(rep) };
	int rc;

	(void)attr_mask;
	if (!pub || !attr)
		return lib_fail(EINVAL);
	call.handle = pub->handle;
	rc = lib_call(lib_ctx(pub->context), &call);
	if (rc)
		return lib_fail(-rc);
	set_state(qp, rep.qp_state);
	lib_qp_attr_from_ipc(&rep, attr);
	attr->cap = qp->cap;
	if (init)
		fill_init(qp, init);
	return 0;
}

ODPEMU_EXPORT int odpemu_destroy_qp(struct odpemu_qp *pub)
{
	struct lib_qp *qp = (struct lib_qp *)pub;
	struct lib_context *c;
	int rc;

	if (!pub)
		return lib_fail(EINVAL);
	c = lib_ctx(pub->context);
	rc = lib_destroy_tracked(c, IPC_DESTROY_QP, &c->qps, pub->handle, &qp->evc);
	if (rc)
		return lib_fail(-rc);
	if (c->cq_clean)
		lib_cq_clean_qp(qp);
	lib_qp_free(qp);
	return 0;
}
