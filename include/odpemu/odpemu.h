/* SPDX-License-Identifier: MIT */
/*
 * libodpemu — the verbs API of odpemu's soft-HCA (the daemon odpemud).
 *
 * Shaped like libibverbs: same objects, same call order, same return contracts, so code
 * written against libibverbs ports by renaming ibv_ to odpemu_, and a libibverbs-ABI shim
 * stays thin. Differences are marked "odpemu:" below.
 *
 * RETURN CONTRACTS (as libibverbs):
 *  - create/open/alloc/reg functions return the object, or NULL with errno set;
 *  - destroy/modify/query functions return 0 or an errno value (positive), and set errno;
 *  - post functions return 0 or an errno value and set *bad_wr to the first WR not posted;
 *  - odpemu_poll_cq returns the number of completions (>= 0) or a negative value when the
 *    device is gone.
 *
 * DEVICES. A device is a running odpemud: its control socket in $ODPEMU_RUNDIR (default
 * /run/odpemu for root, $XDG_RUNTIME_DIR/odpemu otherwise). Opening it starts a session;
 * when the process exits or crashes the daemon frees everything the session created.
 *
 * FORK. A session belongs to the process that opened the device. In a child, every
 * context inherited from the parent is unusable: calls fail with ENODEV (odpemu_poll_cq
 * returns -1) without touching the daemon or the rings, and the child's copy of the
 * control socket is closed at the fork, so the parent's session still ends with the
 * parent. A child that wants the device opens it again.
 *
 * THREADS. Thread-safe as libibverbs is: control calls serialise on the context; post and
 * poll on one queue from several threads must be serialised by the caller, as libibverbs'
 * providers do internally (odpemu takes a per-queue lock, so concurrent calls are safe).
 *
 * MEMORY. ODPEMU_ACCESS_ON_DEMAND MRs touch nothing at registration; the daemon reads and
 * writes the process's memory when traffic needs it, faulting pages in through its IO page
 * table. Pinned MRs (no ON_DEMAND) behave like hardware pins: registration moves the pages
 * of the (page-rounded) range into shared memory the daemon holds, so after the process
 * unmaps and remaps that range the MR still reaches the old pages and the process gets an
 * ODPEMU_EVENT_MR_DECOHERENCE async event. Private memory is moved into shared memory the
 * daemon maps; shared memory (files, shmem, memfds) is mapped by the daemon as it is;
 * memory the daemon cannot hold (hugetlb) is registered by address, the weaker guarantee
 * of docs/emu.md (DMA follows the current mapping, no decoherence event). See docs/emu.md
 * for the caveats (threads writing the range during registration, fork).
 */
#ifndef ODPEMU_ODPEMU_H
#define ODPEMU_ODPEMU_H

#include <stddef.h>
#include <stdint.h>

#include "odpemu/verbs_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- devices ---- */

struct odpemu_device;	/* opaque: a name and a control socket */

/* The running devices (sockets that accept a connection, and sockets this process may not
 * connect to: opening one fails with EACCES), NULL-terminated; *num_devices
 * (may be NULL) gets the count. NULL with errno on failure (ENOMEM). An empty list is not a
 * failure. Free with odpemu_free_device_list. */
struct odpemu_device **odpemu_get_device_list(int *num_devices);
void odpemu_free_device_list(struct odpemu_device **list);
/* "odp0". */
const char *odpemu_get_device_name(const struct odpemu_device *device);

struct odpemu_context {
	struct odpemu_device *device;
	int async_fd;		/* readable when an async event waits (poll it) */
	int num_comp_vectors;	/* 1 */
};

/* Connect to the daemon. NULL with errno: ENODEV (daemon not running: start odpemud),
 * EPROTO (daemon of another version), EACCES (socket permissions: only root, the daemon's
 * user and the members of the socket's group, odpemud --group, may connect), ENOMEM. */
struct odpemu_context *odpemu_open_device(struct odpemu_device *device);
/* Close: destroys every object still open on the context (the daemon frees them). */
int odpemu_close_device(struct odpemu_context *context);
/* The context's command fd (ibv_context.cmd_fd): its end of the connection to the daemon.
 * Never close it; a dup of it, or a copy sent to another process (SCM_RIGHTS), imports
 * the context there, and keeps its objects alive while it is open. */
