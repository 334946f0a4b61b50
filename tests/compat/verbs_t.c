/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "verbs_t.h"

int rc_connect(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid, uint8_t rd_atomic)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dqpn, .rq_psn = 1, .max_dest_rd_atomic = rd_atomic,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *dgid, .sgid_index = RC_CONNECT_GID_IDX,
				      .hop_limit = 64 } } };
	int rc;

	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER)))
		return rc;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .sq_psn = 1, .max_rd_atomic = rd_atomic };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;

	for (int i = 0; l && l[i]; i++)
		if (!c && !strcmp(ibv_get_device_name(l[i]), name))
			c = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	return c;
}

int verbs_side_open(struct verbs_side *s, const char *name)
{
	if (!(s->ctx = open_dev(name)) || !(s->pd = ibv_alloc_pd(s->ctx)) ||
	    !(s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0)) ||
	    ibv_query_gid(s->ctx, 1, RC_CONNECT_GID_IDX, &s->gid))
		return -1;
	return 0;
}

void verbs_side_close(struct verbs_side *s)
{
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	*s = (struct verbs_side){ 0 };
}
