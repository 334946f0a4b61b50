/* SPDX-License-Identifier: MIT */
/*
 * The responder (IBA 9.7.4-9.7.5, rxe_resp.c is the model): PSN check, opcode sequence,
 * R_Key and access checks, execution through the IO page table, ACK/NAK generation and
 * duplicate handling (re-ACK; READ replay from the responder resources; atomic replay of
 * the saved original value without re-executing).
 *
 * ODP: a packet whose DMA misses raises a page fault and, per the QP's policy,
 *  - NIC_FAULT_STALL: is held, and every later packet of the QP queues behind it (bounded by
 *    cfg.stall_queue; beyond, packets drop and go-back-N recovers); when the fault is
 *    answered they run in order;
 *  - NIC_FAULT_RNR: is dropped after an RNR NAK with min_rnr_timer (ConnectX behaviour);
 *    the requester resends it after the timer.
 * A failed fault makes the retried DMA fail: NAK remote access error for R_Key targets;
 * for a receive buffer the receive completes LOC_PROT_ERR and the sender gets NAK remote
 * operational error (rxe's "class D1e" local error); the responder QP goes to ERR.
 *
 * UC runs SEND and WRITE through the same code, with its own sequence rules (uc.c) and no
 * answer of any kind: what RC NAKs UC drops (resp_err.h's uc column), an empty receive
 * queue drops the SEND, and a fault under the rnr policy drops the message.
 */
#include "nic_int.h"
#include "resp_err.h"

enum verdict {
	V_DONE,		/* consumed (executed, NAKed or dropped) */
	V_FAULT,	/* a page fault is outstanding: retry this packet later */
	V_RNR,		/* refused with an RNR NAK: not executed, the requester resends */
};

/* ---- sending answers ---- */

static void answer_hdr(const struct nic_qp *qp, struct roce_hdr *h, uint8_t opcode,
		       uint32_t psn, uint8_t syndrome, uint64_t atmack)
{
	memset(h, 0, sizeof(*h));
	h->bth.opcode = opcode;
	h->bth.pkey = ROCE_DEFAULT_PKEY;
	h->bth.dqpn = qp->attr.dest_qp_num;
	h->bth.psn = psn & ROCE_PSN_MASK;
	h->aeth.syndrome = syndrome;
	h->aeth.msn = qp->resp.msn;
	h->atmack = atmack;
}

static void answer(struct nic_qp *qp, uint8_t opcode, uint32_t psn, uint8_t syndrome,
		   const void *payload, uint32_t len, uint64_t atmack)
{
	struct nic_gid dst = nic_qp_dgid(qp);
	struct roce_hdr h;

	if (qp->type != ODPEMU_QPT_RC)
		return;		/* IBA 9.4: a UC responder never answers (callers know it) */
	answer_hdr(qp, &h, opcode, psn, syndrome, atmack);
	(void)nic_xmit(qp, &dst, &h, payload, len);
}

/* A READ response whose payload was gathered in place (nic_tx_payload). */
static void answer_in_place(struct nic_qp *qp, const struct roce_hdr *h, uint32_t len)
{
	struct nic_gid dst = nic_qp_dgid(qp);

	(void)nic_xmit_in_place(qp, &dst, h, len);
}

static void ack(struct nic_qp *qp, uint32_t psn)
{
	answer(qp, ROCE_OP_RC_ACKNOWLEDGE, psn, roce_syndrome_ack(ROCE_CREDIT_INVALID), NULL, 0, 0);
}

/* After an RNR NAK the packets behind it are dropped silently (no sequence NAK) until the
 * requester resends from the NAKed PSN (IBA 9.7.5.2.8). */
static enum verdict rnr_nak(struct nic_qp *qp, uint32_t psn)
{
	qp->ctr.rnr_naks_sent++;
	qp->resp.nak_sent = true;
	answer(qp, ROCE_OP_RC_ACKNOWLEDGE, psn, roce_syndrome_rnr_nak(qp->attr.min_rnr_timer),
	       NULL, 0, 0);
	return V_RNR;
}

/* The RNR NAK of an empty receive queue, counted apart from those of page faults. UC has
 * no RNR NAK: the message is dropped (IBA 9.4; rxe's class D for UC). */
static enum verdict no_wqe_nak(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	if (qp->type == ODPEMU_QPT_UC) {
		nic_uc_drop_msg(qp, pkt, NIC_DROP_UC_NO_WQE);
		return V_DONE;
	}
	qp->ctr.rnr_naks_no_wqe++;
	return rnr_nak(qp, pkt->h.bth.psn);
}

/* ---- the fault outcome of a DMA ---- */

/* Every responder DMA goes through the responder's fault slot. */
static struct nic_dma_ctx dma_ctx(struct nic_qp *qp)
{
	return nic_dma_ctx(qp, &qp->resp.fault);
}

/* The DMA raised a fault into the slot: retry this packet once it is answered. */
static enum verdict faulted(struct nic_qp *qp)
{
	qp->ctr.faults_resp++;
	return V_FAULT;
}

/* ---- R_Key targets ---- */

