/* SPDX-License-Identifier: MIT */
/*
 * cm — the daemon's InfiniBand connection manager (IBA 12): the agent on QP1 that
 * rdma_cm's connections are negotiated with, as the kernel's ib_cm is on a RoCE NIC.
 * nic/ hands it every well-formed MAD that arrives on QP1 (ports.gsi_rx); it answers with
 * nic_gsi_send. Its clients are the sessions, through the CM_* control requests (ipc.h):
 * cm_ctl.c serves them, cm_conn.c runs the connections, cm.c reads and writes the wire.
 *
 * OBJECTS. Three session object types: a channel (the SEQPACKET socket CM events go to), a
 * listener (a service: port space + port, on one address or any), a connection (one
 * communication ID). A connection is also a struct emu_cm_conn on the CM's list, which may
 * outlive its object: when the session lets go of a connection that is up, the CM still
 * disconnects it (DREQ, retried until the DREP) before forgetting it ("orphan").
 *
 * STATES (IBA 12.9, the connection state diagrams; names as Linux's ib_cm):
 *   active:  REQ_SENT --REP--> REP_RCVD --CM_ESTABLISH (RTU)--> ESTABLISHED
 *   passive: REQ_RCVD --CM_ACCEPT (REP)--> REP_SENT --RTU--> ESTABLISHED
 *   ESTABLISHED --CM_DISCONNECT (DREQ)--> DREQ_SENT --DREP--> TIMEWAIT --> CLOSED
 *   ESTABLISHED --DREQ--> DREQ_RCVD --CM_DISCONNECT (DREP)--> TIMEWAIT --> CLOSED
 *   REJ, a give-up or CM_REJECT --> CLOSED.
 * UD port space (SIDR, IBA 12.11): one question, one answer, no connection state after:
 *   active:  SIDR_REQ_SENT --SIDR_REP--> CLOSED (ESTABLISHED with the peer's QPN and
 *            Q_Key, or UNREACHABLE with the SIDR status, as the kernel's cma does)
 *   passive: SIDR_REQ_RCVD --CM_ACCEPT (SIDR_REP, success) / CM_REJECT (reject)--> CLOSED
 * REQ, REP and DREQ are resent every EMU_CM_RESPONSE_MS, EMU_CM_RETRIES times; then the
 * connection gives up (UNREACHABLE; DISCONNECTED for a DREQ). An MRA extends the wait by
 * its service timeout. Duplicates are answered again (a REQ whose REP went: the REP; a
 * REP whose RTU went: the RTU), never processed twice.
 *
 * STATELESS ANSWERS, as Linux's ib_cm gives them to messages that match nothing, so a
 * peer never waits out its timeouts: REQ for a service nobody listens on → REJ
 * INVALID_SERVICE_ID; REP of no REQ → REJ INVALID_COMM_ID; DREQ of no connection → DREP;
 * SIDR_REQ for a service nobody listens on → SIDR_REP UNSUPPORTED; RTU, MRA, REJ, DREP,
 * SIDR_REP of no exchange: counted (unmatched).
 *
 * Loop thread only.
 */
#ifndef ODPEMU_EMU_CM_H
#define ODPEMU_EMU_CM_H

#include <stdbool.h>
#include <stdint.h>

#include "cm_mad.h"
#include "ipc.h"
#include "nic.h"

/* Where odpemu differs from the kernel (docs/rdmacm.md): it waits 4.3 s for an answer and
 * retries 15 times (CMA_CM_RESPONSE_TIMEOUT, CMA_MAX_CM_RETRIES); a test suite cannot wait
 * a minute for an UNREACHABLE. The REQ advertises what we do. */
#define EMU_CM_RESPONSE_MS	500u
#define EMU_CM_RESPONSE_EXP	17u	/* 4.096 us * 2^17 = 537 ms, in the REQ */
#define EMU_CM_RETRIES		3u
#define EMU_CM_TIMEWAIT_MS	200u
#define EMU_CM_BACKLOG		128u

