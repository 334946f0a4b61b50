/* SPDX-License-Identifier: MIT */
/* cm_conn — the connection manager's connections and listeners (states in cm.h). */
#include "cm.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "odpemu/cm.h"

#define MS 1000000ull
#define NO_DEADLINE UINT64_MAX


/* ---- lookups ---- */

struct emu_cm_conn *emu_cm_by_local_id(struct emu_cm *cm, uint32_t id)
{
	for (struct emu_cm_conn *c = cm->conns; c; c = c->next)
		if (c->local_id == id)
			return c;
	return NULL;
}

/* A REQ we already have: the same peer and its communication ID (a retransmission). */
struct emu_cm_conn *emu_cm_by_remote(struct emu_cm *cm, const struct nic_gid *peer,
				     uint32_t id)
{
	for (struct emu_cm_conn *c = cm->conns; c; c = c->next)
		if (!c->active && c->remote_id == id && !memcmp(&c->peer, peer, sizeof(*peer)))
			return c;
	return NULL;
}

static bool gid_eq(const struct nic_gid *a, const struct nic_gid *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static struct emu_cm_listener *emu_cm_listener_for(struct emu_cm *cm, uint64_t sid,
						    const struct nic_gid *dst)
{
	for (struct emu_cm_listener *l = cm->listeners; l; l = l->next)
		if (emu_cm_port_hears(l, sid, dst))
			return l;
	return NULL;
}

/* ---- addresses: rdma_cm's IP header <-> GID and port ---- */

static void emu_cm_addr_of(const struct sockaddr_storage *ss, struct ipc_cm_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		a->gid[10] = a->gid[11] = 0xff;
		memcpy(a->gid + 12, &s4->sin_addr, 4);
		a->port = ntohs(s4->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		memcpy(a->gid, &s6->sin6_addr, 16);
		a->port = ntohs(s6->sin6_port);
	}
}

static void emu_cm_sockaddr_of(const struct ipc_cm_addr *a, struct sockaddr_storage *ss)
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(a->gid, v4, sizeof(v4))) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(a->port);
		memcpy(&s4->sin_addr, a->gid + 12, 4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(a->port);
		memcpy(&s6->sin6_addr, a->gid, 16);
	}
}

/* ---- the connection's life ---- */

struct emu_cm_conn *emu_cm_conn_new(struct emu_cm *cm)
{
	struct emu_cm_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->deadline_ns = NO_DEADLINE;
	c->state = EMU_CM_CLOSED;
	c->next = cm->conns;
	cm->conns = c;
	return c;
}

