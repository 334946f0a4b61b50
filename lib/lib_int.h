/* SPDX-License-Identifier: MIT */
/*
 * lib_int — libodpemu's private types. Every public object is the public struct of
 * odpemu.h embedded first in a library struct (container_of by a cast), so a pointer the
 * application holds is also the library's.
 *
 * Locks: ctx->ctl_lock serialises control requests (one request in flight per session,
 * as ipc.h demands); ctx->tab_lock guards the handle tables and is only ever held for a
 * lookup or an update, never across a request, so an event reader is not stuck behind a
 * slow request; each queue has a spinlock for its ring; each object's lib_evc counts
 * events handed out and acknowledged. Order: ctl_lock, then tab_lock, then object locks.
 */
#ifndef ODPEMU_LIB_INT_H
#define ODPEMU_LIB_INT_H

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc.h"
#include "ipc_db.h"
#include "ipc_ring.h"
#include "odpemu/odpemu.h"

/* Definitions of odpemu.h's functions carry this; everything else stays hidden
 * (-fvisibility=hidden). */
#define ODPEMU_EXPORT __attribute__((visibility("default")))

#define LIB_PATH_LEN 108	/* sizeof(sockaddr_un.sun_path) */

struct odpemu_device {
	char name[IPC_NAME_LEN];
	char path[LIB_PATH_LEN];
};

/* ---- handle tables (table.c): handle -> object, sorted by handle ---- */
struct lib_table {
	struct lib_table_entry { uint32_t handle; void *obj; } *e;
	uint32_t n, cap;
};
int lib_table_add(struct lib_table *t, uint32_t handle, void *obj);	/* 0, -ENOMEM, -EEXIST */
void *lib_table_find(const struct lib_table *t, uint32_t handle);
void *lib_table_remove(struct lib_table *t, uint32_t handle);
void lib_table_free(struct lib_table *t);

/* ---- events handed out vs acknowledged (libibverbs' events_completed counters) ---- */
struct lib_evc {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t comp_got, comp_acked;
	uint32_t async_got, async_acked;
};
void lib_evc_init(struct lib_evc *e);
void lib_evc_fini(struct lib_evc *e);
void lib_evc_got(struct lib_evc *e, bool comp);
void lib_evc_ack(struct lib_evc *e, bool comp, uint32_t n);
/* Wait until every event handed out has been acknowledged (destroy calls). */
void lib_evc_wait(struct lib_evc *e);

/* ---- context ---- */
struct lib_context {
	struct odpemu_context pub;
	struct odpemu_device dev;	/* pub.device points here: the list may be freed */
	int sock;			/* control socket (-1 in unit tests) */
	int cmd_fd;			/* imported: the cmd_fd it was made from (ours to close);
					 * opened: -1, the cmd_fd is sock (import.c) */
	int doorbell_fd;
	struct ipc_status_page *status;	/* the daemon's page, mapped read-only */
	struct ipc_db_page *db;		/* the session's doorbell page (ipc_db.h), or NULL */
	uint32_t session, daemon_pid;
	uint32_t notifier;		/* enum ipc_notifier: how our unmaps reach its daemon */
	bool cq_clean;			/* IPC_TRAIT_CQ_CLEAN: cq_clean.c at reset, destroy */
	atomic_bool route_tried;	/* the seccomp route was tried (watch.c) */
	int relay_peer;			/* our end of the userfaultfd relay (relay.c), or -1 */

	pthread_mutex_t ctl_lock;	/* one request at a time; seq */
	uint32_t seq;
	pthread_mutex_t err_lock;
	char last_error[IPC_ERR_LEN];

	pthread_mutex_t tab_lock;
	struct lib_table pds, mrs, channels, cqs, srqs, qps;

	atomic_bool dead;		/* the daemon is gone: every call fails with ENODEV */
	pid_t pid;			/* the process that opened it (fork.c); 0: not tracked */
	_Atomic uint64_t live_check_ns;	/* last liveness probe of the control socket */

	pthread_mutex_t ev_lock;	/* async events: the end-of-file state below */
	bool fatal_given;		/* DEVICE_FATAL returned once: later calls get EIO */
};

static inline struct lib_context *lib_ctx(struct odpemu_context *c)
{
	return (struct lib_context *)c;
}

/* open.c: a connected socket to the device's daemon, or -errno (-ENODEV: not running). */
int lib_connect(const struct odpemu_device *dev);
/* Open a context on device: HELLO, or with import_fd >= 0 IMPORT_DEVICE of that cmd_fd
 * (the context then owns it). NULL with errno. */
