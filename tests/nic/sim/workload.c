/* SPDX-License-Identifier: MIT */
/*
 * The random workload. A run is a few phases; a phase schedules actions at random virtual
 * times, then waits until everything has completed and checks the whole memory. Actions:
 * batches of RC WRs of every type (each SEND with the RECV it will consume, posted before or
 * late), UD sends, remaps/unmaps/maps/mprotects of idle memory, evictions of any memory
 * (also under DMAs in flight), prefetch advice, and pair resets.
 *
 * Buffers of WRs in flight never overlap (busy ranges), so each WR's outcome is independent
 * of timing and the model can predict it exactly. Failing WRs are made on purpose, one
 * cause each: bad keys, ranges, permissions, pages the fault handler refuses (the error
 * zone), short RECVs.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

enum act_kind { A_POST_RC, A_POST_UD, A_REMAP, A_EVICT, A_RESET, A_LATE_RECV, A_ADVISE };

struct action {
	enum act_kind kind;
	int qp;
	unsigned incarnation;
	struct xrecv *r;
};

static bool chance(struct sim *s, unsigned pct)
{
	return t_below(&s->rng, 100) < pct;
}

static void schedule(struct sim *s, uint64_t t, enum act_kind kind, int qp, struct xrecv *r)
{
	struct action *a = calloc(1, sizeof(*a));

	if (!a)
		abort();
	a->kind = kind;
	a->qp = qp;
	a->r = r;
	if (qp >= 0)
		a->incarnation = s->qps[qp].incarnation;
	pq_push(&s->action_q, t, s->seq++, a);
}

static bool mr_good(const struct mrm *m)
{
	unsigned all = ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ |
		       ODPEMU_ACCESS_REMOTE_ATOMIC | ODPEMU_ACCESS_FLUSH_GLOBAL | ODPEMU_ACCESS_FLUSH_PERSISTENT;

	return m->live && !m->zone && !m->other_pd && !m->inv && (m->access & all) == all;
}

static int pick_mr(struct sim *s, struct clientm *c, bool (*pred)(const struct mrm *))
{
	int idx[SIM_MAX_MRS], n = 0;

	for (unsigned i = 0; i < c->nmrs; i++)
		if (pred(&c->mrs[i]))
			idx[n++] = (int)i;
	return n ? idx[t_below(&s->rng, (uint64_t)n)] : -1;
}

/* A free buffer of len bytes inside MR m and the normal area, on pages the MR can use
 * now (ODP: mapped read-write), aligned to align. 0 on success. */
static int alloc_buf(struct sim *s, struct clientm *c, const struct mrm *m, uint32_t len,
		     uint64_t align, uint64_t *va)
{
	uint64_t lo = c->mem.base, hi = c->mem.base + SIM_NORMAL_SIZE;

	if (!m->implicit) {
		lo = m->va > lo ? m->va : lo;
		hi = m->va + m->len < hi ? m->va + m->len : hi;
	}
	if (hi <= lo || hi - lo < (uint64_t)len + align)
		return -1;
	for (int tries = 0; tries < 12; tries++) {
		uint64_t a = lo + t_below(&s->rng, hi - lo - len - align + 1);

		a = (a + align - 1) & ~(align - 1);
		if (a + len > hi || host_busy_overlaps(&c->mem, a, a + (len ? len : 1)))
			continue;
		if (m->odp && !host_range_perm(&c->mem, a, len, PERM_RW))
			continue;
		*va = a;
		return 0;
	}
	return -1;
}

static uint32_t pick_len(struct sim *s, bool large_ok)
{
	uint64_t r = t_below(&s->rng, 1000);

	if (r < 550)
		return (uint32_t)t_below(&s->rng, 65);
	if (r < 850)
		return (uint32_t)(65 + t_below(&s->rng, 4096));
	if (r < 980 || !(s->cfg.features & SIM_F(LARGE)))
		return (uint32_t)(4096 + t_below(&s->rng, 60 << 10));
	if (r < 997 || !large_ok)
		return (uint32_t)(64 << 10) + (uint32_t)t_below(&s->rng, 960 << 10);
	return (uint32_t)(1 << 20) + (uint32_t)t_below(&s->rng, 3u << 20);
}

static enum odpemu_wr_opcode pick_op(struct sim *s)
{
	static const struct { enum odpemu_wr_opcode op; unsigned w; } all[] = {
		{ ODPEMU_WR_SEND, 20 }, { ODPEMU_WR_SEND_WITH_IMM, 8 }, { ODPEMU_WR_SEND_WITH_INV, 3 },
		{ ODPEMU_WR_RDMA_WRITE, 20 }, { ODPEMU_WR_RDMA_WRITE_WITH_IMM, 8 },
		{ ODPEMU_WR_RDMA_READ, 15 }, { ODPEMU_WR_ATOMIC_CMP_AND_SWP, 5 },
		{ ODPEMU_WR_ATOMIC_FETCH_AND_ADD, 5 }, { ODPEMU_WR_FLUSH, 4 }, { ODPEMU_WR_ATOMIC_WRITE, 4 },
	};
	unsigned n = (s->cfg.features & SIM_F(ALLOPS)) ? 10 : 2, total = 0, r;