int odpemu_context_cmd_fd(struct odpemu_context *context);
/* ibv_import_device(3): a context of the device session whose cmd_fd this is (a copy of
 * another context's odpemu_context_cmd_fd): its PDs and MRs can be imported, and what
 * either context makes belongs to the one session, which lives until the last context
 * (in any process) closes. On success the context owns cmd_fd (odpemu_close_device closes
 * it); on failure it stays the caller's. NULL with errno: EINVAL (no connected unix
 * socket), ENODEV (no odpemu device's, or no live context's), EPERM (the context is
 * another user's and we are not root), and odpemu_open_device's. */
struct odpemu_context *odpemu_import_device(int cmd_fd);
/* odpemu: the last failure's explanation on this context, from the daemon (e.g. why a
 * modify_qp was refused) or from the library (e.g. why memory cannot be pinned); "" if
 * none. errno stays the verdict; this only says more. Valid until the next failing call
 * on the context (any thread); never NULL. */
const char *odpemu_last_error(struct odpemu_context *context);

struct odpemu_odp_caps {
	uint64_t general_caps;	/* enum odpemu_odp_general_caps */
	struct {
		uint32_t rc_odp_caps, uc_odp_caps, ud_odp_caps; /* enum odpemu_odp_transport_caps */
	} per_transport_caps;
};

struct odpemu_device_attr {
	char fw_ver[64];
	uint64_t node_guid;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id, vendor_part_id, hw_ver;
	int max_qp, max_qp_wr, max_sge, max_cq, max_cqe, max_mr, max_pd;
	int max_srq, max_srq_wr, max_srq_sge;
	int max_mw;			/* memory windows, type 1 and 2 */
	int max_mcast_grp, max_mcast_qp_attach, max_total_mcast_qp_attach;	/* UD multicast */
	int max_qp_rd_atom, max_qp_init_rd_atom;
	uint32_t max_inline_data;	/* odpemu: ibv reports it per QP only */
	uint16_t max_pkeys;
	uint8_t phys_port_cnt;		/* 1 */
	struct odpemu_odp_caps odp_caps;	/* ibv_query_device_ex's odp_caps */
	uint64_t device_cap_flags;	/* ODPEMU_DEVICE_* (device_cap_flags_ex) */
};
/* 0 or errno (ENODEV when the daemon is gone). */
int odpemu_query_device(struct odpemu_context *context, struct odpemu_device_attr *attr);

enum odpemu_link_layer { ODPEMU_LINK_LAYER_ETHERNET = 2 };

struct odpemu_port_attr {
	enum odpemu_port_state state;
	enum odpemu_mtu max_mtu, active_mtu;
	int gid_tbl_len;
	uint8_t link_layer;		/* ODPEMU_LINK_LAYER_ETHERNET */
	uint32_t netdev_mtu;		/* odpemu: the interface's MTU */
	char netdev[64];		/* odpemu: the interface's name */
	uint32_t netdev_ifindex;	/* odpemu: its index (in the daemon's namespace) */
	enum odpemu_fault_policy fault_policy;	/* odpemu: the daemon's default */
	uint64_t fault_around;		/* odpemu: bytes one ODP page fault maps (power of 2) */
	char personality[16];		/* odpemu: the device it acts as (odpemud --personality) */
};
/* port_num 1 only (EINVAL otherwise). */
int odpemu_query_port(struct odpemu_context *context, uint8_t port_num,
		      struct odpemu_port_attr *attr);

union odpemu_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix, interface_id;	/* big-endian, as ibv_gid */
	} global;
};
/* GID index of port 1: 0 or errno (EINVAL for an index past gid_tbl_len). */
int odpemu_query_gid(struct odpemu_context *context, uint8_t port_num, int index,
		     union odpemu_gid *gid);

/* ---- async events ---- */

struct odpemu_cq;
struct odpemu_qp;
struct odpemu_srq;
struct odpemu_mr;

struct odpemu_async_event {
	union {
		struct odpemu_cq *cq;
		struct odpemu_qp *qp;
		struct odpemu_srq *srq;
		struct odpemu_mr *mr;	/* odpemu: MR_DECOHERENCE */
		int port_num;
	} element;
	enum odpemu_event_type event_type;
};
/* Block until an event arrives (or return EAGAIN at once if async_fd was made
 * non-blocking; EINTR when a signal interrupts the wait). When the daemon dies this returns ODPEMU_EVENT_DEVICE_FATAL, once.
 * 0 or errno. */
