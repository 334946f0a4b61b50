/* SPDX-License-Identifier: MIT */
/*
 * MR leases (nic.h, docs/regcache.md): a pinned MR whose owner asked to hear about, and
 * hold up, changes of the mapping under it. Breaking the lease empties the MR's table
 * behind the fence; the DMA helpers check the lease inside their bracket before they
 * translate, so from the break on nothing reaches the old pages, and nothing reaches the
 * new ones before the restore fills the table again. A DMA that finds the lease broken
 * parks its fault slot on the MR, as an ODP miss parks it on a page request, and the
 * engine answers exactly as it does for a page fault (RNR NAK, stall, held send queue).
 */
#include "nic_int.h"

enum nic_lease nic_mr_lease(const struct nic_mr *mr)
{
	return mr->lease;
}

enum nic_dma_result nic_lease_blocked(struct nic_dma_ctx *c, struct nic_mr *mr)
{
	struct nic_fault *slot = c->slot;

	if (mr->lease == NIC_LEASE_REVOKED)
		return NIC_DMA_ACCESS;
	if (slot && slot->state == NIC_SLOT_IDLE) {
		nic_fault_park(slot, c->qp);
		slot->lease_mr = mr;
	}
	/* A slot already waiting (or none: a UD receive) waits on its own business; the
	 * wake-up below schedules the QP anyway, and the retry parks it here. */
	return NIC_DMA_FAULT;
}

static void wake_slot(struct nic_fault *f, const struct nic_mr *mr, bool *hit)
{
	if (f->state != NIC_SLOT_WAITING || f->lease_mr != mr)
		return;
	f->lease_mr = NULL;
	atomic_store(&f->waiter.status, 0);	/* answered: retry (and see the lease now) */
	*hit = true;
}

/* Every QP of the MR's client runs again: the parked slots answered, and the ones whose
 * retry would park here next. */
void nic_lease_wake(struct nic_mr *mr)
{
	struct nic *nic = mr->pd ? mr->pd->nic : NULL;

	if (!nic || mr->lease == NIC_LEASE_NONE)
		return;
	for (struct nic_list *l = nic->qps.next; l != &nic->qps; l = l->next) {
		struct nic_qp *qp = nic_container_of(l, struct nic_qp, link);
		bool hit = false;

		wake_slot(&qp->req.fault, mr, &hit);
		wake_slot(&qp->comp.fault, mr, &hit);
		wake_slot(&qp->resp.fault, mr, &hit);
		if (hit || qp->pd->client == mr->client)
			nic_qp_schedule(qp);
	}
}

static uint64_t table_start(const struct nic_mr *mr)
{
	return mr->va & ~NIC_PAGE_MASK;
}

static uint64_t table_len(const struct nic_mr *mr)
{
	return ((mr->va + mr->len + NIC_PAGE_MASK) & ~NIC_PAGE_MASK) - table_start(mr);
}

int nic_mr_lease_break(struct nic_mr *mr)
{
	if (mr->dead || mr->lease != NIC_LEASE_COHERENT)
		return -EALREADY;
	mr->lease = NIC_LEASE_BROKEN;
	/* the fence: DMAs that translated before the break finish before we return */
	(void)iopt_invalidate(mr->iopt, table_start(mr), table_len(mr));
	return 0;
}

int nic_mr_lease_restore(struct nic_mr *mr, uint64_t host)
{
	int rc;

	if (mr->dead || (mr->lease != NIC_LEASE_BROKEN && mr->lease != NIC_LEASE_REVOKED))
		return -EINVAL;
	if (mr->lease == NIC_LEASE_REVOKED)
		return -EACCES;
	if ((host & NIC_PAGE_MASK) != (mr->va & NIC_PAGE_MASK))
		return -EINVAL;
	if ((rc = nic_mr_pin(mr, host)))
		return rc;
	mr->lease = NIC_LEASE_COHERENT;
	nic_lease_wake(mr);
	return 0;
}

int nic_mr_lease_revoke(struct nic_mr *mr)
{
	if (mr->dead || mr->lease != NIC_LEASE_BROKEN)
		return -EINVAL;
	mr->lease = NIC_LEASE_REVOKED;
	nic_lease_wake(mr);
	return 0;
}
