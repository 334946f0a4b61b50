/* SPDX-License-Identifier: MIT */
/*
 * ctl — the control socket: <rundir>/<name>.sock, SOCK_SEQPACKET, mode 0660. One connection
 * is one session (session.h); each datagram is one request (ipc.h), handed to its op's
 * handler (verbs.h) and answered by exactly one reply. A request that is malformed in any
 * way gets an error reply with a human line and changes nothing.
 *
 * THREADING. The loop thread only.
 */
#ifndef ODPEMU_EMU_CTL_H
#define ODPEMU_EMU_CTL_H

#include <errno.h>
#include <stddef.h>

#include "ipc.h"

struct emu_daemon;
struct emu_session;

/* One request being served. */
struct emu_req {
	struct emu_session *s;
	const struct ipc_hdr *hdr;
	const void *body;
	size_t len;			/* body bytes */
	int *fds;			/* received fds (the handler takes those it keeps: -1) */
	unsigned nfds;
};

/* Claim the socket path (a stale one is removed; a live daemon there is -EADDRINUSE) and
 * listen on it. 0 or -errno, logged with the fix. */
int emu_ctl_listen(struct emu_daemon *d);
/* Remove the socket file, if it is ours. */
void emu_ctl_unlink(struct emu_daemon *d);
/* Handle the requests waiting on s's socket (called when it is readable). */
void emu_ctl_serve(struct emu_session *s);
/* Send one reply to req: status, body, fds (SCM_RIGHTS). 0, or -errno of sendmsg (a client
 * that does not read its socket loses the reply). */
int emu_ctl_reply(struct emu_session *s, const struct ipc_hdr *req, int status,
		  const void *body, size_t len, const int *fds, unsigned nfds);
/* Reply err (any value >= 0 becomes -EINVAL) with the formatted line; returns err. */
int emu_reply_err(struct emu_req *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* In a request handler: the body must be exactly one `type` (variable ops check their
 * arrays themselves), else an error reply. */
#define EMU_WANT_BODY(r, type) \
	do { \
		if ((r)->len != sizeof(type)) \
			return emu_reply_err((r), -EBADMSG, "%s body of %zu bytes, want %zu", \
					     #type, (r)->len, sizeof(type)); \
	} while (0)

#endif