struct odpemu_context *lib_open(const struct odpemu_device *device, int import_fd);

/* A context with its locks and tables ready and no daemon (sock -1, status NULL). */
struct lib_context *lib_ctx_alloc(void);
/* Unmap and free every object left in the tables, then the context (no daemon calls). */
void lib_ctx_free(struct lib_context *c);
bool lib_ctx_dead(struct lib_context *c);
void lib_ctx_mark_dead(struct lib_context *c);
/* Remember a human line for odpemu_last_error. */
void lib_set_error(struct lib_context *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* After the caller's release store of a producer index of object `handle` (a QP, an
 * SRQ) or a CQ's arm: mark it on the doorbell page, and ring the doorbell if the daemon's
 * loop may be asleep. */
void lib_doorbell_obj(struct lib_context *c, uint32_t handle);
/* The same for a caller that wrote rings of its own and names none: the daemon then
 * looks at every queue of the session. */
void lib_doorbell(struct lib_context *c);

/* ---- fork (fork.c) ---- */
/* Remember an open context (a child closes its copy of the socket). 0 or -ENOMEM. */
int lib_fork_track(struct lib_context *c);
void lib_fork_untrack(struct lib_context *c);
/* An open context of this process that want accepts, or NULL. It stays open only while
 * its closing waits for a lock the caller holds (supervise.c holds supervise_lock, which
 * a closing context takes before its socket closes). */
struct lib_context *lib_fork_pick(bool (*want)(const struct lib_context *c));
/* True in a child of the process that opened c: c is not this process's to use. */
bool lib_forked(const struct lib_context *c);

/* ---- control requests (ctl.c) ---- */
struct lib_call {
	uint16_t op;
	uint32_t handle;		/* ipc_hdr.handle */
	const void *req;		/* body */
	size_t req_len;
	const int *fds;			/* SCM_RIGHTS sent with the request */
	unsigned nfds;
	void *rep;			/* reply body (may be NULL when rep_cap is 0) */
	size_t rep_min, rep_cap;	/* accepted body sizes */
	size_t rep_len;			/* out: body bytes received */
	int *rfds;			/* out: exactly nrfds fds, or all -1 on failure */
	unsigned nrfds;
};
/* One request and its reply. 0 or -errno; -ENODEV when the daemon is gone (the context
 * is then dead). On failure no received fd stays open. */
int lib_call(struct lib_context *c, struct lib_call *call);
/* A destroy request: the daemon being gone counts as success (it freed everything). */
int lib_call_destroy(struct lib_context *c, uint16_t op, uint32_t handle);
/* Create a daemon object that comes with a shared ring (CQ, QP, SRQ): call op, map the
 * ring memfd of the reply into *map, and destroy the object again (destroy_op) when the
 * map fails, so nothing is left at the daemon. handle and map_len point into rep. */
int lib_call_ring(struct lib_context *c, uint16_t op, uint16_t destroy_op, const void *req,
		  size_t req_len, void *rep, size_t rep_len, uint32_t *handle,
		  uint32_t *map_len, void **map);
/* Destroy an object at the daemon and take it out of its handle table (first, so that a
 * handle the daemon reuses at once never meets our old entry; put back if the daemon
 * refuses). 0 or -errno (the object is untouched on failure). */
int lib_destroy_handle(struct lib_context *c, uint16_t op, struct lib_table *t, uint32_t handle);
/* The same for an object that events can name (CQ, SRQ, QP, MR), then wait until every
 * event naming it was acknowledged (as ibv_destroy_* does). */
int lib_destroy_tracked(struct lib_context *c, uint16_t op, struct lib_table *t,
			uint32_t handle, struct lib_evc *evc);
/* ---- Yama: the daemons that may read this process (tracer.c) ---- */
#define LIB_TRACER_ANY ((pid_t)-1)
enum lib_tracer_step {
	LIB_TRACER_KEEP,		/* this daemon may already read us */
	LIB_TRACER_DECLARE_PID,		/* the first daemon: name it */
	LIB_TRACER_DECLARE_ANY,		/* a second daemon: one named tracer cannot serve both */
};
/* What opening a device of daemon pid `daemon` does, given the declaration so far
 * (0: none, a pid, or LIB_TRACER_ANY). Pure: the mechanism's rule, unit-tested. */
enum lib_tracer_step lib_tracer_next(pid_t declared, pid_t daemon);
/* Apply it with prctl(PR_SET_PTRACER); without Yama (EINVAL) nothing is recorded. */
void lib_tracer_allow(pid_t daemon);

/* Fail the public way: errno = err, return err (positive). */
int lib_fail(int err);

