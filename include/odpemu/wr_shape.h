/* SPDX-License-Identifier: MIT */
/*
 * odpemu/wr_shape.h — the shape rules of a send work request, written once for lib/ and
 * nic/: what ibv_post_send refuses synchronously (EINVAL with *bad_wr).
 *
 * libodpemu checks a WR before it writes it into the shared ring (lib/post.c); the daemon's
 * nic/ checks it again before it queues the WQE (nic/post.c), since a ring slot is the
 * client's memory. Both ask odpemu_wr_shape_ok, so what one accepts the other does, and the
 * rules read the opcode's properties from ODPEMU_WR_OPCODES (verbs_types.h), never a list
 * of opcodes. What only one side knows stays there: lib/ checks the UD address handle,
 * nic/ that a UD message fits the path MTU.
 *
 * Not installed: odpemu's own layers share it; applications see only the errno.
 */
#ifndef ODPEMU_WR_SHAPE_H
#define ODPEMU_WR_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "verbs_types.h"

#define ODPEMU_MAX_MSG		(1ull << 31)	/* IBA 9.4.3: a message is at most 2^31 bytes */
/* FLUSH (IBA 1.5 Memory Placement Extensions): placement types global | persistent, and
 * selectivity range (0) or MR (1); proto's ROCE_FETH_PLT_MASK and ROCE_FETH_SEL_MAX. */
#define ODPEMU_FLUSH_GLOBAL_BIT	0x1u	/* ibv_wr_flush's IBV_FLUSH_GLOBAL */
#define ODPEMU_FLUSH_PERSISTENT_BIT 0x2u	/* IBV_FLUSH_PERSISTENT */
#define ODPEMU_FLUSH_TYPES	(ODPEMU_FLUSH_GLOBAL_BIT | ODPEMU_FLUSH_PERSISTENT_BIT)
#define ODPEMU_FLUSH_LEVEL_MAX	1u
#define ODPEMU_SEND_FLAGS_ALL	(ODPEMU_SEND_FENCE | ODPEMU_SEND_SIGNALED | \
				 ODPEMU_SEND_SOLICITED | ODPEMU_SEND_INLINE)

/* What the rules look at, taken from either side's WR. */
struct odpemu_wr_shape {
	enum odpemu_qp_type qp_type;
	enum odpemu_wr_opcode opcode;
	unsigned send_flags;
	unsigned num_sge;
	uint64_t len;		/* the SGEs' sum; with no local buffer (ODPEMU_WRP_NO_LOCAL:
				 * FLUSH) the remote range's */
	uint64_t remote_addr;
	uint32_t max_inline;	/* the QP's */
	uint8_t flush_type, flush_level;	/* FLUSH's */
	uint64_t device_caps;	/* the QP's device's ODPEMU_DEVICE_* */
};

/* Inline data is copied at post time into the send queue: within the QP's max_inline, and
 * only where it is sent (a READ or atomic receives into its SGEs). */
static inline bool odpemu_wr_inline_ok(const struct odpemu_wr_shape *s, unsigned props)
{
	return !(s->send_flags & ODPEMU_SEND_INLINE) ||
	       (s->len <= s->max_inline && !(props & ODPEMU_WRP_RESPONSE));
}

/* FLUSH names at least one placement type, and a selectivity there is. */
static inline bool odpemu_wr_flush_ok(const struct odpemu_wr_shape *s)
{
	return s->flush_type && !(s->flush_type & ~ODPEMU_FLUSH_TYPES) &&
	       s->flush_level <= ODPEMU_FLUSH_LEVEL_MAX;
}

/* An operation the device offers: a FLUSH of placement types it has (FLUSH_GLOBAL,
 * FLUSH_PERSISTENT), an ATOMIC WRITE only with ATOMIC_WRITE. mlx5 has neither, and posting
 * one is an unknown opcode there (EINVAL; rdma-core does not even build the QP with it). */
static inline bool odpemu_wr_device_ok(const struct odpemu_wr_shape *s)
{
	uint64_t need = 0;

	if (s->opcode == ODPEMU_WR_ATOMIC_WRITE)
		need = ODPEMU_DEVICE_ATOMIC_WRITE;
	if (s->opcode == ODPEMU_WR_FLUSH)
		need = (s->flush_type & ODPEMU_FLUSH_GLOBAL_BIT ? ODPEMU_DEVICE_FLUSH_GLOBAL : 0) |
		       (s->flush_type & ODPEMU_FLUSH_PERSISTENT_BIT ? ODPEMU_DEVICE_FLUSH_PERSISTENT : 0);
	return (s->device_caps & need) == need;
}

/* true: s may be posted (0 from post_send); false: EINVAL. */
static inline bool odpemu_wr_shape_ok(const struct odpemu_wr_shape *s)
{
	unsigned props = odpemu_wr_props(s->opcode);

	if (!odpemu_wr_allowed(s->qp_type, s->opcode) || (s->send_flags & ~ODPEMU_SEND_FLAGS_ALL))
		return false;
	if (!odpemu_wr_inline_ok(s, props) || s->len > ODPEMU_MAX_MSG)
		return false;
	/* IBA C9-29 (atomics), IBA 1.5 (ATOMIC_WRITE): one naturally aligned 8-byte word */
	if ((props & ODPEMU_WRP_WORD8) && (s->len != 8 || (s->remote_addr & 7)))
		return false;
	if ((props & (ODPEMU_WRP_NO_LOCAL | ODPEMU_WRP_LOCAL)) && s->num_sge)
		return false;
	if (!odpemu_wr_device_ok(s))
		return false;
	return s->opcode != ODPEMU_WR_FLUSH || odpemu_wr_flush_ok(s);
}

#endif
