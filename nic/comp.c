/* SPDX-License-Identifier: MIT */
/*
 * The completer: ACKs, NAKs, READ responses and atomic ACKs against the send queue, the
 * ACK timer and the RNR timer (IBA 9.7.5.2, rxe_comp.c is the model).
 *  - A response for PSN p implies every request before p was executed: SEND/WRITE-like
 *    WQEs before p complete; a READ/atomic before p that got no answer lost its response,
 *    so the requester goes back to it (rxe's implicit NAK).
 *  - NAK PSN-sequence error and the ACK timer resend from the oldest unacknowledged PSN and
 *    spend retry_cnt; RNR NAK waits the advertised timer and spends rnr_retry (7: forever).
 *  - NAK invalid request / remote access / remote operational error complete the WQE with
 *    REM_INV_REQ_ERR / REM_ACCESS_ERR / REM_OP_ERR and move the QP to ERR.
 * Completed WQEs retire in order (nic_comp_retire), producing CQEs for signaled WRs and
 * for every error.
 */
#include "nic_int.h"

/* What an ACK completes: everything but the requests answered with data. */
static bool acked_by_ack(enum odpemu_wr_opcode op)
{
	return !(odpemu_wr_props(op) & ODPEMU_WRP_RESPONSE);
}

static uint32_t last_psn(const struct nic_swqe *w)
{
	return roce_psn_add(w->first_psn, w->npkts - 1);
}

static void update_timer(struct nic_qp *qp)
{
	struct nic_comp *c = &qp->comp;

	c->ack_deadline = c->una == qp->req.max_sent ? UINT64_MAX
			: qp->nic->now + nic_ack_timeout_ns(qp->attr.timeout);
	if (c->ack_deadline != UINT64_MAX)
		nic_timer_arm(qp, c->ack_deadline);
}

/* Progress: the responder has executed everything before psn. */
static void advance_una(struct nic_qp *qp, uint32_t psn)
{
	if (roce_psn_diff(psn, qp->comp.una) > 0) {
		qp->comp.una = psn;
		qp->comp.retry_left = qp->attr.retry_cnt;
		qp->comp.rnr_left = qp->attr.rnr_retry;
		nic_qp_schedule(qp);	/* the window opened: the requester may go on */
	}
	update_timer(qp);
}

/* Complete the ACK-completed WQEs wholly before psn; stop at a READ/atomic that has no
 * answer (returns it: its response was lost). */
static struct nic_swqe *complete_before(struct nic_qp *qp, uint32_t psn)
{
	for (uint64_t i = qp->sq.head; i < qp->sq.tail; i++) {
		struct nic_swqe *w = nic_sq_at(&qp->sq, i);

		if (w->state == NIC_SWQE_DONE)
			continue;
		if (!w->psn_assigned || roce_psn_diff(last_psn(w), psn) >= 0)
			return NULL;
		if (!acked_by_ack(w->wr.opcode))
			return w;
		nic_swqe_complete(qp, w, ODPEMU_WC_SUCCESS, NIC_VERR_NONE);
	}
	return NULL;
}

/* The not-done WQE whose PSN range holds psn. */
static struct nic_swqe *wqe_of(struct nic_qp *qp, uint32_t psn)
{
	for (uint64_t i = qp->sq.head; i < qp->sq.tail; i++) {
		struct nic_swqe *w = nic_sq_at(&qp->sq, i);
		int32_t d;

		if (w->state == NIC_SWQE_DONE || !w->psn_assigned)
			continue;
		d = roce_psn_diff(psn, w->first_psn);
		if (d >= 0 && d < (int32_t)w->npkts)
			return w;
	}
	return NULL;
}

/* Have the requester resend from psn. Two reasons before it runs (or during an RNR wait,
 * whose timer then resends) go back to the older PSN: resending more is always safe,
 * resending less loses the older gap until the ACK timer. */
