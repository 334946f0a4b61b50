/* SPDX-License-Identifier: MIT */
/*
 * ipc — the protocol between libodpemu (lib/) and odpemud (emu/). Not an application API:
 * both sides are built from this header, and the version in every message keeps a library
 * from talking to a daemon of another build.
 *
 * CONTROL. A SOCK_SEQPACKET unix socket, $ODPEMU_RUNDIR/<name>.sock. One connection is one
 * session (one client process, its pid taken from SO_PEERCRED); sessions that import one
 * another's command fd (IMPORT_DEVICE) share their objects. Every message is one
 * datagram: struct ipc_hdr, then the op's fixed body, then for variable ops an array whose
 * count is in the body. File descriptors travel as SCM_RIGHTS with the message that names
 * them. The client sends one request and waits for its reply (same seq): requests are
 * strictly serial per session. A reply has the request's op and seq, status 0 or -errno,
 * and the op's reply body; on error the body may be a struct ipc_err_body (a human line).
 * The daemon checks every request: version, op, exact length, handles that belong to the
 * session. A bad request gets an error reply and changes nothing; the session lives on.
 *
 * OBJECTS are named by handles: small per-session numbers (never pointers). A handle from
 * another session is just an unknown handle (-ENOENT), unless the two share their handles
 * (IMPORT_DEVICE).
 *
 * DATA PATH. Work queues and completion queues are single-producer/single-consumer rings
 * (struct ipc_ring) in a memfd that the daemon creates and the client maps (fd in the
 * create reply). The client posts work requests into SQ/RQ/SRQ rings and consumes
 * completions from CQ rings; the daemon does the opposite. After producing, the client
 * reads the daemon status page's `sleeping` flag (after a full fence) and writes the
 * session's doorbell eventfd only if it is set. The daemon copies each slot out before it
 * checks it, and trusts no index or field the client wrote.
 *
 * EVENTS. Async events (ibv_get_async_event) arrive as struct ipc_event records on a pipe
 * whose read end the HELLO reply carries; end of file on it means the daemon died
 * (DEVICE_FATAL). A completion channel is a pipe too: one struct ipc_cq_event per
 * notification.
 */
#ifndef ODPEMU_IPC_H
#define ODPEMU_IPC_H

#include <linux/userfaultfd.h>
#include <stdint.h>

#include "odpemu/verbs_types.h"

#define IPC_VERSION		12	/* 2: ipc_cqe.ts_ns; 3: the userfaultfd relay;
					 * 4: the doorbell page (ipc_db.h); 5: CLIENT_INFO;
					 * 6: the seccomp route (IPC_HELLO_HAS_RELAY);
					 * 7: RESIZE_CQ, MR_SWAP_KEYS, ALLOC_MW, DEALLOC_MW;
					 * 8: ipc_create_cq_req.flags, CM_BIND and the
					 * listen request's bound/family/flags;
					 * IMPORT_DEVICE, IMPORT_PD, IMPORT_MR
					 * (IPC_HELLO_HAS_CMD_FD);
					 * 9: ATTACH_MCAST, DETACH_MCAST, ipc_device_rep's
					 *    multicast limits;
					 * 10: ipc_port_rep.personality;
					 * 11: device_cap_flags in ipc_device_rep and
					 *     ipc_create_qp_rep;
					 * 12: ipc_hello_rep.traits */
#define IPC_MAX_MSG		8192	/* largest datagram either side sends or accepts */
#define IPC_MAX_FDS		16	/* SCM_RIGHTS per message */
#define IPC_MAX_GIDS		16

/* The device node every odpemu device names (odpemu/verbs_types.h, public: compat/ takes
 * it from there). */
#define IPC_DEVNODE_DIR		ODPEMU_DEVNODE_DIR
#define IPC_DEVNODE_NAME	ODPEMU_DEVNODE_NAME
#define IPC_MAX_ADVISE_SGE	16
#define IPC_MAX_MR_SEGS		IPC_MAX_FDS
#define IPC_ERR_LEN		160
#define IPC_NAME_LEN		64