int odpemu_get_async_event(struct odpemu_context *context, struct odpemu_async_event *event);
/* Every event must be acknowledged before its object can be destroyed. */
void odpemu_ack_async_event(struct odpemu_async_event *event);

/* ---- PD, MR ---- */

struct odpemu_pd {
	struct odpemu_context *context;
	uint32_t handle;
};
struct odpemu_pd *odpemu_alloc_pd(struct odpemu_context *context);
/* EBUSY while MRs, QPs or SRQs use it. */
int odpemu_dealloc_pd(struct odpemu_pd *pd);

/* ibv_import_pd(3): the PD with this handle of the context's session (another context's
 * pd->handle, after odpemu_import_device). NULL with errno: ENOENT (no such PD), EINVAL.
 * odpemu_dealloc_pd destroys it for everyone; odpemu_unimport_pd frees our struct only. */
struct odpemu_pd *odpemu_import_pd(struct odpemu_context *context, uint32_t handle);
void odpemu_unimport_pd(struct odpemu_pd *pd);

struct odpemu_mr {
	struct odpemu_context *context;
	struct odpemu_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle, lkey, rkey;
};
/* ibv_reg_mr. access: enum odpemu_access_flags. Implicit ODP: addr NULL, length SIZE_MAX,
 * ODPEMU_ACCESS_ON_DEMAND. NULL with errno: EINVAL (flags, REMOTE_WRITE/ATOMIC without
 * LOCAL_WRITE, zero length), EFAULT (pinned: the range is not fully mapped or readable, or
 * not writable while access has LOCAL_WRITE), ENOMEM. ODPEMU_ACCESS_LEASE: see MR leases
 * below (EXDEV, ENODEV as the notifier's). */
struct odpemu_mr *odpemu_reg_mr(struct odpemu_pd *pd, void *addr, size_t length, int access);
/* Safe while traffic is in flight (its keys stop matching at once). Pinned MRs leave the
 * process's pages as they are (shared with nobody once the daemon lets go). */
int odpemu_dereg_mr(struct odpemu_mr *mr);
/* ibv_import_mr(3): the MR with this handle of pd's session: its keys and length, addr
 * NULL (the memory is the registering process's, whoever uses the keys). NULL with errno:
 * ENOENT (no such MR), EINVAL. odpemu_unimport_mr frees our struct only. */
struct odpemu_mr *odpemu_import_mr(struct odpemu_pd *pd, uint32_t handle);
void odpemu_unimport_mr(struct odpemu_mr *mr);
/* ibv_rereg_mr keeping the keys, as rxe and mlx5 do: register the new range, PD or access
 * as `mr`, then have it trade keys with the old MR `old` and deregister `old`. Both must
 * be MRs of one context; leased MRs keep theirs (EBUSY). 0 or errno (EINVAL). */
int odpemu_mr_swap_keys(struct odpemu_mr *mr, struct odpemu_mr *old);

/* ---- memory windows (IBA 10.6.7; ibv_alloc_mw) ----
 * A window is an rkey of its own over part of an MR registered with
 * ODPEMU_ACCESS_MW_BIND, with its own remote access. It is bound by an
 * ODPEMU_WR_BIND_MW work request (wr.bind_mw) on an RC or UC QP of its PD, in queue order,
 * and completes with ODPEMU_WC_BIND_MW when signaled; a bind the rules refuse (MR without
 * MW_BIND, window outside the MR, remote write without local write on the MR, a bound type
 * 2 window, ZERO_BASED) completes ODPEMU_WC_MW_BIND_ERR and the QP goes to ERR.
 * Type 1: any QP of the PD reaches it; each bind moves it (new key byte) or, with length 0,
 * unbinds it. Type 2: only the QP it was bound through reaches it; ODPEMU_WR_LOCAL_INV
 * (invalidate_rkey) or the peer's SEND_WITH_INV frees it to be bound again.
 * An MR with bound windows is not deregistered (EINVAL, as rxe). */
