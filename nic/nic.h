/* SPDX-License-Identifier: MIT */
/*
 * nic — the soft-HCA: device, PD, MR (pinned, explicit ODP, implicit ODP), CQ, SRQ, QP (RC,
 * UD) and the requester, responder and completer engines of RoCEv2 RC/UD transport.
 *
 * I/O-FREE AND DETERMINISTIC. The library makes no syscall, starts no thread, reads no
 * clock and draws no random number. It sees the world through struct nic_ports (wire, host
 * memory, fault handler, events) and through `now` (nanoseconds of the owner's clock)
 * passed into every entry point that may start a timer. The same inputs in the same order
 * give the same outputs, which is what the simulation (tests/nic/sim) relies on.
 *
 * THREADING. One thread drives a struct nic and everything created on it (the daemon's
 * event loop, or the simulation). Port callbacks are made from inside the entry point that
 * caused them; a callback must not call back into the same nic except nic_cq_poll().
 *
 * ENTRY POINTS (all take `now`): nic_rx (a received packet), nic_post_send/nic_post_recv/
 * nic_srq_post_recv (doorbells), nic_tick (timers: call at or after nic_next_deadline()),
 * nic_fault_complete/nic_fault_fail (answers of the fault handler), and the control verbs.
 * Each runs the engines until they have nothing left to do at `now`.
 *
 * ERRORS. Functions return 0 or a negative errno; objects are returned through out
 * pointers. Bad input from the wire is dropped and counted (struct nic_counters), never
 * trusted.
 */
#ifndef ODPEMU_NIC_H
#define ODPEMU_NIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device_attr.h"
#include "iopt.h"
#include "odpemu/verbs_types.h"
#include "qp_attr.h"

struct nic;
struct nic_pd;
struct nic_mr;
struct nic_cq;
struct nic_srq;
struct nic_qp;
struct nic_wc;

/* A GID: an IPv6 address, or an IPv4-mapped one (::ffff:a.b.c.d) for RoCEv2 over IPv4. */
struct nic_gid {
	uint8_t raw[16];
};

bool nic_gid_is_v4(const struct nic_gid *g);
/* A multicast GID (the kernel's rdma_is_multicast_addr): ff00::/8, or IPv4-mapped
 * 224.0.0.0/4. */
bool nic_gid_is_mcast(const struct nic_gid *g);
struct nic_gid nic_gid_from_v4(uint32_t addr_host_order);

/* ---- ports ---- */

struct nic_event {
	enum odpemu_event_type type;
	struct nic_qp *qp;	/* QP events */
	struct nic_cq *cq;	/* CQ_ERR */
	struct nic_srq *srq;	/* SRQ_LIMIT_REACHED, SRQ_ERR */
	struct nic_mr *mr;	/* MR_DECOHERENCE */
};

#define NIC_PORT_TX_SLOT	(4096 + 128)	/* the largest packet: PMTU 4096 + headers */

/* QP1 (IBA 13.5): one MAD per UD SEND_ONLY, source and destination QP 1, Q_Key 0x80010000. */
#define NIC_GSI_MAD_LEN	256u
#define NIC_GSI_QKEY	0x80010000u
struct nic_gsi_dgram {
	struct nic_gid src;		/* the sender's GID */
	uint32_t src_qp;		/* the DETH's (1 from a NIC; kept for the agent to check) */
	const uint8_t *mad;		/* NIC_GSI_MAD_LEN bytes */
};

