/* SPDX-License-Identifier: MIT */
/* Shared receive queues and address handles (UD), including the AH built from a received
 * completion's GRH. */
#include <stdlib.h>
#include <string.h>

#include "compat.h"

static_assert(sizeof(struct ibv_srq_attr) == sizeof(struct odpemu_srq_attr), "srq attr");
static_assert(IBV_SRQ_MAX_WR == (int)ODPEMU_SRQ_MAX_WR && IBV_SRQ_LIMIT == (int)ODPEMU_SRQ_LIMIT,
	      "srq masks");

/* ---- SRQ ---- */

CV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	struct odpemu_srq_init_attr o;
	struct cv_srq *s;

	if (!pd || !init)
		return cv_fail_null(EINVAL);
	if (!(s = calloc(1, sizeof(*s))))
		return cv_fail_null(ENOMEM);
	o.srq_context = s;
	memcpy(&o.attr, &init->attr, sizeof(o.attr));
	if (!(s->odp = odpemu_create_srq(cv_pd(pd)->odp, &o))) {
		int err = errno;

		free(s);
		return cv_fail_null(err);
	}
	memcpy(&init->attr, &o.attr, sizeof(init->attr));	/* granted sizes */
	s->srq.context = pd->context;
	s->srq.srq_context = init->srq_context;
	s->srq.pd = pd;
	s->srq.handle = s->odp->handle;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	return &s->srq;
}

/* Basic SRQs only: XRC and tag-matching SRQs are not modelled. */
struct ibv_srq *cv_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *a)
{
	struct ibv_srq_init_attr init = { .srq_context = a->srq_context, .attr = a->attr };
	struct ibv_srq *srq;

	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd || a->pd->context != context)
		return cv_fail_null(EINVAL);
	if ((a->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE)) ||
	    ((a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type != IBV_SRQT_BASIC))
		return cv_fail_null(EOPNOTSUPP);
	if ((srq = ibv_create_srq(a->pd, &init)))
		a->attr = init.attr;
	return srq;
}

CV_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	if (!srq || !attr)
		return cv_fail(EINVAL);
	return odpemu_modify_srq(cv_srq(srq)->odp, (struct odpemu_srq_attr *)attr, mask);
}

CV_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	if (!srq || !attr)
		return cv_fail(EINVAL);
	return odpemu_query_srq(cv_srq(srq)->odp, (struct odpemu_srq_attr *)attr);
}

CV_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	int rc;

	if (!srq)
		return cv_fail(EINVAL);
	if ((rc = odpemu_destroy_srq(cv_srq(srq)->odp)))
		return rc;
	pthread_cond_destroy(&srq->cond);
	pthread_mutex_destroy(&srq->mutex);
	free(srq);
	return 0;
}

/* ---- AH ---- */

/* RoCE routes by GID: the AH must be global (is_global = 1), else EINVAL. */
CV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct odpemu_ah_attr o;
	struct cv_ah *a;

	if (!pd || !attr)
		return cv_fail_null(EINVAL);
	if (!(a = calloc(1, sizeof(*a))))
		return cv_fail_null(ENOMEM);
	cv_ah_to_odp(attr, &o);
	if (!(a->odp = odpemu_create_ah(cv_pd(pd)->odp, &o))) {
		int err = errno;

		free(a);
		return cv_fail_null(err);
	}
	a->ah.context = pd->context;
	a->ah.pd = pd;
	return &a->ah;
}

CV_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	int rc;

	if (!ah)
		return cv_fail(EINVAL);
	if ((rc = odpemu_destroy_ah(cv_ah(ah)->odp)))
		return rc;
	free(ah);
	return 0;
}

/* The GRH area of a RoCEv2 UD receive (IBA A17.4.5.1): an IPv6 header, or for IPv4, 20
 * zero bytes and then the IPv4 header. src/dst: the addresses as GIDs. */
static int grh_addrs(const uint8_t *grh, union ibv_gid *src, union ibv_gid *dst, uint8_t *tclass,
		     uint32_t *flow_label)
{
	static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *ip4 = grh + 20;

	if ((grh[0] >> 4) == 6) {
		memcpy(src->raw, grh + 8, 16);
		memcpy(dst->raw, grh + 24, 16);
		*tclass = (uint8_t)((grh[0] << 4) | (grh[1] >> 4));
		*flow_label = ((uint32_t)(grh[1] & 0xf) << 16) | (uint32_t)(grh[2] << 8) | grh[3];
		return 0;
	}
	if (ip4[0] != 0x45)	/* version 4, no options */
		return EINVAL;
	memcpy(src->raw, v4_prefix, 12);
	memcpy(src->raw + 12, ip4 + 12, 4);
	memcpy(dst->raw, v4_prefix, 12);
	memcpy(dst->raw + 12, ip4 + 16, 4);
	*tclass = ip4[1];
	*flow_label = 0;
	return 0;
}

/* The index of gid in the port's table (the one the packet was sent to), or 1. */
static uint8_t sgid_index_of(struct ibv_context *context, uint8_t port, const union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	union ibv_gid g;

	if (cv_query_port(context, port, &pa, sizeof(pa)))
		return 1;
	for (int i = 0; i < pa.gid_tbl_len && i <= UINT8_MAX; i++)
		if (!ibv_query_gid(context, port, i, &g) && !memcmp(&g, gid, sizeof(g)))
			return (uint8_t)i;
	return 1;
}

/* The reply path to a received UD message: back to its source address, from the
 * address it reached. 0, or -1 with errno (no GRH: RoCE needs one). */
CV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				  struct ibv_wc *wc, struct ibv_grh *grh,
				  struct ibv_ah_attr *ah_attr)
{
	union ibv_gid src, dst;
	uint32_t flow_label;
	uint8_t tclass;

	if (!context || !wc || !grh || !ah_attr || !(wc->wc_flags & IBV_WC_GRH) ||
	    grh_addrs((const uint8_t *)grh, &src, &dst, &tclass, &flow_label)) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->is_global = 1;
	ah_attr->grh.dgid = src;
	ah_attr->grh.sgid_index = sgid_index_of(context, port_num, &dst);
	ah_attr->grh.hop_limit = 0xff;		/* rdma-core's choice for RoCE replies */
	ah_attr->grh.traffic_class = tclass;
	ah_attr->grh.flow_label = flow_label;
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	return 0;
}

CV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
					       struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (!pd)
		return cv_fail_null(EINVAL);
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}