struct odpemu_mw {
	struct odpemu_context *context;
	struct odpemu_pd *pd;
	uint32_t handle;
	uint32_t rkey;			/* at allocation; a bind's new key is the caller's */
	enum odpemu_mw_type type;
};
/* NULL with errno: EINVAL (type not 1 or 2), ENOMEM (max_mw reached, no memory). */
struct odpemu_mw *odpemu_alloc_mw(struct odpemu_pd *pd, enum odpemu_mw_type type);
/* A bound window is unbound first. 0 or errno. */
int odpemu_dealloc_mw(struct odpemu_mw *mw);
struct odpemu_mw_bind_info {
	struct odpemu_mr *mr;		/* NULL with length 0: unbind (type 1) */
	uint64_t addr, length;
	unsigned int mw_access_flags;	/* REMOTE_READ | REMOTE_WRITE | REMOTE_ATOMIC */
};

/* ---- MR leases (docs/regcache.md) ----
 * ODPEMU_ACCESS_LEASE on a pinned registration (not with ON_DEMAND: EINVAL) adds a lease
 * over the MR's pages. The first lease of a process installs the seccomp filter of the
 * notifier below (same rules: one daemon per process, EXDEV otherwise). A change of the
 * mapping under a coherent lease (the calls the notifier sees) *breaks* it: the daemon
 * raises ODPEMU_EVENT_MR_DECOHERENCE for the MR and the changing call waits until the event
 * is acknowledged (odpemu_ack_async_event, from another thread: the one that made the
 * change is inside it) or the daemon's lease timeout passes (`--lease-timeout-ms`, default
 * 1000). A second change while the lease is broken does not wait (no new event).
 *  - acknowledged: the call runs; the MR stays broken until odpemu_restore_mr.
 *  - timed out: the call runs and the MR is *revoked* for good: remote access through its
 *    rkey gets REM_ACCESS_ERR, local use LOC_PROT_ERR (counter lease_revocations). Only
 *    odpemu_dereg_mr is left to do.
 * While broken (before restore or revocation), DMA through the MR reaches neither the old
 * pages nor the new: a responder answers RNR NAK under the rnr fault policy or holds the
 * packet under stall, a local SGE holds its send queue, exactly as an ODP page fault does;
 * all of it resumes after the restore, nothing lost or repeated (the requester's RNR retry
 * limit still applies: rnr_retry 7 waits for ever). */
/* Re-point a broken lease at the pages now mapped at [addr, addr+length), with the same
 * lkey and rkey, behind the invalidation fence (no DMA sees a mix of old and new pages),
 * and make it coherent again. Call it once the change that broke the lease has returned.
 * 0 or errno: EINVAL (not a leased MR, or its lease is coherent), EACCES (revoked),
 * EBUSY (the change that broke it still waits for the acknowledgement),
 * EFAULT (the range is not fully mapped, or not writable while the MR has LOCAL_WRITE:
 * still broken, try again once it is), ENOMEM. */
int odpemu_restore_mr(struct odpemu_mr *mr);

struct odpemu_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* ibv_advise_mr: advice enum odpemu_advise_mr_advice on the ODP MRs named by sg_list's
 * lkeys. flags ODPEMU_ADVISE_MR_FLAG_FLUSH: return when the pages are present (or the
 * prefetch failed); otherwise return at once. 0 or errno: EINVAL, EOPNOTSUPP (not an ODP
 * MR), EFAULT (sync prefetch could not map the range). */
int odpemu_advise_mr(struct odpemu_pd *pd, enum odpemu_advise_mr_advice advice, uint32_t flags,
		     const struct odpemu_sge *sg_list, uint32_t num_sge);

/* ---- completion channel, CQ ---- */

struct odpemu_comp_channel {
	struct odpemu_context *context;
	int fd;			/* readable when a CQ event waits */
	int refcnt;		/* CQs using it */
	uint32_t handle;
};
struct odpemu_comp_channel *odpemu_create_comp_channel(struct odpemu_context *context);
/* EBUSY while a CQ uses it. */
int odpemu_destroy_comp_channel(struct odpemu_comp_channel *channel);

struct odpemu_cq {
	struct odpemu_context *context;
	struct odpemu_comp_channel *channel;
	void *cq_context;
	int cqe;
	uint32_t handle;
	uint32_t comp_events_completed, async_events_completed;
	void *priv;		/* library state: the ring */
};
/* ibv_create_cq: at least cqe entries. NULL with errno: EINVAL (cqe 0 or above max_cqe),
 * ENOMEM. */
struct odpemu_cq *odpemu_create_cq(struct odpemu_context *context, int cqe, void *cq_context,
				   struct odpemu_comp_channel *channel, int comp_vector);