	if (n == 2)	/* the basic run: SEND and WRITE */
		return chance(s, 50) ? ODPEMU_WR_SEND : ODPEMU_WR_RDMA_WRITE;
	for (unsigned i = 0; i < n; i++)
		total += all[i].w;
	r = (unsigned)t_below(&s->rng, total);
	for (unsigned i = 0; i < n; i++) {
		if (r < all[i].w)
			return all[i].op;
		r -= all[i].w;
	}
	return ODPEMU_WR_SEND;
}

/* Local segments for len bytes: 1..3 separate buffers in good MRs. */
static int local_segs(struct sim *s, struct clientm *c, struct xwr *w, uint64_t align)
{
	unsigned n = w->len < 2 || align > 1 ? 1 : 1 + (unsigned)t_below(&s->rng, SIM_MAX_SGE);
	uint32_t left = w->len;

	w->nseg = 0;
	if (!w->len)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		uint32_t part = i + 1 == n ? left : 1 + (uint32_t)t_below(&s->rng, left - (n - 1 - i));
		int mr = pick_mr(s, c, mr_good);

		if (mr < 0 || alloc_buf(s, c, &c->mrs[mr], part, align, &w->seg[i].va))
			return -1;
		w->seg[i].mr = mr;
		w->seg[i].len = part;
		host_busy_add(&c->mem, w->seg[i].va, part, w);	/* held while we build */
		left -= part;
		w->nseg++;
	}
	return 0;
}

/* A page of the error zone that is bad for this access. */
static uint64_t zone_bad_page(struct sim *s, struct clientm *c, bool write)
{
	uint64_t z = c->mem.base + SIM_NORMAL_SIZE + SIM_ZONE_GAP;

	for (int tries = 0; tries < 64; tries++) {
		uint64_t a = z + t_below(&s->rng, SIM_ZONE_SIZE / SIM_PAGE) * SIM_PAGE;
		struct page *p = host_page(&c->mem, a);

		if (p->perm == PERM_NONE || p->poison || (write && p->perm == PERM_RO))
			return a;
	}
	return z;
}

static int zone_mr(struct clientm *c)
{
	for (unsigned i = 0; i < c->nmrs; i++)
		if (c->mrs[i].live && c->mrs[i].zone)
			return (int)i;
	return -1;
}

static bool mr_restricted(const struct mrm *m)
{
	return m->live && !(m->access & ODPEMU_ACCESS_LOCAL_WRITE);
}

static bool mr_other(const struct mrm *m)
{
	return m->live && m->other_pd;
}

