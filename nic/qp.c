/* SPDX-License-Identifier: MIT */
/* Queue pairs: creation, the modify-QP state machine (rules in qp_attr.c), the error state
 * and its flush (IBA 10.3.1: every outstanding WR completes with WR_FLUSH_ERR). */
#include "nic_int.h"

const char *nic_qp_init_why(const struct nic *nic, const struct nic_qp_init *in)
{
	const struct nic_device_attr *a = &nic->attr;
	unsigned inl = in->max_inline_data;

	if (!odpemu_wr_qp_type_prop(in->type))
		return "only RC, UC and UD QPs are modelled";
	if (!in->send_cq || !in->recv_cq || in->send_cq->nic != nic || in->recv_cq->nic != nic)
		return "send_cq and recv_cq must be CQs of this device";
	/* 0 WRs: a receive-only (or send-only, below) QP, which every provider creates; its
	 * posts fail with ENOMEM as on a full queue */
	if (in->max_send_wr > a->max_qp_wr)
		return "cap.max_send_wr beyond the device's max_qp_wr";
	if (in->max_send_sge > a->max_sge || in->max_send_sge > NIC_MAX_SGE)
		return "cap.max_send_sge beyond the device's max_sge";
	if (in->max_inline_data > a->max_inline_data || in->max_inline_data > NIC_MAX_INLINE)
		return "cap.max_inline_data beyond the device's limit";
	if (nic_sq_caps(a, in->type, in->max_send_wr, in->max_send_sge, &inl))
		return "cap.max_send_sge and cap.max_inline_data do not fit one send WQE "
		       "(mlx5: 1024 bytes, mlx5_calc_send_wqe)";
	if (!in->srq && in->max_recv_wr > a->max_qp_wr)
		return "cap.max_recv_wr beyond the device's max_qp_wr";
	if (!in->srq && (in->max_recv_sge > a->max_sge || in->max_recv_sge > NIC_MAX_SGE))
		return "cap.max_recv_sge beyond the device's max_sge";
	if (in->fault_policy != NIC_FAULT_STALL && in->fault_policy != NIC_FAULT_RNR)
		return "unknown fault policy";
	if (in->srq && in->srq->state == NIC_SRQ_ERR)
		return "the SRQ is in error (SRQ_ERR)";
	return NULL;
}

int nic_qp_grant(const struct nic *nic, struct nic_qp_init *in)
{
	unsigned inl = in->max_inline_data;

	if (nic_qp_init_why(nic, in))
		return !odpemu_wr_qp_type_prop(in->type) ? -EOPNOTSUPP : -EINVAL;
	(void)nic_sq_caps(&nic->attr, in->type, in->max_send_wr, in->max_send_sge, &inl);
	in->max_inline_data = inl;
	return 0;
}

static void qp_free(struct nic_qp *qp)
{
	free(qp->sq.wqe);
	free(qp->sq.sges);
	free(qp->sq.inline_data);
	free(qp->rq.wqe);
	free(qp->resp.rsrc);
	free(qp->resp.held);
	free(qp);
}

static uint32_t alloc_qpn(struct nic *nic)
{
	for (;;) {
		uint32_t qpn = nic->next_qpn;

		nic->next_qpn = qpn + 1 > ROCE_QPN_MASK ? NIC_QPN_FIRST : qpn + 1;
		if (!nic_qp_lookup(nic, qpn))
			return qpn;
	}
}

/* The send queue's WQEs, each with room for the QP's SGEs and inline bytes (one of each
 * at least: an empty inline WR still copies nothing from somewhere; one WQE at least: a
 * QP of no send WRs still has arrays). */
static int sq_init(struct nic_sq *sq, const struct nic_qp_init *in)
{
	size_t nsge = in->max_send_sge ? in->max_send_sge : 1;
	size_t ninl = in->max_inline_data ? in->max_inline_data : 1;
	size_t n = in->max_send_wr ? in->max_send_wr : 1;

	sq->wqe = calloc(n, sizeof(*sq->wqe));
	sq->sges = calloc(n, nsge * sizeof(*sq->sges));
	sq->inline_data = calloc(n, ninl);
	if (!sq->wqe || !sq->sges || !sq->inline_data)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		sq->wqe[i].sge = sq->sges + i * nsge;
		sq->wqe[i].inline_data = sq->inline_data + i * ninl;
	}
	return 0;
}

