/* SPDX-License-Identifier: MIT */
/*
 * rc — one RC round: a QP pair across the hosts (the requester side drawn), an MR of a
 * drawn kind on each side (pinned, explicit or implicit ODP) over fresh memory, a drawn
 * fault policy, then a seeded mix of every RC verb, WINDOW in flight, each in a slot of its
 * own on both sides, so every successful completion can be checked on the spot:
 *  - WRITE (± imm): the destination holds the pattern, the GUARD bytes after it the canary
 *    the round wrote there before posting; WRITE_IMM's receive has the length and the imm;
 *  - SEND (± imm): the receive buffer holds the pattern and the canary after it, the
 *    receive completion the opcode, length, imm flag and value;
 *  - READ: the local buffer, as WRITE's destination;
 *  - CAS, FAA: the old value came back, memory holds the new one (so a duplicated or
 *    retransmitted atomic executed twice is caught), ATOMIC_WRITE: memory holds the value;
 *  - FLUSH (global or persistent): completes.
 * The first error ends the posting; what is in flight gets a few seconds to complete by
 * itself, then both QPs go to ERR and everything left flushes (ledger.h judges it all).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ledger.h"
#include "pattern.h"
#include "round.h"

#define SLOT (128u << 10)
#define NSLOT 32
#define REGION (SLOT * NSLOT)
#define GUARD 64u
#define WINDOW 16u
#define DEPTH 64u
#define CANARY 0xca11ab1e5eedull
#define HIST 512u			/* sends a round remembers, for a failure's story */

enum verb { V_WRITE, V_WRITE_IMM, V_SEND, V_SEND_IMM, V_READ, V_CAS, V_FAA, V_ATOMIC_WRITE,
	    V_FLUSH, NVERB };

static const struct {
	const char *name;
	enum odpemu_wr_opcode opc;
	unsigned weight;
	bool recv;			/* consumes a receive WQE at the responder */
} verb[NVERB] = {
	[V_WRITE] = { "WRITE", ODPEMU_WR_RDMA_WRITE, 20, false },
	[V_WRITE_IMM] = { "WRITE_IMM", ODPEMU_WR_RDMA_WRITE_WITH_IMM, 10, true },
	[V_SEND] = { "SEND", ODPEMU_WR_SEND, 15, true },
	[V_SEND_IMM] = { "SEND_IMM", ODPEMU_WR_SEND_WITH_IMM, 10, true },
	[V_READ] = { "READ", ODPEMU_WR_RDMA_READ, 20, false },
	[V_CAS] = { "CAS", ODPEMU_WR_ATOMIC_CMP_AND_SWP, 7, false },
	[V_FAA] = { "FAA", ODPEMU_WR_ATOMIC_FETCH_AND_ADD, 7, false },
	[V_ATOMIC_WRITE] = { "ATOMIC_WRITE", ODPEMU_WR_ATOMIC_WRITE, 6, false },
	[V_FLUSH] = { "FLUSH", ODPEMU_WR_FLUSH, 5, false },
};

struct op {
	enum verb v;
	bool busy, send_done, recv_done, send_ok, recv_ok;
	unsigned slot;
	uint32_t len, off;		/* data length; atomics' and FLUSH's offset in the slot */
	uint64_t seed;			/* the data's pattern; the canary's is seed ^ CANARY */
	uint64_t old, arg, swap;	/* atomics: memory before, compare/add or value, swap */
	uint32_t imm;
	uint8_t flush_type;
	uint64_t seq;			/* its number on the send queue */
	enum odpemu_wc_status recv_status;
};

/* What the round posted and how each send completed (status 0xff: not yet). */
struct hist {
	uint8_t verb, status;
	uint32_t len;
};