/* Break one thing about w (the model then predicts the failure from the facts). */
static void inject_error(struct sim *s, struct qpm *q, struct xwr *w, uint32_t *recv_cap, bool *recv_bad)
{
	struct clientm *c = &s->clients[q->client], *pc = &s->clients[s->qps[q->peer].client];
	bool send = w->op == ODPEMU_WR_SEND || w->op == ODPEMU_WR_SEND_WITH_IMM || w->op == ODPEMU_WR_SEND_WITH_INV;
	bool write_local = w->op == ODPEMU_WR_RDMA_READ || w->op == ODPEMU_WR_ATOMIC_CMP_AND_SWP ||
			   w->op == ODPEMU_WR_ATOMIC_FETCH_AND_ADD;
	int zm;

	switch (t_below(&s->rng, 6)) {
	case 0:	/* local: bogus lkey */
		if (w->nseg) {
			w->seg[0].mr = -1;
			return;
		}
		break;
	case 1:	/* local: a page the fault handler refuses, or an MR without LOCAL_WRITE */
		if (w->nseg && (zm = zone_mr(c)) >= 0 && w->seg[0].len <= SIM_PAGE) {
			w->seg[0].mr = zm;
			w->seg[0].va = zone_bad_page(s, c, write_local) + t_below(&s->rng, SIM_PAGE - w->seg[0].len + 1);
			return;
		}
		if (w->nseg && write_local && (zm = pick_mr(s, c, mr_restricted)) >= 0) {
			w->seg[0].mr = zm;
			w->seg[0].va = c->mrs[zm].va + 64;
			return;
		}
		break;
	default:
		break;
	}
	if (send) {
		if (s->qps[q->peer].use_srq)
			return;	/* which SRQ RECV a message takes is timing: no RECV-side errors */
		if (w->len && chance(s, 70))
			*recv_cap = (uint32_t)t_below(&s->rng, w->len);
		else if (w->len && w->len <= SIM_PAGE)
			*recv_bad = true;
		return;
	}
	switch (t_below(&s->rng, 5)) {
	case 0:
		w->rmr = -1;
		w->rkey = 0xBAD000u | (uint32_t)t_below(&s->rng, 256);
		break;
	case 1:	/* past the end of the MR */
		if (!s->clients[s->qps[q->peer].client].mrs[w->rmr].implicit)
			w->rva = w->len == 8 && w->op != ODPEMU_WR_RDMA_WRITE && w->op != ODPEMU_WR_RDMA_READ &&
				 w->op != ODPEMU_WR_RDMA_WRITE_WITH_IMM && w->op != ODPEMU_WR_FLUSH
				? pc->mrs[w->rmr].va + pc->mrs[w->rmr].len	/* atomics stay aligned */
				: pc->mrs[w->rmr].va + pc->mrs[w->rmr].len - (w->len > 8 ? w->len / 2 : 0) - 4;
		else
			w->rmr = -1, w->rkey = 0xBAD100u;
		break;
	case 2:
		if ((zm = pick_mr(s, pc, mr_restricted)) >= 0 && w->op != ODPEMU_WR_RDMA_READ) {
			w->rmr = zm;
			w->rva = pc->mrs[zm].va + 64;
		} else {
			w->rmr = -1;
			w->rkey = 0xBAD200u;
		}
		break;
	case 3:
		if ((zm = pick_mr(s, pc, mr_other)) >= 0) {
			w->rmr = zm;
			w->rva = pc->mrs[zm].va + 64;
		}
		break;
	default:
		if ((zm = zone_mr(pc)) >= 0 && w->len <= SIM_PAGE) {
			w->rmr = zm;
			w->rva = zone_bad_page(s, pc, w->op != ODPEMU_WR_RDMA_READ && w->op != ODPEMU_WR_FLUSH) +
				 (w->len > 8 ? 0 : 8 * t_below(&s->rng, SIM_PAGE / 8));
		} else {
			w->rmr = -1;
			w->rkey = 0xBAD300u;
		}
		break;
	}
	if (w->rmr >= 0)
		w->rkey = pc->mrs[w->rmr].rkey;
}

/* ---- one RC WR ---- */

static uint32_t rc_len(struct sim *s, struct qpm *q, enum odpemu_wr_opcode op, bool want_err)
{
	struct qpm *p = &s->qps[q->peer];
	uint32_t len;

	if (op == ODPEMU_WR_ATOMIC_CMP_AND_SWP || op == ODPEMU_WR_ATOMIC_FETCH_AND_ADD ||
	    op == ODPEMU_WR_ATOMIC_WRITE)
		return 8;
	len = op == ODPEMU_WR_FLUSH ? 1 + (uint32_t)t_below(&s->rng, 64 << 10) : pick_len(s, !s->large_inflight);
	if (p->use_srq && (op == ODPEMU_WR_SEND || op == ODPEMU_WR_SEND_WITH_IMM || op == ODPEMU_WR_SEND_WITH_INV))
		len = (uint32_t)t_below(&s->rng, s->clients[p->client].srq_recv_size + 1);
	if (want_err && !len)
		len = 1 + (uint32_t)t_below(&s->rng, 64);
	return len;
}

static bool is_send_op(enum odpemu_wr_opcode op)
{
	return op == ODPEMU_WR_SEND || op == ODPEMU_WR_SEND_WITH_IMM || op == ODPEMU_WR_SEND_WITH_INV;
}

static int inv_mr(struct clientm *c)
{
	for (unsigned i = 0; i < c->nmrs; i++)
		if (c->mrs[i].live && c->mrs[i].inv)
			return (int)i;
	return -1;
}

/* The remote side: a free target in a good MR of the peer, atomics' operands. */
static int rc_remote(struct sim *s, struct qpm *q, struct xwr *w)
{
	struct clientm *pc = &s->clients[s->qps[q->peer].client];
	bool eight = w->len == 8 && !is_send_op(w->op) && w->op != ODPEMU_WR_RDMA_READ &&
		     w->op != ODPEMU_WR_RDMA_WRITE && w->op != ODPEMU_WR_RDMA_WRITE_WITH_IMM && w->op != ODPEMU_WR_FLUSH;

	if (is_send_op(w->op)) {
		int m = inv_mr(pc);

		if (w->op == ODPEMU_WR_SEND_WITH_INV)
			w->imm = m >= 0 ? pc->mrs[m].rkey : 0;
		return w->op == ODPEMU_WR_SEND_WITH_INV && m < 0 ? -1 : 0;
	}
	w->rmr = pick_mr(s, pc, mr_good);
	if (w->rmr < 0 || alloc_buf(s, pc, &pc->mrs[w->rmr], w->len ? w->len : 1, eight ? 8 : 1, &w->rva))
		return -1;
	host_busy_add(&pc->mem, w->rva, w->len > 8 ? w->len : 8, w);
	w->rkey = pc->mrs[w->rmr].rkey;
	if (w->op == ODPEMU_WR_ATOMIC_CMP_AND_SWP) {
		uint64_t v;

		view_read(s, &pc->mrs[w->rmr], w->rva, &v, 8);
		w->compare_add = chance(s, 50) ? v : t_rand(&s->rng);
		w->swap = t_rand(&s->rng);
	} else if (w->op == ODPEMU_WR_ATOMIC_FETCH_AND_ADD) {
		w->compare_add = t_rand(&s->rng);
	} else if (w->op == ODPEMU_WR_ATOMIC_WRITE) {
		w->swap = t_rand(&s->rng);
	} else if (w->op == ODPEMU_WR_FLUSH) {
		w->flush_type = (uint8_t)(1 + t_below(&s->rng, 3));
		w->flush_level = !pc->mrs[w->rmr].odp && chance(s, 20) ? 1 : 0;	/* whole MR: pinned only */
	}
	return 0;
}