int nic_qp_create(struct nic_pd *pd, const struct nic_qp_init *asked, struct nic_qp **out)
{
	struct nic *nic = pd ? pd->nic : NULL;
	struct nic_qp_init granted, *in = &granted;
	struct nic_qp *qp;
	int rc;

	if (!pd || !asked || !out)
		return -EINVAL;
	granted = *asked;
	rc = nic_qp_grant(nic, &granted);
	if (rc)
		return rc;
	if (nic->ctr.qps >= nic->attr.max_qp)
		return -ENOSPC;
	if (nic_qp_reserve(nic))
		return -ENOMEM;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	rc = sq_init(&qp->sq, in);
	if (!rc && !in->srq)
		rc = nic_rq_init(&qp->rq, in->max_recv_wr, in->max_recv_sge);
	if (rc) {
		qp_free(qp);
		return rc;
	}
	qp->pd = pd;
	qp->nic = nic;
	qp->type = in->type;
	qp->init = *in;
	qp->scq = in->send_cq;
	qp->rcq = in->recv_cq;
	qp->srq = in->srq;
	qp->sq.size = in->max_send_wr;
	qp->sq.max_sge = in->max_send_sge;
	qp->sq.max_inline = in->max_inline_data;
	qp->resp.held_cap = nic->cfg.stall_queue;
	qp->state = ODPEMU_QPS_RESET;
	qp->comp.ack_deadline = qp->comp.rnr_deadline = UINT64_MAX;
	qp->qpn = alloc_qpn(nic);
	qp->seq = nic->qp_seq++;
	nic_qp_hash_add(nic, qp);
	nic_list_add_tail(&nic->qps, &qp->link);
	nic_list_init(&qp->run_link);
	qp->scq->users++;
	qp->rcq->users++;
	if (qp->srq)
		qp->srq->users++;
	pd->users++;
	nic->ctr.qps++;
	*out = qp;
	return 0;
}

/* Cancel the engines' faults: their requests may outlive the QP, and a failure belongs to
 * the old traffic. */
static void cancel_waiters(struct nic_qp *qp)
{
	nic_fault_cancel(&qp->req.fault, &qp->nic->cfg.ports);
	nic_fault_cancel(&qp->comp.fault, &qp->nic->cfg.ports);
	nic_fault_cancel(&qp->resp.fault, &qp->nic->cfg.ports);
}

int nic_qp_destroy(struct nic_qp *qp)
{
	struct nic *nic;

	if (!qp)
		return -EINVAL;
	nic = qp->nic;
	cancel_waiters(qp);
	nic_mw_qp_gone(qp);
	nic_mcast_qp_gone(qp);
	if (qp->runnable)
		nic_list_del(&qp->run_link);
	nic_list_del(&qp->link);
	nic_qp_hash_del(nic, qp);
	nic_timer_del(qp);
	qp->scq->users--;
	qp->rcq->users--;
	if (qp->srq)
		qp->srq->users--;
	qp->pd->users--;
	nic->ctr.qps--;
	qp_free(qp);
	return 0;
}

uint32_t nic_qp_num(const struct nic_qp *qp) { return qp->qpn; }
enum odpemu_qp_state nic_qp_state(const struct nic_qp *qp) { return qp->state; }

int nic_qp_query(const struct nic_qp *qp, struct nic_qp_attr *attr)
{
	if (!qp || !attr)
		return -EINVAL;
	*attr = qp->attr;
	attr->qp_state = attr->cur_qp_state = qp->state;
	attr->sq_psn = qp->req.psn;
	attr->rq_psn = qp->resp.epsn;
	return 0;
}

int nic_qp_counters(const struct nic_qp *qp, struct nic_qp_counters *out)
{
	if (!qp || !out)
		return -EINVAL;
	*out = qp->ctr;
	return 0;
}

/* ---- completions ---- */

/* Mark w done with st; retirement in order (and the CQE) happens in nic_comp_retire. An
 * error moves the QP to ERR, which flushes everything behind w. */
void nic_swqe_complete(struct nic_qp *qp, struct nic_swqe *w, enum odpemu_wc_status st,
		       unsigned verr)
{
	if (w->state == NIC_SWQE_DONE)
		return;
	w->state = NIC_SWQE_DONE;
	w->status = st;
	w->vendor_err = verr;
	if (odpemu_wr_props(w->wr.opcode) & ODPEMU_WRP_RESPONSE) {
		if (qp->req.rd_atomic_out)
			qp->req.rd_atomic_out--;
	}
	nic_comp_retire(qp);
	if (st != ODPEMU_WC_SUCCESS && st != ODPEMU_WC_WR_FLUSH_ERR)
		nic_qp_to_err(qp);
}

