/* SPDX-License-Identifier: MIT */
/* The two-NIC bench of pair.h. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "roce.h"
#include "t.h"

/* Each side's ports ctx is a small record naming the pair and the side. */
struct port_ctx {
	struct pair *p;
	int side;
	bool slot_lent;		/* tx_slot lent the spare on top, send_slot not yet called */
};
static struct port_ctx ctxs[64][2];
static unsigned nctx;

/* One packet onto the wire: dropped (NULL) or queued in the spare on top, returned. */
static struct pair_pkt *wire_take(struct pair *p, int from, const struct nic_gid *dst,
				  uint8_t opcode, size_t len)
{
	struct pair_pkt *q;
	int to = memcmp(dst, &p->s[1].gid, sizeof(*dst)) == 0 ? 1 :
		 memcmp(dst, &p->s[0].gid, sizeof(*dst)) == 0 ? 0 :
		 nic_gid_is_mcast(dst) ? PAIR_TO_GROUP : -1;

	p->sent++;
	if (to < 0 || p->qcount == PAIR_PKTQ || len > sizeof(q->buf) ||
	    (p->drop_nth && p->sent == p->drop_nth) || (p->drop_mask & (1u << (opcode & 31)))) {
		p->dropped++;
		return NULL;
	}
	q = p->spare[--p->nspare];
	p->q[(p->qhead + p->qcount++) % PAIR_PKTQ] = q;
	q->to = to;
	q->from = from;
	q->group = *dst;
	q->len = (uint32_t)len;
	return q;
}

/* A packet nic/ built in its own scratch: copied. */
static void port_send(void *ctx, const struct nic_gid *dst, const uint8_t *pkt, size_t len)
{
	struct port_ctx *c = ctx;
	struct pair_pkt *q = wire_take(c->p, c->side, dst, pkt[0], len);

	if (q)
		memcpy(q->buf, pkt, len);
}

/* The spare on top, as the daemon lends its socket's next batch slot; the same one until
 * send_slot (a packet only ever leaves from the top). */
static uint8_t *port_tx_slot(void *ctx)
{
	struct port_ctx *c = ctx;
	struct pair *p = c->p;

	c->slot_lent = !p->no_tx_slot && p->nspare;
	return c->slot_lent ? p->spare[p->nspare - 1]->buf : NULL;
}

/* The packet built in the lent spare: queued in it, no copy. */
static void port_send_slot(void *ctx, const struct nic_gid *dst, size_t len)
{
	struct port_ctx *c = ctx;
	struct pair *p = c->p;

	T_CHECK(c->slot_lent, "side %d: send_slot without a lent slot", c->side);
	if (!c->slot_lent)
		return;
	c->slot_lent = false;
	(void)wire_take(p, c->side, dst, p->spare[p->nspare - 1]->buf[0], len);
}

static int port_read(void *ctx, uint32_t client, uint64_t host, void *dst, size_t len)
{
	(void)ctx;
	(void)client;
	memcpy(dst, (const void *)(uintptr_t)host, len);
	return 0;
}

static int port_write(void *ctx, uint32_t client, uint64_t host, const void *src, size_t len)
{
	(void)ctx;
	(void)client;
	memcpy((void *)(uintptr_t)host, src, len);
	return 0;
}

static void port_fault(void *ctx, uint32_t client, struct iopt_req *req)
{
	struct port_ctx *c = ctx;
	struct pair_side *s = &c->p->s[c->side];

	T_CHECK(s->nfaults < PAIR_FAULTQ, "fault queue overflow");
	if (s->nfaults < PAIR_FAULTQ)
		s->faults[s->nfaults++] = (struct pair_fault){ req, client };
}

static void port_event(void *ctx, const struct nic_event *ev)
{
	struct port_ctx *c = ctx;

	if ((unsigned)ev->type < 0x200)
		c->p->s[c->side].events[ev->type]++;
}

static void port_cq_notify(void *ctx, struct nic_cq *cq)
{
	struct port_ctx *c = ctx;
	struct pair_side *s = &c->p->s[c->side];

	if (cq == s->scq)
		s->notified_scq++;
	else if (cq == s->rcq)
		s->notified_rcq++;
}

/* QP1's MADs as the host agent gets them: kept for the test to look at. */
static void port_gsi_rx(void *ctx, const struct nic_gsi_dgram *d)
{
	struct port_ctx *c = ctx;
	struct pair_side *s = &c->p->s[c->side];
	struct pair_mad *m = &s->gsi[s->ngsi % PAIR_GSI_KEPT];

	s->ngsi++;
	m->src = d->src;
	m->src_qp = d->src_qp;
	memcpy(m->mad, d->mad, NIC_GSI_MAD_LEN);
}

