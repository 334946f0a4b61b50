/* SPDX-License-Identifier: MIT */
/* The world of one run: devices, clients (a host memory, PDs, MRs, an SRQ), CQs and QPs,
 * brought up through the verbs state machine RESET → INIT → RTR → RTS; pair resets (ERR, let
 * everything flush, wait out the packets still on the wire, then bring the pair up again,
 * sometimes as new QPs); and the teardown that must leave every count at zero. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define SIM_CQE 16384

struct clientm *client_of(struct sim *s, uint32_t id)
{
	return id >= 1 && id <= s->cfg.nclients ? &s->clients[id - 1] : NULL;
}

struct qpm *qp_by_num(struct sim *s, int nic, uint32_t qpn)
{
	for (unsigned i = 0; i < s->nqps; i++) {
		struct qpm *q = &s->qps[i];

		if (q->qp && q->qpn == qpn && s->clients[q->client].nic == nic)
			return q;
	}
	return NULL;
}

void event_port(void *ctx, const struct nic_event *ev)
{
	struct simnic *n = ctx;
	struct sim *s = n->sim;

	sim_trace(s, "nic%d event %s", n->idx, odpemu_event_type_str(ev->type));
	if (ev->type != ODPEMU_EVENT_MR_DECOHERENCE)
		return;
	for (unsigned c = 0; c < s->cfg.nclients; c++)
		for (unsigned i = 0; i < s->clients[c].nmrs; i++)
			if (s->clients[c].mrs[i].mr == ev->mr && s->clients[c].mrs[i].live)
				s->clients[c].mrs[i].decoherence++;
}

void cq_notify_port(void *ctx, struct nic_cq *cq)
{
	(void)ctx;
	(void)cq;
}

static int nic_setup(struct sim *s, unsigned i)
{
	struct simnic *n = &s->nics[i];
	static const enum odpemu_mtu mtus[] = { ODPEMU_MTU_1024, ODPEMU_MTU_4096, ODPEMU_MTU_4096,
						ODPEMU_MTU_2048, ODPEMU_MTU_256 };
	struct nic_config cfg = {
		.gid = nic_gid_from_v4(0x0A000001u + i),
		.udp_sport = (uint16_t)(49152 + i),
		.ports = { .ctx = n, .send = net_send_port, .mem_read = mem_read_port,
			   .mem_write = mem_write_port, .fault = fault_port, .event = event_port,
			   .cq_notify = cq_notify_port },
		.stall_queue = s->cfg.stall_queue,
		.max_inflight = s->cfg.max_inflight,
		.fault_around = s->cfg.fault_around,
	};
	int rc;

	cfg.active_mtu = mtus[t_below(&s->rng, (s->cfg.features & SIM_F(MULTI)) ? 5 : 3)];
	n->sim = s;
	n->idx = (int)i;
	n->gid = cfg.gid;
	n->mtu_bytes = 128u << cfg.active_mtu;
	rc = nic_create(&cfg, &n->nic);
	if (rc) {
		sim_fail(s, "nic_create(nic%u) returned %d", i, rc);
		return rc;
	}
	for (unsigned k = 0; k < 2; k++) {
		rc = nic_cq_create(n->nic, SIM_CQE, &n->cq[k]);
		if (rc) {
			sim_fail(s, "nic_cq_create returned %d", rc);
			return rc;
		}
	}
	return 0;
}

static struct mrm *mr_add(struct sim *s, struct clientm *c, unsigned ci, struct nic_pd *pd,
			  uint64_t va, uint64_t len, unsigned access)
{
	struct mrm *m = &c->mrs[c->nmrs];
	struct nic_mr_init init = { .va = va, .len = len, .access = access };
	int rc;

	memset(m, 0, sizeof(*m));
	m->client = (int)ci;
	m->va = va;
	m->len = len;
	m->access = access;
	m->odp = access & ODPEMU_ACCESS_ON_DEMAND;
	m->implicit = m->odp && va == 0 && len == UINT64_MAX;
	if (!m->odp) {
		host_pin(&c->mem, va, len);
		m->host = view_host(s, &(struct mrm){ .client = (int)ci, .odp = true }, va);
		init.host = m->host;
	}
	rc = nic_mr_reg(pd, &init, &m->mr);
	if (rc) {
		sim_fail(s, "nic_mr_reg(client %u va 0x%" PRIx64 " len 0x%" PRIx64 " access 0x%x) returned %d",
			 c->id, va, len, access, rc);
		if (!m->odp)
			host_unpin(&c->mem, m->host, len);
		return NULL;
	}
	m->live = true;
	m->lkey = nic_mr_lkey(m->mr);
	m->rkey = nic_mr_rkey(m->mr);
	c->nmrs++;
	return m;
}

#define ACC_ALL (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ \
	| ODPEMU_ACCESS_REMOTE_ATOMIC | ODPEMU_ACCESS_FLUSH_GLOBAL | ODPEMU_ACCESS_FLUSH_PERSISTENT)

/* The error zone: holes, read-only pages and poisoned pages, in random order. */
static void zone_init(struct sim *s, struct host *h)
{
	for (uint64_t a = h->base + SIM_NORMAL_SIZE + SIM_ZONE_GAP; a < h->base + SIM_ARENA_SIZE; a += SIM_PAGE) {
		struct page *p = host_page(h, a);

		switch (t_below(&s->rng, 3)) {
		case 0: p->perm = PERM_NONE; p->gen = 1; break;
		case 1: p->perm = PERM_RO; break;
		default: p->poison = true; break;
		}
	}
}

