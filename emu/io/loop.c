/* SPDX-License-Identifier: MIT */
/* loop — one io_uring, completions dispatched to the emu_io that submitted them; or, on
 * the epoll kind, the same calls handed to loop_epoll.c (loop.h KINDS). */
#include "loop_int.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

uint64_t emu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *emu_loop_kind_name(enum emu_loop_kind kind)
{
	return kind == EMU_LOOP_EPOLL ? "epoll" : "io_uring";
}

static int uring_init(struct emu_loop *l, unsigned entries)
{
	struct io_uring_params p;
	int rc;

	memset(&p, 0, sizeof(p));
	/* COOP_TASKRUN: completions (an arriving packet) do not interrupt the loop with an
	 * IPI; they are reaped when the loop next enters the kernel, which it does every
	 * round (TASKRUN_FLAG tells liburing when). On a 2-vCPU host the interrupts cost a
	 * busy loop more than they save. Kernels before 5.19 refuse the flags: go without. */
	p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	p.cq_entries = entries * 2;
	rc = io_uring_queue_init_params(entries, &l->ring, &p);
	if (rc == -EINVAL) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_CQSIZE;
		p.cq_entries = entries * 2;
		rc = io_uring_queue_init_params(entries, &l->ring, &p);
	}
	return rc;
}

int emu_loop_init(struct emu_loop *l, unsigned entries, enum emu_loop_kind kind)
{
	memset(l, 0, sizeof(*l));
	l->kind = kind;
	l->entries = entries;
	l->epfd = -1;
	return kind == EMU_LOOP_EPOLL ? emu_epoll_init(l, entries) : uring_init(l, entries);
}

void emu_loop_fini(struct emu_loop *l)
{
	if (l->kind == EMU_LOOP_EPOLL)
		emu_epoll_fini(l);
	else
		io_uring_queue_exit(&l->ring);
}

void emu_loop_set_step(struct emu_loop *l, emu_loop_step_fn fn, void *arg)
{
	l->step = fn;
	l->step_arg = arg;
}

struct io_uring_sqe *emu_loop_sqe(struct emu_loop *l)
{
	struct io_uring_sqe *sqe;

	/* The SQ is full only when many arms pile up between waits; submitting frees it. */
	while (!(sqe = io_uring_get_sqe(&l->ring)))
		io_uring_submit(&l->ring);
	return sqe;
}

struct io_uring_sqe *emu_loop_sqe_for(struct emu_loop *l, struct emu_io *io)
{
	struct io_uring_sqe *sqe = emu_loop_sqe(l);

	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data(sqe, io);
	return sqe;
}

void emu_loop_poll_in(struct emu_loop *l, int fd, struct emu_io *io)
{
	struct io_uring_sqe *sqe;

	if (l->kind == EMU_LOOP_EPOLL) {
		emu_epoll_poll_in(l, fd, io);
		return;
	}
	sqe = emu_loop_sqe(l);
	io_uring_prep_poll_multishot(sqe, fd, POLLIN);
	io_uring_sqe_set_data(sqe, io);
}

void emu_loop_rearm(struct emu_loop *l, struct emu_io *io)
{
	if (l->kind == EMU_LOOP_EPOLL)
		emu_epoll_rearm(l, io);
}

/* Completions of io not yet dispatched lose their user_data, which dispatch skips. The CQ
 * entries between head and tail belong to user space until the head moves past them, so
 * rewriting them races with nothing. */
static void forget(struct emu_loop *l, struct emu_io *io)
{
	struct io_uring_cqe *cqe;
	unsigned head;

	io_uring_for_each_cqe(&l->ring, head, cqe) {
		if (cqe->user_data == (uint64_t)(uintptr_t)io)
			cqe->user_data = 0;
	}
}

/* SQEs for io the kernel has not read yet become NOPs nobody waits for. Without SQPOLL
 * the kernel reads the SQ only inside io_uring_enter, on this thread, so nothing races;
 * the SQ array maps slot i to SQE i (liburing sets it up so), and SQEs are 64 bytes. */