/* odpemu_create_cq with flags: ODPEMU_CQ_IGNORE_OVERRUN is ibv_create_cq_ex's
 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN as mlx5 gives it: a completion that finds the CQ full
 * is lost (the device counter cq_overruns_ignored says how many) and the CQ and its QPs go
 * on, where a CQ without it fails with ODPEMU_EVENT_CQ_ERR. Other bits: EINVAL. */
enum odpemu_cq_flags { ODPEMU_CQ_IGNORE_OVERRUN = 1u << 0 };
struct odpemu_cq *odpemu_create_cq_flags(struct odpemu_context *context, int cqe,
					 void *cq_context, struct odpemu_comp_channel *channel,
					 int comp_vector, unsigned flags);
/* EBUSY while a QP uses it. Unacknowledged CQ events make this wait, as ibv_destroy_cq. */
int odpemu_destroy_cq(struct odpemu_cq *cq);
/* ibv_resize_cq: grow or shrink cq to at least cqe entries (cq->cqe then says how many).
 * Completions not yet polled stay, in order; an armed notification and the completion
 * channel keep working. Do not poll cq from another thread meanwhile expecting progress:
 * pollers wait for the resize. 0, or an errno (also in errno): EINVAL (cqe < 1, above
 * max_cqe, or below the completions waiting in cq), ENOMEM, ENODEV (daemon gone). */
int odpemu_resize_cq(struct odpemu_cq *cq, int cqe);

enum odpemu_wc_flags {
	ODPEMU_WC_GRH = 1 << 0,
	ODPEMU_WC_WITH_IMM = 1 << 1,
	ODPEMU_WC_WITH_INV = 1 << 3,
};
struct odpemu_wc {
	uint64_t wr_id;
	enum odpemu_wc_status status;
	enum odpemu_wc_opcode opcode;
	uint32_t vendor_err;	/* odpemu: why an error happened (odpemu_vendor_err_str) */
	uint32_t byte_len;
	union {
		uint32_t imm_data;	/* network byte order, as ibv_wc */
		uint32_t invalidated_rkey;
	};
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;	/* enum odpemu_wc_flags */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};
/* Up to num_entries completions: the count (>= 0), or a negative value when the device is
 * gone (daemon died: a DEVICE_FATAL event says so too; errno ENODEV) or the call is wrong
 * (no CQ, a negative count: errno EINVAL). With wc NULL nothing is taken (0, or ENODEV). Never blocks and makes no system
 * call while completions come; on a CQ that stays empty (more than 16 polls in a row) it
 * yields the CPU each time, since the NIC (the daemons) runs on the same cores. */
int odpemu_poll_cq(struct odpemu_cq *cq, int num_entries, struct odpemu_wc *wc);
/* odpemu_poll_cq, and ts_ns[i] gets the CLOCK_MONOTONIC time in nanoseconds at which the
 * daemon delivered completion i (ibv completion timestamps). */
int odpemu_poll_cq_ts(struct odpemu_cq *cq, int num_entries, struct odpemu_wc *wc,
		      uint64_t *ts_ns);
/* Arm: the next completion (solicited_only: the next solicited or error completion) makes
 * the CQ's channel readable. 0 or errno. */
int odpemu_req_notify_cq(struct odpemu_cq *cq, int solicited_only);
/* Block (unless the channel fd is non-blocking: EAGAIN) until an armed CQ fires. 0 or
 * errno; EINTR when a signal interrupts the wait; EIO when the daemon died. */
int odpemu_get_cq_event(struct odpemu_comp_channel *channel, struct odpemu_cq **cq,
			void **cq_context);
void odpemu_ack_cq_events(struct odpemu_cq *cq, unsigned int nevents);

/* ---- SRQ ---- */

struct odpemu_srq_attr {
	uint32_t max_wr, max_sge, srq_limit;
};
struct odpemu_srq_init_attr {
	void *srq_context;
	struct odpemu_srq_attr attr;
};
struct odpemu_srq {
	struct odpemu_context *context;
	void *srq_context;
	struct odpemu_pd *pd;
	uint32_t handle;
	void *priv;
};
enum odpemu_srq_attr_mask { ODPEMU_SRQ_MAX_WR = 1 << 0, ODPEMU_SRQ_LIMIT = 1 << 1 };
struct odpemu_srq *odpemu_create_srq(struct odpemu_pd *pd,
				     struct odpemu_srq_init_attr *srq_init_attr);
