/* SPDX-License-Identifier: MIT */
/* cm — the wire side of the connection manager (see cm.h): MADs in, stateless answers,
 * MADs out. */
#include "cm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

const char *emu_cm_state_str(enum emu_cm_state s)
{
	static const char *const names[] = {
#define EMU_CM_STATE_NAME_(n) #n,
		EMU_CM_STATES(EMU_CM_STATE_NAME_)
#undef EMU_CM_STATE_NAME_
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

void emu_cm_init(struct emu_cm *cm, struct nic *nic, const struct nic_gid *gid, uint32_t seed)
{
	*cm = (struct emu_cm){ .nic = nic, .gid = *gid, .next_comm_id = seed ? seed : 1 };
}

void emu_cm_free(struct emu_cm *cm)
{
	while (cm->conns) {
		struct emu_cm_conn *c = cm->conns;

		cm->conns = c->next;
		free(c);
	}
	while (cm->listeners) {
		struct emu_cm_listener *l = cm->listeners;

		cm->listeners = l->next;
		if (l->claimed)
			close(l->claim_fd);
		free(l);
	}
}

uint32_t emu_cm_new_comm_id(struct emu_cm *cm)
{
	uint32_t id = cm->next_comm_id++;

	if (!cm->next_comm_id)	/* 0 is "none" in REJ/MRA: skip it */
		cm->next_comm_id = 1;
	return id;
}

int emu_cm_send(struct emu_cm *cm, const struct nic_gid *dst, const struct cm_msg *m,
		uint8_t keep[CM_MAD_LEN])
{
	uint8_t mad[CM_MAD_LEN];
	int rc = cm_mad_build(m, mad);

	if (!rc)
		rc = nic_gsi_send(cm->nic, dst, mad);
	if (rc) {
		cm->ctr.tx_errors++;
		return rc;
	}
	cm->ctr.tx[slot_of((uint16_t)m->attr)]++;
	if (keep)
		memcpy(keep, mad, CM_MAD_LEN);
	return 0;
}

void emu_cm_resend(struct emu_cm *cm, const struct nic_gid *dst, const uint8_t mad[CM_MAD_LEN])
{
	if (nic_gsi_send(cm->nic, dst, mad))
		cm->ctr.tx_errors++;
	else
		cm->ctr.retransmits++;
}

/* A Send with the Transaction ID of its exchange (an answer keeps the request's). */
struct cm_msg emu_cm_msg(enum cm_attr attr, uint64_t tid)
{
	struct cm_msg m = { .attr = attr };

	m.hdr = (struct cm_mad_hdr){ .method = CM_METHOD_SEND, .tid = tid };
	return m;
}

/* IBA 12.6.7: REJ swaps the IDs of the message it rejects (ours local, theirs remote). */
void emu_cm_reject(struct emu_cm *cm, const struct nic_gid *to, uint64_t tid, uint32_t ours,
		   uint32_t theirs, enum cm_msg_response what, uint16_t reason,
		   const struct ipc_cm_private *priv)
{
	struct cm_msg m = emu_cm_msg(CM_ATTR_REJ, tid);

	m.u.rej.local_comm_id = ours;
	m.u.rej.remote_comm_id = theirs;
	m.u.rej.message_rejected = (uint8_t)what;
	m.u.rej.reason = reason;
	if (priv && priv->len)
		memcpy(m.u.rej.private_data, priv->data,
		       priv->len < CM_REJ_PRIVATE_LEN ? priv->len : CM_REJ_PRIVATE_LEN);
	emu_cm_send(cm, to, &m, NULL);
}

/* ---- answers to what matches no exchange (Linux ib_cm's) ---- */

/* A REQ nobody here listens for, on a port another device of this network namespace
 * holds: a client that connected to "any address" (0.0.0.0 or ::, which resolves to its
 * own device) meant a listener on that other device. libfabric's verbs provider names its
 * endpoints so on hosts whose interface is loopback (it skips IFF_LOOPBACK interfaces in
 * vrb_getifaddrs): said in the log, at the 1st, 10th, 100th ... time, and counted. */
static void req_port_elsewhere(struct emu_cm *cm, const struct cm_msg *in)
{
	uint64_t sid = in->u.req.service_id, n;
	enum cm_port_space ps;
	uint16_t port;

	if (cm_service_id_split(sid, &ps, &port) || emu_cm_claim_free(cm, sid))
		return;
	n = ++cm->ctr.req_port_elsewhere;
	for (uint64_t p = 1; p <= n; p *= 10)
		if (p == n)
			emu_log(EMU_LOG_WARN, "cm: REQ for port %u, which another device of this "
				"network namespace holds, refused (%llu so far): its client connected "
				"to 'any address', which reaches its own device (libfabric's verbs "
				"provider does on loopback hosts: run them in network namespaces)",
				(unsigned)port, (unsigned long long)n);
}

static void stateless_req(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *in)
{
	req_port_elsewhere(cm, in);
	emu_cm_reject(cm, from, in->hdr.tid, emu_cm_new_comm_id(cm), in->u.req.local_comm_id,
		      CM_MSG_RESPONSE_REQ, CM_REJ_INVALID_SERVICE_ID, NULL);
}

static void stateless_rep(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *in)
{
	emu_cm_reject(cm, from, in->hdr.tid, in->u.rep.remote_comm_id, in->u.rep.local_comm_id,
		      CM_MSG_RESPONSE_REP, CM_REJ_INVALID_COMM_ID, NULL);
}

/* IBA 12.9.7: a DREQ for a connection not (or no longer) here still gets its DREP. */
static void stateless_dreq(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *in)
{
	struct cm_msg m = emu_cm_msg(CM_ATTR_DREP, in->hdr.tid);

	m.u.drep.local_comm_id = in->u.dreq.remote_comm_id;
	m.u.drep.remote_comm_id = in->u.dreq.local_comm_id;
	emu_cm_send(cm, from, &m, NULL);
}

static void stateless_sidr_req(struct emu_cm *cm, const struct nic_gid *from,
			       const struct cm_msg *in)
{
	struct cm_msg m = emu_cm_msg(CM_ATTR_SIDR_REP, in->hdr.tid);

	m.u.sidr_rep.request_id = in->u.sidr_req.request_id;
	m.u.sidr_rep.service_id = in->u.sidr_req.service_id;
	m.u.sidr_rep.status = EMU_CM_SIDR_UNSUPPORTED;
	emu_cm_send(cm, from, &m, NULL);
}

static void stateless(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *in)
{
	switch (in->attr) {
	case CM_ATTR_REQ: return stateless_req(cm, from, in);
	case CM_ATTR_REP: return stateless_rep(cm, from, in);
	case CM_ATTR_DREQ: return stateless_dreq(cm, from, in);
	case CM_ATTR_SIDR_REQ: return stateless_sidr_req(cm, from, in);
	default:
		cm->ctr.unmatched++;	/* RTU, MRA, REJ, DREP, SIDR_REP of no exchange here */
		return;
	}
}

void emu_cm_rx(struct emu_cm *cm, const struct nic_gsi_dgram *d, uint64_t now)
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
	if (!emu_cm_conn_rx(cm, &d->src, &in, now))
		stateless(cm, &d->src, &in);
}
