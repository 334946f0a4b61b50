/* SPDX-License-Identifier: MIT */
/*
 * compat/verbs — the drop-in libibverbs.so.1: rdma-core 44's public ABI over libodpemu.
 *
 * Every object a client holds is the ABI struct of <infiniband/verbs.h> embedded first in
 * a compat struct that also points at the libodpemu object behind it (container_of by a
 * cast). Those libodpemu objects carry the compat object in their user-context field
 * (qp_context, cq_context, srq_context), so completions and async events find their way
 * back without a lookup.
 *
 * Layout rules the clients depend on (../shared/VERBS-ABI.md §0, §2):
 *  - a device is laid out like rdma-core's struct verbs_device (ops at offset 664), so the
 *    vendor libraries that Debian's perftest, UCX and libfabric load (libmlx5, libefa) see
 *    "not mine" when they compare that pointer with their own;
 *  - a context is a whole struct verbs_context (sz, abi_compat, the extended slots), one
 *    block, with clients handed &vctx.context;
 *  - ibv_send_wr, ibv_recv_wr, ibv_sge and ibv_wc share libodpemu's layouts, so the fast
 *    path passes them through without copying (checked with static_assert in post.c).
 *
 * Locks: none of our own on the fast path (libodpemu takes its per-queue lock);
 * cv_context.lock guards the MR list (async MR events) and the per-QP wr_* batches are
 * the caller's to serialise, as in rdma-core (ibv_wr_start .. ibv_wr_complete).
 */
#ifndef ODPEMU_COMPAT_VERBS_H
#define ODPEMU_COMPAT_VERBS_H

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "odpemu/odpemu.h"
#include "odpemu/verbs_ext.h"

/* Definitions of exported symbols carry this (the map file assigns their versions). */
#define CV_EXPORT __attribute__((visibility("default")))

/* ---- devices (device.c) ---- */

/* rdma-core's struct verbs_device as the vendor libraries read it: the ibv_device, then
 * the ops pointer they compare with theirs. */
struct cv_device {
	struct ibv_device dev;
	const void *ops;		/* offset 664: ours, never equal to a vendor's */
	int refcount;
	void *entry[2];
	void *sysfs;
	uint64_t core_support;
	/* ours */
	uint64_t guid;			/* node GUID, big-endian as ibv_get_device_guid gives it */
	int index;			/* ibv_get_device_index */
};

struct cv_device *cv_dev(struct ibv_device *d);
/* The device of that name (listed or not yet: devices live as long as the library). NULL
 * with errno ENOMEM. */
struct ibv_device *cv_device_named(const char *name);

/* ---- contexts (context.c) ---- */

struct cv_mr;

struct cv_context {
	struct verbs_context vctx;	/* ends with the ibv_context clients hold */
	struct odpemu_context *odp;
	struct cv_device *dev;
	bool ipv4;			/* the device's address is IPv4: UD completions get sl 2 */
	pthread_mutex_t lock;		/* mrs */
	struct cv_mr *mrs;		/* every live MR, for MR async events */
};

static inline struct cv_context *cv_ctx(struct ibv_context *c)
{
	return (struct cv_context *)((char *)c - offsetof(struct cv_context, vctx.context));
}
static inline struct odpemu_context *cv_odp(struct ibv_context *c)
{
	return cv_ctx(c)->odp;
}

/* The extended ops every context carries (context.c fills the verbs_context slots). */
void cv_set_ops(struct verbs_context *v);
/* A context of device around odp (opened or imported: import.c); odp is closed on
 * failure. NULL with errno. */
struct ibv_context *cv_context_wrap(struct ibv_device *device, struct odpemu_context *odp);

/* ---- objects ---- */

struct cv_pd {
	struct ibv_pd pd;
	struct odpemu_pd *odp;
};
static inline struct cv_pd *cv_pd(struct ibv_pd *p) { return (struct cv_pd *)p; }

struct cv_mr {
	struct ibv_mr mr;
	struct odpemu_mr *odp;
	unsigned int access;		/* as registered (rereg keeps what it does not change) */
	struct cv_mr *next;		/* cv_context.mrs */
};
static inline struct cv_mr *cv_mr(struct ibv_mr *m) { return (struct cv_mr *)m; }

struct cv_mw {
	struct ibv_mw mw;
	struct odpemu_mw *odp;
};
static inline struct cv_mw *cv_mw(struct ibv_mw *m) { return (struct cv_mw *)m; }
/* The MR whose libodpemu object is odp, or NULL (under the context's lock). */
struct cv_mr *cv_mr_find(struct cv_context *c, const struct odpemu_mr *odp);
/* pd_mr.c: onto / off the context's list (MR events find it there); the ibv_mr's fields
 * from its libodpemu MR. */
void cv_mr_track(struct cv_context *c, struct cv_mr *m);
void cv_mr_untrack(struct cv_context *c, struct cv_mr *m);
void cv_mr_fill(struct cv_mr *m, struct ibv_pd *pd);

struct cv_channel {
	struct ibv_comp_channel ch;
	struct odpemu_comp_channel *odp;
};

struct cv_cq {
	struct ibv_cq_ex cqx;		/* its head is the ibv_cq (ibv_cq_ex_to_cq casts) */
	struct odpemu_cq *odp;
	struct cv_context *ctx;
	uint64_t wc_flags;		/* create_cq_ex's: what the read_* methods may report */
	struct ibv_wc cur;		/* start/next_poll: the completion being read */
	uint64_t cur_ts;
};
static inline struct cv_cq *cv_cq(struct ibv_cq *c) { return (struct cv_cq *)c; }