struct nic_ports {
	void *ctx;
	/* Wire: one UDP payload (BTH .. ICRC, ICRC sealed) to the device at dst, from this
	 * device's GID and UDP source port to UDP port 4791. Fire and forget. */
	void (*send)(void *ctx, const struct nic_gid *dst, const uint8_t *pkt, size_t len);
	/* Host memory of one client at a host address (an IOPT frame address or a pinned
	 * MR's host address). 0, or -EFAULT when the host cannot read/write it now. */
	int (*mem_read)(void *ctx, uint32_t client, uint64_t host, void *dst, size_t len);
	int (*mem_write)(void *ctx, uint32_t client, uint64_t host, const void *src, size_t len);
	/* Fault handler: resolve req (va range of client's address space, access) and answer
	 * later with nic_fault_complete() or nic_fault_fail(), exactly once. */
	void (*fault)(void *ctx, uint32_t client, struct iopt_req *req);
	/* Async events (ibv_get_async_event). */
	void (*event)(void *ctx, const struct nic_event *ev);
	/* Completion notification of an armed CQ (ibv_get_cq_event). Optional. */
	void (*cq_notify)(void *ctx, struct nic_cq *cq);
	/* Optional: write one completion straight into the CQ's ring where its consumer
	 * reads it (the daemon's shared ring); false when that ring is full, which
	 * overflows the CQ (CQ_ERR) exactly when the application's ring is full, as on
	 * hardware. Without it, completions wait in nic/'s own ring for nic_cq_poll(). */
	bool (*cq_write)(void *ctx, struct nic_cq *cq, const struct nic_wc *wc);
	/* Optional, both or neither: zero-copy sending through a transmit slot.
	 *  - tx_slot LENDS nic/ NIC_PORT_TX_SLOT bytes of the port's memory to build its next
	 *    packet in, payload gathered from host memory straight into it; or answers NULL
	 *    (none now): nic/ builds in its own scratch and calls send(), which copies. The
	 *    answer holds until nic/ sends: asked again, tx_slot gives the same slot (or NULL).
	 *  - send_slot SEALS: the first len bytes of the lent slot are a finished packet (ICRC
	 *    sealed) for dst, and the slot is the port's again, to send without a copy. This
	 *    call, not a pointer, is what says "built in place"; send() is never given a slot.
	 *  - A packet nic/ gives up on (a gather that faulted) never reaches send_slot: the
	 *    slot stays lent and the next packet is built over it.
	 * A packet then leaves with two copies per byte: host memory -> slot, slot -> kernel. */
	uint8_t *(*tx_slot)(void *ctx);
	void (*send_slot)(void *ctx, const struct nic_gid *dst, size_t len);
	/* Optional: a persistent FLUSH (IBA 1.5 Memory Placement Extensions, placement type
	 * persistence) of [addr, addr+len) of client: a client virtual address for an ODP MR
	 * (odp), else a pinned MR's host address. 0: durable now (or nothing behind it the
	 * host can make durable: its docs say what the FLUSH then guarantees); 1: started,
	 * w is answered later on the nic's thread (status stored, then w->fn called) unless
	 * persist_cancel(w) comes first; -errno: it failed (the FLUSH fails with a remote
	 * operational error). NULL: a persistent FLUSH is answered as a global one; so is a
	 * whole-MR FLUSH of an implicit ODP MR (the whole address space). */
	int (*persist)(void *ctx, uint32_t client, bool odp, uint64_t addr, uint64_t len,
		       struct iopt_waiter *w);
	/* Required with persist: w must not be answered any more (its QP goes away). */
	void (*persist_cancel)(void *ctx, struct iopt_waiter *w);
	/* Optional: the host's management agent (the connection manager), given each MAD
	 * that arrives on QP1 (valid during the call). NULL: QP1 packets drop as NO_QP. */
	void (*gsi_rx)(void *ctx, const struct nic_gsi_dgram *d);
	/* Optional: the device's first QP joined multicast group mgid (member true), or its
	 * last one left it (false): the owner listens for the group's packets meanwhile and
	 * hands them to nic_rx_mcast (emu/io/mcast.c; a host's IGMP/MLD membership). */
	void (*mcast_member)(void *ctx, const struct nic_gid *mgid, bool member);
};

/* ---- device ---- */

struct nic_config {
	struct nic_gid gid;		/* this device's address */
	uint16_t udp_sport;		/* UDP source port of every packet (ICRC input);
					 * 0: 4791 */
	uint16_t udp_dport;		/* UDP port this device and its peers listen on
					 * (ICRC input, both ways); 0: 4791 */
	enum odpemu_mtu active_mtu;	/* port MTU (0: 4096) */
	struct nic_device_attr attr;	/* limits; zero: nic_device_attr_default() */
	struct nic_ports ports;
	/* Responder stall policy: inbound packets a QP holds behind a page fault before it
	 * drops (and go-back-N recovers). 0: 256 (max_inflight's default). */
	unsigned stall_queue;
	/* Requester: packets in flight (sent, not acknowledged) per QP. 0: 256. */
	unsigned max_inflight;
	/* Fault-around window of ODP MRs (power of two >= 4096; 0: pagetable default 64 KiB;
	 * 4096 turns fault-around off). */
	uint64_t fault_around;
};

