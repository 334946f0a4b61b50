/* SPDX-License-Identifier: MIT */
/*
 * The reference model. At post time it predicts, from the MRs, the host memory and the
 * RECV a message will consume, the status each WR must complete with and the bytes a
 * success lands. At completion time it checks, in queue order:
 *  - every signaled WR completes exactly once, in post order; an unsignaled WR may retire
 *    silently only as a success (error completions are generated even for unsignaled WRs);
 *  - the status is one the model allows: the prediction, plus WR_FLUSH_ERR once the QP is
 *    (or may be) in ERR, plus the few statuses that depend on timing on purpose (rnr_retry
 *    < 7 pairs: RNR_RETRY_EXC_ERR; a peer gone to ERR: RETRY_EXC_ERR); after a non-success
 *    completion on a queue, everything later on it is WR_FLUSH_ERR;
 *  - a success landed exactly the predicted bytes (and nothing next to them: the target's
 *    expectation is updated and the whole target compared); a failure leaves its targets
 *    unknown (partial landing is allowed), nothing else;
 *  - RECVs: the n-th RECV completion of a QP matches the n-th message its peer sent that
 *    consumes one (opcode, length, immediate, invalidated rkey, bytes).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define WR_RECV (1ull << 63)
#define WR_SRQ (1ull << 62)
#define ST(x) status_bit(ODPEMU_WC_##x)

static struct clientm *peer_client(struct sim *s, const struct qpm *q)
{
	return &s->clients[s->qps[q->peer].client];
}

void xwr_free(struct sim *s, struct xwr *w)
{
	(void)s;
	if (--w->refs > 0)
		return;
	free(w->data);
	free(w);
}

void xrecv_free(struct sim *s, struct xrecv *r)
{
	(void)s;
	free(r);
}

static const char *op_str(const struct xwr *w)
{
	return odpemu_wr_opcode_str(w->op);
}

/* ---- prediction ---- */

static bool is_send(enum odpemu_wr_opcode op)
{
	return op == ODPEMU_WR_SEND || op == ODPEMU_WR_SEND_WITH_IMM || op == ODPEMU_WR_SEND_WITH_INV;
}

static bool is_atomic(enum odpemu_wr_opcode op)
{
	return op == ODPEMU_WR_ATOMIC_CMP_AND_SWP || op == ODPEMU_WR_ATOMIC_FETCH_AND_ADD;
}

/* A local SGE the NIC gathers from (or, lands_local, scatters into). */
static bool seg_ok(struct sim *s, struct clientm *c, const struct seg *g, bool write)
{
	const struct mrm *m;

	if (g->mr < 0)
		return false;
	m = &c->mrs[g->mr];
	if (!m->live || g->va < m->va || g->va + g->len > m->va + m->len || m->other_pd)
		return false;
	if (write && !(m->access & ODPEMU_ACCESS_LOCAL_WRITE))
		return false;
	(void)s;
	return !m->odp || host_range_perm(&c->mem, g->va, g->len, write ? PERM_RW : PERM_RO);
}

static unsigned remote_need(const struct xwr *w)
{
	switch (w->op) {
	case ODPEMU_WR_RDMA_READ:
		return ODPEMU_ACCESS_REMOTE_READ;
	case ODPEMU_WR_ATOMIC_CMP_AND_SWP:
	case ODPEMU_WR_ATOMIC_FETCH_AND_ADD:
		return ODPEMU_ACCESS_REMOTE_ATOMIC;
	case ODPEMU_WR_FLUSH:
		return (w->flush_type & 1 ? ODPEMU_ACCESS_FLUSH_GLOBAL : 0) |
		       (w->flush_type & 2 ? ODPEMU_ACCESS_FLUSH_PERSISTENT : 0);
	default:
		return ODPEMU_ACCESS_REMOTE_WRITE;
	}
}

/* The responder's R_Key, range, permission and (ODP) page checks. */
static bool remote_ok(struct sim *s, struct qpm *q, const struct xwr *w, uint64_t len)
{
	struct clientm *pc = peer_client(s, q);
	const struct mrm *m;
	bool write = w->op != ODPEMU_WR_RDMA_READ && w->op != ODPEMU_WR_FLUSH;

	if (w->rmr < 0)
		return false;
	m = &pc->mrs[w->rmr];
	if (!m->live || m->other_pd || (m->access & remote_need(w)) != remote_need(w))
		return false;
	if (w->op == ODPEMU_WR_FLUSH && w->flush_level == 1)
		return true;	/* the whole MR: va and length are not looked at */
	if (w->rva < m->va || w->rva + len > m->va + m->len || w->rva + len < w->rva)
		return false;
	return !m->odp || host_range_perm(&pc->mem, w->rva, len, write ? PERM_RW : PERM_RO);
}