/* FETCH_ADD on a shared counter of the peer's client (counter QPs only). */
static bool rc_counter(struct sim *s, struct qpm *q, struct xwr *w)
{
	struct clientm *pc = &s->clients[s->qps[q->peer].client];

	for (unsigned i = 0; i < s->ncounters; i++) {
		struct counterm *k = &s->counters[i];

		if (&s->clients[k->client] != pc || !chance(s, 60))
			continue;
		if (k->nmaybe + k->inflight >= 16)
			return false;	/* the linearizability check tracks 16 uncertain adds */
		k->inflight++;
		w->counter = (int)i;
		w->rmr = k->mr;
		w->rva = k->va;
		w->rkey = pc->mrs[k->mr].rkey;
		w->compare_add = 1 + t_below(&s->rng, 1000);
		return true;
	}
	return false;
}

static void fill_sources(struct sim *s, struct clientm *c, struct xwr *w)
{
	for (unsigned i = 0; i < w->nseg; i++) {
		uint8_t *b = malloc(w->seg[i].len);

		if (!b)
			abort();
		t_fill(&s->rng, b, w->seg[i].len);
		host_cpu_write(&c->mem, w->seg[i].va, b, w->seg[i].len);	/* the application writes */
		free(b);
	}
}

static void wr_abandon(struct sim *s, struct qpm *q, struct xwr *w)
{
	host_busy_del(&s->clients[q->client].mem, w);
	host_busy_del(&s->clients[s->qps[q->peer].client].mem, w);
	if (w->counter >= 0)
		s->counters[w->counter].inflight--;
	free(w->data);
	free(w);
}

static struct xwr *rc_build(struct sim *s, struct qpm *q, bool want_err, uint32_t *recv_cap, bool *recv_bad)
{
	struct clientm *c = &s->clients[q->client];
	struct xwr *w = calloc(1, sizeof(*w));
	bool send, lw;

	if (!w)
		abort();
	w->counter = -1;
	w->rmr = -1;
	w->op = pick_op(s);
	send = is_send_op(w->op);
	lw = w->op == ODPEMU_WR_RDMA_READ || w->op == ODPEMU_WR_ATOMIC_CMP_AND_SWP ||
	     w->op == ODPEMU_WR_ATOMIC_FETCH_AND_ADD;
	w->len = rc_len(s, q, w->op, want_err);
	w->imm = (uint32_t)t_rand(&s->rng);
	w->data = malloc(w->len > 8 ? w->len : 8);
	if (!w->data)
		abort();
	if (w->op == ODPEMU_WR_ATOMIC_FETCH_AND_ADD && q->counter_qp && rc_counter(s, q, w))
		want_err = false;
	else if (rc_remote(s, q, w)) {
		wr_abandon(s, q, w);
		return NULL;
	}
	if (!want_err && (send || w->op == ODPEMU_WR_RDMA_WRITE) && w->len && w->len <= 64 && chance(s, 20)) {
		w->inline_data = true;
		t_fill(&s->rng, w->data, w->len);
	} else if (w->op != ODPEMU_WR_FLUSH) {	/* ATOMIC_WRITE: its 8 bytes come from one SGE */
		if (local_segs(s, c, w, lw && w->len == 8 ? 8 : 1)) {
			wr_abandon(s, q, w);
			return NULL;
		}
		if (!lw)
			fill_sources(s, c, w);
	}
	*recv_cap = s->qps[q->peer].use_srq ? s->clients[s->qps[q->peer].client].srq_recv_size
					    : w->len + (uint32_t)t_below(&s->rng, 65);
	*recv_bad = false;
	if (want_err)
		inject_error(s, q, w, recv_cap, recv_bad);
	model_predict(s, q, w, *recv_cap, *recv_bad);
	return w;
}