#define IPC_OPS(X) \
	X(HELLO, 1) X(QUERY_DEVICE, 2) X(QUERY_PORT, 3) X(ALLOC_PD, 4) X(DEALLOC_PD, 5) \
	X(REG_MR, 6) X(DEREG_MR, 7) X(ADVISE_MR, 8) X(CREATE_CHANNEL, 9) \
	X(DESTROY_CHANNEL, 10) X(CREATE_CQ, 11) X(DESTROY_CQ, 12) X(CREATE_SRQ, 13) \
	X(MODIFY_SRQ, 14) X(DESTROY_SRQ, 15) X(CREATE_QP, 16) X(MODIFY_QP, 17) \
	X(QUERY_QP, 18) X(DESTROY_QP, 19) X(COUNTERS, 20) X(INJECT, 21) X(GET_INJECT, 22) \
	X(CM_CHANNEL, 23) X(CM_LISTEN, 24) X(CM_CONNECT, 25) X(CM_ACCEPT, 26) \
	X(CM_REJECT, 27) X(CM_ESTABLISH, 28) X(CM_DISCONNECT, 29) X(CM_DESTROY, 30) \
	X(SUPERVISE, 31) X(WATCH_CREATE, 32) X(WATCH_DESTROY, 33) X(LEASE_ACK, 34) \
	X(RESTORE_MR, 35) X(CLIENT_INFO, 36) X(CLIENTS, 37) X(HOST_REPORT, 38) \
	X(UNSUPERVISE, 39) X(RESIZE_CQ, 40) X(MR_SWAP_KEYS, 41) X(ALLOC_MW, 42) \
	X(DEALLOC_MW, 43) X(ATTACH_MCAST, 44) X(DETACH_MCAST, 45) X(IMPORT_DEVICE, 46) \
	X(IMPORT_PD, 47) X(IMPORT_MR, 48) X(CM_BIND, 49)
enum ipc_op {
#define IPC_OP_ENUM_(n, v) IPC_##n = v,
	IPC_OPS(IPC_OP_ENUM_)
#undef IPC_OP_ENUM_
	IPC_OP_MAX
};

struct ipc_hdr {
	uint16_t version;	/* IPC_VERSION */
	uint16_t op;		/* enum ipc_op */
	uint32_t len;		/* bytes of the whole message, header included */
	uint32_t seq;		/* chosen by the client, echoed in the reply */
	int32_t status;		/* reply: 0 or -errno; request: 0 */
	uint32_t handle;	/* the object the op acts on (0: none) */
	uint32_t pad;
};

/* Error replies may carry a human line saying what went wrong and what to do. */
struct ipc_err_body {
	char msg[IPC_ERR_LEN];
};

/* ---- HELLO: the first request of a session ----
 * Request: optional fd = the client's userfaultfd (UFFDIO_API done with the features of
 * IPC_UFFD_FEATURES), so the daemon sees unmaps, discards and remaps of MR memory.
 * Reply fds: [0] async event pipe (read end), [1] doorbell eventfd, [2] status page memfd
 * (map read-only, sizeof(struct ipc_status_page)), [3] the session's doorbell page memfd
 * (map read-write, sizeof(struct ipc_db_page): ipc_db.h). */
struct ipc_hello_req {
	uint32_t client_version;	/* IPC_VERSION again, for the log */
	uint32_t flags;			/* IPC_HELLO_* */
};
/* HELLO's fds with IPC_HELLO_HAS_UFFD: [0] the process's userfaultfd, shared by every
 * device the process opens (one VMA can belong to one userfaultfd): the daemon registers
 * ranges on it and never reads it; [1] a SOCK_SEQPACKET socket on which the library's
 * relay thread forwards every event it reads from the userfaultfd, to every device of
 * the process: messages of whole struct uffd_msg records (at most IPC_UFFD_RELAY_MSGS). */
#define IPC_HELLO_HAS_UFFD	1u
/* HELLO's fd with IPC_HELLO_HAS_RELAY (no userfaultfd here: refused by the kernel or a
 * container's seccomp profile): [0] the relay socket alone. Mapping changes then come by
 * the seccomp route (docs/emu.md, "MMU notifier"): the daemon that supervises the process
 * (IPC_SUPERVISE) invalidates its own MRs for each held call before letting it run, and
 * sends the range back on its relay socket as a uffd_msg (UFFD_EVENT_UNMAP; REMAP's two
 * places as two); the library forwards it to every other device of the process. */
#define IPC_HELLO_HAS_RELAY	2u
#define IPC_UFFD_RELAY_MSGS	16
/* HELLO's last fd with IPC_HELLO_HAS_CMD_FD: the client's own end of this connection,
 * the context's cmd_fd. The daemon keeps its identity (st_dev, st_ino; the first session
 * to show an end keeps it: -EEXIST for another) and closes its copy at once (a copy kept
 * would hold the connection open), so that IMPORT_DEVICE can find the session by a copy
 * of that fd, as ibv_import_device finds a ucontext by a dup of its uverbs fd. */