static int client_setup(struct sim *s, unsigned ci)
{
	struct clientm *c = &s->clients[ci];
	struct simnic *n;
	uint64_t base = (uint64_t)(ci + 1) << 36;
	unsigned f = s->cfg.features;
	int rc;

	c->id = ci + 1;
	c->nic = (int)(ci % s->cfg.nnics);
	n = &s->nics[c->nic];
	host_init(&c->mem, c->id, c->nic, base);
	zone_init(s, &c->mem);
	rc = nic_pd_alloc(n->nic, c->id, &c->pd);
	if (!rc)
		rc = nic_pd_alloc(n->nic, c->id, &c->pd2);
	if (rc) {
		sim_fail(s, "nic_pd_alloc returned %d", rc);
		return rc;
	}
	/* the good MRs (full access over parts of the normal area) come first */
	if (f & SIM_F(IMPLICIT))
		mr_add(s, c, ci, c->pd, 0, UINT64_MAX, ACC_ALL | ODPEMU_ACCESS_ON_DEMAND);
	if (f & SIM_F(ODP)) {
		mr_add(s, c, ci, c->pd, base, 8ull << 20, ACC_ALL | ODPEMU_ACCESS_ON_DEMAND);
		mr_add(s, c, ci, c->pd, base + (4ull << 20), 12ull << 20, ACC_ALL | ODPEMU_ACCESS_ON_DEMAND);
	}
	if ((f & SIM_F(PINNED)) || !(f & (SIM_F(ODP) | SIM_F(IMPLICIT))))
		/* pinning allocates every frame: 8 MiB only when 4 MiB messages need room */
		mr_add(s, c, ci, c->pd, base + (8ull << 20), (f & SIM_F(LARGE) ? 8ull : 2ull) << 20, ACC_ALL);
	if (f & SIM_F(ERRORS)) {
		struct mrm *m;

		if ((m = mr_add(s, c, ci, c->pd, base + SIM_NORMAL_SIZE + SIM_ZONE_GAP, SIM_ZONE_SIZE,
				ACC_ALL | ODPEMU_ACCESS_ON_DEMAND)))
			m->zone = true;
		/* remote read only: remote writes and atomics get REM_ACCESS_ERR; as a local
		 * READ/atomic target it lacks LOCAL_WRITE: LOC_PROT_ERR */
		mr_add(s, c, ci, c->pd, base, 2ull << 20, ODPEMU_ACCESS_REMOTE_READ |
		       ((f & SIM_F(ODP)) ? ODPEMU_ACCESS_ON_DEMAND : 0));
		if ((m = mr_add(s, c, ci, c->pd2, base + (2ull << 20), 2ull << 20, ACC_ALL | ODPEMU_ACCESS_ON_DEMAND)))
			m->other_pd = true;
	}
	if (f & SIM_F(SRQ)) {
		rc = nic_srq_create(c->pd, 1024, 2, &c->srq);
		if (rc) {
			sim_fail(s, "nic_srq_create returned %d", rc);
			return rc;
		}
		c->srq_recv_size = 1024u << t_below(&s->rng, 5);
	}
	return s->failed ? -EIO : 0;
}

/* ---- QPs ---- */

static int qp_modify(struct sim *s, struct qpm *q, struct nic_qp_attr *a, unsigned mask)
{
	const char *why = NULL;
	int rc = nic_qp_modify(q->qp, a, mask | ODPEMU_QP_STATE, s->now, &why);

	if (rc)
		sim_fail(s, "nic_qp_modify(qp %u to %s) returned %d: %s", q->qpn,
			 odpemu_qp_state_str(a->qp_state), rc, why ? why : "");
	return rc;
}