static void forget_queued(struct emu_loop *l, struct emu_io *io)
{
	struct io_uring_sq *sq = &l->ring.sq;

	for (unsigned i = io_uring_smp_load_acquire(sq->khead); i != sq->sqe_tail; i++) {
		struct io_uring_sqe *sqe = &sq->sqes[i & sq->ring_mask];

		if (sqe->user_data == (uint64_t)(uintptr_t)io) {
			io_uring_prep_nop(sqe);
			io_uring_sqe_set_data64(sqe, 0);
		}
	}
}

int emu_loop_cancel(struct emu_loop *l, struct emu_io *io)
{
	struct io_uring_sync_cancel_reg reg;
	int rc;

	if (l->kind == EMU_LOOP_EPOLL)
		return emu_epoll_cancel(l, io, false);
	forget_queued(l, io);
	memset(&reg, 0, sizeof(reg));
	reg.addr = (uint64_t)(uintptr_t)io;
	reg.fd = -1;
	reg.flags = IORING_ASYNC_CANCEL_ALL;
	reg.timeout.tv_sec = 1;	/* a cancel that takes longer is a kernel problem: report it */
	rc = io_uring_register_sync_cancel(&l->ring, &reg);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	/* Once no request is left, each one's last completion is in the CQ or, if the CQ was
	 * full, on the kernel's overflow list: entering the kernel moves those into the CQ
	 * (and runs any task work still holding one) as room allows. */
	for (int tries = 0; tries < 64; tries++) {
		(void)io_uring_get_events(&l->ring);
		forget(l, io);
		if (!io_uring_cq_has_overflow(&l->ring))
			return 0;
	}
	return -EBUSY;
}

int emu_loop_cancel_sync(struct emu_loop *l, struct emu_io *io)
{
	struct io_uring_sync_cancel_reg reg;
	int rc;

	if (l->kind == EMU_LOOP_EPOLL)
		return emu_epoll_cancel(l, io, true);
	io_uring_submit(&l->ring);	/* requests still in the SQ reach the kernel first */
	memset(&reg, 0, sizeof(reg));
	reg.addr = (uint64_t)(uintptr_t)io;
	reg.fd = -1;
	reg.flags = IORING_ASYNC_CANCEL_ALL;
	reg.timeout.tv_sec = 1;
	rc = io_uring_register_sync_cancel(&l->ring, &reg);
	return rc < 0 && rc != -ENOENT ? rc : 0;
}

/* One look: the n completions at the head of the CQ. The head moves past them only at the
 * end, so an emu_loop_cancel from a callback still finds (forget) the ones not yet
 * dispatched; those posted meanwhile wait for the next look. */
static void dispatch_look(struct emu_loop *l, unsigned n)
{
	struct io_uring_cqe *cqe;
	unsigned head, i = 0;

	io_uring_for_each_cqe(&l->ring, head, cqe) {
		struct emu_io *io = io_uring_cqe_get_data(cqe);

		if (i++ == n)
			break;
		if (io && io->fn)	/* user_data 0: a request nobody waits for */
			io->fn(io, cqe);
	}
	io_uring_cq_advance(&l->ring, n);
}

static unsigned dispatch(struct emu_loop *l)
{
	unsigned n, total = 0;

	while ((n = io_uring_cq_ready(&l->ring))) {
		if (l->step)	/* after the look's completions were posted (STEP, loop.h) */
			l->step(l->step_arg);
		dispatch_look(l, n);
		total += n;
	}
	return total;
}

int emu_loop_run_once(struct emu_loop *l, uint64_t deadline_ns)
{
	struct io_uring_cqe *cqe;
	uint64_t now = emu_now_ns();
	int rc;

	if (l->kind == EMU_LOOP_EPOLL)
		return emu_epoll_run_once(l, deadline_ns);
	if (deadline_ns <= now) {
		rc = io_uring_submit(&l->ring);
	} else if (deadline_ns == UINT64_MAX) {
		rc = io_uring_submit_and_wait(&l->ring, 1);
	} else {
		struct __kernel_timespec ts = {
			.tv_sec = (long long)((deadline_ns - now) / 1000000000ull),
			.tv_nsec = (long long)((deadline_ns - now) % 1000000000ull),
		};
		rc = io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, &ts, NULL);
	}
	if (rc < 0 && rc != -EINTR && rc != -ETIME && rc != -EBUSY)
		return rc;
	return (int)dispatch(l);
}