#define IPC_HELLO_HAS_CMD_FD	4u
/* What the library asks of its userfaultfd (UFFDIO_API): the non-cooperative events, and
 * write-protect registration of shmem (pinned MRs' memfds). The daemon registers ranges
 * in write-protect mode and never protects a page, so no ordinary fault is intercepted. */
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM (1 << 12)	/* Linux 5.19 (Ubuntu 22.04's headers: 5.15) */
#endif
/* Asked for too when the kernel has it: write-protect-only registration of any VMA, file
 * mappings included. Without it (before 6.7) file mappings take the seccomp route too. */
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1ull << 15)	/* Linux 6.7 (Debian 12's headers are 6.1) */
#endif
#define IPC_UFFD_FEATURES (UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | \
	UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_WP_HUGETLBFS_SHMEM)
/* CLIENT_INFO, right after HELLO once the library has named the daemon its tracer (Yama):
 * what the client could give. The daemon reads probe_addr of the client (process_vm_readv,
 * as its DMA does), which must hold probe_value, and answers 0 or -errno (-EIO: another
 * value); it keeps the record for CLIENTS and logs a failure with its remedy. */
struct ipc_client_info_req {
	uint64_t uffd_features;		/* UFFDIO_API features of its userfaultfd; 0: none */
	uint64_t probe_addr, probe_value;
	uint32_t notifier;		/* enum ipc_notifier: how mapping changes reach us */
	uint32_t pad;
};
/* How a process's mapping changes reach a device's daemon (its MMU notifier). */
enum ipc_notifier {
	IPC_NOTIFIER_NONE = 0,		/* not at all: no invalidation */
	IPC_NOTIFIER_UFFD = 1,		/* the process's userfaultfd, relayed */
	IPC_NOTIFIER_SECCOMP = 2,	/* held calls, this daemon supervises the process */
	IPC_NOTIFIER_SECCOMP_RELAYED = 3, /* held calls supervised by another device's daemon */
	/* the userfaultfd, and held calls for the file mappings it cannot watch (a kernel
	 * without UFFD_FEATURE_WP_ASYNC) */
	IPC_NOTIFIER_UFFD_AND_SECCOMP = 4,
};
struct ipc_client_info_rep {
	int32_t process_vm_err;
	uint32_t pad;
};
/* CLIENTS: the records of the device's client processes, from index start on (paging as
 * COUNTERS). */
struct ipc_clients_req {
	uint32_t start;
	uint32_t pad;
};
#define IPC_CLIENT_REPORTED	1u	/* CLIENT_INFO came: the fields below are its */
#define IPC_CLIENT_NOTIFIER	2u	/* its userfaultfd came with HELLO */
#define IPC_CLIENT_SUPERVISED	4u	/* its seccomp listener came (SUPERVISE) */
struct ipc_client_rec {
	uint32_t pid, session;
	uint64_t uffd_features;
	int32_t process_vm_err;
	uint32_t flags;			/* IPC_CLIENT_* */
	char comm[16];			/* /proc/PID/comm */
	uint32_t notifier;		/* enum ipc_notifier, as CLIENT_INFO said */
	uint32_t pad;
};
struct ipc_clients_rep {
	uint32_t n;			/* records that follow */
	uint32_t more;			/* 1: ask again with start += n */
	struct ipc_client_rec r[];
};
#define IPC_MAX_CLIENTS \
	((IPC_MAX_MSG - sizeof(struct ipc_hdr) - 8) / sizeof(struct ipc_client_rec))
/* HOST_REPORT (no body): the daemon's host feature report, probed at its start
 * (emu/check.h), a row each. */
struct ipc_host_row {
	char name[32];			/* the row's name (an ODPEMU_MASK word) */
	uint32_t verdict;		/* enum odpemu_host_verdict */
	uint32_t masked;		/* 1: absent because ODPEMU_MASK names it */
	char detail[160];		/* what the probe saw */
};
struct ipc_host_rep {
	uint32_t n;
	uint32_t pad;
	struct ipc_host_row r[];
};
#define IPC_MAX_HOST_ROWS ((IPC_MAX_MSG - sizeof(struct ipc_hdr) - 8) / sizeof(struct ipc_host_row))
struct ipc_hello_rep {
	uint32_t session;		/* the nic's client id of this session */
	uint32_t daemon_pid;		/* for prctl(PR_SET_PTRACER) under Yama */
	char name[IPC_NAME_LEN];	/* device name */
	uint32_t notifier;		/* 1: MR memory changes are tracked (uffd accepted) */
	uint32_t traits;		/* IPC_TRAIT_*: what the device's provider does */
};

/* The library's part of a device personality (nic/personality.h). */
#define IPC_TRAIT_CQ_CLEAN	1u	/* drop a QP's completions at reset and destroy */

