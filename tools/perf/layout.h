/* SPDX-License-Identifier: MIT */
/*
 * layout — how many buffer slots each side needs for one message size, and how far apart.
 *
 * Each side has two areas of slots:
 *  - the target area, where the peer's operations land (WRITE target, READ source, atomic
 *    target, FLUSH range, receive buffers); --cold spreads it over a large region, one
 *    fault-around window per message, so each message meets pages the NIC never mapped;
 *  - the local area, our own SGEs (WRITE and SEND source, READ sink, atomic result);
 *    --churn gives each of its slots a mapping of its own.
 * One slot per message in flight, so a message is never overwritten before it is checked.
 */
#ifndef ODPEMU_TOOLS_PERF_LAYOUT_H
#define ODPEMU_TOOLS_PERF_LAYOUT_H

#include "perf.h"

/* An area larger than this is made shallower (fewer messages in flight). */
#define PERF_AREA_CAP (1ull << 30)

struct perf_layout {
	unsigned target_slots, local_slots;
	uint64_t target_stride, local_stride;
	unsigned tx_depth;	/* per QP, after the cap */
	unsigned rx_depth;	/* per QP (send) */
	/* send --bw: each QP receives into target slots [q * per_qp, (q + 1) * per_qp) */
	unsigned per_qp;
};

void perf_layout(const struct perf_cfg *c, uint64_t size, bool server, struct perf_layout *l);

#endif
