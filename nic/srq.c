/* SPDX-License-Identifier: MIT */
/* Receive queues: a QP's own RQ or a shared SRQ hold the same receive WQEs. */
#include "nic_int.h"

/* A queued WQE: its own SGEs only (the queue's stride). */
struct rq_slot {
	uint64_t wr_id;
	unsigned num_sge;
	struct nic_sge sge[];
};

static struct rq_slot *slot_at(const struct nic_rq *rq, unsigned i)
{
	return (struct rq_slot *)(void *)(rq->wqe + (size_t)i * rq->stride);
}

static int rq_init(struct nic_rq *rq, unsigned max_wr, unsigned max_sge)
{
	rq->stride = sizeof(struct rq_slot) + max_sge * sizeof(struct nic_sge);
	rq->wqe = calloc(max_wr ? max_wr : 1, rq->stride);
	if (!rq->wqe)
		return -ENOMEM;
	rq->size = max_wr;
	rq->max_sge = max_sge;
	return 0;
}

int nic_rq_post(struct nic_rq *rq, const struct nic_recv_wr *wr, const struct nic_device_attr *a)
{
	struct rq_slot *w;

	(void)a;
	if (!wr || wr->num_sge > rq->max_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	if (rq->count == rq->size)
		return -ENOMEM;
	w = slot_at(rq, (rq->head + rq->count) % rq->size);
	w->wr_id = wr->wr_id;
	w->num_sge = wr->num_sge;
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(*w->sge));
	rq->count++;
	return 0;
}

bool nic_rq_peek(const struct nic_rq *rq, struct nic_rwqe *out)
{
	const struct rq_slot *w;

	if (!rq->count)
		return false;
	w = slot_at(rq, rq->head);
	out->wr_id = w->wr_id;
	out->num_sge = w->num_sge;
	memcpy(out->sge, w->sge, w->num_sge * sizeof(*w->sge));
	return true;
}

bool nic_rq_take(struct nic_rq *rq, struct nic_rwqe *out)
{
	if (!nic_rq_peek(rq, out))
		return false;
	rq->head = (rq->head + 1) % rq->size;
	rq->count--;
	return true;
}

int nic_srq_create(struct nic_pd *pd, unsigned max_wr, unsigned max_sge, struct nic_srq **out)
{
	struct nic *nic = pd ? pd->nic : NULL;
	struct nic_srq *srq;

	if (!pd || !out || !max_wr || max_wr > nic->attr.max_srq_wr ||
	    max_sge > nic->attr.max_srq_sge || max_sge > NIC_MAX_SGE)
		return -EINVAL;
	if (nic->ctr.srqs >= nic->attr.max_srq)
		return -ENOSPC;
	srq = calloc(1, sizeof(*srq));
	if (!srq || rq_init(&srq->rq, max_wr, max_sge)) {
		free(srq);
		return -ENOMEM;
	}
	srq->pd = pd;
	pd->users++;
	nic->ctr.srqs++;
	*out = srq;
	return 0;
}

int nic_srq_destroy(struct nic_srq *srq)
{
	if (!srq)
		return -EINVAL;
	if (srq->users)
		return -EBUSY;
	srq->pd->users--;
	srq->pd->nic->ctr.srqs--;
	free(srq->rq.wqe);
	free(srq);
	return 0;
}

int nic_srq_arm(struct nic_srq *srq, unsigned limit)
{
	if (!srq || limit > srq->rq.size)
		return -EINVAL;
	srq->limit = limit;
	return 0;
}

/* IBA 10.2.9.5: the limit event fires once when the WQE count drops below the limit. */
void nic_srq_check_limit(struct nic_srq *srq)
{
	if (srq->limit && srq->rq.count < srq->limit) {
		srq->limit = 0;
		nic_event(srq->pd->nic, ODPEMU_EVENT_SRQ_LIMIT_REACHED, NULL, NULL, srq, NULL);
	}
}

int nic_srq_post_recv(struct nic_srq *srq, const struct nic_recv_wr *wr, uint64_t now)
{
	int rc;

	if (!srq)
		return -EINVAL;
	if (srq->state == NIC_SRQ_ERR)
		return -EPERM;
	rc = nic_rq_post(&srq->rq, wr, &srq->pd->nic->attr);
	if (rc)
		return rc;
	srq->pd->nic->now = now;
	return 0;
}

int nic_rq_init(struct nic_rq *rq, unsigned max_wr, unsigned max_sge)
{
	return rq_init(rq, max_wr, max_sge);
}

/* A receive WQE the SRQ cannot take as written fails the SRQ, as a device fails one it
 * can no longer dequeue from (ibv_get_async_event(3): SRQ_ERR; the QPs that take receives
 * from it go to ERR with QP_FATAL). Its WQEs are never consumed, so none completes: the
 * events are what the host hears. */
int nic_srq_post_recv_bad(struct nic_srq *srq, uint64_t now)
{
	struct nic *nic;

	if (!srq)
		return -EINVAL;
	nic = srq->pd->nic;
	nic->now = now;
	if (srq->state == NIC_SRQ_ERR)
		return 0;
	srq->state = NIC_SRQ_ERR;
	nic_event(nic, ODPEMU_EVENT_SRQ_ERR, NULL, NULL, srq, NULL);
	for (struct nic_list *l = nic->qps.next; l != &nic->qps; l = l->next) {
		struct nic_qp *qp = nic_container_of(l, struct nic_qp, link);

		if (qp->srq != srq || qp->state == ODPEMU_QPS_ERR)
			continue;
		nic_qp_to_err(qp);
		nic_event(nic, ODPEMU_EVENT_QP_FATAL, qp, NULL, NULL, NULL);
	}
	return 0;
}

bool nic_srq_in_error(const struct nic_srq *srq)
{
	return srq && srq->state == NIC_SRQ_ERR;
}
