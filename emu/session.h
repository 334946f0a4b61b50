/* SPDX-License-Identifier: MIT */
/*
 * session — one client process on the control socket (ctl.h): its credentials, doorbell,
 * event pipe and userfaultfd, and the objects it created (struct emu_obj), found by handle
 * in the session's table. Handles are per-session indexes, so another session's handle is
 * simply unknown. When the socket closes (exit or crash) every object is destroyed in
 * dependency order, as the kernel does for a dead process's verbs objects.
 *
 * OBJECTS. The table finds an object by handle. Everything that wants the objects of one
 * kind (the MRs to sum, the QPs to stop) walks that type's list, s->of_type[type], with
 * emu_for_each_obj: an object is linked in at emu_obj_new and out at emu_obj_free, so
 * nothing scans the whole table. The lists keep creation order. A new object takes the
 * lowest free handle, found through a bitmap of used handles with a summary of its full
 * words (two loads per 4,096 handles), so creating and destroying stay O(1) whatever the
 * session holds; at most IPC_DB_HANDLES - 1 handles.
 *
 * DOORBELLS. The rings to drain and the CQ arms to take are the handles the client marked
 * on the session's doorbell page (ipc_db.h), not a walk of every QP; the CQs nic/ asked to
 * notify wait in cq_notify. A session without a page (made by hand, as the fuzz target's)
 * is walked whole each round.
 *
 * IMPORTS. ibv_import_device(cmd_fd) opens a connection of its own and attaches it to the
 * table of the session whose client end cmd_fd is (import.c): one ucontext, several
 * connections, as a dup'd uverbs fd shares the kernel's. Each object belongs to the
 * session that made it (s: its owner, whose event pipe, doorbell page and lists have it;
 * an MR's memory is its registering process's whatever the PD's). A session that closes
 * while others share its table destroys only what is its process's alone (watches, CM
 * objects) and hands the rest to one of them, as the kernel keeps a ucontext's objects
 * until its last fd goes; the last one destroys everything.
 *
 * LIFETIME. emu_session_close() frees the objects and marks the session dead; the struct
 * itself is freed by the final completion of its last armed poll (io_uring hands the
 * struct emu_io pointers back until then).
 *
 * THREADING. The loop thread only.
 */
#ifndef ODPEMU_EMU_SESSION_H
#define ODPEMU_EMU_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc.h"
#include "ipc_db.h"
#include "interval.h"
#include "io/loop.h"
#include "rings.h"

struct emu_cm_conn;
struct emu_cm_listener;
struct emu_daemon;
struct nic_cq;
struct nic_mr;
struct nic_pd;
struct nic_qp;
struct nic_srq;
struct emu_session;
struct emu_hold;

enum emu_obj_type { EMU_OBJ_PD = 1, EMU_OBJ_MR, EMU_OBJ_CHANNEL, EMU_OBJ_CQ, EMU_OBJ_SRQ,
	EMU_OBJ_QP, EMU_OBJ_CM_CHANNEL, EMU_OBJ_CM_LISTEN, EMU_OBJ_CM_CONN, EMU_OBJ_WATCH,
	EMU_OBJ_MW };
#define EMU_OBJ_TYPES (EMU_OBJ_MW + 1)	/* index bound of a per-type array (0 unused) */

/* The handle table of a device session (a uverbs ucontext): the session that opened it
 * and those that imported its command fd (import.c) find every object in it by handle;
 * it goes with the last of them (see IMPORTS). */
struct emu_table {
	struct emu_obj **objs;		/* index = handle; 0 unused: lookup by handle only */
	uint32_t nobjs;			/* a multiple of 64 */
	uint64_t *used;			/* bit per handle (see OBJECTS) */
	uint64_t *full;			/* bit per word of used: all ones */
	unsigned users;			/* sessions attached */
};

/* One object of a session: the nic/ object it stands for, the objects it names (their
 * refs count it), its rings. */
