/* SPDX-License-Identifier: MIT */
/*
 * rings — the data path in shared memory. Work requests come in through SQ/RQ/SRQ rings
 * and go into nic/ (one nic_post_send_list per drained batch: one doorbell, one AckReq);
 * completions go out through CQ rings. The client wrote every slot and index: each slot is
 * copied out before it is checked, and a producer index that claims more than the ring
 * holds is refused once and then ignored (nothing is taken from the ring while it does),
 * so a misbehaving client can break only its own queues, and only once: a QP in ERR takes
 * further bad slots without another log line or event. A slot refused is a malformed WQE
 * to nic/ (nic_post_send_bad): it completes LOC_QP_OP_ERR, as a NIC completes one it
 * fetched, so the client waits for nothing; what follows it flushes. An SRQ has no QP to
 * complete in: a slot or index it refuses fails the SRQ (nic_srq_post_recv_bad: SRQ_ERR,
 * and QP_FATAL for every QP on it), which the client hears on its async event channel.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon.h"
#include "ipc_db.h"
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
	r->lied = false;
	r->release = EMU_RELEASE_ON_COPY;
	r->retired = 0;
}

void emu_ring_release_on_completion(struct emu_ring *r)
{
	r->release = EMU_RELEASE_ON_COMPLETION;
}

static void publish_cons(struct emu_ring *r, uint32_t cons)
{
	atomic_store_explicit(&r->hdr->cons, cons, memory_order_release);
}

void emu_ring_reset(struct emu_ring *r)
{
	if (r->release == EMU_RELEASE_ON_COMPLETION)
		publish_cons(r, r->retired = r->idx);
}

/* One of the QP's receive WQEs completed (or flushed): its slot goes back. */
static void retire_recv(struct emu_ring *r)
{
	if (r->release == EMU_RELEASE_ON_COMPLETION && r->retired != r->idx)
		publish_cons(r, ++r->retired);
}

/* Entries the client has produced and the daemon not yet consumed. An honest producer
 * waits for cons, so an index more than the ring ahead is a lie: nothing is taken. */
static uint32_t ring_avail(const struct emu_ring *r)
{
	uint32_t n = atomic_load_explicit(&r->hdr->prod, memory_order_acquire) - r->idx;

	return n > r->size ? 0 : n;
}

/* Does the producer index lie, for the first time since it last made sense? */
static bool ring_lies(struct emu_ring *r)
{
	uint32_t n = atomic_load_explicit(&r->hdr->prod, memory_order_acquire) - r->idx;
	bool first = n > r->size && !r->lied;

	r->lied = n > r->size;
	return first;
}

static void *slot_at(const struct emu_ring *r, uint32_t idx)
{
	return ipc_ring_slot(r->base, r->offset, r->size, r->slot, idx);
}

static void consume(struct emu_ring *r, uint32_t n)
{
	r->idx += n;
	if (r->release == EMU_RELEASE_ON_COPY)
		publish_cons(r, r->idx);
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

static bool in_err(const struct emu_obj *q)
{
	return nic_qp_state(q->u.qp.qp) == ODPEMU_QPS_ERR;
}

/* The client broke q's rings: counted; unless said already (q was in ERR), q to ERR (nic/
 * flushes what it holds), a log line and QP_FATAL: a ring of garbage is not a line per
 * slot. */
static void refuse(struct emu_obj *q, bool said, const char *why)
{
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_ERR };

	q->s->d->ctr.ring_bad_wqe++;
	if (said)
		return;
	emu_log(EMU_LOG_WARN, "session %u QP %u: bad WQE (%s): QP to ERR", q->s->id,
		nic_qp_num(q->u.qp.qp), why);
	if (!in_err(q))		/* not already failed by its refused WQE */
		nic_qp_modify(q->u.qp.qp, &a, ODPEMU_QP_STATE, emu_now_ns(), NULL);
	emu_session_event(q->s, ODPEMU_EVENT_QP_FATAL, q->handle);
}

/* The client broke an SRQ's ring: counted; the first time, the SRQ fails (nic/ raises
 * SRQ_ERR, and QP_FATAL for each QP on it) and one log line. */
static void refuse_srq(struct emu_obj *o, const char *why)
{
	o->s->d->ctr.ring_bad_wqe++;
	if (nic_srq_in_error(o->u.srq.srq))
		return;
	emu_log(EMU_LOG_WARN, "session %u SRQ %u: bad WQE (%s): SRQ to error", o->s->id,
		o->handle, why);
	nic_srq_post_recv_bad(o->u.srq.srq, emu_now_ns());
}

/* The send slot at the ring's head (copied in c) refused: it completes in error in its
 * place (nic_post_send_bad: the cause, not WR_FLUSH_ERR, and the QP in ERR), then it is
 * consumed. false: nic/'s send queue is full, the slot stays for a later round. */
