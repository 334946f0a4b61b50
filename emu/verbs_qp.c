/* SPDX-License-Identifier: MIT */
/* verbs_qp — QP and SRQ control ops: create (with their shared-memory rings), modify,
 * query, destroy. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "daemon.h"
#include "ipc_ring.h"
#include "nic.h"
#include "rings.h"
#include "limits.h"
#include "session.h"
#include "verbs.h"

/* ---- SRQ ---- */

int emu_op_create_srq(struct emu_req *r)
{
	const struct ipc_create_srq_req *q = r->body;
	const struct nic_device_attr *a = nic_attr(r->s->d->nic);
	struct ipc_create_srq_rep rep = { 0 };
	struct emu_obj *pd, *o;
	uint32_t size, slot;
	int rc, fd;

	EMU_WANT_BODY(r, struct ipc_create_srq_req);
	if (!(pd = emu_obj_get(r->s, q->pd, EMU_OBJ_PD)))
		return emu_reply_err(r, -ENOENT, "create_srq: no PD %u", q->pd);
	if (!q->max_wr || q->max_wr > a->max_srq_wr || !q->max_sge || q->max_sge > a->max_srq_sge)
		return emu_reply_err(r, -EINVAL, "create_srq: max_wr 1..%u, max_sge 1..%u",
				     a->max_srq_wr, a->max_srq_sge);
	if (!(o = emu_obj_new(r->s, EMU_OBJ_SRQ)))
		return emu_reply_no_obj(r, "create_srq");
	size = ipc_pow2(q->max_wr);
	slot = ipc_rq_slot(q->max_sge);
	if ((rc = nic_srq_create(pd->u.pd, q->max_wr, q->max_sge, &o->u.srq.srq))) {
		emu_obj_free(o);
		return emu_reply_nic(r, "create_srq", rc, EMU_LIMIT_SRQ, NULL);
	}
	if ((rc = emu_ring_map(o, ipc_ring_bytes(size, slot), &fd))) {
		nic_srq_destroy(o->u.srq.srq);
		emu_obj_free(o);
		return emu_reply_host_err(r, "create_srq", "its ring", rc);
	}
	emu_ring_setup(&o->u.srq.ring, o->map, 0, size, slot);
	nic_srq_set_owner(o->u.srq.srq, o);
	o->u.srq.max_sge = q->max_sge;
	o->u.srq.pd = pd;
	pd->refs++;
	if (q->srq_limit)
		nic_srq_arm(o->u.srq.srq, q->srq_limit);
	rep = (struct ipc_create_srq_rep){ .handle = o->handle, .max_wr = q->max_wr,
		.max_sge = q->max_sge, .map_len = (uint32_t)o->map_len };
	rc = emu_ctl_reply(r->s, r->hdr, 0, &rep, sizeof(rep), &fd, 1);
	close(fd);
	return rc;
}

int emu_op_modify_srq(struct emu_req *r)
{
	const struct ipc_modify_srq_req *q = r->body;
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_SRQ);
	int rc;

	EMU_WANT_BODY(r, struct ipc_modify_srq_req);
	if (!o)
		return emu_reply_err(r, -ENOENT, "modify_srq: no SRQ %u", r->hdr->handle);
	if ((rc = nic_srq_arm(o->u.srq.srq, q->srq_limit)))
		return emu_reply_err(r, rc, "modify_srq: limit %u: %s", q->srq_limit, strerror(-rc));
	return emu_ctl_reply(r->s, r->hdr, 0, NULL, 0, NULL, 0);
}

static int destroy(struct emu_req *r, enum emu_obj_type type, const char *what)
{
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, type);
	int rc;

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "%s has no body", what);
	if (!o)
		return emu_reply_err(r, -ENOENT, "%s: no such handle %u", what, r->hdr->handle);
	if ((rc = emu_obj_destroy(o)))
		return emu_reply_err(r, rc, "%s: %s", what, rc == -EBUSY ?
				     "still in use (destroy its QPs first)" : strerror(-rc));
	return emu_ctl_reply(r->s, r->hdr, 0, NULL, 0, NULL, 0);
}

int emu_op_destroy_srq(struct emu_req *r) { return destroy(r, EMU_OBJ_SRQ, "destroy_srq"); }

/* A client's destroy of a QP still attached to a multicast group is refused (-EBUSY, as
 * uverbs_free_qp); the session's end destroys it anyway, nic/ detaching it. */