int nic_create(const struct nic_config *cfg, struct nic **out);
/* The port's active MTU follows its netdev (mlx5 and rxe do, on a netdev MTU change):
 * QPs moved to RTR from now on are checked against it and take it as their path MTU's
 * bound; those already set up keep theirs (IBA 10.2.4.4: path MTU is the QP's). UD QPs take
 * it at their next modify. -EINVAL outside 256..4096. */
int nic_set_active_mtu(struct nic *nic, enum odpemu_mtu mtu);
/* Fails with -EBUSY while any object exists. */
int nic_destroy(struct nic *nic);
const struct nic_device_attr *nic_attr(const struct nic *nic);
const struct nic_gid *nic_gid(const struct nic *nic);

/* A received UDP payload (BTH .. ICRC) from src. Invalid packets are counted and dropped.
 * The ICRC covers the UDP source port: nic_rx assumes the peer sent from 4791 (odpemu's
 * default, udp_sport 0); nic_rx_from takes the port the socket reported. */
void nic_rx(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src,
	    uint64_t now);
void nic_rx_from(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src,
		 uint16_t sport, uint64_t now);
/* A UDP payload that src sent to multicast group mgid (it arrived on the group's address):
 * checked as nic_rx_from does (the ICRC over mgid), then a copy to each QP of the device
 * attached to the group, each taking it as a UD receive of its own (state, P_Key, Q_Key,
 * a receive WQE: IBA 10.5.2.4, rxe_rcv_mcast_pkt), the sender's own QP included when it
 * is attached (rxe has no self-loopback block). The BTH's destination QP must be
 * 0xFFFFFF (IBA 9.6.1.1), else it drops as NO_QP; no member: MCAST_NO_GROUP. */
void nic_rx_mcast(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src,
		  uint16_t sport, const struct nic_gid *mgid, uint64_t now);
/* Send one MAD (NIC_GSI_MAD_LEN bytes) from QP1 to QP1 of the device at dst. 0, or
 * -EINVAL/-ENOSPC from the packet builder. Fire and forget, as every UD send. */
int nic_gsi_send(struct nic *nic, const struct nic_gid *dst, const uint8_t *mad);
/* Run timers due at now (ACK timeout, RNR timer, deferred work). */
void nic_tick(struct nic *nic, uint64_t now);
/* The earliest time nic_tick has work, or UINT64_MAX. O(log QPs): it may tidy the
 * timers, hence not const. */
uint64_t nic_next_deadline(struct nic *nic);

/* Answers of the fault handler to a request handed out by ports.fault, exactly once each.
 * nic_fault_complete: 0 when the pages are filled, or when an invalidation raced the
 * answer (the request then goes back to ports.fault, to be answered again); -EINVAL when
 * maps do not cover the needed range with the needed permission, and the request fails as
 * by nic_fault_fail(-EINVAL). nic_fault_fail: err < 0 (else -EINVAL, request untouched);
 * the waiting DMA fails (REFERENCE.md: REM_ACCESS_ERR at the peer, LOC_PROT_ERR locally).
 * An MR deregistered while the handler holds one of its requests lingers until the answer,
 * which then fills nothing. */
int nic_fault_complete(struct nic *nic, struct iopt_req *req, const struct iopt_map *maps,
		       unsigned n, uint64_t now);
int nic_fault_fail(struct nic *nic, struct iopt_req *req, int err, uint64_t now);
/* Several answers in a row: between begin and end, nic_fault_complete/_fail fill the pages
 * and schedule the QPs that waited, and nic_batch_end runs them all, so the last answer is
 * filled as early as the first (a host handler fills its page table for a batch of faults,
 * then the device resumes). Nests with the engines' own re-entry guard. */
void nic_batch_begin(struct nic *nic);
void nic_batch_end(struct nic *nic, uint64_t now);

/* ---- PD, MR ---- */

int nic_pd_alloc(struct nic *nic, uint32_t client, struct nic_pd **out);
int nic_pd_dealloc(struct nic_pd *pd);		/* -EBUSY while MRs/QPs/SRQs use it */

/* Registration. ODPEMU_ACCESS_ON_DEMAND makes an ODP MR whose IO page table starts empty
 * (pages arrive through faults and advise); otherwise the MR is pinned: host is where the
 * owner pinned [va, va+len) (page aligned like va) and the translation never changes.
 * Implicit ODP: va 0, len UINT64_MAX, ON_DEMAND: the whole 47-bit address space. */