/* SIDR_REP status values (IBA 12.11.2; Linux enum ib_cm_sidr_status). */
#define EMU_CM_SIDR_SUCCESS	0u
#define EMU_CM_SIDR_UNSUPPORTED	1u
#define EMU_CM_SIDR_REJECT	2u

/* Per attribute, in CM_ATTRS order: received, sent. */
#define EMU_CM_NATTR 12u

#define EMU_CM_STATES(X) \
	X(REQ_SENT) X(REQ_RCVD) X(REP_SENT) X(REP_RCVD) X(ESTABLISHED) X(DREQ_SENT) \
	X(DREQ_RCVD) X(TIMEWAIT) X(CLOSED) X(SIDR_REQ_SENT) X(SIDR_REQ_RCVD)
enum emu_cm_state {
#define EMU_CM_STATE_ENUM_(n) EMU_CM_##n,
	EMU_CM_STATES(EMU_CM_STATE_ENUM_)
#undef EMU_CM_STATE_ENUM_
};
const char *emu_cm_state_str(enum emu_cm_state s);

struct emu_obj;

/* A port reservation: made by rdma_bind_addr (CM_BIND), heard on once it listens. */
enum emu_cm_port_state { EMU_CM_PORT_BOUND, EMU_CM_PORT_LISTEN };

struct emu_cm_listener {
	struct emu_cm_listener *next;
	struct emu_obj *obj;		/* the session's listener object */
	struct emu_obj *channel;
	uint64_t user;
	uint64_t service_id;
	struct nic_gid addr;		/* all zero: any address of the device */
	enum emu_cm_port_state state;
	uint16_t family;		/* AF_INET, AF_INET6, 0: any (ipc_cm_listen_req) */
	bool reuseaddr, afonly;		/* rdma_set_option's (ipc_cm_port_flags) */
	unsigned backlog, pending;	/* connections in REQ_RCVD */
	/* Holds its port's claim in the network namespace (cm_claim.c): the first
	 * reservation of this daemon on the port does, in claim_fd. */
	bool claimed;
	int claim_fd;
};

struct emu_cm_conn {
	struct emu_cm_conn *next;
	struct emu_obj *obj;		/* NULL: an orphan, finishing on its own */
	struct emu_obj *channel;	/* where its events go (a ref while set) */
	struct emu_cm_listener *listener;	/* passive, until accepted or rejected */
	uint64_t user;
	enum emu_cm_state state;
	bool active;
	uint32_t local_id, remote_id;
	struct nic_gid peer;
	uint64_t tid;			/* of the exchange in flight */
	uint64_t service_id;		/* SIDR: the service the peer asked for */
	struct ipc_cm_qp local_qp, peer_qp;
	uint8_t last[CM_MAD_LEN];	/* what a duplicate or a timeout resends */
	bool has_last;
	uint64_t deadline_ns;		/* UINT64_MAX: none */
	unsigned retries;
};

struct emu_cm {
	struct nic *nic;
	struct nic_gid gid;		/* this device's */
	uint32_t next_comm_id;		/* local communication IDs we hand out */
	struct emu_cm_listener *listeners;
	struct emu_cm_conn *conns;
	struct {
		uint64_t rx[EMU_CM_NATTR], tx[EMU_CM_NATTR];
		uint64_t rx_malformed;	/* not a CM MAD we can read (cm_mad_parse failed) */
		uint64_t rx_bad_src_qp;	/* a DETH source QP other than 1 */
		uint64_t unmatched;	/* answers to nothing we sent: dropped */
		uint64_t duplicates;	/* retransmissions of what we already have */
		uint64_t tx_errors;	/* nic_gsi_send or cm_mad_build refused */
		uint64_t retransmits, give_ups;	/* our REQ/REP/DREQ resent; left unanswered */
		uint64_t events_sent, events_dropped;
		uint64_t established;	/* connections that reached ESTABLISHED */
		uint64_t listens;	/* listeners ever made (tests wait for a server's) */
		uint64_t req_port_elsewhere;	/* REQs refused: the port is another daemon's */
	} ctr;
};

