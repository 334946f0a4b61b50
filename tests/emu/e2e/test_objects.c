/* SPDX-License-Identifier: MIT */
/*
 * The verbs objects beyond a plain RC pair, end to end between two daemons:
 *  - query_device / query_port / query_gid / query_qp;
 *  - a completion channel: an armed CQ wakes get_cq_event once;
 *  - an SRQ shared by two QPs, and its limit event;
 *  - UD datagrams with an address handle (GRH in front of the data);
 *  - advise_mr: synchronous PREFETCH_WRITE makes a cold ODP buffer fault-free, NO_FAULT maps
 *    only the pages the process has touched.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "t.h"

#define ALL_ACCESS (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | \
		    ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC)
#define LEN (1u << 20)

static int post1(struct odpemu_qp *qp, enum odpemu_wr_opcode op, struct odpemu_mr *mr,
		 void *buf, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct odpemu_sge sge = { (uintptr_t)buf, len, mr->lkey };
	struct odpemu_send_wr wr = { .wr_id = 1, .opcode = op, .sg_list = &sge, .num_sge = 1,
		.send_flags = ODPEMU_SEND_SIGNALED, .wr.rdma = { raddr, rkey } }, *bad;

	return odpemu_post_send(qp, &wr, &bad);
}

/* A refused create says why, in nic/'s words (nic_qp_init_why, nic_mr_init_why). */
static void refusals_explained(struct odpemu_context *c)
{
	struct odpemu_pd *pd = odpemu_alloc_pd(c);
	struct odpemu_cq *cq = odpemu_create_cq(c, 8, NULL, NULL, 0);
	struct odpemu_qp_init_attr qi = { .send_cq = cq, .recv_cq = cq, .qp_type = ODPEMU_QPT_RC,
		.cap = { 8, 8, 1000, 1, 0 } };

	errno = 0;
	T_CHECK(pd && cq && !odpemu_create_qp(pd, &qi) && errno == EINVAL, "1000 send SGEs");
	T_CHECK(strstr(odpemu_last_error(c), "max_send_sge"), "why: %s", odpemu_last_error(c));
	errno = 0;
	T_CHECK(!odpemu_reg_mr(pd, (void *)0x7ffffffff000ull, 1 << 20,
			       ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_ON_DEMAND) && errno == EINVAL,
		"an ODP MR past the user address space");
	T_CHECK(strstr(odpemu_last_error(c), "47-bit"), "why: %s", odpemu_last_error(c));
	odpemu_destroy_cq(cq);
	odpemu_dealloc_pd(pd);
}

static void queries(struct odpemu_context *c)
{
	struct odpemu_device_attr da;
	struct odpemu_port_attr pa;
	union odpemu_gid g;

	T_EQ(odpemu_query_device(c, &da), 0, "query_device");
	T_CHECK(da.odp_caps.general_caps & ODPEMU_ODP_SUPPORT, "ODP support advertised");
	T_CHECK(da.odp_caps.general_caps & ODPEMU_ODP_SUPPORT_IMPLICIT, "implicit ODP advertised");
	T_CHECK((da.odp_caps.per_transport_caps.rc_odp_caps & ODPEMU_ODP_WRITE) &&
		(da.odp_caps.per_transport_caps.rc_odp_caps & ODPEMU_ODP_READ), "RC ODP caps");
	T_CHECK(da.max_qp > 0 && da.max_cqe > 0 && da.phys_port_cnt == 1, "device limits");
	T_EQ(odpemu_query_port(c, 1, &pa), 0, "query_port");
	T_EQ(pa.state, ODPEMU_PORT_ACTIVE, "port ACTIVE");
	T_EQ(pa.link_layer, ODPEMU_LINK_LAYER_ETHERNET, "link layer");
	T_CHECK(pa.active_mtu >= ODPEMU_MTU_1024, "active MTU %s", odpemu_mtu_str(pa.active_mtu));
	T_EQ(odpemu_query_gid(c, 1, 0, &g), 0, "query_gid 0");
	T_CHECK(odpemu_query_port(c, 2, &pa) == EINVAL, "port 2 does not exist");
	T_CHECK(odpemu_query_gid(c, 1, 99, &g) == EINVAL, "GID index 99");
	refusals_explained(c);
}