int emu_op_destroy_qp(struct emu_req *r)
{
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_QP);

	if (o && !r->len && nic_qp_mcast_groups(o->u.qp.qp))
		return emu_reply_err(r, -EBUSY, "destroy_qp: QP %u is attached to %u multicast "
				     "group(s): detach it first (ibv_detach_mcast, "
				     "rdma_leave_multicast)", nic_qp_num(o->u.qp.qp),
				     nic_qp_mcast_groups(o->u.qp.qp));
	return destroy(r, EMU_OBJ_QP, "destroy_qp");
}

/* ---- UD multicast (nic/mcast.c, io/mcast.h) ---- */

static int mcast_op(struct emu_req *r, bool attach)
{
	const struct ipc_mcast_req *q = r->body;
	const char *what = attach ? "attach_mcast" : "detach_mcast";
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_QP);
	struct emu_daemon *d = r->s->d;
	struct nic_gid g;
	int rc;

	EMU_WANT_BODY(r, struct ipc_mcast_req);
	if (!o)
		return emu_reply_err(r, -ENOENT, "%s: no QP %u", what, r->hdr->handle);
	memcpy(g.raw, q->gid, sizeof(g.raw));
	d->mcast_err = 0;
	rc = attach ? nic_mcast_attach(o->u.qp.qp, &g) : nic_mcast_detach(o->u.qp.qp, &g);
	if (!rc && attach && d->mcast_err) {	/* the group's socket could not be opened */
		rc = d->mcast_err;
		nic_mcast_detach(o->u.qp.qp, &g);
		return emu_reply_err(r, rc, "%s: cannot listen on the group: %s (see the "
				     "daemon's log)", what, strerror(-rc));
	}
	if (rc)
		return emu_reply_err(r, rc, "%s: %s", what,
				     rc == -EINVAL && attach ? "the QP must be UD and the GID "
				     "multicast (ff00::/8 or IPv4 224.0.0.0/4)" :
				     rc == -EINVAL ? "the QP is not attached to that group" :
				     rc == -ENOMEM ? "a multicast limit of ibv_query_device is "
				     "reached (max_mcast_grp, max_mcast_qp_attach)" : strerror(-rc));
	return emu_ctl_reply(r->s, r->hdr, 0, NULL, 0, NULL, 0);
}

int emu_op_attach_mcast(struct emu_req *r) { return mcast_op(r, true); }
int emu_op_detach_mcast(struct emu_req *r) { return mcast_op(r, false); }

/* ---- QP ---- */

static enum nic_fault_policy policy_of(struct emu_daemon *d, uint32_t p)
{
	if (p == ODPEMU_FAULT_POLICY_RNR)
		return NIC_FAULT_RNR;
	if (p == ODPEMU_FAULT_POLICY_STALL)
		return NIC_FAULT_STALL;
	return d->default_policy;
}

/* The handles a QP names, checked. */
static int qp_refs(struct emu_req *r, const struct ipc_create_qp_req *q, struct emu_obj **pd,
		   struct emu_obj **scq, struct emu_obj **rcq, struct emu_obj **srq)
{
	*pd = emu_obj_get(r->s, q->pd, EMU_OBJ_PD);
	*scq = emu_obj_get(r->s, q->send_cq, EMU_OBJ_CQ);
	*rcq = emu_obj_get(r->s, q->recv_cq, EMU_OBJ_CQ);
	*srq = q->srq ? emu_obj_get(r->s, q->srq, EMU_OBJ_SRQ) : NULL;
	if (!*pd || !*scq || !*rcq || (q->srq && !*srq))
		return emu_reply_err(r, -ENOENT, "create_qp: unknown PD, CQ or SRQ handle");
	if (q->qp_type != ODPEMU_QPT_RC && q->qp_type != ODPEMU_QPT_UC &&
	    q->qp_type != ODPEMU_QPT_UD)
		return emu_reply_err(r, -EOPNOTSUPP, "create_qp: type %u: RC, UC or UD only",
				     q->qp_type);
	if (q->fault_policy > ODPEMU_FAULT_POLICY_RNR)
		return emu_reply_err(r, -EINVAL, "create_qp: fault policy %u", q->fault_policy);
	return 0;
}

static int qp_rings(struct emu_obj *o, const struct ipc_create_qp_req *q, int *fd)
{
	struct ipc_qp_layout l = ipc_qp_layout(q->max_send_wr, q->max_send_sge,
		q->max_inline_data, q->max_recv_wr, q->max_recv_sge, !q->srq);
	int rc;

	if (l.sq_slot > IPC_MAX_SLOT || l.rq_slot > IPC_MAX_SLOT)
		return -EINVAL;
	if ((rc = emu_ring_map(o, l.map_len, fd)))
		return rc;
	emu_ring_setup(&o->u.qp.sq, o->map, 0, l.sq_size, l.sq_slot);
	if (!q->srq) {
		emu_ring_setup(&o->u.qp.rq, o->map, l.rq_offset, l.rq_size, l.rq_slot);
		emu_ring_release_on_completion(&o->u.qp.rq);
	}
	return 0;
}