/* Ready to answer on nic for the device at gid; seed picks the first local communication
 * ID (a restarted daemon must not reuse IDs its predecessor's peers remember). */
void emu_cm_init(struct emu_cm *cm, struct nic *nic, const struct nic_gid *gid, uint32_t seed);
/* A MAD from QP1 (the nic_ports.gsi_rx port). */
void emu_cm_rx(struct emu_cm *cm, const struct nic_gsi_dgram *d, uint64_t now);
/* Timers: resend, give up, leave time-wait. */
void emu_cm_tick(struct emu_cm *cm, uint64_t now);
uint64_t emu_cm_next_deadline(const struct emu_cm *cm);
/* Free everything (daemon stop; the sessions are gone). */
void emu_cm_free(struct emu_cm *cm);

/* Counter names: "REQ", ... for attribute slot i (0..EMU_CM_NATTR-1); NULL past the end. */
const char *emu_cm_attr_name(unsigned i);

/* ---- cm.c, for cm_conn.c ---- */
uint32_t emu_cm_new_comm_id(struct emu_cm *cm);
/* Build and send m to dst's QP1; with keep, remember the bytes to resend. 0 or -errno. */
int emu_cm_send(struct emu_cm *cm, const struct nic_gid *dst, const struct cm_msg *m,
		uint8_t keep[CM_MAD_LEN]);
void emu_cm_resend(struct emu_cm *cm, const struct nic_gid *dst, const uint8_t mad[CM_MAD_LEN]);
struct cm_msg emu_cm_msg(enum cm_attr attr, uint64_t tid);
void emu_cm_reject(struct emu_cm *cm, const struct nic_gid *to, uint64_t tid, uint32_t ours,
		   uint32_t theirs, enum cm_msg_response what, uint16_t reason,
		   const struct ipc_cm_private *priv);

/* ---- cm_claim.c: a reservation's port claimed in the network namespace, so that daemons
 * sharing one (hosts on 127.0.0.x) never pick the same port: the kernel has one port space
 * per namespace. 0; -EADDRINUSE only for a picked port another daemon claimed meanwhile. */
int emu_cm_claim(const struct emu_cm *cm, struct emu_cm_listener *l, bool picked);
/* May a new reservation of this daemon claim sid (free, or this daemon's already)? */
bool emu_cm_claim_free(const struct emu_cm *cm, uint64_t sid);
/* l goes: its claim passes to another reservation of the port, or is let go. */
void emu_cm_claim_drop(const struct emu_cm *cm, struct emu_cm_listener *l);

/* ---- cm_port.c: sharing a port, hearing a request ---- */
/* The all-zero GID: a listener's or a reservation's "any address of the device". */
bool emu_cm_gid_any(const struct nic_gid *g);
int emu_cm_port_check(const struct emu_cm *cm, const struct emu_cm_listener *self,
		      uint64_t sid, const struct nic_gid *addr, uint16_t family, bool reuse,
		      bool afonly);
int emu_cm_port_pick(const struct emu_cm *cm, enum cm_port_space ps, const struct nic_gid *addr,
		     uint16_t family, bool reuse, bool afonly);
bool emu_cm_port_hears(const struct emu_cm_listener *l, uint64_t sid, const struct nic_gid *dst);

/* ---- cm_conn.c, shared with cm_sidr.c ---- */
struct emu_cm_conn *emu_cm_by_local_id(struct emu_cm *cm, uint32_t id);
/* A passive exchange we already have: the same peer and its ID (a retransmission). */
struct emu_cm_conn *emu_cm_by_remote(struct emu_cm *cm, const struct nic_gid *peer,
				     uint32_t id);
/* The listener a REQ's or SIDR_REQ's service ID and rdma_cm IP header (in priv) name, with
 * the header's addresses (dst's port: the service's); NULL if none or not rdma_cm's.
 * want: the port space required (0: any). */