static void gather(struct sim *s, struct clientm *c, struct xwr *w)
{
	uint32_t off = 0;

	if (w->inline_data)
		return;	/* the workload filled w->data: the NIC copies it at post time */
	for (unsigned i = 0; i < w->nseg; i++) {
		view_read(s, &c->mrs[w->seg[i].mr], w->seg[i].va, w->data + off, w->seg[i].len);
		off += w->seg[i].len;
	}
}

static void predict_data(struct sim *s, struct qpm *q, struct xwr *w)
{
	struct clientm *c = &s->clients[q->client];
	uint64_t v, nv;

	if (is_send(w->op) || w->op == ODPEMU_WR_RDMA_WRITE || w->op == ODPEMU_WR_RDMA_WRITE_WITH_IMM) {
		gather(s, c, w);
		w->lands_remote = w->op == ODPEMU_WR_RDMA_WRITE || w->op == ODPEMU_WR_RDMA_WRITE_WITH_IMM;
	} else if (w->op == ODPEMU_WR_RDMA_READ) {
		view_read(s, &peer_client(s, q)->mrs[w->rmr], w->rva, w->data, w->len);
		w->lands_local = true;
	} else if (is_atomic(w->op)) {
		view_read(s, &peer_client(s, q)->mrs[w->rmr], w->rva, &v, 8);
		if (w->op == ODPEMU_WR_ATOMIC_CMP_AND_SWP)
			nv = v == w->compare_add ? w->swap : v;
		else
			nv = v + w->compare_add;
		w->orig = v;
		memcpy(w->data, &v, 8);
		memcpy(w->rdata, &nv, 8);
		w->lands_local = w->lands_remote = true;
	} else if (w->op == ODPEMU_WR_ATOMIC_WRITE) {
		gather(s, c, w);
		memcpy(w->rdata, w->data, 8);
		w->lands_remote = true;
	}
}

void model_predict(struct sim *s, struct qpm *q, struct xwr *w, uint32_t recv_cap, bool recv_bad)
{
	struct clientm *c = &s->clients[q->client];
	bool lw = w->op == ODPEMU_WR_RDMA_READ || is_atomic(w->op);
	uint64_t rlen = is_atomic(w->op) || w->op == ODPEMU_WR_ATOMIC_WRITE ? 8 : w->len;
	bool remote = !is_send(w->op) && !w->ud;

	w->consumes_recv = !w->ud && (is_send(w->op) || w->op == ODPEMU_WR_RDMA_WRITE_WITH_IMM);
	w->ok = ST(SUCCESS);
	w->recv_ok = w->consumes_recv ? ST(SUCCESS) : 0;
	for (unsigned i = 0; i < w->nseg && !w->inline_data; i++)
		if (!seg_ok(s, c, &w->seg[i], lw)) {
			w->ok = ST(LOC_PROT_ERR);
			w->recv_ok = 0;	/* never sent (or its result never lands) */
			/* an atomic is sent before its result buffer is touched: the
			 * responder may have executed it (retire_wr: unknown bytes) */
			w->lands_remote = is_atomic(w->op) && remote_ok(s, q, w, 8);
			return;
		}
	if (remote && (rlen || w->op == ODPEMU_WR_FLUSH) && !remote_ok(s, q, w, rlen)) {
		w->ok = ST(REM_ACCESS_ERR);
		w->recv_ok = 0;	/* a rejected WRITE_WITH_IMM consumes no RECV */
		return;
	}
	if (w->consumes_recv && is_send(w->op) && recv_cap < w->len) {
		w->ok = ST(REM_INV_REQ_ERR);
		w->recv_ok = ST(LOC_LEN_ERR);
		return;
	}
	if (w->consumes_recv && is_send(w->op) && recv_bad && w->len) {
		/* the RECV buffer's fault is refused at the responder (see the report) */
		w->ok = ST(REM_ACCESS_ERR) | ST(REM_OP_ERR);
		w->recv_ok = ST(LOC_PROT_ERR) | ST(LOC_ACCESS_ERR) | ST(LOC_QP_OP_ERR);
		return;
	}
	predict_data(s, q, w);
}