/* ODPEMU_SRQ_LIMIT only (arms SRQ_LIMIT_REACHED); EINVAL otherwise. */
int odpemu_modify_srq(struct odpemu_srq *srq, struct odpemu_srq_attr *srq_attr, int mask);
int odpemu_query_srq(struct odpemu_srq *srq, struct odpemu_srq_attr *srq_attr);
int odpemu_destroy_srq(struct odpemu_srq *srq);

struct odpemu_recv_wr {
	uint64_t wr_id;
	struct odpemu_recv_wr *next;
	struct odpemu_sge *sg_list;
	int num_sge;
};
int odpemu_post_srq_recv(struct odpemu_srq *srq, struct odpemu_recv_wr *recv_wr,
			 struct odpemu_recv_wr **bad_recv_wr);

/* ---- address handles (UD) ---- */

struct odpemu_global_route {
	union odpemu_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};
struct odpemu_ah_attr {
	struct odpemu_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;	/* RoCE: must be 1 */
	uint8_t port_num;
};
struct odpemu_ah {
	struct odpemu_context *context;
	struct odpemu_pd *pd;
	struct odpemu_ah_attr attr;
};
/* Local only (no daemon call). NULL with errno EINVAL when not is_global. */
struct odpemu_ah *odpemu_create_ah(struct odpemu_pd *pd, struct odpemu_ah_attr *attr);
int odpemu_destroy_ah(struct odpemu_ah *ah);

/* ---- QP ---- */

struct odpemu_qp_cap {
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data;
};
struct odpemu_qp_init_attr {
	void *qp_context;
	struct odpemu_cq *send_cq;
	struct odpemu_cq *recv_cq;
	struct odpemu_srq *srq;
	struct odpemu_qp_cap cap;	/* in: wanted; out: granted */
	enum odpemu_qp_type qp_type;	/* RC, UC or UD */
	int sq_sig_all;
	enum odpemu_fault_policy fault_policy;	/* odpemu: responder policy on a page fault */
};
struct odpemu_qp {
	struct odpemu_context *context;
	void *qp_context;
	struct odpemu_pd *pd;
	struct odpemu_cq *send_cq, *recv_cq;
	struct odpemu_srq *srq;
	uint32_t handle, qp_num;
	enum odpemu_qp_state state;
	enum odpemu_qp_type qp_type;
	void *priv;
};
struct odpemu_qp_attr {
	enum odpemu_qp_state qp_state, cur_qp_state;
	enum odpemu_mtu path_mtu;
	uint32_t qkey, rq_psn, sq_psn, dest_qp_num;
	unsigned int qp_access_flags;
	struct odpemu_qp_cap cap;
	struct odpemu_ah_attr ah_attr;
	uint16_t pkey_index;
	uint8_t en_sqd_async_notify, sq_draining;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint8_t min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry;
};
/* RC, UC or UD. NULL with errno: EINVAL (caps beyond the device's, CQs of another
 * context, another QP type), ENOMEM. */
struct odpemu_qp *odpemu_create_qp(struct odpemu_pd *pd, struct odpemu_qp_init_attr *init);
/* ibv_modify_qp: 0 or errno (EINVAL for a transition or attribute the spec forbids). */
int odpemu_modify_qp(struct odpemu_qp *qp, struct odpemu_qp_attr *attr, int attr_mask);
int odpemu_query_qp(struct odpemu_qp *qp, struct odpemu_qp_attr *attr, int attr_mask,
		    struct odpemu_qp_init_attr *init);
/* 0 or errno; EBUSY while the QP is attached to a multicast group (as the kernel). */
int odpemu_destroy_qp(struct odpemu_qp *qp);
/* ibv_attach_mcast / ibv_detach_mcast: a UD QP joins (leaves) the multicast group gid
 * (ff00::/8, or IPv4-mapped 224.0.0.0/4); datagrams sent to the group with remote QPN
 * 0xFFFFFF then reach it (docs/verbs.md). lid is ignored (RoCE). 0 or errno: EINVAL (not
 * UD, not a multicast GID; detach: not attached), ENOMEM (max_mcast_* reached). Attaching
 * twice is a no-op. */
int odpemu_attach_mcast(struct odpemu_qp *qp, const union odpemu_gid *gid, uint16_t lid);
int odpemu_detach_mcast(struct odpemu_qp *qp, const union odpemu_gid *gid, uint16_t lid);