static int port_persist(void *ctx, uint32_t client, bool odp, uint64_t addr, uint64_t len,
			struct iopt_waiter *w)
{
	struct port_ctx *c = ctx;
	struct pair_side *s = &c->p->s[c->side];

	(void)client;
	s->persist_calls++;
	s->persist_addr = addr;
	s->persist_len = len;
	s->persist_odp = odp;
	if (c->p->persist_rc == 1)
		s->persist_w = w;
	return c->p->persist_rc;
}

unsigned pair_persist_cancels;

static void port_persist_cancel(void *ctx, struct iopt_waiter *w)
{
	struct port_ctx *c = ctx;
	struct pair_side *s = &c->p->s[c->side];

	if (s->persist_w == w) {
		s->persist_w = NULL;
		s->persist_cancels++;
		pair_persist_cancels++;
	}
}

void pair_persist_answer(struct pair *p, int i, int status)
{
	struct iopt_waiter *w = p->s[i].persist_w;

	T_CHECK(w != NULL, "side %d: a persist request to answer", i);
	if (!w)
		return;
	p->s[i].persist_w = NULL;
	atomic_store(&w->status, status);
	w->fn(w->cookie, status);
}

/* Groups gained and lost, as the daemon's group sockets would follow them. */
static void port_mcast_member(void *ctx, const struct nic_gid *mgid, bool member)
{
	struct port_ctx *c = ctx;
	struct pair_side *s = &c->p->s[c->side];

	(void)mgid;
	if (member)
		s->mcast_joins++;
	else
		s->mcast_leaves++;
}

static struct nic_ports ports_for(struct pair *p, int side)
{
	struct port_ctx *c = &ctxs[nctx++ % 64][side];

	c->p = p;
	c->side = side;
	c->slot_lent = false;
	return (struct nic_ports){ c, port_send, port_read, port_write, port_fault, port_event,
		port_cq_notify, .tx_slot = port_tx_slot, .send_slot = port_send_slot,
		.gsi_rx = port_gsi_rx, .mcast_member = port_mcast_member,
		.persist = port_persist, .persist_cancel = port_persist_cancel };
}

static void connect_rc(struct pair *p, const struct pair_qp_opts *o)
{
	for (int i = 0; i < 2; i++) {
		struct pair_side *s = &p->s[i], *peer = &p->s[!i];
		struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
			.qp_access_flags = o->access };
		const char *why = NULL;

		T_EQ(nic_qp_modify(s->qp, &a, PAIR_RC_INIT_MASK, 0, &why), 0, "rc INIT");
		a = (struct nic_qp_attr){ .qp_state = ODPEMU_QPS_RTR, .path_mtu = o->mtu,
			.dest_qp_num = nic_qp_num(peer->qp), .rq_psn = 100 + (uint32_t)i,
			.max_dest_rd_atomic = 16, .min_rnr_timer = o->min_rnr_timer };
		memcpy(a.ah_attr.dgid, peer->gid.raw, 16);
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		T_EQ(nic_qp_modify(s->qp, &a, PAIR_RC_RTR_MASK, 0, &why), 0, why ? why : "rc RTR");
	}
	for (int i = 0; i < 2; i++) {
		struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_RTS, .sq_psn = 100 + (uint32_t)!i,
			.timeout = o->timeout, .retry_cnt = o->retry_cnt, .rnr_retry = o->rnr_retry,
			.max_rd_atomic = 16 };
		const char *why = NULL;

		T_EQ(nic_qp_modify(p->s[i].qp, &a, PAIR_RC_RTS_MASK, 0, &why), 0,
		     why ? why : "rc RTS");
	}
}

static void uc_to_rtr(struct pair *p, int i, unsigned access)
{
	struct pair_side *s = &p->s[i], *peer = &p->s[!i];
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
		.qp_access_flags = access };
	const char *why = NULL;

	T_EQ(nic_qp_modify(s->uc, &a, PAIR_UC_INIT_MASK, 0, &why), 0, why ? why : "uc INIT");
	a = (struct nic_qp_attr){ .qp_state = ODPEMU_QPS_RTR, .path_mtu = ODPEMU_MTU_1024,
		.dest_qp_num = nic_qp_num(peer->uc), .rq_psn = 300 + (uint32_t)i };
	memcpy(a.ah_attr.dgid, peer->gid.raw, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	T_EQ(nic_qp_modify(s->uc, &a, PAIR_UC_RTR_MASK, 0, &why), 0, why ? why : "uc RTR");
}

