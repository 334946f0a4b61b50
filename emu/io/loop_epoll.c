/* SPDX-License-Identifier: MIT */
/*
 * loop_epoll — the event loop without io_uring (loop.h KINDS): one epoll set, each armed
 * emu_io an edge-triggered registration whose data is the emu_io.
 *
 * Edge-triggered because a multishot poll is: it reports readiness when armed and at each
 * wakeup after, not again and again while the fd stays ready. The modules were written
 * for that (one report may stand for several events: they drain), and a level-triggered
 * set would spin on fds that stay ready once their news is taken in (a pidfd of a process
 * that exited). A callback that left work behind asks for another report
 * (emu_loop_rearm: EPOLL_CTL_MOD, which reports again if the fd is still ready).
 */
#include "loop_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

int emu_epoll_init(struct emu_loop *l, unsigned entries)
{
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		return -errno;
	l->events = calloc(entries, sizeof(*l->events));
	if (!l->events) {
		close(l->epfd);
		l->epfd = -1;
		return -ENOMEM;
	}
	return 0;
}

void emu_epoll_fini(struct emu_loop *l)
{
	free(l->events);
	l->events = NULL;
	if (l->epfd >= 0)
		close(l->epfd);
	l->epfd = -1;
}

static int ctl(struct emu_loop *l, int op, struct emu_io *io)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.ptr = io };

	return epoll_ctl(l->epfd, op, io->fd, &ev) ? -errno : 0;
}

/* A last completion for io (res, no F_MORE), dispatched at the next look: -ECANCELED for
 * emu_loop_cancel_sync, -errno for an fd epoll refuses (as io_uring completes a poll it
 * cannot arm). */
static void push_final(struct emu_loop *l, struct emu_io *io, int32_t res)
{
	struct emu_io **at = &l->finals;

	io->final_res = res;
	while (*at && *at != io)
		at = &(*at)->next_final;
	if (!*at) {
		io->next_final = NULL;
		*at = io;
	}
}

void emu_epoll_poll_in(struct emu_loop *l, int fd, struct emu_io *io)
{
	int rc;

	if (io->armed && io->fd != fd)
		(void)emu_epoll_cancel(l, io, false);
	io->fd = fd;
	rc = ctl(l, io->armed ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, io);
	if (rc == -EEXIST)	/* the fd is in the set for another io: not allowed here */
		rc = ctl(l, EPOLL_CTL_MOD, io);
	io->armed = rc == 0;
	if (rc)
		push_final(l, io, rc);
}

void emu_epoll_rearm(struct emu_loop *l, struct emu_io *io)
{
	if (io->armed)
		(void)ctl(l, EPOLL_CTL_MOD, io);
}

/* Events of io in the look being dispatched are not dispatched (loop.h, emu_loop_cancel). */
static void forget(struct emu_loop *l, struct emu_io *io)
{
	struct emu_io **at = &l->finals;

	for (unsigned i = l->next; i < l->n; i++)
		if (l->events[i].data.ptr == io)
			l->events[i].data.ptr = NULL;
	while (*at && *at != io)
		at = &(*at)->next_final;
	if (*at)
		*at = io->next_final;
}

int emu_epoll_cancel(struct emu_loop *l, struct emu_io *io, bool last_completion)
{
	bool was = io->armed;

	forget(l, io);
	if (was) {
		/* EBADF/ENOENT: the fd was closed first, which took it out of the set */
		(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
		io->armed = false;
	}
	if (was && last_completion)
		push_final(l, io, -ECANCELED);
	return 0;
}

static struct io_uring_cqe record(struct emu_io *io, int32_t res, bool more)
{
	struct io_uring_cqe c;

	memset(&c, 0, sizeof(c));
	c.user_data = (uint64_t)(uintptr_t)io;
	c.res = res;
	c.flags = more ? IORING_CQE_F_MORE : 0;
	return c;
}

/* The last completions pushed before this look, at most: those their callbacks push (a
 * re-arm epoll refuses again) wait for the next run, as a completion posted during a
 * dispatch waits for the next look at the CQ. Each io leaves the list before its
 * callback, which may arm it again; one cancelled meanwhile has left it (forget). */
static unsigned dispatch_finals(struct emu_loop *l)
{
	unsigned n = 0, k = 0;

	for (struct emu_io *io = l->finals; io; io = io->next_final)
		n++;
	while (k < n && l->finals) {
		struct emu_io *io = l->finals;
		struct io_uring_cqe c = record(io, io->final_res, false);

		l->finals = io->next_final;
		if (io->fn)
			io->fn(io, &c);
		k++;
	}
	return k;
}

static unsigned dispatch_look(struct emu_loop *l)
{
	unsigned k = 0;

	for (l->next = 0; l->next < l->n; ) {
		struct epoll_event ev = l->events[l->next++];
		struct emu_io *io = ev.data.ptr;
		struct io_uring_cqe c;

		if (!io || !io->fn)
			continue;	/* cancelled during this look */
		c = record(io, (int32_t)(ev.events & (EPOLLIN | EPOLLERR | EPOLLHUP)), true);
		io->fn(io, &c);
		k++;
	}
	l->n = l->next = 0;
	return k;
}

/* epoll_pwait2 (Linux 5.11) waits to the nanosecond; before it, epoll_wait's milliseconds,
 * rounded up so that a deadline is never met early. */
static int wait_events(struct emu_loop *l, uint64_t deadline_ns)
{
	uint64_t now = emu_now_ns(), left = deadline_ns > now ? deadline_ns - now : 0;
	struct timespec ts = { (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
	int max = (int)l->entries, got;

	if (l->finals)
		left = 0, ts.tv_sec = 0, ts.tv_nsec = 0;	/* work waiting: do not sleep */
#ifdef SYS_epoll_pwait2
	got = (int)syscall(SYS_epoll_pwait2, l->epfd, l->events, max,
			   deadline_ns == UINT64_MAX && !l->finals ? NULL : &ts, NULL, 0);
	if (got >= 0 || errno != ENOSYS)
		return got < 0 ? -errno : got;
#endif
	got = epoll_wait(l->epfd, l->events, max, deadline_ns == UINT64_MAX && !l->finals ? -1 :
			 (int)((left + 999999) / 1000000 > 3600000 ? 3600000 :
			       (left + 999999) / 1000000));
	return got < 0 ? -errno : got;
}

int emu_epoll_run_once(struct emu_loop *l, uint64_t deadline_ns)
{
	int got = wait_events(l, deadline_ns);
	unsigned total = 0;

	if (got < 0 && got != -EINTR)
		return got;
	l->n = got > 0 ? (unsigned)got : 0;
	if (!l->n && !l->finals)
		return 0;
	if (l->step)	/* before the look (STEP, loop.h) */
		l->step(l->step_arg);
	total += dispatch_finals(l);
	total += dispatch_look(l);
	return (int)total;
}
