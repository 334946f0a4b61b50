/* SPDX-License-Identifier: MIT */
/* conn — QPs and connections: rdma_create_qp (RESET to INIT; a UD QP on to RTS),
 * rdma_connect, rdma_accept (the QP to RTR and RTS with what the CM carried, as librdmacm
 * does with the kernel's rdma_init_qp_attr), reject, establish, disconnect (the QP to
 * ERR); and the daemon's events turned into the client's (cma_translate). The UDP port
 * space's "connection" is SIDR: rdma_connect asks which QP serves the service, rdma_accept
 * answers with ours, and ESTABLISHED carries the peer's QPN, Q_Key and address handle. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cma.h"

#define MAX_RD_ATOM 16	/* the device's max_qp_rd_atom */
#define REQ_PRIV 56		/* REQ's private data after rdma_cm's IP header */
#define SIDR_REQ_PRIV 180	/* SIDR_REQ's private data after rdma_cm's IP header */
#define SIDR_REP_PRIV 136	/* SIDR_REP's */

static uint32_t random_psn(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)random();
	return v & 0xffffff;
}

static struct odpemu_context *odp_of(const struct cma_id *id)
{
	return odpemu_compat_context(cma_dev(id->dev)->verbs);
}

static uint8_t cap_rd(uint8_t v)
{
	return v > MAX_RD_ATOM ? MAX_RD_ATOM : v;
}

/* ---- the QP ---- */

static int qp_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC };

	if (qp->qp_type == IBV_QPT_UD) {	/* to RTS at once, as librdmacm's ucma_init_ud_qp */
		a.qkey = RDMA_UDP_QKEY;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
			return -1;
		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
			return -1;
		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0 };
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS);
}

/* RTR and RTS from the peer's QP as the CM carried it (IBA 12.7.7 for what goes where). */
static int qp_connect(struct cma_id *id)
{
	struct cma_dev *d = cma_dev(id->dev);
	enum ibv_mtu mtu = id->peer.mtu && (enum ibv_mtu)id->peer.mtu < d->mtu ?
			   (enum ibv_mtu)id->peer.mtu : d->mtu;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = mtu,
		.dest_qp_num = id->peer.qpn, .rq_psn = id->peer.psn,
		.max_dest_rd_atomic = cap_rd(id->resp_res), .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1, .grh = {
			.dgid = id->id.route.addr.addr.ibaddr.dgid, .sgid_index = 0,
			.hop_limit = 64, .traffic_class = id->tos } } };

	if (ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = id->psn,
		.timeout = id->ack_timeout, .retry_cnt = id->retry, .rnr_retry = id->rnr_retry,
		.max_rd_atomic = cap_rd(id->init_depth) };
	return ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void qp_error(struct cma_id *id)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (id->id.qp)
		ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
}

/* A CQ on its own completion channel, as librdmacm makes one for a QP created without
 * (rdma_get_send_comp/rdma_get_recv_comp wait on that channel). */
static struct ibv_cq *own_cq(struct rdma_cm_id *cid, struct ibv_comp_channel **ch, uint32_t wr)
{
	struct ibv_cq *cq;

	if (!(*ch = ibv_create_comp_channel(cid->verbs)))
		return NULL;
	if (!(cq = ibv_create_cq(cid->verbs, (int)(wr ? wr : 1), cid, *ch, 0))) {
		ibv_destroy_comp_channel(*ch);
		*ch = NULL;
	}
	return cq;
}

static void drop_own_cqs(struct cma_id *id)
{
	struct rdma_cm_id *cid = &id->id;

	if (id->own_send_cq && cid->send_cq) {
		ibv_destroy_cq(cid->send_cq);
		ibv_destroy_comp_channel(cid->send_cq_channel);
		cid->send_cq = NULL;
		cid->send_cq_channel = NULL;
	}
	if (id->own_recv_cq && cid->recv_cq) {
		ibv_destroy_cq(cid->recv_cq);
		ibv_destroy_comp_channel(cid->recv_cq_channel);
		cid->recv_cq = NULL;
		cid->recv_cq_channel = NULL;
	}
	id->own_send_cq = id->own_recv_cq = false;
}

