/* SPDX-License-Identifier: MIT */
/*
 * cm_ctl — the connection manager's control requests (ipc.h CM_*) and its three session
 * object types: channel, listener, connection. Events go out here too, one SEQPACKET
 * record each on the channel socket the client gave us.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm.h"
#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "io/loop.h"
#include "session.h"
#include "verbs.h"

static struct emu_cm *cm_of(struct emu_req *r)
{
	return &r->s->d->cm;
}

static int ok(struct emu_req *r, const void *body, size_t len)
{
	return emu_ctl_reply(r->s, r->hdr, 0, body, len, NULL, 0);
}

static int ok_handle(struct emu_req *r, uint32_t handle)
{
	struct ipc_handle_rep rep = { .handle = handle };

	return ok(r, &rep, sizeof(rep));
}

static void set_channel(struct emu_obj **slot, struct emu_obj *ch)
{
	if (*slot)
		(*slot)->refs--;
	*slot = ch;
	if (ch)
		ch->refs++;
}

/* ---- events ---- */

void emu_cm_event(struct emu_cm *cm, struct emu_cm_conn *c, struct ipc_cm_event *ev)
{
	struct emu_obj *ch = c->channel;

	if (!c->obj || !ch)
		return;
	ev->conn = c->obj->handle;
	ev->user = c->user;
	if (ev->type == IPC_CM_EV_CONNECT_REQUEST && c->listener) {
		ev->listener = c->listener->obj ? c->listener->obj->handle : 0;
		ev->user = c->listener->user;
	}
	if (send(ch->u.cm_fd, ev, sizeof(*ev), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(*ev)) {
		cm->ctr.events_dropped++;
		return;
	}
	cm->ctr.events_sent++;
}

struct emu_obj *emu_cm_conn_obj_new(struct emu_cm_listener *l, struct emu_cm_conn *c)
{
	struct emu_obj *o = l->obj ? emu_obj_new(l->obj->s, EMU_OBJ_CM_CONN) : NULL;

	if (!o)
		return NULL;
	o->u.cm_conn = c;
	c->obj = o;
	set_channel(&c->channel, l->channel);
	return o;
}

/* ---- objects ---- */

void emu_cm_obj_destroy(struct emu_obj *o)
{
	struct emu_cm *cm = &o->s->d->cm;

	switch (o->type) {
	case EMU_OBJ_CM_CHANNEL:
		close(o->u.cm_fd);
		break;
	case EMU_OBJ_CM_LISTEN:
		set_channel(&o->u.cm_listen->channel, NULL);
		o->u.cm_listen->obj = NULL;
		emu_cm_listener_release(cm, o->u.cm_listen);
		break;
	case EMU_OBJ_CM_CONN:
		set_channel(&o->u.cm_conn->channel, NULL);
		emu_cm_conn_release(cm, o->u.cm_conn, emu_now_ns());
		break;
	default:
		break;
	}
}

static bool is_seqpacket(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	return !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) && type == SOCK_SEQPACKET;
}

static int op_cm_channel(struct emu_req *r)
{
	struct emu_obj *o;

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "CM_CHANNEL has no body");
	if (r->nfds != 1 || !is_seqpacket(r->fds[0]))
		return emu_reply_err(r, -EINVAL, "CM_CHANNEL wants one SOCK_SEQPACKET socket");
	if (!(o = emu_obj_new(r->s, EMU_OBJ_CM_CHANNEL)))
		return emu_reply_err(r, -ENOMEM, "too many objects");
	o->u.cm_fd = r->fds[0];
	r->fds[0] = -1;
	return ok_handle(r, o->handle);
}

static struct emu_obj *channel_of(struct emu_req *r, uint32_t handle)
{
	return emu_obj_get(r->s, handle, EMU_OBJ_CM_CHANNEL);
}

/* 127.0.0.0/8 (IPv4-mapped) or ::1: a listener there hears this host's own connections to
 * the loopback address only (their IP header's destination), as the kernel's. */
static bool gid_loopback(const uint8_t *g)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t v6loop[16] = { [15] = 1 };

	return (!memcmp(g, v4mapped, 12) && g[12] == 127) || !memcmp(g, v6loop, 16);
}