/* IBA 9.7.5.1.3 / 10.6.3.2: the key must name a live MR (or a bound window, 10.6.7.2.3)
 * of this QP's PD that allows the access, the QP must allow it, and [va, va+len) must lie
 * inside the MR or window. */
static struct nic_mr *rkey_target(struct nic_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
				  unsigned need)
{
	struct nic_mr *mr = nic_mr_lookup(qp->nic, rkey);

	if (!mr || mr->pd != qp->pd || mr->remote_invalid || !(mr->access & need) ||
	    mr->lease == NIC_LEASE_REVOKED || !nic_mw_reachable(mr, qp))
		return NULL;
	if (va < mr->va || va + len < va || va + len > mr->va + mr->len)
		return NULL;
	return mr;
}

/* ---- SEND ---- */

static bool take_rwqe(struct nic_qp *qp)
{
	bool ok = qp->srq ? nic_rq_take(&qp->srq->rq, &qp->resp.rwqe)
			  : nic_rq_take(&qp->rq, &qp->resp.rwqe);

	if (ok && qp->srq)
		nic_srq_check_limit(qp->srq);
	return ok;
}

/* A receive WQE for a WRITE_WITH_IMM: one already held (a UC SEND dropped part-way left it
 * for the next message, uc.c), else the next on the queue. */
static bool rwqe_available(const struct nic_qp *qp)
{
	if (qp->resp.rwqe_held)
		return true;
	return qp->srq ? qp->srq->rq.count > 0 : qp->rq.count > 0;
}

static void take_write_rwqe(struct nic_qp *qp)
{
	if (!qp->resp.rwqe_held)
		take_rwqe(qp);
}

static void complete_recv(struct nic_qp *qp, const struct roce_pkt *pkt,
			  enum odpemu_wc_status st, enum odpemu_wc_opcode op, uint32_t len,
			  unsigned verr)
{
	struct nic_wc wc = { .wr_id = qp->resp.rwqe.wr_id, .status = st, .opcode = op,
		.byte_len = len, .qp_num = qp->qpn, .vendor_err = verr,
		.src_qp = qp->attr.dest_qp_num };

	qp->resp.rwqe_held = false;
	if (pkt->mask & ROCE_M_IMMDT) {
		wc.wc_flags |= NIC_WC_WITH_IMM;
		wc.imm_data = pkt->h.imm;
	} else if (pkt->mask & ROCE_M_IETH) {
		wc.wc_flags |= NIC_WC_WITH_INV;
		wc.imm_data = pkt->h.ieth_rkey;
	}
	nic_recv_complete(qp, &wc, pkt->h.bth.se);
}

/* ---- refusing a request for good ---- */

#define RECV_NONE		(-1)
#define RECV_LOC_LEN_ERR	ODPEMU_WC_LOC_LEN_ERR
#define RECV_LOC_PROT_ERR	ODPEMU_WC_LOC_PROT_ERR
#define UC_ERR			(-1)
#define UC_ACCESS		NIC_DROP_UC_ACCESS
#define UC_INV_REQ		NIC_DROP_UC_INV_REQ