void pair_uc_up(struct pair *p, enum nic_fault_policy policy, unsigned access)
{
	for (int i = 0; i < 2; i++) {
		struct pair_side *s = &p->s[i];
		struct nic_qp_init qi = { .type = ODPEMU_QPT_UC, .send_cq = s->scq,
			.recv_cq = s->rcq, .max_send_wr = 64, .max_recv_wr = 64,
			.max_send_sge = 4, .max_recv_sge = 4, .max_inline_data = 64,
			.fault_policy = policy };

		T_EQ(nic_qp_create(s->pd, &qi, &s->uc), 0, "uc qp");
	}
	for (int i = 0; i < 2; i++)
		uc_to_rtr(p, i, access);
	for (int i = 0; i < 2; i++) {
		struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_RTS, .sq_psn = 300 + (uint32_t)!i };
		const char *why = NULL;

		T_EQ(nic_qp_modify(p->s[i].uc, &a, PAIR_UC_RTS_MASK, 0, &why), 0,
		     why ? why : "uc RTS");
	}
}

void pair_ud_up(struct nic_qp *ud, uint32_t qkey, uint32_t sq_psn)
{
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1, .qkey = qkey };
	const char *why = NULL;

	T_EQ(nic_qp_modify(ud, &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT |
		ODPEMU_QP_QKEY, 0, &why), 0, why ? why : "ud INIT");
	a.qp_state = ODPEMU_QPS_RTR;
	T_EQ(nic_qp_modify(ud, &a, ODPEMU_QP_STATE, 0, &why), 0, why ? why : "ud RTR");
	a.qp_state = ODPEMU_QPS_RTS;
	a.sq_psn = sq_psn;
	T_EQ(nic_qp_modify(ud, &a, ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN, 0, &why), 0,
	     why ? why : "ud RTS");
}

static void make_side(struct pair *p, int i, const struct pair_qp_opts *o)
{
	struct pair_side *s = &p->s[i];
	struct nic_config cfg = { .gid = nic_gid_from_v4(0x0a000001u + (uint32_t)i),
		.ports = ports_for(p, i), .max_inflight = o->max_inflight,
		.fault_around = o->fault_around };
	struct nic_qp_init qi = { .type = ODPEMU_QPT_RC, .max_send_wr = o->max_send_wr,
		.max_recv_wr = o->max_recv_wr, .max_send_sge = 4, .max_recv_sge = 4,
		.max_inline_data = 64, .fault_policy = o->policy };

	s->gid = cfg.gid;
	T_EQ(nic_create(&cfg, &s->nic), 0, "nic_create");
	T_EQ(nic_pd_alloc(s->nic, 1, &s->pd), 0, "pd");
	T_EQ(nic_cq_create(s->nic, 4096, &s->scq), 0, "scq");
	T_EQ(nic_cq_create(s->nic, 4096, &s->rcq), 0, "rcq");
	qi.send_cq = s->scq;
	qi.recv_cq = s->rcq;
	T_EQ(nic_qp_create(s->pd, &qi, &s->qp), 0, "rc qp");
	qi.type = ODPEMU_QPT_UD;
	T_EQ(nic_qp_create(s->pd, &qi, &s->ud), 0, "ud qp");
}

struct pair *pair_new(const struct pair_qp_opts *opts)
{
	struct pair_qp_opts o = { NIC_FAULT_STALL, 14, 7, 7, 1,
		ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ |
		ODPEMU_ACCESS_REMOTE_ATOMIC | ODPEMU_ACCESS_FLUSH_GLOBAL |
		ODPEMU_ACCESS_FLUSH_PERSISTENT, ODPEMU_MTU_1024, 256, 256 };
	struct pair *p = calloc(1, sizeof(*p));

	if (opts)
		o = *opts;
	if (!o.max_send_wr)
		o.max_send_wr = 256;
	if (!o.max_recv_wr)
		o.max_recv_wr = 256;
	if (!o.mtu)
		o.mtu = ODPEMU_MTU_1024;
	p->q = calloc(PAIR_PKTQ, sizeof(*p->q));
	/* One more buffer than the ring holds: the packet being delivered is out of the ring
	 * but still in use while its nic_rx sends more. */
	p->pool = calloc(PAIR_PKTQ + 1, sizeof(*p->pool));
	p->spare = calloc(PAIR_PKTQ + 1, sizeof(*p->spare));
	T_CHECK(p->q && p->pool && p->spare, "pair: out of memory");
	for (unsigned k = 0; k <= PAIR_PKTQ; k++)
		p->spare[p->nspare++] = &p->pool[PAIR_PKTQ - k];
	for (int i = 0; i < 2; i++)
		make_side(p, i, &o);
	connect_rc(p, &o);
	for (int i = 0; i < 2; i++)
		pair_ud_up(p->s[i].ud, 0x1234, 7);
	return p;
}