static uint16_t port_of(uint64_t service_id)
{
	enum cm_port_space ps;
	uint16_t port = 0;

	cm_service_id_split(service_id, &ps, &port);
	return port;
}

static bool known_family(uint16_t f)
{
	return f == 0 || f == AF_INET || f == AF_INET6;
}

/* A request's reservation, checked: its service and address into l; 0 or the reply. */
static int reservation_of(struct emu_req *r, const struct ipc_cm_listen_req *q, const char *op,
			  struct emu_cm_listener *l)
{
	struct emu_cm *cm = cm_of(r);
	bool reuse = q->flags & IPC_CM_REUSEADDR, afonly = q->flags & IPC_CM_AFONLY;
	int port, rc;

	memcpy(l->addr.raw, q->addr.gid, 16);
	if (!emu_cm_gid_any(&l->addr) && !gid_loopback(l->addr.raw) &&
	    memcmp(&l->addr, &cm->gid, sizeof(l->addr)))
		return emu_reply_err(r, -EADDRNOTAVAIL, "%s: the address is not this device's", op);
	if (!cm_service_id((enum cm_port_space)q->ps, 1))
		return emu_reply_err(r, -EPROTONOSUPPORT, "%s: port space %#x", op, (unsigned)q->ps);
	if (!known_family(q->family) || (q->flags & ~(unsigned)(IPC_CM_REUSEADDR | IPC_CM_AFONLY)))
		return emu_reply_err(r, -EINVAL, "%s: family %u, flags %#x", op,
				     (unsigned)q->family, (unsigned)q->flags);
	/* an ephemeral port another daemon claimed between the pick and the claim: again */
	for (int tries = 0; tries < 8; tries++) {
		port = q->addr.port ? q->addr.port : emu_cm_port_pick(cm, (enum cm_port_space)q->ps,
								       &l->addr, q->family, reuse,
								       afonly);
		if (port < 0)
			return emu_reply_err(r, port, "%s: no free port in %s", op,
					     cm_port_space_str((enum cm_port_space)q->ps));
		l->service_id = cm_service_id((enum cm_port_space)q->ps, (uint16_t)port);
		if ((rc = emu_cm_port_check(cm, NULL, l->service_id, &l->addr, q->family, reuse,
					    afonly)))
			return emu_reply_err(r, rc, "%s: port %u of %s is taken%s", op,
					     (unsigned)port,
					     cm_port_space_str((enum cm_port_space)q->ps),
					     rc == -EADDRNOTAVAIL ? " (by or for any address)" : "");
		if ((rc = emu_cm_claim(cm, l, !q->addr.port)) != -EADDRINUSE)
			break;
	}
	if (rc)
		return emu_reply_err(r, -EADDRNOTAVAIL, "%s: no port of %s stayed free in this "
				     "network namespace", op,
				     cm_port_space_str((enum cm_port_space)q->ps));
	l->family = q->family;
	l->reuseaddr = reuse;
	l->afonly = afonly;
	return 0;
}

/* A new reservation in state `state` on channel ch, replied to with its handle and port. */
static int reserve(struct emu_req *r, const struct ipc_cm_listen_req *q, struct emu_obj *ch,
		   enum emu_cm_port_state state, const char *op)
{
	struct emu_cm *cm = cm_of(r);
	struct emu_cm_listener *l = calloc(1, sizeof(*l));
	struct emu_obj *o;
	int rc;

	if (!l)
		return emu_reply_err(r, -ENOMEM, "%s: out of memory", op);
	if ((rc = reservation_of(r, q, op, l))) {
		free(l);
		return rc;
	}
	if (!(o = emu_obj_new(r->s, EMU_OBJ_CM_LISTEN))) {
		emu_cm_claim_drop(cm, l);
		free(l);
		return emu_reply_err(r, -ENOMEM, "too many objects");
	}
	l->obj = o;
	l->user = q->user;
	l->state = state;
	l->backlog = q->backlog ? q->backlog : EMU_CM_BACKLOG;
	l->next = cm->listeners;
	set_channel(&l->channel, ch);
	cm->listeners = l;
	o->u.cm_listen = l;
	if (state == EMU_CM_PORT_LISTEN) {
		l->reuseaddr = false;	/* a listener is unique on its port (rdma_listen) */
		cm->ctr.listens++;
	}
	return ok(r, &(struct ipc_cm_listen_rep){ .handle = o->handle,
			.port = port_of(l->service_id) }, sizeof(struct ipc_cm_listen_rep));
}