static void channel(struct odpemu_context **ctx)
{
	struct h_pair p = { .s = { { .ctx = ctx[0] }, { .ctx = ctx[1] } } };
	struct odpemu_comp_channel *ch = odpemu_create_comp_channel(ctx[0]);
	struct odpemu_cq *ev_cq = NULL;
	struct odpemu_qp_attr qa;
	struct odpemu_qp_init_attr qi;
	struct h_qp_opts o;
	uint8_t *l = h_cold(LEN), *t = h_cold(LEN);
	struct odpemu_mr *lmr, *tmr;
	struct odpemu_wc wc;
	struct pollfd pfd;
	void *cq_ctx = NULL;

	h_qp_opts_default(&o);
	if (!ch)
		{ T_CHECK(0, "create_comp_channel: %m"); return; }
	/* side 0's CQ on the channel: build the pair by hand for that side */
	p.s[0].pd = odpemu_alloc_pd(ctx[0]);
	p.s[0].cq = odpemu_create_cq(ctx[0], 64, (void *)0x1234, ch, 0);
	T_CHECK(p.s[0].cq != NULL, "CQ with a channel: %m");
	{
		struct odpemu_qp_init_attr init = { .send_cq = p.s[0].cq, .recv_cq = p.s[0].cq,
			.cap = { 32, 32, 2, 2, 0 }, .qp_type = ODPEMU_QPT_RC };

		p.s[0].qp = odpemu_create_qp(p.s[0].pd, &init);
	}
	odpemu_query_gid(ctx[0], 1, 0, &p.s[0].gid);
	if (!p.s[0].qp || h_side_up(&p.s[1], &o) ||
	    h_side_connect(&p.s[0], p.s[1].qp->qp_num, &p.s[1].gid, &o) ||
	    h_side_connect(&p.s[1], p.s[0].qp->qp_num, &p.s[0].gid, &o))
		{ T_CHECK(0, "channel pair up"); return; }
	T_EQ(odpemu_query_qp(p.s[0].qp, &qa, ODPEMU_QP_STATE, &qi), 0, "query_qp");
	T_EQ(qa.qp_state, ODPEMU_QPS_RTS, "queried state");
	T_EQ(qa.dest_qp_num, p.s[1].qp->qp_num, "queried dest QPN");
	lmr = odpemu_reg_mr(p.s[0].pd, l, LEN, ALL_ACCESS);
	tmr = odpemu_reg_mr(p.s[1].pd, t, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	T_EQ(odpemu_req_notify_cq(p.s[0].cq, 0), 0, "req_notify_cq");
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	T_EQ(poll(&pfd, 1, 0), 0, "channel quiet before any completion");
	T_EQ(post1(p.s[0].qp, ODPEMU_WR_RDMA_WRITE, lmr, l, 4096, (uintptr_t)t, tmr->rkey), 0,
	     "post");
	T_EQ(poll(&pfd, 1, 5000), 1, "channel readable after the completion");
	T_EQ(odpemu_get_cq_event(ch, &ev_cq, &cq_ctx), 0, "get_cq_event");
	T_CHECK(ev_cq == p.s[0].cq && cq_ctx == (void *)0x1234, "the event names our CQ");
	odpemu_ack_cq_events(p.s[0].cq, 1);
	T_EQ(h_poll(p.s[0].cq, &wc, 1, 5000), 1, "the completion is there");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "WRITE status");
	/* not armed again: the next completion must not wake the channel */
	post1(p.s[0].qp, ODPEMU_WR_RDMA_WRITE, lmr, l, 64, (uintptr_t)t, tmr->rkey);
	T_EQ(h_poll(p.s[0].cq, &wc, 1, 5000), 1, "second completion");
	T_EQ(poll(&pfd, 1, 50), 0, "an unarmed CQ stays quiet");
	odpemu_dereg_mr(lmr);
	odpemu_dereg_mr(tmr);
	h_pair_down(&p);
	T_EQ(odpemu_destroy_comp_channel(ch), 0, "destroy channel");
	munmap(l, LEN + 4096);
	munmap(t, LEN + 4096);
}

