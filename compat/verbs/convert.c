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

/* The fields both sides spell alike, copied by every conversion below. */
#define AH_FIELDS(X) X(dlid) X(sl) X(src_path_bits) X(static_rate) X(is_global) X(port_num) \
	X(grh.hop_limit) X(grh.traffic_class)
#define QP_FIELDS(X) X(qkey) X(rq_psn) X(sq_psn) X(dest_qp_num) X(pkey_index) \
	X(en_sqd_async_notify) X(sq_draining) X(max_rd_atomic) X(max_dest_rd_atomic) \
	X(min_rnr_timer) X(port_num) X(timeout) X(retry_cnt) X(rnr_retry)
#define COPY(f) out->f = in->f;

void cv_ah_to_odp(const struct ibv_ah_attr *in, struct odpemu_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	AH_FIELDS(COPY)
	memcpy(out->grh.dgid.raw, in->grh.dgid.raw, sizeof(out->grh.dgid.raw));
	out->grh.flow_label = in->grh.flow_label & FLOW_LABEL_MASK;
	out->grh.sgid_index = cv_sgid_to_odp(in->grh.sgid_index);
}

/* The sgid_index comes back as libodpemu's: callers that know the client's put it back. */
void cv_ah_from_odp(const struct odpemu_ah_attr *in, struct ibv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	AH_FIELDS(COPY)
	memcpy(out->grh.dgid.raw, in->grh.dgid.raw, sizeof(out->grh.dgid.raw));
	out->grh.flow_label = in->grh.flow_label;
	out->grh.sgid_index = (uint8_t)(in->grh.sgid_index + 1);
}

void cv_qp_attr_to_odp(const struct ibv_qp_attr *in, struct odpemu_qp_attr *out)
{
	memset(out, 0, sizeof(*out));
	QP_FIELDS(COPY)
	out->qp_state = (enum odpemu_qp_state)in->qp_state;
	out->cur_qp_state = (enum odpemu_qp_state)in->cur_qp_state;
	out->path_mtu = (enum odpemu_mtu)in->path_mtu;
	/* MW_BIND means nothing without memory windows; LOCAL_WRITE is the receive side's
	 * right, which libodpemu also accepts. */
	out->qp_access_flags = in->qp_access_flags & ~(unsigned int)IBV_ACCESS_MW_BIND;
	memcpy(&out->cap, &in->cap, sizeof(out->cap));
	cv_ah_to_odp(&in->ah_attr, &out->ah_attr);
}

void cv_qp_attr_from_odp(const struct odpemu_qp_attr *in, struct ibv_qp_attr *out)
{
	memset(out, 0, sizeof(*out));
	QP_FIELDS(COPY)
	out->qp_state = (enum ibv_qp_state)in->qp_state;
	out->cur_qp_state = (enum ibv_qp_state)in->cur_qp_state;
	out->path_mtu = (enum ibv_mtu)in->path_mtu;
	out->path_mig_state = IBV_MIG_MIGRATED;
	out->qp_access_flags = in->qp_access_flags;
	memcpy(&out->cap, &in->cap, sizeof(out->cap));
	cv_ah_from_odp(&in->ah_attr, &out->ah_attr);
}