struct nic_mr_init {
	uint64_t va, len;
	unsigned access;	/* enum odpemu_access_flags */
	uint64_t host;		/* pinned MRs only */
	/* Whose memory [va, va+len) is (the memory port's client): the registering process,
	 * which an imported PD's (emu/import.c) need not be; 0: the PD's client. */
	uint32_t client;
};
/* 0, -EINVAL (nic_mr_init_why says why), -ENOMEM. */
int nic_mr_reg(struct nic_pd *pd, const struct nic_mr_init *init, struct nic_mr **out);
/* Why nic_mr_reg would refuse init with -EINVAL, in words; NULL if it would not. */
const char *nic_mr_init_why(const struct nic *nic, const struct nic_mr_init *init);
/* Safe while traffic is in flight: the MR's keys stop matching at once; DMAs already
 * translating finish first (the IOPT fence); packets that find the key gone are NAKed. */
int nic_mr_dereg(struct nic_mr *mr);	/* -EINVAL also while windows are bound to it */
/* ibv_rereg_mr keeping the keys: a and b (live MRs of one device) trade keys and slots.
 * 0 or -EINVAL. */
int nic_mr_swap_keys(struct nic_mr *a, struct nic_mr *b);
uint32_t nic_mr_lkey(const struct nic_mr *mr);
uint32_t nic_mr_rkey(const struct nic_mr *mr);
/* ibv_advise_mr on [va, va+len): advice is an enum odpemu_advise_mr_advice. Queues the
 * prefetch's page requests and hands them to the fault port; it never waits (nic/ does no
 * I/O). ODPEMU_ADVISE_MR_FLAG_FLUSH, the synchronous form, is the daemon's: it answers the
 * client once the last of those requests is answered (emu/verbs.c op_advise_mr). */
int nic_mr_advise(struct nic_mr *mr, unsigned advice, uint64_t va, uint64_t len, uint64_t now);
/* The MMU notifier: the host unmapped or changed [va, va+len) of the client. ODP MRs drop
 * their translations (fence included); pinned MRs keep theirs and raise MR_DECOHERENCE. */
void nic_host_invalidate(struct nic *nic, uint32_t client, uint64_t va, uint64_t len);
/* MR leases (docs/regcache.md): a pinned MR registered with ODPEMU_ACCESS_LEASE starts
 * COHERENT. The host breaks it when the mapping under it changes (the daemon holds the
 * change meanwhile); while BROKEN, DMA through it reaches no page: it waits as on an ODP
 * page fault (the responder answers RNR NAK or holds, a local SGE holds its queue) until
 * a restore points it at the new pages (same keys) or a revocation ends it for good
 * (remote access NAKed with a remote access error, local use LOC_PROT_ERR). A leased MR's
 * decoherence is the lease's business: nic_host_invalidate leaves it alone. */
enum nic_lease { NIC_LEASE_NONE, NIC_LEASE_COHERENT, NIC_LEASE_BROKEN, NIC_LEASE_REVOKED };
/* COHERENT -> BROKEN, behind the fence (no DMA still uses the old pages when it returns):
 * 0, or -EALREADY if it was not COHERENT (nothing changes). */
int nic_mr_lease_break(struct nic_mr *mr);
/* BROKEN -> COHERENT at host (page-aligned like va, as nic_mr_init.host), waking what
 * waits: 0, -EINVAL (no lease, or not broken), -EACCES (revoked), -ENOMEM. */
int nic_mr_lease_restore(struct nic_mr *mr, uint64_t host);
/* BROKEN -> REVOKED, waking what waits (it then fails): 0, -EINVAL if not BROKEN. */
int nic_mr_lease_revoke(struct nic_mr *mr);
enum nic_lease nic_mr_lease(const struct nic_mr *mr);
/* The MR's page table (counters, snapshot) for tests and the daemon. */
struct iopt *nic_mr_iopt(const struct nic_mr *mr);

/* ---- memory windows (IBA 10.6.7; nic/mw.c) ----
 * A window has an rkey from the MR key space; it is bound, moved (type 1) and invalidated
 * (type 2) by work requests on a send queue (BIND_MW, LOCAL_INV, a peer's
 * SEND_WITH_INVALIDATE), in queue order. type: ODPEMU_MW_TYPE_1 or _2, else -EINVAL;
 * -ENOSPC beyond max_mw, -ENOMEM. */