static bool refuse_swqe(struct emu_obj *q, const struct emu_wr_copy *c, const char *why)
{
	const struct ipc_swqe *w = (const struct ipc_swqe *)(const void *)c->slot;
	bool said = in_err(q);

	if (nic_post_send_bad(q->u.qp.qp, w->wr_id, emu_now_ns()) == -ENOMEM)
		return false;
	consume(&q->u.qp.sq, 1);
	refuse(q, said, why);
	return true;
}

static bool drain_sq(struct emu_obj *q)
{
	struct emu_ring *r = &q->u.qp.sq;
	struct emu_wr_copy *copies = q->s->d->drain.sq;	/* read by nic/ until it returns */
	struct nic_send_wr wrs[EMU_DRAIN_BATCH];
	uint32_t n = ring_avail(r), take = n < EMU_DRAIN_BATCH ? n : EMU_DRAIN_BATCH;
	unsigned posted = 0;
	int rc;

	if (ring_lies(r))
		refuse(q, in_err(q), "producer index beyond the send ring");
	if (!n)
		return false;
	for (uint32_t i = 0; i < take; i++) {
		memcpy(copies[i].slot, slot_at(r, r->idx + i), r->slot);
		if (!swqe_to_wr(q, &copies[i], r->slot, &wrs[i])) {
			take = i;
			if (!i)
				return refuse_swqe(q, &copies[0], "SGE count or inline size "
						   "beyond the QP's caps");
			break;	/* those before it are posted; it is refused at the head */
		}
	}
	/* Consumed before anything is sent: a UC or UD WQE completes as it is sent, and the
	 * client may reuse its slot as soon as it sees the completion. */
	rc = nic_post_send_list_queue(q->u.qp.qp, wrs, take, &posted, emu_now_ns());
	consume(r, posted);
	nic_run_posted(q->s->d->nic, emu_now_ns());
	if (rc == -ENOMEM)			/* the send queue is full: later */
		return posted > 0;
	if (rc)
		return refuse_swqe(q, &copies[posted], rc == -EPERM ? "posted in a state that "
				   "takes no sends" : "malformed work request") || posted > 0;
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

	if (ring_lies(r)) {
		if (o->type == EMU_OBJ_QP)
			refuse(o, in_err(o), "producer index beyond the receive ring");
		else
			refuse_srq(o, "producer index beyond the receive ring");
	}

	for (; done < n && done < EMU_DRAIN_BATCH; done++) {
		struct ipc_rwqe *w = (struct ipc_rwqe *)(void *)c.slot;
		int rc;

		memcpy(c.slot, slot_at(r, r->idx), r->slot);
		rc = post_one_recv(o, w, max_sge, r->slot);
		if (rc == -ENOMEM)
			break;
		consume(r, 1);
		if (rc && o->type == EMU_OBJ_QP) {	/* completes in error, as a send slot */
			bool said = in_err(o);

			nic_post_recv_bad(o->u.qp.qp, w->wr_id, emu_now_ns());
			refuse(o, said, "malformed receive WQE");
			done++;
			break;
		}
		if (rc) {	/* an SRQ's: the SRQ fails (SRQ_ERR, its QPs QP_FATAL) */
			refuse_srq(o, rc == -EPERM ? "posted to an SRQ in error"
					  : "malformed receive WQE");
			done++;
			break;
		}
	}
	return done > 0;
}

static void take_arm(struct emu_obj *cq);

/* One object's rings; a ring that still holds entries (a batch's worth taken, or nic/'s
 * queue full) marks its object again for the next round. */
static bool drain_obj(struct emu_obj *o)
{
	bool work = false, again = false;

	if (o->type == EMU_OBJ_QP) {
		work = drain_sq(o);
		again = ring_avail(&o->u.qp.sq) > 0;
		if (!o->u.qp.srq) {
			work |= drain_rq(o, &o->u.qp.rq, o->u.qp.max_recv_sge);
			again |= ring_avail(&o->u.qp.rq) > 0;
		}
	} else if (o->type == EMU_OBJ_SRQ) {
		work = drain_rq(o, &o->u.srq.ring, o->u.srq.max_sge);
		again = ring_avail(&o->u.srq.ring) > 0;
	} else if (o->type == EMU_OBJ_CQ) {
		take_arm(o);
	}
	if (again && o->s->db)
		ipc_db_mark(o->s->db, o->handle);
	return work;
}

struct take {
	struct emu_session *s;
	bool work, all;
};

static void take_one(void *arg, uint32_t h)
{
	struct take *t = arg;
	struct emu_obj *o = h < t->s->tab->nobjs ? t->s->tab->objs[h] : NULL;

	if (!h)
		t->all = true;	/* handle 0: "look at everything" (lib_doorbell) */
	else if (o)		/* the client may mark anything: only existing objects count */
		t->work |= drain_obj(o);
}

