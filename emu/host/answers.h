/* SPDX-License-Identifier: MIT */
/*
 * answers — the loop's half of the fault path: the answers the fault thread (fault.h)
 * resolved wait here until their injected delay is over, then go to nic/
 * (nic_fault_complete or nic_fault_fail). Not to be confused with the thread itself
 * (emu_fault_*): this is the scheduler that delivers its answers.
 *
 * ORDER. A FIFO in the order answers arrived (the thread's answer order; answers made up on
 * the loop, for a client that is gone, join it too). Each round the due ones (due_ns <= now)
 * are taken out and delivered oldest first, so answers reach nic/ in request order; the
 * others keep their places. Random delays are not monotonic, so the queue is not in due
 * order and the next due time is found by walking it (it holds only the requests in flight;
 * with a fixed delay the head is the earliest).
 *
 * TAKING. While the loop polls it takes answers each round (emu_answers_poll); while it
 * sleeps, the fault thread's eventfd wakes it (emu_answers_rx).
 *
 * DELIVERY also counts the latency (fault_latency_us, and fault_deliver_wait_ns from due to
 * delivered), records the fill for --evict-rate
 * (evict.h), and replies to a synchronous advise_mr when its last request is answered.
 *
 * THREADING. The loop thread only.
 */
#ifndef ODPEMU_EMU_ANSWERS_H
#define ODPEMU_EMU_ANSWERS_H

#include <stdbool.h>
#include <stdint.h>

#include "io/loop.h"

struct emu_daemon;
struct emu_fault_job;

struct emu_answers {
	struct emu_fault_job *head, *tail;	/* answer order, linked by job->next; tail is
						 * the last job when head is not NULL */
};

/* Queue a job whose answer (err, maps, due_ns) is filled in. */
void emu_answers_add(struct emu_answers *a, struct emu_fault_job *j);
/* A polling loop's look, each round: take the thread's answers if any wait (no syscall
 * when none do). True if it took some. */
bool emu_answers_poll(struct emu_daemon *d);
/* d->fault_io's callback: the fault thread's eventfd is readable; take its answers. */
void emu_answers_rx(struct emu_io *io, const struct io_uring_cqe *cqe);
/* When the earliest queued answer is due; UINT64_MAX when none waits. */
uint64_t emu_answers_next_due(const struct emu_daemon *d);
/* Deliver every answer due at now, in answer order. Answers queued meanwhile (a raced
 * completion goes back to the fault port; nic/ resumes and faults on the next pages) that
 * are due at once are delivered too, for a few passes; the rest wait for the next call. */
void emu_answers_deliver(struct emu_daemon *d, uint64_t now);
/* At stop, after emu_fault_stop: deliver every answer the thread gave, delay or not, so
 * nic/ can let its lingering MRs go. */
void emu_answers_drain_all(struct emu_daemon *d);

#endif