/* ---- IMPORT_DEVICE: instead of HELLO, the first request of a connection ----
 * Body and fds as HELLO's (struct ipc_hello_req; its notifier fds for this process), then
 * one more fd: a copy of the cmd_fd of the context to import (another session's HELLO
 * IPC_HELLO_HAS_CMD_FD end). The connection becomes a session of its own (its process,
 * event pipe, doorbells) sharing that session's handles: objects either makes are both's,
 * and they live until the last session sharing them closes (ibv_import_device(3)).
 * Reply: HELLO's. -ENODEV: no live session of this device has that end (or it is no
 * socket); -EPERM: the importer's uid is not the session's, nor root.
 * IMPORT_PD / IMPORT_MR: hdr.handle names a PD / an MR of the shared handles (-ENOENT
 * else); IMPORT_PD's reply is struct ipc_handle_rep, IMPORT_MR's below (ibv_import_mr(3):
 * the same keys and length; the caller's struct has no address). Nothing changes at the
 * daemon: an unimport is the library's alone. */
struct ipc_import_mr_rep {
	uint32_t handle, lkey, rkey;
	uint32_t access;		/* enum odpemu_access_flags, as registered */
	uint64_t va, len;
	uint32_t pd;			/* the MR's PD */
	uint32_t pad;
};

/* The daemon's status page, read-only for clients. */
struct ipc_status_page {
	uint32_t magic;			/* IPC_STATUS_MAGIC */
	uint32_t version;
	_Alignas(64) _Atomic uint32_t sleeping;	/* 1: the loop may sleep: ring the doorbell */
	_Alignas(64) _Atomic uint32_t fatal;	/* 1: the device is dead (DEVICE_FATAL sent) */
};
#define IPC_STATUS_MAGIC	0x6f647065u	/* "odpe" */

/* ---- queries ---- */
struct ipc_device_rep {
	uint64_t max_mr_size, page_size_cap;
	uint32_t vendor_id, vendor_part_id, hw_ver;
	uint32_t max_qp, max_qp_wr, max_sge, max_cq, max_cqe, max_mr, max_pd;
	uint32_t max_srq, max_srq_wr, max_srq_sge, max_inline_data;
	uint32_t max_qp_rd_atom, max_qp_init_rd_atom, max_pkeys, gid_tbl_len;
	uint64_t odp_general_caps;
	uint32_t odp_rc_caps, odp_uc_caps, odp_ud_caps;
	uint32_t max_mw;
	uint32_t max_mcast_grp, max_mcast_qp_attach, max_total_mcast_qp_attach;
	uint32_t pad;
	uint64_t node_guid;
	uint64_t device_cap_flags;	/* ODPEMU_DEVICE_* (odpemu/verbs_types.h) */
	char fw_ver[64];
};
struct ipc_port_rep {
	uint32_t state;			/* enum odpemu_port_state */
	uint32_t max_mtu, active_mtu;	/* enum odpemu_mtu */
	uint32_t netdev_mtu;
	uint32_t gid_tbl_len;		/* valid entries in gids */
	uint32_t netdev_ifindex;	/* in the daemon's network namespace */
	char netdev[IPC_NAME_LEN];
	uint8_t gids[IPC_MAX_GIDS][16];
	uint32_t udp_port;
	uint32_t fault_policy;		/* the daemon's default (enum odpemu_fault_policy) */
	uint64_t fault_around;		/* bytes of an ODP MR's fault-around window */
	char personality[16];		/* odpemud --personality (nic/personality.c) */
};

/* ---- PD ---- reply body: struct ipc_handle_rep */
struct ipc_handle_rep {
	uint32_t handle;
	uint32_t pad;
};

/* ---- MR ----
 * Pinned MRs: segs[] say which file holds which part of [va, va+len) page-rounded, in
 * order, page aligned, covering the rounded range; fd i belongs to seg i. The files are
 * the process's own pages: memfds the library moved private memory into (sealed against
 * shrinking), or the shared objects the process maps. ODP MRs: nsegs 0, no fds.
 * IPC_REG_MR_BY_ADDRESS: a pinned MR over memory the daemon cannot hold (hugetlb, an
 * unreachable shared object): no segments; DMA follows the process's current mapping
 * (as for ODP) and no decoherence is detected. */
#define IPC_REG_MR_BY_ADDRESS	1u
struct ipc_mr_seg {
	uint64_t len;			/* bytes of the rounded range this fd backs */
	uint64_t fd_offset;		/* where in the memfd */
};
struct ipc_reg_mr_req {
	uint64_t va, len;
	uint32_t access;		/* enum odpemu_access_flags */
	uint32_t pd;
	uint32_t nsegs;
	uint32_t flags;			/* IPC_REG_MR_* */
	struct ipc_mr_seg segs[];	/* nsegs */
};
struct ipc_reg_mr_rep {
	uint32_t handle, lkey, rkey;
	uint32_t pad;
};
/* MR_SWAP_KEYS, handle: an MR; it and `other` trade keys (ibv_rereg_mr). Reply: the
 * handle's MR's new keys (struct ipc_reg_mr_rep, handle = the request's). */
