/* SPDX-License-Identifier: MIT */
/*
 * ipc_ring — the layout of the shared-memory rings (ipc.h) and the index arithmetic both
 * sides use, so the library and the daemon cannot disagree about where a slot is.
 *
 * A memfd holds one ring (CQ, SRQ) or two (QP: SQ at 0, RQ at rq_offset). Each ring is a
 * struct ipc_ring header (its own cache lines) followed, at header.offset from the start
 * of the memfd, by size slots. Producer: write the slot, then store prod (release).
 * Consumer: load prod (acquire), read the slot, then store cons (release). Indices are
 * free-running uint32_t; the ring holds prod - cons entries.
 */
#ifndef ODPEMU_IPC_RING_H
#define ODPEMU_IPC_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc.h"

#define IPC_RING_HDR_BYTES	((uint32_t)((sizeof(struct ipc_ring) + 63) & ~(size_t)63))
#define IPC_RING_MAX		(1u << 16)	/* slots per ring */
#define IPC_PAGE		4096u
#define IPC_MAX_SLOT		4096u	/* bytes per slot: caps keep SGEs and inline data under it */

static inline uint32_t ipc_pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n && p < IPC_RING_MAX)
		p <<= 1;
	return p;
}

static inline uint32_t ipc_align(uint32_t n, uint32_t a)
{
	return (n + a - 1) & ~(a - 1);
}

/* Slot sizes. An SQ slot holds the SGE array or the inline bytes, whichever is larger. */
static inline uint32_t ipc_sq_slot(uint32_t max_sge, uint32_t max_inline)
{
	uint32_t sges = max_sge * (uint32_t)sizeof(struct ipc_sge);

	return ipc_align((uint32_t)sizeof(struct ipc_swqe) + (sges > max_inline ? sges : max_inline), 8);
}

static inline uint32_t ipc_rq_slot(uint32_t max_sge)
{
	return ipc_align((uint32_t)sizeof(struct ipc_rwqe) + max_sge * (uint32_t)sizeof(struct ipc_sge), 8);
}

static inline uint32_t ipc_cq_slot(void)
{
	return ipc_align((uint32_t)sizeof(struct ipc_cqe), 8);
}

/* Bytes a ring of `size` slots of `slot` bytes takes, header included, page rounded. */
static inline uint32_t ipc_ring_bytes(uint32_t size, uint32_t slot)
{
	return ipc_align(IPC_RING_HDR_BYTES + size * slot, IPC_PAGE);
}

/* Daemon side: initialise a ring header at base + at, with its slots right after it. */
static inline void ipc_ring_init(void *base, uint32_t at, uint32_t size, uint32_t slot)
{
	struct ipc_ring *r = (struct ipc_ring *)((char *)base + at);

	atomic_store_explicit(&r->prod, 0, memory_order_relaxed);
	atomic_store_explicit(&r->cons, 0, memory_order_relaxed);
	r->size = size;
	r->slot = slot;
	r->offset = at + IPC_RING_HDR_BYTES;
}

/* Slot idx of a ring whose slots start at `offset` (each side keeps its own copy of
 * offset, size and slot: the daemon never reads them back from shared memory). */
static inline void *ipc_ring_slot(void *base, uint32_t offset, uint32_t size, uint32_t slot,
				  uint32_t idx)
{
	return (char *)base + offset + (size_t)(idx & (size - 1)) * slot;
}

/* Layout of a QP's memfd: SQ ring at 0, RQ ring (absent with an SRQ) after it. */
struct ipc_qp_layout {
	uint32_t sq_size, sq_slot, rq_size, rq_slot, rq_offset, map_len;
};
static inline struct ipc_qp_layout ipc_qp_layout(uint32_t max_send_wr, uint32_t max_send_sge,
						  uint32_t max_inline, uint32_t max_recv_wr,
						  uint32_t max_recv_sge, int has_rq)
{
	struct ipc_qp_layout l;

	l.sq_size = ipc_pow2(max_send_wr ? max_send_wr : 1);
	l.sq_slot = ipc_sq_slot(max_send_sge, max_inline);
	l.rq_size = has_rq ? ipc_pow2(max_recv_wr ? max_recv_wr : 1) : 0;
	l.rq_slot = has_rq ? ipc_rq_slot(max_recv_sge) : 0;
	l.rq_offset = ipc_ring_bytes(l.sq_size, l.sq_slot);
	l.map_len = l.rq_offset + (has_rq ? ipc_ring_bytes(l.rq_size, l.rq_slot) : 0);
	return l;
}

#endif
