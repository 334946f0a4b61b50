/* SPDX-License-Identifier: MIT */
/*
 * ud — one UD round: a UD pair across the hosts, MRs of drawn kinds, one side sends n
 * datagrams (SEND ± imm, 16 B .. the path MTU) into n receive WQEs at the other. UD is
 * unreliable: the wire loses and duplicates datagrams, and an ODP receive buffer that is
 * not present drops one (nic/ud.c). So what is checked is that whatever arrives is a
 * datagram this round sent, whole: GRH + its length, its header, its pattern, its imm,
 * its source QP; duplicates are counted (the wire's --wire-dup makes them). Every send
 * completes (UD completes on transmission); every receive WQE completes exactly once, with
 * a datagram or flushed by the teardown.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ledger.h"
#include "pattern.h"
#include "round.h"

#define UD_DEPTH 256u
#define STRIDE 8192u			/* one datagram: GRH + up to 4096 bytes */
#define REGION (UD_DEPTH * STRIDE)
#define GRH 40u
#define QKEY 0x11111111u
#define MAGIC 0x50a4d47au
#define WINDOW 32u

struct ud_hdr {
	uint32_t magic, round;
	uint64_t seq;
};

struct dgram {
	uint32_t len;			/* bytes sent, header included */
	bool imm;
	uint8_t seen;
	uint64_t seed;
};

struct ud {
	struct soak_w *w;
	struct h_pair p;
	uint8_t *buf[2];
	struct odpemu_mr *mr[2];
	enum soak_mem kind[2];
	struct odpemu_ah *ah;
	int snd;			/* the sending side; !snd receives */
	unsigned n, sent_ok, inflight;
	struct dgram d[UD_DEPTH];
	uint8_t rx_slot[UD_DEPTH];	/* ledger ops: receive WQE i is &rx_slot[i] */
	long long last_rx;
	struct ledger l;
};

static void on_wc(void *round, int side, const struct odpemu_wc *wc, void *op)
{
	struct ud *u = round;
	const uint8_t *p;
	struct ud_hdr h;
	struct dgram *d;
	unsigned slot;

	if (side == u->snd) {
		u->inflight--;
		u->sent_ok += wc->status == ODPEMU_WC_SUCCESS;
		return;
	}
	u->last_rx = soak_ms();
	if (wc->status != ODPEMU_WC_SUCCESS)
		return;
	slot = (unsigned)((uint8_t *)op - u->rx_slot);
	p = u->buf[!u->snd] + (size_t)slot * STRIDE + GRH;
	if (wc->byte_len < GRH + sizeof(h) || wc->byte_len > STRIDE) {
		soak_fail(u->w->st, "%s: datagram of %u bytes (GRH included)", u->l.what,
			  wc->byte_len);
		return;
	}
	memcpy(&h, p, sizeof(h));
	if (h.magic != MAGIC || h.round != u->w->round || h.seq >= u->n) {
		soak_fail(u->w->st, "%s: a datagram this round never sent (magic %#x, round %u, seq "
			  "%" PRIu64 ")", u->l.what, h.magic, h.round, h.seq);
		return;
	}
	d = &u->d[h.seq];
	if (wc->byte_len != GRH + d->len || !(wc->wc_flags & ODPEMU_WC_GRH) ||
	    wc->src_qp != u->p.s[u->snd].qp->qp_num || !!(wc->wc_flags & ODPEMU_WC_WITH_IMM) != d->imm ||
	    (d->imm && ntohl(wc->imm_data) != (uint32_t)d->seed)) {
		soak_fail(u->w->st, "%s: datagram %" PRIu64 ": byte_len %u (want %u), flags %#x, "
			  "src_qp %u (want %u)", u->l.what, h.seq, wc->byte_len, GRH + d->len,
			  wc->wc_flags, wc->src_qp, u->p.s[u->snd].qp->qp_num);
		return;
	}
	if (pat_check(d->seed, p + sizeof(h), d->len - sizeof(h)) >= 0) {
		soak_fail(u->w->st, "%s: datagram %" PRIu64 " of %u bytes: payload differs from what "
			  "was sent", u->l.what, h.seq, d->len);
		return;
	}
	if (d->seen++)
		SOAK_ADD(u->w->st->ud_dups, 1);
	else
		SOAK_ADD(u->w->st->ud_received, 1);
	SOAK_ADD(u->w->st->bytes, d->len);
}