struct ipc_mr_swap_req {
	uint32_t other, pad;
};
struct ipc_advise_req {			/* handle: PD */
	uint32_t advice;		/* enum odpemu_advise_mr_advice */
	uint32_t flags;			/* ODPEMU_ADVISE_MR_FLAG_FLUSH: reply when resolved */
	uint32_t nsge;
	uint32_t pad;
	struct { uint64_t addr; uint32_t length, lkey; } sge[IPC_MAX_ADVISE_SGE];
};

/* ---- MW ---- (IBA 10.6.7) reply: struct ipc_alloc_mw_rep; DEALLOC_MW: handle, no body */
struct ipc_alloc_mw_req {
	uint32_t pd;
	uint32_t type;			/* enum odpemu_mw_type */
};
struct ipc_alloc_mw_rep {
	uint32_t handle, rkey;
};

/* ---- rings ----
 * One ring: a header then `size` slots of `slot` bytes. prod/cons are free-running
 * counters; slot i is at i & (size - 1). */
struct ipc_ring {
	_Alignas(64) _Atomic uint32_t prod;
	_Alignas(64) _Atomic uint32_t cons;
	_Alignas(64) uint32_t size;	/* power of two */
	uint32_t slot;			/* bytes per slot, multiple of 8 */
	uint32_t offset;		/* of slot 0 from the start of the memfd */
	uint32_t pad;
	/* CQ rings only: the client's arm requests (ibv_req_notify_cq). */
	_Alignas(64) _Atomic uint32_t arm_seq;	/* client: +1 per request */
	_Atomic uint32_t arm_solicited;		/* client: 1 for solicited-only */
	_Atomic uint32_t arm_done;		/* daemon: arm_seq it has taken */
	_Atomic uint32_t overflow;		/* daemon: 1 once the CQ overflowed (CQ_ERR) */
};

struct ipc_sge {
	uint64_t addr;
	uint32_t length, lkey;
};

/* An SQ slot: the WR, then num_sge struct ipc_sge, then inline bytes for
 * ODPEMU_SEND_INLINE (inline_len of them; the SGE array is then empty). */
struct ipc_swqe {
	uint64_t wr_id;
	uint32_t opcode;		/* enum odpemu_wr_opcode */
	uint32_t send_flags;		/* enum odpemu_send_flags */
	uint32_t num_sge;
	uint32_t inline_len;
	uint32_t imm_data;		/* host order (nic's convention) */
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add, swap;
	uint32_t flush_len;
	uint8_t flush_type, flush_level;
	uint8_t pad[2];
	uint8_t ud_dgid[16];
	uint32_t remote_qpn, remote_qkey;
	struct ipc_sge sge[];
};
/* An RQ/SRQ slot. */
struct ipc_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pad;
	struct ipc_sge sge[];
};
/* A CQ slot (struct nic_wc's fields, fixed width), with the CLOCK_MONOTONIC time the
 * daemon moved it into the ring (ibv completion timestamps, in nanoseconds). */
struct ipc_cqe {
	uint64_t wr_id;
	uint32_t status, opcode, byte_len, imm_data, qp_num, src_qp, wc_flags, vendor_err;
	uint64_t ts_ns;
};

/* ---- CQ ---- request handle: 0, body: */
/* IPC_CQ_IGNORE_OVERRUN: a completion finding the ring full is lost, and the CQ goes on
 * (nic_cq_set_overrun), instead of CQ_ERR. */
enum ipc_cq_flags { IPC_CQ_IGNORE_OVERRUN = 1u << 0 };
struct ipc_create_cq_req {
	uint32_t cqe;
	uint32_t channel;		/* completion channel handle, 0: none */
	uint32_t flags;			/* enum ipc_cq_flags; others: -EINVAL */
	uint32_t pad;
};
/* Reply fd: the ring memfd (one struct ipc_ring at offset 0). */
struct ipc_create_cq_rep {
	uint32_t handle, cqe;		/* cqe: entries actually allocated */
	uint32_t map_len, pad;
};
/* RESIZE_CQ, handle: the CQ. The daemon makes a ring of at least cqe slots, moves the
 * completions the client has not consumed into it (same free-running indices, so the
 * client's head stays valid; the arm counters come along) and from then on produces
 * into it only. The client must not consume from the old ring while the request is out
 * (the library holds the CQ's poll lock): it maps the new ring and unmaps the old one.
 * Work posted on the CQ's QPs before the request is taken first: what it completed
 * counts as waiting. -EINVAL: cqe 0, above max_cqe, or below the completions waiting;
 * -EPROTO: the ring's cons is ahead of its prod.
 * Reply fd: the new ring memfd; reply body: struct ipc_create_cq_rep (handle: the CQ). */