/* ---- shared-memory rings ---- */
struct lib_ring {
	struct ipc_ring *hdr;		/* shared header */
	char *base;			/* the memfd mapping the ring lives in */
	uint32_t offset, size, slot;	/* own copies, checked once at attach */
	uint32_t head;			/* producer: next index to fill; consumer: next to read */
};
/* Check the header at base + at against what this side expects (size 0: any power of
 * two) and attach r to it. 0 or -EPROTO. */
int lib_ring_attach(struct lib_ring *r, void *base, size_t map_len, uint32_t at,
		    uint32_t size, uint32_t min_slot);
static inline void *lib_ring_slot(const struct lib_ring *r, uint32_t idx)
{
	return ipc_ring_slot(r->base, r->offset, r->size, r->slot, idx);
}
/* Producer: publish every slot up to r->head (release). */
void lib_ring_publish(struct lib_ring *r);
/* Map a ring memfd read-write shared and close the fd. NULL with -errno in *err. */
void *lib_map_fd(int fd, size_t len, int *err);

/* ---- objects ---- */
struct lib_mr {
	struct odpemu_mr pub;
	struct lib_evc evc;
	int access;		/* as registered (a restore repeats it) */
};

/* supervise.c: the process's seccomp filter, its listener with context's daemon (the
 * first watch or lease: pin; or the seccomp route's first MR, which a watch or lease then
 * moves): 0, -EXDEV (another daemon has it), -ENODEV, -errno. */
int lib_supervise(struct odpemu_context *context, bool pin);
/* watch.c: at an MR of [addr, +len) (implicit: every range): if c has no userfaultfd, or
 * one that cannot watch the file mappings there, take the seccomp route (once). */
void lib_seccomp_route(struct lib_context *c, const void *addr, size_t len, bool implicit);
/* context is closing: if its daemon holds the listener, later watches are ENODEV (the
 * daemon keeps answering the process's held calls until it exits: emu/host/orphan.h). */
void lib_watch_closing(struct odpemu_context *context);

struct lib_cq {
	struct odpemu_cq pub;
	struct lib_evc evc;		/* mirrors pub.*_events_completed */
	pthread_spinlock_t lock;	/* pollers */
	struct lib_ring ring;		/* consumer side */
	void *map;
	size_t map_len;
	uint32_t empty_polls;
};

/* The opcode of a CQE dropped by lib_cq_clean_qp: poll_cq passes over it. */
#define LIB_CQE_CLEANED UINT32_MAX
/* At a QP's reset: its completions not yet polled leave its CQs (cq_clean.c). */
struct lib_qp;
void lib_cq_clean_qp(struct lib_qp *qp);

/* A work queue the library produces into (SQ, RQ, SRQ). */
struct lib_wq {
	pthread_spinlock_t lock;	/* posters */
	struct lib_ring ring;
	uint32_t depth;			/* the granted max_*_wr: the ring may hold more */
	uint32_t max_sge, max_inline;
};

struct lib_srq {
	struct odpemu_srq pub;
	struct lib_evc evc;
	struct lib_wq wq;
	struct odpemu_srq_attr attr;	/* granted sizes, armed limit (under tab_lock) */
	void *map;
	size_t map_len;
};

struct lib_qp {
	struct odpemu_qp pub;
	struct lib_evc evc;
	_Atomic int state;		/* pub.state for posters (enum odpemu_qp_state) */
	struct lib_wq sq, rq;		/* rq unused with an SRQ */
	struct odpemu_qp_cap cap;	/* granted */
	int sq_sig_all;
	enum odpemu_fault_policy fault_policy;
	uint64_t device_caps;		/* the device's ODPEMU_DEVICE_*: FLUSH, ATOMIC WRITE */
	void *map;
	size_t map_len;
};

/* Attach a CQ / SRQ / QP to its ring memfd mapping (also used by the unit tests, which
 * build rings themselves). 0 or -EPROTO. */
int lib_cq_attach(struct lib_cq *cq, void *map, size_t map_len);
int lib_srq_attach(struct lib_srq *srq, void *map, size_t map_len);
int lib_qp_attach(struct lib_qp *qp, void *map, size_t map_len, uint32_t rq_offset);
void lib_wq_init(struct lib_wq *wq, uint32_t depth, uint32_t max_sge, uint32_t max_inline);
/* Producer: room for one more WQE at the ring's head within the granted depth? Loads cons
 * (acquire: the daemon has finished copying a slot before we overwrite it). */