/* Stop posting on the pair and schedule its reset; the reset state lives on the pair's
 * lower-index QP (setup.c). */
void model_doom(struct sim *s, struct qpm *q)
{
	struct qpm *lo;

	q->doomed = true;
	if (q->peer < 0)
		return;
	s->qps[q->peer].doomed = true;
	lo = q->idx < q->peer ? q : &s->qps[q->peer];
	if (!lo->reset_stage) {
		lo->reset_stage = 1;
		lo->reset_at = s->now + t_below(&s->rng, 500 * SIM_US);
	}
}

/* A WR predicted to fail puts the QPs in ERR: say now which queues may flush, before any
 * of their completions can be polled (send and receive CQs are polled in any order). */
static void doom_on_post(struct sim *s, struct qpm *q, const struct xwr *w)
{
	struct qpm *p = q->peer >= 0 ? &s->qps[q->peer] : NULL;

	if (w->ok & ST(SUCCESS))
		return;
	q->flush_rq = true;
	if (w->ok & ST(LOC_PROT_ERR)) {
		/* a local error may flush earlier unacknowledged WRs; the peer's packets
		 * to this QP are dropped from now on: it may exhaust its retries */
		q->flush_sq = true;
		if (p)
			p->retry_exc_ok = p->flush_sq = p->flush_rq = true;
	} else if (p) {
		p->flush_sq = p->flush_rq = true;	/* the responder goes to ERR too */
	}
	model_doom(s, q);
}

/* Mark w's buffers busy (no later WR, remap or unmap may touch them until it retires).
 * Once per WR: a WR built into a post list reserves them before the list is posted. */
void model_reserve(struct sim *s, struct qpm *q, struct xwr *w)
{
	struct clientm *c = &s->clients[q->client];

	if (w->reserved)
		return;
	w->reserved = true;
	for (unsigned i = 0; i < w->nseg && !w->inline_data; i++)
		host_busy_add(&c->mem, w->seg[i].va, w->seg[i].len, w);
	if (q->peer >= 0 && !is_send(w->op))
		host_busy_add(&peer_client(s, q)->mem, w->rva, w->len > 8 ? w->len : 8, w);
}

/* The model's side of posting w, before the NIC sees it. */
static void note_send(struct sim *s, struct qpm *q, struct xwr *w, struct nic_send_wr *wr)
{
	w->wr_id = (uint64_t)q->idx << 40 | ++q->wr_seq;
	w->qp = q->idx;
	w->posted_at = s->now;
	wr->wr_id = w->wr_id;
	model_reserve(s, q, w);
	w->refs = 1;
	fifo_push(&q->sq, w);
	if (w->consumes_recv && q->peer >= 0) {
		w->refs++;
		fifo_push(&s->qps[q->peer].incoming, w);
	}
	doom_on_post(s, q, w);
	s->posted++;
	sim_trace(s, "post qp %u #%" PRIx64 " %s len %u%s ok 0x%x", q->qpn, w->wr_id, op_str(w), w->len,
		  w->signaled ? "" : " unsignaled", w->ok);
	if (s->verbose >= 2 && w->rkey)
		sim_trace(s, "  remote mr %d va 0x%" PRIx64 " rkey 0x%x", w->rmr, w->rva, w->rkey);
	for (unsigned i = 0; i < w->nseg && s->verbose >= 2; i++)
		sim_trace(s, "  seg mr %d va 0x%" PRIx64 " len %u", w->seg[i].mr, w->seg[i].va, w->seg[i].len);
}

/* n WRs under one doorbell (nic_post_send_list), or one by nic_post_send. */
int model_post_send_list(struct sim *s, struct qpm *q, struct xwr **w, struct nic_send_wr *wr,
			 unsigned n)
{
	unsigned posted = 1;
	int rc;

	for (unsigned i = 0; i < n; i++)
		note_send(s, q, w[i], &wr[i]);
	if (n > 1)
		sim_trace(s, "  (one doorbell for the %u WRs above)", n);
	rc = n == 1 ? nic_post_send(q->qp, wr, s->now)
		    : nic_post_send_list(q->qp, wr, n, &posted, s->now);
	if (rc)
		sim_fail(s, "post_send(qp %u, WR %u of %u: %s, len %u) returned %d", q->qpn,
			 n == 1 ? 1 : posted + 1, n, op_str(w[n == 1 ? 0 : posted]), w[n == 1 ? 0 : posted]->len, rc);
	return rc;
}