static bool post_recvs(struct ud *u)
{
	int rcv = !u->snd;

	for (unsigned i = 0; i < u->n; i++) {
		struct odpemu_sge sge = { (uintptr_t)u->buf[rcv] + (size_t)i * STRIDE, STRIDE,
			u->mr[rcv]->lkey };
		struct odpemu_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
		int rc;

		wr.wr_id = ledger_post(&u->l, rcv, 1, &u->rx_slot[i]);
		if ((rc = odpemu_post_recv(u->p.s[rcv].qp, &wr, &bad))) {
			ledger_unpost(&u->l, rcv, 1);
			soak_fail(u->w->st, "%s: UD post_recv: %s", u->l.what, strerror(rc));
			return false;
		}
	}
	return true;
}

static bool post_send(struct ud *u, unsigned seq, uint32_t mtu)
{
	struct dgram *d = &u->d[seq];
	uint8_t *p = u->buf[u->snd] + (size_t)seq * STRIDE;
	struct ud_hdr h = { MAGIC, u->w->round, seq };
	struct odpemu_sge sge;
	struct odpemu_send_wr wr = { .sg_list = &sge, .num_sge = 1,
		.send_flags = ODPEMU_SEND_SIGNALED,
		.wr.ud = { u->ah, u->p.s[!u->snd].qp->qp_num, QKEY } }, *bad;
	int rc;

	d->len = (uint32_t)sizeof(h) + soak_len(u->w, mtu - (uint32_t)sizeof(h));
	d->imm = t_below(&u->w->rng, 2);
	d->seed = pat_seed(u->w->pat, u->w->nwr++);
	memcpy(p, &h, sizeof(h));
	pat_fill(d->seed, p + sizeof(h), d->len - sizeof(h));
	sge = (struct odpemu_sge){ (uintptr_t)p, d->len, u->mr[u->snd]->lkey };
	wr.opcode = d->imm ? ODPEMU_WR_SEND_WITH_IMM : ODPEMU_WR_SEND;
	wr.imm_data = htonl((uint32_t)d->seed);
	wr.wr_id = ledger_post(&u->l, u->snd, 0, d);
	if ((rc = odpemu_post_send(u->p.s[u->snd].qp, &wr, &bad))) {
		ledger_unpost(&u->l, u->snd, 0);
		soak_fail(u->w->st, "%s: UD post_send of %u bytes: %s", u->l.what, d->len,
			  strerror(rc));
		return false;
	}
	u->inflight++;
	return true;
}

static void traffic(struct ud *u, uint32_t mtu)
{
	struct odpemu_cq *cq[2] = { u->p.s[0].cq, u->p.s[1].cq };
	struct odpemu_qp *qp[2] = { u->p.s[0].qp, u->p.s[1].qp };
	long long start = soak_ms();
	unsigned seq = 0;

	if (!post_recvs(u))
		goto out;
	u->last_rx = soak_ms();
	/* sends: all of them complete, in a window */
	while (seq < u->n || u->inflight) {
		while (seq < u->n && u->inflight < WINDOW && !ledger_any_error(&u->l))
			if (!post_send(u, seq++, mtu))
				goto out;
		if (ledger_any_error(&u->l))
			seq = u->n;	/* stop sending; what is in flight still completes */
		if (ledger_poll(&u->l, cq, on_wc, u) < 0)
			goto out;
		if (soak_ms() - start > SOAK_WAIT_MS) {
			soak_fail(u->w->st, "%s: %u UD sends still outstanding after %d ms",
				  u->l.what, u->inflight, SOAK_WAIT_MS);
			goto out;
		}
		soak_nap();
	}
	/* receives: until none has come for 100 ms (late ones are still on the wire) */
	while (ledger_outstanding_q(&u->l, !u->snd, 1) && soak_ms() - u->last_rx < 100 &&
	       soak_ms() - start < 2 * SOAK_WAIT_MS) {
		if (ledger_poll(&u->l, cq, on_wc, u) < 0)
			goto out;
		soak_nap();
	}
	SOAK_ADD(u->w->st->ud_sent, u->sent_ok);
out:
	u->l.teardown_expected = true;	/* receive WQEs nobody filled */
	ledger_teardown(&u->l, qp, cq, on_wc, u);
}