static void go_back(struct nic_qp *qp, uint32_t psn)
{
	struct nic_comp *c = &qp->comp;

	if (c->wait == NIC_REQ_READY || roce_psn_diff(psn, c->resume_psn) < 0)
		c->resume_psn = psn;
	if (c->wait == NIC_REQ_READY)
		c->wait = NIC_REQ_GO_BACK;
	nic_qp_schedule(qp);
}

/* A READ or atomic answer is missing: resend from psn, once per psn. Every later answer
 * still arriving from the first stream shows the same gap; resending for each multiplies
 * the stream (rxe resends each time, fine on its in-order links, a storm once packets
 * reorder). A lost re-request is the ACK timer's to repeat. */
static void ask_again(struct nic_qp *qp, uint32_t psn)
{
	if (qp->comp.gap_asked && qp->comp.gap_psn == psn)
		return;
	qp->comp.gap_asked = true;
	qp->comp.gap_psn = psn;
	go_back(qp, psn);
}

/* The PSN the requester still needs an answer for, inside a READ (its next response). */
static uint32_t read_resume_psn(const struct nic_qp *qp, const struct nic_swqe *w)
{
	return roce_psn_add(w->first_psn, w->landed / qp->pmtu);
}

/* The first completion after an error must carry its cause: without a WQE holding the
 * PSN, the oldest outstanding WQE takes it. */
static void fail_wqe(struct nic_qp *qp, struct nic_swqe *w, enum odpemu_wc_status st,
		     unsigned verr)
{
	for (uint64_t i = qp->sq.head; !w && i < qp->sq.tail; i++)
		if (nic_sq_at(&qp->sq, i)->state != NIC_SWQE_DONE)
			w = nic_sq_at(&qp->sq, i);
	if (w)
		nic_swqe_complete(qp, w, st, verr);
	else
		nic_qp_to_err(qp);
}

/* What a fatal NAK completes the requester's WQE with (IBA 9.7.5.2.3; the responder's side
 * of the same errors is resp_err.h). */
static const struct {
	enum odpemu_wc_status status;
	enum nic_vendor_err verr;
} nak_outcome[] = {
	[ROCE_NAK_INVALID_REQ] = { ODPEMU_WC_REM_INV_REQ_ERR, NIC_VERR_NAK_INV_REQ },
	[ROCE_NAK_REMOTE_ACCESS] = { ODPEMU_WC_REM_ACCESS_ERR, NIC_VERR_NAK_ACCESS },
	[ROCE_NAK_REMOTE_OP] = { ODPEMU_WC_REM_OP_ERR, NIC_VERR_NAK_OP },
};

static void on_nak(struct nic_qp *qp, uint32_t psn, uint8_t syn)
{
	struct nic_swqe *w = wqe_of(qp, psn);
	unsigned code = roce_syndrome_value(syn);

	if (code == ROCE_NAK_PSN_SEQ_ERR) {
		qp->ctr.seq_naks_received++;
		if (qp->comp.wait == NIC_REQ_RNR_TIMER)
			return;	/* packets sent behind the RNR-NAKed one: the timer resends */
		advance_una(qp, psn);
		if (qp->comp.retry_left == 0)
			return fail_wqe(qp, w, ODPEMU_WC_RETRY_EXC_ERR, NIC_VERR_RETRY_EXC);
		qp->comp.retry_left--;
		return go_back(qp, psn);
	}
	if (code >= sizeof(nak_outcome) / sizeof(nak_outcome[0]) || !nak_outcome[code].status)
		code = ROCE_NAK_REMOTE_OP;	/* reserved codes: a remote operational error */
	fail_wqe(qp, w, nak_outcome[code].status, nak_outcome[code].verr);
}

