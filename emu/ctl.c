/* SPDX-License-Identifier: MIT */
/*
 * ctl — the control socket: <rundir>/<name>.sock, SOCK_SEQPACKET, mode 0660, group the
 * daemon's or --group's. One connection is one session; each datagram is one request
 * (ipc.h) answered by one reply.
 * A request that is malformed in any way gets an error reply and changes nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "io/loop.h"
#include "host/notifier.h"
#include "options.h"
#include "session.h"
#include "verbs.h"

static void on_listen(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_daemon *d = (struct emu_daemon *)((char *)io - offsetof(struct emu_daemon, listen_io));

	for (int i = 0; i < 64; i++) {	/* bounded: other work waits otherwise */
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			break;
		if (emu_session_accept(d, fd))
			close(fd);
	}
	if (!(cqe->flags & IORING_CQE_F_MORE))
		emu_loop_poll_in(&d->loop, d->listen_fd, &d->listen_io);
}

/* Is a daemon already serving this socket? A stale file (its daemon died) is removed. */
static int claim_path(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	int rc;

	if (fd < 0)
		return -errno;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (rc == 0)
		return -EADDRINUSE;
	if (errno == ECONNREFUSED)
		unlink(path);
	return 0;
}

/* --group: the socket's group, set before the socket is renamed into place, so no client
 * ever finds it with the daemon's own group. 0 or -errno (logged). */
static int give_to_group(struct emu_daemon *d, const char *path)
{
	int err;

	if (!d->opt.group || !chown(path, (uid_t)-1, (gid_t)d->opt.group_gid))
		return 0;
	err = errno;
	emu_log(EMU_LOG_ERR, "cannot give the control socket to group %s (gid %u): %s (only "
		"root or a member of the group may)", d->opt.group, d->opt.group_gid,
		strerror(err));
	return -err;
}

int emu_ctl_listen(struct emu_daemon *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[200];
	int fd, rc;

	emu_rundir(&d->opt, dir, sizeof(dir));
	if (mkdir(dir, 0755) && errno != EEXIST) {
		emu_log(EMU_LOG_ERR, "cannot create run directory %s: %s (set --rundir or "
			"ODPEMU_RUNDIR to a writable directory)", dir, strerror(errno));
		return -errno;
	}
	if ((size_t)snprintf(d->sock_path, sizeof(d->sock_path), "%s/%s.sock", dir, d->opt.name)
	    >= sizeof(sa.sun_path)) {
		emu_log(EMU_LOG_ERR, "socket path %s/%s.sock is too long for a unix socket", dir,
			d->opt.name);
		return -ENAMETOOLONG;
	}
	if ((rc = claim_path(d->sock_path))) {
		emu_log(EMU_LOG_ERR, "a daemon named '%s' is already running (%s answers); stop "
			"it or pick another --name", d->opt.name, d->sock_path);
		d->sock_path[0] = 0;	/* not ours: never unlink it */
		return rc;
	}
	/* Bound and listening under a private name first, then renamed into place: the path
	 * never names a socket that refuses connections (a client, or a second daemon's
	 * claim_path, would take it for a dead one between bind and listen). */
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.%d", d->sock_path,
			     (int)getpid()) >= sizeof(sa.sun_path)) {
		emu_log(EMU_LOG_ERR, "socket path %s is too long for a unix socket", d->sock_path);
		d->sock_path[0] = 0;
		return -ENAMETOOLONG;
	}
	unlink(sa.sun_path);	/* a leftover of a daemon with our pid, long gone */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(sa.sun_path, 0660) ||
	    (rc = give_to_group(d, sa.sun_path)) || listen(fd, 64) ||
	    rename(sa.sun_path, d->sock_path)) {
		if (!rc) {
			rc = -errno;
			emu_log(EMU_LOG_ERR, "cannot listen on %s: %s", d->sock_path,
				strerror(errno));
		}
		if (fd >= 0) {
			close(fd);
			unlink(sa.sun_path);
		}
		d->sock_path[0] = 0;
		return rc;
	}
	d->listen_fd = fd;
	d->listen_io.fn = on_listen;
	emu_loop_poll_in(&d->loop, fd, &d->listen_io);
	return 0;
}

void emu_ctl_unlink(struct emu_daemon *d)
{
	if (d->sock_path[0])
		unlink(d->sock_path);
	d->sock_path[0] = 0;
}

