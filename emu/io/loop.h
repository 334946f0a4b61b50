/* SPDX-License-Identifier: MIT */
/*
 * loop — the daemon's event loop: one per device, driven by one thread, on one of two
 * backends (KINDS below).
 *
 * Every module that waits on something (the UDP socket, the control socket, a session, an
 * eventfd, a userfaultfd) embeds a struct emu_io and arms it on a file descriptor; the
 * loop calls io->fn(io, cqe) for each completion. Multishot requests keep one emu_io
 * armed for many completions: fn re-arms when IORING_CQE_F_MORE is clear.
 *
 * KINDS. EMU_LOOP_URING: one io_uring; a module may also submit its own SQEs
 * (emu_loop_sqe: the UDP socket's multishot recvmsg). EMU_LOOP_EPOLL, for hosts where
 * io_uring is refused (a container's seccomp profile, kernel.io_uring_disabled, RHEL 9) or
 * too old (no synchronous cancel before Linux 6.0): one epoll set (loop_epoll.c). There an
 * armed emu_io is an edge-triggered registration, the image of a multishot poll: it
 * reports when armed if the fd is ready and at each new wakeup after, so a callback must
 * take all that is ready or re-arm (emu_loop_rearm). Callbacks get the same record either
 * way: res the ready mask (or -errno), F_MORE set while the io stays armed; the last
 * completion of an io cancelled by emu_loop_cancel_sync has res -ECANCELED and no F_MORE,
 * as on io_uring. emu_loop_sqe exists only on the io_uring kind.
 *
 * The owner drives it: emu_loop_run_once waits until a completion or the earliest deadline
 * the owner gives (or forever: UINT64_MAX), then dispatches; between calls the owner does
 * its own round of work (the daemon: drain shared-memory rings, tick the NIC, flush).
 *
 * STEP. What must come before the events themselves is the owner's step
 * (emu_loop_set_step). Completions are dispatched look by look: a look is those in the CQ
 * (the epoll kind: those one epoll_wait returned) when it begins, and the step runs before
 * each. So no completion is dispatched before a step that began after it was posted:
 * whatever the step takes in (the daemon: the clients' rings) that was there before an
 * event happened is in before the event is handled.
 */
#ifndef ODPEMU_EMU_LOOP_H
#define ODPEMU_EMU_LOOP_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>

struct emu_io;
typedef void (*emu_io_fn)(struct emu_io *io, const struct io_uring_cqe *cqe);

struct emu_io {
	emu_io_fn fn;
	/* the epoll kind's registration: the fd, and whether it is in the set */
	int fd;
	bool armed;
	struct emu_io *next_final;	/* on the loop's list of last completions to dispatch */
	int32_t final_res;		/* that completion's res */
};

typedef void (*emu_loop_step_fn)(void *arg);

enum emu_loop_kind { EMU_LOOP_URING, EMU_LOOP_EPOLL };

struct epoll_event;

struct emu_loop {
	enum emu_loop_kind kind;
	struct io_uring ring;		/* EMU_LOOP_URING */
	/* EMU_LOOP_EPOLL: the set, the look being dispatched (events[next..n)), and the last
	 * completions of cancelled ios not yet dispatched */
	int epfd;
	struct epoll_event *events;
	unsigned n, next;
	struct emu_io *finals;
	bool stop;
	unsigned entries;
	emu_loop_step_fn step;		/* NULL: none */
	void *step_arg;
};

/* Set up a loop of the given kind: an io_uring of `entries` SQEs (CQ twice that), or an
 * epoll set taking up to `entries` events per look; no step. 0 or -errno. */
int emu_loop_init(struct emu_loop *l, unsigned entries, enum emu_loop_kind kind);
void emu_loop_fini(struct emu_loop *l);
/* "io_uring" or "epoll". */
const char *emu_loop_kind_name(enum emu_loop_kind kind);
/* Run fn(arg) before each look at the completions (STEP above); NULL: nothing. */
void emu_loop_set_step(struct emu_loop *l, emu_loop_step_fn fn, void *arg);
/* An SQE to fill, submitting queued ones first when the SQ is full; never NULL. The
 * io_uring kind only. */
struct io_uring_sqe *emu_loop_sqe(struct emu_loop *l);
/* The same, with user_data already set to io. */
struct io_uring_sqe *emu_loop_sqe_for(struct emu_loop *l, struct emu_io *io);
/* Arm a multishot poll for POLLIN on fd (re-armed by the caller's fn when it ends). */
void emu_loop_poll_in(struct emu_loop *l, int fd, struct emu_io *io);
/* The epoll kind: report io again at the next look if its fd is still ready (a callback
 * that left work for later). Nothing on the io_uring kind (its callers arm a oneshot
 * poll themselves). */
void emu_loop_rearm(struct emu_loop *l, struct emu_io *io);
/* Cancel every request with user_data io, multishot ones included: SQEs still queued
 * become NOPs, requests in the kernel are cancelled synchronously, and their completions
 * still in the CQ are never dispatched. When this returns 0, io and any buffer those
 * requests used may be freed. May be called from a completion callback (of io too).
 * io_uring needs Linux >= 6.0 (IORING_REGISTER_SYNC_CANCEL). 0, or -errno (then a
 * request may still complete: keep io and its buffers allocated); -EBUSY: the CQ stayed
 * overflowed. */
int emu_loop_cancel(struct emu_loop *l, struct emu_io *io);
/* Cancel every request of io and return once the kernel has (their last completions are
 * then in the CQ, or its overflow list, and are dispatched as usual). Unlike a poll_remove
 * request, it cannot miss a multishot poll that is busy completing. 0 or -errno. */
int emu_loop_cancel_sync(struct emu_loop *l, struct emu_io *io);
/* Submit what is queued, wait until a completion arrives or `deadline_ns`
 * (CLOCK_MONOTONIC; UINT64_MAX: no deadline; <= now: do not sleep), then dispatch every
 * completion, look by look, the step before each, until the CQ is empty. Returns the
 * number dispatched or -errno (never -EINTR/-ETIME). */
int emu_loop_run_once(struct emu_loop *l, uint64_t deadline_ns);
/* CLOCK_MONOTONIC in nanoseconds: the clock of the daemon and of its struct nic. */
uint64_t emu_now_ns(void);

#endif
