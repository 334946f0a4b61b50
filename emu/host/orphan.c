/* SPDX-License-Identifier: MIT */
/* orphan — seccomp listeners that outlive their session (see orphan.h). */
#include "orphan.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

struct emu_orphan {
	struct emu_daemon *d;
	struct emu_orphan *next;	/* d->orphans */
	int listener, pidfd;
	unsigned polls;			/* armed multishot polls (freed at the last) */
	bool closed;
	struct emu_io listener_io, pid_io;
};

static void arm(struct emu_orphan *o, int fd, struct emu_io *io)
{
	o->polls++;
	emu_loop_poll_in(&o->d->loop, fd, io);
}

/* A poll's completion: re-armed when it ended, the orphan freed after its last one. */
static void poll_done(struct emu_orphan *o, const struct io_uring_cqe *cqe, int fd,
		      struct emu_io *io)
{
	if (cqe->flags & IORING_CQE_F_MORE)
		return;
	o->polls--;
	if (!o->closed)
		arm(o, fd, io);
	else if (!o->polls) {
		o->d->closing_orphans--;
		free(o);
	}
}

static void orphan_close(struct emu_orphan *o)
{
	struct emu_orphan **p = &o->d->orphans;

	while (*p != o)
		p = &(*p)->next;
	*p = o->next;
	o->closed = true;
	o->d->closing_orphans++;
	(void)emu_loop_cancel_sync(&o->d->loop, &o->listener_io);
	(void)emu_loop_cancel_sync(&o->d->loop, &o->pid_io);
	close(o->listener);
	close(o->pidfd);
}

/* Every held call pending now runs (a bounded number per wake-up). */
static void answer_all(struct emu_orphan *o)
{
	for (int n = 0; n < 256; n++) {
		struct pollfd pf = { .fd = o->listener, .events = POLLIN };
		union {
			struct seccomp_notif n;
			uint8_t room[512];	/* a newer kernel's larger record */
		} in;
		union {
			struct seccomp_notif_resp r;
			uint8_t room[512];
		} out;

		if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLIN))
			return;
		memset(&in, 0, sizeof(in));
		if (ioctl(o->listener, SECCOMP_IOCTL_NOTIF_RECV, &in.n))
			continue;	/* ENOENT: the caller went meanwhile */
		memset(&out, 0, sizeof(out));
		out.r.id = in.n.id;
		out.r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		(void)ioctl(o->listener, SECCOMP_IOCTL_NOTIF_SEND, &out.r);
	}
}

static void on_listener(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_orphan *o = (struct emu_orphan *)((char *)io -
						     offsetof(struct emu_orphan, listener_io));

	if (!o->closed && cqe->res > 0)
		answer_all(o);
	poll_done(o, cqe, o->listener, io);
}

static void on_pid(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_orphan *o = (struct emu_orphan *)((char *)io - offsetof(struct emu_orphan, pid_io));

	if (!o->closed && cqe->res > 0)
		orphan_close(o);	/* the process exited: nobody left to hold */
	poll_done(o, cqe, o->pidfd, io);
}

void emu_orphan_adopt(struct emu_daemon *d, int listener, pid_t pid)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct emu_orphan *o = pidfd >= 0 ? calloc(1, sizeof(*o)) : NULL;

	if (!o) {
		if (pidfd >= 0)
			close(pidfd);
		close(listener);
		return;
	}
	o->d = d;
	o->listener = listener;
	o->pidfd = pidfd;
	o->listener_io.fn = on_listener;
	o->pid_io.fn = on_pid;
	o->next = d->orphans;
	d->orphans = o;
	arm(o, listener, &o->listener_io);
	arm(o, pidfd, &o->pid_io);
	emu_log(EMU_LOG_DEBUG, "pid %d closed its device and lives on: its held calls run at "
		"once until it exits", (int)pid);
}

void emu_orphan_close_all(struct emu_daemon *d)
{
	while (d->orphans)
		orphan_close(d->orphans);
}
