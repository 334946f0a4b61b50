/* SPDX-License-Identifier: MIT */
/* lease — MR leases, the daemon's side (see lease.h, docs/regcache.md). */
#include "lease.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "nic.h"
#include "watch.h"

/* A held call waiting for the acknowledgements of the leases it broke. */
struct emu_hold {
	struct emu_hold *next;		/* s->holds */
	uint64_t id;			/* the seccomp notification */
	unsigned slot;			/* its word in the client's held table */
	uint64_t deadline;		/* ns: then the unacknowledged leases are revoked */
	unsigned waiting;		/* leases of this hold not acknowledged yet */
};

static struct emu_obj *mr_of_node(struct interval_node *n)
{
	return (struct emu_obj *)((char *)n - offsetof(struct emu_obj, u.mr.lease.node));
}

void emu_lease_attach(struct emu_obj *mr)
{
	mr->u.mr.lease.on = true;
	mr->u.mr.lease.node.start = (uintptr_t)(mr->u.mr.va & ~4095ull);
	mr->u.mr.lease.node.end = (uintptr_t)((mr->u.mr.va + mr->u.mr.len + 4095) & ~4095ull);
	interval_insert(&mr->s->leases, &mr->u.mr.lease.node);
}

/* The client's held table (ipc_supervise_req): the id of each call we hold, so that the
 * library lets them go if we die holding them. */
static bool held_write(struct emu_session *s, unsigned slot, uint64_t id)
{
	struct iovec l = { &id, sizeof(id) };
	struct iovec rm = { (void *)(uintptr_t)(s->held_at + slot * 8ull), sizeof(id) };

	return process_vm_writev(s->pid, &l, 1, &rm, 1, 0) == (ssize_t)sizeof(id);
}

/* Let the held call run and forget the hold. */
static void release(struct emu_session *s, struct emu_hold *h)
{
	struct emu_hold **p = &s->holds;

	while (*p != h)
		p = &(*p)->next;
	*p = h->next;
	emu_watch_answer(s, h->id);
	(void)held_write(s, h->slot, 0);	/* fails only when the client is gone */
	s->held_used &= ~(1ull << h->slot);
	free(h);
}

/* One lease of h is settled (acknowledged, revoked or gone). */
static void settle(struct emu_obj *mr)
{
	struct emu_hold *h = mr->u.mr.lease.hold;

	if (!h)
		return;
	mr->u.mr.lease.hold = NULL;
	if (!--h->waiting)
		release(mr->s, h);
}

void emu_lease_detach(struct emu_obj *mr)
{
	if (!mr->u.mr.lease.on)
		return;
	settle(mr);
	interval_remove(&mr->s->leases, &mr->u.mr.lease.node);
	mr->u.mr.lease.on = false;
}

/* NULL without memory, without a free slot (IPC_HELD_SLOTS calls held at once), or when
 * the id cannot be recorded: the call then runs at once. */
static struct emu_hold *hold_new(struct emu_session *s, uint64_t id)
{
	struct emu_hold *h;
	unsigned slot;

	if (s->held_used == UINT64_MAX)
		return NULL;
	slot = (unsigned)__builtin_ctzll(~s->held_used);
	if (!held_write(s, slot, id) || !(h = calloc(1, sizeof(*h))))
		return NULL;
	s->held_used |= 1ull << slot;
	h->slot = slot;
	h->id = id;
	h->deadline = emu_now_ns() + s->d->opt.lease_timeout_ms * 1000000ull;
	h->next = s->holds;
	s->holds = h;
	return h;
}

/* Break one coherent lease, joining it to *hold. Without a hold (hold_new) the lease
 * still breaks and is told, but the call runs at once (as if acknowledged). */