static void on_rnr(struct nic_qp *qp, uint32_t psn, uint8_t syn)
{
	struct nic_swqe *w = wqe_of(qp, psn);

	qp->ctr.rnr_naks_received++;
	advance_una(qp, psn);
	if (qp->attr.rnr_retry != 7) {
		if (qp->comp.rnr_left == 0)
			return fail_wqe(qp, w, ODPEMU_WC_RNR_RETRY_EXC_ERR, NIC_VERR_RNR_EXC);
		qp->comp.rnr_left--;
	}
	/* The NAKed request resends after the timer; everything before it was executed. */
	qp->comp.wait = NIC_REQ_RNR_TIMER;
	qp->comp.resume_psn = psn;
	qp->comp.ack_deadline = UINT64_MAX;
	qp->comp.rnr_deadline = qp->nic->now +
		1000ull * roce_rnr_timer_us(roce_syndrome_value(syn));
	nic_timer_arm(qp, qp->comp.rnr_deadline);
}

/* The first landing fault of a READ prefetches the rest of its local buffer: the READ is
 * asked for again from the faulting packet once the fault is answered, and every later
 * fault-around window missing would cost one more resent response stream (8 MiB into
 * untouched memory: 129 faults, each resending the rest of the READ). */
static void prefetch_rest(struct nic_qp *qp, struct nic_swqe *w, uint32_t from)
{
	if (w->wr.opcode != ODPEMU_WR_RDMA_READ || w->rest_prefetched || from >= w->length)
		return;
	w->rest_prefetched = true;
	qp->ctr.faults_ahead += nic_dma_sge_prefetch(qp, w->wr.sg_list, w->wr.num_sge, from,
						     w->length - from, true);
}

/* Land response bytes of a READ (or the original value of an atomic) in the local SGEs.
 * false: stopped by a local fault or error (the response is dropped; it will be asked for
 * again once the fault is answered). */
static bool land(struct nic_qp *qp, struct nic_swqe *w, uint32_t off, const void *data,
		 uint32_t n)
{
	struct nic_dma_ctx c = nic_dma_ctx(qp, &qp->comp.fault);
	enum nic_dma_result res;

	if (nic_fault_poll(&qp->comp.fault) == NIC_SLOT_WAITING) {
		nic_drop(qp->nic, qp, NIC_DROP_LAND_FAULT);	/* the rest of the stream */
		return false;
	}
	res = nic_dma_sge(&c, w->wr.sg_list, w->wr.num_sge, off, (void *)data, n, true);
	if (res == NIC_DMA_OK)
		return true;
	if (res == NIC_DMA_FAULT) {
		qp->ctr.faults_req++;
		nic_drop(qp->nic, qp, NIC_DROP_LAND_FAULT);
		prefetch_rest(qp, w, off + n);
		/* asked for once: the rest of this stream, arriving behind the fault, shows the
		 * same gap, and a second request would have all of it sent again */
		ask_again(qp, roce_psn_add(w->first_psn, off / qp->pmtu));
		return false;
	}
	nic_swqe_complete(qp, w, ODPEMU_WC_LOC_PROT_ERR, nic_dma_verr(res));
	return false;
}

static void on_read_response(struct nic_qp *qp, const struct roce_pkt *pkt, struct nic_swqe *w)
{
	uint32_t psn = pkt->h.bth.psn, expect = read_resume_psn(qp, w);

	if (w->wr.opcode != ODPEMU_WR_RDMA_READ)
		return nic_drop(qp->nic, qp, NIC_DROP_UNEXPECTED_RESP);
	if (roce_psn_diff(psn, expect) < 0)	/* landed already: a duplicate */
		return nic_drop(qp->nic, qp, NIC_DROP_GHOST_RESP);
	if (psn != expect) {	/* a response went missing (or was overtaken) */
		nic_drop(qp->nic, qp, NIC_DROP_SEQ_ERR_SILENT);
		return ask_again(qp, expect);
	}
	if (w->landed + pkt->payload_len > w->length ||
	    ((pkt->mask & ROCE_M_LAST) && w->landed + pkt->payload_len != w->length)) {
		nic_swqe_complete(qp, w, ODPEMU_WC_BAD_RESP_ERR, NIC_VERR_BAD_RESPONSE);
		return;
	}
	if (!land(qp, w, w->landed, pkt->payload, pkt->payload_len))
		return;
	w->landed += pkt->payload_len;
	advance_una(qp, roce_psn_next(psn));
	if (pkt->mask & ROCE_M_LAST)
		nic_swqe_complete(qp, w, ODPEMU_WC_SUCCESS, NIC_VERR_NONE);
}

