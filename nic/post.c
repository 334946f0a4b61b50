/* SPDX-License-Identifier: MIT */
/* Doorbells: post_send / post_recv check a work request and copy it into the queue (the
 * caller's WR and SGE arrays may be reused at once, as with ibv_post_send). */
#include <assert.h>

#include "nic_int.h"
#include "odpemu/wr_shape.h"

/* odpemu/wr_shape.h spells proto's FETH and RETH limits for the layers without proto/. */
static_assert(ODPEMU_MAX_MSG == ROCE_RETH_MAX_LEN, "message size limit");
static_assert(ODPEMU_FLUSH_TYPES == ROCE_FETH_PLT_MASK, "FLUSH placement types");
static_assert(ODPEMU_FLUSH_LEVEL_MAX == ROCE_FETH_SEL_MAX, "FLUSH selectivity");

/* The shape rules lib/ applied before the WR reached the ring (odpemu/wr_shape.h), again:
 * the ring is the client's memory. Then what only nic/ knows: a UD message is one packet
 * (IBA 9.8: UD has no segmentation), within the path MTU. */
static int check_wr(const struct nic_qp *qp, const struct nic_send_wr *wr, uint32_t len)
{
	const struct odpemu_wr_shape s = { .qp_type = qp->type, .opcode = wr->opcode,
		.send_flags = wr->send_flags, .num_sge = wr->num_sge, .len = len,
		.remote_addr = wr->remote_addr, .max_inline = qp->sq.max_inline,
		.flush_type = wr->flush_type, .flush_level = wr->flush_level,
		.device_caps = qp->nic->attr.device_cap_flags };

	if (!odpemu_wr_shape_ok(&s))
		return -EINVAL;	/* the SGE count was checked before the list was summed */
	if (qp->type == ODPEMU_QPT_UD && len > qp->pmtu)
		return -EINVAL;
	return 0;
}

uint32_t nic_sge_total(const struct nic_sge *sge, unsigned num_sge)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < num_sge; i++)
		t += sge[i].length;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

static void copy_wqe(struct nic_qp *qp, struct nic_swqe *w, const struct nic_send_wr *wr,
		     uint32_t len)
{
	/* The progress fields: a slot is reused, and a stale PSN assignment would resend
	 * this WR with the previous one's numbers. */
	memset(w, 0, offsetof(struct nic_swqe, wr));
	w->wr = *wr;
	w->length = len;
	w->signaled = qp->init.sq_sig_all || (wr->send_flags & ODPEMU_SEND_SIGNALED);
	if (wr->send_flags & ODPEMU_SEND_INLINE) {
		uint32_t off = 0;

		for (unsigned i = 0; i < wr->num_sge; i++) {
			memcpy(w->inline_data + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			off += wr->sg_list[i].length;
		}
		w->wr.num_sge = 0;
	} else if (wr->num_sge) {
		memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(*w->sge));
	}
	w->wr.sg_list = w->sge;
	w->state = NIC_SWQE_POSTED;
}