int emu_op_create_qp(struct emu_req *r)
{
	struct ipc_create_qp_req granted, *q = &granted;
	struct emu_obj *pd, *scq, *rcq, *srq, *o;
	struct ipc_create_qp_rep rep = { 0 };
	struct nic_qp_init init;
	int rc, fd;

	EMU_WANT_BODY(r, struct ipc_create_qp_req);
	granted = *(const struct ipc_create_qp_req *)r->body;
	if ((rc = qp_refs(r, q, &pd, &scq, &rcq, &srq)))
		return rc;
	init = (struct nic_qp_init){ .type = q->qp_type, .send_cq = scq->u.cq.cq,
		.recv_cq = rcq->u.cq.cq, .srq = srq ? srq->u.srq.srq : NULL,
		.max_send_wr = q->max_send_wr, .max_recv_wr = q->max_recv_wr,
		.max_send_sge = q->max_send_sge, .max_recv_sge = q->max_recv_sge,
		.max_inline_data = q->max_inline_data, .sq_sig_all = q->sq_sig_all != 0,
		.fault_policy = policy_of(r->s->d, q->fault_policy) };
	/* The caps the device grants (an mlx5 personality rounds the inline room up, as
	 * the mlx5 provider does): the rings and the reply carry them. */
	if ((rc = nic_qp_grant(r->s->d->nic, &init)))
		return emu_reply_nic(r, "create_qp", rc, EMU_LIMIT_QP,
				     nic_qp_init_why(r->s->d->nic, &init));
	granted.max_inline_data = init.max_inline_data;
	if (!(o = emu_obj_new(r->s, EMU_OBJ_QP)))
		return emu_reply_no_obj(r, "create_qp");
	if ((rc = nic_qp_create(pd->u.pd, &init, &o->u.qp.qp))) {
		emu_obj_free(o);
		return emu_reply_nic(r, "create_qp", rc, EMU_LIMIT_QP,
				     nic_qp_init_why(r->s->d->nic, &init));
	}
	if ((rc = qp_rings(o, q, &fd))) {
		nic_qp_destroy(o->u.qp.qp);
		emu_obj_free(o);
		return rc == -EINVAL ? emu_reply_err(r, rc, "create_qp: a slot of the rings would "
						     "exceed %u bytes", IPC_MAX_SLOT) :
			emu_reply_host_err(r, "create_qp", "its rings", rc);
	}
	nic_qp_set_owner(o->u.qp.qp, o);
	o->u.qp.pd = pd;
	o->u.qp.send_cq = scq;
	o->u.qp.recv_cq = rcq;
	o->u.qp.srq = srq;
	pd->refs++;
	scq->refs++;
	rcq->refs++;
	if (srq)
		srq->refs++;
	o->u.qp.max_send_sge = q->max_send_sge;
	o->u.qp.max_recv_sge = q->max_recv_sge;
	o->u.qp.max_inline = q->max_inline_data;
	o->u.qp.type = q->qp_type;
	rep = (struct ipc_create_qp_rep){ .handle = o->handle, .qp_num = nic_qp_num(o->u.qp.qp),
		.max_send_wr = q->max_send_wr, .max_recv_wr = q->max_recv_wr,
		.max_send_sge = q->max_send_sge, .max_recv_sge = q->max_recv_sge,
		.max_inline_data = q->max_inline_data, .map_len = (uint32_t)o->map_len,
		.device_cap_flags = nic_attr(r->s->d->nic)->device_cap_flags,
		.rq_offset = q->srq ? 0 : ipc_qp_layout(q->max_send_wr, q->max_send_sge,
			q->max_inline_data, q->max_recv_wr, q->max_recv_sge, 1).rq_offset };
	rc = emu_ctl_reply(r->s, r->hdr, 0, &rep, sizeof(rep), &fd, 1);
	close(fd);
	return rc;
}