static void on_atomic_ack(struct nic_qp *qp, const struct roce_pkt *pkt, struct nic_swqe *w)
{
	uint64_t orig = pkt->h.atmack;

	if (acked_by_ack(w->wr.opcode) || w->first_psn != pkt->h.bth.psn)
		return nic_drop(qp->nic, qp, NIC_DROP_UNEXPECTED_RESP);
	if (!land(qp, w, 0, &orig, 8))
		return;
	advance_una(qp, roce_psn_next(pkt->h.bth.psn));
	nic_swqe_complete(qp, w, ODPEMU_WC_SUCCESS, NIC_VERR_NONE);
}

static void on_ack(struct nic_qp *qp, uint32_t psn)
{
	struct nic_swqe *w = wqe_of(qp, psn);

	/* A READ or atomic at psn completes only with its own response. The responder may
	 * re-ACK its last executed PSN (a duplicate SEND/WRITE, C9-105) before that response
	 * arrives or after it was lost: progress stops short of it, and if the response never
	 * comes the ACK timer asks again (the responder replays it). */
	if (w && !acked_by_ack(w->wr.opcode)) {
		advance_una(qp, w->wr.opcode == ODPEMU_WR_RDMA_READ ? read_resume_psn(qp, w)
								     : w->first_psn);
		return;
	}
	/* The ACK covers psn itself: a SEND/WRITE-like WQE ending at psn is done too, even
	 * while a go-back-N resend of it is under way (SENDING): every PSN below max_sent
	 * went out once, and una passes it now, so a later ACK of the resend is a duplicate
	 * (dropped as a ghost) and nothing else would complete it. */
	if (w && last_psn(w) == psn)
		nic_swqe_complete(qp, w, ODPEMU_WC_SUCCESS, NIC_VERR_NONE);
	advance_una(qp, roce_psn_next(psn));
}

void nic_comp_rx(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	uint32_t psn = pkt->h.bth.psn;
	struct nic_swqe *lost, *w;

	/* RTR (and SQE) receive requests only: no request of ours is outstanding. */
	if (qp->state != ODPEMU_QPS_RTS && qp->state != ODPEMU_QPS_SQD)
		return nic_drop(qp->nic, qp, NIC_DROP_QP_STATE);
	/* Only answers to what is outstanding: [una, psn). Older ones are duplicates. */
	if (roce_psn_diff(psn, qp->comp.una) < 0 || roce_psn_diff(psn, qp->req.max_sent) >= 0)
		return nic_drop(qp->nic, qp, NIC_DROP_GHOST_RESP);
	lost = complete_before(qp, psn);
	if (lost) {	/* an answer for a later PSN: lost's own answer was lost */
		nic_drop(qp->nic, qp, NIC_DROP_SEQ_ERR_SILENT);
		return ask_again(qp, lost->wr.opcode == ODPEMU_WR_RDMA_READ ?
				 read_resume_psn(qp, lost) : lost->first_psn);
	}
	w = wqe_of(qp, psn);
	if (pkt->h.bth.opcode == ROCE_OP_RC_ACKNOWLEDGE) {
		uint8_t syn = pkt->h.aeth.syndrome;

		switch (roce_syndrome_type(syn)) {
		case ROCE_AETH_ACK: return on_ack(qp, psn);
		case ROCE_AETH_RNR_NAK: return on_rnr(qp, psn, syn);
		case ROCE_AETH_NAK: return on_nak(qp, psn, syn);
		default: return nic_drop(qp->nic, qp, NIC_DROP_UNEXPECTED_RESP);
		}
	}
	if (!w)
		return nic_drop(qp->nic, qp, NIC_DROP_UNEXPECTED_RESP);
	if (pkt->h.bth.opcode == ROCE_OP_RC_ATOMIC_ACKNOWLEDGE)
		on_atomic_ack(qp, pkt, w);
	else
		on_read_response(qp, pkt, w);
}