/* Check wr and queue it; the engine is not run. */
static int enqueue_send(struct nic_qp *qp, const struct nic_send_wr *wr)
{
	uint32_t len;
	int rc;

	if (!wr || wr->num_sge > qp->sq.max_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;	/* before the SGE list is read */
	if (odpemu_wr_props(wr->opcode) & ODPEMU_WRP_NO_LOCAL)
		len = wr->flush_len;	/* FLUSH: the remote range's */
	else
		len = wr->num_sge ? nic_sge_total(wr->sg_list, wr->num_sge) : 0;
	rc = check_wr(qp, wr, len);
	if (rc)
		return rc;
	if (qp->sq.tail - qp->sq.head == qp->sq.size)
		return -ENOMEM;
	copy_wqe(qp, nic_sq_at(&qp->sq, qp->sq.tail), wr, len);
	qp->sq.tail++;
	return 0;
}

int nic_post_send_list(struct nic_qp *qp, const struct nic_send_wr *wrs, unsigned n,
		       unsigned *posted, uint64_t now)
{
	int rc = nic_post_send_list_queue(qp, wrs, n, posted, now);

	if (qp)
		nic_run(qp->nic);
	return rc;
}

void nic_run_posted(struct nic *nic, uint64_t now)
{
	nic->now = now;
	nic_run(nic);
}

int nic_post_send_list_queue(struct nic_qp *qp, const struct nic_send_wr *wrs, unsigned n,
			     unsigned *posted, uint64_t now)
{
	unsigned done = 0;
	int rc = 0;

	if (posted)
		*posted = 0;
	if (!qp || (n && !wrs))
		return -EINVAL;
	if (qp->state == ODPEMU_QPS_RESET || qp->state == ODPEMU_QPS_INIT ||
	    qp->state == ODPEMU_QPS_RTR)
		return -EPERM;		/* IBA 10.8.2: posting before RTS is an immediate error */
	while (done < n && !(rc = enqueue_send(qp, &wrs[done])))
		done++;
	if (posted)
		*posted = done;
	if (!done)
		return rc;
	qp->nic->now = now;
	if (qp->state == ODPEMU_QPS_ERR) {
		nic_qp_flush(qp);
		return rc;
	}
	nic_qp_schedule(qp);	/* one doorbell: the engine sees the whole list */
	return rc;
}

int nic_post_send(struct nic_qp *qp, const struct nic_send_wr *wr, uint64_t now)
{
	return wr ? nic_post_send_list(qp, wr, 1, NULL, now) : -EINVAL;
}

int nic_post_recv(struct nic_qp *qp, const struct nic_recv_wr *wr, uint64_t now)
{
	int rc;

	if (!qp)
		return -EINVAL;
	if (qp->srq)
		return -EINVAL;		/* receives go to the SRQ */
	if (qp->state == ODPEMU_QPS_RESET)
		return -EPERM;
	rc = nic_rq_post(&qp->rq, wr, &qp->nic->attr);
	if (rc)
		return rc;
	qp->nic->now = now;
	if (qp->state == ODPEMU_QPS_ERR)
		nic_qp_flush(qp);
	return 0;
}

/* The WQE takes a send queue slot so that its completion keeps post order (the queue
 * retires in order, nic_comp_retire); the opcode is left 0: a completion in error defines
 * only wr_id, status, qp_num and vendor_err. */
int nic_post_send_bad(struct nic_qp *qp, uint64_t wr_id, uint64_t now)
{
	const struct nic_send_wr wr = { .wr_id = wr_id };
	struct nic_swqe *w;

	if (!qp)
		return -EINVAL;
	if (qp->sq.tail - qp->sq.head == qp->sq.size)
		return -ENOMEM;
	qp->nic->now = now;
	w = nic_sq_at(&qp->sq, qp->sq.tail++);
	copy_wqe(qp, w, &wr, 0);
	if (qp->state == ODPEMU_QPS_ERR)
		nic_qp_flush(qp);
	else
		nic_swqe_complete(qp, w, ODPEMU_WC_LOC_QP_OP_ERR, NIC_VERR_BAD_WQE);
	return 0;
}

/* The receives posted before it flush first (nic_qp_to_err), then it completes. */
int nic_post_recv_bad(struct nic_qp *qp, uint64_t wr_id, uint64_t now)
{
	struct nic_wc wc = { .wr_id = wr_id, .status = ODPEMU_WC_WR_FLUSH_ERR,
		.opcode = ODPEMU_WC_RECV, .vendor_err = NIC_VERR_FLUSH };

	if (!qp || qp->srq)
		return -EINVAL;
	qp->nic->now = now;
	wc.qp_num = qp->qpn;
	if (qp->state != ODPEMU_QPS_ERR) {
		wc.status = ODPEMU_WC_LOC_QP_OP_ERR;
		wc.vendor_err = NIC_VERR_BAD_WQE;
		nic_qp_to_err(qp);
	}
	nic_recv_complete(qp, &wc, false);
	return 0;
}