struct rc {
	struct soak_w *w;
	struct h_pair p;
	uint8_t *buf[2];
	struct odpemu_mr *mr[2];
	enum soak_mem kind[2];
	enum odpemu_fault_policy policy;
	int req;			/* the requester's side; the responder is !req */
	struct op op[NSLOT];
	unsigned inflight;
	struct ledger l;
	struct hist hist[HIST];
	int64_t first_bad;		/* send seq of the first op a check failed on, -1 */
};

static uint8_t *lbuf(struct rc *r, const struct op *o)
{
	return r->buf[r->req] + (size_t)o->slot * SLOT;
}

static uint8_t *rbuf(struct rc *r, const struct op *o)
{
	return r->buf[!r->req] + (size_t)o->slot * SLOT;
}

static void bad(struct rc *r, const struct op *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void bad(struct rc *r, const struct op *o, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->first_bad < 0)
		r->first_bad = (int64_t)o->seq;
	soak_fail(r->w->st, "%s: %s of %u bytes (send %" PRIu64 ", slot %u): %s", r->l.what,
		  verb[o->v].name, o->len, o->seq, o->slot, msg);
}

/* A failed data check: 8 bytes from at, as they are, as wanted, as before the op. */
static void bad_bytes(struct rc *r, const struct op *o, const uint8_t *buf, long at,
		      const char *where)
{
	static uint8_t want[SLOT + GUARD], before[SLOT + GUARD];
	size_t n = SLOT - (size_t)at < 8 ? SLOT - (size_t)at : 8;
	bool past = at >= (long)o->len;
	char hex[3][17];

	pat_fill(o->seed, want, o->len);
	pat_fill(o->seed ^ CANARY, before, o->len);
	pat_fill(o->seed ^ CANARY ^ 1, before + o->len, GUARD);
	memcpy(want + o->len, before + o->len, GUARD);
	t_hex(buf + at, n, hex[0]);
	t_hex(want + at, n, hex[1]);
	t_hex(before + at, n, hex[2]);
	bad(r, o, "%s byte %ld is wrong (%s): %s there, want %s, before the op %s", where, at,
	    past ? "written past the end" : "not the data sent", hex[0], hex[1], hex[2]);
}

/* buf holds len bytes of the pattern, then GUARD bytes of the canary. */
static bool check_data(struct rc *r, const struct op *o, const uint8_t *buf, const char *where)
{
	long at = pat_check(o->seed, buf, o->len);

	if (at < 0 && (at = pat_check(o->seed ^ CANARY ^ 1, buf + o->len, GUARD)) >= 0)
		at += o->len;
	if (at >= 0) {
		bad_bytes(r, o, buf, at, where);
		return false;
	}
	SOAK_ADD(r->w->st->bytes, o->len);
	return true;
}