int model_post_send(struct sim *s, struct qpm *q, struct xwr *w, struct nic_send_wr *wr)
{
	return model_post_send_list(s, q, &w, wr, 1);
}

int model_post_recv(struct sim *s, struct qpm *q, struct xrecv *r, bool srq)
{
	struct clientm *c = &s->clients[q->client];
	struct nic_sge sge[2];
	struct nic_recv_wr wr = { .sg_list = sge, .num_sge = r->nseg };
	int rc;

	/* an SRQ is the client's: its ids count per client, not per QP (no two alike) */
	r->wr_id = srq ? WR_RECV | WR_SRQ | (uint64_t)q->client << 40 | ++c->srq_seq
		       : WR_RECV | (uint64_t)q->idx << 40 | ++q->wr_seq;
	r->client = q->client;
	r->qp = srq ? -1 : q->idx;
	wr.wr_id = r->wr_id;
	for (unsigned i = 0; i < r->nseg; i++) {
		sge[i] = (struct nic_sge){ r->seg[i].va, r->seg[i].len,
			r->seg[i].mr >= 0 ? c->mrs[r->seg[i].mr].lkey : 0xDEAD00u };
		host_busy_add(&c->mem, r->seg[i].va, r->seg[i].len, r);
	}
	fifo_push(srq ? &c->srq_recvs : &q->rq, r);
	if (s->verbose >= 2)
		sim_trace(s, "post recv qp %u%s #%" PRIx64 " cap %u va 0x%" PRIx64, q->qpn, srq ? " srq" : "",
			  r->wr_id, r->cap, r->nseg ? r->seg[0].va : 0);
	rc = srq ? nic_srq_post_recv(c->srq, &wr, s->now) : nic_post_recv(q->qp, &wr, s->now);
	if (rc)
		sim_fail(s, "post_recv(qp %u%s, cap %u) returned %d", q->qpn, srq ? " srq" : "", r->cap, rc);
	return rc;
}

/* ---- completions: send queue ---- */

static unsigned sq_allowed(const struct sim *s, const struct qpm *q, const struct xwr *w)
{
	unsigned a;

	(void)s;
	if (q->sq_err)
		return ST(WR_FLUSH_ERR) | (w->ok & ~ST(SUCCESS));
	a = w->ok;
	if (q->flush_sq)
		a |= ST(WR_FLUSH_ERR);
	if (q->retry_exc_ok)
		a |= ST(RETRY_EXC_ERR);
	if (q->rnr_retry < 7)
		a |= ST(RNR_RETRY_EXC_ERR) | ST(WR_FLUSH_ERR);
	return a;
}

static enum odpemu_wc_opcode wc_opcode_of(enum odpemu_wr_opcode op)
{
	switch (op) {
	case ODPEMU_WR_RDMA_WRITE:
	case ODPEMU_WR_RDMA_WRITE_WITH_IMM:
		return ODPEMU_WC_RDMA_WRITE;
	case ODPEMU_WR_RDMA_READ:
		return ODPEMU_WC_RDMA_READ;
	case ODPEMU_WR_ATOMIC_CMP_AND_SWP:
		return ODPEMU_WC_COMP_SWAP;
	case ODPEMU_WR_ATOMIC_FETCH_AND_ADD:
		return ODPEMU_WC_FETCH_ADD;
	case ODPEMU_WR_FLUSH:
		return ODPEMU_WC_FLUSH;
	case ODPEMU_WR_ATOMIC_WRITE:
		return ODPEMU_WC_ATOMIC_WRITE;
	default:
		return ODPEMU_WC_SEND;
	}
}

static void land_local(struct sim *s, struct qpm *q, struct xwr *w, bool success)
{
	struct clientm *c = &s->clients[q->client];
	uint32_t off = 0;

	for (unsigned i = 0; i < w->nseg; i++) {
		const struct mrm *m = &c->mrs[w->seg[i].mr];

		if (success && w->counter < 0) {
			view_expect(s, m, w->seg[i].va, w->data + off, w->seg[i].len);
			view_check(s, m, w->seg[i].va, w->seg[i].len, "local landing (READ/atomic result)");
		} else {
			view_unknown(s, m, w->seg[i].va, w->seg[i].len);
		}
		off += w->seg[i].len;
	}
}