struct emu_obj {
	enum emu_obj_type type;
	uint32_t handle;
	struct emu_session *s;
	struct emu_obj *type_prev, *type_next;	/* s->of_type[type], in creation order */
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
			uint32_t access;
			struct emu_obj *pd;
			struct {	/* ODPEMU_ACCESS_LEASE (lease.c) */
				bool on;
				struct interval_node node;	/* in s->leases */
				struct emu_hold *hold;	/* the change waiting for our ack */
				struct emu_obj *hit;	/* lease.c: the touched ones, a list */
			} lease;
		} mr;
		struct {
			struct nic_mw *mw;
			struct emu_obj *pd;
		} mw;
		struct {
			int wr_fd;	/* pipe write end */
		} ch;
		int cm_fd;			/* CM channel: the events socket (cm_ctl.c) */
		struct emu_cm_listener *cm_listen;
		struct emu_cm_conn *cm_conn;
		struct {
			struct interval_node node;	/* [addr, end) watched, in s->watches */
			uint64_t z;			/* the word to set */
			struct emu_obj *hit;		/* watch.c: the touched ones, a list */
		} watch;
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
	struct emu_io sock_io, db_io, uffd_io, sup_io;
	int sock, doorbell, event_wr;
	int uffd;			/* the client's userfaultfd: we register ranges on it */
	int uffd_relay;			/* its events, forwarded by the client (ipc.h) */
	int supervise;			/* the listener of its seccomp filter (watch.h), or -1 */
	bool sup_cancelling;		/* let go (UNSUPERVISE): its poll's last completion due */
	uint64_t held_at;		/* the client's ipc_supervise_req.held words */
	uint64_t held_used;		/* bit i: slot i names a hold (lease.c) */
	unsigned nwatches;		/* its EMU_OBJ_WATCH objects */
	struct interval_tree watches;	/* their ranges (watch.c) */
	struct interval_tree leases;	/* leased MRs' ranges (lease.c) */
	struct emu_hold *holds;		/* changes waiting for lease acks (lease.c) */
	pid_t pid;
	uid_t uid;
	uint32_t id;			/* the NIC's client id */
	bool hello_done, dead;
	/* what the client reported at open (CLIENT_INFO, clients.h) */
	bool info_reported;
	uint64_t uffd_features;
	int32_t process_vm_err;
	uint32_t notifier;		/* enum ipc_notifier */
	unsigned polls;			/* armed multishot polls */
	struct emu_table *tab;		/* the handles, shared with the imports (see IMPORTS) */
	/* The client's end of this connection (its cmd_fd), as HELLO passed it: what an
	 * import's fd is compared with (import.c). */
	bool has_cmd_fd;
	dev_t cmd_dev;
	ino_t cmd_ino;
	struct emu_obj_list {
		struct emu_obj *first, *last;
		uint32_t n;
	} of_type[EMU_OBJ_TYPES];	/* every object it owns, by type (see OBJECTS) */
	struct ipc_db_page *db;		/* the client's marks (see DOORBELLS), or NULL */
	uint32_t *cq_notify;		/* handles of CQs with notify_pending (see DOORBELLS) */
	uint32_t ncq_notify, cq_notify_cap;
	unsigned limits_logged;		/* enum emu_limit bits already in the log (verbs.c) */
	uint64_t events_dropped;
	/* a synchronous advise_mr waiting for its requests */
	uint32_t advise_seq;
	unsigned advise_pending;
	int advise_err;
	bool advise_waiting;
	struct ipc_hdr advise_hdr;	/* the synchronous advise waiting for its reply */
};

/* A new session on the accepted socket fd (its peer checked with SO_PEERCRED): 0, -EPERM
 * (not root, the daemon's user or its group), -ENOMEM, or -errno of eventfd. */
int emu_session_accept(struct emu_daemon *d, int fd);
/* Destroy its objects, close its fds, cancel its polls; idempotent (see LIFETIME). */
void emu_session_close(struct emu_session *s);
/* The live session with NIC client id `id`, or NULL. */
struct emu_session *emu_session_by_id(struct emu_daemon *d, uint32_t id);
/* One async event record to the client's event pipe (counted as dropped when full). */
void emu_session_event(struct emu_session *s, enum odpemu_event_type type, uint32_t handle);
/* Arm a multishot poll on fd that counts towards s's LIFETIME. */
void emu_session_arm(struct emu_session *s, int fd, struct emu_io *io);
/* Take the client's userfaultfd and the socket its events are relayed on (notifier.h). */
void emu_session_set_uffd(struct emu_session *s, int uffd, int relay);
/* Take the listener of the client's seccomp filter and serve it (watch.h). */
void emu_session_set_supervise(struct emu_session *s, int listener);
/* Let go of it (UNSUPERVISE, watch.c): its poll cancelled, the fd closed. 0 or -errno. */
int emu_session_unsupervise(struct emu_session *s);

/* Attach s (a fresh session: HELLO not done, no objects) to the table of owner (IMPORTS).
 * */
void emu_session_share(struct emu_session *s, struct emu_session *owner);

/* The object of s's table with this handle and type, or NULL. */
struct emu_obj *emu_obj_get(struct emu_session *s, uint32_t handle, enum emu_obj_type type);
/* A zeroed object with the lowest free handle, or NULL: out of memory, or the session
 * has IPC_DB_HANDLES - 1 objects (emu_obj_new_why says which). */
struct emu_obj *emu_obj_new(struct emu_session *s, enum emu_obj_type type);
const char *emu_obj_new_why(const struct emu_session *s);
/* Map the session's doorbell page (HELLO): 0 and *fd for the client, or -errno. */
int emu_session_db(struct emu_session *s, int *fd);
/* Remember that CQ object cq has a notification to send (ports.c): 0 or -ENOMEM. */
int emu_session_cq_notify(struct emu_obj *cq);
/* Free the handle and the struct (whatever it holds is the caller's: verbs.h destroys). */
void emu_obj_free(struct emu_obj *o);

/* Each object of one type of session s, in creation order (handles are reused, lowest
 * free first, so that is not handle order); the loop declares o. The body must not free
 * o (to destroy while walking, keep o->type_next first). */
#define emu_for_each_obj(o, s, type) \
	for (struct emu_obj *o = (s)->of_type[type].first; o; o = o->type_next)

#endif