struct nic_mw;
int nic_mw_alloc(struct nic_pd *pd, unsigned type, struct nic_mw **out);
/* A bound window is unbound first (as rxe); its rkey stops matching at once. */
int nic_mw_dealloc(struct nic_mw *mw);
uint32_t nic_mw_rkey(const struct nic_mw *mw);
void nic_mw_set_owner(struct nic_mw *mw, void *owner);

/* ---- CQ ---- */

struct nic_wc {
	uint64_t wr_id;
	enum odpemu_wc_status status;
	enum odpemu_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t imm_data;	/* host order: ImmDt as a big-endian number; invalidated rkey */
	uint32_t qp_num;
	uint32_t src_qp;	/* UD */
	unsigned wc_flags;	/* NIC_WC_* */
	uint32_t vendor_err;	/* enum nic_vendor_err: why, for error statuses */
};
enum nic_wc_flags {
	NIC_WC_GRH = 1 << 0,		/* ibv IBV_WC_GRH */
	NIC_WC_WITH_IMM = 1 << 1,	/* ibv IBV_WC_WITH_IMM */
	NIC_WC_WITH_INV = 1 << 3,	/* ibv IBV_WC_WITH_INV */
};

/* cqe entries in nic/'s own ring (none with ports.cq_write: the owner's ring counts). */
int nic_cq_create(struct nic *nic, unsigned cqe, struct nic_cq **out);
/* What a completion finds when the CQ is full (IBA 11.4.2.1; ibv_create_cq_ex's
 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN): the CQ fails with CQ_ERR, or, as mlx5 with that
 * flag, the CQ and its QPs go on and the completion is lost (counted:
 * cq_overruns_ignored). */
enum nic_cq_overrun {
	NIC_CQ_OVERRUN_ERROR,		/* the default, as every device */
	NIC_CQ_OVERRUN_IGNORE,
};
void nic_cq_set_overrun(struct nic_cq *cq, enum nic_cq_overrun policy);
int nic_cq_destroy(struct nic_cq *cq);		/* -EBUSY while a QP uses it */
int nic_cq_poll(struct nic_cq *cq, struct nic_wc *wc, int n);
/* The owner's object for this CQ (ports.cq_write and cq_notify find theirs through it);
 * QPs, SRQs and MRs have the same pair (owner.c): events name them. */
void nic_cq_set_owner(struct nic_cq *cq, void *owner);
void *nic_cq_owner(const struct nic_cq *cq);
void nic_qp_set_owner(struct nic_qp *qp, void *owner);
void *nic_qp_owner(const struct nic_qp *qp);
void nic_srq_set_owner(struct nic_srq *srq, void *owner);
void *nic_srq_owner(const struct nic_srq *srq);
void nic_mr_set_owner(struct nic_mr *mr, void *owner);
void *nic_mr_owner(const struct nic_mr *mr);
/* The MR's memory is now client's (the same process under another client id: a session
 * that hands its objects to another of its process, emu/session.c IMPORTS). */
void nic_mr_set_client(struct nic_mr *mr, uint32_t client);
/* The owner's object of the QP with this number, of the live MR with this key (lkey or
 * rkey), or NULL: O(1), for the owner's tools. */
void *nic_qp_owner_by_num(struct nic *nic, uint32_t qpn);
void *nic_mr_owner_by_key(struct nic *nic, uint32_t key);
/* Arm: the next completion (solicited_only: the next solicited one or error) calls
 * ports.cq_notify once. */
int nic_cq_req_notify(struct nic_cq *cq, bool solicited_only);

/* ---- SRQ ---- */

struct nic_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct nic_recv_wr {
	uint64_t wr_id;
	const struct nic_sge *sg_list;
	unsigned num_sge;
};

int nic_srq_create(struct nic_pd *pd, unsigned max_wr, unsigned max_sge, struct nic_srq **out);
int nic_srq_destroy(struct nic_srq *srq);	/* -EBUSY while a QP uses it */
/* SRQ limit: when the number of posted WQEs drops below limit, SRQ_LIMIT_REACHED fires
 * once and the limit disarms (ibv_modify_srq IBV_SRQ_LIMIT). */