static uint64_t word(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void check_u64(struct rc *r, const struct op *o, uint64_t got, uint64_t want,
		      const char *what)
{
	if (got != want)
		bad(r, o, "%s 0x%" PRIx64 ", want 0x%" PRIx64 " (memory before the op 0x%" PRIx64 ")",
		    what, got, want, o->old);
}

static void send_ok(struct rc *r, struct op *o, const struct odpemu_wc *wc)
{
	const uint8_t *l = lbuf(r, o), *m = rbuf(r, o) + o->off;

	if (wc->opcode != odpemu_wr_wc_opcode(verb[o->v].opc))
		bad(r, o, "completion opcode %s, want %s", odpemu_wc_opcode_str(wc->opcode),
		    odpemu_wc_opcode_str(odpemu_wr_wc_opcode(verb[o->v].opc)));
	switch (o->v) {
	case V_WRITE:
	case V_WRITE_IMM:
		check_data(r, o, rbuf(r, o), "destination");
		break;
	case V_READ:
		check_data(r, o, l, "READ result");
		break;
	case V_CAS:
		check_u64(r, o, word(l + o->off), o->old, "CAS returned");
		check_u64(r, o, word(m), o->arg == o->old ? o->swap : o->old, "CAS left memory");
		SOAK_ADD(r->w->st->bytes, 8);
		break;
	case V_FAA:
		check_u64(r, o, word(l + o->off), o->old, "FAA returned");
		check_u64(r, o, word(m), o->old + o->arg, "FAA left memory");
		SOAK_ADD(r->w->st->bytes, 8);
		break;
	case V_ATOMIC_WRITE:
		check_u64(r, o, word(m), o->arg, "ATOMIC_WRITE left memory");
		SOAK_ADD(r->w->st->bytes, 8);
		break;
	default:	/* SEND: checked at the receive; FLUSH: its completion is the check */
		break;
	}
}

static void recv_ok(struct rc *r, struct op *o, const struct odpemu_wc *wc)
{
	bool imm = o->v != V_SEND;
	enum odpemu_wc_opcode want = o->v == V_WRITE_IMM ? ODPEMU_WC_RECV_RDMA_WITH_IMM :
				     ODPEMU_WC_RECV;

	if (wc->opcode != want)
		bad(r, o, "receive opcode %s, want %s", odpemu_wc_opcode_str(wc->opcode),
		    odpemu_wc_opcode_str(want));
	if (wc->byte_len != o->len)
		bad(r, o, "receive byte_len %u, want %u", wc->byte_len, o->len);
	if (!!(wc->wc_flags & ODPEMU_WC_WITH_IMM) != imm)
		bad(r, o, "receive WITH_IMM flag %d, want %d", !!(wc->wc_flags & ODPEMU_WC_WITH_IMM),
		    imm);
	else if (imm && ntohl(wc->imm_data) != o->imm)
		bad(r, o, "imm_data 0x%x, want 0x%x", ntohl(wc->imm_data), o->imm);
	if (o->v != V_WRITE_IMM)
		check_data(r, o, rbuf(r, o), "receive buffer");
}

static void release(struct rc *r, struct op *o)
{
	if (o->send_done && (o->recv_done || !verb[o->v].recv)) {
		o->busy = false;
		r->inflight--;
	}
}

static void on_wc(void *round, int side, const struct odpemu_wc *wc, void *opp)
{
	struct rc *r = round;
	struct op *o = opp;
	bool recv = side != r->req;

	if (wc->status == ODPEMU_WC_SUCCESS)
		(recv ? recv_ok : send_ok)(r, o, wc);
	/* a message the responder acknowledged consumed its receive WQE */
	if (recv ? o->send_done && o->send_ok && wc->status != ODPEMU_WC_SUCCESS :
		   o->recv_done && !o->recv_ok && wc->status == ODPEMU_WC_SUCCESS)
		bad(r, o, "the %s completed SUCCESS but its receive completed %s",
		    verb[o->v].name, odpemu_wc_status_str(recv ? wc->status : o->recv_status));
	if (recv) {
		o->recv_done = true;
		o->recv_ok = wc->status == ODPEMU_WC_SUCCESS;
		o->recv_status = wc->status;
	} else {
		o->send_ok = wc->status == ODPEMU_WC_SUCCESS;
		o->send_done = true;
		if (o->seq < HIST)
			r->hist[o->seq].status = (uint8_t)wc->status;
	}
	release(r, o);
}

static enum verb draw_verb(struct soak_w *w)
{
	unsigned total = 0, x;

	for (int v = 0; v < NVERB; v++)
		total += verb[v].weight;
	x = (unsigned)t_below(&w->rng, total);
	for (int v = 0; v < NVERB; v++) {
		if (x < verb[v].weight)
			return (enum verb)v;
		x -= verb[v].weight;
	}
	return V_WRITE;
}

/* What a destination holds before the op: not the data, and a guard after it. */
static void canary(const struct op *o, uint8_t *buf)
{
	pat_fill(o->seed ^ CANARY, buf, o->len);
	pat_fill(o->seed ^ CANARY ^ 1, buf + o->len, GUARD);
}

/* Draw the op's parameters and lay out both slots: data, canaries, atomics' words. */
static void prepare(struct rc *r, struct op *o)
{
	struct soak_w *w = r->w;
	uint8_t *l = lbuf(r, o), *m = rbuf(r, o);

	o->v = draw_verb(w);
	o->seed = pat_seed(w->pat, w->nwr++);
	o->len = o->off = 0;
	o->imm = (uint32_t)(o->seed >> 7);
	switch (o->v) {
	case V_WRITE:
	case V_WRITE_IMM:
	case V_SEND:
	case V_SEND_IMM:
		o->len = soak_len(w, SLOT - GUARD);
		pat_fill(o->seed, l, o->len);
		canary(o, m);
		break;
	case V_READ:
		o->len = soak_len(w, SLOT - GUARD);
		pat_fill(o->seed, m, o->len);
		canary(o, l);
		break;
	case V_CAS:
	case V_FAA:
	case V_ATOMIC_WRITE:
		o->off = 8 * (uint32_t)t_below(&w->rng, SLOT / 8);
		o->old = t_rand(&w->rng);
		o->arg = t_rand(&w->rng);
		o->swap = t_rand(&w->rng);
		if (o->v == V_CAS && t_below(&w->rng, 2))
			o->arg = o->old;	/* half the CASes swap */
		memcpy(m + o->off, &o->old, 8);
		memcpy(l + o->off, o->v == V_ATOMIC_WRITE ? &o->arg : &o->seed, 8);
		break;
	case V_FLUSH:
		o->len = 1 + soak_len(w, SLOT - 1);
		o->off = (uint32_t)t_below(&w->rng, SLOT - o->len + 1);
		o->flush_type = (uint8_t)(1 + t_below(&w->rng, 2));	/* global, persistent */
		break;
	default:
		break;
	}
}

static bool post_one(struct rc *r, struct op *o)
{
	int req = r->req, resp = !req, rc;
	uint8_t *l = lbuf(r, o), *m = rbuf(r, o);
	struct odpemu_sge sge = { (uintptr_t)l, o->len, r->mr[req]->lkey };
	struct odpemu_sge rsge = { (uintptr_t)m, SLOT, r->mr[resp]->lkey };
	struct odpemu_send_wr wr = { .sg_list = &sge, .num_sge = o->len ? 1 : 0,
		.opcode = verb[o->v].opc,
		.send_flags = ODPEMU_SEND_SIGNALED, .imm_data = htonl(o->imm) }, *bad_wr;
	struct odpemu_recv_wr rwr = { .sg_list = &rsge, .num_sge = o->v == V_WRITE_IMM ? 0 : 1 },
		*bad_rwr;

	switch (o->v) {
	case V_WRITE:
	case V_WRITE_IMM:
	case V_READ:
		wr.wr.rdma.remote_addr = (uintptr_t)m;
		wr.wr.rdma.rkey = r->mr[resp]->rkey;
		break;
	case V_CAS:
	case V_FAA:
		sge = (struct odpemu_sge){ (uintptr_t)l + o->off, 8, r->mr[req]->lkey };
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = (uintptr_t)m + o->off;
		wr.wr.atomic.rkey = r->mr[resp]->rkey;
		wr.wr.atomic.compare_add = o->arg;
		wr.wr.atomic.swap = o->swap;
		break;
	case V_ATOMIC_WRITE:
		sge = (struct odpemu_sge){ (uintptr_t)l + o->off, 8, r->mr[req]->lkey };
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = (uintptr_t)m + o->off;
		wr.wr.rdma.rkey = r->mr[resp]->rkey;
		break;
	case V_FLUSH:
		wr.num_sge = 0;
		wr.wr.flush.remote_addr = (uintptr_t)m + o->off;
		wr.wr.flush.rkey = r->mr[resp]->rkey;
		wr.wr.flush.len = o->len;
		wr.wr.flush.type = o->flush_type;
		break;
	default:
		break;
	}
	o->busy = true;
	o->send_done = o->recv_done = o->send_ok = o->recv_ok = false;
	if (verb[o->v].recv) {
		rwr.wr_id = ledger_post(&r->l, resp, 1, o);
		if ((rc = odpemu_post_recv(r->p.s[resp].qp, &rwr, &bad_rwr))) {
			ledger_unpost(&r->l, resp, 1);
			soak_fail(r->w->st, "%s: post_recv: %s", r->l.what, strerror(rc));
			return false;
		}
	}
	wr.wr_id = ledger_post(&r->l, req, 0, o);
	o->seq = wr.wr_id;
	if (o->seq < HIST)
		r->hist[o->seq] = (struct hist){ (uint8_t)o->v, 0xff, o->len };
	if ((rc = odpemu_post_send(r->p.s[req].qp, &wr, &bad_wr))) {
		ledger_unpost(&r->l, req, 0);
		soak_fail(r->w->st, "%s: post_send %s: %s", r->l.what, verb[o->v].name, strerror(rc));
		return false;	/* its receive, if any, flushes at the teardown */
	}
	r->inflight++;
	return true;
}

static struct op *free_op(struct rc *r)
{
	for (unsigned i = 0; i < NSLOT; i++)
		if (!r->op[i].busy) {
			r->op[i].slot = i;
			return &r->op[i];
		}
	return NULL;
}

static void traffic(struct rc *r, unsigned total)
{
	struct odpemu_cq *cq[2] = { r->p.s[0].cq, r->p.s[1].cq };
	struct odpemu_qp *qp[2] = { r->p.s[0].qp, r->p.s[1].qp };
	long long last = soak_ms();
	unsigned posted = 0;
	struct op *o;
	int n;

	while (!ledger_any_error(&r->l) && posted < total && !soak_stopping(r->w)) {
		while (r->inflight < WINDOW && posted < total && (o = free_op(r))) {
			prepare(r, o);
			if (!post_one(r, o))
				goto out;
			posted++;
		}
		if ((n = ledger_poll(&r->l, cq, on_wc, r)) < 0)
			goto out;
		if (n) {
			last = soak_ms();
		} else if (soak_ms() - last > SOAK_WAIT_MS) {
			break;		/* ledger_drain names what is missing */
		} else {
			soak_nap();
		}
	}
	/* without errors every WR must complete; after one, give it a few seconds */
	ledger_drain(&r->l, cq, on_wc, r, SOAK_WAIT_MS, true);
out:
	if (ledger_outstanding(&r->l))
		ledger_teardown(&r->l, qp, cq, on_wc, r);
}

static bool setup(struct rc *r)
{
	struct soak_w *w = r->w;
	struct h_qp_opts o;

	h_qp_opts_default(&o);
	o.policy = r->policy;
	o.depth = DEPTH;
	r->p.s[0].ctx = w->ctx[0];
	r->p.s[1].ctx = w->ctx[1];
	if (h_pair_up(w->e, &r->p, &o)) {
		soak_fail(w->st, "%s: RC pair up failed", r->l.what);
		return false;
	}
	for (int s = 0; s < 2; s++) {
		r->buf[s] = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				 -1, 0);
		if (r->buf[s] == MAP_FAILED) {
			r->buf[s] = NULL;
			soak_fail(w->st, "mmap %u bytes: %m", REGION);
			return false;
		}
		if (!(r->mr[s] = soak_reg(w, r->p.s[s].pd, r->buf[s], REGION, r->kind[s])))
			return false;
	}
	return true;
}