static int make_cqs(struct cma_id *id, struct ibv_qp_init_attr_ex *a)
{
	struct rdma_cm_id *cid = &id->id;

	if (!a->send_cq) {
		if (!(a->send_cq = own_cq(cid, &cid->send_cq_channel, a->cap.max_send_wr)))
			return -1;
		id->own_send_cq = true;
		cid->send_cq = a->send_cq;
	}
	if (!a->recv_cq) {
		if (!(a->recv_cq = own_cq(cid, &cid->recv_cq_channel, a->cap.max_recv_wr)))
			return -1;
		id->own_recv_cq = true;
		cid->recv_cq = a->recv_cq;
	}
	return 0;
}

/* The QP of rdma_create_qp and rdma_create_qp_ex: always through ibv_create_qp_ex, so the
 * extended attributes (send_ops_flags: the ibv_qp_ex work-request API, FLUSH) reach the
 * device as with librdmacm's own rdma_create_qp_ex. */
int cma_create_qp_ex(struct cma_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct rdma_cm_id *cid = &id->id;
	struct ibv_qp_init_attr_ex a = *attr;
	struct ibv_qp *qp;
	int err;

	if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD))
		a.pd = cid->pd;
	a.comp_mask |= IBV_QP_INIT_ATTR_PD;
	if (!a.pd || a.pd->context != cid->verbs)	/* cma.c: the PD must be the ID's device's */
		return errno = EINVAL, -1;
	if (!a.qp_type)		/* a zeroed attr (rdma_client): the ID's type, as librdmacm */
		a.qp_type = cid->qp_type;
	if (make_cqs(id, &a) || !(qp = ibv_create_qp_ex(cid->verbs, &a)))
		goto fail;
	if (qp_init(qp)) {
		err = errno;
		ibv_destroy_qp(qp);
		errno = err;
		goto fail;
	}
	attr->cap = a.cap;	/* what the QP got, as ibv_create_qp reports it */
	cid->qp = qp;
	cid->send_cq = a.send_cq;
	cid->recv_cq = a.recv_cq;
	cid->srq = a.srq;
	id->psn = random_psn();
	return 0;
fail:
	err = errno;
	drop_own_cqs(id);
	return errno = err, -1;
}

int cma_create_qp(struct cma_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex a = { .qp_context = attr->qp_context,
		.send_cq = attr->send_cq, .recv_cq = attr->recv_cq, .srq = attr->srq,
		.cap = attr->cap, .qp_type = attr->qp_type, .sq_sig_all = attr->sq_sig_all,
		.pd = pd, .comp_mask = pd ? IBV_QP_INIT_ATTR_PD : 0 };
	int rc = cma_create_qp_ex(id, &a);

	if (!rc)
		attr->cap = a.cap;
	return rc;
}

CMA_EXPORT int rdma_create_qp(struct rdma_cm_id *cid, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr)
{
	if (!cid || !attr || !cid->verbs)
		return errno = EINVAL, -1;
	return cma_create_qp(cma_id(cid), pd, attr);
}

CMA_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *cid, struct ibv_qp_init_attr_ex *attr)
{
	if (!cid || !attr || !cid->verbs)
		return errno = EINVAL, -1;
	return cma_create_qp_ex(cma_id(cid), attr);
}

CMA_EXPORT void rdma_destroy_qp(struct rdma_cm_id *cid)
{
	if (!cid)
		return;
	if (cid->qp) {
		ibv_destroy_qp(cid->qp);
		cid->qp = NULL;
	}
	drop_own_cqs(cma_id(cid));
}

/* ---- connecting ---- */

static struct odpemu_cm_qp cm_qp(const struct cma_id *id, const struct rdma_conn_param *p)
{
	bool ud = id->id.ps == RDMA_PS_UDP;

