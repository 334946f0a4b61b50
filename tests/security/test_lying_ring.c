/* SPDX-License-Identifier: MIT */
/*
 * sec-lying-ring — a client whose shared rings lie reaches no memory but its own.
 *
 * This process is the liar. It writes work requests straight into its rings (lib's
 * internal view, lib_int.h), past every check libodpemu makes, and knows everything the
 * bystander (bystander.h: another client of the same daemon, a process of its own) has
 * registered: addresses, lkeys, rkeys. Where the bystander's canaries lie, the liar maps
 * decoys of its own, filled with another pattern (one is left unmapped).
 *
 * Each lie gets a fresh RC pair of the liar's: the lying QP on host 1, its peer on host 0
 * with a zeroed sink MR the lying QP WRITEs to (or SENDs to, or READs from). Lies:
 *  - SGEs naming the bystander's lkeys (pinned remote-writable, pinned local, ODP), the
 *    liar's own lkey of another PD, its own lkey outside its range (below, across the end,
 *    wrapping around 2^64, a kernel address): WRITE, READ into, compare-and-swap into;
 *    its implicit ODP lkey at a kernel address, at 0, at the bystander's (unmapped here)
 *    address: the WQE completes LOC_PROT_ERR (or the QP is refused), the QP goes to ERR;
 *  - its implicit ODP lkey at the address of a decoy: the WRITE carries the decoy's bytes
 *    (the liar's own memory, never the bystander's), a receive there takes the SEND;
 *  - receive WQEs naming the bystander's lkey: the SEND from the peer completes the
 *    receive LOC_PROT_ERR and the sender REM_OP_ERR;
 *  - slots the daemon refuses: SGE count 2^32-1 and beyond the QP's, inline length beyond
 *    the slot, inline and SGEs both, an unknown opcode, unknown flags, SGE lengths whose
 *    sum wraps 2^32, a receive slot with 2^32-1 SGEs: the slot completes LOC_QP_OP_ERR
 *    with its wr_id, as a malformed WQE on hardware, and the QP goes to ERR with QP_FATAL;
 *    a good slot published behind one completes WR_FLUSH_ERR;
 *  - producer indices out of range (2^31 ahead over a ring of random bytes, behind the
 *    consumer) on the send and receive rings: the daemon clamps, refuses, QP to ERR;
 *  - the ring headers' geometry (size, slot, offset) overwritten: the daemon keeps its
 *    own copy, a WRITE posted afterwards goes through;
 *  - a CQ consumer index ahead of the producer: CQ_ERR, the daemon writes no slot outside
 *    the ring.
 * After each lie the QP (if in error) completes a further WRITE with WR_FLUSH_ERR, the
 * sink holds nothing but the liar's own bytes, and the daemon still serves the
 * bystander, whose canary memory is checked byte for byte at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bystander.h"
#include "harness.h"
#include "lib_int.h"
#include "t.h"

#define OWN_LEN		(64u << 10)
#define SINK_LEN	(64u << 10)
#define MSG		4096u
#define LIE_ID		0x11E0000ull
#define WAIT_MS		3000

enum expect {
	E_ERR_WC,	/* the lie completes with an error status (want), QP in ERR */
	E_BAD_WQE,	/* the daemon refuses the slot: it completes LOC_QP_OP_ERR, QP in ERR,
			 * QP_FATAL */
	E_REFUSED,	/* the daemon refuses the index: QP in ERR, QP_FATAL, no completion */
	E_OWN,		/* a request on the liar's own memory: completes, sink = its bytes */
	E_RECV_ERR,	/* the receive completes LOC_PROT_ERR, the peer's SEND REM_OP_ERR */
	E_RECV_OWN,	/* the receive lands in the liar's own memory */
	E_GEOMETRY,	/* the lie changes nothing: a later WRITE succeeds */
	E_CQ_ERR,	/* CQ_ERR, nothing else */
};

struct liar {
	struct h_env *e;
	struct bys bys;
	struct odpemu_pd *other_pd;	/* on host 1: none of the pairs' */
	struct odpemu_mr *other_mr;
	uint8_t *own, *sink, *other;
	uint8_t *decoy[3];		/* at the bystander's rw, local, odp: NULL where left
					 * unmapped */
	uint64_t qp_fatal, qp_other_events, cq_err;
};