int nic_srq_arm(struct nic_srq *srq, unsigned limit);
/* -EPERM once the SRQ is in error (nic_srq_post_recv_bad). */
int nic_srq_post_recv(struct nic_srq *srq, const struct nic_recv_wr *wr, uint64_t now);
/* A receive WR the host cannot post as written (emu/'s SRQ ring of a client that wrote
 * nonsense): the SRQ goes to error, SRQ_ERR is raised, and every QP on it moves to ERR
 * with QP_FATAL; the SRQ then takes nothing (-EPERM) and no QP can be created on it.
 * Returns 0 (also when already in error), -EINVAL (no SRQ). */
int nic_srq_post_recv_bad(struct nic_srq *srq, uint64_t now);
bool nic_srq_in_error(const struct nic_srq *srq);

/* ---- QP ---- */

struct nic_qp_init {
	enum odpemu_qp_type type;	/* RC, UC or UD */
	struct nic_cq *send_cq, *recv_cq;
	struct nic_srq *srq;		/* optional */
	unsigned max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data;
	bool sq_sig_all;
	/* ODP responder policy on a page fault (ConnectX answers RNR NAK; a stall keeps the
	 * packets in order behind the fault, as a NIC with a deep receive buffer would). */
	enum nic_fault_policy { NIC_FAULT_STALL = 0, NIC_FAULT_RNR = 1 } fault_policy;
};

/* 0, -EINVAL / -EOPNOTSUPP (nic_qp_init_why says why), -ENOMEM. The QP gets the caps
 * nic_qp_grant grants. */
int nic_qp_create(struct nic_pd *pd, const struct nic_qp_init *init, struct nic_qp **out);
/* The caps the device grants for init, written back into it (mlx5 personalities round
 * max_inline_data up to the send WQE's room: nic/sq_caps.c); -EINVAL / -EOPNOTSUPP as
 * nic_qp_create would refuse it. Granting granted caps changes nothing. */
int nic_qp_grant(const struct nic *nic, struct nic_qp_init *init);
/* Why nic_qp_create would refuse init, in words; NULL if it would not. */
const char *nic_qp_init_why(const struct nic *nic, const struct nic_qp_init *init);
/* Destroying a QP in any state is allowed; its WQEs are dropped without completions (as
 * ibv_destroy_qp). */
int nic_qp_destroy(struct nic_qp *qp);
uint32_t nic_qp_num(const struct nic_qp *qp);
enum odpemu_qp_state nic_qp_state(const struct nic_qp *qp);
/* ibv_modify_qp: checked by nic_qp_check_modify(); *why (optional) names a refusal. */
int nic_qp_modify(struct nic_qp *qp, const struct nic_qp_attr *attr, unsigned mask,
		  uint64_t now, const char **why);
int nic_qp_query(const struct nic_qp *qp, struct nic_qp_attr *attr);

struct nic_send_wr {
	uint64_t wr_id;
	enum odpemu_wr_opcode opcode;
	unsigned send_flags;		/* enum odpemu_send_flags */
	const struct nic_sge *sg_list;	/* with ODPEMU_SEND_INLINE: addr is a pointer in this
					 * process, copied at post time; lkey unused */
	unsigned num_sge;
	uint32_t imm_data;		/* *_WITH_IMM (host order); SEND_WITH_INV: rkey */
	uint64_t remote_addr;		/* RDMA, atomics, FLUSH, ATOMIC_WRITE */
	uint32_t rkey;
	uint64_t compare_add, swap;	/* atomics (ATOMIC_WRITE takes its 8 bytes from one
					 * 8-byte SGE, as ibv_wr_atomic_write's buffer) */
	uint8_t flush_type, flush_level; /* FLUSH: enum roce_flush_plt bits, roce_flush_sel */
	uint32_t flush_len;		/* FLUSH of [remote_addr, +flush_len) */
	/* UD */
	struct nic_gid ud_dgid;
	uint32_t remote_qpn, remote_qkey;
};
/* BIND_MW (IBA 10.6.7.2) reuses the fields: imm_data is the window's current rkey (it names
 * the window), rkey its new rkey (same index, the low 8 bits the consumer's key),
 * remote_addr and compare_add the window's address and length, and swap packs the MR's
 * lkey (low 32 bits; length 0 and lkey 0 unbind a type 1 window) with the window's access
 * flags (high 32 bits). LOCAL_INV: imm_data is the rkey to invalidate. */
