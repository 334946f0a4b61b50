/* SPDX-License-Identifier: MIT */
/*
 * rings — the data path in shared memory. Work requests come in through SQ/RQ/SRQ rings
 * and go into nic/ (one nic_post_send_list per drained batch: one doorbell, one AckReq);
 * completions go out through CQ rings. The client wrote every slot and index: each slot is
 * copied out before it is checked, and an index that claims more than the ring holds is
 * clamped, so a misbehaving client can break only its own queues.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon.h"
#include "ipc_ring.h"
#include "log.h"
#include "nic.h"
#include "rings.h"
#include "session.h"

int emu_ring_map(struct emu_obj *o, size_t len, int *fd_out)
{
	int fd = memfd_create("odpemu-ring", MFD_CLOEXEC);
	void *p;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) ||
	    (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		int e = -errno;

		close(fd);
		return e;
	}
	o->map = p;
	o->map_len = len;
	*fd_out = fd;
	return 0;
}

void emu_ring_setup(struct emu_ring *r, void *base, uint32_t at, uint32_t size, uint32_t slot)
{
	ipc_ring_init(base, at, size, slot);
	r->hdr = (struct ipc_ring *)((char *)base + at);
	r->base = base;
	r->offset = at + IPC_RING_HDR_BYTES;
	r->size = size;
	r->slot = slot;
	r->idx = 0;
}

/* Entries the client has produced and the daemon not yet consumed, clamped to the ring. */
static uint32_t ring_avail(const struct emu_ring *r)
{
	uint32_t n = atomic_load_explicit(&r->hdr->prod, memory_order_acquire) - r->idx;

	return n > r->size ? r->size : n;
}

static void *slot_at(const struct emu_ring *r, uint32_t idx)
{
	return ipc_ring_slot(r->base, r->offset, r->size, r->slot, idx);
}

static void consume(struct emu_ring *r, uint32_t n)
{
	r->idx += n;
	atomic_store_explicit(&r->hdr->cons, r->idx, memory_order_release);
}

/* ---- send queues ---- */

_Static_assert(sizeof(struct ipc_sge) == sizeof(struct nic_sge) &&
	       offsetof(struct ipc_sge, lkey) == offsetof(struct nic_sge, lkey),
	       "ipc_sge must have nic_sge's layout");

/* Turn a copied slot into a nic WR; false if the client wrote nonsense. */
static bool swqe_to_wr(struct emu_obj *q, struct emu_wr_copy *c, uint32_t slot_len,
		       struct nic_send_wr *wr)
{
	struct ipc_swqe *w = (struct ipc_swqe *)(void *)c->slot;
	size_t room = slot_len - sizeof(*w);

	if (w->num_sge > q->u.qp.max_send_sge || w->num_sge * sizeof(struct ipc_sge) > room ||
	    w->inline_len > q->u.qp.max_inline || w->inline_len > room ||
	    (w->inline_len && w->num_sge))
		return false;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = w->wr_id;
	wr->opcode = w->opcode;
	wr->send_flags = w->send_flags;
	wr->imm_data = w->imm_data;
	wr->remote_addr = w->remote_addr;
	wr->rkey = w->rkey;
	wr->compare_add = w->compare_add;
	wr->swap = w->swap;
	wr->flush_type = w->flush_type;
	wr->flush_level = w->flush_level;
	wr->flush_len = w->flush_len;
	memcpy(wr->ud_dgid.raw, w->ud_dgid, 16);
	wr->remote_qpn = w->remote_qpn;
	wr->remote_qkey = w->remote_qkey;
	/* nic_sge and ipc_sge have the same shape; the copy is aligned. */
	wr->sg_list = (const struct nic_sge *)(void *)w->sge;
	wr->num_sge = w->num_sge;
	if (w->send_flags & ODPEMU_SEND_INLINE) {
		/* nic copies inline bytes from a pointer in this process: the slot copy. */
		c->inl = (struct nic_sge){ .addr = (uint64_t)(uintptr_t)(w + 1),
			.length = w->inline_len };
		wr->sg_list = &c->inl;
		wr->num_sge = w->inline_len ? 1 : 0;
	}
	return true;
}

/* A WR the daemon had to refuse: complete it with an error in the client's send CQ by
 * moving the QP to ERR (nic then flushes it like every WR posted in ERR). */
static void refuse(struct emu_obj *q, const char *why)
{
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_ERR };

	q->s->d->ctr.ring_bad_wqe++;
	emu_log(EMU_LOG_WARN, "session %u QP %u: bad send WQE (%s): QP to ERR", q->s->id,
		nic_qp_num(q->u.qp.qp), why);
	nic_qp_modify(q->u.qp.qp, &a, ODPEMU_QP_STATE, emu_now_ns(), NULL);
	emu_session_event(q->s, ODPEMU_EVENT_QP_FATAL, q->handle);
}

static bool drain_sq(struct emu_obj *q)
{
	struct emu_ring *r = &q->u.qp.sq;
	struct emu_wr_copy *copies = q->s->d->drain.sq;	/* read by nic/ until it returns */
	struct nic_send_wr wrs[EMU_DRAIN_BATCH];
	uint32_t n = ring_avail(r), take = n < EMU_DRAIN_BATCH ? n : EMU_DRAIN_BATCH;
	unsigned posted = 0;
	int rc;

	if (!n)
		return false;
	for (uint32_t i = 0; i < take; i++) {
		memcpy(copies[i].slot, slot_at(r, r->idx + i), r->slot);
		if (!swqe_to_wr(q, &copies[i], r->slot, &wrs[i])) {
			take = i;
			if (!i) {
				consume(r, 1);
				refuse(q, "SGE count or inline size beyond the QP's caps");
				return true;
			}
			break;
		}
	}
	rc = nic_post_send_list(q->u.qp.qp, wrs, take, &posted, emu_now_ns());
	if (rc == -ENOMEM) {			/* the send queue is full: later */
		consume(r, posted);
		return posted > 0;
	}
	if (rc) {
		consume(r, posted + 1);
		refuse(q, rc == -EPERM ? "posted in a state that takes no sends" :
		       "malformed work request");
		return true;
	}
	consume(r, take);
	return true;
}

