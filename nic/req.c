/* SPDX-License-Identifier: MIT */
/*
 * The requester: turns send WQEs into request packets, in order, one PMTU at a time
 * (IBA 9.7.1-9.7.3; rxe_req.c is the model). A WQE gets its PSNs when its first packet goes
 * out (a READ takes max(1, ceil(len/PMTU)) PSNs, everything else one per packet) and keeps
 * them across retransmissions: go-back-N (nic_req_rewind) resends from a PSN with the same
 * numbering. The window is bounded by cfg.max_inflight packets and by max_rd_atomic
 * outstanding READ/atomic WQEs; a FENCE WQE waits for earlier READ/atomics.
 *
 * A page fault while gathering a local SGE parks the send queue on its fault slot and resumes
 * the same packet when the fault is answered; a failed fault completes the WQE with
 * LOC_PROT_ERR.
 *
 * UC (IBA 9.8.2) segments as RC does, with the UC opcodes, but nothing is acknowledged: no
 * AckReq, no ACK timer, no window, no retransmission; a WQE completes once its last packet
 * is sent. UD is one packet per WQE (send_ud).
 */
#include "nic_int.h"

/* Does the responder acknowledge this QP's requests (IBA 9.7.6)? RC only: UC (9.8.2) and UD
 * (9.8.1) send and forget. */
static bool acknowledged(const struct nic_qp *qp)
{
	return qp->type == ODPEMU_QPT_RC;
}

static bool is_read_or_atomic(enum odpemu_wr_opcode op)
{
	return odpemu_wr_props(op) & ODPEMU_WRP_RESPONSE;
}

/* Does the WQE's local data go out as its packets' payload? Else (READ, atomics, FLUSH) it
 * is one request with no payload (send_request). */
static bool sends_payload(const struct nic_swqe *w)
{
	return odpemu_wr_props(w->wr.opcode) & ODPEMU_WRP_PAYLOAD;
}

static uint32_t npkts_of(const struct nic_qp *qp, const struct nic_swqe *w)
{
	if (odpemu_wr_props(w->wr.opcode) & ODPEMU_WRP_ONE_PACKET)
		return 1;
	return w->length ? (w->length + qp->pmtu - 1) / qp->pmtu : 1;
}

/* The RC packet opcodes of a message of each WR opcode (the BTH opcodes, IBA 9.2): one
 * packet (only), or first, middle and last; immediate data and the rkey to invalidate ride
 * on the last packet, a write's RETH on the first. READ, atomics and FLUSH are one request
 * whatever their length (send_request). Indexed by a WQE's opcode, which post checked. */
#define RC_PACKETS_(op) { ROCE_OP_RC_##op##_ONLY, ROCE_OP_RC_##op##_FIRST, \
	ROCE_OP_RC_##op##_MIDDLE, ROCE_OP_RC_##op##_LAST }
static const struct rc_packets {
	uint8_t only, first, middle, last;
} rc_packets[ODPEMU_WR_ATOMIC_WRITE + 1] = {
	[ODPEMU_WR_RDMA_WRITE] = RC_PACKETS_(RDMA_WRITE),
	[ODPEMU_WR_RDMA_WRITE_WITH_IMM] = { ROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
		ROCE_OP_RC_RDMA_WRITE_FIRST, ROCE_OP_RC_RDMA_WRITE_MIDDLE,
		ROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE },
	[ODPEMU_WR_SEND] = RC_PACKETS_(SEND),
	[ODPEMU_WR_SEND_WITH_IMM] = { ROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE, ROCE_OP_RC_SEND_FIRST,
		ROCE_OP_RC_SEND_MIDDLE, ROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE },
	[ODPEMU_WR_SEND_WITH_INV] = { ROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE, ROCE_OP_RC_SEND_FIRST,
		ROCE_OP_RC_SEND_MIDDLE, ROCE_OP_RC_SEND_LAST_WITH_INVALIDATE },
	[ODPEMU_WR_RDMA_READ] = { .only = ROCE_OP_RC_RDMA_READ_REQUEST },
	[ODPEMU_WR_ATOMIC_CMP_AND_SWP] = { .only = ROCE_OP_RC_COMPARE_SWAP },
	[ODPEMU_WR_ATOMIC_FETCH_AND_ADD] = { .only = ROCE_OP_RC_FETCH_ADD },
	[ODPEMU_WR_FLUSH] = { .only = ROCE_OP_RC_FLUSH },
	[ODPEMU_WR_ATOMIC_WRITE] = { .only = ROCE_OP_RC_ATOMIC_WRITE },
};

