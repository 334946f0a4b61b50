/* SPDX-License-Identifier: MIT */
/* The connection manager calls (include/odpemu/cm.h): each one control request
 * (ipc.h CM_*); events are records the daemon writes to the channel's socket. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib_int.h"
#include "odpemu/cm.h"

_Static_assert(ODPEMU_CM_PRIVATE_MAX == IPC_CM_PRIVATE_MAX, "one size");
#define SAME_EVENT_(n, v) _Static_assert(ODPEMU_CM_EVENT_##n == v, #n);
IPC_CM_EVENTS(SAME_EVENT_)
#undef SAME_EVENT_

ODPEMU_EXPORT const char *odpemu_cm_event_str(enum odpemu_cm_event_type type)
{
	switch (type) {
#define EVENT_NAME_(n, v) case ODPEMU_CM_EVENT_##n: return #n;
	IPC_CM_EVENTS(EVENT_NAME_)
#undef EVENT_NAME_
	case ODPEMU_CM_EVENT_DEVICE_REMOVAL: return "DEVICE_REMOVAL";
	}
	return "UNKNOWN";
}

/* ---- conversions ---- */

static void to_ipc_addr(const struct odpemu_cm_addr *a, struct ipc_cm_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (a) {
		memcpy(out->gid, a->gid.raw, 16);
		out->port = a->port;
	}
}

static void from_ipc_addr(const struct ipc_cm_addr *a, struct odpemu_cm_addr *out)
{
	memcpy(out->gid.raw, a->gid, 16);
	out->port = a->port;
}

static void to_ipc_qp(const struct odpemu_cm_qp *q, struct ipc_cm_qp *out)
{
	*out = (struct ipc_cm_qp){ .qpn = q->qpn, .psn = q->psn, .qkey = q->qkey,
		.qp_type = (uint8_t)q->qp_type, .responder_resources = q->responder_resources,
		.initiator_depth = q->initiator_depth, .retry_count = q->retry_count,
		.rnr_retry_count = q->rnr_retry_count, .srq = q->srq,
		.flow_control = q->flow_control, .mtu = (uint8_t)q->mtu };
}

static void from_ipc_qp(const struct ipc_cm_qp *q, struct odpemu_cm_qp *out)
{
	*out = (struct odpemu_cm_qp){ .qpn = q->qpn, .psn = q->psn, .qkey = q->qkey,
		.qp_type = (enum odpemu_qp_type)q->qp_type,
		.responder_resources = q->responder_resources,
		.initiator_depth = q->initiator_depth, .retry_count = q->retry_count,
		.rnr_retry_count = q->rnr_retry_count, .srq = q->srq,
		.flow_control = q->flow_control, .mtu = (enum odpemu_mtu)q->mtu };
}

static int to_ipc_priv(const void *priv, size_t len, struct ipc_cm_private *out)
{
	memset(out, 0, sizeof(*out));
	if (len > IPC_CM_PRIVATE_MAX || (len && !priv))
		return -EINVAL;
	out->len = (uint16_t)len;
	if (len)
		memcpy(out->data, priv, len);
	return 0;
}

/* ---- channel ---- */

ODPEMU_EXPORT struct odpemu_cm_channel *odpemu_cm_create_channel(struct odpemu_context *context)
{
	struct ipc_handle_rep rep;
	struct odpemu_cm_channel *ch;
	int sp[2], rc;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	if (!(ch = calloc(1, sizeof(*ch))))
		return errno = ENOMEM, NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp)) {
		rc = errno;
		free(ch);
		return errno = rc, NULL;
	}
	struct lib_call call = { .op = IPC_CM_CHANNEL, .fds = &sp[1], .nfds = 1, .rep = &rep,
				 .rep_min = sizeof(rep), .rep_cap = sizeof(rep) };

	rc = lib_call(lib_ctx(context), &call);
	close(sp[1]);	/* the daemon holds its own copy */
	if (rc) {
		close(sp[0]);
		free(ch);
		return errno = -rc, NULL;
	}
	*ch = (struct odpemu_cm_channel){ .context = context, .fd = sp[0], .handle = rep.handle };
	return ch;
}