static void attr_from_ipc(struct nic_qp_attr *n, const struct ipc_qp_attr *a)
{
	memset(n, 0, sizeof(*n));
	n->qp_state = a->qp_state;
	n->cur_qp_state = a->cur_qp_state;
	n->path_mtu = a->path_mtu;
	n->qkey = a->qkey;
	n->rq_psn = a->rq_psn;
	n->sq_psn = a->sq_psn;
	n->dest_qp_num = a->dest_qp_num;
	n->qp_access_flags = a->qp_access_flags;
	memcpy(n->ah_attr.dgid, a->dgid, 16);
	n->ah_attr.flow_label = a->flow_label;
	n->ah_attr.sgid_index = a->sgid_index;
	n->ah_attr.hop_limit = a->hop_limit;
	n->ah_attr.traffic_class = a->traffic_class;
	n->ah_attr.is_global = a->is_global;
	n->ah_attr.port_num = a->port_num;
	n->pkey_index = a->pkey_index;
	n->en_sqd_async_notify = a->en_sqd_async_notify;
	n->max_rd_atomic = a->max_rd_atomic;
	n->max_dest_rd_atomic = a->max_dest_rd_atomic;
	n->min_rnr_timer = a->min_rnr_timer;
	n->port_num = a->port_num;
	n->timeout = a->timeout;
	n->retry_cnt = a->retry_cnt;
	n->rnr_retry = a->rnr_retry;
}

static void attr_to_ipc(struct ipc_qp_attr *a, const struct nic_qp_attr *n)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = n->qp_state;
	a->cur_qp_state = n->cur_qp_state;
	a->path_mtu = n->path_mtu;
	a->qkey = n->qkey;
	a->rq_psn = n->rq_psn;
	a->sq_psn = n->sq_psn;
	a->dest_qp_num = n->dest_qp_num;
	a->qp_access_flags = n->qp_access_flags;
	memcpy(a->dgid, n->ah_attr.dgid, 16);
	a->flow_label = n->ah_attr.flow_label;
	a->sgid_index = n->ah_attr.sgid_index;
	a->hop_limit = n->ah_attr.hop_limit;
	a->traffic_class = n->ah_attr.traffic_class;
	a->is_global = n->ah_attr.is_global;
	a->port_num = n->port_num;
	a->pkey_index = n->pkey_index;
	a->en_sqd_async_notify = n->en_sqd_async_notify;
	a->max_rd_atomic = n->max_rd_atomic;
	a->max_dest_rd_atomic = n->max_dest_rd_atomic;
	a->min_rnr_timer = n->min_rnr_timer;
	a->timeout = n->timeout;
	a->retry_cnt = n->retry_cnt;
	a->rnr_retry = n->rnr_retry;
}

static int reply_attr(struct emu_req *r, struct emu_obj *o)
{
	struct nic_qp_attr n;
	struct ipc_qp_attr a;
	int rc = nic_qp_query(o->u.qp.qp, &n);

	if (rc)
		return emu_reply_err(r, rc, "query_qp: %s", strerror(-rc));
	attr_to_ipc(&a, &n);
	return emu_ctl_reply(r->s, r->hdr, 0, &a, sizeof(a), NULL, 0);
}

int emu_op_modify_qp(struct emu_req *r)
{
	const struct ipc_modify_qp_req *q = r->body;
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_QP);
	struct nic_qp_attr n;
	const char *why = NULL;
	int rc;

	EMU_WANT_BODY(r, struct ipc_modify_qp_req);
	if (!o)
		return emu_reply_err(r, -ENOENT, "modify_qp: no QP %u", r->hdr->handle);
	attr_from_ipc(&n, &q->attr);
	if ((rc = nic_qp_modify(o->u.qp.qp, &n, q->mask, emu_now_ns(), &why)))
		return emu_reply_err(r, rc, "modify_qp: %s", why ? why : strerror(-rc));
	if ((q->mask & ODPEMU_QP_STATE) && n.qp_state == ODPEMU_QPS_RESET && !o->u.qp.srq)
		emu_ring_reset(&o->u.qp.rq);	/* nic/ dropped the receives it held */
	return reply_attr(r, o);
}

int emu_op_query_qp(struct emu_req *r)
{
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_QP);

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "QUERY_QP has no body");
	if (!o)
		return emu_reply_err(r, -ENOENT, "query_qp: no QP %u", r->hdr->handle);
	return reply_attr(r, o);
}

int emu_qp_srq_destroy(struct emu_obj *o)
{
	int rc;

	if (o->type == EMU_OBJ_SRQ) {
		if (!(rc = nic_srq_destroy(o->u.srq.srq)))
			o->u.srq.pd->refs--;
		return rc;
	}
	if ((rc = nic_qp_destroy(o->u.qp.qp)))
		return rc;
	o->u.qp.pd->refs--;
	o->u.qp.send_cq->refs--;
	o->u.qp.recv_cq->refs--;
	if (o->u.qp.srq)
		o->u.qp.srq->refs--;
	return 0;
}