/* One pair for one lie: s[1] lies (host 1), s[0] is its peer (host 0). */
struct lie {
	struct h_pair p;
	struct odpemu_mr *own, *implicit, *sink;
	struct lib_qp *q;		/* the lying QP, as the library holds it */
};

static void pattern(uint64_t seed, uint8_t *buf, size_t len)
{
	struct t_rng r = { seed };

	t_fill(&r, buf, len);
}

/* ---- raw slots ---- */

static struct ipc_swqe *sq_slot(struct lie *l, uint32_t k)
{
	struct lib_ring *r = &l->q->sq.ring;
	struct ipc_swqe *w = lib_ring_slot(r, r->head + k);

	memset(w, 0, r->slot);
	w->wr_id = LIE_ID + k;
	w->send_flags = ODPEMU_SEND_SIGNALED;
	return w;
}

static struct ipc_rwqe *rq_slot(struct lie *l)
{
	struct lib_ring *r = &l->q->rq.ring;
	struct ipc_rwqe *w = lib_ring_slot(r, r->head);

	memset(w, 0, r->slot);
	w->wr_id = LIE_ID;
	return w;
}

static void publish(struct lie *l, struct lib_ring *r, uint32_t n)
{
	r->head += n;
	lib_ring_publish(r);
	lib_doorbell(lib_ctx(l->p.s[1].ctx));
}

/* One WRITE (or opcode) slot with one SGE to the sink. */
static void one_sge(struct lie *l, uint32_t opcode, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct ipc_swqe *w = sq_slot(l, 0);

	w->opcode = opcode;
	w->num_sge = 1;
	w->sge[0] = (struct ipc_sge){ addr, len, lkey };
	w->rkey = l->sink->rkey;
	w->remote_addr = (uint64_t)(uintptr_t)l->sink->addr;
	if (opcode == ODPEMU_WR_ATOMIC_CMP_AND_SWP) {	/* compares unequal: the sink stays */
		w->compare_add = 0x1111;
		w->swap = 0x5A5A5A5A5A5A5A5Aull;
	}
	publish(l, &l->q->sq.ring, 1);
}

/* ---- the lies ---- */

struct lie_case {
	const char *name;
	enum expect expect;
	void (*fn)(struct liar *L, struct lie *l, int arg);
	int arg;
	enum odpemu_wc_status want;	/* E_ERR_WC */
	unsigned behind;		/* E_BAD_WQE: good WRs published behind the lie */
};

static const struct bys_mem *bys_mem(struct liar *L, int which)
{
	return which == 0 ? &L->bys.info.rw : which == 1 ? &L->bys.info.local : &L->bys.info.odp;
}

/* arg: 0 rw, 1 local, 2 odp; + 3 * opcode kind (0 WRITE, 1 READ into, 2 CAS into) */
static void foreign_lkey(struct liar *L, struct lie *l, int arg)
{
	static const uint32_t ops[] = { ODPEMU_WR_RDMA_WRITE, ODPEMU_WR_RDMA_READ,
					ODPEMU_WR_ATOMIC_CMP_AND_SWP };
	const struct bys_mem *m = bys_mem(L, arg % 3);
	uint32_t op = ops[arg / 3];

	one_sge(l, op, m->va + m->len / 2, op == ODPEMU_WR_ATOMIC_CMP_AND_SWP ? 8 : MSG, m->lkey);
}

static void other_pd_lkey(struct liar *L, struct lie *l, int arg)
{
	(void)arg;
	one_sge(l, ODPEMU_WR_RDMA_WRITE, (uint64_t)(uintptr_t)L->other, MSG, L->other_mr->lkey);
}

/* arg: 0 below, 1 across the end, 2 wraps, 3 kernel address */
static void own_outside(struct liar *L, struct lie *l, int arg)
{
	uint64_t lo = (uint64_t)(uintptr_t)L->own, hi = lo + OWN_LEN;
	uint64_t at[] = { lo - MSG, hi - MSG / 2, UINT64_MAX - MSG / 2, 0xffff888000000000ull };

	one_sge(l, ODPEMU_WR_RDMA_WRITE, at[arg], MSG, l->own->lkey);
}

