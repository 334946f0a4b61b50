/* SPDX-License-Identifier: MIT */
/* Completion queues: a ring of work completions — nic/'s own, or the owner's written
 * through ports.cq_write (the daemon's shared ring: each completion is written once, where
 * the application reads it). Overflow puts the CQ in error and raises CQ_ERR (IBA
 * 11.4.2.1: the CQ is then unusable), as mlx5 and rxe do; a CQ created to ignore overruns
 * (mlx5's IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN) loses the completion instead and goes on. */
#include "nic_int.h"

int nic_cq_create(struct nic *nic, unsigned cqe, struct nic_cq **out)
{
	struct nic_cq *cq;

	if (!nic || !out || cqe < 1 || cqe > nic->attr.max_cqe)
		return -EINVAL;
	if (nic->ctr.cqs >= nic->attr.max_cq)
		return -ENOSPC;
	cq = calloc(1, sizeof(*cq));
	if (cq && !nic->cfg.ports.cq_write && !(cq->ring.wc = calloc(cqe, sizeof(*cq->ring.wc)))) {
		free(cq);
		cq = NULL;
	}
	if (!cq)
		return -ENOMEM;
	cq->nic = nic;
	cq->ring.size = cqe;
	nic->ctr.cqs++;
	*out = cq;
	return 0;
}

void nic_cq_set_overrun(struct nic_cq *cq, enum nic_cq_overrun policy)
{
	cq->overrun = policy;
}

int nic_cq_destroy(struct nic_cq *cq)
{
	if (!cq)
		return -EINVAL;
	if (cq->users)
		return -EBUSY;
	cq->nic->ctr.cqs--;
	free(cq->ring.wc);
	free(cq);
	return 0;
}

/* Into nic/'s own ring: false when it is full. */
static bool write_own(struct nic_cq *cq, const struct nic_wc *wc)
{
	struct nic_cqe_ring *r = &cq->ring;

	if (r->count == r->size)
		return false;
	r->wc[(r->head + r->count) % r->size] = *wc;
	r->count++;
	return true;
}

void nic_cq_push(struct nic_cq *cq, const struct nic_wc *wc, bool solicited)
{
	const struct nic_ports *p = &cq->nic->cfg.ports;

	if (wc->status != ODPEMU_WC_SUCCESS)
		cq->nic->ctr.wc_errors[wc->vendor_err < NIC_VERR__COUNT ? wc->vendor_err
									: NIC_VERR_NONE]++;
	if (cq->error)
		return;
	if (!(p->cq_write ? p->cq_write(p->ctx, cq, wc) : write_own(cq, wc))) {
		if (cq->overrun == NIC_CQ_OVERRUN_IGNORE) {
			cq->nic->ctr.cq_overruns_ignored++;
			return;
		}
		cq->error = true;
		nic_event(cq->nic, ODPEMU_EVENT_CQ_ERR, NULL, cq, NULL, NULL);
		return;
	}
	/* Notification: any completion if armed; a solicited or error one if armed so. */
	if (cq->armed && (!cq->armed_solicited || solicited || wc->status != ODPEMU_WC_SUCCESS)) {
		cq->armed = false;
		if (cq->nic->cfg.ports.cq_notify)
			cq->nic->cfg.ports.cq_notify(cq->nic->cfg.ports.ctx, cq);
	}
}

int nic_cq_poll(struct nic_cq *cq, struct nic_wc *wc, int n)
{
	struct nic_cqe_ring *r;
	int got = 0;

	if (!cq || (n > 0 && !wc) || n < 0)
		return -EINVAL;
	if (cq->error)
		return -EIO;
	r = &cq->ring;
	while (got < n && r->count) {
		wc[got++] = r->wc[r->head];
		r->head = (r->head + 1) % r->size;
		r->count--;
	}
	return got;
}

int nic_cq_req_notify(struct nic_cq *cq, bool solicited_only)
{
	if (!cq)
		return -EINVAL;
	cq->armed = true;
	cq->armed_solicited = solicited_only;
	return 0;
}