/* The opcode byte's bits 7:5 name the transport (IBA 9.2, table 35), and the UC sends and
 * writes have the RC operation codes in bits 4:0: a UC packet is its RC twin with the UC
 * transport bits. */
static uint8_t transport_opcode(const struct nic_qp *qp, uint8_t rc_opcode)
{
	if (qp->type != ODPEMU_QPT_UC)
		return rc_opcode;
	return (uint8_t)((ROCE_UC << 5) | (rc_opcode & 0x1F));
}

/* Opcode of the packet at byte offset off of a message that sends its payload. */
static uint8_t seg_opcode(const struct nic_qp *qp, const struct nic_swqe *w, uint32_t off,
			  uint32_t n)
{
	const struct rc_packets *p = &rc_packets[w->wr.opcode];
	bool first = off == 0, last = off + n == w->length;

	return transport_opcode(qp, first && last ? p->only : first ? p->first :
				    last ? p->last : p->middle);
}

/* A packet of h's PSN went out: move the send PSN and the highest PSN sent past it. */
static void sent(struct nic_qp *qp, const struct roce_hdr *h)
{
	uint32_t next = roce_psn_next(h->bth.psn);

	if (roce_psn_diff(next, qp->req.psn) > 0)
		qp->req.psn = next;
	if (roce_psn_diff(next, qp->req.max_sent) > 0)
		qp->req.max_sent = next;
}

static void xmit(struct nic_qp *qp, const struct roce_hdr *h, const void *payload, uint32_t n)
{
	struct nic_gid dst = nic_qp_dgid(qp);

	(void)nic_xmit(qp, &dst, h, payload, n);	/* only fails on a bug: sizes are ours */
	sent(qp, h);
}

/* The same for a payload gathered in place (nic_tx_payload). */
static void xmit_in_place(struct nic_qp *qp, const struct roce_hdr *h, uint32_t n)
{
	struct nic_gid dst = nic_qp_dgid(qp);

	(void)nic_xmit_in_place(qp, &dst, h, n);
	sent(qp, h);
}

static void base_hdr(const struct nic_qp *qp, struct roce_hdr *h, uint8_t opcode, uint32_t psn)
{
	memset(h, 0, sizeof(*h));
	h->bth.opcode = opcode;
	h->bth.pkey = ROCE_DEFAULT_PKEY;
	h->bth.dqpn = qp->attr.dest_qp_num;
	h->bth.psn = psn & ROCE_PSN_MASK;
}

/* Gather n bytes of w at off into buf (inline data or local SGEs). */
static enum nic_dma_result gather(struct nic_qp *qp, struct nic_swqe *w, uint32_t off,
				  uint8_t *buf, uint32_t n)
{
	struct nic_dma_ctx c = nic_dma_ctx(qp, &qp->req.fault);
	enum nic_dma_result res;

	if (w->wr.send_flags & ODPEMU_SEND_INLINE) {
		memcpy(buf, w->inline_data + off, n);
		return NIC_DMA_OK;
	}
	res = nic_dma_sge(&c, w->wr.sg_list, w->wr.num_sge, off, buf, n, false);
	if (res == NIC_DMA_FAULT)
		qp->ctr.faults_req++;
	return res;
}

static void arm_ack_timer(struct nic_qp *qp)
{
	if (acknowledged(qp) && qp->comp.ack_deadline == UINT64_MAX) {
		qp->comp.ack_deadline = qp->nic->now + nic_ack_timeout_ns(qp->attr.timeout);
		nic_timer_arm(qp, qp->comp.ack_deadline);
	}
}

/* A local DMA error: the WQE completes with LOC_PROT_ERR (the QP goes to ERR). */
static void local_error(struct nic_qp *qp, struct nic_swqe *w, enum nic_dma_result res)
{
	nic_swqe_complete(qp, w, ODPEMU_WC_LOC_PROT_ERR, nic_dma_verr(res));
}