/* arg: 0 kernel address, 1 address 0, 2.. the bystander's region arg - 2 */
static void implicit_at(struct liar *L, struct lie *l, int arg)
{
	uint64_t at = arg == 0 ? 0xffff888000000000ull : arg == 1 ? 0 :
		      bys_mem(L, arg - 2)->va + 8192;

	one_sge(l, ODPEMU_WR_RDMA_WRITE, at, MSG, l->implicit->lkey);
}

/* arg: 0 the bystander's rw lkey, 1 implicit at the odp decoy */
static void recv_lie(struct liar *L, struct lie *l, int arg)
{
	struct ipc_rwqe *w = rq_slot(l);
	const struct bys_mem *m = bys_mem(L, arg ? 2 : 0);

	w->num_sge = 1;
	w->sge[0] = (struct ipc_sge){ m->va + (arg ? 8192 : m->len / 2), MSG,
				      arg ? l->implicit->lkey : m->lkey };
	publish(l, &l->q->rq.ring, 1);
}

/* arg: 0 SGEs 2^32-1, 1 one beyond max_send_sge, 2 inline beyond the slot, 3 inline and
 * SGEs, 4 unknown opcode, 5 unknown flags, 6 SGE lengths wrapping 2^32, 7 unknown opcode
 * with a good WRITE behind it (published together) */
static void bad_slot(struct liar *L, struct lie *l, int arg)
{
	struct ipc_swqe *w = sq_slot(l, 0);
	uint64_t own = (uint64_t)(uintptr_t)L->own;

	if (arg == 7) {
		struct ipc_swqe *g = sq_slot(l, 1);

		g->opcode = ODPEMU_WR_RDMA_WRITE;
		g->rkey = l->sink->rkey;
		g->remote_addr = (uint64_t)(uintptr_t)l->sink->addr;
		g->num_sge = 1;
		g->sge[0] = (struct ipc_sge){ own, MSG, l->own->lkey };
		w->opcode = 0xDEADBEEF;
		publish(l, &l->q->sq.ring, 2);
		return;
	}

	w->opcode = ODPEMU_WR_RDMA_WRITE;
	w->rkey = l->sink->rkey;
	w->remote_addr = (uint64_t)(uintptr_t)l->sink->addr;
	w->num_sge = 1;
	w->sge[0] = (struct ipc_sge){ own, MSG, l->own->lkey };
	switch (arg) {
	case 0: w->num_sge = UINT32_MAX; break;
	case 1: w->num_sge = l->q->sq.max_sge + 1; break;
	case 2: w->num_sge = 0; w->send_flags |= ODPEMU_SEND_INLINE; w->inline_len = 0xFFFF; break;
	case 3: w->send_flags |= ODPEMU_SEND_INLINE; w->inline_len = 8; break;
	case 4: w->opcode = 0xDEADBEEF; break;
	case 5: w->send_flags = 0xFFFFFFFF & ~(uint32_t)ODPEMU_SEND_INLINE; break;
	default:
		w->num_sge = 2;
		w->sge[0].length = w->sge[1].length = 0x80000000u;
		w->sge[1].addr = own;
		w->sge[1].lkey = l->own->lkey;
	}
	publish(l, &l->q->sq.ring, 1);
}

static void bad_recv_slot(struct liar *L, struct lie *l, int arg)
{
	struct ipc_rwqe *w = rq_slot(l);

	(void)L;
	(void)arg;
	w->num_sge = UINT32_MAX;
	publish(l, &l->q->rq.ring, 1);
}

/* A ring full of random bytes, then the producer index arg 0: 2^31 ahead, 1: behind. */
static void garbage_ring(struct lib_ring *r, struct t_rng *rng, int arg)
{
	t_fill(rng, r->base + r->offset, (size_t)r->size * r->slot);
	atomic_store_explicit(&r->hdr->prod, arg ? r->head - 3 : r->head + 0x80000000u,
			      memory_order_release);
}

static void sq_index(struct liar *L, struct lie *l, int arg)
{
	garbage_ring(&l->q->sq.ring, &L->e->rng, arg);
	lib_doorbell(lib_ctx(l->p.s[1].ctx));
}

static void rq_index(struct liar *L, struct lie *l, int arg)
{
	garbage_ring(&l->q->rq.ring, &L->e->rng, arg);
	lib_doorbell(lib_ctx(l->p.s[1].ctx));
}