static const struct {
	enum roce_nak_code nak;
	int recv;			/* enum odpemu_wc_status, or RECV_NONE */
	enum nic_vendor_err verr;
	enum odpemu_event_type event;
	int uc_drop;			/* enum nic_drop_reason, or UC_ERR */
} resp_errors[] = {
#define RESP_ERR_ROW_(name, nak, recv, verr, event, cls, uc, rule) \
	[NIC_RERR_##name] = { ROCE_NAK_##nak, RECV_##recv, NIC_VERR_##verr, ODPEMU_EVENT_##event, \
			      UC_##uc },
	NIC_RESP_ERRORS(RESP_ERR_ROW_)
#undef RESP_ERR_ROW_
};

/* The one place a responder error takes effect (resp_err.h): the receive WQE being filled
 * completes with the row's status, the NAK goes out for psn, the QP's event is raised and
 * the QP goes to ERR (which flushes the rest). */
static enum verdict fail(struct nic_qp *qp, const struct roce_pkt *pkt, uint32_t psn,
			 enum nic_resp_err e)
{
	struct nic_resp *r = &qp->resp;

	if (qp->type == ODPEMU_QPT_UC && resp_errors[e].uc_drop != UC_ERR) {
		nic_uc_drop_msg(qp, pkt, (enum nic_drop_reason)resp_errors[e].uc_drop);
		return V_DONE;
	}
	if (resp_errors[e].recv != RECV_NONE && r->rwqe_held)
		complete_recv(qp, pkt, (enum odpemu_wc_status)resp_errors[e].recv, ODPEMU_WC_RECV,
			      (pkt->mask & ROCE_M_FIRST) ? 0 : r->recv_off, resp_errors[e].verr);
	answer(qp, ROCE_OP_RC_ACKNOWLEDGE, psn, roce_syndrome_nak(resp_errors[e].nak), NULL, 0,
	       0);
	nic_event(qp->nic, resp_errors[e].event, qp, NULL, NULL, NULL);
	nic_qp_to_err(qp);
	return V_DONE;
}

/* SEND_WITH_INVALIDATE (IBA 10.6.6.1): the named R_Key stops working for remote access. */
static bool invalidate_rkey(struct nic_qp *qp, uint32_t rkey)
{
	struct nic_mr *mr = nic_mr_lookup(qp->nic, rkey);

	if (!mr || mr->pd != qp->pd)
		return false;
	if (mr->window)
		return nic_mw_remote_invalidate(mr, qp);
	mr->remote_invalid = true;
	return true;
}

/* The receive WQE a SEND lands in: taken by its FIRST/ONLY packet and held by the QP until
 * it completes, also across a fault on that packet. Held, because a faulted DMA may have
 * placed some bytes already: on an SRQ another QP must not take that buffer (ConnectX
 * likewise owns a WQE once fetched). */
static const struct nic_rwqe *send_target(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	if ((pkt->mask & ROCE_M_FIRST) && !qp->resp.rwqe_held) {
		if (!take_rwqe(qp))
			return NULL;
		qp->resp.rwqe_held = true;
	}
	return &qp->resp.rwqe;
}

static enum verdict do_send(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	struct nic_resp *r = &qp->resp;
	uint32_t psn = pkt->h.bth.psn;
	const struct nic_rwqe *w = send_target(qp, pkt);
	uint32_t off = (pkt->mask & ROCE_M_FIRST) ? 0 : r->recv_off;
	struct nic_dma_ctx c = dma_ctx(qp);
	enum nic_dma_result res;

	if (!w)
		return no_wqe_nak(qp, pkt);	/* IBA 9.7.5.2.8: no receive WQE */
	if (off + pkt->payload_len > nic_sge_total(w->sge, w->num_sge))
		return fail(qp, pkt, psn, NIC_RERR_RECV_TOO_SMALL);
	res = nic_dma_sge(&c, w->sge, w->num_sge, off, (void *)pkt->payload, pkt->payload_len,
			  true);
	if (res == NIC_DMA_FAULT)
		return faulted(qp);
	if (res != NIC_DMA_OK)
		return fail(qp, pkt, psn, NIC_RERR_RECV_LOCAL);
	r->recv_off = off + pkt->payload_len;
	r->msg = (pkt->mask & ROCE_M_LAST) ? NIC_MSG_NONE : NIC_MSG_SEND;
	if (pkt->mask & ROCE_M_LAST) {
		if ((pkt->mask & ROCE_M_IETH) && !invalidate_rkey(qp, pkt->h.ieth_rkey))
			return fail(qp, pkt, psn, NIC_RERR_INVALIDATE);
		r->msn = (r->msn + 1) & ROCE_PSN_MASK;
		complete_recv(qp, pkt, ODPEMU_WC_SUCCESS, ODPEMU_WC_RECV, r->recv_off,
			      NIC_VERR_NONE);
	}
	return V_DONE;
}

/* ---- WRITE ---- */

/* Where this WRITE packet lands: the message in progress, or (FIRST/ONLY) a new one from
 * the RETH. false: the R_Key does not allow it (or no longer does). */
static bool write_target(struct nic_qp *qp, const struct roce_pkt *pkt, struct nic_write *ws)
{
	const struct roce_reth *reth = &pkt->h.reth;

	if (!(pkt->mask & ROCE_M_FIRST)) {
		*ws = qp->resp.write;
		return !ws->mr || (nic_mr_lookup(qp->nic, ws->key) == ws->mr &&
				   !ws->mr->remote_invalid && nic_mw_reachable(ws->mr, qp));
	}
	*ws = (struct nic_write){ .key = reth->rkey, .va = reth->va, .resid = reth->len,
		.total = reth->len };
	if (!reth->len)
		return true;
	ws->mr = rkey_target(qp, reth->rkey, reth->va, reth->len, ODPEMU_ACCESS_REMOTE_WRITE);
	return ws->mr != NULL;
}

static enum verdict do_write(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	struct nic_resp *r = &qp->resp;
	uint32_t psn = pkt->h.bth.psn, n = pkt->payload_len;
	struct nic_dma_ctx c = dma_ctx(qp);
	enum nic_dma_result res;
	struct nic_write ws;

	if ((pkt->mask & ROCE_M_RWQE) && !rwqe_available(qp))
		return no_wqe_nak(qp, pkt);	/* WRITE_WITH_IMM needs a receive WQE */
	if (!write_target(qp, pkt, &ws))
		return fail(qp, pkt, psn, NIC_RERR_RKEY);
	if (n > ws.resid)
		return fail(qp, pkt, psn, NIC_RERR_LENGTH);
	if (n) {
		res = nic_dma_mr(&c, ws.mr, ws.va, (void *)pkt->payload, n, true, IOPT_WRITE);
		if (res == NIC_DMA_FAULT)
			return faulted(qp);
		if (res != NIC_DMA_OK)
			return fail(qp, pkt, psn, NIC_RERR_HOST_FAULT);
	}
	r->write = (struct nic_write){ ws.mr, ws.key, ws.va + n, ws.resid - n, ws.total };
	r->msg = (pkt->mask & ROCE_M_LAST) ? NIC_MSG_NONE : NIC_MSG_WRITE;
	if (!(pkt->mask & ROCE_M_LAST))
		return V_DONE;
	if (r->write.resid)
		return fail(qp, pkt, psn, NIC_RERR_LENGTH);
	r->msn = (r->msn + 1) & ROCE_PSN_MASK;
	if (pkt->mask & ROCE_M_RWQE) {
		take_write_rwqe(qp);
		complete_recv(qp, pkt, ODPEMU_WC_SUCCESS, ODPEMU_WC_RECV_RDMA_WITH_IMM,
			      r->write.total, NIC_VERR_NONE);
	}
	return V_DONE;
}

/* ---- READ, atomics: responder resources ---- */

static struct nic_rsrc *rsrc_new(struct nic_qp *qp)
{
	struct nic_rsrc *s = &qp->resp.rsrc[qp->resp.rsrc_next];

	qp->resp.rsrc_next = (qp->resp.rsrc_next + 1) % qp->resp.nrsrc;
	memset(s, 0, sizeof(*s));
	return s;
}

static struct nic_rsrc *rsrc_find(struct nic_qp *qp, uint32_t psn, bool read)
{
	for (unsigned i = 0; i < qp->resp.nrsrc; i++) {
		struct nic_rsrc *s = &qp->resp.rsrc[i];

		if (!s->opcode || (s->opcode == ROCE_OP_RC_RDMA_READ_REQUEST) != read)
			continue;
		if (roce_psn_diff(psn, s->psn) >= 0 && roce_psn_diff(psn, s->last_psn) <= 0)
			return s;
	}
	return NULL;
}

static uint32_t read_npkts(const struct nic_qp *qp, uint32_t len)
{
	return len ? (len + qp->pmtu - 1) / qp->pmtu : 1;
}

/* Send the responses of READ resource s from psn on; V_FAULT when a page of what is left
 * is missing (nothing is sent then: the stream starts only once all of it translates). */
static enum verdict read_responses(struct nic_qp *qp, const struct roce_pkt *pkt,
				   const struct nic_rsrc *s, uint32_t psn)
{
	uint32_t k = (uint32_t)roce_psn_diff(psn, s->psn), n = read_npkts(qp, s->len);
	struct nic_mr *mr = nic_mr_lookup(qp->nic, s->rkey);
	struct nic_dma_ctx c = dma_ctx(qp);
	uint32_t off = k * qp->pmtu;
	enum nic_dma_result res;

	if (s->len && (!mr || mr->remote_invalid || !nic_mw_reachable(mr, qp)))
		return fail(qp, pkt, psn, NIC_RERR_RKEY);
	res = s->len ? nic_dma_probe(&c, mr, s->va + off, s->len - off, IOPT_READ) : NIC_DMA_OK;
	if (res == NIC_DMA_FAULT)
		return faulted(qp);
	if (res != NIC_DMA_OK)
		return fail(qp, pkt, psn, NIC_RERR_HOST_FAULT);
	for (; k < n; k++, off += qp->pmtu) {
		uint32_t len = s->len - off < qp->pmtu ? s->len - off : qp->pmtu;
		uint8_t op = n == 1 ? ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY :
			     k == 0 ? ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST :
			     k == n - 1 ? ROCE_OP_RC_RDMA_READ_RESPONSE_LAST :
			     ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;

		struct roce_hdr h;

		/* Gathered straight into the packet (the port's transmit slot). */
		answer_hdr(qp, &h, op, roce_psn_add(s->psn, k),
			   roce_syndrome_ack(ROCE_CREDIT_INVALID), 0);
		if (len && nic_dma_mr(&c, mr, s->va + off, nic_tx_payload(qp->nic, &h), len, false,
				      IOPT_READ) != NIC_DMA_OK)
			return fail(qp, pkt, roce_psn_add(s->psn, k), NIC_RERR_HOST_FAULT);
		answer_in_place(qp, &h, len);
	}
	return V_DONE;
}

static enum verdict do_read(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	const struct roce_reth *reth = &pkt->h.reth;
	uint32_t psn = pkt->h.bth.psn, n = read_npkts(qp, reth->len);
	struct nic_rsrc probe = { ROCE_OP_RC_RDMA_READ_REQUEST, psn, roce_psn_add(psn, n - 1),
		reth->va, reth->rkey, reth->len, 0, 0 };
	enum verdict v;

	if (reth->len && !rkey_target(qp, reth->rkey, reth->va, reth->len,
				      ODPEMU_ACCESS_REMOTE_READ))
		return fail(qp, pkt, psn, NIC_RERR_RKEY);
	v = read_responses(qp, pkt, &probe, psn);
	if (v == V_FAULT || qp->state == ODPEMU_QPS_ERR)
		return v;
	*rsrc_new(qp) = probe;
	qp->resp.msn = (qp->resp.msn + 1) & ROCE_PSN_MASK;
	qp->resp.epsn = roce_psn_add(psn, n);
	return V_DONE;
}

static enum verdict do_atomic(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	const struct roce_atmeth *a = &pkt->h.atmeth;
	bool write = pkt->h.bth.opcode == ROCE_OP_RC_ATOMIC_WRITE;
	uint64_t va = write ? pkt->h.reth.va : a->va, orig = 0, val = 0;
	uint32_t psn = pkt->h.bth.psn;
	struct nic_mr *mr = rkey_target(qp, write ? pkt->h.reth.rkey : a->rkey, va, 8,
		write ? ODPEMU_ACCESS_REMOTE_WRITE : ODPEMU_ACCESS_REMOTE_ATOMIC);
	struct nic_dma_ctx c = dma_ctx(qp);
	enum odpemu_wr_opcode op;
	enum nic_dma_result res;
	struct nic_rsrc *s;

	if (!mr || (va & 7))
		return fail(qp, pkt, psn, mr ? NIC_RERR_MISALIGNED : NIC_RERR_RKEY);
	if (write)
		memcpy(&val, pkt->payload, 8);	/* the 8 bytes land as sent */
	op = write ? ODPEMU_WR_ATOMIC_WRITE : pkt->h.bth.opcode == ROCE_OP_RC_COMPARE_SWAP ?
	     ODPEMU_WR_ATOMIC_CMP_AND_SWP : ODPEMU_WR_ATOMIC_FETCH_AND_ADD;
	/* AtomicETH: CmpSwap carries (swap, compare), FetchAdd carries the addend in swap_add. */
	res = nic_dma_atomic(&c, mr, va, op,
			     op == ODPEMU_WR_ATOMIC_FETCH_AND_ADD ? a->swap_add : a->compare,
			     write ? val : a->swap_add, &orig);
	if (res == NIC_DMA_FAULT)
		return faulted(qp);
	if (res != NIC_DMA_OK)
		return fail(qp, pkt, psn, NIC_RERR_HOST_FAULT);
	qp->resp.msn = (qp->resp.msn + 1) & ROCE_PSN_MASK;
	if (write) {
		ack(qp, psn);
		return V_DONE;
	}
	s = rsrc_new(qp);
	*s = (struct nic_rsrc){ pkt->h.bth.opcode, psn, psn, va, a->rkey, 8, orig, 0 };
	answer(qp, ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, psn, roce_syndrome_ack(ROCE_CREDIT_INVALID),
	       NULL, 0, orig);
	return V_DONE;
}

/* FLUSH (IBA Memory Placement Extensions): host memory is the placement target, so every
 * earlier write is already visible; check the target and answer. A range FLUSH on an ODP
 * MR first faults its pages in for read, as rxe does: a range the host unmapped fails
 * with a remote access error rather than reporting a placement that cannot exist. */
/* The access a FLUSH needs: one flag per placement type it asks for (rxe: both when both). */
static unsigned flush_access(uint8_t plt)
{
	return ((plt & ROCE_FLUSH_GLOBAL) ? ODPEMU_ACCESS_FLUSH_GLOBAL : 0) |
	       ((plt & ROCE_FLUSH_PERSISTENT) ? ODPEMU_ACCESS_FLUSH_PERSISTENT : 0);
}

/* The persistence half of a FLUSH (IBA 1.5 Memory Placement Extensions): the host makes
 * the range durable through its persist port, which may take milliseconds (an fdatasync):
 * the request then waits as behind a page fault (an RNR NAK under the rnr policy, the
 * packets held under stall) and its answer is read by PSN when the FLUSH comes again or
 * resumes. V_DONE: durable, acknowledge. */
static enum verdict flush_persist(struct nic_qp *qp, const struct roce_pkt *pkt,
				  const struct nic_mr *mr, bool whole)
{
	const struct nic_ports *p = &qp->nic->cfg.ports;
	struct nic_fault *f = &qp->resp.fault;
	uint32_t psn = pkt->h.bth.psn;
	uint64_t va = whole ? mr->va : pkt->h.reth.va;
	uint64_t len = whole ? mr->len : pkt->h.reth.len;
	uint64_t addr = va;
	int rc;

	if (!p->persist || !len || (whole && mr->implicit))
		return V_DONE;	/* no port, or the whole address space: see nic.h */
	if (f->persist_psn == psn &&
	    (f->persist == NIC_PERSIST_DONE || f->persist == NIC_PERSIST_FAILED)) {
		bool ok = f->persist == NIC_PERSIST_DONE;

		f->persist = NIC_PERSIST_NONE;
		return ok ? V_DONE : fail(qp, pkt, psn, NIC_RERR_PERSIST);
	}
	if (!mr->odp && nic_mr_host_of(mr, va, &addr))
		return fail(qp, pkt, psn, NIC_RERR_HOST_FAULT);
	if (f->state != NIC_SLOT_IDLE)
		return faulted(qp);	/* the slot is busy: come again */
	nic_fault_park(f, qp);
	f->persist = NIC_PERSIST_WAITING;
	f->persist_psn = psn;
	rc = p->persist(p->ctx, mr->client, mr->odp, addr, len, &f->waiter);
	if (rc == 1) {
		qp->ctr.persist_waits++;
		return faulted(qp);
	}
	f->persist = NIC_PERSIST_NONE;
	f->state = NIC_SLOT_IDLE;
	return rc == 0 ? V_DONE : fail(qp, pkt, psn, NIC_RERR_PERSIST);
}

static enum verdict do_flush(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	unsigned need = flush_access(pkt->h.feth.plt);
	bool whole = pkt->h.feth.sel == ROCE_FLUSH_SEL_MR;
	struct nic_mr *mr = nic_mr_lookup(qp->nic, pkt->h.reth.rkey);
	struct nic_dma_ctx c = dma_ctx(qp);
	enum nic_dma_result res = NIC_DMA_OK;

	if ((qp->attr.qp_access_flags & need) != need)
		return fail(qp, pkt, pkt->h.bth.psn, NIC_RERR_QP_ACCESS);
	if (!mr || mr->pd != qp->pd || (mr->access & need) != need || mr->remote_invalid ||
	    !nic_mw_reachable(mr, qp) ||
	    (!whole && !rkey_target(qp, pkt->h.reth.rkey, pkt->h.reth.va, pkt->h.reth.len, need)))
		return fail(qp, pkt, pkt->h.bth.psn, NIC_RERR_RKEY);
	if (!whole && pkt->h.reth.len)
		res = nic_dma_probe(&c, mr, pkt->h.reth.va, pkt->h.reth.len, IOPT_READ);
	if (res == NIC_DMA_FAULT)
		return faulted(qp);
	if (res != NIC_DMA_OK)
		return fail(qp, pkt, pkt->h.bth.psn, NIC_RERR_HOST_FAULT);
	if (pkt->h.feth.plt & ROCE_FLUSH_PERSISTENT) {
		enum verdict v = flush_persist(qp, pkt, mr, whole);

		if (v != V_DONE)
			return v;
	}
	qp->resp.msn = (qp->resp.msn + 1) & ROCE_PSN_MASK;
	ack(qp, pkt->h.bth.psn);
	return V_DONE;
}

/* ---- duplicates (IBA 9.7.5.1.4) ---- */

static enum verdict duplicate(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	uint32_t psn = pkt->h.bth.psn;
	struct nic_rsrc *s;

	qp->ctr.dup_requests++;
	switch (pkt->cls) {
	case ROCE_CLASS_READ:
		s = rsrc_find(qp, psn, true);
		return s ? read_responses(qp, pkt, s, psn) : V_DONE;
	case ROCE_CLASS_ATOMIC:
		s = rsrc_find(qp, psn, false);
		if (s)
			answer(qp, ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, psn,
			       roce_syndrome_ack(ROCE_CREDIT_INVALID), NULL, 0, s->orig);
		return V_DONE;
	default:
		/* SEND/WRITE/ATOMIC_WRITE/FLUSH: already executed; say so (rxe: ACK epsn-1). */
		if (pkt->h.bth.ackreq)
			ack(qp, roce_psn_add(qp->resp.epsn, ROCE_PSN_MASK));
		return V_DONE;
	}
}

/* ---- one packet ---- */

/* Opcode sequence (IBA 9.8.3.2): MIDDLE/LAST continue the message in progress; FIRST/ONLY
 * must not interrupt one. */
static bool sequence_ok(const struct nic_resp *r, const struct roce_pkt *pkt)
{
	bool cont = !(pkt->mask & ROCE_M_FIRST);

	switch (pkt->cls) {
	case ROCE_CLASS_SEND: return r->msg == (cont ? NIC_MSG_SEND : NIC_MSG_NONE);
	case ROCE_CLASS_WRITE: return r->msg == (cont ? NIC_MSG_WRITE : NIC_MSG_NONE);
	default: return r->msg == NIC_MSG_NONE;
	}
}

static enum verdict execute(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	if (!sequence_ok(&qp->resp, pkt))
		return fail(qp, pkt, pkt->h.bth.psn, NIC_RERR_OPCODE_SEQ);
	switch (pkt->cls) {
	case ROCE_CLASS_SEND: return do_send(qp, pkt);
	case ROCE_CLASS_WRITE: return do_write(qp, pkt);
	case ROCE_CLASS_READ: return do_read(qp, pkt);
	case ROCE_CLASS_ATOMIC: case ROCE_CLASS_ATOMIC_WRITE: return do_atomic(qp, pkt);
	case ROCE_CLASS_FLUSH: return do_flush(qp, pkt);
	default: return fail(qp, pkt, pkt->h.bth.psn, NIC_RERR_UNSUPPORTED);
	}
}

/* The device must implement the opcode: FLUSH (of each placement type it asks) and ATOMIC
 * WRITE are optional (IBA 1.5 Memory Placement Extensions), and a device without them
 * (mlx5) takes one for an opcode it does not support, an invalid request (IBA 9.9.3.1
 * class C; rxe's ERR_UNSUPPORTED_OPCODE). Both are RC-only opcodes: UC never sees them. */
static bool device_executes(const struct nic_qp *qp, const struct roce_pkt *pkt)
{
	uint64_t caps = qp->nic->attr.device_cap_flags;

	switch (pkt->cls) {
	case ROCE_CLASS_ATOMIC_WRITE:
		return caps & ODPEMU_DEVICE_ATOMIC_WRITE;
	case ROCE_CLASS_FLUSH:
		return (!(pkt->h.feth.plt & ROCE_FLUSH_GLOBAL) ||
			(caps & ODPEMU_DEVICE_FLUSH_GLOBAL)) &&
		       (!(pkt->h.feth.plt & ROCE_FLUSH_PERSISTENT) ||
			(caps & ODPEMU_DEVICE_FLUSH_PERSISTENT));
	default:
		return true;
	}
}

/* The QP must accept the operation class at all (IBA 10.2.4: remote access flags). */
static bool qp_allows(const struct nic_qp *qp, const struct roce_pkt *pkt)
{
	switch (pkt->cls) {
	case ROCE_CLASS_WRITE: case ROCE_CLASS_ATOMIC_WRITE:
		return qp->attr.qp_access_flags & ODPEMU_ACCESS_REMOTE_WRITE;
	case ROCE_CLASS_READ:
		return qp->attr.qp_access_flags & ODPEMU_ACCESS_REMOTE_READ;
	case ROCE_CLASS_ATOMIC:
		return qp->attr.qp_access_flags & ODPEMU_ACCESS_REMOTE_ATOMIC;
	default:
		return true;
	}
}

/* A request that cannot run yet, behind a fault: dropped behind the expected PSN under the
 * rnr policy (an RNR NAK for a fault, or a loss: it comes back with the requester's
 * resend), or held behind the head packet's fault under stall. Fault its RETH range in
 * now, unwatched (iopt_prefetch: missing pages only, one request per range, merged by the
 * page table), so that when it runs its pages are present: the faults of a window of cold
 * messages resolve together instead of one after the other (rnr: one RNR round per
 * message). MIDDLE and LAST packets carry no RETH; their FIRST's covered the message.
 * ConnectX does not do this. */
static void fault_ahead(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	const struct roce_reth *reth = &pkt->h.reth;
	bool write = pkt->cls == ROCE_CLASS_WRITE;
	struct nic_mr *mr;

	if (!(pkt->mask & ROCE_M_RETH) || !reth->len || (!write && pkt->cls != ROCE_CLASS_READ))
		return;
	mr = rkey_target(qp, reth->rkey, reth->va, reth->len,
			 write ? ODPEMU_ACCESS_REMOTE_WRITE : ODPEMU_ACCESS_REMOTE_READ);
	if (mr && mr->odp && iopt_prefetch(mr->iopt, reth->va, reth->len,
					   write ? IOPT_PREFETCH_WRITE : IOPT_PREFETCH,
					   qp->nic->now, NULL) == 0)
		qp->ctr.faults_ahead++;
}

/* NAK PSN sequence error for the expected PSN, once per gap (IBA 9.7.5.2.1): it also
 * acknowledges everything before it. */
static void seq_nak(struct nic_qp *qp)
{
	if (qp->resp.nak_sent || qp->type != ODPEMU_QPT_RC)
		return;
	qp->resp.nak_sent = true;
	qp->ctr.seq_naks_sent++;
	answer(qp, ROCE_OP_RC_ACKNOWLEDGE, qp->resp.epsn, roce_syndrome_nak(ROCE_NAK_PSN_SEQ_ERR),
	       NULL, 0, 0);
}

/* UC: its sequence rules (uc.c), then the same execution, and no answer. A packet retried
 * after a fault passes uc.c again unchanged (its PSN is still the expected one). */
static enum verdict process_uc(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	enum verdict v;

	if (!nic_uc_accept(qp, pkt))
		return V_DONE;
	if (!qp_allows(qp, pkt))
		return fail(qp, pkt, pkt->h.bth.psn, NIC_RERR_QP_ACCESS);
	v = execute(qp, pkt);
	if (v == V_DONE)
		qp->resp.epsn = roce_psn_next(pkt->h.bth.psn);
	return v;
}

static enum verdict process(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	struct nic_resp *r = &qp->resp;
	uint32_t psn = pkt->h.bth.psn;
	int32_t d = roce_psn_diff(psn, r->epsn);
	enum verdict v;

	if (qp->type == ODPEMU_QPT_UC)
		return process_uc(qp, pkt);
	if (d > 0) {		/* a gap: NAK once, then drop until the expected PSN comes */
		nic_drop(qp->nic, qp, NIC_DROP_SEQ_ERR_SILENT);
		if (qp->init.fault_policy == NIC_FAULT_RNR)
			fault_ahead(qp, pkt);
		seq_nak(qp);
		return V_DONE;
	}
	if (d < 0)
		return duplicate(qp, pkt);
	r->nak_sent = false;
	if (!device_executes(qp, pkt))
		return fail(qp, pkt, psn, NIC_RERR_UNSUPPORTED);
	if (!qp_allows(qp, pkt))
		return fail(qp, pkt, psn, NIC_RERR_QP_ACCESS);
	v = execute(qp, pkt);
	if (v != V_DONE || qp->state == ODPEMU_QPS_ERR)
		return v;
	if (pkt->cls == ROCE_CLASS_SEND || pkt->cls == ROCE_CLASS_WRITE) {
		r->epsn = roce_psn_next(psn);
		if (pkt->h.bth.ackreq)
			ack(qp, psn);
	} else if (pkt->cls != ROCE_CLASS_READ) {
		r->epsn = roce_psn_next(psn);	/* atomics, ATOMIC_WRITE, FLUSH: answered */
	}
	return v;
}

/* ---- the stall queue ---- */

/* A packet is 4 KiB or more: the queue grows on demand, by doubling, up to held_cap, so a
 * QP that never stalls holds none. The held packets move (their views re-pointed). */
static bool held_room(struct nic_resp *r)
{
	unsigned size;
	struct nic_held *h;

	if (r->nheld < r->held_size)
		return true;
	if (r->held_size >= r->held_cap)
		return false;
	size = r->held_size ? r->held_size * 2 : 8;
	if (size > r->held_cap)
		size = r->held_cap;
	if (!(h = malloc(size * sizeof(*h))))
		return false;		/* as a full queue: dropped, go-back-N recovers */
	for (unsigned i = 0; i < r->nheld; i++) {
		const struct nic_held *o = &r->held[(r->held_head + i) % r->held_size];

		memcpy(h[i].buf, o->buf, o->pkt.len);
		h[i].pkt = o->pkt;
		h[i].pkt.buf = h[i].buf;
		h[i].pkt.payload = h[i].buf + (o->pkt.payload - o->pkt.buf);
	}
	free(r->held);
	r->held = h;
	r->held_size = size;
	r->held_head = 0;
	return true;
}

static bool hold(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	struct nic_resp *r = &qp->resp;
	struct nic_held *h;

	if (!held_room(r)) {
		qp->ctr.stall_drops++;
		nic_drop(qp->nic, qp, NIC_DROP_STALL_FULL);
		r->stall_overflowed = true;
		return false;
	}
	h = &r->held[(r->held_head + r->nheld) % r->held_size];
	memcpy(h->buf, pkt->buf, pkt->len);
	h->pkt = *pkt;
	h->pkt.buf = h->buf;
	h->pkt.payload = h->buf + (pkt->payload - pkt->buf);
	r->nheld++;
	return true;
}

/* A fault on a packet, per policy. UC has no RNR NAK: under rnr the message is dropped, and
 * the fault, no longer watched, still fills the page table, so a later message lands. */
static void on_fault(struct nic_qp *qp, const struct roce_pkt *pkt, bool from_queue)
{
	if (qp->init.fault_policy == NIC_FAULT_RNR && qp->type == ODPEMU_QPT_UC) {
		nic_fault_cancel(&qp->resp.fault, &qp->nic->cfg.ports);
		nic_uc_drop_msg(qp, pkt, NIC_DROP_UC_FAULT);
		return;
	}
	if (qp->init.fault_policy == NIC_FAULT_RNR) {
		rnr_nak(qp, pkt->h.bth.psn);
		return;
	}
	qp->ctr.stalls++;
	if (!from_queue)
		hold(qp, pkt);
}

/* Is the head packet's fault still unanswered? (An answer is recorded in the slot.) */
static bool fault_pending(struct nic_qp *qp)
{
	return nic_fault_poll(&qp->resp.fault) == NIC_SLOT_WAITING;
}

void nic_resp_rx(struct nic_qp *qp, const struct roce_pkt *pkt, const struct nic_gid *src)
{
	(void)src;
	if (qp->type == ODPEMU_QPT_UD || !(pkt->mask & ROCE_M_REQ))
		return;
	if (qp->init.fault_policy == NIC_FAULT_STALL &&
	    (qp->resp.nheld || qp->resp.fault.state == NIC_SLOT_WAITING)) {
		if (hold(qp, pkt))	/* keep order behind the fault */
			fault_ahead(qp, pkt);
		nic_qp_schedule(qp);
		return;
	}
	if (qp->init.fault_policy == NIC_FAULT_RNR && qp->type == ODPEMU_QPT_RC &&
	    fault_pending(qp) && pkt->h.bth.psn == qp->resp.epsn) {
		rnr_nak(qp, pkt->h.bth.psn);	/* still resolving: ask again later */
		return;
	}
	if (process(qp, pkt) == V_FAULT)
		on_fault(qp, pkt, false);
}

/* Resume the packets held behind an answered fault, in order. */
void nic_resp_run(struct nic_qp *qp)
{
	struct nic_resp *r = &qp->resp;

	if (qp->state == ODPEMU_QPS_ERR || qp->state == ODPEMU_QPS_RESET) {
		r->nheld = 0;
		return;
	}
	while (r->nheld && !fault_pending(qp)) {
		const struct roce_pkt *pkt = &r->held[r->held_head].pkt;

		if (process(qp, pkt) == V_FAULT) {
			on_fault(qp, pkt, true);
			return;
		}
		if (qp->state == ODPEMU_QPS_ERR) {
			r->nheld = 0;
			return;
		}
		r->held_head = (r->held_head + 1) % r->held_size;
		r->nheld--;
	}
	if (!r->nheld && r->fault.state != NIC_SLOT_WAITING && r->stall_overflowed) {
		/* Packets beyond the queue were dropped and the requester may have nothing
		 * more in flight: ask for them now rather than after its ACK timeout, and
		 * acknowledge what the held packets did (else a small queue and a slow
		 * handler exhaust retry_cnt while every round makes progress). */
		r->stall_overflowed = false;
		seq_nak(qp);
	}
}