	return (struct odpemu_cm_qp){
		.qpn = id->id.qp ? id->id.qp->qp_num : (p ? p->qp_num : 0), .psn = id->psn,
		.qkey = ud ? RDMA_UDP_QKEY : 0,
		.qp_type = ud ? ODPEMU_QPT_UD : ODPEMU_QPT_RC,
		.responder_resources = id->resp_res,
		.initiator_depth = id->init_depth, .retry_count = id->retry,
		.rnr_retry_count = id->rnr_retry, .srq = id->id.srq || (p && p->srq),
		.flow_control = p ? p->flow_control : 1,
		.mtu = (enum odpemu_mtu)cma_dev(id->dev)->mtu };
}

static void take_params(struct cma_id *id, const struct rdma_conn_param *p)
{
	if (!p)
		return;
	id->resp_res = cap_rd(p->responder_resources);
	id->init_depth = cap_rd(p->initiator_depth);
	id->retry = p->retry_count & 7;
	id->rnr_retry = p->rnr_retry_count & 7;
}

static struct odpemu_cm_addr cm_addr(const struct sockaddr *sa)
{
	struct odpemu_cm_addr a = { .port = cma_port_of(sa) };

	cma_gid_of_addr(sa, (union ibv_gid *)&a.gid);
	return a;
}

CMA_EXPORT int rdma_connect(struct rdma_cm_id *cid, struct rdma_conn_param *param)
{
	struct cma_id *id = cma_id(cid);
	struct odpemu_cm_channel *och;
	struct odpemu_cm_addr src, dst;
	struct odpemu_cm_qp qp;
	uint32_t conn;
	int rc;

	if (!cid || id->state != CMA_ROUTE_RESOLVED)
		return errno = EINVAL, -1;
	/* the REQ's (SIDR_REQ's) private data after rdma_cm's IP header */
	if (param && param->private_data_len > (cid->ps == RDMA_PS_UDP ? SIDR_REQ_PRIV : REQ_PRIV))
		return errno = EINVAL, -1;
	if (!id->psn)
		id->psn = random_psn();
	take_params(id, param);
	if (!(och = cma_channel_for(id->chan, id->dev)))
		return -1;
	src = cm_addr(&cid->route.addr.src_addr);
	dst = cm_addr(&cid->route.addr.dst_addr);
	qp = cm_qp(id, param);
	id->state = CMA_CONNECT;
	rc = odpemu_cm_connect(och, (enum odpemu_cm_ps)cid->ps, &src, &dst, &qp,
			       param ? param->private_data : NULL,
			       param ? param->private_data_len : 0, (uint64_t)(uintptr_t)id,
			       &conn);
	if (rc) {
		id->state = CMA_ROUTE_RESOLVED;
		return errno = rc, -1;
	}
	cma_set_handle(&id->conn, conn);	/* its events may be arriving already */
	return id->sync ? cma_sync_wait(id, cid->qp || cid->ps == RDMA_PS_UDP ?
					RDMA_CM_EVENT_ESTABLISHED :
					RDMA_CM_EVENT_CONNECT_RESPONSE) : 0;
}

/* UD: the SIDR_REP with our QPN and Q_Key; the QP is in RTS since rdma_create_qp, and the
 * passive side gets no ESTABLISHED (the kernel's cma_accept for UD). */
static int accept_ud(struct cma_id *id, struct rdma_conn_param *param)
{
	struct odpemu_cm_qp qp = cm_qp(id, param);
	int rc;

	if (param && param->private_data_len > SIDR_REP_PRIV)
		return errno = EINVAL, -1;
	rc = odpemu_cm_accept(odp_of(id), id->conn, cma_channel_for(id->chan, id->dev), &qp,
			      param ? param->private_data : NULL,
			      param ? param->private_data_len : 0, (uint64_t)(uintptr_t)id);
	if (rc)
		return errno = rc, -1;
	id->state = CMA_CONNECTED;
	return 0;
}

