/* SPDX-License-Identifier: MIT */
/* The wire: ports.send puts a copy of the packet in a priority queue by delivery time;
 * the event loop hands due packets to nic_rx of the device owning the destination GID.
 * Seeded impairments: loss, duplication (a second copy with its own delay), reordering (a
 * packet is held back past later ones) and delay. Apart from held-back packets a link
 * (source, destination) stays FIFO, as a real path mostly does: RoCE assumes in-order
 * paths, and go-back-N on a link that shuffles every burst is a storm by design. */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define UD_SEND_ONLY 0x64
#define UD_SEND_ONLY_IMM 0x65

struct pkt {
	int src, dst;
	size_t len;
	uint8_t data[];
};

static int nic_by_gid(const struct sim *s, const struct nic_gid *g)
{
	for (unsigned i = 0; i < s->cfg.nnics; i++)
		if (!memcmp(s->nics[i].gid.raw, g->raw, sizeof(g->raw)))
			return (int)i;
	return -1;
}

static bool chance_ppm(struct sim *s, unsigned ppm)
{
	return ppm && t_below(&s->rng, 1000000) < ppm;
}

static uint64_t link_last[SIM_MAX_NICS][SIM_MAX_NICS];	/* FIFO links without reordering */

static void schedule(struct sim *s, int src, int dst, const uint8_t *bytes, size_t len)
{
	const struct net_cfg *c = &s->cfg.net;
	struct pkt *p = malloc(sizeof(*p) + len);
	uint64_t t = s->now + c->delay_min + t_below(&s->rng, c->delay_max - c->delay_min + 1);

	if (!p)
		abort();
	p->src = src;
	p->dst = dst;
	p->len = len;
	memcpy(p->data, bytes, len);
	if (chance_ppm(s, c->reorder_ppm)) {
		t += c->reorder_extra;	/* held back: later packets overtake it */
		s->net.reordered++;
	} else {
		if (t < link_last[src][dst])
			t = link_last[src][dst];
		link_last[src][dst] = t;
	}
	pq_push(&s->net_q, t, s->seq++, p);
}

void net_send_port(void *ctx, const struct nic_gid *dst, const uint8_t *pkt, size_t len)
{
	struct simnic *n = ctx;
	struct sim *s = n->sim;
	int d = nic_by_gid(s, dst);

	s->net.sent++;
	if (s->verbose >= 3)
		sim_trace(s, "send nic%d op 0x%02x qp %u psn %u len %zu aeth 0x%02x", n->idx, pkt[0],
			  (unsigned)pkt[5] << 16 | pkt[6] << 8 | pkt[7], (unsigned)pkt[9] << 16 | pkt[10] << 8 | pkt[11], len,
			  len > 16 ? pkt[12] : 0);
	if (d < 0) {
		sim_fail(s, "nic%d sent a packet to an unknown GID", n->idx);
		return;
	}
	if (len < 16 || len > 4096 + 128) {
		sim_fail(s, "nic%d sent a packet of %zu bytes", n->idx, len);
		return;
	}
	if (s->net_q.n > 200000) {
		sim_fail(s, "nic%d: more than 200000 packets on the wire (a send storm)", n->idx);
		return;
	}
	if (chance_ppm(s, s->cfg.net.loss_ppm)) {
		s->net.lost++;
		return;
	}
	schedule(s, n->idx, d, pkt, len);
	if (chance_ppm(s, s->cfg.net.dup_ppm)) {
		s->net.duplicated++;
		schedule(s, n->idx, d, pkt, len);
	}
}

/* UD deliveries are counted per message, so the model knows how many receives a
 * message may cause (duplication included). The message id is the payload's first 8 bytes. */
static void note_ud(struct sim *s, const struct pkt *p)
{
	uint8_t op = p->data[0];
	size_t off = 12 + 8 + (op == UD_SEND_ONLY_IMM ? 4 : 0);
	uint64_t id;

	if (op != UD_SEND_ONLY && op != UD_SEND_ONLY_IMM)
		return;
	if (p->len < off + 8 + 4)
		return;
	memcpy(&id, p->data + off, 8);
	if ((id >> 40) != 0x5544u || (id & (uint64_t)0xFFFFFFFFFF) >= s->nud)
		return;
	s->ud[id & (uint64_t)0xFFFFFFFFFF]->delivered++;
}

unsigned net_deliver_due(struct sim *s)
{
	unsigned n = 0;
	struct ev e;

	while (!s->failed && pq_next(&s->net_q) <= s->now && pq_pop(&s->net_q, &e)) {
		struct pkt *p = e.p;
		struct simnic *dst = &s->nics[p->dst];

		note_ud(s, p);
		s->net.delivered++;
		if (s->verbose >= 3)
			sim_trace(s, "pkt nic%d->nic%d op 0x%02x qp %u psn %u%s len %zu", p->src, p->dst, p->data[0],
				  (unsigned)p->data[5] << 16 | p->data[6] << 8 | p->data[7],
				  (unsigned)p->data[9] << 16 | p->data[10] << 8 | p->data[11],
				  p->data[8] & 0x80 ? " A" : "", p->len);
		nic_rx_from(dst->nic, p->data, p->len, &s->nics[p->src].gid,
			    (uint16_t)(49152 + p->src), s->now);
		free(p);
		n++;
	}
	return n;
}

uint64_t net_next(const struct sim *s)
{
	return pq_next(&s->net_q);
}

unsigned net_inflight_between(const struct sim *s, int a, int b)
{
	unsigned n = 0;

	for (size_t i = 0; i < s->net_q.n; i++) {
		const struct pkt *p = s->net_q.v[i].p;

		if ((p->src == a && p->dst == b) || (p->src == b && p->dst == a))
			n++;
	}
	return n;
}

void net_free(struct sim *s)
{
	struct ev e;

	while (pq_pop(&s->net_q, &e))
		free(e.p);
	pq_free(&s->net_q);
	memset(link_last, 0, sizeof(link_last));
}