#define NIC_BIND_SWAP(lkey, access)	((uint64_t)(access) << 32 | (uint32_t)(lkey))
#define NIC_BIND_LKEY(swap)		((uint32_t)(swap))
#define NIC_BIND_ACCESS(swap)		((unsigned)((swap) >> 32))

/* 0, or -EINVAL (malformed WR: *bad says nothing more), -ENOMEM (queue full), -EPERM
 * (QP state does not accept posts). Posting in ERR completes the WR with WR_FLUSH_ERR.
 * Send completions come in post order. The first failing WR completes with its cause and
 * moves the QP to ERR; every later WR, and every posted receive, completes WR_FLUSH_ERR.
 * Unsignaled WRs complete only in error. SEND_WITH_INV: after the message landed, the
 * responder's MR named by imm_data stops answering remote access (local use goes on). */
int nic_post_send(struct nic_qp *qp, const struct nic_send_wr *wr, uint64_t now);
/* ibv_post_send with a chain of n WRs: one doorbell. The messages of a list share one
 * acknowledgement request (AckReq on the list's last message, and every 64 packets), so
 * the responder answers a list with one ACK. On a refused WR, returns its error with
 * *posted (may be NULL) the number queued before it; those are sent. */
int nic_post_send_list(struct nic_qp *qp, const struct nic_send_wr *wrs, unsigned n,
		       unsigned *posted, uint64_t now);
/* The same, but nothing is sent until nic_run_posted: for an owner that must release its
 * own copy of the WRs (a shared ring's slots) before any can complete. A UC or UD WQE
 * completes as soon as it is sent, and a client that sees its completion may reuse its
 * slot at once (perftest -c UC keeps its ring exactly full). */
int nic_post_send_list_queue(struct nic_qp *qp, const struct nic_send_wr *wrs, unsigned n,
			     unsigned *posted, uint64_t now);
void nic_run_posted(struct nic *nic, uint64_t now);
int nic_post_recv(struct nic_qp *qp, const struct nic_recv_wr *wr, uint64_t now);
/* A WR the host read from its client and could not post (a malformed slot of a shared
 * ring: garbage opcode, SGE count, flags, or a post in a state that takes none), completed
 * as a NIC completes a malformed WQE it fetched: LOC_QP_OP_ERR (vendor_err BAD_WQE, only
 * wr_id meaningful) in its place in the queue, and the QP moves to ERR, which flushes
 * every WR still outstanding before it and every later one (WR_FLUSH_ERR, as for any
 * local error, nic_post_send). In ERR already it completes WR_FLUSH_ERR. Returns 0,
 * -EINVAL (no QP; a receive for a QP on an SRQ), -ENOMEM (send: the queue is full; post
 * it again once a WR retired). */
int nic_post_send_bad(struct nic_qp *qp, uint64_t wr_id, uint64_t now);
int nic_post_recv_bad(struct nic_qp *qp, uint64_t wr_id, uint64_t now);

/* ---- UD multicast (nic/mcast.c; ibv_attach_mcast, ibv_detach_mcast) ----
 * A device keeps its groups (a multicast GID and the QPs attached to it), at most
 * attr.max_mcast_grp of them, attr.max_mcast_qp_attach QPs each and
 * attr.max_total_mcast_qp_attach attachments in all. Attach: 0 (also when attached
 * already: uverbs and rxe_attach_mcg make it a no-op); -EINVAL a QP not UD or a GID not
 * multicast (ib_attach_mcast); -EOPNOTSUPP the device has no multicast (max_mcast_grp 0);
 * -ENOMEM a limit (rxe). Detach: 0, -EINVAL if the QP is not in that group (uverbs). The
 * LID is not asked for: RoCE ignores it (ib_attach_mcast's is_valid_mcast_lid). A QP
 * destroyed leaves its groups (nic_qp_destroy; the daemon refuses a client's destroy of
 * an attached QP with -EBUSY, as uverbs_free_qp). ports.mcast_member says when a group
 * gains its first or loses its last member. */
int nic_mcast_attach(struct nic_qp *qp, const struct nic_gid *mgid);
int nic_mcast_detach(struct nic_qp *qp, const struct nic_gid *mgid);
/* The groups qp is attached to. */
unsigned nic_qp_mcast_groups(const struct nic_qp *qp);
/* The QPs attached to mgid (0: no such group). */
unsigned nic_mcast_members(const struct nic *nic, const struct nic_gid *mgid);