/* The RECV a message will consume, on the peer (its RQ or its SRQ); NULL if no room. */
static struct xrecv *rc_recv_build(struct sim *s, struct qpm *q, struct xwr *w, uint32_t cap, bool bad)
{
	struct qpm *p = &s->qps[q->peer];
	struct clientm *pc = &s->clients[p->client];
	struct xrecv *r = calloc(1, sizeof(*r));
	uint32_t left;

	if (!r)
		abort();
	if (p->use_srq)
		cap = pc->srq_recv_size;
	else if (w->op == ODPEMU_WR_RDMA_WRITE_WITH_IMM)
		cap = (uint32_t)t_below(&s->rng, 17);
	r->cap = left = cap;
	for (unsigned i = 0; left && i < 2; i++) {
		uint32_t part = i == 1 || cap < 2 || chance(s, 60) ? left : 1 + (uint32_t)t_below(&s->rng, left - 1);
		int mr = pick_mr(s, pc, mr_good);

		if (bad && i == 0 && zone_mr(pc) >= 0) {
			mr = zone_mr(pc);
			part = left;
			r->seg[0].va = zone_bad_page(s, pc, true);
		} else if (mr < 0 || alloc_buf(s, pc, &pc->mrs[mr], part, 1, &r->seg[i].va)) {
			host_busy_del(&pc->mem, r);
			free(r);
			return NULL;
		}
		r->seg[i].mr = mr;
		r->seg[i].len = part;
		host_busy_add(&pc->mem, r->seg[i].va, part, r);
		left -= part;
		r->nseg++;
	}
	return r;
}

/* Post it before the message, or late (the message meets RNR NAKs meanwhile). Late RECVs
 * keep their order: a RECV never overtakes one scheduled before it. */
static void rc_recv_post(struct sim *s, struct qpm *q, struct xrecv *r)
{
	struct qpm *p = &s->qps[q->peer];

	if (p->use_srq) {
		model_post_recv(s, p, r, true);
		return;
	}
	if ((s->cfg.features & SIM_F(LATE_RECV)) && p->rnr_retry == 7 && (chance(s, 15) || p->late_until >= s->now)) {
		uint64_t t = s->now + t_below(&s->rng, 2 * SIM_MS);

		if (t < p->late_until)
			t = p->late_until;
		p->late_until = t;
		schedule(s, t, A_LATE_RECV, p->idx, r);
		return;
	}
	model_post_recv(s, p, r, false);
}

/* The verbs WR of w, its SGEs in sge[]. */
static void rc_wr(struct sim *s, struct qpm *q, struct xwr *w, struct nic_send_wr *wr,
		  struct nic_sge *sge)
{
	struct clientm *c = &s->clients[q->client];

	*wr = (struct nic_send_wr){
		.opcode = w->op, .send_flags = w->signaled ? ODPEMU_SEND_SIGNALED : 0,
		.sg_list = sge, .num_sge = w->nseg, .imm_data = w->imm, .remote_addr = w->rva,
		.rkey = w->rkey, .compare_add = w->compare_add, .swap = w->swap,
		.flush_type = w->flush_type, .flush_level = w->flush_level,
		.flush_len = w->op == ODPEMU_WR_FLUSH ? w->len : 0,
	};
	if (w->inline_data) {
		sge[0] = (struct nic_sge){ (uint64_t)(uintptr_t)w->data, w->len, 0 };
		wr->num_sge = 1;
		wr->send_flags |= ODPEMU_SEND_INLINE;
	}
	for (unsigned i = 0; i < w->nseg && !w->inline_data; i++)
		sge[i] = (struct nic_sge){ w->seg[i].va, w->seg[i].len,
			w->seg[i].mr >= 0 ? c->mrs[w->seg[i].mr].lkey : 0xDEAD00u | (uint32_t)t_below(&s->rng, 256) };
	if (w->len >= (1u << 20))
		s->large_inflight++;
}

/* A zero-length WRITE: a signaled WR that needs no buffer, to close a batch. */
static struct xwr *rc_fence_build(struct sim *s, struct qpm *q)
{
	struct clientm *pc = &s->clients[s->qps[q->peer].client];
	struct xwr *w = calloc(1, sizeof(*w));

	if (!w)
		abort();
	w->op = ODPEMU_WR_RDMA_WRITE;
	w->signaled = true;
	w->counter = -1;
	w->rmr = pick_mr(s, pc, mr_good);
	w->rva = w->rmr >= 0 ? pc->mrs[w->rmr].va + 4096 : 0x1000;
	w->rkey = w->rmr >= 0 ? pc->mrs[w->rmr].rkey : 0;
	model_predict(s, q, w, 0, false);
	return w;
}

#define RC_BATCH_MAX 6

/* A batch of RC WRs (their RECVs posted first), closed by a signaled one; half the
 * batches go under one doorbell (nic_post_send_list: one AckReq for the list). */