bool lib_wq_room(struct lib_wq *wq);
/* Library-side teardown (no daemon call): unmap, free. */
void lib_cq_free(struct lib_cq *cq);
/* Acknowledge CQ (comp) or async events, mirrored into the public counters. */
void lib_cq_ack(struct lib_cq *cq, bool comp, uint32_t n);
void lib_srq_free(struct lib_srq *srq);
void lib_qp_free(struct lib_qp *qp);
void lib_mr_free(struct lib_mr *mr);
void lib_channel_free(struct odpemu_comp_channel *ch);

/* ---- host memory (maps.c, pin.c) ---- */
struct lib_vma {
	uintptr_t start, end;
	int prot;			/* PROT_* */
	bool shared;
	uint64_t offset;
	dev_t dev;
	ino_t ino;
	char path[256];			/* truncated beyond: opening by name checks the inode */
};
/* Every VMA of the process in address order (the text of /proc/self/maps). 0 or -errno;
 * *vmas to free(). */
int lib_maps_read(struct lib_vma **vmas, size_t *n);
/* The VMAs meeting [lo, hi) in address order: PROCMAP_QUERY, a lookup each (Linux 6.11+),
 * else the text read up to hi (ipc/maps.h). 0 or -errno; *vmas to free(). */
int lib_maps_range(uintptr_t lo, uintptr_t hi, struct lib_vma **vmas, size_t *n);

#define LIB_PIN_NAME "odpemu-pin"
/* In a fork child (atfork handler, before any malloc): every mapping of our pin memfds
 * becomes a private copy, as Linux 5.13+ copies pinned pages at fork (pin_fork.c). */
void lib_pin_fork_child(void);
struct lib_pin_seg {
	uint64_t len, fd_offset;
	int fd;				/* a duplicate the caller closes */
};
/* Describe the page-rounded [addr, addr+len) as segments of files the daemon can map, in
 * address order, so that it holds the very pages the process has: private memory is
 * first moved into memfds the library holds (reusing those of earlier moves); shared
 * memory is the object the process maps (opened by name, through a descriptor the
 * process has open on it, or through /proc/self/map_files with privilege). write: the
 * MR lets the NIC write (every page must be writable, as for a hardware pin).
 * 0 or -errno: EFAULT (not mapped, not readable, or read-only with write), EOPNOTSUPP
 * (memory the daemon cannot hold: hugetlb, special mappings, shared objects we cannot
 * reach; nothing was moved), E2BIG (more than max segments); *why says what. */
/* Run fn(arg) on a helper thread while this one sleeps in the kernel, writing nothing to
 * its stack (pin_park.c): fn's result, or -EOPNOTSUPP with *why when that cannot be
 * known. */
int lib_run_parked(int (*fn)(void *arg), void *arg, const char **why);
int lib_pin_range(uintptr_t addr, size_t len, bool write, struct lib_pin_seg *segs,
		  unsigned max, unsigned *nsegs, const char **why);
/* Tests: the number of registry entries (stale ones dropped first). */
size_t lib_pin_entries(void);
/* Tests: where the registry's entries are (heap memory: a range may hold them). */
const void *lib_pin_registry(void);

/* ---- userfaultfd for HELLO (uffd.c) ---- */
/* A userfaultfd with the API handshake done, or -1 when the kernel refuses one. */
int lib_uffd_open(void);
/* The UFFD_FEATURE_* the process's userfaultfd was opened with (0 before, or none). */
uint64_t lib_uffd_features(void);
/* CLIENT_INFO to c's daemon (clients.c): 0 or -errno. */
int lib_client_info(struct lib_context *c);

/* ---- the library's threads (thread.c) ---- */
/* Start fn(arg) on a detached thread with every signal blocked; return once fn has posted
 * ready (it does so when its set-up is done), or after 10 s. 0 or -errno. */
int lib_thread_spawn(void *(*fn)(void *), void *arg, sem_t *ready);

/* ---- the process's MMU-notifier relay thread (relay.c) ---- */
/* For a new session: a duplicate of the process's userfaultfd (-1 where the kernel
 * refused one: the seccomp route) and the daemon's end of a relay socket (both to send
 * with HELLO, then close), and our end (*peer, to pass to lib_relay_leave). 0 or -errno
 * (no thread: the device works without a notifier). */
int lib_relay_join(int *uffd, int *relay, int *peer);
void lib_relay_leave(int peer);
/* The seccomp route: peer's daemon supervises the process; forward what it sends back to
 * every other device (-1: none does any more). */
void lib_relay_set_source(int peer);
/* Wait (at most a second) until the relay has forwarded every event it has read. */
void lib_relay_settle(void);
/* In a fork child: forget the parent's (fork.c). */
void lib_relay_forget(void);

#endif
