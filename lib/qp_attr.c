/* SPDX-License-Identifier: MIT */
/* QP attributes between the verbs struct and the protocol's fixed-width one, field by
 * field. RoCE needs no LIDs, SL or static rate, so those do not travel; the protocol has
 * one port number, which is the QP's (ODPEMU_QP_PORT) or else the address vector's. */
#include <string.h>

#include "lib_int.h"
#include "qp_attr.h"

void lib_qp_attr_to_ipc(const struct odpemu_qp_attr *a, int mask, struct ipc_qp_attr *o)
{
	memset(o, 0, sizeof(*o));
	o->qp_state = a->qp_state;
	o->cur_qp_state = a->cur_qp_state;
	o->path_mtu = a->path_mtu;
	o->qkey = a->qkey;
	o->rq_psn = a->rq_psn;
	o->sq_psn = a->sq_psn;
	o->dest_qp_num = a->dest_qp_num;
	o->qp_access_flags = a->qp_access_flags;
	memcpy(o->dgid, a->ah_attr.grh.dgid.raw, sizeof(o->dgid));
	o->flow_label = a->ah_attr.grh.flow_label;
	o->sgid_index = a->ah_attr.grh.sgid_index;
	o->hop_limit = a->ah_attr.grh.hop_limit;
	o->traffic_class = a->ah_attr.grh.traffic_class;
	o->is_global = a->ah_attr.is_global;
	o->port_num = (mask & ODPEMU_QP_PORT) ? a->port_num : a->ah_attr.port_num;
	o->en_sqd_async_notify = a->en_sqd_async_notify;
	o->max_rd_atomic = a->max_rd_atomic;
	o->max_dest_rd_atomic = a->max_dest_rd_atomic;
	o->min_rnr_timer = a->min_rnr_timer;
	o->timeout = a->timeout;
	o->retry_cnt = a->retry_cnt;
	o->rnr_retry = a->rnr_retry;
	o->pkey_index = a->pkey_index;
}

void lib_qp_attr_from_ipc(const struct ipc_qp_attr *i, struct odpemu_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = (enum odpemu_qp_state)i->qp_state;
	a->cur_qp_state = (enum odpemu_qp_state)i->cur_qp_state;
	a->path_mtu = (enum odpemu_mtu)i->path_mtu;
	a->qkey = i->qkey;
	a->rq_psn = i->rq_psn;
	a->sq_psn = i->sq_psn;
	a->dest_qp_num = i->dest_qp_num;
	a->qp_access_flags = i->qp_access_flags;
	memcpy(a->ah_attr.grh.dgid.raw, i->dgid, sizeof(i->dgid));
	a->ah_attr.grh.flow_label = i->flow_label;
	a->ah_attr.grh.sgid_index = i->sgid_index;
	a->ah_attr.grh.hop_limit = i->hop_limit;
	a->ah_attr.grh.traffic_class = i->traffic_class;
	a->ah_attr.is_global = i->is_global;
	a->ah_attr.port_num = i->port_num;
	a->port_num = i->port_num;
	a->en_sqd_async_notify = i->en_sqd_async_notify;
	a->max_rd_atomic = i->max_rd_atomic;
	a->max_dest_rd_atomic = i->max_dest_rd_atomic;
	a->min_rnr_timer = i->min_rnr_timer;
	a->timeout = i->timeout;
	a->retry_cnt = i->retry_cnt;
	a->rnr_retry = i->rnr_retry;
	a->pkey_index = i->pkey_index;
}