static void teardown(struct rc *r)
{
	for (int s = 0; s < 2; s++) {
		int rc;

		if (r->mr[s] && (rc = odpemu_dereg_mr(r->mr[s])))
			soak_fail(r->w->st, "%s: dereg_mr: %s", r->l.what, strerror(rc));
		if (r->buf[s])
			munmap(r->buf[s], REGION);
	}
	h_pair_down(&r->p);
}

/* After a failed check: the sends around the first bad one, and both QPs' non-zero
 * counters, for whoever chases it. */
static void show_qps(struct rc *r)
{
	uint64_t to = r->l.q[r->req][0].posted < HIST ? r->l.q[r->req][0].posted : HIST, from;
	int64_t bad_seq = r->first_bad;
	char line[1024];
	int len = 0;

	for (uint64_t i = 0; i < to && bad_seq < 0; i++)	/* else the first error */
		if (r->hist[i].status != ODPEMU_WC_SUCCESS && r->hist[i].status != 0xff)
			bad_seq = (int64_t)i;
	from = bad_seq > 16 ? (uint64_t)bad_seq - 16 : 0;

	for (uint64_t i = from; i < to && i < from + 48 && len < (int)sizeof(line) - 40; i++)
		len += snprintf(line + len, sizeof(line) - (size_t)len, " %" PRIu64 ":%s/%u/%s", i,
				verb[r->hist[i].verb].name, r->hist[i].len, r->hist[i].status == 0xff ?
				"-" : odpemu_wc_status_str((enum odpemu_wc_status)r->hist[i].status));
	fprintf(stderr, "soak: %s: sends (seq:verb/len/status):%s\n", r->l.what, line);
	for (int s = 0; s < 2; s++) {
		struct odpemu_counter c[128];
		int n = odpemu_query_counters(r->w->ctx[s], ODPEMU_COUNTERS_QP, r->p.s[s].qp->handle,
					      c, (int)T_ARRAY_SIZE(c));
		len = 0;
		for (int i = 0; i < n && len < (int)sizeof(line) - 48; i++)
			if (c[i].value)
				len += snprintf(line + len, sizeof(line) - (size_t)len, " %s %llu",
						c[i].name, (unsigned long long)c[i].value);
		fprintf(stderr, "soak: %s: side %d QP %u (%s):%s\n", r->l.what, s,
			r->p.s[s].qp->qp_num, s == r->req ? "requester" : "responder",
			n < 0 ? " no counters" : line);
	}
}