static void act_post_rc(struct sim *s, struct qpm *q)
{
	unsigned n = 1 + (unsigned)t_below(&s->rng, RC_BATCH_MAX), nl = 0;
	struct xwr *ws[RC_BATCH_MAX + 1];
	struct nic_send_wr wrs[RC_BATCH_MAX + 1];
	struct nic_sge sges[RC_BATCH_MAX + 1][SIM_MAX_SGE];
	bool list = chance(s, 50), last_signaled = true;

	if (q->doomed || q->reset_stage || s->qps[q->peer].doomed || q->sq.n > 200)
		return;
	for (unsigned i = 0; i < n && !s->failed; i++) {
		bool want_err = s->cfg.error_pct && !q->counter_qp && chance(s, s->cfg.error_pct);
		uint32_t cap;
		bool bad;
		struct xwr *w = rc_build(s, q, want_err, &cap, &bad);

		if (!w)
			break;
		struct xrecv *r = NULL;

		if (w->consumes_recv && !(r = rc_recv_build(s, q, w, cap, bad))) {
			wr_abandon(s, q, w);
			break;
		}
		w->signaled = i + 1 == n || chance(s, 50);
		last_signaled = w->signaled;
		if (r)
			rc_recv_post(s, q, r);
		rc_wr(s, q, w, &wrs[nl], sges[nl]);
		model_reserve(s, q, w);	/* the next WRs of the list must not share buffers */
		ws[nl++] = w;
		if (!list) {
			model_post_send(s, q, w, &wrs[0]);
			nl = 0;
		}
	}
	if (!last_signaled && !s->failed) {
		ws[nl] = rc_fence_build(s, q);
		rc_wr(s, q, ws[nl], &wrs[nl], sges[nl]);
		nl++;
	}
	if (nl && !s->failed)
		model_post_send_list(s, q, ws, wrs, nl);
}

/* ---- UD ---- */

#define UD_RECVS 8

static unsigned ud_mtu(struct sim *s, const struct qpm *a, const struct qpm *b)
{
	unsigned x = s->nics[s->clients[a->client].nic].mtu_bytes, y = s->nics[s->clients[b->client].nic].mtu_bytes;

	return x < y ? x : y;
}

void workload_keep_ud_recvs(struct sim *s)
{
	for (unsigned i = 0; i < s->nqps && !s->failed; i++) {
		struct qpm *q = &s->qps[i];
		struct clientm *c = &s->clients[q->client];

		while (q->type == ODPEMU_QPT_UD && q->rq.n < UD_RECVS && !s->failed) {
			struct xrecv *r = calloc(1, sizeof(*r));
			int mr = pick_mr(s, c, mr_good);

			if (!r)
				abort();
			r->ud = true;
			r->cap = 4096 + 40;	/* any payload of any MTU, after a GRH */
			if (mr < 0 || alloc_buf(s, c, &c->mrs[mr], r->cap, 64, &r->seg[0].va)) {
				free(r);
				break;
			}
			r->seg[0].mr = mr;
			r->seg[0].len = r->cap;
			r->nseg = 1;
			view_unknown(s, &c->mrs[mr], r->seg[0].va, r->cap);	/* any datagram may land */
			model_post_recv(s, q, r, false);
		}
	}
}

static struct udmsg *ud_msg_new(struct sim *s, struct xwr *w, const struct qpm *src)
{
	struct udmsg *u = calloc(1, sizeof(*u));

	if (!u)
		abort();
	if (s->nud == s->capud) {
		s->capud = s->capud ? 2 * s->capud : 64;
		s->ud = realloc(s->ud, s->capud * sizeof(*s->ud));
		if (!s->ud)
			abort();
	}
	u->id = 0x5544ull << 40 | s->nud;
	u->src_qp = src->idx;
	u->src_qpn = src->qpn;
	u->len = w->len;
	s->ud[s->nud++] = u;
	return u;
}