void nic_recv_complete(struct nic_qp *qp, const struct nic_wc *wc, bool solicited)
{
	nic_cq_push(qp->rcq, wc, solicited);
}

/* Flush-in-error: every WQE not yet done completes WR_FLUSH_ERR, in order (IBA 10.3.1). */
void nic_qp_flush(struct nic_qp *qp)
{
	struct nic_rwqe r;

	for (uint64_t i = qp->sq.head; i < qp->sq.tail; i++) {
		struct nic_swqe *w = nic_sq_at(&qp->sq, i);

		if (w->state != NIC_SWQE_DONE) {
			w->state = NIC_SWQE_DONE;
			w->status = ODPEMU_WC_WR_FLUSH_ERR;
			w->vendor_err = NIC_VERR_FLUSH;
		}
	}
	qp->req.rd_atomic_out = 0;
	nic_comp_retire(qp);
	while (!qp->srq && nic_rq_take(&qp->rq, &r)) {
		struct nic_wc wc = { .wr_id = r.wr_id, .status = ODPEMU_WC_WR_FLUSH_ERR,
			.opcode = ODPEMU_WC_RECV, .qp_num = qp->qpn,
			.vendor_err = NIC_VERR_FLUSH };

		nic_recv_complete(qp, &wc, false);
	}
}

static void stop_engines(struct nic_qp *qp)
{
	cancel_waiters(qp);
	qp->comp.ack_deadline = qp->comp.rnr_deadline = UINT64_MAX;
	qp->comp.wait = NIC_REQ_READY;
	qp->resp.nheld = 0;
	qp->resp.stall_overflowed = false;
	qp->resp.msg = NIC_MSG_NONE;
	qp->resp.rwqe_held = false;
}

/* A SEND cut short by the error (or waiting on a fault) already took its receive WQE off
 * the RQ or SRQ: it is the oldest receive WQE of this QP, so it flushes first. */
static void flush_held_recv(struct nic_qp *qp)
{
	struct nic_wc wc = { .wr_id = qp->resp.rwqe.wr_id, .status = ODPEMU_WC_WR_FLUSH_ERR,
		.opcode = ODPEMU_WC_RECV, .qp_num = qp->qpn, .vendor_err = NIC_VERR_FLUSH };

	if (qp->resp.rwqe_held)
		nic_recv_complete(qp, &wc, false);
	qp->resp.rwqe_held = false;
	qp->resp.msg = NIC_MSG_NONE;
}

void nic_qp_to_err(struct nic_qp *qp)
{
	bool was_err = qp->state == ODPEMU_QPS_ERR;

	qp->state = ODPEMU_QPS_ERR;
	if (!was_err) {
		flush_held_recv(qp);
		stop_engines(qp);
		if (qp->srq)
			nic_event(qp->nic, ODPEMU_EVENT_QP_LAST_WQE_REACHED, qp, NULL, NULL, NULL);
	}
	nic_qp_flush(qp);
}

/* ---- modify ---- */

static void to_reset(struct nic_qp *qp)
{
	stop_engines(qp);
	qp->sq.head = qp->sq.next = qp->sq.tail = 0;
	qp->rq.head = qp->rq.count = 0;
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	qp->comp.ack_deadline = qp->comp.rnr_deadline = UINT64_MAX;
	free(qp->resp.rsrc);
	qp->resp.rsrc = NULL;
	qp->resp.nrsrc = 0;
	qp->resp.epsn = qp->resp.msn = 0;
	qp->resp.nak_sent = false;
}