/* Gather, or stop: a fault parks the queue (resumed by the waiter), an error completes w. */
static bool gather_ok(struct nic_qp *qp, struct nic_swqe *w, uint32_t off, uint8_t *buf,
		      uint32_t n)
{
	enum nic_dma_result res = gather(qp, w, off, buf, n);

	if (res != NIC_DMA_OK && res != NIC_DMA_FAULT)
		local_error(qp, w, res);
	return res == NIC_DMA_OK;
}

static bool may_start(const struct nic_qp *qp, const struct nic_swqe *w);

/* Will the engine send another WQE right after the one at sq.next? Then that one's last
 * packet may leave the ACK to it. (A gather fault on the next WQE is not foreseen: its
 * ACK then waits for the fault, or for the ACK timer.) */
static bool more_follows(const struct nic_qp *qp)
{
	return qp->sq.next + 1 < qp->sq.tail && may_start(qp, nic_sq_at(&qp->sq, qp->sq.next + 1));
}

/* Send the next packet of a SEND/WRITE/ATOMIC_WRITE. false: stopped (fault or error). */
static bool send_segment(struct nic_qp *qp, struct nic_swqe *w)
{
	uint32_t off = w->sent, n = w->length - off < qp->pmtu ? w->length - off : qp->pmtu;
	uint32_t k = off / qp->pmtu, psn = roce_psn_add(w->first_psn, k);
	uint8_t op = seg_opcode(qp, w, off, n);
	struct roce_hdr h;

	/* Gathered straight into the packet (the port's transmit slot). */
	base_hdr(qp, &h, op, psn);
	if (!gather_ok(qp, w, off, nic_tx_payload(qp->nic, &h), n))
		return false;
	h.bth.se = (w->wr.send_flags & ODPEMU_SEND_SOLICITED) && off + n == w->length;
	/* AckReq: at the end of the last message the engine has to send (a post list shares
	 * one), every NIC_ACKREQ_EVERY packets, and when this packet fills the window (else
	 * a small window would stall waiting for an ACK nobody asked for). */
	h.bth.ackreq = acknowledged(qp) &&
		       ((off + n == w->length && !more_follows(qp)) ||
			++qp->req.noack >= NIC_ACKREQ_EVERY ||
			(uint32_t)roce_psn_diff(roce_psn_next(psn), qp->comp.una) >=
			qp->nic->cfg.max_inflight);
	if (h.bth.ackreq)
		qp->req.noack = 0;
	if (roce_opcode_table[op].mask & ROCE_M_RETH)
		h.reth = (struct roce_reth){ w->wr.remote_addr, w->wr.rkey, w->length };
	h.imm = w->wr.imm_data;
	h.ieth_rkey = w->wr.imm_data;
	xmit_in_place(qp, &h, n);
	return true;
}

/* Requests with no local data: READ (for the part not yet answered), atomics, FLUSH. */
static void send_request(struct nic_qp *qp, struct nic_swqe *w)
{
	uint32_t k = w->sent / qp->pmtu, psn = roce_psn_add(w->first_psn, k);
	struct roce_hdr h;

	base_hdr(qp, &h, rc_packets[w->wr.opcode].only, psn);
	h.bth.ackreq = true;
	qp->req.noack = 0;
	h.reth = (struct roce_reth){ w->wr.remote_addr + w->sent, w->wr.rkey, w->length - w->sent };
	h.atmeth = (struct roce_atmeth){ w->wr.remote_addr, w->wr.rkey, w->wr.compare_add,
		w->wr.swap };
	if (w->wr.opcode == ODPEMU_WR_ATOMIC_CMP_AND_SWP) {
		h.atmeth.swap_add = w->wr.swap;
		h.atmeth.compare = w->wr.compare_add;
	}
	h.feth = (struct roce_feth){ w->wr.flush_level, w->wr.flush_type };
	xmit(qp, &h, NULL, 0);
}