CMA_EXPORT int rdma_accept(struct rdma_cm_id *cid, struct rdma_conn_param *param)
{
	struct cma_id *id = cma_id(cid);
	struct odpemu_cm_qp qp;
	int rc;

	if (!cid || id->state != CMA_REQ_RCVD)
		return errno = EINVAL, -1;
	if (cid->ps == RDMA_PS_UDP)
		return accept_ud(id, param);
	if (param && param->private_data_len > 196)	/* the REP's private data */
		return errno = EINVAL, -1;
	if (!id->psn)
		id->psn = random_psn();
	take_params(id, param);
	id->retry = id->peer.retry_count;	/* accepting: the REQ's retry count (rdma_cm.h) */
	if (cid->qp && qp_connect(id))
		return -1;
	qp = cm_qp(id, param);
	rc = odpemu_cm_accept(odp_of(id), id->conn, cma_channel_for(id->chan, id->dev), &qp,
			      param ? param->private_data : NULL,
			      param ? param->private_data_len : 0, (uint64_t)(uintptr_t)id);
	if (rc)
		return errno = rc, -1;
	id->state = CMA_ACCEPT;
	return id->sync ? cma_sync_wait(id, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

CMA_EXPORT int rdma_reject(struct rdma_cm_id *cid, const void *private_data,
			   uint8_t private_data_len)
{
	struct cma_id *id = cma_id(cid);
	int rc;

	if (!cid || !id->conn)
		return errno = EINVAL, -1;
	rc = odpemu_cm_reject(odp_of(id), id->conn, private_data, private_data_len);
	return rc ? (errno = rc, -1) : 0;
}

CMA_EXPORT int rdma_establish(struct rdma_cm_id *cid)
{
	struct cma_id *id = cma_id(cid);
	int rc;

	if (!cid || !id->conn)
		return errno = EINVAL, -1;
	rc = odpemu_cm_establish(odp_of(id), id->conn, NULL, 0);
	if (!rc)
		id->state = CMA_CONNECTED;
	return rc ? (errno = rc, -1) : 0;
}

CMA_EXPORT int rdma_disconnect(struct rdma_cm_id *cid)
{
	struct cma_id *id = cma_id(cid);
	int rc;

	if (!cid || !id->conn)
		return errno = EINVAL, -1;
	qp_error(id);
	rc = odpemu_cm_disconnect(odp_of(id), id->conn, NULL, 0);
	return rc ? (errno = rc, -1) : 0;
}

/* ---- the daemon's events ---- */

static struct cma_event *event_for(struct cma_id *id, enum rdma_cm_event_type type,
				   const struct odpemu_cm_event *e, size_t priv_max)
{
	struct cma_event *ce = cma_event_new();
	struct rdma_conn_param *p;

	if (!ce)
		return NULL;
	ce->ev.id = &id->id;
	ce->ev.event = type;
	ce->ev.status = e->status;
	p = &ce->ev.param.conn;
	p->private_data_len = (uint8_t)(e->private_len < priv_max ? e->private_len : priv_max);
	memcpy(ce->priv, e->private_data, p->private_data_len);
	p->private_data = p->private_data_len ? ce->priv : NULL;
	p->responder_resources = e->peer.responder_resources;
	p->initiator_depth = e->peer.initiator_depth;
	p->flow_control = e->peer.flow_control;
	p->retry_count = e->peer.retry_count;
	p->rnr_retry_count = e->peer.rnr_retry_count;
	p->srq = e->peer.srq;
	p->qp_num = e->peer.qpn;
	return ce;	/* it carries the hold cma_find_* took on id */
}

/* UD (SIDR) events: rdma_ud_param, with the address handle to reach the peer's QP. */
static struct cma_event *event_ud(struct cma_id *id, enum rdma_cm_event_type type,
				  const struct odpemu_cm_event *e, size_t priv_max)
{
	struct cma_event *ce = cma_event_new();
	struct rdma_ud_param *p;

	if (!ce)
		return NULL;
	ce->ev.id = &id->id;
	ce->ev.event = type;
	ce->ev.status = e->status;
	p = &ce->ev.param.ud;
	p->private_data_len = (uint8_t)(e->private_len < priv_max ? e->private_len : priv_max);
	memcpy(ce->priv, e->private_data, p->private_data_len);
	p->private_data = p->private_data_len ? ce->priv : NULL;
	p->qp_num = e->peer.qpn;
	p->qkey = e->peer.qkey;
	p->ah_attr = (struct ibv_ah_attr){ .is_global = 1, .port_num = id->id.port_num,
		.grh = { .dgid = id->id.route.addr.addr.ibaddr.dgid, .sgid_index = 0,
			 .hop_limit = 64, .traffic_class = id->tos } };
	return ce;
}

static void fill_addr(struct sockaddr_storage *ss, const struct odpemu_cm_addr *a, int family)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, a->gid.raw + 12, 4);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, a->gid.raw, 16);
	}
	cma_set_port((struct sockaddr *)ss, a->port);
}

