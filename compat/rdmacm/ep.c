/* SPDX-License-Identifier: MIT */
/* ep — rdma_create_ep/rdma_destroy_ep (the sync endpoint helpers of rdma_verbs-style
 * programs: rdma_server, rdma_client), SRQs on an ID, and what odpemu does not offer
 * (ECE) with a clear error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"

CMA_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *cid, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq_init_attr a;
	struct ibv_srq *srq;

	if (!cid || !attr || !cid->pd)
		return errno = EINVAL, -1;
	a = (struct ibv_srq_init_attr){ .srq_context = attr->srq_context, .attr = attr->attr };
	if (!(srq = ibv_create_srq((attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : cid->pd,
				   &a)))
		return -1;
	cid->srq = srq;
	return 0;
}

CMA_EXPORT int rdma_create_srq(struct rdma_cm_id *cid, struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex a;

	if (!attr)
		return errno = EINVAL, -1;
	a = (struct ibv_srq_init_attr_ex){ .srq_context = attr->srq_context, .attr = attr->attr,
		.comp_mask = pd ? IBV_SRQ_INIT_ATTR_PD : 0, .pd = pd };
	return rdma_create_srq_ex(cid, &a);
}

CMA_EXPORT void rdma_destroy_srq(struct rdma_cm_id *cid)
{
	if (cid && cid->srq) {
		ibv_destroy_srq(cid->srq);
		cid->srq = NULL;
	}
}

CMA_EXPORT int rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res,
			      struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *id;

	if (!out || !res)
		return errno = EINVAL, -1;
	if (rdma_create_id(NULL, &id, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(id, res->ai_src_addr))
			goto fail;
	} else if (rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr, 2000) ||
		   rdma_resolve_route(id, 2000)) {
		goto fail;
	}
	if (qp_init_attr && (res->ai_flags & RAI_PASSIVE)) {
		/* each request's ID gets a QP like this one (connect_request in conn.c) */
		struct cma_id *l = cma_id(id);

		if (!(l->ep_attr = malloc(sizeof(*qp_init_attr))))
			goto fail;
		*l->ep_attr = *qp_init_attr;
		l->ep_pd = pd;
	} else if (qp_init_attr && rdma_create_qp(id, pd, qp_init_attr)) {
		goto fail;
	}
	*out = id;
	return 0;
fail:
	rdma_destroy_ep(id);
	return -1;
}

CMA_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	rdma_destroy_qp(id);	/* and the CQs it made */
	rdma_destroy_srq(id);
	free(cma_id(id)->ep_attr);
	cma_id(id)->ep_attr = NULL;
	rdma_destroy_id(id);
}

/* ---- not offered ---- */

CMA_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return errno = EOPNOTSUPP, -1;	/* no ECE: the CM advertises none */
}

CMA_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return errno = EOPNOTSUPP, -1;
}

CMA_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			       uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}
