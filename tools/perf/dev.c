/* SPDX-License-Identifier: MIT */
/* dev — see dev.h. QP attributes follow perftest's: timeout 14, retry_cnt 7, 16 reads in
 * flight, RNR retry and timer from the flags. */
#include "dev.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tooldev.h"

static int fail(struct perf_dev *d, const char *what)
{
	const char *why = odpemu_last_error(d->ctx);
	int err = errno;

	perf_err("%s on %s: %s%s%s", what, d->name, strerror(err), *why ? ": " : "", why);
	return -1;
}

void dev_open(struct perf_dev *d, const char *name)
{
	int rc;

	memset(d, 0, sizeof(*d));
	if (!(d->ctx = tool_open(PERF_PROG, name)))
		exit(1);
	d->name = odpemu_get_device_name(d->ctx->device);
	if ((rc = odpemu_query_device(d->ctx, &d->attr)) ||
	    (rc = odpemu_query_port(d->ctx, 1, &d->port)) ||
	    (rc = odpemu_query_gid(d->ctx, 1, 0, &d->gid)))
		perf_die("cannot query %s: %s", d->name, strerror(rc));
	if (!(d->pd = odpemu_alloc_pd(d->ctx))) {
		fail(d, "alloc_pd");
		exit(1);
	}
}

int dev_prepare(struct perf_dev *d, const struct perf_cfg *cfg)
{
	if (cfg->odp != PERF_ODP_IMPLICIT || d->implicit)
		return 0;
	d->implicit = odpemu_reg_mr(d->pd, NULL, SIZE_MAX, dev_mr_access(d) |
				    ODPEMU_ACCESS_ON_DEMAND);
	return d->implicit ? 0 : fail(d, "implicit ODP reg_mr");
}

void dev_close(struct perf_dev *d)
{
	if (d->implicit)
		odpemu_dereg_mr(d->implicit);
	if (d->pd)
		odpemu_dealloc_pd(d->pd);
	if (d->ctx)
		odpemu_close_device(d->ctx);
	memset(d, 0, sizeof(*d));
}

void dev_ep(const struct perf_dev *d, const struct perf_qps *q, struct perf_ep *e)
{
	e->mtu = (unsigned)odpemu_mtu_to_bytes(d->port.active_mtu);
	e->gid = d->gid;
	e->nqp = q->n;
	for (unsigned i = 0; i < q->n; i++) {
		e->qpn[i] = q->qp[i]->qp_num;
		e->psn[i] = q->psn[i];
	}
	snprintf(e->dev, sizeof(e->dev), "%s", d->name);
}

int dev_mr_access(const struct perf_dev *d)
{
	int access = ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
		     ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC;

	if (d->attr.device_cap_flags & ODPEMU_DEVICE_FLUSH_GLOBAL)
		access |= ODPEMU_ACCESS_FLUSH_GLOBAL;
	return access;
}

static int to_init(struct perf_dev *d, struct odpemu_qp *qp)
{
	struct odpemu_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
		.qp_access_flags = (dev_mr_access(d) & ~ODPEMU_ACCESS_LOCAL_WRITE) };

	if (odpemu_modify_qp(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT |
			     ODPEMU_QP_ACCESS_FLAGS))
		return fail(d, "modify_qp INIT");
	return 0;
}

int qps_create(struct perf_dev *d, const struct perf_cfg *cfg, unsigned tx, unsigned rx,
	       struct perf_qps *q)
{
	struct odpemu_qp_init_attr init = {
		.cap = { .max_send_wr = tx, .max_recv_wr = rx, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = cfg->inline_size },
		.qp_type = ODPEMU_QPT_RC, .fault_policy = cfg->policy,
	};