static void act_post_ud(struct sim *s, int src)
{
	struct qpm *q = &s->qps[src], *d;
	struct clientm *c = &s->clients[q->client];
	int ud[SIM_MAX_QPS], n = 0, mr = pick_mr(s, c, mr_good);
	struct xwr *w;
	struct udmsg *u;
	struct nic_sge sge;
	struct nic_send_wr wr = { 0 };

	for (unsigned i = 0; i < s->nqps; i++)
		if (s->qps[i].type == ODPEMU_QPT_UD && (int)i != src)
			ud[n++] = (int)i;
	if (!n || mr < 0 || q->sq.n > 200)
		return;
	d = &s->qps[ud[t_below(&s->rng, (uint64_t)n)]];
	w = calloc(1, sizeof(*w));
	if (!w)
		abort();
	w->ud = true;
	w->counter = -1;
	w->rmr = -1;
	w->signaled = true;
	w->op = chance(s, 70) ? ODPEMU_WR_SEND : ODPEMU_WR_SEND_WITH_IMM;
	w->len = 8 + (uint32_t)t_below(&s->rng, ud_mtu(s, q, d) - 8 + 1);
	w->data = malloc(w->len);
	w->imm = (uint32_t)t_rand(&s->rng);
	if (!w->data || alloc_buf(s, c, &c->mrs[mr], w->len, 1, &w->seg[0].va) ||
	    !view_coherent(s, &c->mrs[mr], w->seg[0].va, w->len)) {
		/* the message id is written by the CPU: the NIC must see it */
		free(w->data);
		free(w);
		return;
	}
	w->nseg = 1;
	w->seg[0] = (struct seg){ mr, w->seg[0].va, w->len };
	u = ud_msg_new(s, w, q);
	t_fill(&s->rng, w->data, w->len);
	memcpy(w->data, &u->id, 8);
	host_cpu_write(&c->mem, w->seg[0].va, w->data, w->len);
	u->data = malloc(w->len);
	if (!u->data)
		abort();
	memcpy(u->data, w->data, w->len);
	u->bad_qkey = s->cfg.error_pct && chance(s, 5);
	model_predict(s, q, w, 0, false);
	sge = (struct nic_sge){ w->seg[0].va, w->len, c->mrs[mr].lkey };
	wr.opcode = w->op;
	wr.send_flags = ODPEMU_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.imm_data = w->imm;
	wr.ud_dgid = s->nics[s->clients[d->client].nic].gid;
	wr.remote_qpn = d->qpn;
	wr.remote_qkey = u->bad_qkey ? 0x22220000 : 0x11110000;
	model_post_send(s, q, w, &wr);
}

/* ---- host memory actions ---- */

static void act_memory(struct sim *s)
{
	struct clientm *c = &s->clients[t_below(&s->rng, s->cfg.nclients)];
	struct host *h = &c->mem;
	uint64_t pages = 1 + t_below(&s->rng, 32);
	uint64_t va = h->base + t_below(&s->rng, SIM_NORMAL_SIZE / SIM_PAGE - pages) * SIM_PAGE;
	uint64_t len = pages * SIM_PAGE;

	if (host_busy_overlaps(h, va, va + len))
		return;	/* never under a WR in flight: its outcome would depend on timing */
	switch (t_below(&s->rng, 6)) {
	case 0:
		host_unmap(s, h, va, len);
		break;
	case 1:
		host_protect(s, h, va, len, PERM_RO);
		break;
	case 2:
		host_protect(s, h, va, len, PERM_RW);
		break;
	default:
		host_remap(s, h, va, len, PERM_RW);	/* also heals holes */
		break;
	}
	sim_trace(s, "memory change client %u va 0x%" PRIx64 " pages %" PRIu64, c->id, va, pages);
}

/* Evictions may hit memory under DMAs in flight: they change no byte, so nothing changes
 * for the model, but the NIC must fault again and land every byte once. */
static void act_evict(struct sim *s)
{
	struct clientm *c = &s->clients[t_below(&s->rng, s->cfg.nclients)];
	uint64_t pages = 1 + t_below(&s->rng, 64);
	uint64_t va = c->mem.base + t_below(&s->rng, SIM_ARENA_PAGES - pages) * SIM_PAGE;

	host_evict(s, &c->mem, va, pages * SIM_PAGE);
}

static bool mr_odp_good(const struct mrm *m)
{
	return mr_good(m) && m->odp;
}

static void act_advise(struct sim *s)
{
	struct clientm *c = &s->clients[t_below(&s->rng, s->cfg.nclients)];
	int mr = pick_mr(s, c, mr_odp_good);
	uint64_t va, len = 1 + t_below(&s->rng, 256 << 10);
	int rc;

	if (mr < 0 || alloc_buf(s, c, &c->mrs[mr], (uint32_t)len, 1, &va))
		return;
	rc = nic_mr_advise(c->mrs[mr].mr, (unsigned)t_below(&s->rng, 3), va, len, s->now);
	if (rc < 0)
		sim_fail(s, "nic_mr_advise(client %u va 0x%" PRIx64 " len %" PRIu64 ") returned %d", c->id, va, len, rc);
}

static void act_reset(struct sim *s)
{
	struct qpm *q = &s->qps[t_below(&s->rng, s->nqps)];

	if (q->type != ODPEMU_QPT_RC || q->counter_qp || q->doomed || q->reset_stage || s->qps[q->peer].reset_stage)
		return;
	pair_reset_begin(s, q->idx < q->peer ? q : &s->qps[q->peer]);
}

/* ---- phases ---- */

