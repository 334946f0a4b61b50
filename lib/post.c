/* SPDX-License-Identifier: MIT */
/* Posting: check each work request, then write it into the shared ring as the daemon
 * reads it (struct ipc_swqe / ipc_rwqe). A chain is published with one release store of
 * the producer index and at most one doorbell. The daemon re-checks everything, but a
 * WR it refuses can only fail as a completion: the checks here are the ones ibv_post_send
 * reports synchronously, odpemu/wr_shape.h's, which nic/post.c applies too. */
#include <arpa/inet.h>
#include <assert.h>
#include <stddef.h>
#include <string.h>

#include "lib_int.h"
#include "odpemu/wr_shape.h"

/* The application's SGE array is copied into the ring as is. */
static_assert(sizeof(struct odpemu_sge) == sizeof(struct ipc_sge), "sge layout");
static_assert(offsetof(struct odpemu_sge, length) == offsetof(struct ipc_sge, length), "sge");
static_assert(offsetof(struct odpemu_sge, lkey) == offsetof(struct ipc_sge, lkey), "sge");

static uint64_t sge_total(const struct odpemu_sge *sge, int n)
{
	uint64_t t = 0;

	for (int i = 0; i < n; i++)
		t += sge[i].length;
	return t;
}

/* Where the remote address and rkey sit: the verbs union has one member per kind. */
static void remote_of(const struct odpemu_send_wr *wr, uint64_t *addr, uint32_t *rkey)
{
	unsigned props = odpemu_wr_props(wr->opcode);

	*addr = 0;
	*rkey = 0;
	if (props & ODPEMU_WRP_ATOMIC) {
		*addr = wr->wr.atomic.remote_addr;
		*rkey = wr->wr.atomic.rkey;
	} else if (props & ODPEMU_WRP_NO_LOCAL) {
		*addr = wr->wr.flush.remote_addr;
		*rkey = wr->wr.flush.rkey;
	} else if (props & ODPEMU_WRP_REMOTE) {
		*addr = wr->wr.rdma.remote_addr;
		*rkey = wr->wr.rdma.rkey;
	}
}

/* What a BIND_MW must name before it reaches the ring: a window of this context, an MR
 * when it has a length (the rules of the bind itself are the NIC's: MW_BIND_ERR). */
static bool bind_refused(const struct lib_qp *qp, const struct odpemu_send_wr *wr)
{
	const struct odpemu_mw *mw = wr->bind_mw.mw;
	const struct odpemu_mw_bind_info *b = &wr->bind_mw.bind_info;

	return !mw || mw->context != qp->pub.context || (b->length && !b->mr) ||
	       (b->mr && b->mr->context != qp->pub.context);
}

/* The SGE count first, before the list is read; then the shape rules nic/ applies too
 * (odpemu/wr_shape.h), and a UD WR's address handle. */
static int check_send(const struct lib_qp *qp, const struct odpemu_send_wr *wr)
{
	struct odpemu_wr_shape s = { .qp_type = qp->pub.qp_type, .opcode = wr->opcode,
		.send_flags = wr->send_flags, .max_inline = qp->sq.max_inline,
		.device_caps = qp->device_caps };
	uint32_t rkey;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq.max_sge ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (qp->pub.qp_type == ODPEMU_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	if (wr->opcode == ODPEMU_WR_BIND_MW && bind_refused(qp, wr))
		return EINVAL;
	s.num_sge = (unsigned)wr->num_sge;
	if (odpemu_wr_props(wr->opcode) & ODPEMU_WRP_NO_LOCAL) {
		s.len = wr->wr.flush.len;
		s.flush_type = wr->wr.flush.type;
		s.flush_level = wr->wr.flush.level;
	} else {
		s.len = sge_total(wr->sg_list, wr->num_sge);
	}
	remote_of(wr, &s.remote_addr, &rkey);
	return odpemu_wr_shape_ok(&s) ? 0 : EINVAL;
}

/* BIND_MW in the slot's fields, as nic/nic.h says: imm_data the window's rkey (its index
 * names it), rkey the new one, remote_addr/compare_add the range, swap lkey and access. */
static void fill_bind(struct ipc_swqe *w, const struct odpemu_send_wr *wr)
{
	const struct odpemu_mw_bind_info *b = &wr->bind_mw.bind_info;

	w->imm_data = wr->bind_mw.mw->rkey;
	w->rkey = wr->bind_mw.rkey;
	w->remote_addr = b->addr;
	w->compare_add = b->length;
	w->swap = (uint64_t)b->mw_access_flags << 32 | (b->mr ? b->mr->lkey : 0);
}

static void fill_remote(struct ipc_swqe *w, const struct odpemu_send_wr *wr)
{
	if (wr->opcode == ODPEMU_WR_BIND_MW)
		return fill_bind(w, wr);
	remote_of(wr, &w->remote_addr, &w->rkey);
	if (odpemu_wr_props(wr->opcode) & ODPEMU_WRP_ATOMIC) {
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else if (odpemu_wr_props(wr->opcode) & ODPEMU_WRP_NO_LOCAL) {
		w->flush_len = wr->wr.flush.len;
		w->flush_type = wr->wr.flush.type;
		w->flush_level = wr->wr.flush.level;
	}
}

/* The slot holds the header then the SGEs, or the inline bytes copied from them now
 * (the application may reuse its buffers as soon as post returns). */
static void write_swqe(const struct lib_qp *qp, struct ipc_swqe *w, const struct odpemu_send_wr *wr)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = (uint32_t)wr->opcode;
	w->send_flags = wr->send_flags;
	if (odpemu_wr_props(wr->opcode) & ODPEMU_WRP_IMM)
		w->imm_data = ntohl(wr->imm_data);	/* verbs: network order; ipc: host */
	else if ((odpemu_wr_props(wr->opcode) & ODPEMU_WRP_INV) ||
		 wr->opcode == ODPEMU_WR_LOCAL_INV)
		w->imm_data = wr->invalidate_rkey;
	fill_remote(w, wr);
	if (qp->pub.qp_type == ODPEMU_QPT_UD) {
		memcpy(w->ud_dgid, wr->wr.ud.ah->attr.grh.dgid.raw, sizeof(w->ud_dgid));
		w->remote_qpn = wr->wr.ud.remote_qpn;
		w->remote_qkey = wr->wr.ud.remote_qkey;
	}
	if (wr->send_flags & ODPEMU_SEND_INLINE) {
		char *p = (char *)w->sge;

		for (int i = 0; i < wr->num_sge; i++) {
			if (!wr->sg_list[i].length)
				continue;	/* its addr may be NULL (UCX's zero-byte puts) */
			memcpy(p, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			p += wr->sg_list[i].length;
		}
		w->inline_len = (uint32_t)(p - (char *)w->sge);
	} else if (wr->num_sge) {
		w->num_sge = (uint32_t)wr->num_sge;
		memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ipc_sge));
	}
}