/* The requester waits on its own page fault (a gather or a landing fault). The local ACK
 * timeout and retry_cnt (IBA 11.2.4.2) measure a silent responder; this one is answering
 * (its responses are dropped until the fault is answered, then asked for again), so the
 * wait costs no retry: a slow fault handler must not turn into RETRY_EXC_ERR. The timer
 * starts afresh once the fault is answered. */
static bool local_fault_out(struct nic_qp *qp)
{
	return nic_fault_poll(&qp->req.fault) == NIC_SLOT_WAITING ||
	       nic_fault_poll(&qp->comp.fault) == NIC_SLOT_WAITING;
}

/* ACK timeout and RNR timer. */
void nic_comp_tick(struct nic_qp *qp, uint64_t now)
{
	struct nic_comp *c = &qp->comp;
	struct nic_swqe *w;

	if (c->wait == NIC_REQ_RNR_TIMER && c->rnr_deadline <= now) {
		c->rnr_deadline = UINT64_MAX;
		c->wait = NIC_REQ_GO_BACK;	/* from resume_psn, the RNR-NAKed request */
		nic_qp_schedule(qp);
		update_timer(qp);
	}
	if (c->ack_deadline > now)
		return;
	c->ack_deadline = UINT64_MAX;
	if (c->una == qp->req.max_sent)
		return;
	if (local_fault_out(qp))
		return update_timer(qp);
	qp->ctr.timeouts++;
	w = wqe_of(qp, c->una);
	if (c->retry_left == 0)
		return fail_wqe(qp, w, ODPEMU_WC_RETRY_EXC_ERR, NIC_VERR_RETRY_EXC);
	c->retry_left--;
	go_back(qp, w && w->wr.opcode == ODPEMU_WR_RDMA_READ ? read_resume_psn(qp, w) : c->una);
	update_timer(qp);
}

/* Retire done WQEs from the head in order; CQE for signaled WRs and every error. */
void nic_comp_retire(struct nic_qp *qp)
{
	while (qp->sq.head < qp->sq.tail) {
		struct nic_swqe *w = nic_sq_at(&qp->sq, qp->sq.head);

		if (w->state != NIC_SWQE_DONE)
			break;
		if (w->signaled || w->status != ODPEMU_WC_SUCCESS) {
			struct nic_wc wc = {
				.wr_id = w->wr.wr_id, .status = w->status,
				.opcode = odpemu_wr_wc_opcode(w->wr.opcode),
				.byte_len = w->wr.opcode == ODPEMU_WR_RDMA_READ ? w->length : 0,
				.qp_num = qp->qpn, .vendor_err = w->vendor_err,
			};

			nic_cq_push(qp->scq, &wc, false);
		}
		qp->sq.head++;
		if (qp->sq.next < qp->sq.head) {
			/* The peer's answer completed the WQE being (re)sent: a gather fault it
			 * raised is its own, not the next WQE's to wait on or fail with. */
			qp->sq.next = qp->sq.head;
			nic_fault_cancel(&qp->req.fault, &qp->nic->cfg.ports);
		}
	}
	if (qp->state == ODPEMU_QPS_SQD && qp->sq.head == qp->sq.next &&
	    qp->attr.en_sqd_async_notify && !qp->sq_drained_event_pending) {
		qp->sq_drained_event_pending = true;
		nic_event(qp->nic, ODPEMU_EVENT_SQ_DRAINED, qp, NULL, NULL, NULL);
	}
}
