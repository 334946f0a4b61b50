/* SPDX-License-Identifier: MIT */
/*
 * daemon — odpemud's state: one soft-HCA (struct nic) bound to the real world.
 *
 * One thread (the loop) owns everything here and is the only one that enters nic/. The
 * fault handler thread (fault.h) only resolves page requests and hands answers back
 * through its queue; the loop delivers them when their injected delay is over.
 *
 * Sessions (session.c) are client processes connected to the control socket (ctl.c);
 * their objects live in a per-session handle table (struct emu_obj). Shared-memory rings
 * (rings.c) carry work requests in and completions out. The NIC's ports (ports.c) are
 * bound to the UDP socket, the clients' memory, the fault thread and the event pipes.
 */
#ifndef ODPEMU_EMU_DAEMON_H
#define ODPEMU_EMU_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fault.h"
#include "inject.h"
#include "ipc.h"
#include "ipc_ring.h"
#include "loop.h"
#include "netdev.h"
#include "nic.h"
#include "options.h"
#include "udp.h"

struct emu_session;

enum emu_obj_type { EMU_OBJ_PD = 1, EMU_OBJ_MR, EMU_OBJ_CHANNEL, EMU_OBJ_CQ, EMU_OBJ_SRQ,
	EMU_OBJ_QP };

/* A ring as the daemon sees it: its own copies of the geometry, never read back. */
struct emu_ring {
	struct ipc_ring *hdr;
	void *base;
	uint32_t offset, size, slot;
	uint32_t idx;			/* daemon's index: cons (SQ/RQ/SRQ) or prod (CQ) */
};

struct emu_obj {
	enum emu_obj_type type;
	uint32_t handle;
	struct emu_session *s;
	unsigned refs;			/* other objects naming this one */
	void *map;			/* ring memfd mapping (CQ, SRQ, QP) */
	size_t map_len;
	union {
		struct nic_pd *pd;
		struct {
			struct nic_mr *mr;
			void *pin;	/* pinned: the daemon's mapping of the pages */
			size_t pin_len;
			uint64_t va, len;
			struct emu_obj *pd;
		} mr;
		struct {
			int wr_fd;	/* pipe write end */
		} ch;
		struct {
			struct nic_cq *cq;
			struct emu_obj *channel;
			struct emu_ring ring;
			uint32_t arm_seen;
			bool notify_pending;
		} cq;
		struct {
			struct nic_srq *srq;
			struct emu_ring ring;
			uint32_t max_sge;
			struct emu_obj *pd;
		} srq;
		struct {
			struct nic_qp *qp;
			struct emu_obj *send_cq, *recv_cq, *srq, *pd;
			struct emu_ring sq, rq;
			uint32_t max_send_sge, max_recv_sge, max_inline;
			enum odpemu_qp_type type;
		} qp;
	} u;
};

struct emu_session {
	struct emu_daemon *d;
	struct emu_session *next;
	struct emu_io sock_io, db_io, uffd_io;
	int sock, doorbell, event_wr;
	int uffd;			/* the client's userfaultfd: we register ranges on it */
	int uffd_relay;			/* its events, forwarded by the client (ipc.h) */
	pid_t pid;
	uid_t uid;
	uint32_t id;			/* the NIC's client id */
	bool hello_done, dead;
	unsigned polls;			/* armed multishot polls (session.c) */
	struct emu_obj **objs;		/* index = handle; 0 unused */
	uint32_t nobjs;
	uint64_t events_dropped;
	/* a synchronous advise_mr waiting for its requests */
	uint32_t advise_seq;
	unsigned advise_pending;
	int advise_err;
	bool advise_waiting;
	struct ipc_hdr advise_hdr;	/* the synchronous advise waiting for its reply */
};

/* A recent fault fill, for --evict-rate (evict.c). */
struct emu_fill {
	struct iopt *iopt;
	uint64_t va, len;
};
#define EMU_FILLS 256