static int family_of(const union ibv_gid *g)
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g->raw, v4, sizeof(v4)) ? AF_INET6 : AF_INET;
}

/* A new ID for a REQ the listener took: on the listener's channel, with its context. */
static struct cma_event *connect_request(struct cma_channel *c, int dev,
					 const struct odpemu_cm_event *e)
{
	struct cma_id *l = cma_find_listener(dev, e->listener, e->user), *id;
	struct cma_event *ce;
	int fam = family_of((const union ibv_gid *)&e->src.gid);

	/* a sync listener's requests are sync IDs with channels of their own (librdmacm) */
	if (!l || !(id = cma_id_new(l->sync ? NULL : l->chan, l->sync, l->id.context, l->id.ps,
				    l->id.qp_type))) {
		odpemu_cm_reject(odpemu_compat_context(cma_dev(dev)->verbs), e->conn, NULL, 0);
		if (l)
			cma_id_release(l);
		return NULL;
	}
	fill_addr(&id->id.route.addr.src_storage, &e->dst, fam);
	fill_addr(&id->id.route.addr.dst_storage, &e->src, fam);
	cma_id_set_dev(id, dev);
	id->conn = e->conn;
	id->peer = e->peer;
	id->state = CMA_REQ_RCVD;
	memcpy(id->id.route.addr.addr.ibaddr.dgid.raw, e->src.gid.raw, 16);
	if (l->ep_attr) {	/* a passive rdma_create_ep: the QP comes with the request */
		struct ibv_qp_init_attr a = *l->ep_attr;

		cma_create_qp(id, l->ep_pd, &a);
	}
	ce = l->id.ps == RDMA_PS_UDP ?
	     event_ud(l, RDMA_CM_EVENT_CONNECT_REQUEST, e, SIDR_REQ_PRIV) :
	     event_for(l, RDMA_CM_EVENT_CONNECT_REQUEST, e, ODPEMU_CM_PRIVATE_MAX);
	if (!ce) {
		cma_id_release(l);
		return NULL;
	}
	ce->ev.id = &id->id;
	ce->ev.listen_id = &l->id;
	(void)c;
	return ce;
}

/* The REP: with a QP, RTR/RTS and the RTU now, ESTABLISHED for the client; without one,
 * CONNECT_RESPONSE, and rdma_establish sends the RTU. */
static struct cma_event *connect_response(struct cma_id *id, const struct odpemu_cm_event *e)
{
	id->peer = e->peer;
	if (!id->id.qp)
		return event_for(id, RDMA_CM_EVENT_CONNECT_RESPONSE, e, 196);
	if (qp_connect(id)) {
		odpemu_cm_reject(odp_of(id), id->conn, NULL, 0);
		return event_for(id, RDMA_CM_EVENT_CONNECT_ERROR,
				 &(struct odpemu_cm_event){ .status = -errno }, 0);
	}
	if (odpemu_cm_establish(odp_of(id), id->conn, NULL, 0))
		return event_for(id, RDMA_CM_EVENT_CONNECT_ERROR,
				 &(struct odpemu_cm_event){ .status = -errno }, 0);
	id->state = CMA_CONNECTED;
	return event_for(id, RDMA_CM_EVENT_ESTABLISHED, e, 196);
}