static void break_one(struct emu_obj *mr, uint64_t id, struct emu_hold **hold)
{
	struct emu_session *s = mr->s;

	if (nic_mr_lease_break(mr->u.mr.mr))
		return;		/* broken already: no new event, no wait (lease.h) */
	s->d->ctr.lease_breaks++;
	if (!*hold && !(*hold = hold_new(s, id)))
		emu_log(EMU_LOG_WARN, "session %u: cannot hold a lease break (%d held); the "
			"change runs at once", s->id, __builtin_popcountll(s->held_used));
	if (*hold) {
		mr->u.mr.lease.hold = *hold;
		(*hold)->waiting++;
	}
	emu_session_event(s, ODPEMU_EVENT_MR_DECOHERENCE, mr->handle);
}

/* As watch.c's fire: each lease found leaves the index so the next search finds the
 * next one (O(k log n)), then all go back. */
void emu_lease_change(struct emu_session *s, uint64_t id, uint64_t start, uint64_t end,
		      struct emu_hold **hold)
{
	struct emu_obj *hits = NULL;
	struct interval_node *n;

	if (start >= end)
		return;
	while ((n = interval_find_overlap(&s->leases, (uintptr_t)start, (uintptr_t)end))) {
		struct emu_obj *mr = mr_of_node(n);

		interval_remove(&s->leases, n);
		break_one(mr, id, hold);
		mr->u.mr.lease.hit = hits;
		hits = mr;
	}
	for (; hits; hits = hits->u.mr.lease.hit)
		interval_insert(&s->leases, &hits->u.mr.lease.node);
}

void emu_lease_session_close(struct emu_session *s)
{
	while (s->holds) {
		struct emu_hold *h = s->holds;

		s->holds = h->next;
		emu_watch_answer(s, h->id);	/* a live process closing its device goes on */
		(void)held_write(s, h->slot, 0);
		free(h);
	}
	s->held_used = 0;
	emu_for_each_obj(mr, s, EMU_OBJ_MR)
		mr->u.mr.lease.hold = NULL;
}

/* The hold's time is up: revoke every lease still waiting on it; the call runs. */
static void expire(struct emu_session *s, struct emu_hold *h)
{
	emu_for_each_obj(mr, s, EMU_OBJ_MR) {
		if (mr->u.mr.lease.hold != h)
			continue;
		mr->u.mr.lease.hold = NULL;
		h->waiting--;
		if (!nic_mr_lease_revoke(mr->u.mr.mr))
			s->d->ctr.lease_revocations++;
		emu_log(EMU_LOG_INFO, "session %u: MR %u revoked: its lease was not acknowledged "
			"within %llu ms", s->id, mr->handle,
			(unsigned long long)s->d->opt.lease_timeout_ms);
	}
	release(s, h);
}

void emu_lease_tick(struct emu_daemon *d, uint64_t now)
{
	for (struct emu_session *s = d->sessions; s; s = s->next) {
		struct emu_hold *h = s->holds;

		while (h) {
			struct emu_hold *next = h->next;

			if (h->deadline <= now)
				expire(s, h);
			h = next;
		}
	}
}

uint64_t emu_lease_next_deadline(struct emu_daemon *d)
{
	uint64_t t = UINT64_MAX;

	for (struct emu_session *s = d->sessions; s; s = s->next)
		for (struct emu_hold *h = s->holds; h; h = h->next)
			if (h->deadline < t)
				t = h->deadline;
	return t;
}

/* The holder acknowledged the MR_DECOHERENCE of a leased MR: its change may run. An MR
 * not waiting (acknowledged already, timed out, never broken) is fine: the library
 * acknowledges every decoherence event of a leased MR. */
static int op_lease_ack(struct emu_req *r)
{
	struct emu_obj *mr = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_MR);

	if (!mr || !mr->u.mr.lease.on)
		return emu_reply_err(r, -EINVAL, "lease_ack: no leased MR %u", r->hdr->handle);
	if (mr->u.mr.lease.hold) {
		r->s->d->ctr.lease_acks++;
		settle(mr);
	}
	return emu_ctl_reply(r->s, r->hdr, 0, NULL, 0, NULL, 0);
}

emu_op_fn emu_lease_op(unsigned op)
{
	return op == IPC_LEASE_ACK ? op_lease_ack : NULL;
}