struct ipc_resize_cq_req {
	uint32_t cqe;
	uint32_t pad;
};
/* CREATE_CHANNEL reply fd: the channel pipe's read end. */
struct ipc_cq_event {
	uint32_t cq;			/* handle */
	uint32_t pad;
};

/* ---- SRQ ---- */
struct ipc_create_srq_req {
	uint32_t pd, max_wr, max_sge, srq_limit;
};
/* Reply fd: ring memfd (one ipc_ring at 0). */
struct ipc_create_srq_rep {
	uint32_t handle, max_wr, max_sge, map_len;
};
struct ipc_modify_srq_req {		/* handle: SRQ */
	uint32_t srq_limit;		/* arm the limit event */
	uint32_t pad;
};

/* ---- QP ---- */
struct ipc_create_qp_req {
	uint32_t pd, send_cq, recv_cq, srq;	/* srq 0: none */
	uint32_t qp_type;		/* enum odpemu_qp_type */
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data;
	uint32_t sq_sig_all;
	uint32_t fault_policy;		/* enum odpemu_fault_policy (0: the daemon's) */
};
/* Reply fd: ring memfd: SQ ring at 0, RQ ring at rq_offset (none with an SRQ). */
struct ipc_create_qp_rep {
	uint32_t handle, qp_num;
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data;
	uint32_t rq_offset, map_len;
	uint32_t pad;
	uint64_t device_cap_flags;	/* the device's: what post_send may ask (lib/post.c) */
};
/* MODIFY_QP / QUERY_QP reply: the attributes in nic's layout, fixed width. */
struct ipc_qp_attr {
	uint32_t qp_state, cur_qp_state, path_mtu, qkey, rq_psn, sq_psn, dest_qp_num;
	uint32_t qp_access_flags;
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index, hop_limit, traffic_class, is_global, port_num;
	uint8_t en_sqd_async_notify, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer;
	uint8_t timeout, retry_cnt, rnr_retry;
	uint16_t pkey_index;
	uint16_t pad;
};
struct ipc_modify_qp_req {		/* handle: QP */
	uint32_t mask;			/* enum odpemu_qp_attr_mask */
	uint32_t pad;
	struct ipc_qp_attr attr;
};

/* ---- UD multicast (nic/mcast.c) ----
 * ATTACH_MCAST / DETACH_MCAST, handle: a UD QP; no reply body. Errors as ibv_attach_mcast
 * on a kernel device: -EINVAL (not UD, GID not multicast; detach: not attached), -ENOMEM
 * (a limit of QUERY_DEVICE's). DESTROY_QP of an attached QP: -EBUSY (uverbs_free_qp);
 * the session's end detaches its QPs. */
struct ipc_mcast_req {
	uint8_t gid[16];
	uint16_t lid;			/* ignored on RoCE (ib_attach_mcast) */
	uint8_t pad[6];
};

/* ---- counters ----
 * Request: scope and object (handle of the session's object; or, with IPC_CTR_ANY, a QP
 * number / MR lkey of any session, for odpemu-ctl). Reply: n name/value pairs. LIST: every
 * QP and MR of the device ("qp <pid>" = QP number, "mr <pid>" = lkey), of the process
 * whose pid is id (0: all), QPs or MRs only with IPC_CTR_ONLY_*; a page costs the daemon
 * what it holds, not the objects before it. */
enum ipc_ctr_scope { IPC_CTR_DEV = 0, IPC_CTR_QP = 1, IPC_CTR_MR = 2, IPC_CTR_LIST = 3 };
#define IPC_CTR_ANY 1u
#define IPC_CTR_ONLY_QPS 2u
#define IPC_CTR_ONLY_MRS 4u
struct ipc_counters_req {
	uint32_t scope;			/* enum ipc_ctr_scope */
	uint32_t flags;			/* IPC_CTR_ANY */
	uint32_t id;			/* QP number / lkey with IPC_CTR_ANY */
	uint32_t start;			/* first counter index wanted (paging) */
};
#define IPC_CTR_NAME 40
struct ipc_counter {
	char name[IPC_CTR_NAME];
	uint64_t value;
};
struct ipc_counters_rep {
	uint32_t n;			/* entries that follow */
	uint32_t more;			/* 1: ask again with start += n */
	struct ipc_counter c[];
};
#define IPC_MAX_COUNTERS ((IPC_MAX_MSG - sizeof(struct ipc_hdr) - 8) / sizeof(struct ipc_counter))

/* ---- runtime injection: the same words as odpemud's flags ----
 * INJECT sets key to value; GET_INJECT (value ignored) replies with the same struct
 * holding the current value, in the flag's syntax. */