struct odpemu_send_wr {
	uint64_t wr_id;
	struct odpemu_send_wr *next;
	struct odpemu_sge *sg_list;
	int num_sge;
	enum odpemu_wr_opcode opcode;
	unsigned int send_flags;	/* enum odpemu_send_flags */
	union {
		uint32_t imm_data;	/* network byte order, as ibv_send_wr */
		uint32_t invalidate_rkey;
	};
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;			/* RDMA_*, ATOMIC_WRITE (8 bytes from one SGE) */
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct odpemu_ah *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t len;		/* 0 with remote_addr 0: the whole MR */
			uint8_t type;		/* odpemu: ibv_wr_flush's type bits */
			uint8_t level;		/* odpemu: ibv_wr_flush's level */
		} flush;			/* odpemu: ibv has FLUSH in the extended API only */
	} wr;
	struct {			/* BIND_MW: the window, its new rkey (same index) */
		struct odpemu_mw *mw;
		uint32_t rkey;
		struct odpemu_mw_bind_info bind_info;
	} bind_mw;
};
/* ibv_post_send: the chain is one doorbell. 0 or errno with *bad_wr the first WR not
 * posted: EINVAL (opcode for the QP type, num_sge, inline size, QP in RESET/INIT/RTR),
 * ENOMEM (send queue full). No system call unless the daemon sleeps. Posting in ERR is
 * accepted: the WR completes with WR_FLUSH_ERR. */
int odpemu_post_send(struct odpemu_qp *qp, struct odpemu_send_wr *wr,
		     struct odpemu_send_wr **bad_wr);
int odpemu_post_recv(struct odpemu_qp *qp, struct odpemu_recv_wr *wr,
		     struct odpemu_recv_wr **bad_wr);

/* ---- counters and injection (odpemu: `rdma stat` and the daemon's knobs) ---- */

enum odpemu_counter_scope {
	ODPEMU_COUNTERS_DEVICE = 0,
	ODPEMU_COUNTERS_QP = 1,		/* id: a QP handle of this context */
	ODPEMU_COUNTERS_MR = 2,		/* id: an MR handle of this context */
	/* Any process's objects (for tools such as odpemu-ctl stat qp|mr): */
	ODPEMU_COUNTERS_ANY_QP = 3,	/* id: a QP number */
	ODPEMU_COUNTERS_ANY_MR = 4,	/* id: an MR's lkey */
	/* The list of every QP and MR of the device: name "qp <pid>" with the QP number as
	 * value, or "mr <pid>" with the lkey; id 0, or a pid: that process's only. */
	ODPEMU_COUNTERS_OBJECTS = 5,
	ODPEMU_COUNTERS_QPS = 6,	/* the same list, QPs only */
	ODPEMU_COUNTERS_MRS = 7,	/* the same list, MRs only */
};
struct odpemu_counter {
	char name[40];		/* page_faults, page_fault_pages, page_invalidations, ... */
	uint64_t value;
};
/* Up to max counters of one object: the count, or -1 with errno. Names are stable (the
 * daemon's; docs/emu.md lists them). */
/* What the daemon knows of one process that has the device open (odpemu_query_clients,
 * `odpemu-ctl stat clients`): what it could give the daemon when it opened the device. */
#define ODPEMU_CLIENT_REPORTED		1u	/* the library reported the fields below */
#define ODPEMU_CLIENT_NOTIFIER		2u	/* its userfaultfd reached the daemon */
#define ODPEMU_CLIENT_SUPERVISED	4u	/* its seccomp listener did (watches, leases) */
/* Its mapping changes reach the daemon by the seccomp route: it has no userfaultfd
 * (refused by the kernel or a seccomp profile), or one that cannot watch file mappings
 * (before Linux 6.7) and it registered memory over one (docs/emu.md, "MMU notifier"). */
#define ODPEMU_CLIENT_NOTIFIER_SECCOMP	8u
struct odpemu_client_info {
	uint32_t pid;
	uint32_t session;		/* the daemon's session number */
	uint64_t uffd_features;		/* UFFD_FEATURE_* of its userfaultfd; 0: none */
	/* The daemon's test read of its memory at open (process_vm_readv, as its DMA does):
	 * 0, or -errno: -EPERM under Yama or without ptrace access, -EIO a wrong value. */
	int32_t process_vm_err;
	uint32_t flags;			/* ODPEMU_CLIENT_* */
	char comm[16];			/* its command name */
};
/* The daemon's host feature report, probed when it started (`odpemud --check` prints the
 * same rows with their fallbacks and remedies; `odpemu-ctl devinfo -v`). */