/* The headers' geometry, which only the daemon wrote: overwritten. */
static void geometry(struct liar *L, struct lie *l, int arg)
{
	struct ipc_ring *h[] = { l->q->sq.ring.hdr, l->q->rq.ring.hdr,
				 ((struct lib_cq *)l->p.s[1].cq)->ring.hdr };

	(void)L;
	(void)arg;
	for (size_t i = 0; i < T_ARRAY_SIZE(h); i++) {
		h[i]->size = 0xFFFFFFFF;
		h[i]->slot = 1;
		h[i]->offset = 0x7FFFFFF0;
	}
}

static void cq_cons(struct liar *L, struct lie *l, int arg)
{
	struct lib_cq *cq = (struct lib_cq *)l->p.s[1].cq;

	(void)arg;
	atomic_store_explicit(&cq->ring.hdr->cons, cq->ring.head + 12345, memory_order_release);
	one_sge(l, ODPEMU_WR_RDMA_WRITE, (uint64_t)(uintptr_t)L->own, MSG, l->own->lkey);
}

static const struct lie_case cases[] = {
	{ "WRITE from the bystander's pinned rw lkey", E_ERR_WC, foreign_lkey, 0, ODPEMU_WC_LOC_PROT_ERR },
	{ "WRITE from the bystander's pinned local lkey", E_ERR_WC, foreign_lkey, 1, ODPEMU_WC_LOC_PROT_ERR },
	{ "WRITE from the bystander's ODP lkey", E_ERR_WC, foreign_lkey, 2, ODPEMU_WC_LOC_PROT_ERR },
	{ "READ into the bystander's pinned rw lkey", E_ERR_WC, foreign_lkey, 3, ODPEMU_WC_LOC_PROT_ERR },
	{ "READ into the bystander's pinned local lkey", E_ERR_WC, foreign_lkey, 4, ODPEMU_WC_LOC_PROT_ERR },
	{ "READ into the bystander's ODP lkey", E_ERR_WC, foreign_lkey, 5, ODPEMU_WC_LOC_PROT_ERR },
	{ "CAS into the bystander's pinned rw lkey", E_ERR_WC, foreign_lkey, 6, ODPEMU_WC_LOC_PROT_ERR },
	{ "CAS into the bystander's ODP lkey", E_ERR_WC, foreign_lkey, 8, ODPEMU_WC_LOC_PROT_ERR },
	{ "WRITE from its own lkey of another PD", E_ERR_WC, other_pd_lkey, 0, ODPEMU_WC_LOC_PROT_ERR },
	{ "WRITE from below its own MR", E_ERR_WC, own_outside, 0, ODPEMU_WC_LOC_PROT_ERR },
	{ "WRITE across its own MR's end", E_ERR_WC, own_outside, 1, ODPEMU_WC_LOC_PROT_ERR },
	{ "WRITE from an SGE wrapping 2^64", E_ERR_WC, own_outside, 2, ODPEMU_WC_LOC_PROT_ERR },
	{ "WRITE from a kernel address, pinned lkey", E_ERR_WC, own_outside, 3, ODPEMU_WC_LOC_PROT_ERR },
	{ "WRITE from a kernel address, implicit ODP lkey", E_ERR_WC, implicit_at, 0, ODPEMU_WC_LOC_PROT_ERR },
	{ "WRITE from address 0, implicit ODP lkey", E_ERR_WC, implicit_at, 1, ODPEMU_WC_LOC_PROT_ERR },
	{ "WRITE from the bystander's rw address, implicit lkey", E_OWN, implicit_at, 2, 0 },
	{ "WRITE from the bystander's local address, implicit lkey", E_OWN, implicit_at, 3, 0 },
	{ "WRITE from the bystander's odp address, implicit lkey", E_OWN, implicit_at, 4, 0 },
	{ "receive into the bystander's rw lkey", E_RECV_ERR, recv_lie, 0, 0 },
	{ "receive at the bystander's odp address, implicit lkey", E_RECV_OWN, recv_lie, 1, 0 },
	{ "send slot with 2^32-1 SGEs", E_BAD_WQE, bad_slot, 0, 0 },
	{ "send slot with one SGE beyond the QP's", E_BAD_WQE, bad_slot, 1, 0 },
	{ "send slot with inline data beyond the slot", E_BAD_WQE, bad_slot, 2, 0 },
	{ "send slot with inline data and SGEs", E_BAD_WQE, bad_slot, 3, 0 },
	{ "send slot with an unknown opcode", E_BAD_WQE, bad_slot, 4, 0 },
	{ "send slot with unknown flags", E_BAD_WQE, bad_slot, 5, 0 },
	{ "send slot whose SGE lengths wrap 2^32", E_BAD_WQE, bad_slot, 6, 0 },
	{ "send slot with an unknown opcode, a good WRITE behind", E_BAD_WQE, bad_slot, 7, 0, 1 },
	{ "receive slot with 2^32-1 SGEs", E_BAD_WQE, bad_recv_slot, 0, 0 },
	{ "send ring of random bytes, producer 2^31 ahead", E_REFUSED, sq_index, 0, 0 },
	{ "send ring of random bytes, producer behind", E_REFUSED, sq_index, 1, 0 },
	{ "receive ring of random bytes, producer 2^31 ahead", E_REFUSED, rq_index, 0, 0 },
	{ "receive ring of random bytes, producer behind", E_REFUSED, rq_index, 1, 0 },
	{ "ring headers' size, slot and offset", E_GEOMETRY, geometry, 0, 0 },
	{ "CQ consumer index ahead of the producer", E_CQ_ERR, cq_cons, 0, 0 },
};