struct ipc_inject_req {
	char key[32];			/* "fault-delay-us", "fault-fail-rate", "evict-rate",
					 * "fault-policy", "wire-loss", ... (emu/inject/wire.h) */
	char value[64];
};

/* ---- the connection manager (emu/cm/; docs/rdmacm.md) ----
 * Every request names its object in hdr.handle where it acts on one; the requests that
 * make one (CM_CHANNEL, CM_LISTEN, CM_CONNECT) reply with struct ipc_handle_rep.
 * CM_CHANNEL: fd[0] = the daemon's end of a SOCK_SEQPACKET socket on which it sends one
 *   struct ipc_cm_event per event, for the listeners and connections made on it.
 *   CM_DESTROY of it closes the daemon's end.
 * CM_BIND (struct ipc_cm_listen_req, backlog and bound unused): reserves (port space,
 *   port, address or any) as rdma_bind_addr does; the reply is struct ipc_cm_listen_rep
 *   (port 0 asked: the one picked). Nothing is heard on it until a CM_LISTEN names it.
 * CM_LISTEN (struct ipc_cm_listen_req): REQs for (port space, port, address or any) become
 *   CONNECT_REQUEST events; with `bound`, that CM_BIND reservation starts listening (its
 *   address and port; the request's are ignored). Two reservations of a port clash by
 *   the kernel's rules (cma_check_port): not when both have IPC_CM_REUSEADDR and neither
 *   listens, nor when both are IPC_CM_AFONLY of different families; else -EADDRNOTAVAIL
 *   if either is for any address, -EADDRINUSE if both are for the same one.
 * CM_CONNECT (struct ipc_cm_connect_req): the daemon sends a REQ to dst's QP1; the
 *   connection's events follow: CONNECT_RESPONSE (the REP: the peer's
 *   QP in ipc_cm_event.peer), REJECTED (status: the IB reject reason), UNREACHABLE
 *   (-ETIMEDOUT: no answer after the retries).
 * CM_ACCEPT (hdr.handle: a connection from a CONNECT_REQUEST; struct ipc_cm_accept_req):
 *   the REP; ESTABLISHED follows the peer's RTU.
 * CM_REJECT (hdr.handle: such a connection; struct ipc_cm_private): REJ, reason
 *   CONSUMER_DEFINED, with the private data.
 * CM_ESTABLISH (hdr.handle: a connection after CONNECT_RESPONSE; struct ipc_cm_private):
 *   the RTU. The connection is established on both sides.
 * CM_DISCONNECT (hdr.handle; struct ipc_cm_private): DREQ, or DREP when the peer's DREQ
 *   came first. DISCONNECTED on the DREP (or when the DREQ is given up), TIMEWAIT_EXIT after
 *   time-wait.
 * CM_DESTROY (hdr.handle: a channel, listener or connection): gone; a connection still
 *   up is disconnected (DREQ), one still being set up is rejected (REJ), as when the
 *   session ends.
 */
#define IPC_CM_PRIVATE_MAX 224		/* the RTU's and DREP's private data, the largest */
/* Event types: rdma_cm's numbering (enum rdma_cm_event_type), those the daemon sends. */
#define IPC_CM_EVENTS(X) \
	X(CONNECT_REQUEST, 4) X(CONNECT_RESPONSE, 5) X(CONNECT_ERROR, 6) X(UNREACHABLE, 7) \
	X(REJECTED, 8) X(ESTABLISHED, 9) X(DISCONNECTED, 10) X(TIMEWAIT_EXIT, 15)