enum odpemu_host_verdict { ODPEMU_HOST_AVAILABLE, ODPEMU_HOST_FALLBACK, ODPEMU_HOST_MISSING };
struct odpemu_host_feature {
	char name[32];			/* io_uring, procmap_query, userfaultfd, ... */
	enum odpemu_host_verdict verdict;
	uint32_t masked;		/* 1: absent because ODPEMU_MASK names it */
	char detail[160];		/* what the probe saw */
};
/* Up to max rows: the count, or -1 with errno. */
int odpemu_query_host(struct odpemu_context *context, struct odpemu_host_feature *out,
		      int max);
/* Up to max records, one per process with the device open (a process that opened it
 * twice has two): the count, or -1 with errno. */
int odpemu_query_clients(struct odpemu_context *context, struct odpemu_client_info *out,
			 int max);
int odpemu_query_counters(struct odpemu_context *context, enum odpemu_counter_scope scope,
			  uint32_t id, struct odpemu_counter *out, int max);
/* Change an injection knob at run time, with the words of odpemud's flags: key
 * "fault-delay-us", "fault-fail-rate", "evict-rate", "fault-policy", "wire-loss",
 * "wire-dup", "wire-reorder", "wire-delay-us", "wire-corrupt", "wire-match", "wire-peer";
 * value as on the command line (at most 63 characters). 0 or errno (EINVAL: unknown key
 * or bad value). */
int odpemu_set_inject(struct odpemu_context *context, const char *key, const char *value);
/* The current value of a knob, in the flag's syntax ("uniform:10-20", "0.01", "100/s",
 * "rnr"; a wire knob names both directions: "tx:0.02 rx:0"), into value (len bytes,
 * NUL-terminated). 0 or errno (EINVAL: unknown key; ENOSPC: len too small). */
int odpemu_get_inject(struct odpemu_context *context, const char *key, char *value, size_t len);

/* ---- the mapping-change notifier (docs/regcache.md) ----
 * "If any mapping in [addr, addr+len) changes, write a non-zero word to *z": munmap,
 * mremap (the old range, and the new one with MREMAP_FIXED), madvise with MADV_DONTNEED,
 * MADV_DONTNEED_LOCKED, MADV_FREE or MADV_REMOVE, mmap with MAP_FIXED, brk shrinking the
 * heap (so malloc's trim), shmdt (every piece of the segment attached there) and shmat
 * with SHM_REMAP over the range set *z before the changing call returns, whichever
 * thread makes it, with or without an MR there. Not a change: mprotect, fork, brk growth
 * and brk(0). Not seen: other madvise advices (MADV_GUARD_INSTALL too), process_madvise
 * and madvise through io_uring, the i386 and x32 system call ABIs, changes by other
 * processes. Every brk but brk(0) is held, growth too: malloc growing its heap pays the
 * round trip (and the daemon's read of the heap's end). The first watch of a
 * process installs a seccomp filter on all its threads (it sets no_new_privs) and hands
 * its listener to this context's daemon; from then on every such call of the process,
 * watched or not, waits for that daemon's answer (tens of µs); once that context is
 * closed the daemon lets them run until the process exits, and if the daemon dies a
 * thread of the library does (no longer watched; later watches and leases: ENODEV). Every watch of the process must use the same context's
 * daemon (EXDEV otherwise); 32,768 per process at most (ENOSPC). A fork child of a
 * process that watches cannot watch (EBUSY: the kernel allows one listener per filter
 * chain); its own calls run unwatched. *z must be 8-byte aligned; the caller clears it. */
struct odpemu_watch;
int odpemu_watch_create(struct odpemu_context *context, const void *addr, size_t len,
			uint64_t *z, struct odpemu_watch **watch);
int odpemu_watch_destroy(struct odpemu_watch *watch);

/* ---- names ---- */
const char *odpemu_vendor_err_str(uint32_t vendor_err);
const char *odpemu_mtu_str(enum odpemu_mtu mtu);
int odpemu_mtu_to_bytes(enum odpemu_mtu mtu);

#ifdef __cplusplus
}
#endif

#endif