/* rdma_listen on a reservation of rdma_bind_addr's: it must be unique on its port now,
 * REUSEADDR or not (rdma_listen: cma_check_port without reuse). */
static int listen_bound(struct emu_req *r, const struct ipc_cm_listen_req *q, struct emu_obj *ch)
{
	struct emu_obj *o = emu_obj_get(r->s, q->bound, EMU_OBJ_CM_LISTEN);
	struct emu_cm *cm = cm_of(r);
	struct emu_cm_listener *l = o ? o->u.cm_listen : NULL;
	bool afonly = q->flags & IPC_CM_AFONLY;
	int rc;

	if (!l || l->state != EMU_CM_PORT_BOUND)
		return emu_reply_err(r, -EINVAL, "cm_listen: %u is not a bound port", q->bound);
	if (q->flags & ~(unsigned)(IPC_CM_REUSEADDR | IPC_CM_AFONLY))
		return emu_reply_err(r, -EINVAL, "cm_listen: flags %#x", (unsigned)q->flags);
	if ((rc = emu_cm_port_check(cm, l, l->service_id, &l->addr, l->family, false, afonly)))
		return emu_reply_err(r, rc, "cm_listen: port %u is shared (REUSEADDR): a "
				     "listener must be alone on it",
				     (unsigned)port_of(l->service_id));
	l->state = EMU_CM_PORT_LISTEN;
	l->reuseaddr = false;
	l->afonly = afonly;
	l->user = q->user;
	l->backlog = q->backlog ? q->backlog : EMU_CM_BACKLOG;
	set_channel(&l->channel, ch);
	cm->ctr.listens++;
	return ok(r, &(struct ipc_cm_listen_rep){ .handle = o->handle,
			.port = port_of(l->service_id) }, sizeof(struct ipc_cm_listen_rep));
}

/* CM_BIND and CM_LISTEN. */
static int op_cm_listen(struct emu_req *r)
{
	const struct ipc_cm_listen_req *q = r->body;
	bool bind = r->hdr->op == IPC_CM_BIND;
	struct emu_obj *ch;

	EMU_WANT_BODY(r, struct ipc_cm_listen_req);
	if (!(ch = channel_of(r, q->channel)))
		return emu_reply_err(r, -ENOENT, "%s: no CM channel %u",
				     bind ? "cm_bind" : "cm_listen", q->channel);
	if (bind)
		return reserve(r, q, ch, EMU_CM_PORT_BOUND, "cm_bind");
	if (q->bound)
		return listen_bound(r, q, ch);
	return reserve(r, q, ch, EMU_CM_PORT_LISTEN, "cm_listen");
}

static int op_cm_connect(struct emu_req *r)
{
	const struct ipc_cm_connect_req *q = r->body;
	struct emu_cm *cm = cm_of(r);
	struct emu_cm_conn *c;
	struct emu_obj *ch, *o;
	int rc;

	EMU_WANT_BODY(r, struct ipc_cm_connect_req);
	if (!(ch = channel_of(r, q->channel)))
		return emu_reply_err(r, -ENOENT, "cm_connect: no CM channel %u", q->channel);
	if (memcmp(q->src.gid, cm->gid.raw, 16))
		return emu_reply_err(r, -EADDRNOTAVAIL, "cm_connect: the source address is not "
				     "this device's");
	if (!(c = emu_cm_conn_new(cm)))
		return emu_reply_err(r, -ENOMEM, "cm_connect: out of memory");
	if (!(o = emu_obj_new(r->s, EMU_OBJ_CM_CONN))) {
		emu_cm_conn_release(cm, c, emu_now_ns());
		return emu_reply_err(r, -ENOMEM, "too many objects");
	}
	o->u.cm_conn = c;
	c->obj = o;
	c->user = q->user;
	set_channel(&c->channel, ch);
	if ((rc = emu_cm_conn_connect(cm, c, q, emu_now_ns()))) {
		emu_obj_destroy(o);
		return emu_reply_err(r, rc, "cm_connect: %s", strerror(-rc));
	}
	return ok_handle(r, o->handle);
}