static int qp_bring_up(struct sim *s, struct qpm *q)
{
	struct qpm *p = q->peer >= 0 ? &s->qps[q->peer] : NULL;
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1, .pkey_index = 0,
				 .qp_access_flags = q->access, .qkey = 0x11110000 };
	bool ud = q->type == ODPEMU_QPT_UD;

	if (qp_modify(s, q, &a, ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT |
		      (ud ? ODPEMU_QP_QKEY : ODPEMU_QP_ACCESS_FLAGS)))
		return -1;
	a.qp_state = ODPEMU_QPS_RTR;
	if (!ud) {
		memcpy(a.ah_attr.dgid, s->nics[s->clients[p->client].nic].gid.raw, 16);
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.hop_limit = 64;
		a.path_mtu = q->mtu;
		a.dest_qp_num = p->qpn;
		a.rq_psn = (uint32_t)(p->qpn * 7919u + p->incarnation * 104729u) & 0xFFFFFF;
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = q->min_rnr_timer;
	}
	if (qp_modify(s, q, &a, ud ? 0 : ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU | ODPEMU_QP_DEST_QPN |
		      ODPEMU_QP_RQ_PSN | ODPEMU_QP_MAX_DEST_RD_ATOMIC | ODPEMU_QP_MIN_RNR_TIMER))
		return -1;
	a.qp_state = ODPEMU_QPS_RTS;
	a.sq_psn = (uint32_t)(q->qpn * 7919u + q->incarnation * 104729u) & 0xFFFFFF;
	a.timeout = q->timeout;
	a.retry_cnt = q->retry_cnt;
	a.rnr_retry = q->rnr_retry;
	a.max_rd_atomic = 16;
	return qp_modify(s, q, &a, ud ? ODPEMU_QP_SQ_PSN : ODPEMU_QP_SQ_PSN | ODPEMU_QP_TIMEOUT |
			 ODPEMU_QP_RETRY_CNT | ODPEMU_QP_RNR_RETRY | ODPEMU_QP_MAX_QP_RD_ATOMIC);
}

static int qp_create(struct sim *s, struct qpm *q)
{
	struct clientm *c = &s->clients[q->client];
	struct nic_qp_init init = {
		.type = q->type, .send_cq = q->scq, .recv_cq = q->rcq,
		.srq = q->use_srq ? c->srq : NULL,
		.max_send_wr = 512, .max_recv_wr = 512, .max_send_sge = SIM_MAX_SGE,
		.max_recv_sge = 2, .max_inline_data = 64, .fault_policy = q->policy,
	};
	int rc = nic_qp_create(c->pd, &init, &q->qp);

	if (rc) {
		sim_fail(s, "nic_qp_create returned %d", rc);
		return rc;
	}
	q->qpn = nic_qp_num(q->qp);
	return 0;
}

static struct qpm *qp_new(struct sim *s, unsigned ci, enum odpemu_qp_type type)
{
	struct qpm *q = &s->qps[s->nqps];
	struct simnic *n = &s->nics[s->clients[ci].nic];
	unsigned f = s->cfg.features;

	memset(q, 0, sizeof(*q));
	q->idx = (int)s->nqps++;
	q->client = (int)ci;
	q->peer = -1;
	q->type = type;
	q->policy = (f & SIM_F(RNR_POLICY)) && t_below(&s->rng, 2) ? NIC_FAULT_RNR : NIC_FAULT_STALL;
	q->scq = n->cq[t_below(&s->rng, 2)];
	q->rcq = n->cq[t_below(&s->rng, 2)];
	q->use_srq = type == ODPEMU_QPT_RC && s->clients[ci].srq && t_below(&s->rng, 2);
	q->rnr_retry = 7;
	if ((f & SIM_F(RNR_LIMIT)) && !t_below(&s->rng, 3))
		q->rnr_retry = (uint8_t)(1 + t_below(&s->rng, 6));
	q->retry_cnt = 7;
	/* ACK timeout 67 ms .. 537 ms: far above the slowest fault (10 ms), so a timeout means
	 * loss, never a slow handler; retry_cnt 7 makes exhaustion by loss negligible */
	q->timeout = (uint8_t)(14 + t_below(&s->rng, 4));
	q->min_rnr_timer = (uint8_t)(1 + t_below(&s->rng, 14));
	q->access = ODPEMU_ACCESS_ALL_QP;
	return qp_create(s, q) ? NULL : q;
}

static enum odpemu_mtu mtu_enum(unsigned bytes)
{
	enum odpemu_mtu m = ODPEMU_MTU_256;