enum ipc_cm_event_type {
#define IPC_CM_EV_ENUM_(n, v) IPC_CM_EV_##n = v,
	IPC_CM_EVENTS(IPC_CM_EV_ENUM_)
#undef IPC_CM_EV_ENUM_
};
/* An IP endpoint as a GID (IPv4-mapped for IPv4) and a port. */
struct ipc_cm_addr {
	uint8_t gid[16];
	uint16_t port;
	uint8_t pad[6];
};
/* A QP as the CM messages describe it (REQ, REP). */
struct ipc_cm_qp {
	uint32_t qpn;			/* 24 bits */
	uint32_t psn;			/* starting PSN, 24 bits */
	uint32_t qkey;			/* UD only */
	uint8_t qp_type;		/* enum odpemu_qp_type: RC (UD comes with SIDR) */
	uint8_t responder_resources;	/* max_dest_rd_atomic offered */
	uint8_t initiator_depth;	/* max_rd_atomic asked */
	uint8_t retry_count;		/* 3 bits */
	uint8_t rnr_retry_count;	/* 3 bits */
	uint8_t srq;			/* the receive side is an SRQ */
	uint8_t flow_control;		/* end-to-end flow control */
	uint8_t mtu;			/* enum odpemu_mtu */
};
struct ipc_cm_private {
	uint16_t len;			/* at most the message's size (cm_mad.h) */
	uint8_t pad[6];
	uint8_t data[IPC_CM_PRIVATE_MAX];
};
/* rdma_set_option's RDMA_OPTION_ID_REUSEADDR and _AFONLY, as the reservation has them. */
enum ipc_cm_port_flags { IPC_CM_REUSEADDR = 1u << 0, IPC_CM_AFONLY = 1u << 1 };
struct ipc_cm_listen_req {
	uint32_t channel;
	uint16_t ps;			/* port space: 0x0106 TCP, 0x0111 UDP, 0x013F IB */
	uint16_t backlog;		/* connections waiting for accept (0: 128) */
	uint64_t user;			/* echoed in its CONNECT_REQUEST events */
	struct ipc_cm_addr addr;	/* all-zero GID: any address of this device */
	uint32_t bound;			/* CM_LISTEN: a CM_BIND reservation to listen on, or 0 */
	uint16_t family;		/* AF_INET, AF_INET6, or 0: any (the address's family
					 * is unknown, e.g. odpemu_cm_listen) */
	uint8_t flags;			/* enum ipc_cm_port_flags */
	uint8_t pad;
};
/* CM_LISTEN's reply: the listener, and its port (port 0 asked for one: the first free
 * from IPC_CM_EPHEMERAL_FIRST). */
#define IPC_CM_EPHEMERAL_FIRST 49152
struct ipc_cm_listen_rep {
	uint32_t handle;
	uint16_t port;
	uint16_t pad;
};
struct ipc_cm_connect_req {
	uint32_t channel;
	uint16_t ps;
	uint16_t pad;
	uint64_t user;			/* echoed in the connection's events */
	struct ipc_cm_addr src, dst;	/* src: this device's address, the source port */
	struct ipc_cm_qp qp;		/* ours */
	struct ipc_cm_private priv;	/* after rdma_cm's IP header: at most 56 bytes */
};
struct ipc_cm_accept_req {
	uint32_t channel;		/* where this connection's events go from now on */
	uint32_t pad;
	uint64_t user;
	struct ipc_cm_qp qp;
	struct ipc_cm_private priv;	/* at most 196 bytes (the REP's) */
};
struct ipc_cm_event {
	uint32_t type;			/* enum ipc_cm_event_type */
	int32_t status;			/* REJECTED: the IB reject reason; else 0 or -errno */
	uint32_t conn;			/* the connection (a new one for CONNECT_REQUEST) */
	uint32_t listener;		/* CONNECT_REQUEST: whose */
	uint64_t user;			/* the connection's (CONNECT_REQUEST: the listener's) */
	struct ipc_cm_addr src, dst;	/* CONNECT_REQUEST: the peer's and ours, from rdma_cm's
					 * IP header (ports included) */
	struct ipc_cm_qp peer;		/* CONNECT_REQUEST, CONNECT_RESPONSE: the peer's QP */
	struct ipc_cm_private priv;	/* the message's private data (CONNECT_REQUEST: after
					 * the IP header) */
};

/* ---- the mapping-change notifier (docs/regcache.md) ----
 * SUPERVISE: no body; fd [0] = the listener of the seccomp filter the process installed
 * (SECCOMP_FILTER_FLAG_NEW_LISTENER): the daemon answers every mapping change the filter
 * holds, after writing the Z words of the watches it touches. One per process and daemon.
 * WATCH_CREATE: body below, reply struct ipc_handle_rep. WATCH_DESTROY: handle.
 * UNSUPERVISE: no body; the daemon lets go of the listener (closes it, answers no more
 * held calls: they wait in the listener for the next supervisor) if no watch, lease or
 * held call needs it, else -EBUSY. The library moves the listener so, from the daemon
 * that took it for the seccomp route alone to the one of the first watch or lease. */
/* IPC_SUPERVISE (the listener fd with it): where the daemon writes the notification id of
 * each call it holds for a lease (0 when it lets it go), so that the library's fallback
 * can let them go if the daemon dies holding them (docs/regcache.md). */
#define IPC_HELD_SLOTS 64
struct ipc_supervise_req {
	uint64_t held;			/* address of IPC_HELD_SLOTS 64-bit words */
};
struct ipc_watch_req {
	uint64_t addr, len;		/* the watched range */
	uint64_t z;			/* where to write a non-zero word when it changes */
};

/* ---- async events ---- */
struct ipc_event {
	uint32_t type;			/* enum odpemu_event_type */
	uint32_t handle;		/* QP/CQ/SRQ/MR handle, or port number */
};

#endif
