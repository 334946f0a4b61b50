/* SPDX-License-Identifier: MIT */
/*
 * The UC responder's own rules (IBA 9.4 UC service; rxe_resp.c check_psn and check_op_seq
 * for IB_QPT_UC are the model). UC executes SEND and RDMA WRITE as RC does (resp.c), but
 * answers nothing, ever: no ACK, no NAK, no RNR NAK, and it has no duplicates to detect.
 * What RC would NAK, UC drops, with the rest of the message it belongs to:
 *  - a FIRST or ONLY always starts a message: the expected PSN resynchronises to it, and a
 *    message still in progress (its LAST was lost) is abandoned;
 *  - a MIDDLE or LAST with an unexpected PSN, or that does not continue the message in
 *    progress, drops that message; so does a refused request (R_Key, access, no receive
 *    WQE, an ODP fault under the rnr policy: resp.c);
 *  - the packets that follow a dropped packet of the same message are dropped too, until
 *    the next FIRST or ONLY.
 * A SEND's receive WQE is not consumed by a dropped message: the next SEND fills it from
 * the start (rxe keeps it likewise). Every dropped packet counts once under its message's
 * reason (nic_drop), every dropped message once in the QP's uc_msgs_dropped.
 */
#include "nic_int.h"

/* Does pkt continue the message in progress? UC carries only SEND and WRITE (proto). */
static bool continues(const struct nic_resp *r, const struct roce_pkt *pkt)
{
	return r->msg == (pkt->cls == ROCE_CLASS_SEND ? NIC_MSG_SEND : NIC_MSG_WRITE);
}

void nic_uc_drop_msg(struct nic_qp *qp, const struct roce_pkt *pkt, enum nic_drop_reason why)
{
	struct nic_resp *r = &qp->resp;

	if (!r->uc_dropping) {		/* the first packet of this message to go */
		qp->ctr.uc_msgs_dropped++;
		r->uc_drop_why = why;
	}
	nic_drop(qp->nic, qp, r->uc_drop_why);
	r->msg = NIC_MSG_NONE;
	r->uc_dropping = !(pkt->mask & ROCE_M_LAST);
	r->epsn = roce_psn_next(pkt->h.bth.psn);
}

bool nic_uc_accept(struct nic_qp *qp, const struct roce_pkt *pkt)
{
	struct nic_resp *r = &qp->resp;

	if (pkt->mask & ROCE_M_FIRST) {
		if (r->msg != NIC_MSG_NONE)
			qp->ctr.uc_msgs_dropped++;	/* its LAST never came */
		r->msg = NIC_MSG_NONE;
		r->uc_dropping = false;
		r->epsn = pkt->h.bth.psn;
		return true;
	}
	if (!r->uc_dropping && pkt->h.bth.psn == r->epsn && continues(r, pkt))
		return true;
	nic_uc_drop_msg(qp, pkt, NIC_DROP_UC_SEQ);
	return false;
}