ODPEMU_EXPORT int odpemu_cm_destroy_channel(struct odpemu_cm_channel *ch)
{
	int rc;

	if (!ch)
		return lib_fail(EINVAL);
	rc = odpemu_cm_destroy(ch->context, ch->handle);
	if (rc && rc != ENODEV)
		return rc;
	close(ch->fd);
	free(ch);
	return 0;
}

static void from_ipc_event(const struct ipc_cm_event *e, struct odpemu_cm_event *ev)
{
	*ev = (struct odpemu_cm_event){ .type = (enum odpemu_cm_event_type)e->type,
		.status = e->status, .conn = e->conn, .listener = e->listener, .user = e->user };
	from_ipc_addr(&e->src, &ev->src);
	from_ipc_addr(&e->dst, &ev->dst);
	from_ipc_qp(&e->peer, &ev->peer);
	ev->private_len = e->priv.len <= IPC_CM_PRIVATE_MAX ? e->priv.len : IPC_CM_PRIVATE_MAX;
	memcpy(ev->private_data, e->priv.data, ev->private_len);
}

ODPEMU_EXPORT int odpemu_cm_get_event(struct odpemu_cm_channel *ch, struct odpemu_cm_event *ev)
{
	struct ipc_cm_event e;
	ssize_t n;

	if (!ch || !ev)
		return lib_fail(EINVAL);
	n = recv(ch->fd, &e, sizeof(e), 0);
	if (n < 0)
		return lib_fail(errno);
	if (n == 0) {	/* the daemon closed its end: it is gone */
		*ev = (struct odpemu_cm_event){ .type = ODPEMU_CM_EVENT_DEVICE_REMOVAL,
			.status = -ENODEV };
		return lib_fail(ENODEV);
	}
	if (n != (ssize_t)sizeof(e))
		return lib_fail(EPROTO);
	from_ipc_event(&e, ev);
	return 0;
}

/* ---- listen, connect ---- */

/* CM_BIND or CM_LISTEN. */
static int reserve(struct odpemu_cm_channel *ch, enum ipc_op op, enum odpemu_cm_ps ps,
		   const struct odpemu_cm_addr *addr, const struct odpemu_cm_port_opts *opts,
		   uint32_t bound, unsigned backlog, uint64_t user, uint32_t *handle,
		   uint16_t *port)
{
	struct ipc_cm_listen_req q = { .ps = (uint16_t)ps, .user = user, .bound = bound };
	struct ipc_cm_listen_rep rep;
	struct lib_call call = { .op = op, .req = &q, .req_len = sizeof(q),
				 .rep = &rep, .rep_min = sizeof(rep), .rep_cap = sizeof(rep) };
	int rc;

	if (!ch || backlog > UINT16_MAX || (opts && opts->family != 0 &&
	    opts->family != AF_INET && opts->family != AF_INET6))
		return lib_fail(EINVAL);
	q.channel = ch->handle;
	q.backlog = (uint16_t)backlog;
	to_ipc_addr(addr, &q.addr);
	if (opts) {
		q.family = (uint16_t)opts->family;
		q.flags = (uint8_t)((opts->reuseaddr ? IPC_CM_REUSEADDR : 0) |
				    (opts->afonly ? IPC_CM_AFONLY : 0));
	}
	if ((rc = lib_call(lib_ctx(ch->context), &call)))
		return lib_fail(-rc);
	if (handle)
		*handle = rep.handle;
	if (port)
		*port = rep.port;
	return 0;
}

ODPEMU_EXPORT int odpemu_cm_bind(struct odpemu_cm_channel *ch, enum odpemu_cm_ps ps,
				 const struct odpemu_cm_addr *addr,
				 const struct odpemu_cm_port_opts *opts, uint32_t *bound,
				 uint16_t *port)
{
	return reserve(ch, IPC_CM_BIND, ps, addr, opts, 0, 0, 0, bound, port);
}

ODPEMU_EXPORT int odpemu_cm_listen_ex(struct odpemu_cm_channel *ch, enum odpemu_cm_ps ps,
				      const struct odpemu_cm_addr *addr,
				      const struct odpemu_cm_port_opts *opts, uint32_t bound,
				      unsigned backlog, uint64_t user, uint32_t *listener,
				      uint16_t *port)
{
	return reserve(ch, IPC_CM_LISTEN, ps, addr, opts, bound, backlog, user, listener, port);
}

