/* SPDX-License-Identifier: MIT */
/*
 * cm — the daemon's InfiniBand connection manager (IBA 12): the agent on QP1 that
 * rdma_cm's connections are negotiated with, as the kernel's ib_cm is on a RoCE NIC.
 * nic/ hands it every well-formed MAD that arrives on QP1 (ports.gsi_rx); it answers with
 * nic_gsi_send.
 *
 * BUILT SO FAR: the answers a CM gives to messages it holds no state for, as Linux's
 * ib_cm gives them (drivers/infiniband/core/cm.c), so that a peer never waits out its
 * timeouts against this daemon:
 *  - REQ for a service nobody listens on: REJ, reason INVALID_SERVICE_ID (IBA 12.6.7),
 *    "message rejected" REQ — the initiator's rdma_connect ends REJECTED in one round trip;
 *  - REP for a communication ID we never gave out: REJ, reason INVALID_COMM_ID, "message
 *    rejected" REP;
 *  - DREQ for a connection we do not have: DREP (IBA 12.9.7: a DREQ is always answered,
 *    so the peer leaves DREQ_SENT at once);
 *  - SIDR_REQ for a service nobody serves: SIDR_REP, status UNSUPPORTED (IBA 12.11.2);
 *  - RTU, MRA, REJ, DREP and SIDR_REP that match nothing: dropped, counted (unmatched).
 * Every answer carries the Transaction ID of the message it answers and swaps the
 * communication IDs (ours local, theirs remote). Listeners, connections and their
 * timers come with the CM's control requests (docs/rdmacm.md).
 *
 * Loop thread only.
 */
#ifndef ODPEMU_EMU_CM_H
#define ODPEMU_EMU_CM_H

#include <stdint.h>

#include "cm_mad.h"
#include "nic.h"

/* SIDR_REP status values (IBA 12.11.2 Table 126; Linux enum ib_cm_sidr_status). */
#define EMU_CM_SIDR_SUCCESS	0u
#define EMU_CM_SIDR_UNSUPPORTED	1u

/* Per attribute, in CM_ATTRS order: received, sent. */
#define EMU_CM_NATTR 12u

struct emu_cm {
	struct nic *nic;
	uint32_t next_comm_id;		/* local communication IDs we hand out */
	struct {
		uint64_t rx[EMU_CM_NATTR], tx[EMU_CM_NATTR];
		uint64_t rx_malformed;	/* not a CM MAD we can read (cm_mad_parse failed) */
		uint64_t rx_bad_src_qp;	/* a DETH source QP other than 1 */
		uint64_t unmatched;	/* answers to nothing we sent: dropped */
		uint64_t tx_errors;	/* nic_gsi_send or cm_mad_build refused */
	} ctr;
};

/* Ready to answer on nic; seed picks the first local communication ID (a restarted
 * daemon must not reuse its predecessor's IDs while peers remember them). */
void emu_cm_init(struct emu_cm *cm, struct nic *nic, uint32_t seed);
/* A MAD from QP1 (the nic_ports.gsi_rx port). */
void emu_cm_rx(struct emu_cm *cm, const struct nic_gsi_dgram *d);

/* Counter names: "cm_rx_req", "cm_tx_rej", ... for attribute slot i (0..EMU_CM_NATTR-1);
 * NULL past the end. */
const char *emu_cm_attr_name(unsigned i);

#endif
