/* SPDX-License-Identifier: MIT */
/*
 * Memory windows (IBA 10.6.7; rxe's rxe_mw.c is the behaviour we match). A window is an
 * rkey of the MR key table (mr.c) whose entry, once bound, describes [addr, addr+length)
 * of an MR with the window's own remote access, and borrows that MR's page table: the
 * responder (resp.c) then reaches a window exactly as it reaches an MR, plus one rule,
 * nic_mw_reachable. The MR counts its bound windows and refuses deregistration meanwhile,
 * so the borrowed table outlives every window that uses it.
 *
 * Type 1 windows belong to a PD: any QP of that PD may reach them, and a BIND_MW moves
 * them (a new key each time, or an unbind with length 0). Type 2 windows are bound through
 * one QP and only that QP reaches them; they must be free to be bound, and a LOCAL_INV or
 * the peer's SEND_WITH_INVALIDATE frees them again.
 */
#include "nic_int.h"

static void unbind(struct nic_mw *mw)
{
	struct nic_mr *k = &mw->key;

	if (mw->mr)
		mw->mr->windows--;
	mw->mr = NULL;
	mw->qp = NULL;
	k->iopt = NULL;
	k->va = k->len = 0;
	k->access = 0;
	k->remote_invalid = true;	/* every remote access through the key fails */
}

int nic_mw_alloc(struct nic_pd *pd, unsigned type, struct nic_mw **out)
{
	struct nic *nic = pd ? pd->nic : NULL;
	struct nic_mw *mw;

	if (!pd || !out || (type != ODPEMU_MW_TYPE_1 && type != ODPEMU_MW_TYPE_2))
		return -EINVAL;
	if (nic->ctr.mws >= nic->attr.max_mw)
		return -ENOSPC;
	if (!(mw = calloc(1, sizeof(*mw))))
		return -ENOMEM;
	mw->type = type;
	mw->key.window = mw;
	mw->key.pd = pd;
	mw->key.client = pd->client;
	unbind(mw);
	if (nic_key_alloc(nic, &mw->key)) {
		free(mw);
		return -ENOMEM;
	}
	nic_list_add_tail(&nic->mws, &mw->link);
	pd->users++;
	nic->ctr.mws++;
	*out = mw;
	return 0;
}

int nic_mw_dealloc(struct nic_mw *mw)
{
	struct nic *nic;

	if (!mw)
		return -EINVAL;
	nic = mw->key.pd->nic;
	unbind(mw);
	nic_key_free(nic, mw->key.key);
	nic_list_del(&mw->link);
	mw->key.pd->users--;
	nic->ctr.mws--;
	free(mw);
	return 0;
}

uint32_t nic_mw_rkey(const struct nic_mw *mw) { return mw->key.key; }
void nic_mw_set_owner(struct nic_mw *mw, void *owner) { mw->key.owner = owner; }

bool nic_mw_reachable(const struct nic_mr *entry, const struct nic_qp *qp)
{
	const struct nic_mw *mw = entry->window;

	if (!mw)
		return true;
	/* IBA 10.6.7.2.3 / C10-82: a type 2 window answers only the QP it was bound through */
	return mw->mr && (mw->type == ODPEMU_MW_TYPE_1 || mw->qp == qp);
}

/* The window a BIND_MW names by its current rkey's index. Matching the index only, not
 * the whole key: a type 2 consumer keeps its own key (ibv_mw.rkey is not updated). */
static struct nic_mw *window_of(struct nic *nic, uint32_t rkey)
{
	uint32_t s = rkey >> 8;
	struct nic_mr *e = s && s < nic->mr_cap ? nic->mr_slot[s] : NULL;

	return e ? e->window : NULL;
}

/* Why the bind may not happen (IBA 10.6.7.2.2 and its compliance statements; rxe's
 * rxe_check_bind_mw), or NULL. */