/* IBA 10.8.2: sends before RTS are an immediate error; ERR is accepted (flushed). */
static bool send_state_ok(int state)
{
	return state != ODPEMU_QPS_RESET && state != ODPEMU_QPS_INIT && state != ODPEMU_QPS_RTR;
}

ODPEMU_EXPORT int odpemu_post_send(struct odpemu_qp *pub, struct odpemu_send_wr *wr,
				   struct odpemu_send_wr **bad_wr)
{
	struct lib_qp *qp = (struct lib_qp *)pub;
	struct lib_ring *r;
	uint32_t start;
	bool posted;
	int rc = 0;

	if (!pub || !bad_wr)
		return lib_fail(EINVAL);
	if (lib_forked(lib_ctx(pub->context))) {	/* the rings are the parent's (fork.c) */
		*bad_wr = wr;
		return lib_fail(ENODEV);
	}
	if (!send_state_ok(atomic_load_explicit(&qp->state, memory_order_relaxed))) {
		*bad_wr = wr;
		return lib_fail(EINVAL);
	}
	r = &qp->sq.ring;
	pthread_spin_lock(&qp->sq.lock);
	start = r->head;
	for (; wr; wr = wr->next) {
		rc = check_send(qp, wr);
		if (!rc && !lib_wq_room(&qp->sq))
			rc = ENOMEM;
		if (rc)
			break;
		write_swqe(qp, lib_ring_slot(r, r->head), wr);
		r->head++;
	}
	posted = r->head != start;
	if (posted)
		lib_ring_publish(r);
	pthread_spin_unlock(&qp->sq.lock);
	if (posted)
		lib_doorbell_obj(lib_ctx(pub->context), pub->handle);
	if (rc) {
		*bad_wr = wr;
		return lib_fail(rc);
	}
	return 0;
}

static void write_rwqe(struct ipc_rwqe *w, const struct odpemu_recv_wr *wr)
{
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	w->pad = 0;
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ipc_sge));
}

/* Receive WQEs into an RQ or SRQ ring. */
static int post_rwqes(struct lib_context *c, uint32_t handle, struct lib_wq *wq,
		      struct odpemu_recv_wr *wr, struct odpemu_recv_wr **bad_wr)
{
	struct lib_ring *r = &wq->ring;
	uint32_t start;
	bool posted;
	int rc = 0;

	if (lib_forked(c)) {	/* the rings are the parent's (fork.c) */
		*bad_wr = wr;
		return lib_fail(ENODEV);
	}
	pthread_spin_lock(&wq->lock);
	start = r->head;
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge ||
		    (wr->num_sge && !wr->sg_list))
			rc = EINVAL;
		else if (!lib_wq_room(wq))
			rc = ENOMEM;
		if (rc)
			break;
		write_rwqe(lib_ring_slot(r, r->head), wr);
		r->head++;
	}
	posted = r->head != start;
	if (posted)
		lib_ring_publish(r);
	pthread_spin_unlock(&wq->lock);
	if (posted)
		lib_doorbell_obj(c, handle);
	if (rc) {
		*bad_wr = wr;
		return lib_fail(rc);
	}
	return 0;
}

ODPEMU_EXPORT int odpemu_post_recv(struct odpemu_qp *pub, struct odpemu_recv_wr *wr,
				   struct odpemu_recv_wr **bad_wr)
{
	struct lib_qp *qp = (struct lib_qp *)pub;

	if (!pub || !bad_wr)
		return lib_fail(EINVAL);
	/* RESET takes no receives (IBA 10.8.2); a QP on an SRQ has no receive queue. */
	if (pub->srq || atomic_load_explicit(&qp->state, memory_order_relaxed) == ODPEMU_QPS_RESET) {
		*bad_wr = wr;
		return lib_fail(EINVAL);
	}
	return post_rwqes(lib_ctx(pub->context), pub->handle, &qp->rq, wr, bad_wr);
}

ODPEMU_EXPORT int odpemu_post_srq_recv(struct odpemu_srq *pub, struct odpemu_recv_wr *wr,
				       struct odpemu_recv_wr **bad_wr)
{
	if (!pub || !bad_wr)
		return lib_fail(EINVAL);
	return post_rwqes(lib_ctx(pub->context), pub->handle, &((struct lib_srq *)pub)->wq, wr,
			  bad_wr);
}