static void land_remote(struct sim *s, struct qpm *q, struct xwr *w, bool success)
{
	const struct mrm *m;
	uint32_t len = w->op == ODPEMU_WR_RDMA_WRITE || w->op == ODPEMU_WR_RDMA_WRITE_WITH_IMM ? w->len : 8;

	if (w->rmr < 0 || w->counter >= 0)
		return;
	m = &peer_client(s, q)->mrs[w->rmr];
	if (!m->live || m->other_pd || w->rva < m->va || w->rva + len > m->va + m->len)
		return;	/* the key or range was refused: nothing may land (the memory check sees it) */
	if (!success) {
		view_unknown(s, m, w->rva, len);
		return;
	}
	view_expect(s, m, w->rva, w->op == ODPEMU_WR_RDMA_WRITE || w->op == ODPEMU_WR_RDMA_WRITE_WITH_IMM
		    ? w->data : w->rdata, len);
	view_check(s, m, w->rva, len, "remote landing (WRITE/atomic)");
}

static void counter_note(struct sim *s, struct qpm *q, struct xwr *w, bool success)
{
	struct counterm *k = &s->counters[w->counter];
	uint64_t got;

	k->inflight--;
	if (!success) {
		if (k->nmaybe < 16)
			k->maybe_add[k->nmaybe++] = w->compare_add;
		else
			sim_fail(s, "too many uncertain counter ops");
		return;
	}
	view_read(s, &s->clients[q->client].mrs[w->seg[0].mr], w->seg[0].va, &got, 8);
	if (k->nops == k->capops) {
		k->capops = k->capops ? 2 * k->capops : 64;
		k->ops = realloc(k->ops, k->capops * sizeof(*k->ops));
		if (!k->ops)
			abort();
	}
	k->ops[k->nops][0] = got;
	k->ops[k->nops][1] = w->compare_add;
	k->nops++;
}

static void retire_wr(struct sim *s, struct qpm *q, struct xwr *w, bool success)
{
	if (w->lands_local)
		land_local(s, q, w, success);
	if (w->lands_remote)
		land_remote(s, q, w, success);
	if (w->counter >= 0)
		counter_note(s, q, w, success);
	host_busy_del(&s->clients[q->client].mem, w);
	if (q->peer >= 0)
		host_busy_del(&peer_client(s, q)->mem, w);
	if (w->len >= (1u << 20) && s->large_inflight)
		s->large_inflight--;
	fifo_pop(&q->sq);
	s->completed++;
	xwr_free(s, w);
}

static void sq_error(struct sim *s, struct qpm *q, enum odpemu_wc_status st)
{
	struct qpm *p = q->peer >= 0 ? &s->qps[q->peer] : NULL;

	q->sq_err = true;
	q->flush_sq = q->flush_rq = true;
	if (p && (st == ODPEMU_WC_RETRY_EXC_ERR || st == ODPEMU_WC_RNR_RETRY_EXC_ERR))
		p->retry_exc_ok = p->flush_sq = p->flush_rq = true;
	if (q->type == ODPEMU_QPT_RC)
		model_doom(s, q);
}