struct emu_daemon {
	struct emu_options opt;
	struct emu_loop loop;
	struct nic *nic;
	struct emu_udp *udp;
	struct emu_netdev netdev;
	struct emu_netdev_watch *watch;
	struct emu_io watch_io, listen_io, fault_io, signal_io, evict_io;
	struct nic_gid gid;
	struct emu_inject inject;
	struct emu_fault *fault;
	struct emu_fault_job *due;	/* answered jobs waiting for their injected delay */
	int listen_fd, signal_fd, status_fd;
	struct ipc_status_page *status;
	char sock_path[256];
	struct emu_session *sessions;
	uint32_t next_client;
	unsigned nsessions;
	unsigned closing_sessions;
	struct emu_session *last_session;	/* ports.c's lookup cache */	/* closed, waiting for their polls to end */
	bool port_up;
	bool rx_drained;		/* rings drained since this dispatch began (daemon.c) */
	bool usage_error;
	bool loop_ready;		/* emu_loop_init succeeded */		/* start failed on a bad flag value (exit 2) */
	enum nic_fault_policy default_policy;
	uint64_t evict_last_ns;
	struct emu_fill fills[EMU_FILLS];
	unsigned nfills;
	/* counters of the daemon itself (nic/ and udp keep their own) */
	struct {
		uint64_t sessions_total, requests, request_errors, ring_bad_wqe;
		uint64_t mem_read_errors, mem_write_errors, evictions, uffd_events;
		uint64_t invalidations_host, events_sent, events_dropped, rx_bad_src;
		uint64_t mrs_pinned_shared, mrs_pinned_by_address;
		uint64_t fault_lat_us[24];	/* fault submit -> answer delivered, log2 µs */
	} ctr;
	/* What destroyed MRs and QPs had counted, so device counters never go down. */
	struct iopt_counters retired_mr;
	struct nic_qp_counters retired_qp;
};

/* ---- session.c ---- */
int emu_session_accept(struct emu_daemon *d, int fd);
void emu_session_close(struct emu_session *s);
struct emu_session *emu_session_by_id(struct emu_daemon *d, uint32_t id);
struct emu_obj *emu_obj_get(struct emu_session *s, uint32_t handle, enum emu_obj_type type);
struct emu_obj *emu_obj_new(struct emu_session *s, enum emu_obj_type type);
void emu_obj_free(struct emu_obj *o);
void emu_session_event(struct emu_session *s, enum odpemu_event_type type, uint32_t handle);
void emu_session_arm(struct emu_session *s, int fd, struct emu_io *io);
void emu_session_set_uffd(struct emu_session *s, int uffd, int relay);

/* ---- ctl.c: the control socket ---- */
int emu_ctl_listen(struct emu_daemon *d);
void emu_ctl_unlink(struct emu_daemon *d);
/* Host addresses of pinned MRs are the daemon's own mapping of the client's pages,
 * tagged: PIN_TAG, touched with memcpy (memfds sealed against shrinking, which cannot
 * fault), or PIN_TAG | PIN_GUARD_TAG, touched through process_vm_readv/writev on the
 * daemon itself (files the client could truncate: a page gone is EFAULT, not SIGBUS). */
#define PIN_TAG		(1ull << 62)
#define PIN_GUARD_TAG	(1ull << 61)
#define PIN_ADDR(host)	((host) & ~(PIN_TAG | PIN_GUARD_TAG))

/* devnode.c: make sure IPC_DEVNODE_DIR/IPC_DEVNODE_NAME exists (a warning if it cannot). */
void emu_devnode_ensure(void);
/* Handle one request of s (called when its socket is readable). */
void emu_ctl_serve(struct emu_session *s);
int emu_ctl_reply(struct emu_session *s, const struct ipc_hdr *req, int status,
		  const void *body, size_t len, const int *fds, unsigned nfds);