static void srq(struct h_env *e, struct odpemu_context **ctx)
{
	struct odpemu_pd *pd1 = odpemu_alloc_pd(ctx[1]);
	struct odpemu_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	struct odpemu_srq *s = pd1 ? odpemu_create_srq(pd1, &sa) : NULL;
	struct h_pair p[2];
	struct h_qp_opts o;
	uint8_t *rx = h_cold(LEN), *tx = h_cold(LEN);
	struct odpemu_mr *rmr, *tmr[2];
	struct odpemu_srq_attr lim = { .srq_limit = 4 };
	struct odpemu_wc wc[3];
	int got = 0;

	(void)e;
	if (!s)
		{ T_CHECK(0, "create_srq: %m"); return; }
	rmr = odpemu_reg_mr(pd1, rx, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	for (int i = 0; i < 8; i++) {
		struct odpemu_sge sge = { (uintptr_t)rx + i * 4096u, 4096, rmr->lkey };
		struct odpemu_recv_wr wr = { .wr_id = 100u + (unsigned)i, .sg_list = &sge,
			.num_sge = 1 }, *bad;

		T_EQ(odpemu_post_srq_recv(s, &wr, &bad), 0, "post_srq_recv");
	}
	T_EQ(odpemu_modify_srq(s, &lim, ODPEMU_SRQ_LIMIT), 0, "arm SRQ limit 4");
	h_qp_opts_default(&o);
	memset(p, 0, sizeof(p));
	for (int k = 0; k < 2; k++) {
		struct odpemu_qp_init_attr init = { .cap = { 16, 16, 1, 1, 0 },
			.qp_type = ODPEMU_QPT_RC, .srq = s };

		p[k].s[0].ctx = ctx[0];
		p[k].s[1].ctx = ctx[1];
		p[k].s[1].pd = pd1;
		p[k].s[1].cq = odpemu_create_cq(ctx[1], 64, NULL, NULL, 0);
		init.send_cq = init.recv_cq = p[k].s[1].cq;
		p[k].s[1].qp = odpemu_create_qp(pd1, &init);
		odpemu_query_gid(ctx[1], 1, 0, &p[k].s[1].gid);
		if (!p[k].s[1].qp || h_side_up(&p[k].s[0], &o) ||
		    h_side_connect(&p[k].s[0], p[k].s[1].qp->qp_num, &p[k].s[1].gid, &o) ||
		    h_side_connect(&p[k].s[1], p[k].s[0].qp->qp_num, &p[k].s[0].gid, &o))
			{ T_CHECK(0, "SRQ pair %d up", k); return; }
		tmr[k] = odpemu_reg_mr(p[k].s[0].pd, tx, LEN, ALL_ACCESS);
	}
	memset(tx, 'S', 4096);
	for (int i = 0; i < 6; i++)	/* 8 posted, 6 consumed: below the limit of 4 */
		T_EQ(post1(p[i & 1].s[0].qp, ODPEMU_WR_SEND, tmr[i & 1], tx, 1000, 0, 0), 0,
		     "SEND into the SRQ");
	for (int k = 0; k < 2; k++)
		got += h_poll(p[k].s[1].cq, wc, 3, 5000);
	T_EQ(got, 6, "receive completions through the SRQ");
	T_CHECK(rx[0] == 'S', "SRQ receive data");
	{
		struct pollfd pfd = { .fd = ctx[1]->async_fd, .events = POLLIN };
		struct odpemu_async_event ev;
		bool seen = false;

		for (int i = 0; i < 20 && !seen && poll(&pfd, 1, 100) >= 0; i++)
			if ((pfd.revents & POLLIN) && !odpemu_get_async_event(ctx[1], &ev)) {
				seen = ev.event_type == ODPEMU_EVENT_SRQ_LIMIT_REACHED &&
				       ev.element.srq == s;
				odpemu_ack_async_event(&ev);
			}
		T_CHECK(seen, "no SRQ_LIMIT_REACHED event");
	}
	for (int k = 0; k < 2; k++) {
		h_poll(p[k].s[0].cq, wc, 3, 1000);
		odpemu_dereg_mr(tmr[k]);
		odpemu_destroy_qp(p[k].s[1].qp);
		odpemu_destroy_cq(p[k].s[1].cq);
		p[k].s[1].qp = NULL;
		p[k].s[1].cq = NULL;
		p[k].s[1].pd = NULL;
		h_pair_down(&p[k]);
	}
	odpemu_dereg_mr(rmr);
	T_EQ(odpemu_destroy_srq(s), 0, "destroy_srq");
	T_EQ(odpemu_dealloc_pd(pd1), 0, "dealloc_pd");
	munmap(rx, LEN + 4096);
	munmap(tx, LEN + 4096);
}

static void ud(struct h_env *e, struct odpemu_context **ctx)
{
	struct h_pair p = { .s = { { .ctx = ctx[0] }, { .ctx = ctx[1] } } };
	struct h_qp_opts o;
	uint8_t *rx = h_cold(LEN), *tx = h_cold(LEN);
	struct odpemu_mr *rmr, *tmr;
	struct odpemu_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct odpemu_ah *ah;
	struct odpemu_wc wc;

	h_qp_opts_default(&o);
	o.type = ODPEMU_QPT_UD;
	if (h_pair_up(e, &p, &o))
		{ T_CHECK(0, "UD pair up"); return; }
	rmr = odpemu_reg_mr(p.s[1].pd, rx, LEN, ALL_ACCESS);
	tmr = odpemu_reg_mr(p.s[0].pd, tx, LEN, ALL_ACCESS);
	aa.grh.dgid = p.s[1].gid;
	ah = odpemu_create_ah(p.s[0].pd, &aa);
	T_CHECK(ah != NULL, "create_ah");
	for (int i = 0; i < 4; i++) {
		struct odpemu_sge sge = { (uintptr_t)rx + i * 8192u, 40 + 2048, rmr->lkey };
		struct odpemu_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;

		T_EQ(odpemu_post_recv(p.s[1].qp, &wr, &bad), 0, "UD post_recv");
	}
	for (int i = 0; i < 4; i++) {
		struct odpemu_sge sge = { (uintptr_t)tx, 1000, tmr->lkey };
		struct odpemu_send_wr wr = { .opcode = ODPEMU_WR_SEND_WITH_IMM, .sg_list = &sge,
			.num_sge = 1, .send_flags = ODPEMU_SEND_SIGNALED, .imm_data = htonl(55),
			.wr.ud = { ah, p.s[1].qp->qp_num, 0x11111111 } }, *bad;

		memset(tx, 'a' + i, 1000);
		T_EQ(odpemu_post_send(p.s[0].qp, &wr, &bad), 0, "UD post_send");
		T_EQ(h_poll(p.s[0].cq, &wc, 1, 5000), 1, "UD send completion");
		T_EQ(h_poll(p.s[1].cq, &wc, 1, 5000), 1, "UD receive completion");
		T_EQ(wc.status, ODPEMU_WC_SUCCESS, "UD receive status");
		T_EQ(wc.byte_len, 1040, "UD byte_len: GRH + data");
		T_CHECK(wc.wc_flags & ODPEMU_WC_GRH, "UD receive has a GRH");
		T_EQ(wc.src_qp, p.s[0].qp->qp_num, "UD src_qp");
		T_EQ(ntohl(wc.imm_data), 55, "UD imm");
		T_CHECK(rx[i * 8192u + 40] == 'a' + i && rx[i * 8192u + 40 + 999] == 'a' + i,
			"UD data after the GRH");
	}
	T_CHECK(odpemu_post_send(p.s[0].qp, &(struct odpemu_send_wr){ .opcode =
		ODPEMU_WR_RDMA_WRITE, .wr.ud = { ah, 1, 1 } }, &(struct odpemu_send_wr *){ NULL })
		== EINVAL, "RDMA WRITE on a UD QP is refused");
	odpemu_destroy_ah(ah);
	odpemu_dereg_mr(rmr);
	odpemu_dereg_mr(tmr);
	h_pair_down(&p);
	munmap(rx, LEN + 4096);
	munmap(tx, LEN + 4096);
}

static unsigned long long mr_ctr(struct odpemu_context *c, struct odpemu_mr *mr, const char *n)
{
	return h_counter(c, ODPEMU_COUNTERS_MR, mr->handle, n);
}

static void advise(struct h_env *e, struct odpemu_context **ctx)
{
	struct h_pair p = { .s = { { .ctx = ctx[0] }, { .ctx = ctx[1] } } };
	struct h_qp_opts o;
	uint8_t *t = h_cold(LEN), *l = h_cold(LEN);
	struct odpemu_mr *tmr, *lmr;
	struct odpemu_wc wc;

	h_qp_opts_default(&o);
	if (h_pair_up(e, &p, &o))
		{ T_CHECK(0, "pair up"); return; }
	tmr = odpemu_reg_mr(p.s[1].pd, t, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	lmr = odpemu_reg_mr(p.s[0].pd, l, LEN, ALL_ACCESS);
	{
		struct odpemu_sge sge = { (uintptr_t)t, LEN, tmr->lkey };

		T_EQ(odpemu_advise_mr(p.s[1].pd, ODPEMU_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				      ODPEMU_ADVISE_MR_FLAG_FLUSH, &sge, 1), 0, "sync prefetch");
	}
	T_EQ(mr_ctr(ctx[1], tmr, "present_pages"), LEN / 4096, "pages present after prefetch");
	T_CHECK(mr_ctr(ctx[1], tmr, "page_prefetch") >= LEN / 4096, "page_prefetch counter");
	T_EQ(mr_ctr(ctx[1], tmr, "page_faults"), 0, "no fault before traffic");
	for (uint32_t off = 0; off < LEN; off += 65536) {
		post1(p.s[0].qp, ODPEMU_WR_RDMA_WRITE, lmr, l, 65536, (uintptr_t)t + off, tmr->rkey);
		h_poll(p.s[0].cq, &wc, 1, 5000);
	}
	T_EQ(mr_ctr(ctx[1], tmr, "page_faults"), 0, "WRITEs into prefetched memory take no fault");
	odpemu_dereg_mr(tmr);

	/* NO_FAULT: only the pages the process has touched */
	munmap(t, LEN + 4096);
	t = h_cold(LEN);
	for (uint32_t off = 0; off < LEN / 2; off += 4096)
		t[off] = 1;
	tmr = odpemu_reg_mr(p.s[1].pd, t, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	{
		struct odpemu_sge sge = { (uintptr_t)t, LEN, tmr->lkey };

		T_EQ(odpemu_advise_mr(p.s[1].pd, ODPEMU_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				      ODPEMU_ADVISE_MR_FLAG_FLUSH, &sge, 1), 0, "sync NO_FAULT");
	}
	T_EQ(mr_ctr(ctx[1], tmr, "present_pages"), LEN / 2 / 4096,
	     "NO_FAULT maps the touched half only");
	{
		struct odpemu_sge sge = { (uintptr_t)t, LEN, 0xdead00 };

		T_CHECK(odpemu_advise_mr(p.s[1].pd, ODPEMU_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1) ==
			EINVAL, "advise with an unknown lkey");
	}
	odpemu_dereg_mr(tmr);
	odpemu_dereg_mr(lmr);
	h_pair_down(&p);
	munmap(t, LEN + 4096);
	munmap(l, LEN + 4096);
}

static void objects(struct h_env *e)
{
	struct odpemu_context **ctx = e->ctx;

	queries(ctx[0]);
	channel(ctx);
	srq(e, ctx);
	ud(e, ctx);
	advise(e, ctx);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "emu-objects", .watchdog_s = 300,
		.open = H_OPEN_BOTH, .body = objects };

	return h_main(argc, argv, &t);
}