struct cv_srq {
	struct ibv_srq srq;
	struct odpemu_srq *odp;
};
static inline struct cv_srq *cv_srq(struct ibv_srq *s) { return (struct cv_srq *)s; }

struct cv_ah {
	struct ibv_ah ah;
	struct odpemu_ah *odp;
};
static inline struct cv_ah *cv_ah(struct ibv_ah *a) { return (struct cv_ah *)a; }

/* Work requests built by the ibv_qp_ex wr_* methods between wr_start and wr_complete:
 * slots grow as needed and are linked into a chain at wr_complete, which posts them
 * with one doorbell. */
#define CV_WR_SGE	32		/* the device's max_sge */
#define CV_WR_INLINE	1024		/* at least the device's max_inline_data */
struct cv_wr_slot {
	struct odpemu_send_wr wr;
	struct odpemu_sge sge[CV_WR_SGE];
	uint8_t inl[CV_WR_INLINE];	/* inline data copied at the wr_set_inline_* call */
};
struct cv_wr_batch {
	unsigned n, cap;
	int err;			/* the first error since wr_start: wr_complete returns it */
	struct cv_wr_slot *slot;
};

struct cv_qp {
	struct ibv_qp_ex qpx;		/* its head is the ibv_qp */
	/* Where later rdma-core's struct ibv_qp_ex has it (odpemu/verbs_ext.h). */
	void (*wr_flush)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len,
			 uint8_t type, uint8_t level);
	struct odpemu_qp *odp;
	struct cv_context *ctx;
	uint64_t send_ops;		/* create_qp_ex's send_ops_flags (0: plain QP) */
	uint32_t max_inline;
	uint8_t sgid_index;		/* what the client set (the daemon needs one less) */
	struct cv_wr_batch batch;	/* qp_ex only */
};
static inline struct cv_qp *cv_qp(struct ibv_qp *q) { return (struct cv_qp *)q; }

/* ---- fast path (post.c) ---- */
int cv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
/* mw.c */
struct ibv_mw *cv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int cv_dealloc_mw(struct ibv_mw *mw);
int cv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
/* A BIND_MW's window and MR as libodpemu's (the rest of o was copied already). */
void cv_bind_to_odp(struct odpemu_send_wr *o, const struct ibv_send_wr *wr);
int cv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int cv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int cv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int cv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
/* Post a chain of libodpemu WRs built from the client's (UD AHs and the wr_* API). */
int cv_post_odp(struct cv_qp *qp, struct odpemu_send_wr *wr, struct odpemu_send_wr **bad);

/* ---- the verbs_context slots ---- */
int cv_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a, size_t len);
int cv_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
		       struct ibv_device_attr_ex *a, size_t len);
int cv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 struct ibv_sge *sg, uint32_t num_sge);
struct ibv_cq_ex *cv_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *cv_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *attr);
struct ibv_srq *cv_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *attr);
int cv_close_xrcd(struct ibv_xrcd *xrcd);
/* qp_ex.c: the wr_* methods of a QP created with SEND_OPS_FLAGS. 0 or errno. */
int cv_qp_ex_init(struct cv_qp *qp);
/* cq_ex.c: the start/next/end_poll and read_* methods. */
void cv_cq_ex_init(struct cv_cq *cq);

/* ---- conversions (convert.c): one function per direction ---- */
void cv_ah_to_odp(const struct ibv_ah_attr *in, struct odpemu_ah_attr *out);
void cv_ah_from_odp(const struct odpemu_ah_attr *in, struct ibv_ah_attr *out);
void cv_qp_attr_to_odp(const struct ibv_qp_attr *in, struct odpemu_qp_attr *out);
void cv_qp_attr_from_odp(const struct odpemu_qp_attr *in, struct ibv_qp_attr *out);
/* GID indexes: the client's table has the link-local GID at 0 in front of the daemon's. */
static inline uint8_t cv_sgid_to_odp(uint8_t index) { return index ? index - 1 : 0; }

/* Fail the verbs way: errno = err; return err (positive). */
static inline int cv_fail(int err)
{
	errno = err;
	return err;
}
/* NULL with errno. */
static inline void *cv_fail_null(int err)
{
	errno = err;
	return NULL;
}

/* ---- IBVERBS_PRIVATE_34 functions that do work (rdma-core's driver.h, not installed) ---- */
/* Exported by libibverbs without a declaration in the installed headers. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

enum cv_gid_type_sysfs { CV_GID_TYPE_SYSFS_IB_ROCE_V1 = 0, CV_GID_TYPE_SYSFS_ROCE_V2 = 1 };
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum cv_gid_type_sysfs *type);

/* fork.c: whether ibv_fork_init ran (pinned registrations then get MADV_DONTFORK). */
bool cv_fork_enabled(void);
/* An MR was registered: ibv_fork_init is now too late (rdma-core's rule). */
void cv_fork_mr_registered(void);

/* The odpemu context behind an ibv_context of ours (ODPEMU_PRIVATE_1, for librdmacm and
 * the verbs extensions); NULL for any other. */
CV_EXPORT struct odpemu_context *odpemu_compat_context(struct ibv_context *verbs);

#endif