	while ((128u << (m + 1)) <= bytes && m < ODPEMU_MTU_4096)
		m++;
	return m;
}

static int pair_setup(struct sim *s, unsigned ca, unsigned cb)
{
	struct qpm *a = qp_new(s, ca, ODPEMU_QPT_RC), *b = a ? qp_new(s, cb, ODPEMU_QPT_RC) : NULL;
	unsigned mtu;

	if (!b)
		return -1;
	a->peer = b->idx;
	b->peer = a->idx;
	mtu = s->nics[s->clients[ca].nic].mtu_bytes;
	if (s->nics[s->clients[cb].nic].mtu_bytes < mtu)
		mtu = s->nics[s->clients[cb].nic].mtu_bytes;
	a->mtu = b->mtu = mtu_enum(256u << t_below(&s->rng, 5));
	if ((128u << a->mtu) > mtu)
		a->mtu = b->mtu = mtu_enum(mtu);
	/* a limited rnr_retry pair never posts RECVs late, and its failures are tolerated */
	if (a->rnr_retry < 7 || b->rnr_retry < 7)
		a->rnr_retry = b->rnr_retry = (uint8_t)(a->rnr_retry < b->rnr_retry ? a->rnr_retry : b->rnr_retry);
	return qp_bring_up(s, a) || qp_bring_up(s, b) ? -1 : 0;
}

int setup_world(struct sim *s)
{
	for (unsigned i = 0; i < s->cfg.nnics; i++)
		if (nic_setup(s, i))
			return -1;
	for (unsigned c = 0; c < s->cfg.nclients; c++)
		if (client_setup(s, c))
			return -1;
	for (unsigned i = 0; i < s->cfg.npairs; i++) {
		unsigned ca = (unsigned)t_below(&s->rng, s->cfg.nclients), cb;

		do
			cb = (unsigned)t_below(&s->rng, s->cfg.nclients);
		while (s->clients[cb].nic == s->clients[ca].nic && s->cfg.nnics > 1 &&
		       t_below(&s->rng, 10));	/* mostly between devices, sometimes loopback */
		if (pair_setup(s, ca, cb))
			return -1;
	}
	for (unsigned i = 0; i < s->cfg.nud; i++) {
		struct qpm *q = qp_new(s, i % s->cfg.nclients, ODPEMU_QPT_UD);

		if (!q || qp_bring_up(s, q))
			return -1;
	}
	return 0;
}

/* ---- pair reset ---- */

void pair_reset_begin(struct sim *s, struct qpm *q)
{
	struct qpm *p = &s->qps[q->peer];
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_ERR };

	if (q->idx > q->peer)
		q = p, p = &s->qps[q->peer];	/* the reset state lives on the lower index */
	if (q->reset_stage >= 2)
		return;
	sim_trace(s, "reset pair qp %u <-> qp %u", q->qpn, p->qpn);
	s->resets++;
	for (int k = 0; k < 2; k++) {
		struct qpm *x = k ? p : q;

		x->flush_sq = x->flush_rq = true;
		x->doomed = true;
		x->reset_stage = k ? 0 : 2;
		if (nic_qp_modify(x->qp, &a, ODPEMU_QP_STATE, s->now, NULL))
			sim_fail(s, "modify qp %u to ERR refused", x->qpn);
	}
}

static bool qp_drained(const struct qpm *q)
{
	return !q->sq.n && !q->rq.n;
}

static void incoming_clear(struct sim *s, struct qpm *q)
{
	struct xwr *w;

	while ((w = fifo_pop(&q->incoming)))
		xwr_free(s, w);
}

/* Back from ERR: RESET, or destroy and create (a new QP number), then INIT/RTR/RTS. */
static void pair_revive(struct sim *s, struct qpm *q)
{
	struct qpm *p = &s->qps[q->peer];
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_RESET };
	bool recreate = t_below(&s->rng, 3) == 0;

	for (int k = 0; k < 2; k++) {
		struct qpm *x = k ? p : q;

		incoming_clear(s, x);
		if (recreate) {
			int rc = nic_qp_destroy(x->qp);

			if (rc)
				sim_fail(s, "nic_qp_destroy(qp %u) returned %d", x->qpn, rc);
			x->qp = NULL;
			if (qp_create(s, x))
				return;
		} else if (qp_modify(s, x, &a, 0)) {
			return;
		}
		x->incarnation++;
		x->sq_err = x->rq_err = x->flush_sq = x->flush_rq = x->retry_exc_ok = x->doomed = false;
		x->reset_stage = 0;
	}
	if (qp_bring_up(s, q) || qp_bring_up(s, p))
		return;
}

