/* SPDX-License-Identifier: MIT */
/* answers — see answers.h. */
#include "answers.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "ctl.h"
#include "daemon.h"
#include "evict.h"
#include "fault.h"
#include "nic.h"
#include "session.h"

#define DELIVER_PASSES	4

void emu_answers_add(struct emu_answers *a, struct emu_fault_job *j)
{
	j->next = NULL;
	if (a->head)
		a->tail->next = j;
	else
		a->head = j;
	a->tail = j;
}

/* Everything the thread has answered, into the queue. */
static void take_all(struct emu_daemon *d)
{
	struct emu_fault_job *jobs[64];
	unsigned n;

	while ((n = emu_fault_take(d->fault, jobs, 64)))
		for (unsigned i = 0; i < n; i++)
			emu_answers_add(&d->answers, jobs[i]);
}

bool emu_answers_poll(struct emu_daemon *d)
{
	if (!d->fault || !emu_fault_answers_waiting(d->fault))
		return false;
	take_all(d);
	return true;
}

void emu_answers_rx(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_daemon *d = (struct emu_daemon *)((char *)io - offsetof(struct emu_daemon, fault_io));

	take_all(d);
	if (!(cqe->flags & IORING_CQE_F_MORE))
		emu_loop_poll_in(&d->loop, emu_fault_eventfd(d->fault), &d->fault_io);
}

uint64_t emu_answers_next_due(const struct emu_daemon *d)
{
	uint64_t t = UINT64_MAX;

	for (const struct emu_fault_job *j = d->answers.head; j; j = j->next)
		if (j->due_ns < t)
			t = j->due_ns;
	return t;
}

static void count_latency(struct emu_daemon *d, uint64_t ns)
{
	unsigned b = 0;

	for (uint64_t us = ns / 1000; us > 1 && b < 23; us >>= 1)
		b++;
	d->ctr.fault_lat_us[b]++;
	emu_lathist_add(&d->ctr.fault_lat_ns, ns);
}

/* The last request of a synchronous advise_mr was answered: reply to it. */
static void advise_answered(struct emu_daemon *d, const struct emu_fault_job *j)
{
	struct emu_session *s = emu_session_by_id(d, j->client);

	if (!s || !s->advise_pending)
		return;
	if (j->err)
		s->advise_err = j->err;
	if (--s->advise_pending || !s->advise_hdr.op)
		return;
	emu_ctl_reply(s, &s->advise_hdr, s->advise_err, NULL, 0, NULL, 0);
	s->advise_hdr.op = 0;
}

static void deliver(struct emu_daemon *d, struct emu_fault_job *j, uint64_t now)
{
	struct iopt *t = j->req->dom;	/* read before the answer frees the request */
	int rc;

	count_latency(d, now - j->enqueued_ns);
	if (now > j->due_ns)
		d->ctr.fault_deliver_wait_ns += now - j->due_ns;

	if (j->err) {
		nic_fault_fail(d->nic, j->req, j->err, now);
	} else if ((rc = nic_fault_complete(d->nic, j->req, j->maps, j->nmaps, now)) == -EINVAL) {
		j->err = -EFAULT;	/* nic/ failed it: the maps missed the need */
	} else if (rc == 0) {
		for (unsigned i = 0; i < j->nmaps; i++)
			emu_evict_note_fill(d, t, j->maps[i].va, j->maps[i].len);
	}
	if (j->advise)
		advise_answered(d, j);
	if (j->uffd >= 0)
		close(j->uffd);
	free(j);
}

/* One pass: deliver what is due at now, in answer order. */
static bool deliver_due(struct emu_daemon *d, uint64_t now)
{
	struct emu_answers *a = &d->answers;
	struct emu_fault_job **p = &a->head, *ready = NULL, **ready_tail = &ready;

	/* Take the due ones out first: delivering may queue new jobs. */
	a->tail = NULL;
	while (*p) {
		struct emu_fault_job *j = *p;

		if (j->due_ns <= now) {
			*p = j->next;
			j->next = NULL;
			*ready_tail = j;
			ready_tail = &j->next;
		} else {
			a->tail = j;
			p = &j->next;
		}
	}
	if (!ready)
		return false;
	nic_batch_begin(d->nic);
	while (ready) {
		struct emu_fault_job *j = ready;

		ready = j->next;
		deliver(d, j, now);
	}
	nic_batch_end(d->nic, now);
	return true;
}

void emu_answers_deliver(struct emu_daemon *d, uint64_t now)
{
	/* An answer lets nic/ go on with the requests it held, which may fault on the next
	 * pages; resolved inline, those answers are due at once. Deliver them in the same
	 * round instead of after the rest of the loop's work (a few passes, so one round
	 * stays bounded). */
	for (unsigned pass = 0; pass < DELIVER_PASSES && deliver_due(d, now); pass++)
		now = emu_now_ns();
}

void emu_answers_drain_all(struct emu_daemon *d)
{
	take_all(d);
	for (struct emu_fault_job *j = d->answers.head; j; j = j->next)
		j->due_ns = 0;
	emu_answers_deliver(d, emu_now_ns());
}