static void sq_complete(struct sim *s, struct qpm *q, const struct nic_wc *wc)
{
	struct xwr *w;
	char a[160];

	while ((w = fifo_peek(&q->sq, 0)) && w->wr_id != wc->wr_id) {
		if (w->signaled || !(sq_allowed(s, q, w) & ST(SUCCESS))) {
			sim_fail(s, "qp %u: %s #%" PRIx64 " (%s, allowed %s) never completed; the NIC completed #%" PRIx64 " first",
				 q->qpn, op_str(w), w->wr_id, w->signaled ? "signaled" : "unsignaled",
				 status_set_str(sq_allowed(s, q, w), a, sizeof(a)), wc->wr_id);
			return;
		}
		retire_wr(s, q, w, true);	/* an unsignaled success retires silently */
	}
	if (!w) {
		sim_fail(s, "qp %u: completion #%" PRIx64 " (%s) for no outstanding WR (twice, or never posted)",
			 q->qpn, wc->wr_id, odpemu_wc_status_str(wc->status));
		return;
	}
	if (!(sq_allowed(s, q, w) & status_bit(wc->status))) {
		sim_fail(s, "qp %u: %s #%" PRIx64 " len %u completed %s (vendor_err %s), model allows %s",
			 q->qpn, op_str(w), w->wr_id, w->len, odpemu_wc_status_str(wc->status),
			 nic_vendor_err_str(wc->vendor_err), status_set_str(sq_allowed(s, q, w), a, sizeof(a)));
		return;
	}
	if (wc->status == ODPEMU_WC_SUCCESS && wc->opcode != wc_opcode_of(w->op)) {
		sim_fail(s, "qp %u: %s #%" PRIx64 " completed with opcode %s", q->qpn, op_str(w), w->wr_id,
			 odpemu_wc_opcode_str(wc->opcode));
		return;
	}
	sim_trace(s, "done qp %u #%" PRIx64 " %s %s", q->qpn, w->wr_id, op_str(w), odpemu_wc_status_str(wc->status));
	if (wc->status != ODPEMU_WC_SUCCESS)
		sq_error(s, q, wc->status);
	retire_wr(s, q, w, wc->status == ODPEMU_WC_SUCCESS);
}

/* ---- completions: receive queue ---- */

static void recv_release(struct sim *s, struct xrecv *r, bool keep)
{
	struct clientm *c = &s->clients[r->client];

	for (unsigned i = 0; i < r->nseg && !keep; i++)
		if (r->seg[i].mr >= 0)
			view_unknown(s, &c->mrs[r->seg[i].mr], r->seg[i].va, r->seg[i].len);
	host_busy_del(&c->mem, r);
	s->recv_completed++;
	xrecv_free(s, r);
}

/* A RECV that a message of the peer consumed, successfully. */
static void recv_check(struct sim *s, struct qpm *q, struct xrecv *r, const struct xwr *w,
		       const struct nic_wc *wc)
{
	struct clientm *c = &s->clients[r->client];
	bool imm = w->op == ODPEMU_WR_SEND_WITH_IMM || w->op == ODPEMU_WR_RDMA_WRITE_WITH_IMM;
	enum odpemu_wc_opcode op = w->op == ODPEMU_WR_RDMA_WRITE_WITH_IMM ? ODPEMU_WC_RECV_RDMA_WITH_IMM
									 : ODPEMU_WC_RECV;
	uint32_t off = 0;

	if (wc->opcode != op || wc->byte_len != w->len || !!(wc->wc_flags & NIC_WC_WITH_IMM) != imm ||
	    (imm && wc->imm_data != w->imm) ||
	    !!(wc->wc_flags & NIC_WC_WITH_INV) != (w->op == ODPEMU_WR_SEND_WITH_INV) ||
	    (w->op == ODPEMU_WR_SEND_WITH_INV && wc->imm_data != w->imm)) {
		sim_fail(s, "qp %u: RECV #%" PRIx64 " for %s len %u imm 0x%x: got opcode %s byte_len %u flags 0x%x imm 0x%x",
			 q->qpn, r->wr_id, op_str(w), w->len, w->imm, odpemu_wc_opcode_str(wc->opcode),
			 wc->byte_len, wc->wc_flags, wc->imm_data);
		return;
	}
	if (w->op == ODPEMU_WR_RDMA_WRITE_WITH_IMM)
		return;	/* the buffer is untouched (the memory check sees any stray byte) */
	for (unsigned i = 0; i < r->nseg && off < w->len; i++) {
		uint32_t n = w->len - off < r->seg[i].len ? w->len - off : r->seg[i].len;

		view_expect(s, &c->mrs[r->seg[i].mr], r->seg[i].va, w->data + off, n);
		off += n;
	}
	for (unsigned i = 0; i < r->nseg; i++)
		view_check(s, &c->mrs[r->seg[i].mr], r->seg[i].va, r->seg[i].len, "RECV landing");
}