struct cma_event *cma_translate(struct cma_channel *c, int dev, const struct odpemu_cm_event *e)
{
	struct cma_id *id;
	struct cma_event *ce = NULL;

	if (e->type == ODPEMU_CM_EVENT_CONNECT_REQUEST)
		return connect_request(c, dev, e);
	if (!(id = cma_find_conn(dev, e->conn, e->user)))
		return NULL;	/* an ID destroyed since: nobody to tell */
	switch (e->type) {
	case ODPEMU_CM_EVENT_CONNECT_RESPONSE:
		ce = connect_response(id, e);
		break;
	case ODPEMU_CM_EVENT_ESTABLISHED:
		id->state = CMA_CONNECTED;
		ce = id->id.ps == RDMA_PS_UDP ?
		     event_ud(id, RDMA_CM_EVENT_ESTABLISHED, e, SIDR_REP_PRIV) :
		     event_for(id, RDMA_CM_EVENT_ESTABLISHED, e, 224);
		break;
	case ODPEMU_CM_EVENT_DISCONNECTED:
		/* The kernel's CM also moves the QP to ERR here; in user space this thread
		 * cannot: the application may be destroying that QP (rping calls
		 * ibv_destroy_qp on it) at this very moment. rdma_disconnect does it. */
		id->state = CMA_DISCONNECTED;
		ce = event_for(id, RDMA_CM_EVENT_DISCONNECTED, e, 0);
		break;
	default:	/* REJECTED (status: the IB reason), UNREACHABLE, TIMEWAIT_EXIT, ... */
		ce = id->id.ps == RDMA_PS_UDP ?	/* UNREACHABLE: the SIDR status */
		     event_ud(id, (enum rdma_cm_event_type)e->type, e, SIDR_REP_PRIV) :
		     event_for(id, (enum rdma_cm_event_type)e->type, e, 148);
		break;
	}
	if (!ce)
		cma_id_release(id);
	else if (id->chan != c) {	/* migrated: the event is the new channel's */
		cma_queue(id->chan, ce);
		return NULL;
	}
	return ce;
}

/* What librdmacm's rdma_init_qp_attr gives (UCX asks for RTR on an ID without a QP to
 * learn the peer's GID): the attributes of the state asked for in qp_attr->qp_state. */
CMA_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *cid, struct ibv_qp_attr *qp_attr,
				 int *qp_attr_mask)
{
	struct cma_id *id = cma_id(cid);
	struct cma_dev *d;

	if (!cid || !qp_attr || !qp_attr_mask || !(d = cma_dev(id->dev)))
		return errno = EINVAL, -1;
	switch (qp_attr->qp_state) {
	case IBV_QPS_INIT:
		*qp_attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS;
		return 0;
	case IBV_QPS_RTR:
		*qp_attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = d->mtu,
			.dest_qp_num = id->peer.qpn, .rq_psn = id->peer.psn,
			.max_dest_rd_atomic = cap_rd(id->resp_res), .min_rnr_timer = 12,
			.ah_attr = { .is_global = 1, .port_num = 1, .grh = {
				.dgid = cid->route.addr.addr.ibaddr.dgid, .hop_limit = 64 } } };
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		/* A program's own QP goes to RTS before rdma_accept (rdma-core's test_rdmacm
		 * external QP): the PSN it starts at is the one accept will then offer in the
		 * REP, as the kernel's CM picks it once per ID. */
		if (!id->psn)
			id->psn = random_psn();
		*qp_attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = id->psn,
			.timeout = id->ack_timeout, .retry_cnt = id->retry,
			.rnr_retry = id->rnr_retry, .max_rd_atomic = cap_rd(id->init_depth) };
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default:
		return errno = EINVAL, -1;
	}
}