static void unlink_free(struct emu_cm *cm, struct emu_cm_conn *c)
{
	for (struct emu_cm_conn **p = &cm->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	free(c);
}

/* Done with the protocol: an orphan goes, an owned one waits for its object's end. */
void emu_cm_finish(struct emu_cm *cm, struct emu_cm_conn *c)
{
	c->state = EMU_CM_CLOSED;
	c->deadline_ns = NO_DEADLINE;
	if (c->listener) {
		c->listener->pending--;
		c->listener = NULL;
	}
	if (!c->obj)
		unlink_free(cm, c);
}

static void emu_cm_wait_answer(struct emu_cm_conn *c, uint64_t now)
{
	c->retries = 0;
	c->deadline_ns = now + EMU_CM_RESPONSE_MS * MS;
}

static void enter_timewait(struct emu_cm_conn *c, uint64_t now)
{
	c->state = EMU_CM_TIMEWAIT;
	c->deadline_ns = now + EMU_CM_TIMEWAIT_MS * MS;
}

void emu_cm_conn_event(struct emu_cm *cm, struct emu_cm_conn *c, uint32_t type,
		       int32_t status, const uint8_t *priv, size_t priv_len)
{
	struct ipc_cm_event ev = { .type = type, .status = status, .peer = c->peer_qp };

	if (!c->obj)
		return;		/* an orphan has nobody to tell */
	if (priv && priv_len) {
		ev.priv.len = (uint16_t)(priv_len < IPC_CM_PRIVATE_MAX ? priv_len
								       : IPC_CM_PRIVATE_MAX);
		memcpy(ev.priv.data, priv, ev.priv.len);
	}
	emu_cm_event(cm, c, &ev);
}

/* ---- messages ---- */

static void qp_of_req(const struct cm_req *r, struct ipc_cm_qp *q)
{
	*q = (struct ipc_cm_qp){ .qpn = r->local_qpn, .psn = r->starting_psn,
		.qkey = r->local_qkey, .qp_type = ODPEMU_QPT_RC,
		.responder_resources = r->responder_resources,
		.initiator_depth = r->initiator_depth, .retry_count = r->retry_count,
		.rnr_retry_count = r->rnr_retry_count, .srq = r->srq,
		.flow_control = r->e2e_flow_control, .mtu = r->path_mtu };
}

static void qp_of_rep(const struct cm_rep *r, struct ipc_cm_qp *q, uint8_t mtu)
{
	*q = (struct ipc_cm_qp){ .qpn = r->local_qpn, .psn = r->starting_psn,
		.qkey = r->local_qkey, .qp_type = ODPEMU_QPT_RC,
		.responder_resources = r->responder_resources,
		.initiator_depth = r->initiator_depth, .rnr_retry_count = r->rnr_retry_count,
		.srq = r->srq, .flow_control = r->e2e_flow_control, .mtu = mtu };
}

/* The CA GUID a RoCE port derives from its address (EUI-64-like: the GID's low bytes). */
static uint64_t ca_guid(const struct nic_gid *g)
{
	uint64_t v = 0;

	for (int i = 8; i < 16; i++)
		v = v << 8 | g->raw[i];
	return v;
}

/* A REQ for a listener: a new connection in REQ_RCVD and its CONNECT_REQUEST. */
static void take_req(struct emu_cm *cm, struct emu_cm_listener *l, const struct nic_gid *from,
		     const struct cm_msg *m, const struct ipc_cm_addr *src,
		     const struct ipc_cm_addr *dst)
{
	struct emu_cm_conn *c = emu_cm_conn_new(cm);
	struct ipc_cm_event ev = { .type = IPC_CM_EV_CONNECT_REQUEST, .src = *src, .dst = *dst };

	if (!c || l->pending >= l->backlog) {
		if (c)
			unlink_free(cm, c);
		emu_cm_reject(cm, from, m->hdr.tid, emu_cm_new_comm_id(cm),
			      m->u.req.local_comm_id, CM_MSG_RESPONSE_REQ, CM_REJ_NO_RESOURCES,
			      NULL);
		return;
	}
	c->state = EMU_CM_REQ_RCVD;
	c->local_id = emu_cm_new_comm_id(cm);
	c->remote_id = m->u.req.local_comm_id;
	c->peer = *from;
	c->tid = m->hdr.tid;
	qp_of_req(&m->u.req, &c->peer_qp);
	c->listener = l;
	l->pending++;
	if (!emu_cm_conn_obj_new(l, c)) {
		emu_cm_reject(cm, from, c->tid, c->local_id, c->remote_id, CM_MSG_RESPONSE_REQ,
			      CM_REJ_NO_RESOURCES, NULL);
		emu_cm_finish(cm, c);
		return;
	}
	ev.peer = c->peer_qp;
	ev.listener = 0;	/* filled by emu_cm_event from the listener */
	ev.priv.len = CM_REQ_USER_PRIVATE_LEN;
	memcpy(ev.priv.data, m->u.req.private_data + CM_IP_HDR_LEN, CM_REQ_USER_PRIVATE_LEN);
	emu_cm_event(cm, c, &ev);
}

struct emu_cm_listener *emu_cm_listener_of(struct emu_cm *cm, uint64_t sid,
					    enum cm_port_space want, const uint8_t *priv,
					    size_t len, struct ipc_cm_addr *src,
					    struct ipc_cm_addr *dst)
{
	struct sockaddr_storage ssrc, sdst;
	enum cm_port_space ps;
	uint16_t port;

	if (cm_service_id_split(sid, &ps, &port) || (want && ps != want) ||
	    cm_ip_hdr_decode(priv, len, &ssrc, &sdst))
		return NULL;	/* not rdma_cm's (or not that port space): no service of ours */
	emu_cm_addr_of(&ssrc, src);
	emu_cm_addr_of(&sdst, dst);
	dst->port = port;
	return emu_cm_listener_for(cm, sid, (const struct nic_gid *)dst->gid);
}

static bool on_req(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m)
{
	struct emu_cm_conn *dup = emu_cm_by_remote(cm, from, m->u.req.local_comm_id);
	struct ipc_cm_addr src, dst;
	struct emu_cm_listener *l;

	if (dup) {
		cm->ctr.duplicates++;
		if (dup->state == EMU_CM_REP_SENT && dup->has_last)
			emu_cm_resend(cm, from, dup->last);	/* our REP was lost */
		return true;
	}
	if (!(l = emu_cm_listener_of(cm, m->u.req.service_id, 0, m->u.req.private_data,
				     CM_REQ_PRIVATE_LEN, &src, &dst)))
		return false;
	take_req(cm, l, from, m, &src, &dst);
	return true;
}

static bool on_rep(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m)
{
	struct emu_cm_conn *c = emu_cm_by_local_id(cm, m->u.rep.remote_comm_id);

	if (!c || !c->active || !gid_eq(&c->peer, from))
		return false;
	if (c->state == EMU_CM_ESTABLISHED && c->has_last) {
		cm->ctr.duplicates++;
		emu_cm_resend(cm, from, c->last);	/* our RTU was lost */
		return true;
	}
	if (c->state != EMU_CM_REQ_SENT) {
		cm->ctr.duplicates++;
		return true;
	}
	c->remote_id = m->u.rep.local_comm_id;
	qp_of_rep(&m->u.rep, &c->peer_qp, c->local_qp.mtu);
	c->state = EMU_CM_REP_RCVD;
	c->deadline_ns = NO_DEADLINE;
	c->has_last = false;
	emu_cm_conn_event(cm, c, IPC_CM_EV_CONNECT_RESPONSE, 0, m->u.rep.private_data,
			  CM_REP_PRIVATE_LEN);
	return true;
}

static bool on_rtu(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m)
{
	struct emu_cm_conn *c = emu_cm_by_local_id(cm, m->u.rtu.remote_comm_id);

	if (!c || c->active || !gid_eq(&c->peer, from))
		return false;
	if (c->state != EMU_CM_REP_SENT) {
		cm->ctr.duplicates++;
		return true;
	}
	c->state = EMU_CM_ESTABLISHED;
	c->deadline_ns = NO_DEADLINE;
	c->has_last = false;
	cm->ctr.established++;
	emu_cm_conn_event(cm, c, IPC_CM_EV_ESTABLISHED, 0, m->u.rtu.private_data,
			  CM_RTU_PRIVATE_LEN);
	return true;
}

static bool on_rej(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m)
{
	struct emu_cm_conn *c = emu_cm_by_local_id(cm, m->u.rej.remote_comm_id);

	if (!c || !gid_eq(&c->peer, from))
		return false;
	if (c->state != EMU_CM_REQ_SENT && c->state != EMU_CM_REP_RCVD &&
	    c->state != EMU_CM_REP_SENT)
		return true;	/* a late one: the connection went on without it */
	emu_cm_conn_event(cm, c, IPC_CM_EV_REJECTED, m->u.rej.reason, m->u.rej.private_data,
	      CM_REJ_PRIVATE_LEN);
	emu_cm_finish(cm, c);
	return true;
}

/* IBA 12.6.6: the peer needs longer; wait its service timeout (4.096 us * 2^t) more. */
static bool on_mra(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m,
		   uint64_t now)
{
	struct emu_cm_conn *c = emu_cm_by_local_id(cm, m->u.mra.remote_comm_id);

	if (!c || !gid_eq(&c->peer, from))
		return false;
	if (c->state == EMU_CM_REQ_SENT || c->state == EMU_CM_REP_SENT)
		c->deadline_ns = now + EMU_CM_RESPONSE_MS * MS +
				 (4096ull << m->u.mra.service_timeout);
	return true;
}

static void send_drep(struct emu_cm *cm, struct emu_cm_conn *c, uint64_t tid,
		      const struct ipc_cm_private *priv)
{
	struct cm_msg m = emu_cm_msg(CM_ATTR_DREP, tid);

	m.u.drep.local_comm_id = c->local_id;
	m.u.drep.remote_comm_id = c->remote_id;
	if (priv && priv->len)
		memcpy(m.u.drep.private_data, priv->data,
		       priv->len < CM_DREP_PRIVATE_LEN ? priv->len : CM_DREP_PRIVATE_LEN);
	emu_cm_send(cm, &c->peer, &m, NULL);
}

static bool on_dreq(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m)
{
	struct emu_cm_conn *c = emu_cm_by_local_id(cm, m->u.dreq.remote_comm_id);

	if (!c || !gid_eq(&c->peer, from))
		return false;
	switch (c->state) {
	case EMU_CM_ESTABLISHED:
	case EMU_CM_REP_SENT:		/* the RTU was lost, the peer is done already */
		c->tid = m->hdr.tid;
		c->deadline_ns = NO_DEADLINE;
		if (!c->obj) {		/* nobody to ask: answer now */
			send_drep(cm, c, c->tid, NULL);
			emu_cm_finish(cm, c);
			return true;
		}
		c->state = EMU_CM_DREQ_RCVD;
		emu_cm_conn_event(cm, c, IPC_CM_EV_DISCONNECTED, 0, m->u.dreq.private_data,
		      CM_DREQ_PRIVATE_LEN);
		return true;
	case EMU_CM_DREQ_SENT:		/* both ends disconnect: each answers the other */
	case EMU_CM_TIMEWAIT:
	case EMU_CM_CLOSED:
		send_drep(cm, c, m->hdr.tid, NULL);
		return true;
	default:
		cm->ctr.duplicates++;	/* DREQ_RCVD: a retransmission */
		return true;
	}
}

static bool on_drep(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m,
		    uint64_t now)
{
	struct emu_cm_conn *c = emu_cm_by_local_id(cm, m->u.drep.remote_comm_id);

	if (!c || !gid_eq(&c->peer, from))
		return false;
	if (c->state != EMU_CM_DREQ_SENT)
		return true;
	emu_cm_conn_event(cm, c, IPC_CM_EV_DISCONNECTED, 0, m->u.drep.private_data, CM_DREP_PRIVATE_LEN);
	enter_timewait(c, now);
	return true;
}

bool emu_cm_conn_rx(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m,
		    uint64_t now)
{
	switch (m->attr) {
	case CM_ATTR_REQ: return on_req(cm, from, m);
	case CM_ATTR_REP: return on_rep(cm, from, m);
	case CM_ATTR_RTU: return on_rtu(cm, from, m);
	case CM_ATTR_REJ: return on_rej(cm, from, m);
	case CM_ATTR_MRA: return on_mra(cm, from, m, now);
	case CM_ATTR_DREQ: return on_dreq(cm, from, m);
	case CM_ATTR_DREP: return on_drep(cm, from, m, now);
	case CM_ATTR_SIDR_REQ: return emu_cm_sidr_rx_req(cm, from, m);
	case CM_ATTR_SIDR_REP: return emu_cm_sidr_rx_rep(cm, from, m);
	default: return false;
	}
}

/* ---- what the session asks ---- */

static void fill_path(struct cm_path *p, const struct nic_gid *local, const struct nic_gid *remote)
{
	/* RoCE: no LIDs (0xFFFF, the permissive LID, as the kernel fills them), hop limit of
	 * a routed path, the local ACK timeout rdma_cm derives from the packet lifetime. */
	p->local_lid = p->remote_lid = 0xffff;
	memcpy(p->local_gid, local->raw, 16);
	memcpy(p->remote_gid, remote->raw, 16);
	p->hop_limit = 64;
	p->packet_rate = 7;	/* 40 Gb/s: any value; nothing paces by it */
	p->local_ack_timeout = ODPEMU_CM_ACK_TIMEOUT;
}

/* Where a connection's MADs go: the destination's GID; for "any address" (0.0.0.0, ::) the
 * source's own, as the kernel's cma_resolve_loopback sets the DGID to the SGID (the IP
 * header in the private data keeps the address asked for). */
void emu_cm_peer_of(const struct ipc_cm_connect_req *q, struct nic_gid *peer)
{
	static const uint8_t v4_any[16] = { [10] = 0xff, [11] = 0xff };	/* ::ffff:0.0.0.0 */

	memcpy(peer->raw, q->dst.gid, 16);
	if (emu_cm_gid_any(peer) || !memcmp(peer->raw, v4_any, 16))
		memcpy(peer->raw, q->src.gid, 16);
}

int emu_cm_conn_connect(struct emu_cm *cm, struct emu_cm_conn *c,
			const struct ipc_cm_connect_req *q, uint64_t now)
{
	struct cm_msg m;
	struct cm_req *r = &m.u.req;
	uint64_t sid = cm_service_id((enum cm_port_space)q->ps, q->dst.port);
	int rc;

	if (!sid)
		return -EPROTONOSUPPORT;
	if (q->ps == CM_PS_UDP)
		return emu_cm_sidr_connect(cm, c, q, now);
	if (q->priv.len > CM_REQ_USER_PRIVATE_LEN)
		return -EINVAL;
	c->active = true;
	c->local_id = emu_cm_new_comm_id(cm);
	emu_cm_peer_of(q, &c->peer);
	c->tid = (uint64_t)c->local_id << 32 | 1;
	c->local_qp = q->qp;
	m = emu_cm_msg(CM_ATTR_REQ, c->tid);
	r->local_comm_id = c->local_id;
	r->service_id = sid;
	r->local_ca_guid = ca_guid(&cm->gid);
	r->local_qpn = q->qp.qpn;
	r->responder_resources = q->qp.responder_resources;
	r->initiator_depth = q->qp.initiator_depth;
	r->remote_cm_response_timeout = r->local_cm_response_timeout = EMU_CM_RESPONSE_EXP;
	r->transport_service_type = CM_TRANSPORT_RC;
	r->e2e_flow_control = q->qp.flow_control & 1;
	r->starting_psn = q->qp.psn & 0xffffff;
	r->retry_count = q->qp.retry_count & 7;
	r->pkey = 0xffff;
	r->path_mtu = q->qp.mtu & 0xf;
	r->rnr_retry_count = q->qp.rnr_retry_count & 7;
	r->max_cm_retries = EMU_CM_RETRIES;
	r->srq = q->qp.srq & 1;
	fill_path(&r->primary, (const struct nic_gid *)q->src.gid, &c->peer);
	if ((rc = emu_cm_ip_private(r->private_data, q)))
		return rc;
	return emu_cm_send_request(cm, c, &m, EMU_CM_REQ_SENT, now);
}

int emu_cm_ip_private(uint8_t *priv, const struct ipc_cm_connect_req *q)
{
	struct sockaddr_storage src, dst;
	int rc;

	emu_cm_sockaddr_of(&q->src, &src);
	emu_cm_sockaddr_of(&q->dst, &dst);
	if ((rc = cm_ip_hdr_encode(priv, (struct sockaddr *)&src, (struct sockaddr *)&dst)))
		return rc;
	memcpy(priv + CM_IP_HDR_LEN, q->priv.data, q->priv.len);
	return 0;
}

int emu_cm_send_request(struct emu_cm *cm, struct emu_cm_conn *c, const struct cm_msg *m,
			enum emu_cm_state state, uint64_t now)
{
	int rc = emu_cm_send(cm, &c->peer, m, c->last);

	if (rc)
		return rc;
	c->has_last = true;
	c->state = state;
	emu_cm_wait_answer(c, now);
	return 0;
}

int emu_cm_conn_accept(struct emu_cm *cm, struct emu_cm_conn *c,
		       const struct ipc_cm_accept_req *q, uint64_t now)
{
	struct cm_msg m = emu_cm_msg(CM_ATTR_REP, c->tid);
	struct cm_rep *r = &m.u.rep;
	int rc;

	if (c->state == EMU_CM_SIDR_REQ_RCVD) {
		rc = emu_cm_sidr_answer(cm, c, EMU_CM_SIDR_SUCCESS, &q->qp, &q->priv);
		if (!rc)
			emu_cm_finish(cm, c);
		return rc;
	}
	if (c->state != EMU_CM_REQ_RCVD)
		return -EINVAL;
	if (q->priv.len > CM_REP_PRIVATE_LEN)
		return -EINVAL;
	c->local_qp = q->qp;
	r->local_comm_id = c->local_id;
	r->remote_comm_id = c->remote_id;
	r->local_qpn = q->qp.qpn;
	r->starting_psn = q->qp.psn & 0xffffff;
	r->responder_resources = q->qp.responder_resources;
	r->initiator_depth = q->qp.initiator_depth;
	r->target_ack_delay = 15;	/* 134 ms: what a software responder can promise */
	r->e2e_flow_control = q->qp.flow_control & 1;
	r->rnr_retry_count = q->qp.rnr_retry_count & 7;
	r->srq = q->qp.srq & 1;
	r->local_ca_guid = ca_guid(&cm->gid);
	memcpy(r->private_data, q->priv.data, q->priv.len);
	if ((rc = emu_cm_send(cm, &c->peer, &m, c->last)))
		return rc;
	c->has_last = true;
	c->state = EMU_CM_REP_SENT;
	if (c->listener) {
		c->listener->pending--;
		c->listener = NULL;
	}
	emu_cm_wait_answer(c, now);
	return 0;
}

int emu_cm_conn_reject(struct emu_cm *cm, struct emu_cm_conn *c,
		       const struct ipc_cm_private *priv)
{
	if (c->state == EMU_CM_SIDR_REQ_RCVD) {
		int rc = emu_cm_sidr_answer(cm, c, EMU_CM_SIDR_REJECT, NULL, priv);

		if (!rc)
			emu_cm_finish(cm, c);
		return rc;
	}
	if (c->state != EMU_CM_REQ_RCVD && c->state != EMU_CM_REP_RCVD)
		return -EINVAL;
	if (priv->len > CM_REJ_PRIVATE_LEN)
		return -EINVAL;
	emu_cm_reject(cm, &c->peer, c->tid, c->local_id, c->remote_id,
		      c->active ? CM_MSG_RESPONSE_REP : CM_MSG_RESPONSE_REQ,
		      CM_REJ_CONSUMER_DEFINED, priv);
	emu_cm_finish(cm, c);
	return 0;
}

int emu_cm_conn_establish(struct emu_cm *cm, struct emu_cm_conn *c,
			  const struct ipc_cm_private *priv)
{
	struct cm_msg m = emu_cm_msg(CM_ATTR_RTU, c->tid);
	int rc;

	if (c->state != EMU_CM_REP_RCVD)
		return -EINVAL;
	if (priv->len > CM_RTU_PRIVATE_LEN)
		return -EINVAL;
	m.u.rtu.local_comm_id = c->local_id;
	m.u.rtu.remote_comm_id = c->remote_id;
	memcpy(m.u.rtu.private_data, priv->data, priv->len);
	if ((rc = emu_cm_send(cm, &c->peer, &m, c->last)))
		return rc;
	c->has_last = true;	/* resent if the peer's REP comes again */
	c->state = EMU_CM_ESTABLISHED;
	cm->ctr.established++;
	return 0;
}

static int send_dreq(struct emu_cm *cm, struct emu_cm_conn *c, const struct ipc_cm_private *priv,
		     uint64_t now)
{
	struct cm_msg m;
	int rc;

	c->tid = (uint64_t)c->local_id << 32 | 2;
	m = emu_cm_msg(CM_ATTR_DREQ, c->tid);
	m.u.dreq.local_comm_id = c->local_id;
	m.u.dreq.remote_comm_id = c->remote_id;
	m.u.dreq.remote_qpn_eecn = c->peer_qp.qpn & 0xffffff;
	if (priv && priv->len)
		memcpy(m.u.dreq.private_data, priv->data,
		       priv->len < CM_DREQ_PRIVATE_LEN ? priv->len : CM_DREQ_PRIVATE_LEN);
	if ((rc = emu_cm_send(cm, &c->peer, &m, c->last)))
		return rc;
	c->has_last = true;
	c->state = EMU_CM_DREQ_SENT;
	emu_cm_wait_answer(c, now);
	return 0;
}

int emu_cm_conn_disconnect(struct emu_cm *cm, struct emu_cm_conn *c,
			   const struct ipc_cm_private *priv, uint64_t now)
{
	if (priv->len > CM_DREQ_PRIVATE_LEN)
		return -EINVAL;
	switch (c->state) {
	case EMU_CM_ESTABLISHED:
	case EMU_CM_REP_SENT:
		return send_dreq(cm, c, priv, now);
	case EMU_CM_DREQ_RCVD:
		send_drep(cm, c, c->tid, priv);
		enter_timewait(c, now);
		return 0;
	case EMU_CM_DREQ_SENT:
	case EMU_CM_TIMEWAIT:
	case EMU_CM_CLOSED:
		return 0;	/* already going (rdma_disconnect twice is not an error) */
	default:
		return -EINVAL;
	}
}

void emu_cm_conn_release(struct emu_cm *cm, struct emu_cm_conn *c, uint64_t now)
{
	static const struct ipc_cm_private none;

	c->obj = NULL;
	c->channel = NULL;
	switch (c->state) {
	case EMU_CM_ESTABLISHED:
		if (!send_dreq(cm, c, NULL, now))
			return;	/* the orphan waits for its DREP */
		break;
	case EMU_CM_DREQ_SENT:
		return;
	case EMU_CM_DREQ_RCVD:
		send_drep(cm, c, c->tid, NULL);
		break;
	case EMU_CM_REQ_RCVD:
	case EMU_CM_REP_RCVD:
	case EMU_CM_REP_SENT:
		emu_cm_reject(cm, &c->peer, c->tid, c->local_id, c->remote_id,
			      c->active ? CM_MSG_RESPONSE_REP : CM_MSG_RESPONSE_REQ,
			      CM_REJ_CONSUMER_DEFINED, &none);
		break;
	case EMU_CM_REQ_SENT:
		emu_cm_reject(cm, &c->peer, c->tid, c->local_id, 0, CM_MSG_RESPONSE_OTHER,
			      CM_REJ_TIMEOUT, &none);
		break;
	case EMU_CM_SIDR_REQ_RCVD:
		emu_cm_sidr_answer(cm, c, EMU_CM_SIDR_REJECT, NULL, &none);
		break;
	default:
		break;
	}
	emu_cm_finish(cm, c);
}

void emu_cm_listener_release(struct emu_cm *cm, struct emu_cm_listener *l)
{
	emu_cm_claim_drop(cm, l);
	for (struct emu_cm_conn *c = cm->conns; c; c = c->next)
		if (c->listener == l)
			c->listener = NULL;
	for (struct emu_cm_listener **p = &cm->listeners; *p; p = &(*p)->next)
		if (*p == l) {
			*p = l->next;
			break;
		}
	free(l);
}

/* ---- timers ---- */

static void give_up(struct emu_cm *cm, struct emu_cm_conn *c, uint64_t now)
{
	cm->ctr.give_ups++;
	switch (c->state) {
	case EMU_CM_REQ_SENT:
	case EMU_CM_REP_SENT:
		/* IBA 12.9.6: the REQ/REP timed out; tell the peer, if it is there */
		emu_cm_reject(cm, &c->peer, c->tid, c->local_id, c->remote_id,
			      c->state == EMU_CM_REQ_SENT ? CM_MSG_RESPONSE_REQ
							  : CM_MSG_RESPONSE_REP,
			      CM_REJ_TIMEOUT, NULL);
		emu_cm_conn_event(cm, c, IPC_CM_EV_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		emu_cm_finish(cm, c);
		return;
	case EMU_CM_DREQ_SENT:
		emu_cm_conn_event(cm, c, IPC_CM_EV_DISCONNECTED, 0, NULL, 0);
		enter_timewait(c, now);
		return;
	case EMU_CM_SIDR_REQ_SENT:	/* cma_sidr_rep_handler: IB_CM_SIDR_REQ_ERROR */
		emu_cm_conn_event(cm, c, IPC_CM_EV_UNREACHABLE, -ETIMEDOUT, NULL, 0);
		emu_cm_finish(cm, c);
		return;
	default:
		c->deadline_ns = NO_DEADLINE;
		return;
	}
}

static void expire(struct emu_cm *cm, struct emu_cm_conn *c, uint64_t now)
{
	if (c->state == EMU_CM_TIMEWAIT) {
		emu_cm_conn_event(cm, c, IPC_CM_EV_TIMEWAIT_EXIT, 0, NULL, 0);
		emu_cm_finish(cm, c);
		return;
	}
	if (c->has_last && c->retries < EMU_CM_RETRIES) {
		c->retries++;
		emu_cm_resend(cm, &c->peer, c->last);
		c->deadline_ns = now + EMU_CM_RESPONSE_MS * MS;
		return;
	}
	give_up(cm, c, now);
}

void emu_cm_tick(struct emu_cm *cm, uint64_t now)
{
	struct emu_cm_conn *c = cm->conns, *next;

	for (; c; c = next) {
		next = c->next;		/* expire may free c */
		if (c->deadline_ns <= now)
			expire(cm, c, now);
	}
}

uint64_t emu_cm_next_deadline(const struct emu_cm *cm)
{
	uint64_t t = NO_DEADLINE;

	for (const struct emu_cm_conn *c = cm->conns; c; c = c->next)
		if (c->deadline_ns < t)
			t = c->deadline_ns;
	return t;
}