static struct emu_cm_conn *conn_of(struct emu_req *r)
{
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_CM_CONN);

	return o ? o->u.cm_conn : NULL;
}

static int done(struct emu_req *r, int rc, const char *what)
{
	if (rc)
		return emu_reply_err(r, rc, "%s: %s", what, rc == -EINVAL ?
				     "not in a state for it (or private data too long)" :
				     strerror(-rc));
	return ok(r, NULL, 0);
}

static int op_cm_accept(struct emu_req *r)
{
	const struct ipc_cm_accept_req *q = r->body;
	struct emu_cm_conn *c = conn_of(r);
	struct emu_obj *ch = NULL;

	EMU_WANT_BODY(r, struct ipc_cm_accept_req);
	if (!c)
		return emu_reply_err(r, -ENOENT, "cm_accept: no connection %u", r->hdr->handle);
	if (q->channel && !(ch = channel_of(r, q->channel)))
		return emu_reply_err(r, -ENOENT, "cm_accept: no CM channel %u", q->channel);
	if (ch)
		set_channel(&c->channel, ch);
	c->user = q->user;
	return done(r, emu_cm_conn_accept(cm_of(r), c, q, emu_now_ns()), "cm_accept");
}

/* CM_REJECT, CM_ESTABLISH, CM_DISCONNECT: a connection and private data. */
static int op_cm_private(struct emu_req *r)
{
	const struct ipc_cm_private *p = r->body;
	struct emu_cm_conn *c = conn_of(r);
	struct emu_cm *cm = cm_of(r);

	EMU_WANT_BODY(r, struct ipc_cm_private);
	if (!c)
		return emu_reply_err(r, -ENOENT, "no CM connection %u", r->hdr->handle);
	switch (r->hdr->op) {
	case IPC_CM_REJECT: return done(r, emu_cm_conn_reject(cm, c, p), "cm_reject");
	case IPC_CM_ESTABLISH: return done(r, emu_cm_conn_establish(cm, c, p), "cm_establish");
	default:
		return done(r, emu_cm_conn_disconnect(cm, c, p, emu_now_ns()), "cm_disconnect");
	}
}

static int op_cm_destroy(struct emu_req *r)
{
	static const enum emu_obj_type types[] = { EMU_OBJ_CM_CONN, EMU_OBJ_CM_LISTEN,
						   EMU_OBJ_CM_CHANNEL };
	struct emu_obj *o = NULL;
	int rc;

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "CM_DESTROY has no body");
	for (unsigned i = 0; !o && i < sizeof(types) / sizeof(types[0]); i++)
		o = emu_obj_get(r->s, r->hdr->handle, types[i]);
	if (!o)
		return emu_reply_err(r, -ENOENT, "cm_destroy: no CM object %u", r->hdr->handle);
	if ((rc = emu_obj_destroy(o)))
		return emu_reply_err(r, rc, "cm_destroy: %s", rc == -EBUSY ?
				     "listeners or connections still use this channel" :
				     strerror(-rc));
	return ok(r, NULL, 0);
}

emu_op_fn emu_cm_op(unsigned op)
{
	switch (op) {
	case IPC_CM_CHANNEL: return op_cm_channel;
	case IPC_CM_BIND:
	case IPC_CM_LISTEN: return op_cm_listen;
	case IPC_CM_CONNECT: return op_cm_connect;
	case IPC_CM_ACCEPT: return op_cm_accept;
	case IPC_CM_REJECT:
	case IPC_CM_ESTABLISH:
	case IPC_CM_DISCONNECT: return op_cm_private;
	case IPC_CM_DESTROY: return op_cm_destroy;
	default: return NULL;
	}
}