static bool setup(struct ud *u, uint32_t *mtu)
{
	struct soak_w *w = u->w;
	struct odpemu_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64 } };
	struct odpemu_port_attr pa;
	struct h_qp_opts o;

	h_qp_opts_default(&o);
	o.type = ODPEMU_QPT_UD;
	o.depth = UD_DEPTH;
	u->p.s[0].ctx = w->ctx[0];
	u->p.s[1].ctx = w->ctx[1];
	if (h_pair_up(w->e, &u->p, &o)) {
		soak_fail(w->st, "%s: UD pair up failed", u->l.what);
		return false;
	}
	if (odpemu_query_port(w->ctx[u->snd], 1, &pa)) {
		soak_fail(w->st, "%s: query_port: %m", u->l.what);
		return false;
	}
	*mtu = (uint32_t)odpemu_mtu_to_bytes(pa.active_mtu);
	if (*mtu > STRIDE - GRH)
		*mtu = STRIDE - GRH;
	aa.grh.dgid = u->p.s[!u->snd].gid;
	if (!(u->ah = odpemu_create_ah(u->p.s[u->snd].pd, &aa))) {
		soak_fail(w->st, "%s: create_ah: %m", u->l.what);
		return false;
	}
	for (int s = 0; s < 2; s++) {
		u->buf[s] = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				 -1, 0);
		if (u->buf[s] == MAP_FAILED) {
			u->buf[s] = NULL;
			soak_fail(w->st, "mmap %u bytes: %m", REGION);
			return false;
		}
		if (!(u->mr[s] = soak_reg(w, u->p.s[s].pd, u->buf[s], REGION, u->kind[s])))
			return false;
	}
	return true;
}

static void teardown(struct ud *u)
{
	for (int s = 0; s < 2; s++) {
		int rc;

		if (u->mr[s] && (rc = odpemu_dereg_mr(u->mr[s])))
			soak_fail(u->w->st, "%s: dereg_mr: %s", u->l.what, strerror(rc));
		if (u->buf[s])
			munmap(u->buf[s], REGION);
	}
	if (u->ah)
		odpemu_destroy_ah(u->ah);
	h_pair_down(&u->p);
}

void soak_round_ud(struct soak_w *w)
{
	struct ud *u = calloc(1, sizeof(*u));
	uint64_t inj[2] = { 0, 0 };
	uint32_t mtu = 0;
	char what[96];

	if (!u)
		abort();
	u->w = w;
	u->snd = (int)t_below(&w->rng, 2);
	for (int s = 0; s < 2; s++)
		u->kind[s] = (enum soak_mem)t_below(&w->rng, SOAK_NMEM);
	u->n = 64 + (unsigned)t_below(&w->rng, UD_DEPTH - 64 + 1);
	snprintf(what, sizeof(what), "ud round %u", w->round);
	ledger_init(&u->l, w->st, what, UD_DEPTH);
	if (setup(u, &mtu)) {
		traffic(u, mtu);
		for (int s = 0; s < 2; s++)
			inj[s] = u->kind[s] == SOAK_PINNED ? 0 : soak_fault_failed(w, u->mr[s]);
		ledger_judge(&u->l, inj);
	}
	soak_drain_events(w);
	teardown(u);
	ledger_free(&u->l);
	free(u);
	SOAK_ADD(w->st->rounds_ud, 1);
}