/* ---- counters ---- */

/* Why a received datagram was dropped. Each drop counts once, on the device and (when a
 * QP took it) on that QP: nic_counters.drops, nic_qp_counters.drops (docs/nic.md lists
 * them); emu/ exports each as drop_<reason> (emu/counters.c). */
#define NIC_DROP_REASONS(X) \
	X(ICRC) X(PARSE) X(NO_QP) X(QP_STATE) X(BAD_QP_TYPE) X(BAD_PKEY) X(BAD_QKEY) \
	X(SRC_MISMATCH) X(SEQ_ERR_SILENT) X(STALL_FULL) X(RNR) \
	X(UNEXPECTED_RESP) X(GHOST_RESP) X(UD_NO_WQE) X(LAND_FAULT) \
	X(UC_SEQ) X(UC_NO_WQE) X(UC_ACCESS) X(UC_INV_REQ) X(UC_FAULT) X(MCAST_NO_GROUP)
enum nic_drop_reason {
#define NIC_DROP_ENUM_(n) NIC_DROP_##n,
	NIC_DROP_REASONS(NIC_DROP_ENUM_)
#undef NIC_DROP_ENUM_
	NIC_DROP__COUNT
};
const char *nic_drop_reason_str(enum nic_drop_reason r);

/* A QP's counters, one list: the struct and emu/'s export are generated from it. */
#define NIC_QP_COUNTERS(X) \
	X(pkts_sent) X(pkts_received) X(bytes_sent) X(bytes_received) \
	X(retransmits) X(timeouts) X(seq_naks_sent) X(seq_naks_received) \
	X(rnr_naks_sent) X(rnr_naks_received) \
	X(rnr_naks_no_wqe)	/* of rnr_naks_sent: no receive WQE, not a page fault */ \
	X(dup_requests) \
	X(faults_resp) X(faults_req) X(stalls) X(stall_drops) \
	X(faults_ahead)		/* prefetched early: a held request's target, a READ's rest */ \
	X(persist_waits)	/* persistent FLUSHes that waited for the host's persist port */ \
	X(uc_msgs_dropped)	/* UC: messages dropped whole or abandoned part-way (uc.c) */
struct nic_qp_counters {
#define NIC_QP_CTR_FIELD_(name) uint64_t name;
	NIC_QP_COUNTERS(NIC_QP_CTR_FIELD_)
#undef NIC_QP_CTR_FIELD_
	uint64_t drops[NIC_DROP__COUNT];
};
int nic_qp_counters(const struct nic_qp *qp, struct nic_qp_counters *out);

/* Why an error completion happened (nic_wc.vendor_err): the public list, whose values
 * reach applications in their completions (odpemu/verbs_types.h). */
#define NIC_VENDOR_ERRS(X) ODPEMU_VENDOR_ERRS(X)
enum nic_vendor_err {
#define NIC_VERR_ENUM_(n) NIC_VERR_##n,
	NIC_VENDOR_ERRS(NIC_VERR_ENUM_)
#undef NIC_VERR_ENUM_
	NIC_VERR__COUNT
};
const char *nic_vendor_err_str(unsigned v);

struct nic_counters {
	uint64_t pkts_received, pkts_sent, drops[NIC_DROP__COUNT];
	uint64_t gsi_received, gsi_sent;	/* QP1's MADs (gsi.c) */
	/* UD multicast (mcast.c): packets sent to a group, packets received from one, and
	 * the copies of them handed to attached QPs (a copy a QP then drops counts in its
	 * drop reason, as a unicast packet would) */
	uint64_t mcast_pkts_sent, mcast_pkts_received, mcast_copies;
	uint64_t faults_raised, faults_failed;
	uint64_t cq_overruns_ignored;	/* completions lost to a full NIC_CQ_OVERRUN_IGNORE CQ */
	/* Error completions generated, by why (enum nic_vendor_err; FLUSH included): what
	 * made a QP fail is then visible without the client's CQ. */
	uint64_t wc_errors[NIC_VERR__COUNT];
	unsigned pds, mrs, cqs, srqs, qps, mws;	/* live objects */
};
void nic_counters(const struct nic *nic, struct nic_counters *out);

#endif