/* UD: one packet per WQE, completed once sent (IBA 9.8: unreliable, no ACK). */
static bool send_ud(struct nic_qp *qp, struct nic_swqe *w)
{
	uint8_t buf[NIC_PKT_MAX];
	struct roce_hdr h;

	if (!gather_ok(qp, w, 0, buf, w->length))
		return false;
	memset(&h, 0, sizeof(h));
	h.bth.opcode = odpemu_wr_props(w->wr.opcode) & ODPEMU_WRP_IMM ?
		       ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE : ROCE_OP_UD_SEND_ONLY;
	h.bth.pkey = ROCE_DEFAULT_PKEY;
	h.bth.dqpn = w->wr.remote_qpn;
	h.bth.psn = qp->req.psn;
	h.bth.se = w->wr.send_flags & ODPEMU_SEND_SOLICITED;
	/* IBA 10.2.5: a WR Q_Key with the high bit set means "use the QP's Q_Key". */
	h.deth.qkey = (w->wr.remote_qkey & 0x80000000u) ? qp->attr.qkey : w->wr.remote_qkey;
	h.deth.sqpn = qp->qpn;
	h.imm = w->wr.imm_data;
	nic_xmit(qp, &w->wr.ud_dgid, &h, buf, w->length);
	qp->req.psn = roce_psn_next(qp->req.psn);
	return true;
}

/* May w start now? Window, READ/atomic credits, fence. */
static bool may_start(const struct nic_qp *qp, const struct nic_swqe *w)
{
	unsigned max_rd = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;

	if (w->psn_assigned)
		return true;
	if (qp->state == ODPEMU_QPS_SQD)
		return false;	/* SQD: finish what was started, start nothing new */
	if ((w->wr.send_flags & ODPEMU_SEND_FENCE) && qp->req.rd_atomic_out)
		return false;
	if (is_read_or_atomic(w->wr.opcode) && qp->req.rd_atomic_out >= max_rd)
		return false;
	return true;
}

/* UC and UD have no acknowledgements, so no window: una never moves there. During a
 * resend the next PSN may fall behind una (an ACK for the original overtook the resend):
 * open. */
static bool window_open(const struct nic_qp *qp)
{
	if (!acknowledged(qp))
		return true;
	return roce_psn_diff(qp->req.psn, qp->comp.una) < (int32_t)qp->nic->cfg.max_inflight;
}

/* A new WQE numbers on from the highest PSN ever sent, not from the send PSN: during a
 * go-back-N resend the send PSN is behind, and an answer for the original transmission may
 * complete every WQE up to the new one (an atomic ACK or READ response completes its WQE
 * whatever resends are under way), moving sq.next past the resend. Numbering from there
 * would reuse PSNs the responder already executed: it would take the new requests for
 * duplicates and ACK them unexecuted (IBA 9.7.5.1.4), a silent loss. Every WQE before w
 * was sent whole, so max_sent is the end of the last one. */
static void assign_psns(struct nic_qp *qp, struct nic_swqe *w)
{
	qp->req.psn = qp->req.max_sent;
	w->first_psn = qp->req.psn;
	w->npkts = npkts_of(qp, w);
	w->psn_assigned = true;
	w->sent = w->landed = 0;
	if (is_read_or_atomic(w->wr.opcode))
		qp->req.rd_atomic_out++;
}

/* Send what w still has to send; false when the queue must stop here (window full, fault,
 * error). */
static bool send_wqe(struct nic_qp *qp, struct nic_swqe *w)
{
	uint32_t end = roce_psn_add(w->first_psn, w->npkts);

	w->state = NIC_SWQE_SENDING;
	if (!sends_payload(w)) {
		send_request(qp, w);
		w->sent = w->length;
	} else {
		do {
			if (!window_open(qp) || !send_segment(qp, w))
				return false;
			w->sent += w->length - w->sent < qp->pmtu ? w->length - w->sent : qp->pmtu;
			arm_ack_timer(qp);
		} while (w->sent < w->length);
	}
	if (roce_psn_diff(end, qp->req.psn) > 0)
		qp->req.psn = end;
	if (roce_psn_diff(end, qp->req.max_sent) > 0)
		qp->req.max_sent = end;
	w->state = NIC_SWQE_SENT;
	arm_ack_timer(qp);
	return true;
}

/* The requester holds back outside RTS/SQD, while its own or the completer's fault is out
 * (a landing fault asks for the answer again once resolved: resending before that only
 * repeats the miss), and during an RNR wait. */
static bool requester_blocked(struct nic_qp *qp)
{
	if (qp->state != ODPEMU_QPS_RTS && qp->state != ODPEMU_QPS_SQD)
		return true;
	if (nic_fault_poll(&qp->req.fault) == NIC_SLOT_WAITING ||
	    nic_fault_poll(&qp->comp.fault) == NIC_SLOT_WAITING)
		return true;
	return qp->comp.wait == NIC_REQ_RNR_TIMER;
}

