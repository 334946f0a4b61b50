/* SPDX-License-Identifier: MIT */
/* cm_sidr — the UD port space (RDMA_PS_UDP): Service ID Resolution, IBA 12.11. A UD
 * "connection" is one SIDR_REQ ("which QP serves this service?") and its SIDR_REP (the
 * QPN and Q_Key, or why not); the active side then sends datagrams to that QP. States and
 * statuses in cm.h; rdma_cm's IP header leads the SIDR_REQ's private data as the REQ's. */
#include "cm.h"

#include <errno.h>
#include <string.h>

/* A SIDR_REQ for a listener: a passive exchange in SIDR_REQ_RCVD and its CONNECT_REQUEST
 * (no QP of the peer: SIDR carries none). */
static void take(struct emu_cm *cm, struct emu_cm_listener *l, const struct nic_gid *from,
		 const struct cm_msg *m, const struct ipc_cm_addr *src,
		 const struct ipc_cm_addr *dst)
{
	struct emu_cm_conn *c = emu_cm_conn_new(cm);
	struct ipc_cm_event ev = { .type = IPC_CM_EV_CONNECT_REQUEST, .src = *src, .dst = *dst };

	if (!c)
		return;		/* the peer retries, then gives up: UNREACHABLE */
	c->state = EMU_CM_SIDR_REQ_RCVD;
	c->local_id = emu_cm_new_comm_id(cm);
	c->remote_id = m->u.sidr_req.request_id;
	c->peer = *from;
	c->tid = m->hdr.tid;
	c->peer_qp.qp_type = ODPEMU_QPT_UD;
	c->service_id = m->u.sidr_req.service_id;
	if (l->pending >= l->backlog || !emu_cm_conn_obj_new(l, c)) {
		emu_cm_sidr_answer(cm, c, EMU_CM_SIDR_REJECT, NULL, NULL);
		emu_cm_finish(cm, c);
		return;
	}
	c->listener = l;
	l->pending++;
	ev.peer = c->peer_qp;
	ev.priv.len = CM_SIDR_REQ_USER_PRIVATE_LEN;
	memcpy(ev.priv.data, m->u.sidr_req.private_data + CM_IP_HDR_LEN,
	       CM_SIDR_REQ_USER_PRIVATE_LEN);
	emu_cm_event(cm, c, &ev);
}

bool emu_cm_sidr_rx_req(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m)
{
	const struct cm_sidr_req *r = &m->u.sidr_req;
	struct emu_cm_conn *dup = emu_cm_by_remote(cm, from, r->request_id);
	struct ipc_cm_addr src, dst;
	struct emu_cm_listener *l;

	if (dup) {
		cm->ctr.duplicates++;
		if (dup->state == EMU_CM_CLOSED && dup->has_last)
			emu_cm_resend(cm, from, dup->last);	/* our SIDR_REP was lost */
		return true;
	}
	if (!(l = emu_cm_listener_of(cm, r->service_id, CM_PS_UDP, r->private_data,
				     CM_SIDR_REQ_PRIVATE_LEN, &src, &dst)))
		return false;	/* nobody here: UNSUPPORTED */
	take(cm, l, from, m, &src, &dst);
	return true;
}

/* The answer to our SIDR_REQ: ESTABLISHED with the peer's QPN and Q_Key, or UNREACHABLE
 * with the SIDR status (the kernel's cma_sidr_rep_handler). */
bool emu_cm_sidr_rx_rep(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m)
{
	const struct cm_sidr_rep *r = &m->u.sidr_rep;
	struct emu_cm_conn *c = emu_cm_by_local_id(cm, r->request_id);

	if (!c || !c->active || memcmp(&c->peer, from, sizeof(*from)))
		return false;
	if (c->state != EMU_CM_SIDR_REQ_SENT) {
		cm->ctr.duplicates++;
		return true;
	}
	if (r->status == EMU_CM_SIDR_SUCCESS) {
		c->peer_qp = (struct ipc_cm_qp){ .qpn = r->qpn & 0xffffff, .qkey = r->qkey,
			.qp_type = ODPEMU_QPT_UD };
		cm->ctr.established++;
		emu_cm_conn_event(cm, c, IPC_CM_EV_ESTABLISHED, 0, r->private_data,
				  CM_SIDR_REP_PRIVATE_LEN);
	} else {
		emu_cm_conn_event(cm, c, IPC_CM_EV_UNREACHABLE, r->status, r->private_data,
				  CM_SIDR_REP_PRIVATE_LEN);
	}
	c->has_last = false;
	emu_cm_finish(cm, c);
	return true;
}

int emu_cm_sidr_connect(struct emu_cm *cm, struct emu_cm_conn *c,
			const struct ipc_cm_connect_req *q, uint64_t now)
{
	struct cm_msg m;
	struct cm_sidr_req *r = &m.u.sidr_req;
	int rc;

	if (q->priv.len > CM_SIDR_REQ_USER_PRIVATE_LEN)
		return -EINVAL;
	c->active = true;
	c->local_id = emu_cm_new_comm_id(cm);
	emu_cm_peer_of(q, &c->peer);
	c->tid = (uint64_t)c->local_id << 32 | 3;
	c->local_qp = q->qp;
	m = emu_cm_msg(CM_ATTR_SIDR_REQ, c->tid);
	r->request_id = c->local_id;
	r->pkey = 0xffff;
	r->service_id = cm_service_id(CM_PS_UDP, q->dst.port);
	if ((rc = emu_cm_ip_private(r->private_data, q)))
		return rc;
	return emu_cm_send_request(cm, c, &m, EMU_CM_SIDR_REQ_SENT, now);
}

int emu_cm_sidr_answer(struct emu_cm *cm, struct emu_cm_conn *c, uint8_t status,
		       const struct ipc_cm_qp *qp, const struct ipc_cm_private *priv)
{
	struct cm_msg m = emu_cm_msg(CM_ATTR_SIDR_REP, c->tid);
	struct cm_sidr_rep *r = &m.u.sidr_rep;
	int rc;

	if (priv && priv->len > CM_SIDR_REP_PRIVATE_LEN)
		return -EINVAL;
	r->request_id = c->remote_id;
	r->status = status;
	r->service_id = c->service_id;
	if (qp) {
		r->qpn = qp->qpn & 0xffffff;
		r->qkey = qp->qkey;
	}
	if (priv && priv->len)
		memcpy(r->private_data, priv->data, priv->len);
	if ((rc = emu_cm_send(cm, &c->peer, &m, c->last)))
		return rc;
	c->has_last = true;	/* a retransmitted SIDR_REQ gets it again */
	return 0;
}
