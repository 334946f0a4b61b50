/* SPDX-License-Identifier: MIT */
/* layout — see layout.h. */
#include "layout.h"

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static unsigned min_u(uint64_t a, uint64_t b)
{
	return (unsigned)(a < b ? a : b);
}

/* Slots of a --cold region: the 256 MiB walk, at least `least`, within the cap. */
static unsigned cold_slots(uint64_t stride, unsigned least)
{
	uint64_t n = PERF_COLD_REGION / stride;

	if (n < least)
		n = least;
	return min_u(n, PERF_AREA_CAP / stride ? PERF_AREA_CAP / stride : 1);
}

/* Depth per QP so that qps * depth * stride * spread fits the cap. */
static unsigned capped_depth(unsigned depth, unsigned qps, uint64_t stride, unsigned spread)
{
	uint64_t fit = PERF_AREA_CAP / (stride * qps * spread);

	return min_u(depth, fit ? fit : 1);
}

static void send_bw(const struct perf_cfg *c, uint64_t size, bool server, struct perf_layout *l)
{
	uint64_t stride = c->cold ? round_up(size, PERF_COLD_ALIGN) : round_up(size, 64);
	unsigned least;

	/* --cold recycles a QP's slots a quarter at a time (bw.c): a quarter must hold every
	 * receive that can be outstanding */
	l->rx_depth = capped_depth(perf_rx_depth(c), c->qps, stride, c->cold ? 4 : 1);
	least = 4 * l->rx_depth;
	if (!server) {
		l->local_slots = c->qps * l->tx_depth;
		return;
	}
	l->per_qp = l->rx_depth;
	if (c->cold) {
		l->per_qp = cold_slots(stride, least * c->qps) / c->qps / 4 * 4;
		if (l->per_qp < least)
			l->per_qp = least;
	}
	l->target_slots = l->per_qp * c->qps;
	l->target_stride = stride;
}

void perf_layout(const struct perf_cfg *c, uint64_t size, bool server, struct perf_layout *l)
{
	uint64_t warm = round_up(size, 64), cold = round_up(size, PERF_COLD_ALIGN);
	uint64_t tstride = c->cold ? cold : warm;
	bool pingpong = c->lat && (c->test == PERF_WRITE || c->test == PERF_SEND);

	*l = (struct perf_layout){ .local_stride = warm, .target_stride = tstride,
		.tx_depth = capped_depth(c->tx_depth, c->qps, warm, 1), .rx_depth = 1 };
	if (c->test == PERF_SEND && !c->lat) {
		send_bw(c, size, server, l);
		return;
	}
	if (c->lat) {
		/* ping-pong: both sides receive; send alternates two posted receives */
		unsigned warm_slots = c->test == PERF_SEND ? 2 : 1;

		l->rx_depth = c->test == PERF_SEND ? 2 : 1;
		if (pingpong || server)
			l->target_slots = c->cold ? cold_slots(tstride, 4) : warm_slots;
		if ((pingpong || !server) && c->test != PERF_FLUSH)
			l->local_slots = 1;
		return;
	}
	if (server)
		l->target_slots = c->cold ? cold_slots(tstride, 2 * c->qps * l->tx_depth) :
				  c->qps * l->tx_depth;
	else if (c->test != PERF_FLUSH)
		l->local_slots = c->qps * l->tx_depth;
}