void pair_free(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct pair_side *s = &p->s[i];
		struct nic_counters c;

		/* Unanswered faults: fail them so their MRs can go. */
		for (unsigned k = 0; k < s->nfaults; k++)
			nic_fault_fail(s->nic, s->faults[k].req, -ECANCELED, p->now);
		s->nfaults = 0;
		if (s->qp)	/* a test that destroyed it sets NULL */
			T_EQ(nic_qp_destroy(s->qp), 0, "qp destroy");
		if (s->ud)	/* likewise */
			T_EQ(nic_qp_destroy(s->ud), 0, "ud destroy");
		if (s->uc)
			T_EQ(nic_qp_destroy(s->uc), 0, "uc destroy");
		T_EQ(nic_cq_destroy(s->scq), 0, "scq destroy");
		T_EQ(nic_cq_destroy(s->rcq), 0, "rcq destroy");
		nic_counters(s->nic, &c);
		T_EQ(c.mrs, 0, "MRs left at teardown");
		T_EQ(nic_pd_dealloc(s->pd), 0, "pd dealloc");
		T_EQ(nic_destroy(s->nic), 0, "nic destroy");
	}
	free(p->q);
	free(p->pool);
	free(p->spare);
	free(p);
}

static void answer_faults(struct pair *p, int i)
{
	struct pair_side *s = &p->s[i];
	unsigned n = s->nfaults;

	s->nfaults = 0;
	for (unsigned k = 0; k < n; k++) {
		struct iopt_req *r = s->faults[k].req;
		struct iopt_map m = { r->va, r->len, r->va,
			p->readonly_faults ? IOPT_READ : IOPT_READ | IOPT_WRITE };

		p->faults_answered++;
		if (p->fail_faults)
			nic_fault_fail(s->nic, r, -EFAULT, p->now);
		else if (p->readonly_faults && (r->access & IOPT_WRITE))
			nic_fault_fail(s->nic, r, -EACCES, p->now);
		else
			nic_fault_complete(s->nic, r, &m, 1, p->now);
	}
}

static bool faults_due(const struct pair *p)
{
	return !p->hold_faults && (p->s[0].nfaults || p->s[1].nfaults);
}

/* A packet to a multicast group reaches every NIC, its sender's too (IP_MULTICAST_LOOP),
 * from the group's address; the NIC takes it if a QP of its joined. */
static void deliver_group(struct pair *p, const struct pair_pkt *q)
{
	for (int i = 0; i < 2; i++)
		nic_rx_mcast(p->s[i].nic, q->buf, q->len, &p->s[q->from].gid, ROCE_UDP_PORT,
			     &q->group, p->now);
}

void pair_run(struct pair *p, uint64_t max_ns)
{
	uint64_t end = p->now + max_ns;

	for (unsigned guard = 0; guard < 10000000; guard++) {
		if (p->qcount && !(p->eager_faults && faults_due(p))) {
			struct pair_pkt *q = p->q[p->qhead];

			p->qhead = (p->qhead + 1) % PAIR_PKTQ;
			p->qcount--;
			p->delivered++;
			if (q->to == PAIR_TO_GROUP)
				deliver_group(p, q);
			else
				nic_rx(p->s[q->to].nic, q->buf, q->len, &p->s[!q->to].gid, p->now);
			p->spare[p->nspare++] = q;
			continue;
		}
		if (faults_due(p)) {
			p->now += p->fault_latency_ns;
			answer_faults(p, 0);
			answer_faults(p, 1);
			continue;
		}
		uint64_t t = nic_next_deadline(p->s[0].nic), t1 = nic_next_deadline(p->s[1].nic);

		if (t1 < t)
			t = t1;
		if (t == UINT64_MAX || t > end)
			return;
		if (t > p->now)
			p->now = t;
		nic_tick(p->s[0].nic, p->now);
		nic_tick(p->s[1].nic, p->now);
	}
	T_CHECK(0, "pair_run did not quiesce");
}

