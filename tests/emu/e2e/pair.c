/* SPDX-License-Identifier: MIT */
/* pair — a connected QP pair across the two test hosts (harness.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness.h"

void h_qp_opts_default(struct h_qp_opts *o)
{
	*o = (struct h_qp_opts){ .type = ODPEMU_QPT_RC, .rnr_retry = -1, .retry_cnt = -1,
		.timeout = -1, .min_rnr_timer = -1 };
}

static int fail(const char *what)
{
	fprintf(stderr, "h_pair_up: %s: %s\n", what, strerror(errno));
	return -1;
}

int h_side_up(struct h_side *s, const struct h_qp_opts *o)
{
	unsigned depth = o->depth ? o->depth : 256;
	struct odpemu_qp_init_attr init = {
		.cap = { .max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 64 },
		.qp_type = o->type ? o->type : ODPEMU_QPT_RC, .fault_policy = o->policy,
	};

	if (!(s->pd = odpemu_alloc_pd(s->ctx)))
		return fail("alloc_pd");
	if (!(s->cq = odpemu_create_cq(s->ctx, (int)depth * 2, NULL, NULL, 0)))
		return fail("create_cq");
	init.send_cq = init.recv_cq = s->cq;
	if (!(s->qp = odpemu_create_qp(s->pd, &init)))
		return fail("create_qp");
	if (odpemu_query_gid(s->ctx, 1, 0, &s->gid))
		return fail("query_gid");
	return 0;
}

int h_side_connect(struct h_side *s, uint32_t peer_qpn, const union odpemu_gid *peer_gid,
		   const struct h_qp_opts *o)
{
	struct odpemu_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
		.qp_access_flags = ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ |
				   ODPEMU_ACCESS_REMOTE_ATOMIC | ODPEMU_ACCESS_FLUSH_GLOBAL |
				   ODPEMU_ACCESS_FLUSH_PERSISTENT };
	bool ud = o->type == ODPEMU_QPT_UD;

	if (ud) {
		a.qkey = 0x11111111;
		if (odpemu_modify_qp(s->qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX |
				     ODPEMU_QP_PORT | ODPEMU_QP_QKEY))
			return fail("modify INIT (UD)");
		a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_RTR };
		if (odpemu_modify_qp(s->qp, &a, ODPEMU_QP_STATE))
			return fail("modify RTR (UD)");
		a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_RTS, .sq_psn = 1 };
		return odpemu_modify_qp(s->qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN) ?
			fail("modify RTS (UD)") : 0;
	}
	if (odpemu_modify_qp(s->qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT |
			     ODPEMU_QP_ACCESS_FLAGS))
		return fail("modify INIT");
	a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_RTR, .path_mtu = ODPEMU_MTU_4096,
		.dest_qp_num = peer_qpn, .rq_psn = 100, .max_dest_rd_atomic = 16,
		.min_rnr_timer = (uint8_t)(o->min_rnr_timer < 0 ? 1 : o->min_rnr_timer),
		.ah_attr = { .is_global = 1, .port_num = 1, .grh = { .dgid = *peer_gid,
			     .hop_limit = 64 } } };
	if (odpemu_modify_qp(s->qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU |
			     ODPEMU_QP_DEST_QPN | ODPEMU_QP_RQ_PSN | ODPEMU_QP_MAX_DEST_RD_ATOMIC |
			     ODPEMU_QP_MIN_RNR_TIMER))
		return fail("modify RTR");
	a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_RTS, .sq_psn = 100,
		.timeout = (uint8_t)(o->timeout < 0 ? 14 : o->timeout),
		.retry_cnt = (uint8_t)(o->retry_cnt < 0 ? 7 : o->retry_cnt),
		.rnr_retry = (uint8_t)(o->rnr_retry < 0 ? 7 : o->rnr_retry),
		.max_rd_atomic = 16 };
	if (odpemu_modify_qp(s->qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN | ODPEMU_QP_TIMEOUT |
			     ODPEMU_QP_RETRY_CNT | ODPEMU_QP_RNR_RETRY | ODPEMU_QP_MAX_QP_RD_ATOMIC))
		return fail("modify RTS");
	return 0;
}

int h_pair_up(struct h_env *e, struct h_pair *p, const struct h_qp_opts *o)
{
	for (int i = 0; i < 2; i++) {
		if (!p->s[i].ctx)
			p->s[i].ctx = h_open(e, i);
		if (h_side_up(&p->s[i], o))
			return -1;
	}
	for (int i = 0; i < 2; i++)
		if (h_side_connect(&p->s[i], p->s[1 - i].qp->qp_num, &p->s[1 - i].gid, o))
			return -1;
	return 0;
}

void h_pair_down(struct h_pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct h_side *s = &p->s[i];

		if (s->qp)
			odpemu_destroy_qp(s->qp);
		if (s->cq)
			odpemu_destroy_cq(s->cq);
		if (s->pd)
			odpemu_dealloc_pd(s->pd);
		s->qp = NULL;
		s->cq = NULL;
		s->pd = NULL;
	}
}

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

int h_poll(struct odpemu_cq *cq, struct odpemu_wc *wc, int n, int timeout_ms)
{
	long long end = ms_now() + timeout_ms;
	int got = 0;

	while (got < n) {
		int k = odpemu_poll_cq(cq, n - got, wc + got);

		if (k < 0)
			break;
		got += k;
		if (!k) {
			struct timespec ts = { 0, 20000 };

			if (ms_now() > end)
				break;
			nanosleep(&ts, NULL);	/* two cores: leave room for the daemons */
		}
	}
	return got;
}

int h_host_verdict(struct odpemu_context *ctx, const char *feature)
{
	struct odpemu_host_feature f[64];
	int n = odpemu_query_host(ctx, f, 64);

	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].name, feature))
			return (int)f[i].verdict;
	return -1;
}

unsigned long long h_counter(struct odpemu_context *ctx, enum odpemu_counter_scope scope,
			     uint32_t id, const char *name)
{
	struct odpemu_counter c[256];
	int n = odpemu_query_counters(ctx, scope, id, c, 256);

	for (int i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return c[i].value;
	return ~0ull;
}
