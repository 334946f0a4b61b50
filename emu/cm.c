/* SPDX-License-Identifier: MIT */
/* cm — the daemon's connection manager (see cm.h). */
#include "cm.h"

#include <stdbool.h>
#include <string.h>

#include "log.h"

/* Attribute slots of the counters, from the codec's one table. */
static const uint16_t attr_ids[EMU_CM_NATTR] = {
#define X(name, id) id,
	CM_ATTRS(X)
#undef X
};
static const char *const attr_names[EMU_CM_NATTR] = {
#define X(name, id) #name,
	CM_ATTRS(X)
#undef X
};

_Static_assert(sizeof(attr_ids) / sizeof(attr_ids[0]) == EMU_CM_NATTR, "one slot each");

static unsigned slot_of(uint16_t attr)
{
	for (unsigned i = 0; i < EMU_CM_NATTR; i++)
		if (attr_ids[i] == attr)
			return i;
	return 0;	/* parse only returns the class's attributes */
}

const char *emu_cm_attr_name(unsigned i)
{
	return i < EMU_CM_NATTR ? attr_names[i] : NULL;
}

void emu_cm_init(struct emu_cm *cm, struct nic *nic, uint32_t seed)
{
	*cm = (struct emu_cm){ .nic = nic, .next_comm_id = seed ? seed : 1 };
}

static uint32_t new_comm_id(struct emu_cm *cm)
{
	uint32_t id = cm->next_comm_id++;

	if (!cm->next_comm_id)	/* 0 is "none" in REJ/MRA: skip it */
		cm->next_comm_id = 1;
	return id;
}

/* Answer to (or start an exchange with) the CM at dst, QP1. */
static void send_msg(struct emu_cm *cm, const struct nic_gid *dst, const struct cm_msg *m)
{
	uint8_t mad[CM_MAD_LEN];

	if (cm_mad_build(m, mad) || nic_gsi_send(cm->nic, dst, mad)) {
		cm->ctr.tx_errors++;
		return;
	}
	cm->ctr.tx[slot_of((uint16_t)m->attr)]++;
}

/* An answer's header: a Send with the Transaction ID of the message it answers. */
static struct cm_msg answer_to(const struct cm_msg *in, enum cm_attr attr)
{
	struct cm_msg out = { .attr = attr };

	out.hdr = (struct cm_mad_hdr){ .method = CM_METHOD_SEND, .tid = in->hdr.tid };
	return out;
}

/* IBA 12.6.7: REJ swaps the IDs of the message it rejects (ours local, theirs remote). */
static void reject(struct emu_cm *cm, const struct nic_gid *to, const struct cm_msg *in,
		   uint32_t ours, uint32_t theirs, enum cm_msg_response what, uint16_t reason)
{
	struct cm_msg m = answer_to(in, CM_ATTR_REJ);

	m.u.rej.local_comm_id = ours;
	m.u.rej.remote_comm_id = theirs;
	m.u.rej.message_rejected = (uint8_t)what;
	m.u.rej.reason = reason;
	send_msg(cm, to, &m);
}

/* No listener yet for any service (listeners come with the CM's control requests): the
 * REQ is refused as Linux refuses one for a service ID nobody listens on. */
static void on_req(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *in)
{
	reject(cm, from, in, new_comm_id(cm), in->u.req.local_comm_id, CM_MSG_RESPONSE_REQ,
	       CM_REJ_INVALID_SERVICE_ID);
}

/* A REP names our communication ID as its remote one: we hold none yet. */
static void on_rep(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *in)
{
	reject(cm, from, in, in->u.rep.remote_comm_id, in->u.rep.local_comm_id,
	       CM_MSG_RESPONSE_REP, CM_REJ_INVALID_COMM_ID);
}

/* IBA 12.9.7: a DREQ for a connection not (or no longer) here still gets its DREP. */
static void on_dreq(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *in)
{
	struct cm_msg m = answer_to(in, CM_ATTR_DREP);

	m.u.drep.local_comm_id = in->u.dreq.remote_comm_id;
	m.u.drep.remote_comm_id = in->u.dreq.local_comm_id;
	send_msg(cm, from, &m);
}

static void on_sidr_req(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *in)
{
	struct cm_msg m = answer_to(in, CM_ATTR_SIDR_REP);

	m.u.sidr_rep.request_id = in->u.sidr_req.request_id;
	m.u.sidr_rep.service_id = in->u.sidr_req.service_id;
	m.u.sidr_rep.status = EMU_CM_SIDR_UNSUPPORTED;
	send_msg(cm, from, &m);
}

void emu_cm_rx(struct emu_cm *cm, const struct nic_gsi_dgram *d)
{
	struct cm_msg in;

	if (d->src_qp != CM_GSI_QPN) {
		cm->ctr.rx_bad_src_qp++;
		return;
	}
	if (cm_mad_parse(d->mad, CM_MAD_LEN, &in)) {
		cm->ctr.rx_malformed++;
		return;
	}
	cm->ctr.rx[slot_of((uint16_t)in.attr)]++;
	switch (in.attr) {
	case CM_ATTR_REQ: return on_req(cm, &d->src, &in);
	case CM_ATTR_REP: return on_rep(cm, &d->src, &in);
	case CM_ATTR_DREQ: return on_dreq(cm, &d->src, &in);
	case CM_ATTR_SIDR_REQ: return on_sidr_req(cm, &d->src, &in);
	default:
		cm->ctr.unmatched++;	/* RTU, MRA, REJ, DREP, SIDR_REP of no exchange here */
		return;
	}
}