struct nic_mr *pair_mr(struct pair *p, int i, void *buf, uint64_t len, unsigned access)
{
	struct nic_mr_init in = { (uint64_t)(uintptr_t)buf, len, access, (uint64_t)(uintptr_t)buf };
	struct nic_mr *mr = NULL;

	T_EQ(nic_mr_reg(p->s[i].pd, &in, &mr), 0, "mr reg");
	return mr;
}

bool pair_poll(struct pair *p, int i, bool send, struct nic_wc *wc)
{
	return nic_cq_poll(send ? p->s[i].scq : p->s[i].rcq, wc, 1) == 1;
}

int pair_post_recv(struct pair *p, int i, uint64_t wr_id, void *buf, uint32_t len,
		   struct nic_mr *mr)
{
	struct nic_sge sge = { (uint64_t)(uintptr_t)buf, len, nic_mr_lkey(mr) };
	struct nic_recv_wr wr = { wr_id, &sge, 1 };

	return nic_post_recv(p->s[i].qp, &wr, p->now);
}

int pair_post_send(struct pair *p, int i, const struct nic_send_wr *wr)
{
	return nic_post_send(p->s[i].qp, wr, p->now);
}

int pair_post_send_list(struct pair *p, int i, const struct nic_send_wr *wrs, unsigned n,
			unsigned *posted)
{
	return nic_post_send_list(p->s[i].qp, wrs, n, posted, p->now);
}

/* A request crafted by the test, as if side !to's NIC had sent it on the RC QP: the
 * header's dqpn is filled in, the ICRC sealed. */
void pair_inject(struct pair *p, int to, struct roce_hdr *h, const void *payload, uint32_t len)
{
	pair_inject_qp(p, to, p->s[to].qp, h, payload, len);
}

void pair_inject_qp(struct pair *p, int to, struct nic_qp *qp, struct roce_hdr *h,
		    const void *payload, uint32_t len)
{
	struct pair_side *from = &p->s[!to];
	struct roce_flow4 f = { .sport = ROCE_UDP_PORT, .dport = ROCE_UDP_PORT };
	uint8_t pkt[4096 + 128];
	long n;

	h->bth.pkey = ROCE_DEFAULT_PKEY;
	h->bth.dqpn = nic_qp_num(qp);
	n = roce_build(pkt, sizeof(pkt), h, payload, len);
	T_CHECK(n > 0, "crafted packet: %ld", n);
	if (n <= 0)
		return;
	memcpy(&f.saddr, from->gid.raw + 12, 4);
	memcpy(&f.daddr, p->s[to].gid.raw + 12, 4);
	roce_icrc4_seal(&f, pkt, (size_t)n);
	nic_rx(p->s[to].nic, pkt, (size_t)n, &from->gid, p->now);
}

void pair_settle(struct pair *p)
{
	pair_run(p, p->settle_ns ? p->settle_ns : PAIR_SETTLE_NS);
}

void pair_bufs_new(struct pair *p, struct pair_bufs *x, size_t len, unsigned acc_a,
		   unsigned acc_b, struct t_rng *fill)
{
	x->a = aligned_alloc(4096, len);
	x->b = aligned_alloc(4096, len);
	if (fill)
		t_fill(fill, x->a, len);
	else
		memset(x->a, 0x77, len);
	memset(x->b, 0, len);
	x->ma = acc_a == PAIR_NO_MR ? NULL : pair_mr(p, 0, x->a, len, acc_a);
	x->mb = acc_b == PAIR_NO_MR ? NULL : pair_mr(p, 1, x->b, len, acc_b);
}

void pair_bufs_free(struct pair_bufs *x)
{
	if (x->ma)
		T_EQ(nic_mr_dereg(x->ma), 0, "dereg a");
	if (x->mb)
		T_EQ(nic_mr_dereg(x->mb), 0, "dereg b");
	free(x->a);
	free(x->b);
}

struct nic_sge pair_sge(void *buf, uint32_t len, struct nic_mr *mr)
{
	return (struct nic_sge){ (uint64_t)(uintptr_t)buf, len, nic_mr_lkey(mr) };
}

struct nic_wc pair_wc(struct pair *p, int i, bool send, const char *what)
{
	struct nic_wc wc = { .status = ODPEMU_WC_GENERAL_ERR };

	T_CHECK(pair_poll(p, i, send, &wc), "%s: no completion", what);
	return wc;
}

struct nic_wc pair_send_wc(struct pair *p, int i, const struct nic_send_wr *wr,
			   const char *what)
{
	T_EQ(pair_post_send(p, i, wr), 0, what);
	pair_settle(p);
	return pair_wc(p, i, true, what);
}