/* Stage 1: scheduled (reset_at); 2: in ERR, flushing; 3: drained, waiting out the wire. */
void pair_reset_poll(struct sim *s)
{
	for (unsigned i = 0; i < s->nqps && !s->failed; i++) {
		struct qpm *q = &s->qps[i], *p;

		if (q->type != ODPEMU_QPT_RC || !q->reset_stage || q->idx > q->peer)
			continue;
		p = &s->qps[q->peer];
		if (q->reset_stage == 1 && s->now >= q->reset_at)
			pair_reset_begin(s, q);
		if (q->reset_stage == 2 && qp_drained(q) && qp_drained(p) && !q->rq.n) {
			q->reset_stage = 3;
			q->reset_at = s->now + s->cfg.net.delay_max + s->cfg.net.reorder_extra + 1;
		}
		if (q->reset_stage == 3 && s->now >= q->reset_at)
			pair_revive(s, q);
	}
}

bool pair_resets_idle(const struct sim *s)
{
	for (unsigned i = 0; i < s->nqps; i++)
		if (s->qps[i].reset_stage)
			return false;
	return true;
}

/* ---- teardown ---- */

static void destroy_qps(struct sim *s)
{
	for (unsigned i = 0; i < s->nqps; i++) {
		struct qpm *q = &s->qps[i];
		void *x;

		if (q->qp) {
			int rc = nic_qp_destroy(q->qp);

			if (rc)
				sim_fail(s, "nic_qp_destroy returned %d", rc);
		}
		q->qp = NULL;
		while ((x = fifo_pop(&q->sq)))
			xwr_free(s, x);
		while ((x = fifo_pop(&q->rq)))
			xrecv_free(s, x);
		incoming_clear(s, q);
		fifo_free(&q->sq);
		fifo_free(&q->rq);
		fifo_free(&q->incoming);
	}
}

static void destroy_client(struct sim *s, struct clientm *c)
{
	void *x;
	int rc;

	if (c->srq && (rc = nic_srq_destroy(c->srq)))
		sim_fail(s, "nic_srq_destroy returned %d", rc);
	c->srq = NULL;
	while ((x = fifo_pop(&c->srq_recvs)))
		xrecv_free(s, x);
	fifo_free(&c->srq_recvs);
	for (unsigned i = 0; i < c->nmrs; i++) {
		struct mrm *m = &c->mrs[i];

		if (!m->live)
			continue;
		if ((rc = nic_mr_dereg(m->mr)))
			sim_fail(s, "nic_mr_dereg returned %d", rc);
		if (!m->odp)
			host_unpin(&c->mem, m->host, m->len);
		m->live = false;
	}
	if (c->pd && (rc = nic_pd_dealloc(c->pd)))
		sim_fail(s, "nic_pd_dealloc returned %d", rc);
	if (c->pd2 && (rc = nic_pd_dealloc(c->pd2)))
		sim_fail(s, "nic_pd_dealloc returned %d", rc);
	c->pd = c->pd2 = NULL;
}

void teardown_world(struct sim *s)
{
	bool failed = s->failed;

	/* the handler answers everything it holds before any domain can go away */
	while (fault_pending(s)) {
		s->now = fault_next(s) > s->now ? fault_next(s) : s->now;
		fault_answer_due(s);
		if (s->failed)
			break;
	}
	if (!s->failed)
		model_poll_all(s);
	destroy_qps(s);
	for (unsigned c = 0; c < s->cfg.nclients; c++)
		destroy_client(s, &s->clients[c]);
	for (unsigned i = 0; i < s->cfg.nnics; i++)
		for (unsigned k = 0; k < 2; k++)
			if (s->nics[i].cq[k]) {
				int rc = nic_cq_destroy(s->nics[i].cq[k]);

				if (rc)
					sim_fail(s, "nic_cq_destroy returned %d", rc);
				s->nics[i].cq[k] = NULL;
			}
	if (!failed)
		check_teardown(s);
	for (unsigned i = 0; i < s->cfg.nnics; i++)
		if (s->nics[i].nic) {
			nic_destroy(s->nics[i].nic);
			s->nics[i].nic = NULL;
		}
	for (unsigned c = 0; c < s->cfg.nclients; c++)
		host_free(&s->clients[c].mem);
	net_free(s);
	while (fault_pending(s)) {
		struct ev e;

		pq_pop(&s->fault_q, &e);
		free(e.p);
	}
	pq_free(&s->fault_q);
}