/* ---- verbs.c, verbs_qp.c: the op handlers ---- */
struct emu_req {
	struct emu_session *s;
	const struct ipc_hdr *hdr;
	const void *body;
	size_t len;			/* body bytes */
	int *fds;			/* received fds (the handler takes those it keeps: -1) */
	unsigned nfds;
};
typedef int (*emu_op_fn)(struct emu_req *r);
emu_op_fn emu_op_handler(unsigned op);
int emu_reply_err(struct emu_req *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* In a request handler: the body must be exactly one `type` (variable ops check their
 * arrays themselves), else an error reply. */
#define EMU_WANT_BODY(r, type) \
	do { \
		if ((r)->len != sizeof(type)) \
			return emu_reply_err((r), -EBADMSG, "%s body of %zu bytes, want %zu", \
					     #type, (r)->len, sizeof(type)); \
	} while (0)
int emu_obj_destroy(struct emu_obj *o);
int emu_qp_srq_destroy(struct emu_obj *o);
int emu_op_create_srq(struct emu_req *r);
int emu_op_modify_srq(struct emu_req *r);
int emu_op_destroy_srq(struct emu_req *r);
int emu_op_create_qp(struct emu_req *r);
int emu_op_modify_qp(struct emu_req *r);
int emu_op_query_qp(struct emu_req *r);
int emu_op_destroy_qp(struct emu_req *r);
/* daemon.c: change an injection knob ("fault-delay-us", ...): 0 or -EINVAL with err. */
int emu_daemon_set_knob(struct emu_daemon *d, const char *key, const char *value, char *err,
			size_t errlen);
/* The current value of a knob in its flag's syntax: 0 or -EINVAL with err. */
int emu_daemon_get_knob(struct emu_daemon *d, const char *key, char *value, size_t len,
			char *err, size_t errlen);

/* ---- rings.c ---- */
int emu_ring_map(struct emu_obj *o, size_t len, int *fd_out);
void emu_ring_setup(struct emu_ring *r, void *base, uint32_t at, uint32_t size, uint32_t slot);
bool emu_rings_drain(struct emu_daemon *d);
/* ports.cq_write of the CQ object cq: false when its ring is full. */
bool emu_cq_write(struct emu_obj *cq, const struct nic_wc *wc);
void emu_rings_service_cqs(struct emu_daemon *d);

/* ---- ports.c ---- */
void emu_ports_init(struct emu_daemon *d, struct nic_ports *p);
void emu_faults_deliver(struct emu_daemon *d, uint64_t now);
uint64_t emu_faults_next_due(const struct emu_daemon *d);
void emu_fault_answers(struct emu_io *io, const struct io_uring_cqe *cqe);
void emu_uffd_read(struct emu_session *s);
/* notifier.c: track unmaps/remaps of [va, va+len) of s (register its VMAs). */
void emu_notifier_watch(struct emu_session *s, uint64_t va, uint64_t len);

/* ---- counters.c ---- */
int emu_op_counters(struct emu_req *r);
void emu_counters_dump(struct emu_daemon *d);
/* An MR or QP is about to go: keep its counts in the device's totals. */
void emu_counters_retire(struct emu_obj *o);

/* ---- daemon.c ---- */
int emu_daemon_start(struct emu_daemon *d, const struct emu_options *opt);
int emu_daemon_run(struct emu_daemon *d);
void emu_daemon_stop(struct emu_daemon *d);

/* ---- evict.c: --evict-rate ---- */
void emu_evict_tick(struct emu_daemon *d, uint64_t now);
uint64_t emu_evict_next(const struct emu_daemon *d);
void emu_evict_note_fill(struct emu_daemon *d, struct iopt *t, uint64_t va, uint64_t len);
/* ports.c: answer every request still held (at stop). */
void emu_faults_drain_all(struct emu_daemon *d);

/* ---- log ---- */
void emu_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
enum { EMU_LOG_ERR = 0, EMU_LOG_WARN = 1, EMU_LOG_INFO = 2, EMU_LOG_DEBUG = 3 };
extern int emu_log_level;

#endif