static int alloc_rsrc(struct nic_qp *qp, unsigned n)
{
	struct nic_rsrc *r = calloc(n ? n : 1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	free(qp->resp.rsrc);
	qp->resp.rsrc = r;
	qp->resp.nrsrc = n ? n : 1;
	qp->resp.rsrc_next = 0;
	return 0;
}

static void apply(struct nic_qp *qp, const struct nic_qp_attr *a, unsigned mask)
{
	struct nic_qp_attr *q = &qp->attr;

#define TAKE_(bit, field) do { if (mask & (bit)) q->field = a->field; } while (0)
	TAKE_(ODPEMU_QP_ACCESS_FLAGS, qp_access_flags);
	TAKE_(ODPEMU_QP_PKEY_INDEX, pkey_index);
	TAKE_(ODPEMU_QP_PORT, port_num);
	TAKE_(ODPEMU_QP_QKEY, qkey);
	TAKE_(ODPEMU_QP_AV, ah_attr);
	TAKE_(ODPEMU_QP_PATH_MTU, path_mtu);
	TAKE_(ODPEMU_QP_TIMEOUT, timeout);
	TAKE_(ODPEMU_QP_RETRY_CNT, retry_cnt);
	TAKE_(ODPEMU_QP_RNR_RETRY, rnr_retry);
	TAKE_(ODPEMU_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
	TAKE_(ODPEMU_QP_MIN_RNR_TIMER, min_rnr_timer);
	TAKE_(ODPEMU_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	TAKE_(ODPEMU_QP_DEST_QPN, dest_qp_num);
	TAKE_(ODPEMU_QP_EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
#undef TAKE_
	if (mask & ODPEMU_QP_RQ_PSN) {
		q->rq_psn = a->rq_psn;
		qp->resp.epsn = a->rq_psn & ROCE_PSN_MASK;
	}
	if (mask & ODPEMU_QP_SQ_PSN) {
		q->sq_psn = a->sq_psn;
		qp->req.psn = qp->comp.una = qp->req.max_sent = a->sq_psn & ROCE_PSN_MASK;
	}
	if (mask & ODPEMU_QP_RETRY_CNT)
		qp->comp.retry_left = a->retry_cnt;
	if (mask & ODPEMU_QP_RNR_RETRY)
		qp->comp.rnr_left = a->rnr_retry;
}

static unsigned pmtu_of(const struct nic_qp *qp)
{
	enum odpemu_mtu m = qp->nic->cfg.active_mtu;

	if (qp->type != ODPEMU_QPT_UD && qp->attr.path_mtu && qp->attr.path_mtu < m)
		m = qp->attr.path_mtu;
	return roce_mtu_bytes((enum roce_mtu)m);
}

int nic_qp_modify(struct nic_qp *qp, const struct nic_qp_attr *attr, unsigned mask,
		  uint64_t now, const char **why)
{
	struct nic_port_limits port;
	enum odpemu_qp_state next;
	const char *w = NULL;
	int rc;

	if (!why)
		why = &w;
	if (!qp || !attr)
		return -EINVAL;
	port.active_mtu = qp->nic->cfg.active_mtu;
	port.gid_count = 1;
	rc = nic_qp_check_modify(qp->type, qp->state, attr, mask, &qp->nic->attr, &port, why);
	if (rc)
		return rc;
	next = (mask & ODPEMU_QP_STATE) ? attr->qp_state : qp->state;
	if (qp->srq && qp->srq->state == NIC_SRQ_ERR && qp->state == ODPEMU_QPS_RESET &&
	    next != ODPEMU_QPS_RESET && next != ODPEMU_QPS_ERR) {
		*why = "the QP's SRQ is in error (SRQ_ERR): it cannot leave RESET";
		return -EINVAL;
	}
	if ((mask & ODPEMU_QP_MAX_DEST_RD_ATOMIC) && alloc_rsrc(qp, attr->max_dest_rd_atomic))
		return -ENOMEM;
	qp->nic->now = now;
	if (next == ODPEMU_QPS_RESET) {
		to_reset(qp);
		qp->state = next;
		return 0;
	}
	apply(qp, attr, mask);
	if (next == ODPEMU_QPS_RTR && !qp->resp.rsrc && alloc_rsrc(qp, 1))
		return -ENOMEM;
	qp->pmtu = pmtu_of(qp);
	if (next == ODPEMU_QPS_ERR) {
		nic_qp_to_err(qp);
		return 0;
	}
	qp->state = next;
	if (next == ODPEMU_QPS_RTS || next == ODPEMU_QPS_SQD) {
		nic_qp_schedule(qp);
		nic_run(qp->nic);
	}
	return 0;
}

struct nic_gid nic_qp_dgid(const struct nic_qp *qp)
{
	struct nic_gid g;

	memcpy(g.raw, qp->attr.ah_attr.dgid, sizeof(g.raw));
	return g;
}