/* Every queue of s: a session without a doorbell page, or one that asked (handle 0). */
static bool drain_all(struct emu_session *s, bool arms)
{
	bool work = false;

	emu_for_each_obj(qp, s, EMU_OBJ_QP)
		work |= drain_obj(qp);
	emu_for_each_obj(srq, s, EMU_OBJ_SRQ)
		work |= drain_obj(srq);
	if (arms)
		emu_for_each_obj(cq, s, EMU_OBJ_CQ)
			take_arm(cq);
	return work;
}

void emu_cq_take_posted(struct emu_obj *cq)
{
	emu_for_each_obj(qp, cq->s, EMU_OBJ_QP)
		if (qp->u.qp.send_cq == cq || qp->u.qp.recv_cq == cq)
			drain_obj(qp);
}

bool emu_rings_drain(struct emu_daemon *d)
{
	bool work = false;

	for (struct emu_session *s = d->sessions; s; s = s->next) {
		struct take t = { s, false, false };

		if (!s->db) {
			work |= drain_all(s, false);	/* arms: emu_rings_service_cqs */
			continue;
		}
		ipc_db_take(s->db, s->tab->nobjs, take_one, &t);
		if (t.all)
			t.work |= drain_all(s, true);
		work |= t.work;
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

	if (wc->opcode & ODPEMU_WC_RECV) {	/* a receive WQE of this QP is done */
		struct emu_obj *qp = nic_qp_owner_by_num(cq->s->d->nic, wc->qp_num);

		if (qp && qp->type == EMU_OBJ_QP && !qp->u.qp.srq)
			retire_recv(&qp->u.qp.rq);
	}

	if (r->idx - cons >= r->size)
		return false;
	wc_to_cqe(slot_at(r, r->idx), wc, emu_now_ns());
	r->idx++;
	/* release: the slot is written before the client can see prod cover it */
	atomic_store_explicit(&r->hdr->prod, r->idx, memory_order_release);
	return true;
}

uint32_t emu_cq_pending(const struct emu_obj *cq)
{
	const struct emu_ring *r = &cq->u.cq.ring;
	uint32_t n = r->idx - atomic_load_explicit(&r->hdr->cons, memory_order_acquire);

	return n > r->size ? UINT32_MAX : n;
}

/* The client's half of the header (arm requests) and ours (arm taken, overflow), so an
 * arm the client made before the resize is neither lost nor taken twice. */
static void copy_cq_hdr_state(struct ipc_ring *to, struct ipc_ring *from)
{
#define COPY_(f) atomic_store_explicit(&to->f, atomic_load_explicit(&from->f, \
			memory_order_acquire), memory_order_relaxed)
	COPY_(arm_seq);
	COPY_(arm_solicited);
	COPY_(arm_done);
	COPY_(overflow);
#undef COPY_
}

void emu_cq_ring_move(struct emu_obj *cq, void *base, uint32_t size, uint32_t pending)
{
	struct emu_ring *old = &cq->u.cq.ring, nr;
	uint32_t first = old->idx - pending;

	emu_ring_setup(&nr, base, 0, size, old->slot);
	/* Same indices in the new ring: pending <= size, so no two land in one slot. */
	for (uint32_t i = first; i != old->idx; i++)
		memcpy(slot_at(&nr, i), slot_at(old, i), old->slot);
	nr.idx = old->idx;
	copy_cq_hdr_state(nr.hdr, old->hdr);
	atomic_store_explicit(&nr.hdr->cons, first, memory_order_relaxed);
	/* release: the slots and counters are in place before prod covers them */
	atomic_store_explicit(&nr.hdr->prod, nr.idx, memory_order_release);
	*old = nr;
}

void emu_cq_notify_later(struct emu_obj *cq)
{
	if (cq->u.cq.notify_pending)
		return;
	cq->u.cq.notify_pending = true;
	if (cq->s->db && emu_session_cq_notify(cq))
		notify(cq);	/* no room to remember it: now (the completion is in the ring) */
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
	for (struct emu_session *s = d->sessions; s; s = s->next) {
		if (!s->db) {
			emu_for_each_obj(cq, s, EMU_OBJ_CQ)
				service_cq(cq);
			continue;
		}
		/* Arms were taken with the marks; a handle here may name a CQ destroyed (or
		 * another object) since: only a CQ still waiting is notified. */
		for (uint32_t i = 0; i < s->ncq_notify; i++) {
			struct emu_obj *cq = emu_obj_get(s, s->cq_notify[i], EMU_OBJ_CQ);

			if (cq && cq->u.cq.notify_pending)
				notify(cq);
		}
		s->ncq_notify = 0;
	}
}
