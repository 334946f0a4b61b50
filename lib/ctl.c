/* SPDX-License-Identifier: MIT */
/* Control requests: one SEQPACKET datagram out (header, body, fds), one back. ipc.h makes
 * requests strictly serial per session, so ctl_lock covers the whole round trip and the
 * sequence number only catches a daemon that answers the wrong request. */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib_int.h"

union lib_cmsg_buf {
	char buf[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
	struct cmsghdr align;
};

int lib_fail(int err)
{
	errno = err;
	return err;
}

static void close_fds(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* A broken connection means the daemon is gone: the caller sees ENODEV. */
static int conn_err(int err)
{
	return err == EPIPE || err == ECONNRESET || err == ENOTCONN ? -ENODEV : -err;
}

static int send_req(struct lib_context *c, const struct lib_call *call, uint32_t seq)
{
	char buf[IPC_MAX_MSG];
	struct ipc_hdr *h = (struct ipc_hdr *)buf;
	size_t len = sizeof(*h) + call->req_len;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	union lib_cmsg_buf cb;
	ssize_t n;

	if (len > IPC_MAX_MSG || call->nfds > IPC_MAX_FDS)
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->version = IPC_VERSION;
	h->op = call->op;
	h->len = (uint32_t)len;
	h->seq = seq;
	h->handle = call->handle;
	if (call->req_len)
		memcpy(buf + sizeof(*h), call->req, call->req_len);
	if (call->nfds) {
		struct cmsghdr *cm;

		memset(&cb, 0, sizeof(cb));
		msg.msg_control = cb.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * call->nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * call->nfds);
		memcpy(CMSG_DATA(cm), call->fds, sizeof(int) * call->nfds);
	}
	do
		n = sendmsg(c->sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return conn_err(errno);
	return (size_t)n == len ? 0 : -EPROTO;
}

/* Collect the fds of every SCM_RIGHTS block (at most IPC_MAX_FDS). */
static unsigned take_fds(struct msghdr *msg, int *fds)
{
	unsigned got = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (got < IPC_MAX_FDS)
				fds[got++] = fd;
			else
				close(fd);
		}
	}
	return got;
}

/* One datagram into buf (IPC_MAX_MSG bytes): its length, or -errno. */
static ssize_t recv_rep(struct lib_context *c, char *buf, int *fds, unsigned *nfds)
{
	struct iovec iov = { .iov_base = buf, .iov_len = IPC_MAX_MSG };
	union lib_cmsg_buf cb;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cb.buf, .msg_controllen = sizeof(cb.buf),
	};
	ssize_t n;

	do
		n = recvmsg(c->sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	*nfds = 0;
	if (n < 0)
		return conn_err(errno);
	*nfds = take_fds(&msg, fds);
	if (n == 0)
		return -ENODEV;		/* the daemon closed the session */
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -EPROTO;
	return n;
}