/* ---- receive queues ---- */

static int post_one_recv(struct emu_obj *o, struct ipc_rwqe *w, uint32_t max_sge,
			 size_t slot_len)
{
	struct nic_recv_wr wr;

	if (w->num_sge > max_sge || w->num_sge * sizeof(struct ipc_sge) > slot_len - sizeof(*w))
		return -EINVAL;
	wr = (struct nic_recv_wr){ .wr_id = w->wr_id, .num_sge = w->num_sge,
		.sg_list = (const struct nic_sge *)(void *)w->sge };
	if (o->type == EMU_OBJ_SRQ)
		return nic_srq_post_recv(o->u.srq.srq, &wr, emu_now_ns());
	return nic_post_recv(o->u.qp.qp, &wr, emu_now_ns());
}

static bool drain_rq(struct emu_obj *o, struct emu_ring *r, uint32_t max_sge)
{
	struct emu_wr_copy c;	/* one slot at a time: small enough for the stack */
	uint32_t n = ring_avail(r), done = 0;

	for (; done < n && done < EMU_DRAIN_BATCH; done++) {
		int rc;

		memcpy(c.slot, slot_at(r, r->idx), r->slot);
		rc = post_one_recv(o, (struct ipc_rwqe *)(void *)c.slot, max_sge, r->slot);
		if (rc == -ENOMEM)
			break;
		consume(r, 1);
		if (rc && o->type == EMU_OBJ_QP) {
			refuse(o, "malformed receive WQE");
			break;
		}
		if (rc)
			o->s->d->ctr.ring_bad_wqe++;
	}
	return done > 0;
}

bool emu_rings_drain(struct emu_daemon *d)
{
	bool work = false;

	for (struct emu_session *s = d->sessions; s; s = s->next) {
		emu_for_each_obj(qp, s, EMU_OBJ_QP) {
			work |= drain_sq(qp);
			if (!qp->u.qp.srq)
				work |= drain_rq(qp, &qp->u.qp.rq, qp->u.qp.max_recv_sge);
		}
		emu_for_each_obj(srq, s, EMU_OBJ_SRQ)
			work |= drain_rq(srq, &srq->u.srq.ring, srq->u.srq.max_sge);
	}
	return work;
}

/* ---- completion queues ---- */

static void notify(struct emu_obj *cq)
{
	struct ipc_cq_event ev = { .cq = cq->handle };
	struct emu_obj *ch = cq->u.cq.channel;

	cq->u.cq.notify_pending = false;
	if (ch && write(ch->u.ch.wr_fd, &ev, sizeof(ev)) != sizeof(ev))
		cq->s->d->ctr.events_dropped++;
}

/* A new arm request: fire at once if completions are already waiting (the client may
 * have polled an empty ring just before they landed), else arm nic/. */
static void take_arm(struct emu_obj *cq)
{
	struct emu_ring *r = &cq->u.cq.ring;
	uint32_t seq = atomic_load_explicit(&r->hdr->arm_seq, memory_order_acquire);

	if (seq == cq->u.cq.arm_seen)
		return;
	cq->u.cq.arm_seen = seq;
	atomic_store_explicit(&r->hdr->arm_done, seq, memory_order_release);
	if (r->idx != atomic_load_explicit(&r->hdr->cons, memory_order_acquire))
		notify(cq);
	else
		nic_cq_req_notify(cq->u.cq.cq,
				  atomic_load_explicit(&r->hdr->arm_solicited, memory_order_relaxed));
}

static void wc_to_cqe(struct ipc_cqe *e, const struct nic_wc *wc, uint64_t now_ns)
{
	memset(e, 0, sizeof(*e));
	e->wr_id = wc->wr_id;
	e->status = wc->status;
	e->opcode = wc->opcode;
	e->byte_len = wc->byte_len;
	e->imm_data = wc->imm_data;
	e->qp_num = wc->qp_num;
	e->src_qp = wc->src_qp;
	e->wc_flags = wc->wc_flags;
	e->vendor_err = wc->vendor_err;
	e->ts_ns = now_ns;
}

/* ports.cq_write: nic/ writes each completion here, straight into the application's ring,
 * stamped with the time it was written; false when the ring is full (nic/ then overflows
 * the CQ, exactly at the size the application was granted). */
bool emu_cq_write(struct emu_obj *cq, const struct nic_wc *wc)
{
	struct emu_ring *r = &cq->u.cq.ring;
	uint32_t cons = atomic_load_explicit(&r->hdr->cons, memory_order_acquire);

	if (r->idx - cons >= r->size)
		return false;
	wc_to_cqe(slot_at(r, r->idx), wc, emu_now_ns());
	r->idx++;
	/* release: the slot is written before the client can see prod cover it */
	atomic_store_explicit(&r->hdr->prod, r->idx, memory_order_release);
	return true;
}

/* Once a round: arm requests, and notifications nic/ raised while writing completions
 * (the completion is in the ring before its event is). */
static void service_cq(struct emu_obj *cq)
{
	take_arm(cq);
	if (cq->u.cq.notify_pending)
		notify(cq);
}

void emu_rings_service_cqs(struct emu_daemon *d)
{
	for (struct emu_session *s = d->sessions; s; s = s->next)
		emu_for_each_obj(cq, s, EMU_OBJ_CQ)
			service_cq(cq);
}