static void run_action(struct sim *s, struct action *a)
{
	struct qpm *q = a->qp >= 0 ? &s->qps[a->qp] : NULL;

	switch (a->kind) {
	case A_POST_RC:
		act_post_rc(s, q);
		break;
	case A_POST_UD:
		act_post_ud(s, a->qp);
		break;
	case A_REMAP:
		act_memory(s);
		break;
	case A_EVICT:
		act_evict(s);
		break;
	case A_ADVISE:
		act_advise(s);
		break;
	case A_RESET:
		act_reset(s);
		break;
	case A_LATE_RECV:
		if (q->incarnation != a->incarnation || q->doomed) {
			host_busy_del(&s->clients[q->client].mem, a->r);
			xrecv_free(s, a->r);	/* its message was flushed with the old connection */
		} else {
			model_post_recv(s, q, a->r, false);
		}
		break;
	}
}

static int pick_qp(struct sim *s, enum odpemu_qp_type type)
{
	int idx[SIM_MAX_QPS], n = 0;

	for (unsigned i = 0; i < s->nqps; i++)
		if (s->qps[i].type == type)
			idx[n++] = (int)i;
	return n ? idx[t_below(&s->rng, (uint64_t)n)] : -1;
}

void workload_phase(struct sim *s)
{
	unsigned f = s->cfg.features;

	for (unsigned i = 0; i < s->cfg.actions_per_phase; i++) {
		uint64_t t = s->now + t_below(&s->rng, s->cfg.phase_span);
		unsigned r = (unsigned)t_below(&s->rng, 100);
		int ud = pick_qp(s, ODPEMU_QPT_UD);

		if (r < 8 && (f & SIM_F(EVICT)))
			schedule(s, t, A_EVICT, -1, NULL);
		else if (r < 14 && (f & SIM_F(REMAP)))
			schedule(s, t, A_REMAP, -1, NULL);
		else if (r < 17 && (f & (SIM_F(ODP) | SIM_F(IMPLICIT))))
			schedule(s, t, A_ADVISE, -1, NULL);
		else if (r < 19 && (f & SIM_F(RESET)))
			schedule(s, t, A_RESET, -1, NULL);
		else if (r < 30 && ud >= 0)
			schedule(s, t, A_POST_UD, ud, NULL);
		else
			schedule(s, t, A_POST_RC, pick_qp(s, ODPEMU_QPT_RC), NULL);
	}
	workload_keep_ud_recvs(s);
}

unsigned workload_actions_due(struct sim *s)
{
	unsigned n = 0;
	struct ev e;

	while (!s->failed && pq_next(&s->action_q) <= s->now && pq_pop(&s->action_q, &e)) {
		run_action(s, e.p);
		free(e.p);
		n++;
	}
	return n;
}

uint64_t workload_next(const struct sim *s)
{
	return pq_next(&s->action_q);
}

/* Shared counters and the MR that SEND_WITH_INV names, made once per run. */
void workload_init(struct sim *s)
{
	if (s->cfg.features & SIM_F(ALLOPS))
		for (unsigned ci = 0; ci < s->cfg.nclients; ci++) {
			struct clientm *c = &s->clients[ci];
			struct nic_mr_init init = { .va = c->mem.base, .len = SIM_PAGE,
				.access = ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_ON_DEMAND };
			struct mrm *m = &c->mrs[c->nmrs];

			if (c->nmrs >= SIM_MAX_MRS)
				continue;
			memset(m, 0, sizeof(*m));
			if (nic_mr_reg(c->pd, &init, &m->mr)) {
				sim_fail(s, "nic_mr_reg of the SEND_WITH_INV target failed");
				return;
			}
			m->client = (int)ci;
			m->va = init.va;
			m->len = init.len;
			m->access = init.access;
			m->odp = m->live = m->inv = true;
			m->lkey = nic_mr_lkey(m->mr);
			m->rkey = nic_mr_rkey(m->mr);
			c->nmrs++;
		}
	if (!(s->cfg.features & SIM_F(CONTENDED)))
		return;
	for (unsigned i = 0; i < s->nqps; i++)
		if (s->qps[i].type == ODPEMU_QPT_RC && s->qps[i].idx < s->qps[i].peer && i % 2 == 0)
			s->qps[i].counter_qp = s->qps[s->qps[i].peer].counter_qp = true;
	for (unsigned i = 0; i < 2 && s->ncounters < 4; i++) {
		struct counterm *k = &s->counters[s->ncounters];
		struct clientm *c;
		uint64_t v = t_below(&s->rng, 1u << 30);

		k->client = (int)t_below(&s->rng, s->cfg.nclients);
		c = &s->clients[k->client];
		k->mr = pick_mr(s, c, mr_good);
		if (k->mr < 0 || alloc_buf(s, c, &c->mrs[k->mr], 8, 8, &k->va))
			continue;
		host_busy_add(&c->mem, k->va, 8, k);	/* for the whole run: never remapped */
		host_cpu_write(&c->mem, k->va, &v, 8);
		view_unknown(s, &c->mrs[k->mr], k->va, 8);	/* checked by linearizability instead */
		k->initial = v;
		s->ncounters++;
	}
}
