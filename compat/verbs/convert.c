/* SPDX-License-Identifier: MIT */
/* Conversions between rdma-core's attribute structs and libodpemu's: one function per
 * direction. The numbers (states, MTUs, masks, access bits) are the same on both sides
 * (include/odpemu/verbs_types.h); only the shapes differ. */
#include <string.h>

#include "compat.h"

static_assert(IBV_QP_DEST_QPN == (int)ODPEMU_QP_DEST_QPN && IBV_QP_AV == (int)ODPEMU_QP_AV &&
	      IBV_QP_CAP == (int)ODPEMU_QP_CAP, "attribute masks");
static_assert(IBV_QPS_ERR == (int)ODPEMU_QPS_ERR && IBV_MTU_4096 == (int)ODPEMU_MTU_4096,
	      "states and MTUs");
static_assert(sizeof(struct ibv_qp_cap) == sizeof(struct odpemu_qp_cap), "caps");

#define FLOW_LABEL_MASK	0xfffffu	/* 20 bits (IBA 8.3.1); UCX passes ~0 on path 0 */

void cv_ah_to_odp(const struct ibv_ah_attr *in, struct odpemu_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->grh.dgid.raw, in->grh.dgid.raw, sizeof(out->grh.dgid.raw));
	out->grh.flow_label = in->grh.flow_label & FLOW_LABEL_MASK;
	out->grh.sgid_index = cv_sgid_to_odp(in->grh.sgid_index);
	out->grh.hop_limit = in->grh.hop_limit;
	out->grh.traffic_class = in->grh.traffic_class;
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->src_path_bits = in->src_path_bits;
	out->static_rate = in->static_rate;
	out->is_global = in->is_global;
	out->port_num = in->port_num;
}

/* The sgid_index comes back as libodpemu's: callers that know the client's put it back. */
void cv_ah_from_odp(const struct odpemu_ah_attr *in, struct ibv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->grh.dgid.raw, in->grh.dgid.raw, sizeof(out->grh.dgid.raw));
	out->grh.flow_label = in->grh.flow_label;
	out->grh.sgid_index = (uint8_t)(in->grh.sgid_index + 1);
	out->grh.hop_limit = in->grh.hop_limit;
	out->grh.traffic_class = in->grh.traffic_class;
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->src_path_bits = in->src_path_bits;
	out->static_rate = in->static_rate;
	out->is_global = in->is_global;
	out->port_num = in->port_num;
}

void cv_qp_attr_to_odp(const struct ibv_qp_attr *in, struct odpemu_qp_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->qp_state = (enum odpemu_qp_state)in->qp_state;
	out->cur_qp_state = (enum odpemu_qp_state)in->cur_qp_state;
	out->path_mtu = (enum odpemu_mtu)in->path_mtu;
	out->qkey = in->qkey;
	out->rq_psn = in->rq_psn;
	out->sq_psn = in->sq_psn;
	out->dest_qp_num = in->dest_qp_num;
	/* MW_BIND means nothing without memory windows; LOCAL_WRITE is the receive side's
	 * right, which libodpemu also accepts. */
	out->qp_access_flags = in->qp_access_flags & ~(unsigned int)IBV_ACCESS_MW_BIND;
	memcpy(&out->cap, &in->cap, sizeof(out->cap));
	cv_ah_to_odp(&in->ah_attr, &out->ah_attr);
	out->pkey_index = in->pkey_index;
	out->en_sqd_async_notify = in->en_sqd_async_notify;
	out->sq_draining = in->sq_draining;
	out->max_rd_atomic = in->max_rd_atomic;
	out->max_dest_rd_atomic = in->max_dest_rd_atomic;
	out->min_rnr_timer = in->min_rnr_timer;
	out->port_num = in->port_num;
	out->timeout = in->timeout;
	out->retry_cnt = in->retry_cnt;
	out->rnr_retry = in->rnr_retry;
}

void cv_qp_attr_from_odp(const struct odpemu_qp_attr *in, struct ibv_qp_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->qp_state = (enum ibv_qp_state)in->qp_state;
	out->cur_qp_state = (enum ibv_qp_state)in->cur_qp_state;
	out->path_mtu = (enum ibv_mtu)in->path_mtu;
	out->path_mig_state = IBV_MIG_MIGRATED;
	out->qkey = in->qkey;
	out->rq_psn = in->rq_psn;
	out->sq_psn = in->sq_psn;
	out->dest_qp_num = in->dest_qp_num;
	out->qp_access_flags = in->qp_access_flags;
	memcpy(&out->cap, &in->cap, sizeof(out->cap));
	cv_ah_from_odp(&in->ah_attr, &out->ah_attr);
	out->pkey_index = in->pkey_index;
	out->en_sqd_async_notify = in->en_sqd_async_notify;
	out->sq_draining = in->sq_draining;
	out->max_rd_atomic = in->max_rd_atomic;
	out->max_dest_rd_atomic = in->max_dest_rd_atomic;
	out->min_rnr_timer = in->min_rnr_timer;
	out->port_num = in->port_num;
	out->timeout = in->timeout;
	out->retry_cnt = in->retry_cnt;
	out->rnr_retry = in->rnr_retry;
}