static void ud_recv_check(struct sim *s, struct qpm *q, struct xrecv *r, const struct nic_wc *wc)
{
	struct clientm *c = &s->clients[r->client];
	const struct mrm *m = &c->mrs[r->seg[0].mr];
	uint32_t grh = wc->wc_flags & NIC_WC_GRH ? 40 : 0;
	uint8_t *buf;
	uint64_t id;
	struct udmsg *u;

	if (wc->status != ODPEMU_WC_SUCCESS || wc->byte_len < grh + 8 || wc->byte_len > r->cap) {
		sim_fail(s, "UD qp %u: RECV #%" PRIx64 " %s byte_len %u", q->qpn, r->wr_id,
			 odpemu_wc_status_str(wc->status), wc->byte_len);
		return;
	}
	view_read(s, m, r->seg[0].va + grh, &id, 8);
	if ((id >> 40) != 0x5544u || (id & (uint64_t)0xFFFFFFFFFF) >= s->nud) {
		sim_fail(s, "UD qp %u: RECV #%" PRIx64 " holds no message sent (id 0x%" PRIx64 ")", q->qpn, r->wr_id, id);
		return;
	}
	u = s->ud[id & (uint64_t)0xFFFFFFFFFF];
	buf = malloc(u->len);
	if (!buf)
		abort();
	view_read(s, m, r->seg[0].va + grh, buf, u->len);
	if (wc->byte_len - grh != u->len || memcmp(buf, u->data, u->len) || wc->src_qp != u->src_qpn)
		sim_fail(s, "UD qp %u: message %" PRIu64 " (len %u from qp %u) arrived as byte_len %u from qp %u%s",
			 q->qpn, id & (uint64_t)0xFFFFFFFFFF, u->len, u->src_qpn, wc->byte_len - grh, wc->src_qp,
			 memcmp(buf, u->data, u->len) ? ", bytes differ" : "");
	else if (u->bad_qkey)
		sim_fail(s, "UD qp %u: message %" PRIu64 " with a wrong Q_Key was received", q->qpn,
			 id & (uint64_t)0xFFFFFFFFFF);
	else if (++u->received > u->delivered)
		sim_fail(s, "UD qp %u: message %" PRIu64 " received %u times, delivered %u times", q->qpn,
			 id & (uint64_t)0xFFFFFFFFFF, u->received, u->delivered);
	free(buf);
	s->ud_recvs++;
}

static unsigned rq_allowed(const struct qpm *q, const struct xwr *w)
{
	unsigned a = w ? w->recv_ok : 0;

	if (q->rq_err)
		return ST(WR_FLUSH_ERR);
	if (q->flush_rq || q->rnr_retry < 7)
		a |= ST(WR_FLUSH_ERR);
	return a;
}

static void rq_complete(struct sim *s, struct simnic *n, const struct nic_wc *wc)
{
	struct qpm *q = qp_by_num(s, n->idx, wc->qp_num);
	struct xrecv *r = NULL;
	struct xwr *w;
	char a[160];

	if (!q) {
		sim_fail(s, "nic%d: RECV completion #%" PRIx64 " for unknown qp %u", n->idx, wc->wr_id, wc->qp_num);
		return;
	}
	if (wc->wr_id & WR_SRQ) {
		struct clientm *c = &s->clients[q->client];

		for (size_t i = 0; i < c->srq_recvs.n; i++)
			if (((struct xrecv *)fifo_peek(&c->srq_recvs, i))->wr_id == wc->wr_id) {
				r = fifo_peek(&c->srq_recvs, i);
				fifo_remove(&c->srq_recvs, i);
				break;
			}
	} else if ((r = fifo_peek(&q->rq, 0)) && r->wr_id == wc->wr_id) {
		fifo_pop(&q->rq);
	} else {
		r = NULL;
	}
	if (!r) {
		sim_fail(s, "qp %u: RECV completion #%" PRIx64 " (%s) is not the next posted RECV (twice, out of order, or never posted)",
			 q->qpn, wc->wr_id, odpemu_wc_status_str(wc->status));
		return;
	}
	if (r->ud) {
		ud_recv_check(s, q, r, wc);
		recv_release(s, r, false);
		return;
	}
	w = fifo_peek(&q->incoming, 0);
	if (!(rq_allowed(q, w) & status_bit(wc->status))) {
		sim_fail(s, "qp %u: RECV #%" PRIx64 " (cap %u) for %s #%" PRIx64 " len %u completed %s (vendor_err %s), model allows %s",
			 q->qpn, r->wr_id, r->cap, w ? op_str(w) : "no message", w ? w->wr_id : 0, w ? w->len : 0,
			 odpemu_wc_status_str(wc->status), nic_vendor_err_str(wc->vendor_err),
			 status_set_str(rq_allowed(q, w), a, sizeof(a)));
		return;
	}
	if (wc->status == ODPEMU_WC_SUCCESS)
		recv_check(s, q, r, w, wc);
	if (wc->status != ODPEMU_WC_WR_FLUSH_ERR) {
		fifo_pop(&q->incoming);	/* the message consumed this RECV */
		xwr_free(s, w);
	}
	if (wc->status != ODPEMU_WC_SUCCESS) {
		q->rq_err = true;
		q->flush_sq = q->flush_rq = true;
		model_doom(s, q);
	}
	recv_release(s, r, wc->status == ODPEMU_WC_SUCCESS);
}