ODPEMU_EXPORT int odpemu_cm_listen(struct odpemu_cm_channel *ch, enum odpemu_cm_ps ps,
				   const struct odpemu_cm_addr *addr, unsigned backlog,
				   uint64_t user, uint32_t *listener, uint16_t *port)
{
	return reserve(ch, IPC_CM_LISTEN, ps, addr, NULL, 0, backlog, user, listener, port);
}

ODPEMU_EXPORT int odpemu_cm_connect(struct odpemu_cm_channel *ch, enum odpemu_cm_ps ps,
				    const struct odpemu_cm_addr *src,
				    const struct odpemu_cm_addr *dst,
				    const struct odpemu_cm_qp *qp, const void *priv,
				    size_t priv_len, uint64_t user, uint32_t *conn)
{
	struct ipc_cm_connect_req q = { .ps = (uint16_t)ps, .user = user };
	struct ipc_handle_rep rep;
	struct lib_call call = { .op = IPC_CM_CONNECT, .req = &q, .req_len = sizeof(q),
				 .rep = &rep, .rep_min = sizeof(rep), .rep_cap = sizeof(rep) };
	int rc;

	if (!ch || !src || !dst || !qp || to_ipc_priv(priv, priv_len, &q.priv))
		return lib_fail(EINVAL);
	q.channel = ch->handle;
	to_ipc_addr(src, &q.src);
	to_ipc_addr(dst, &q.dst);
	to_ipc_qp(qp, &q.qp);
	if ((rc = lib_call(lib_ctx(ch->context), &call)))
		return lib_fail(-rc);
	if (conn)
		*conn = rep.handle;
	return 0;
}

/* ---- a connection's steps ---- */

ODPEMU_EXPORT int odpemu_cm_accept(struct odpemu_context *context, uint32_t conn,
				   struct odpemu_cm_channel *ch, const struct odpemu_cm_qp *qp,
				   const void *priv, size_t priv_len, uint64_t user)
{
	struct ipc_cm_accept_req q = { .channel = ch ? ch->handle : 0, .user = user };
	struct lib_call call = { .op = IPC_CM_ACCEPT, .handle = conn, .req = &q,
				 .req_len = sizeof(q) };
	int rc;

	if (!context || !qp || to_ipc_priv(priv, priv_len, &q.priv))
		return lib_fail(EINVAL);
	to_ipc_qp(qp, &q.qp);
	rc = lib_call(lib_ctx(context), &call);
	return rc ? lib_fail(-rc) : 0;
}

static int private_op(struct odpemu_context *context, uint16_t op, uint32_t conn,
		      const void *priv, size_t priv_len)
{
	struct ipc_cm_private q;
	struct lib_call call = { .op = op, .handle = conn, .req = &q, .req_len = sizeof(q) };
	int rc;

	if (!context || to_ipc_priv(priv, priv_len, &q))
		return lib_fail(EINVAL);
	rc = lib_call(lib_ctx(context), &call);
	return rc ? lib_fail(-rc) : 0;
}

ODPEMU_EXPORT int odpemu_cm_reject(struct odpemu_context *context, uint32_t conn,
				   const void *priv, size_t priv_len)
{
	return private_op(context, IPC_CM_REJECT, conn, priv, priv_len);
}

ODPEMU_EXPORT int odpemu_cm_establish(struct odpemu_context *context, uint32_t conn,
				      const void *priv, size_t priv_len)
{
	return private_op(context, IPC_CM_ESTABLISH, conn, priv, priv_len);
}

ODPEMU_EXPORT int odpemu_cm_disconnect(struct odpemu_context *context, uint32_t conn,
				       const void *priv, size_t priv_len)
{
	return private_op(context, IPC_CM_DISCONNECT, conn, priv, priv_len);
}

ODPEMU_EXPORT int odpemu_cm_destroy(struct odpemu_context *context, uint32_t handle)
{
	struct lib_call call = { .op = IPC_CM_DESTROY, .handle = handle };
	int rc;

	if (!context)
		return lib_fail(EINVAL);
	rc = lib_call(lib_ctx(context), &call);
	return rc ? lib_fail(-rc) : 0;
}