int emu_ctl_reply(struct emu_session *s, const struct ipc_hdr *req, int status,
		  const void *body, size_t len, const int *fds, unsigned nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
		struct cmsghdr align;
	} cm;
	struct ipc_hdr h = { .version = IPC_VERSION, .op = req->op, .seq = req->seq,
		.status = status, .handle = req->handle, .len = (uint32_t)(sizeof(h) + len) };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };

	if (nfds) {
		struct cmsghdr *c;

		memset(&cm, 0, sizeof(cm));
		msg.msg_control = cm.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	/* The client waits for this reply; a full socket means it is not reading: drop it. */
	if (sendmsg(s->sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	return 0;
}

int emu_reply_err(struct emu_req *r, int err, const char *fmt, ...)
{
	struct ipc_err_body e;
	va_list ap;

	memset(&e, 0, sizeof(e));
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	r->s->d->ctr.request_errors++;
	emu_log(EMU_LOG_DEBUG, "session %u (pid %d): %s", r->s->id, (int)r->s->pid, e.msg);
	emu_ctl_reply(r->s, r->hdr, err < 0 ? err : -EINVAL, &e, sizeof(e), NULL, 0);
	return err;
}

/* Take the fds of a message; close any beyond max (and all on a truncated control). */
static unsigned take_fds(struct msghdr *msg, int *fds, unsigned max)
{
	unsigned n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

static void close_fds(const int *fds, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		if (fds[k] >= 0)
			close(fds[k]);
}

/* Check the header of a request; a reply says what is wrong. */
static int check_header(struct emu_req *r, size_t got)
{
	const struct ipc_hdr *h = r->hdr;

	if (h->version != IPC_VERSION)
		return emu_reply_err(r, -EPROTO, "protocol version %u, daemon speaks %u: use "
				     "the libodpemu of the same build", h->version, IPC_VERSION);
	if (h->len != got)
		return emu_reply_err(r, -EBADMSG, "length field %u, message has %zu bytes",
				     h->len, got);
	if (!r->s->hello_done && h->op != IPC_HELLO && h->op != IPC_IMPORT_DEVICE)
		return emu_reply_err(r, -EPROTO, "first request must be HELLO or IMPORT_DEVICE");
	if (r->s->hello_done && (h->op == IPC_HELLO || h->op == IPC_IMPORT_DEVICE))
		return emu_reply_err(r, -EPROTO, "HELLO twice");
	if (!emu_op_handler(h->op))
		return emu_reply_err(r, -EOPNOTSUPP, "unknown op %u", h->op);
	return 0;
}

/* Read and handle requests of s until its socket is empty (bounded per call). */
void emu_ctl_serve(struct emu_session *s)
{
	for (int i = 0; i < 16 && !s->dead; i++) {
		_Alignas(8) char buf[IPC_MAX_MSG];
		union {
			char c[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
			struct cmsghdr align;
		} cm;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.c,
			.msg_controllen = sizeof(cm.c) };
		int fds[IPC_MAX_FDS];
		struct emu_req r = { .s = s, .hdr = (const struct ipc_hdr *)buf, .fds = fds };
		ssize_t got = recvmsg(s->sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		/* Taken before anything else: every way out of here closes them, even that of
		 * an empty datagram (which ends the session) carrying SCM_RIGHTS. */
		r.nfds = got < 0 ? 0 : take_fds(&msg, fds, IPC_MAX_FDS);
		if (got <= 0) {			/* the client closed or crashed */
			close_fds(fds, r.nfds);
			emu_session_close(s);
			return;
		}
		s->d->ctr.requests++;
		/* Unmaps the client made before this request were relayed before it was sent
		 * (lib/relay.c): apply them first, as a kernel's MMU notifier would have. */
		if (s->uffd_relay >= 0)
			emu_uffd_read(s);
		if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)got < sizeof(struct ipc_hdr)) {
			struct ipc_hdr fake = { .op = 0, .seq = 0 };

			if ((size_t)got >= sizeof(struct ipc_hdr))
				fake = *r.hdr;
			r.hdr = &fake;
			emu_reply_err(&r, -EMSGSIZE, "message of %zd bytes truncated or shorter "
				      "than a header (limit %d bytes, %d fds)", got, IPC_MAX_MSG,
				      IPC_MAX_FDS);
		} else if (!check_header(&r, (size_t)got)) {
			r.body = buf + sizeof(struct ipc_hdr);
			r.len = (size_t)got - sizeof(struct ipc_hdr);
			emu_op_handler(r.hdr->op)(&r);
		}
		close_fds(fds, r.nfds);		/* those no handler kept */
	}
}