static void dispatch(struct sim *s, struct simnic *n, const struct nic_wc *wc)
{
	struct qpm *q;

	sim_trace(s, "wc nic%d qp %u #%" PRIx64 " %s op %s len %u", n->idx, wc->qp_num, wc->wr_id,
		  odpemu_wc_status_str(wc->status), odpemu_wc_opcode_str(wc->opcode), wc->byte_len);
	if (wc->wr_id & WR_RECV) {
		rq_complete(s, n, wc);
		return;
	}
	q = qp_by_num(s, n->idx, wc->qp_num);
	if (!q || (wc->wr_id >> 40) != (uint64_t)q->idx) {
		sim_fail(s, "nic%d: send completion #%" PRIx64 " on qp %u, which did not post it", n->idx,
			 wc->wr_id, wc->qp_num);
		return;
	}
	sq_complete(s, q, wc);
}

void model_poll_all(struct sim *s)
{
	struct nic_wc wc[32];

	for (unsigned i = 0; i < s->cfg.nnics && !s->failed; i++)
		for (unsigned k = 0; k < 2 && !s->failed; k++) {
			int got;

			while (!s->failed && (got = nic_cq_poll(s->nics[i].cq[k], wc, 32)) > 0)
				for (int j = 0; j < got && !s->failed; j++)
					dispatch(s, &s->nics[i], &wc[j]);
			if (got < 0)
				sim_fail(s, "nic_cq_poll returned %d", got);
		}
}

bool model_quiet(const struct sim *s)
{
	for (unsigned i = 0; i < s->nqps; i++)
		if (s->qps[i].sq.n)
			return false;
	return pair_resets_idle(s);
}

/* ---- shared counters: linearizability of FETCH_ADD ---- */

/* Find a subset of the unused uncertain adds summing to gap; mark it used. */
static bool maybe_cover(struct counterm *k, uint64_t gap, unsigned *used)
{
	unsigned n = k->nmaybe;

	if (!gap)
		return true;
	for (unsigned mask = 1; mask < (1u << n); mask++) {
		uint64_t sum = 0;

		if (mask & *used)
			continue;
		for (unsigned i = 0; i < n; i++)
			if (mask & (1u << i))
				sum += k->maybe_add[i];
		if (sum == gap) {
			*used |= mask;
			return true;
		}
	}
	return false;
}

static int cmp_ops(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* With positive adds and no wrap, the linearization order is ascending returned value:
 * each op returns the previous op's result (uncertain flushed ops may sit in between). */
bool model_check_counters(struct sim *s)
{
	for (unsigned i = 0; i < s->ncounters; i++) {
		struct counterm *k = &s->counters[i];
		const struct mrm *m = &s->clients[k->client].mrs[k->mr];
		uint64_t v = k->initial, fin;
		unsigned used = 0;

		if (k->nops)
			qsort(k->ops, k->nops, sizeof(*k->ops), cmp_ops);
		for (size_t j = 0; j < k->nops; j++) {
			if (k->ops[j][0] < v || !maybe_cover(k, k->ops[j][0] - v, &used)) {
				sim_fail(s, "counter %u: FETCH_ADD results not linearizable: op %zu returned %" PRIu64
					 ", expected %" PRIu64 " (%zu ops, %u uncertain)", i, j, k->ops[j][0], v, k->nops, k->nmaybe);
				return false;
			}
			v = k->ops[j][0] + k->ops[j][1];
		}
		view_read(s, m, k->va, &fin, 8);
		if (fin < v || !maybe_cover(k, fin - v, &used)) {
			sim_fail(s, "counter %u: final value %" PRIu64 ", the %zu ops that completed give %" PRIu64,
				 i, fin, k->nops, v);
			return false;
		}
		free(k->ops);
		k->ops = NULL;
		k->nops = k->capops = 0;
	}
	return true;
}