struct emu_cm_listener *emu_cm_listener_of(struct emu_cm *cm, uint64_t sid,
					    enum cm_port_space want, const uint8_t *priv,
					    size_t len, struct ipc_cm_addr *src,
					    struct ipc_cm_addr *dst);
/* Done with the protocol: an orphan goes, an owned one waits for its object's end. */
void emu_cm_finish(struct emu_cm *cm, struct emu_cm_conn *c);
/* rdma_cm's IP header (q's addresses), then q's private data: a REQ's or SIDR_REQ's. */
int emu_cm_ip_private(uint8_t *priv, const struct ipc_cm_connect_req *q);
/* Send m as c's request (kept for resending), enter state, wait for the answer. */
int emu_cm_send_request(struct emu_cm *cm, struct emu_cm_conn *c, const struct cm_msg *m,
			enum emu_cm_state state, uint64_t now);
/* An event of c (with the peer's QP) to its channel; nothing for an orphan. */
void emu_cm_conn_event(struct emu_cm *cm, struct emu_cm_conn *c, uint32_t type,
		       int32_t status, const uint8_t *priv, size_t priv_len);

/* ---- cm_sidr.c: the UD port space's service ID resolution ---- */
bool emu_cm_sidr_rx_req(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m);
bool emu_cm_sidr_rx_rep(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m);
/* The SIDR_REQ of an rdma_connect on a UDP port space ID. 0 or -errno. */
int emu_cm_sidr_connect(struct emu_cm *cm, struct emu_cm_conn *c,
			const struct ipc_cm_connect_req *q, uint64_t now);
/* Answer c's SIDR_REQ (status EMU_CM_SIDR_*, with our QP when it succeeds); the caller
 * finishes c. 0 or -errno. */
int emu_cm_sidr_answer(struct emu_cm *cm, struct emu_cm_conn *c, uint8_t status,
		       const struct ipc_cm_qp *qp, const struct ipc_cm_private *priv);

/* ---- cm_conn.c: the connections ---- */
/* A message for an exchange: true if a connection or listener took it (else cm.c gives
 * the stateless answer). */
bool emu_cm_conn_rx(struct emu_cm *cm, const struct nic_gid *from, const struct cm_msg *m,
		    uint64_t now);
struct emu_cm_conn *emu_cm_conn_new(struct emu_cm *cm);
/* The session let go of c (its object is being destroyed): finish or forget it. */
void emu_cm_conn_release(struct emu_cm *cm, struct emu_cm_conn *c, uint64_t now);
/* The GID an active connection's MADs go to (cm_conn.c). */
void emu_cm_peer_of(const struct ipc_cm_connect_req *q, struct nic_gid *peer);
/* Start an active connection: the REQ. 0 or -errno. */
int emu_cm_conn_connect(struct emu_cm *cm, struct emu_cm_conn *c,
			const struct ipc_cm_connect_req *q, uint64_t now);
int emu_cm_conn_accept(struct emu_cm *cm, struct emu_cm_conn *c,
		       const struct ipc_cm_accept_req *q, uint64_t now);
int emu_cm_conn_reject(struct emu_cm *cm, struct emu_cm_conn *c,
		       const struct ipc_cm_private *priv);
int emu_cm_conn_establish(struct emu_cm *cm, struct emu_cm_conn *c,
			  const struct ipc_cm_private *priv);
int emu_cm_conn_disconnect(struct emu_cm *cm, struct emu_cm_conn *c,
			   const struct ipc_cm_private *priv, uint64_t now);
void emu_cm_listener_release(struct emu_cm *cm, struct emu_cm_listener *l);

/* ---- cm_ctl.c ---- */
/* One event to the connection's channel (or the listener's); counted when it cannot go. */
void emu_cm_event(struct emu_cm *cm, struct emu_cm_conn *c, struct ipc_cm_event *ev);
/* A new connection object for a REQ the listener took (in the listener's session); NULL
 * when the session is out of objects. */
struct emu_obj *emu_cm_conn_obj_new(struct emu_cm_listener *l, struct emu_cm_conn *c);

#endif