/* ---- the frame of one lie ---- */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

static bool lie_up(struct liar *L, struct lie *l)
{
	struct h_qp_opts o;

	memset(l, 0, sizeof(*l));
	h_qp_opts_default(&o);
	o.depth = 16;
	/* A peer that errored answers nothing: give up soon, but not so soon that a busy
	 * machine's slow answer looks like none (timeout 10, 4 ms, with one retry failed a
	 * SEND that had to fault its receive buffer in, under ASan on a loaded 2-core CI
	 * run): 67 ms, twice. */
	o.retry_cnt = 2;
	o.timeout = 14;
	l->p.s[0].ctx = L->e->ctx[0];
	l->p.s[1].ctx = L->e->ctx[1];
	if (h_pair_up(L->e, &l->p, &o))
		return false;
	l->q = (struct lib_qp *)l->p.s[1].qp;
	memset(L->sink, 0, SINK_LEN);
	pattern(0x0A, L->own, OWN_LEN);
	l->own = odpemu_reg_mr(l->p.s[1].pd, L->own, OWN_LEN, ODPEMU_ACCESS_LOCAL_WRITE);
	l->implicit = odpemu_reg_mr(l->p.s[1].pd, NULL, SIZE_MAX, ODPEMU_ACCESS_LOCAL_WRITE |
				    ODPEMU_ACCESS_ON_DEMAND);
	l->sink = odpemu_reg_mr(l->p.s[0].pd, L->sink, SINK_LEN, ODPEMU_ACCESS_LOCAL_WRITE |
				ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ |
				ODPEMU_ACCESS_REMOTE_ATOMIC);
	return l->own && l->implicit && l->sink;
}

static void lie_down(struct lie *l)
{
	struct odpemu_wc wc[16];

	while (odpemu_poll_cq(l->p.s[0].cq, 16, wc) > 0 || odpemu_poll_cq(l->p.s[1].cq, 16, wc) > 0)
		;
	if (l->own)
		odpemu_dereg_mr(l->own);
	if (l->implicit)
		odpemu_dereg_mr(l->implicit);
	if (l->sink)
		odpemu_dereg_mr(l->sink);
	h_pair_down(&l->p);
}

static void take_events(struct liar *L, struct lie *l)
{
	struct odpemu_async_event ev;

	while (!odpemu_get_async_event(L->e->ctx[1], &ev)) {
		if (ev.event_type == ODPEMU_EVENT_QP_FATAL && ev.element.qp == l->p.s[1].qp)
			L->qp_fatal++;
		else if (ev.event_type == ODPEMU_EVENT_CQ_ERR && ev.element.cq == l->p.s[1].cq)
			L->cq_err++;
		else if (ev.event_type != ODPEMU_EVENT_GID_CHANGE)
			L->qp_other_events++;
		odpemu_ack_async_event(&ev);
	}
	while (!odpemu_get_async_event(L->e->ctx[0], &ev))	/* the peers' (timeouts) */
		odpemu_ack_async_event(&ev);
}

static enum odpemu_qp_state qp_state(struct lie *l)
{
	struct odpemu_qp_attr a;

