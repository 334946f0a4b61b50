/* SPDX-License-Identifier: MIT */
/*
 * odpemu/verbs_ext.h — what odpemu's drop-in libibverbs offers beyond rdma-core 44's ABI,
 * for programs built against Debian 12's <infiniband/verbs.h> (rdma-core 44).
 *
 * 1. The FLUSH verb (IBA 1.5 "Memory Placement Extensions"). rdma-core 44 has none; later
 *    rdma-core adds ibv_wr_flush and these constants with exactly these names, values and
 *    signature, so code written for the later rdma-core builds against this header
 *    unchanged. The method pointer sits right after struct ibv_qp_ex, where the later
 *    rdma-core puts it, so binaries built against its headers call it too.
 *    Use: register the target MR with IBV_ACCESS_FLUSH_GLOBAL and/or _PERSISTENT, create
 *    the QP with ibv_create_qp_ex(send_ops_flags |= IBV_QP_EX_WITH_FLUSH), then
 *    ibv_wr_start / ibv_wr_flush / ibv_wr_complete; the completion's opcode is IBV_WC_FLUSH.
 * 2. The MR decoherence async event: a pinned MR whose pages the process unmapped or
 *    remapped (DMA keeps reaching the old pages, as on hardware) is reported through
 *    ibv_get_async_event with event_type ODPEMU_IBV_EVENT_MR_DECOHERENCE; the MR is
 *    odpemu_ibv_event_mr(&event). Acknowledge it with ibv_ack_async_event as any other.
 *
 * 3. The mapping-change notifier for registration caches (docs/regcache.md): "if any
 *    mapping in [addr, addr+len) changes, write a non-zero word to *z", before the changing
 *    call returns: odpemu_ibv_watch_create / odpemu_ibv_watch_destroy, libodpemu's
 *    odpemu_watch_create/destroy (include/odpemu/odpemu.h, which says what is seen and
 *    what it costs) on the context behind an ibv_context. Exported at version node
 *    ODPEMU_VERBS_EXT_1: a program that calls them runs on odpemu's libibverbs only.
 * 4. MR leases (docs/regcache.md): ibv_reg_mr with ODPEMU_IBV_ACCESS_LEASE; a mapping
 *    change under the MR raises ODPEMU_IBV_EVENT_MR_DECOHERENCE and waits for its
 *    ibv_ack_async_event (or the daemon's lease timeout, which revokes the MR); then
 *    odpemu_ibv_restore_mr re-points the MR at the new pages, same lkey and rkey.
 *    libodpemu's odpemu_restore_mr (include/odpemu/odpemu.h) says the rules. Also at
 *    ODPEMU_VERBS_EXT_1.
 * 5. The device's counters (what `rdma stat` and odpemu-ctl stat show: page_faults,
 *    page_invalidations, flush_persist_syncs, ...): odpemu_ibv_query_counters, at
 *    ODPEMU_VERBS_EXT_1. A program that must also run on other libraries looks it up with
 *    dlsym(RTLD_DEFAULT, "odpemu_ibv_query_counters") (odpemu-brick's STAT does).
 *
 * Include after <infiniband/verbs.h>. Do not include with rdma-core >= 45 headers, which
 * define the FLUSH names themselves.
 */
#ifndef ODPEMU_VERBS_EXT_H
#define ODPEMU_VERBS_EXT_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* ---- FLUSH (later rdma-core's values) ---- */
enum {
	IBV_ACCESS_FLUSH_GLOBAL = 1 << 8,		/* enum ibv_access_flags */
	IBV_ACCESS_FLUSH_PERSISTENT = 1 << 9,
	IBV_WR_FLUSH = 14,				/* enum ibv_wr_opcode */
	IBV_WC_FLUSH = 8,				/* enum ibv_wc_opcode */
	IBV_QP_EX_WITH_FLUSH = 1 << 11,			/* enum ibv_qp_create_send_ops_flags */
	IBV_ODP_SUPPORT_FLUSH = 1 << 6,			/* enum ibv_odp_transport_cap_bits */
	IBV_ODP_SUPPORT_ATOMIC_WRITE = 1 << 7,
};
/* device_cap_flags_ex bits (ib_uverbs_device_cap_flags). */
#define IB_UVERBS_DEVICE_FLUSH_GLOBAL		(1ULL << 38)
#define IB_UVERBS_DEVICE_FLUSH_PERSISTENT	(1ULL << 39)
#define IB_UVERBS_DEVICE_ATOMIC_WRITE		(1ULL << 40)

/* ibv_wr_flush's type (bits) and level. */
enum ib_placement_type {
	IBV_FLUSH_GLOBAL = 1U << 0,
	IBV_FLUSH_PERSISTENT = 1U << 1,
};
enum ib_selectivity_level {
	IBV_FLUSH_RANGE = 0,	/* [remote_addr, remote_addr + len) */
	IBV_FLUSH_MR,		/* the whole MR named by rkey */
};

/* The QP as the later rdma-core lays it out: struct ibv_qp_ex, then wr_flush. */
struct odpemu_ibv_qp_ex_flush {
	struct ibv_qp_ex qpx;
	void (*wr_flush)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len,
			 uint8_t type, uint8_t level);
};

static inline void ibv_wr_flush(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr,
				size_t len, uint8_t type, uint8_t level)
{
	((struct odpemu_ibv_qp_ex_flush *)qp)->wr_flush(qp, rkey, remote_addr, len, type, level);
}

/* ---- MR decoherence ---- */
#define ODPEMU_IBV_EVENT_MR_DECOHERENCE ((enum ibv_event_type)0x100)

/* The MR an ODPEMU_IBV_EVENT_MR_DECOHERENCE event names (ibv_async_event has no MR member;
 * the library stores it in the union's pointer). */
static inline struct ibv_mr *odpemu_ibv_event_mr(const struct ibv_async_event *event)
{
	return (struct ibv_mr *)(void *)event->element.cq;
}

/* ---- the mapping-change notifier (3. above) ---- */
struct odpemu_watch;
/* 0 or an errno value (also in errno): EINVAL (not one of odpemu's contexts, len 0, z
 * NULL or not 8-byte aligned), ENOSPC, EXDEV, ENODEV; see odpemu_watch_create. */
int odpemu_ibv_watch_create(struct ibv_context *context, const void *addr, size_t len,
			    uint64_t *z, struct odpemu_watch **watch);
int odpemu_ibv_watch_destroy(struct odpemu_watch *watch);

/* ---- MR leases (4. above) ---- */
#define ODPEMU_IBV_ACCESS_LEASE ((enum ibv_access_flags)(1 << 15))
/* 0 or an errno value (also in errno): EINVAL (not odpemu's MR, not leased, or coherent),
 * EACCES (revoked), EFAULT, ENOMEM; see odpemu_restore_mr. */
int odpemu_ibv_restore_mr(struct ibv_mr *mr);

/* ---- device counters ---- */
struct odpemu_ibv_counter {
	char name[40];		/* the daemon's stable names (docs/emu.md) */
	uint64_t value;
};
/* Up to max counters of the context's device: the count, or -1 with errno. */
int odpemu_ibv_query_counters(struct ibv_context *context, struct odpemu_ibv_counter *out,
			      int max);
typedef int (*odpemu_ibv_query_counters_fn)(struct ibv_context *, struct odpemu_ibv_counter *,
					    int);

#endif