void soak_round_rc(struct soak_w *w)
{
	struct rc *r = calloc(1, sizeof(*r));
	char what[96];
	uint64_t inj[2] = { 0, 0 };

	if (!r)
		abort();
	r->w = w;
	r->first_bad = -1;
	r->req = (int)t_below(&w->rng, 2);
	for (int s = 0; s < 2; s++)
		r->kind[s] = w->warmup ? (enum soak_mem)((w->round / 3 + s) % SOAK_NMEM) :
			     (enum soak_mem)t_below(&w->rng, SOAK_NMEM);
	r->policy = t_below(&w->rng, 2) ? ODPEMU_FAULT_POLICY_STALL : ODPEMU_FAULT_POLICY_RNR;
	snprintf(what, sizeof(what), "rc round %u (%s %s -> %s %s, %s)", w->round,
		 r->req ? "b" : "a", soak_mem_name[r->kind[r->req]], r->req ? "a" : "b",
		 soak_mem_name[r->kind[!r->req]], odpemu_fault_policy_str(r->policy));
	ledger_init(&r->l, w->st, what, DEPTH);
	if (setup(r)) {
		uint64_t failures = w->st->failures;

		traffic(r, 50 + (unsigned)t_below(&w->rng, 350));
		for (int s = 0; s < 2; s++)
			inj[s] = r->kind[s] == SOAK_PINNED ? 0 : soak_fault_failed(w, r->mr[s]);
		ledger_judge(&r->l, inj);
		SOAK_ADD(w->st->rc_error_rounds, ledger_any_error(&r->l));
		if (w->st->failures != failures)
			show_qps(r);
	}
	soak_drain_events(w);
	teardown(r);
	ledger_free(&r->l);
	free(r);
	SOAK_ADD(w->st->rounds_rc, 1);
}