	return odpemu_query_qp(l->p.s[1].qp, &a, ODPEMU_QP_STATE, NULL) ? (enum odpemu_qp_state)-1 :
	       a.qp_state;
}

/* Wait until the lying QP is in ERR (or wait_ms passes). */
static bool wait_err(struct lie *l, int wait_ms)
{
	long long end = now_ms() + wait_ms;

	while (qp_state(l) != ODPEMU_QPS_ERR)
		if (now_ms() > end)
			return false;
		else
			usleep(1000);
	return true;
}

/* A good WRITE through the library: its completion status (-1: none). */
static int good_write(struct lie *l)
{
	struct odpemu_sge s = { (uint64_t)(uintptr_t)l->own->addr, MSG, l->own->lkey };
	struct odpemu_send_wr wr = { .wr_id = 7, .sg_list = &s, .num_sge = 1,
		.opcode = ODPEMU_WR_RDMA_WRITE, .send_flags = ODPEMU_SEND_SIGNALED }, *bad;
	struct odpemu_wc wc;

	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)l->sink->addr + MSG;
	wr.wr.rdma.rkey = l->sink->rkey;
	if (odpemu_post_send(l->p.s[1].qp, &wr, &bad))
		return -1;
	return h_poll(l->p.s[1].cq, &wc, 1, WAIT_MS) == 1 && wc.wr_id == 7 ? (int)wc.status : -1;
}