	memset(q, 0, sizeof(*q));
	q->n = cfg->qps;
	if (!(q->scq = odpemu_create_cq(d->ctx, (int)(tx * q->n), NULL, NULL, 0)) ||
	    !(q->rcq = odpemu_create_cq(d->ctx, (int)(rx * q->n), NULL, NULL, 0)))
		return fail(d, "create_cq");
	init.send_cq = q->scq;
	init.recv_cq = q->rcq;
	for (unsigned i = 0; i < q->n; i++) {
		if (!(q->qp[i] = odpemu_create_qp(d->pd, &init)))
			return fail(d, "create_qp");
		q->psn[i] = (uint32_t)lrand48() & 0xffffff;
		if (to_init(d, q->qp[i]))
			return -1;
	}
	return 0;
}

static enum odpemu_mtu mtu_enum(unsigned bytes)
{
	enum odpemu_mtu m = ODPEMU_MTU_256;

	while (m < ODPEMU_MTU_4096 && (unsigned)odpemu_mtu_to_bytes(m) < bytes)
		m++;
	return m;
}

static int to_rts(struct perf_dev *d, const struct perf_cfg *cfg, struct odpemu_qp *qp,
		  uint32_t psn, const struct perf_ep *peer, unsigned i, unsigned mtu)
{
	struct odpemu_qp_attr a = { .qp_state = ODPEMU_QPS_RTR, .path_mtu = mtu_enum(mtu),
		.dest_qp_num = peer->qpn[i], .rq_psn = peer->psn[i], .max_dest_rd_atomic = 16,
		.min_rnr_timer = (uint8_t)cfg->min_rnr_timer,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = peer->gid, .hop_limit = 64 } } };

	if (odpemu_modify_qp(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU |
			     ODPEMU_QP_DEST_QPN | ODPEMU_QP_RQ_PSN | ODPEMU_QP_MAX_DEST_RD_ATOMIC |
			     ODPEMU_QP_MIN_RNR_TIMER))
		return fail(d, "modify_qp RTR");
	a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_RTS, .sq_psn = psn, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = (uint8_t)cfg->rnr_retry, .max_rd_atomic = 16 };
	if (odpemu_modify_qp(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN | ODPEMU_QP_TIMEOUT |
			     ODPEMU_QP_RETRY_CNT | ODPEMU_QP_RNR_RETRY | ODPEMU_QP_MAX_QP_RD_ATOMIC))
		return fail(d, "modify_qp RTS");
	return 0;
}

int qps_connect(struct perf_dev *d, const struct perf_cfg *cfg, struct perf_qps *q,
		const struct perf_ep *peer)
{
	unsigned local = (unsigned)odpemu_mtu_to_bytes(d->port.active_mtu);
	unsigned mtu = cfg->mtu ? cfg->mtu : local < peer->mtu ? local : peer->mtu;

	if (peer->nqp != q->n) {
		perf_err("the peer has %u QPs, we have %u", peer->nqp, q->n);
		return -1;
	}
	if (cfg->mtu && cfg->mtu > peer->mtu) {
		perf_err("--mtu %u is over the active MTU %u of the peer's device %s: use --mtu "
			 "%u or less", cfg->mtu, peer->mtu, peer->dev, peer->mtu);
		return -1;
	}
	for (unsigned i = 0; i < q->n; i++)
		if (to_rts(d, cfg, q->qp[i], q->psn[i], peer, i, mtu))
			return -1;
	return 0;
}

void qps_destroy(struct perf_qps *q)
{
	for (unsigned i = 0; i < q->n; i++)
		if (q->qp[i])
			odpemu_destroy_qp(q->qp[i]);
	if (q->scq)
		odpemu_destroy_cq(q->scq);
	if (q->rcq)
		odpemu_destroy_cq(q->rcq);
	memset(q, 0, sizeof(*q));
}

int qps_index(const struct perf_qps *q, uint32_t qp_num)
{
	for (unsigned i = 0; i < q->n; i++)
		if (q->qp[i]->qp_num == qp_num)
			return (int)i;
	return -1;
}