static void keep_err_body(struct lib_context *c, const struct lib_call *call, const char *body,
			  size_t len)
{
	char msg[IPC_ERR_LEN];

	if (len < sizeof(struct ipc_err_body)) {
		lib_set_error(c, "odpemud refused %u (no reason given)", call->op);
		return;
	}
	memcpy(msg, body, sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	lib_set_error(c, "%s", msg);
}

/* Check a reply against its request; on success copy the body and fds out. */
static int take_reply(struct lib_context *c, struct lib_call *call, uint32_t seq, const char *buf,
		      size_t n, int *fds, unsigned nfds)
{
	const struct ipc_hdr *h = (const struct ipc_hdr *)buf;
	size_t body;

	if (n < sizeof(*h) || h->version != IPC_VERSION || h->len != n || h->op != call->op ||
	    h->seq != seq) {
		lib_set_error(c, "odpemud answered op %u with a malformed reply (version %u, "
			      "op %u, seq %u): library and daemon builds differ?", call->op,
			      n >= sizeof(*h) ? h->version : 0, n >= sizeof(*h) ? h->op : 0,
			      n >= sizeof(*h) ? h->seq : 0);
		return -EPROTO;
	}
	body = n - sizeof(*h);
	if (h->status < 0) {
		keep_err_body(c, call, buf + sizeof(*h), body);
		return h->status;
	}
	if (h->status > 0 || body < call->rep_min || body > call->rep_cap || nfds != call->nrfds) {
		lib_set_error(c, "odpemud's reply to op %u has %zu body bytes and %u fds",
			      call->op, body, nfds);
		return -EPROTO;
	}
	if (body)
		memcpy(call->rep, buf + sizeof(*h), body);
	call->rep_len = body;
	for (unsigned i = 0; i < nfds; i++)
		call->rfds[i] = fds[i];
	return 0;
}

static int round_trip(struct lib_context *c, struct lib_call *call)
{
	char buf[IPC_MAX_MSG];
	int fds[IPC_MAX_FDS];
	unsigned nfds = 0;
	uint32_t seq = ++c->seq;
	ssize_t n;
	int rc;

	rc = send_req(c, call, seq);
	if (rc)
		return rc;
	n = recv_rep(c, buf, fds, &nfds);
	rc = n < 0 ? (int)n : take_reply(c, call, seq, buf, (size_t)n, fds, nfds);
	if (rc)
		close_fds(fds, nfds);
	return rc;
}

int lib_call(struct lib_context *c, struct lib_call *call)
{
	int rc;

	for (unsigned i = 0; i < call->nrfds; i++)
		call->rfds[i] = -1;
	call->rep_len = 0;
	if (lib_ctx_dead(c))
		return -ENODEV;
	if (c->relay_peer >= 0)	/* unmaps before this request reach the daemon first */
		lib_relay_settle();
	pthread_mutex_lock(&c->ctl_lock);
	rc = round_trip(c, call);
	pthread_mutex_unlock(&c->ctl_lock);
	if (rc == -ENODEV) {
		lib_ctx_mark_dead(c);
		lib_set_error(c, "odpemud serving %s is gone: restart it and open the device again",
			      c->dev.name);
	}
	return rc;
}

int lib_call_destroy(struct lib_context *c, uint16_t op, uint32_t handle)
{
	struct lib_call call = { .op = op, .handle = handle };
	int rc = lib_call(c, &call);

	return rc == -ENODEV ? 0 : rc;
}

int lib_call_ring(struct lib_context *c, uint16_t op, uint16_t destroy_op, const void *req,
		  size_t req_len, void *rep, size_t rep_len, uint32_t *handle,
		  uint32_t *map_len, void **map)
{
	int fd;
	struct lib_call call = {
		.op = op, .req = req, .req_len = req_len,
		.rep = rep, .rep_min = rep_len, .rep_cap = rep_len,
		.rfds = &fd, .nrfds = 1,
	};
	int rc = lib_call(c, &call);

	if (rc)
		return rc;
	*map = lib_map_fd(fd, *map_len, &rc);
	if (rc)
		lib_call_destroy(c, destroy_op, *handle);
	return rc;
}

int lib_destroy_handle(struct lib_context *c, uint16_t op, struct lib_table *t, uint32_t handle)
{
	void *obj;
	int rc;

	/* Out of the table first: once the daemon frees the handle it may hand it out again
	 * at once, to another thread's create, whose table entry must not find ours. */
	pthread_mutex_lock(&c->tab_lock);
	obj = lib_table_remove(t, handle);
	pthread_mutex_unlock(&c->tab_lock);
	rc = lib_call_destroy(c, op, handle);
	if (rc && obj) {
		pthread_mutex_lock(&c->tab_lock);
		lib_table_add(t, handle, obj);	/* still ours: the daemon refused */
		pthread_mutex_unlock(&c->tab_lock);
	}
	return rc;
}

int lib_destroy_tracked(struct lib_context *c, uint16_t op, struct lib_table *t,
			uint32_t handle, struct lib_evc *evc)
{
	int rc = lib_destroy_handle(c, op, t, handle);

	if (rc)
		return rc;
	/* A forked child has none of the threads that hold the parent's events. */
	if (!lib_forked(c))
		lib_evc_wait(evc);
	return 0;
}