/* The peer SENDs MSG bytes of its sink to the lying QP: its completion status. */
static int peer_send(struct lie *l)
{
	struct odpemu_sge s = { (uint64_t)(uintptr_t)l->sink->addr + SINK_LEN - MSG, MSG,
				l->sink->lkey };
	struct odpemu_send_wr wr = { .wr_id = 9, .sg_list = &s, .num_sge = 1,
		.opcode = ODPEMU_WR_SEND, .send_flags = ODPEMU_SEND_SIGNALED }, *bad;
	struct odpemu_wc wc;

	pattern(0x5E, (uint8_t *)l->sink->addr + SINK_LEN - MSG, MSG);
	if (odpemu_post_send(l->p.s[0].qp, &wr, &bad))
		return -1;
	return h_poll(l->p.s[0].cq, &wc, 1, WAIT_MS) == 1 ? (int)wc.status : -1;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* The lie's own completion on the lying QP's CQ: its status, -1 if none in wait_ms. */
static int lie_wc(struct lie *l, int wait_ms)
{
	struct odpemu_wc wc;

	if (h_poll(l->p.s[1].cq, &wc, 1, wait_ms) != 1)
		return -1;
	T_CHECK(wc.wr_id == LIE_ID, "completion of wr_id %#" PRIx64 ", want the lie's",
		wc.wr_id);
	return (int)wc.status;
}

/* The next completion of the lying QP is wr_id's, WR_FLUSH_ERR. */
static bool flushed(struct lie *l, uint64_t wr_id)
{
	struct odpemu_wc wc;

	return h_poll(l->p.s[1].cq, &wc, 1, WAIT_MS) == 1 && wc.wr_id == wr_id &&
	       wc.status == ODPEMU_WC_WR_FLUSH_ERR;
}

static void check(struct liar *L, struct lie *l, const struct lie_case *c)
{
	const uint8_t *sink = L->sink;
	uint8_t want[MSG];
	uint64_t fatal0 = L->qp_fatal, cq0 = L->cq_err;
	int st, dead = -2;

	switch (c->expect) {
	case E_ERR_WC:
		st = lie_wc(l, WAIT_MS);
		T_CHECK(st == (int)c->want, "%s: completion %s, want %s", c->name,
			st < 0 ? "none" : odpemu_wc_status_str(st), odpemu_wc_status_str(c->want));
		T_CHECK(wait_err(l, WAIT_MS), "%s: QP not in ERR", c->name);
		dead = good_write(l);
		break;
	case E_BAD_WQE:	/* a HW NIC that fetched a malformed WQE: IBA's local QP error */
		st = lie_wc(l, WAIT_MS);
		T_CHECK(st == ODPEMU_WC_LOC_QP_OP_ERR, "%s: completion %s, want LOC_QP_OP_ERR",
			c->name, st < 0 ? "none" : odpemu_wc_status_str(st));
		for (unsigned k = 1; k <= c->behind; k++)
			T_CHECK(flushed(l, LIE_ID + k), "%s: WR %u behind the lie not flushed",
				c->name, k);
		T_CHECK(wait_err(l, WAIT_MS), "%s: QP not in ERR", c->name);
		take_events(L, l);
		T_EQ(L->qp_fatal - fatal0, 1, "QP_FATAL events");
		dead = good_write(l);
		break;
	case E_REFUSED:
		T_CHECK(wait_err(l, WAIT_MS), "%s: QP not in ERR", c->name);
		st = lie_wc(l, 50);
		T_CHECK(st != ODPEMU_WC_SUCCESS, "%s: a lie completed successfully", c->name);
		take_events(L, l);
		T_EQ(L->qp_fatal - fatal0, 1, "QP_FATAL events");
		dead = good_write(l);
		break;
	case E_OWN: {
		const uint8_t *src = c->arg < 2 ? NULL : L->decoy[c->arg - 2];

		st = lie_wc(l, WAIT_MS);
		if (src) {	/* the decoy: the liar's own memory at that address */
			T_CHECK(st == ODPEMU_WC_SUCCESS, "%s: completion %s, want SUCCESS",
				c->name, st < 0 ? "none" : odpemu_wc_status_str(st));
			T_CHECK(!memcmp(sink, src + 8192, MSG), "%s: the sink does not hold the "
				"liar's own bytes", c->name);
		} else {	/* nothing of ours there: a fault that fails */
			T_CHECK(st == ODPEMU_WC_LOC_PROT_ERR, "%s: completion %s, want "
				"LOC_PROT_ERR (nothing mapped here)", c->name,
				st < 0 ? "none" : odpemu_wc_status_str(st));
			T_CHECK(all_zero(sink, SINK_LEN), "%s: the sink was written", c->name);
		}
		return;
	}
	case E_RECV_ERR:
		st = peer_send(l);
		T_CHECK(st == ODPEMU_WC_REM_OP_ERR, "%s: the peer's SEND completed %s, want "
			"REM_OP_ERR", c->name, st < 0 ? "none" : odpemu_wc_status_str(st));
		st = lie_wc(l, WAIT_MS);
		T_CHECK(st == ODPEMU_WC_LOC_PROT_ERR, "%s: the receive completed %s, want "
			"LOC_PROT_ERR", c->name, st < 0 ? "none" : odpemu_wc_status_str(st));
		T_CHECK(wait_err(l, WAIT_MS), "%s: QP not in ERR", c->name);
		dead = good_write(l);
		break;
	case E_RECV_OWN:
		st = peer_send(l);
		T_CHECK(st == ODPEMU_WC_SUCCESS, "%s: the peer's SEND completed %s", c->name,
			st < 0 ? "none" : odpemu_wc_status_str(st));
		st = lie_wc(l, WAIT_MS);
		T_CHECK(st == ODPEMU_WC_SUCCESS, "%s: the receive completed %s", c->name,
			st < 0 ? "none" : odpemu_wc_status_str(st));
		pattern(0x5E, want, MSG);
		T_CHECK(L->decoy[2] && !memcmp(L->decoy[2] + 8192, want, MSG),
			"%s: the SEND did not land in the liar's decoy", c->name);
		return;
	case E_GEOMETRY:
		st = good_write(l);
		T_CHECK(st == ODPEMU_WC_SUCCESS, "%s: a WRITE after it completed %s", c->name,
			st < 0 ? "none" : odpemu_wc_status_str(st));
		T_CHECK(!memcmp(sink + MSG, L->own, MSG), "%s: the WRITE's bytes", c->name);
		return;
	case E_CQ_ERR: {
		long long end = now_ms() + WAIT_MS;

		while (L->cq_err == cq0 && now_ms() < end) {
			take_events(L, l);
			usleep(1000);
		}
		T_EQ(L->cq_err - cq0, 1, "CQ_ERR events");
		return;
	}
	}
	/* the QP in ERR takes nothing more; nothing reached the sink but the peer's SEND */
	T_CHECK(dead == ODPEMU_WC_WR_FLUSH_ERR, "%s: a WRITE after the lie completed %s, want "
		"WR_FLUSH_ERR", c->name, dead < 0 ? "none" : odpemu_wc_status_str(dead));
	T_CHECK(all_zero(sink, SINK_LEN - MSG), "%s: the sink was written", c->name);
}

/* Lines of file that contain text. */
static unsigned log_lines(const char *file, const char *text)
{
	FILE *f = fopen(file, "r");
	char line[1024];
	unsigned n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, text) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* Decoys of our own where the bystander's rw and odp canaries are; local left unmapped. */
static void decoys(struct liar *L)
{
	for (int i = 0; i < 3; i++) {
		const struct bys_mem *m = bys_mem(L, i);
		void *p;

		if (i == 1) {
			T_CHECK(msync((void *)(uintptr_t)(m->va & ~4095ull), 4096, MS_ASYNC) &&
				errno == ENOMEM, "the bystander's local canary address is mapped "
				"here too");
			continue;
		}
		p = mmap((void *)(uintptr_t)m->va, m->len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		T_CHECK(p == (void *)(uintptr_t)m->va, "decoy at %#" PRIx64 ": %s", m->va,
			strerror(errno));
		if (p != (void *)(uintptr_t)m->va)
			continue;
		L->decoy[i] = p;
		pattern(0xD0 + (uint64_t)i, p, m->len);
	}
}

static void body(struct h_env *e)
{
	struct liar L = { .e = e };
	uint64_t ops0, ops1, bad0;
	struct bys_result br;
	int fl;

	if (bys_start(e, &L.bys))
		goto out;
	decoys(&L);
	e->ctx[0] = h_open(e, 0);
	e->ctx[1] = h_open(e, 1);
	for (int i = 0; i < 2; i++) {
		fl = fcntl(e->ctx[i]->async_fd, F_GETFL);
		fcntl(e->ctx[i]->async_fd, F_SETFL, fl | O_NONBLOCK);
	}
	L.own = h_cold(OWN_LEN);
	L.sink = h_cold(SINK_LEN);
	L.other = h_cold(OWN_LEN);
	L.other_pd = odpemu_alloc_pd(e->ctx[1]);
	L.other_mr = L.other_pd ? odpemu_reg_mr(L.other_pd, L.other, OWN_LEN,
						ODPEMU_ACCESS_LOCAL_WRITE) : NULL;
	T_CHECK(L.other_mr, "the liar's other PD and MR: %s", strerror(errno));
	if (t_failures)
		goto out;
	bad0 = h_counter(e->ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "bad_wqes");
	ops0 = bys_ops(&L.bys);
	for (size_t i = 0; i < T_ARRAY_SIZE(cases); i++) {
		struct lie l;
		unsigned long f0 = t_failures;

		if (!lie_up(&L, &l)) {
			T_CHECK(0, "%s: pair: %s", cases[i].name, strerror(errno));
			lie_down(&l);
			break;
		}
		cases[i].fn(&L, &l, cases[i].arg);
		check(&L, &l, &cases[i]);
		take_events(&L, &l);
		lie_down(&l);
		printf("%-58s %s\n", cases[i].name, t_failures == f0 ? "ok" : "FAILED");
	}
	ops1 = bys_ops(&L.bys);
	printf("bystander: %" PRIu64 " WRITE + READ-back pairs while the liar lied\n", ops1 - ops0);
	T_CHECK(ops1 != UINT64_MAX && ops1 > ops0, "the bystander made no progress (%" PRIu64
		" -> %" PRIu64 ")", ops0, ops1);
	printf("bad_wqes: %" PRIu64 "\n",
	       (uint64_t)h_counter(e->ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "bad_wqes") - bad0);
	T_EQ(L.qp_other_events, 0, "unexpected events on host 1");
	{	/* one line per QP refused, not one per slot of garbage */
		unsigned refused = 0;

		for (size_t i = 0; i < T_ARRAY_SIZE(cases); i++)
			refused += cases[i].expect == E_REFUSED || cases[i].expect == E_BAD_WQE;
		T_EQ(log_lines(e->host[1].log, "bad WQE ("), refused,
		     "host 1's log lines about refused WQEs");
	}
	odpemu_dereg_mr(L.other_mr);
	odpemu_dealloc_pd(L.other_pd);
out:
	bys_stop(&L.bys, &br);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "sec-lying-ring", .seed = 23, .watchdog_s = 300,
		.open = H_OPEN_NONE, .body = body };

	return h_main(argc, argv, &t);
}