static const char *bind_refusal(const struct nic_qp *qp, const struct nic_mw *mw,
				const struct nic_mr *mr, const struct nic_send_wr *wr)
{
	unsigned access = NIC_BIND_ACCESS(wr->swap);
	uint64_t va = wr->remote_addr, len = wr->compare_add;

	if (!mw || mw->key.pd != qp->pd)
		return "no window of the QP's PD";
	if ((wr->rkey >> 8) != (mw->key.key >> 8))
		return "the new rkey names another key index";
	if (access & ~ODPEMU_ACCESS_ALL_MW)
		return "window access other than remote read, write, atomic (zero based)";
	if (mw->type == ODPEMU_MW_TYPE_2 && mw->mr)
		return "C10-72: a type 2 window must be free to be bound";
	if (!len)
		return mw->type == ODPEMU_MW_TYPE_2 ? "a type 2 window needs a length" : NULL;
	if (!mr || mr->window || mr->pd != qp->pd)
		return "the lkey names no MR of the QP's PD";
	if (!(mr->access & ODPEMU_ACCESS_MW_BIND))
		return "C10-73: the MR was not registered with MW_BIND access";
	if ((access & (ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & ODPEMU_ACCESS_LOCAL_WRITE))
		return "C10-74: remote write or atomic windows need local write on the MR";
	if (mr->lease != NIC_LEASE_NONE)
		return "windows over leased MRs are not modelled";
	if (va < mr->va || va + len < va || va + len > mr->va + mr->len)
		return "C10-75: the window leaves the MR";
	return NULL;
}

enum odpemu_wc_status nic_mw_bind_wqe(struct nic_qp *qp, const struct nic_send_wr *wr)
{
	struct nic_mw *mw = window_of(qp->nic, wr->imm_data);
	struct nic_mr *mr = wr->compare_add ?
		nic_mr_lookup(qp->nic, NIC_BIND_LKEY(wr->swap)) : NULL;
	struct nic_mr *k;

	if (bind_refusal(qp, mw, mr, wr))
		return ODPEMU_WC_MW_BIND_ERR;
	unbind(mw);
	k = &mw->key;
	k->key = (k->key & ~0xffu) | (wr->rkey & 0xffu);
	if (!mr)
		return ODPEMU_WC_SUCCESS;	/* a type 1 window unbound (length 0) */
	mw->mr = mr;
	mw->qp = mw->type == ODPEMU_MW_TYPE_2 ? qp : NULL;
	mr->windows++;
	k->iopt = mr->iopt;
	k->client = mr->client;	/* the window reaches the MR's memory */
	k->va = wr->remote_addr;
	k->len = wr->compare_add;
	k->access = NIC_BIND_ACCESS(wr->swap) & ~ODPEMU_ACCESS_LOCAL_WRITE;
	k->odp = mr->odp;
	k->remote_invalid = false;
	return ODPEMU_WC_SUCCESS;
}

/* IBA 10.6.7.3: only a type 2 window is invalidated by key, and only a bound one of the
 * QP's PD. User MRs are not fast-registration MRs: LOCAL_INV of one fails, as on rxe. */
enum odpemu_wc_status nic_local_inv_wqe(struct nic_qp *qp, uint32_t rkey)
{
	struct nic_mr *e = nic_mr_lookup(qp->nic, rkey);

	if (!e || !e->window || e->pd != qp->pd || e->window->type != ODPEMU_MW_TYPE_2 ||
	    !e->window->mr)
		return ODPEMU_WC_LOC_QP_OP_ERR;
	unbind(e->window);
	return ODPEMU_WC_SUCCESS;
}

/* IBA 10.6.7.2.4 (o10-37.2.18): a type 1 window may not be invalidated remotely, a type 2
 * one only by a peer of the QP it was bound through. */
bool nic_mw_remote_invalidate(struct nic_mr *entry, const struct nic_qp *qp)
{
	struct nic_mw *mw = entry->window;

	if (mw->type != ODPEMU_MW_TYPE_2 || !mw->mr || mw->qp != qp)
		return false;
	unbind(mw);
	return true;
}

void nic_mw_qp_gone(struct nic_qp *qp)
{
	for (struct nic_list *l = qp->nic->mws.next; l != &qp->nic->mws; l = l->next) {
		struct nic_mw *mw = nic_container_of(l, struct nic_mw, link);

		if (mw->qp == qp)
			unbind(mw);
	}
}