/* A local operation (IBA 10.6.7: BIND_MW, LOCAL_INV) runs when the requester reaches it,
 * after the WQEs before it were sent, as rxe's; a FENCE one waits for READ/atomics. A
 * failure completes it in error (the QP goes to ERR). */
static bool run_local(struct nic_qp *qp, struct nic_swqe *w)
{
	enum odpemu_wc_status st;

	if (qp->state == ODPEMU_QPS_SQD ||
	    ((w->wr.send_flags & ODPEMU_SEND_FENCE) && qp->req.rd_atomic_out))
		return false;
	qp->sq.next++;	/* before completing: retirement moves next too */
	if (w->wr.opcode == ODPEMU_WR_BIND_MW)
		st = nic_mw_bind_wqe(qp, &w->wr);
	else
		st = nic_local_inv_wqe(qp, w->wr.imm_data);
	nic_swqe_complete(qp, w, st, st == ODPEMU_WC_SUCCESS ? NIC_VERR_NONE :
			  w->wr.opcode == ODPEMU_WR_BIND_MW ? NIC_VERR_MW_BIND : NIC_VERR_LOCAL_INV);
	return true;
}

void nic_req_run(struct nic_qp *qp)
{
	if (requester_blocked(qp))
		return;
	if (qp->comp.wait == NIC_REQ_GO_BACK) {
		qp->comp.wait = NIC_REQ_READY;
		nic_req_rewind(qp, qp->comp.resume_psn);
	}
	for (unsigned n = 0; qp->sq.next < qp->sq.tail && n < 4096; n++) {
		struct nic_swqe *w = nic_sq_at(&qp->sq, qp->sq.next);

		if (w->state == NIC_SWQE_DONE) {
			qp->sq.next++;
			continue;
		}
		if (odpemu_wr_props(w->wr.opcode) & ODPEMU_WRP_LOCAL) {
			if (!run_local(qp, w) || qp->state == ODPEMU_QPS_ERR)
				return;
			continue;
		}
		if (!may_start(qp, w) || !window_open(qp))
			return;
		if (qp->type == ODPEMU_QPT_UD) {
			if (!send_ud(qp, w))
				return;
			qp->sq.next++;	/* before completing: retirement moves next too */
			nic_swqe_complete(qp, w, ODPEMU_WC_SUCCESS, NIC_VERR_NONE);
			continue;
		}
		if (!w->psn_assigned)
			assign_psns(qp, w);
		if (!send_wqe(qp, w))
			return;
		qp->sq.next++;
		/* IBA 9.8.2: a UC WQE is done when its last packet is on the wire */
		if (!acknowledged(qp))
			nic_swqe_complete(qp, w, ODPEMU_WC_SUCCESS, NIC_VERR_NONE);
	}
	if (qp->sq.next < qp->sq.tail)
		nic_qp_schedule(qp);	/* more to do: yield to other QPs */
}

/* Go-back-N: resend from psn (the oldest PSN the responder has not executed). The WQE
 * holding psn resumes at the matching offset (a READ reissues the unanswered part); the
 * WQEs after it resend whole. */
void nic_req_rewind(struct nic_qp *qp, uint32_t psn)
{
	for (uint64_t i = qp->sq.head; i < qp->sq.tail; i++) {
		struct nic_swqe *w = nic_sq_at(&qp->sq, i);
		int32_t d;

		if (w->state == NIC_SWQE_DONE || !w->psn_assigned)
			continue;
		d = roce_psn_diff(psn, w->first_psn);
		if (d >= (int32_t)w->npkts)
			continue;
		if (d < 0)
			d = 0;
		qp->sq.next = i;
		qp->req.psn = roce_psn_add(w->first_psn, (uint32_t)d);
		qp->ctr.retransmits++;
		for (uint64_t j = i; j < qp->sq.tail; j++) {
			struct nic_swqe *v = nic_sq_at(&qp->sq, j);

			if (v->state == NIC_SWQE_DONE || !v->psn_assigned)
				continue;
			v->state = NIC_SWQE_SENDING;
			if (v->wr.opcode == ODPEMU_WR_RDMA_READ)
				v->sent = v->landed;	/* reissue the unanswered part */
			else if (j == i && sends_payload(v))
				v->sent = (uint32_t)d * qp->pmtu;
			else
				v->sent = 0;
		}
		nic_qp_schedule(qp);
		return;
	}
}
