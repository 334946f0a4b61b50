/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the shared-memory ring consumer (emu/rings.c: emu_rings_drain,
 * emu_rings_service_cqs and the CQ writes nic/ makes through it), fed by a hostile client.
 *
 * Two sessions on one daemon (fz_emu.h: a real NIC, fake world), each accepted on its own
 * socketpair as a client's connection is, closed as when the client exits, and each with
 * a PD, a pinned MR and an ODP MR over its own 64 KiB of memory, a send and a receive CQ,
 * and QPs in RTS:
 *   client 1 (hostile): an RC QP, a UD QP, an RC QP on an SRQ, and the SRQ;
 *   client 2 (the others): an RC QP and a UD QP.
 * The objects are made as the control ops make them (verbs_qp.c, verbs.c), except that
 * each ring is its own heap block of exactly its header and slots, so ASan sees any access
 * past a ring (in odpemud a ring is a memfd mapping, where an overrun would go unseen).
 *
 * Input: flags (byte 0); for each of client 1's rings in the order below, 8 bytes: the
 * producer index and the consumer index the client writes (CQ rings: the consumer index
 * and the arm sequence); 16 bytes for client 1's doorbell page (ipc_db.h: three handles
 * + 1 to mark, 0 none; a word of raw bits at every level); then records
 * [ring][slot][one slot's bytes] written into its work rings.
 *   rings: 0 RC SQ, 1 RC RQ, 2 UD SQ, 3 UD RQ, 4 SQ of the SRQ's QP, 5 SRQ, 6 send CQ,
 *          7 receive CQ
 *   flags bit 0: answer the page faults (bit 1: fail them); bit 2: arm requests of the
 *         CQs (solicited only if bit 3); bit 4: the timers run 10 s later; bit 5: the
 *         sessions have doorbell pages (HELLO gives one; then only marked queues are
 *         looked at), else every queue is drained.
 * Client 2 posts a SEND and a receive on its RC QP and a SEND on its UD QP each time (and
 * marks them).
 *
 * Checked, besides ASan/UBSan:
 *  - the daemon's index never passes the producer index the client wrote, and once it
 *    consumed, the ring's consumer index is the daemon's;
 *  - completions go only into the rings of their own client, never more than the ring
 *    holds beyond the consumer index the client wrote, and name only that client's QPs;
 *  - DMA, for each client, only inside that client's memory (fz_emu.h's ports);
 *  - a QP whose WQE the daemon refused is in ERR, and the QP_FATAL event went to its own
 *    client; every event of client 1 names one of its objects;
 *  - client 2 is served: its WQEs taken, its packets sent, its QPs in RTS, no event, its
 *    completions successful and its own;
 *  - every object can be destroyed afterwards, and then the NIC.
 * Every input builds the daemon's objects anew. `fuzz-rings --write-corpus=DIR` writes the
 * seed corpus; ODPEMU_FUZZ_TRACE=1 prints what the daemon took from each ring.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fz_emu.h"
#include "ipc_db.h"
#include "ipc_ring.h"
#include "rings.h"
#include "session.h"
#include "verbs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MEM		(64u * 1024)	/* each client's memory, at MEM_AT + id MiB */
#define MEM_AT		0x700000000000ull	/* above ASan's heap and shadow */
#define PIN_OFF		0u		/* the pinned MR: the first 32 KiB */
#define PIN_LEN		0x8000u
#define ODP_OFF		0x8000u		/* the ODP MR: the next 16 KiB */
#define ODP_LEN		0x4000u
#define WR		8u		/* max_send_wr, max_recv_wr, SRQ max_wr */
#define SGE		2u
#define INLINE		64u
#define CQE		16u
#define DRAINS		4		/* loop rounds per input */
#define NRINGS		8
#define NMARKS		4		/* doorbell page words of the input */
#define HEAD		(1 + 8 * NRINGS + 4 * NMARKS)	/* the input before its slots */
#define F_DB		32u		/* flags: the sessions have doorbell pages */
#define PEER_QPN	0x400u

enum { R_RC_SQ, R_RC_RQ, R_UD_SQ, R_UD_RQ, R_SRQ_SQ, R_SRQ, R_SCQ, R_RCQ };

struct client {
	struct emu_session *s;
	uint8_t *mem;
	int sock;			/* the client's end of its control socket */
	int events[2];			/* the async event pipe: read end, write end */
	struct emu_obj *pd, *pin, *odp, *scq, *rcq, *srq, *rc, *ud, *rc_srq;
	void *blocks[16];		/* ring memory, freed after the objects */
	unsigned nblocks;
};

static struct emu_daemon d;
static struct client cl[3];	/* by client id: 1 hostile, 2 the others */
static bool tracing;		/* ODPEMU_FUZZ_TRACE */

/* ---- the objects, as the control ops make them ---- */

static void must(int rc)
{
	if (rc)
		abort();	/* the fixture failed: a harness bug, not a finding */
}

static void *ring_block(struct client *c, uint32_t size, uint32_t slot)
{
	size_t len = IPC_RING_HDR_BYTES + (size_t)size * slot;
	void *p = aligned_alloc(64, (len + 63) & ~(size_t)63);

	if (!p || c->nblocks == 16)
		abort();
	memset(p, 0, len);
	c->blocks[c->nblocks++] = p;
	return p;
}

static struct emu_obj *new_obj(struct client *c, enum emu_obj_type type)
{
	struct emu_obj *o = emu_obj_new(c->s, type);

	if (!o)
		abort();
	return o;
}

static struct emu_obj *mr(struct client *c, uint32_t off, uint32_t len, bool odp)
{
	struct emu_obj *o = new_obj(c, EMU_OBJ_MR);
	uint64_t va = (uint64_t)(uintptr_t)(c->mem + off);
	struct nic_mr_init in = { va, len, ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
		ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC |
		(odp ? ODPEMU_ACCESS_ON_DEMAND : 0), odp ? 0 : va };

	must(nic_mr_reg(c->pd->u.pd, &in, &o->u.mr.mr));
	nic_mr_set_owner(o->u.mr.mr, o);
	o->u.mr.va = va;
	o->u.mr.len = len;
	o->u.mr.access = in.access;
	o->u.mr.pd = c->pd;
	c->pd->refs++;
	return o;
}

static struct emu_obj *cq(struct client *c)
{
	struct emu_obj *o = new_obj(c, EMU_OBJ_CQ);

	must(nic_cq_create(d.nic, CQE, &o->u.cq.cq));
	emu_ring_setup(&o->u.cq.ring, ring_block(c, CQE, ipc_cq_slot()), 0, CQE, ipc_cq_slot());
	nic_cq_set_owner(o->u.cq.cq, o);
	return o;
}

static struct emu_obj *srq(struct client *c)
{
	struct emu_obj *o = new_obj(c, EMU_OBJ_SRQ);
	uint32_t slot = ipc_rq_slot(SGE);

	must(nic_srq_create(c->pd->u.pd, WR, SGE, &o->u.srq.srq));
	emu_ring_setup(&o->u.srq.ring, ring_block(c, WR, slot), 0, WR, slot);
	nic_srq_set_owner(o->u.srq.srq, o);
	o->u.srq.max_sge = SGE;
	o->u.srq.pd = c->pd;
	c->pd->refs++;
	return o;
}

/* A QP through INIT, RTR and RTS (RC: to PEER_QPN at 10.0.0.2, path MTU 4096). */
static void qp_up(struct emu_obj *o, uint32_t dest)
{
	struct nic_gid peer = nic_gid_from_v4(0x0a000002u);
	struct nic_qp *qp = o->u.qp.qp;
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1, .qkey = 0x1111,
		.qp_access_flags = ODPEMU_ACCESS_ALL_QP };
	bool rc = o->u.qp.type == ODPEMU_QPT_RC;

	must(nic_qp_modify(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT |
			   (rc ? ODPEMU_QP_ACCESS_FLAGS : ODPEMU_QP_QKEY), 0, NULL));
	a = (struct nic_qp_attr){ .qp_state = ODPEMU_QPS_RTR, .path_mtu = ODPEMU_MTU_4096,
		.dest_qp_num = dest, .rq_psn = 100, .max_dest_rd_atomic = 4, .min_rnr_timer = 1 };
	memcpy(a.ah_attr.dgid, peer.raw, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	must(nic_qp_modify(qp, &a, ODPEMU_QP_STATE | (rc ? ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU |
			   ODPEMU_QP_DEST_QPN | ODPEMU_QP_RQ_PSN | ODPEMU_QP_MAX_DEST_RD_ATOMIC |
			   ODPEMU_QP_MIN_RNR_TIMER : 0), 0, NULL));
	a = (struct nic_qp_attr){ .qp_state = ODPEMU_QPS_RTS, .sq_psn = 200, .timeout = 14,
		.retry_cnt = 1, .rnr_retry = 1, .max_rd_atomic = 4 };
	must(nic_qp_modify(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN | (rc ? ODPEMU_QP_TIMEOUT |
			   ODPEMU_QP_RETRY_CNT | ODPEMU_QP_RNR_RETRY | ODPEMU_QP_MAX_QP_RD_ATOMIC :
			   0), 0, NULL));
}

static struct emu_obj *qp(struct client *c, enum odpemu_qp_type type, struct emu_obj *srq_o)
{
	struct emu_obj *o = new_obj(c, EMU_OBJ_QP);
	struct nic_qp_init init = { .type = type, .send_cq = c->scq->u.cq.cq,
		.recv_cq = c->rcq->u.cq.cq, .srq = srq_o ? srq_o->u.srq.srq : NULL,
		.max_send_wr = WR, .max_recv_wr = WR, .max_send_sge = SGE, .max_recv_sge = SGE,
		.max_inline_data = INLINE };
	struct ipc_qp_layout l = ipc_qp_layout(WR, SGE, INLINE, WR, SGE, !srq_o);

	must(nic_qp_create(c->pd->u.pd, &init, &o->u.qp.qp));
	emu_ring_setup(&o->u.qp.sq, ring_block(c, l.sq_size, l.sq_slot), 0, l.sq_size, l.sq_slot);
	if (!srq_o)
		emu_ring_setup(&o->u.qp.rq, ring_block(c, l.rq_size, l.rq_slot), 0, l.rq_size,
			       l.rq_slot);
	nic_qp_set_owner(o->u.qp.qp, o);
	o->u.qp.pd = c->pd;
	o->u.qp.send_cq = c->scq;
	o->u.qp.recv_cq = c->rcq;
	o->u.qp.srq = srq_o;
	c->pd->refs++;
	c->scq->refs++;
	c->rcq->refs++;
	if (srq_o)
		srq_o->refs++;
	o->u.qp.max_send_sge = SGE;
	o->u.qp.max_recv_sge = SGE;
	o->u.qp.max_inline = INLINE;
	o->u.qp.type = type;
	qp_up(o, PEER_QPN + o->handle);
	return o;
}

/* A session as a client's connection makes it (emu_session_accept on its socket), past
 * HELLO (its event pipe), with its objects. */
static void client_up(uint32_t id, bool db)
{
	struct client *c = &cl[id];
	struct emu_session *s;
	int sv[2], fd;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) ||
	    emu_session_accept(&d, sv[0]))
		abort();
	c->sock = sv[1];
	c->s = s = d.sessions;
	if (s->id != id || (s->event_wr = fcntl(c->events[1], F_DUPFD_CLOEXEC, 0)) < 0)
		abort();
	s->hello_done = true;
	if (db) {		/* HELLO's doorbell page; the client's mapping is not needed */
		if (emu_session_db(s, &fd))
			abort();
		close(fd);
	}
	c->nblocks = 0;
	memset(c->mem, 0x5a, MEM);
	c->pd = new_obj(c, EMU_OBJ_PD);
	must(nic_pd_alloc(d.nic, id, &c->pd->u.pd));
	c->pin = mr(c, PIN_OFF, PIN_LEN, false);
	c->odp = mr(c, ODP_OFF, ODP_LEN, true);
	c->scq = cq(c);
	c->rcq = cq(c);
	c->rc = qp(c, ODPEMU_QPT_RC, NULL);
	c->ud = qp(c, ODPEMU_QPT_UD, NULL);
	c->srq = id == 1 ? srq(c) : NULL;
	c->rc_srq = id == 1 ? qp(c, ODPEMU_QPT_RC, c->srq) : NULL;
}

/* The client goes: its session closes as on its socket's end of file, destroying every
 * object (fz_nic_down then finds out whether one would not go). */
static void client_down(struct client *c)
{
	emu_session_close(c->s);
	close(c->sock);
	c->s = NULL;
}

/* ---- the rings as the clients see them ---- */

static struct emu_ring *ring_of(struct client *c, unsigned r)
{
	switch (r) {
	case R_RC_SQ: return &c->rc->u.qp.sq;
	case R_RC_RQ: return &c->rc->u.qp.rq;
	case R_UD_SQ: return &c->ud->u.qp.sq;
	case R_UD_RQ: return &c->ud->u.qp.rq;
	case R_SRQ_SQ: return &c->rc_srq->u.qp.sq;
	case R_SRQ: return &c->srq->u.srq.ring;
	case R_SCQ: return &c->scq->u.cq.ring;
	default: return &c->rcq->u.cq.ring;
	}
}

static void *slot(struct emu_ring *r, uint32_t idx)
{
	return ipc_ring_slot(r->base, r->offset, r->size, r->slot, idx);
}

static void produce(struct emu_ring *r, uint32_t prod)
{
	atomic_store_explicit(&r->hdr->prod, prod, memory_order_release);
}

/* Client 2's WQEs: a SEND and a receive on its RC QP, a SEND on its UD QP. */
static void well_behaved(struct client *c)
{
	uint32_t lkey = nic_mr_lkey(c->pin->u.mr.mr);
	uint64_t at = (uint64_t)(uintptr_t)c->mem;
	struct ipc_swqe *w = slot(&c->rc->u.qp.sq, 0);
	struct ipc_rwqe *rw = slot(&c->rc->u.qp.rq, 0);
	struct nic_gid peer = nic_gid_from_v4(0x0a000002u);

	*w = (struct ipc_swqe){ .wr_id = 1, .opcode = ODPEMU_WR_SEND,
		.send_flags = ODPEMU_SEND_SIGNALED, .num_sge = 1 };
	w->sge[0] = (struct ipc_sge){ at, 100, lkey };
	*rw = (struct ipc_rwqe){ .wr_id = 2, .num_sge = 1 };
	rw->sge[0] = (struct ipc_sge){ at + 0x1000, 0x1000, lkey };
	w = slot(&c->ud->u.qp.sq, 0);
	*w = (struct ipc_swqe){ .wr_id = 3, .opcode = ODPEMU_WR_SEND,
		.send_flags = ODPEMU_SEND_SIGNALED, .num_sge = 1, .remote_qpn = 0x55,
		.remote_qkey = 0x1111 };
	memcpy(w->ud_dgid, peer.raw, 16);
	w->sge[0] = (struct ipc_sge){ at + 0x2000, 64, lkey };
	produce(&c->rc->u.qp.sq, 1);
	produce(&c->rc->u.qp.rq, 1);
	produce(&c->ud->u.qp.sq, 1);
	if (c->s->db) {
		ipc_db_mark(c->s->db, c->rc->handle);
		ipc_db_mark(c->s->db, c->ud->handle);
	}
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Client 1's doorbell page: three handles marked as the library marks them (any number),
 * and one word's worth of bits at each level, consistent or not. */
static void hostile_marks(struct ipc_db_page *p, const uint8_t *in)
{
	uint32_t v = get32(in + 12);

	for (unsigned i = 0; i < 3; i++)
		if (get32(in + 4 * i))
			ipc_db_mark(p, get32(in + 4 * i) - 1);	/* 1: handle 0, "everything" */
	if (!v)
		return;
	atomic_fetch_or(&p->top[v % IPC_DB_TOP], 1ull << (v >> 8 & 63));
	atomic_fetch_or(&p->summary[(v >> 4) % IPC_DB_SUMMARY], 1ull << (v >> 14 & 63));
	atomic_fetch_or(&p->bits[(v >> 2) % IPC_DB_WORDS], 1ull << (v >> 20 & 63));
}

/* Client 1 writes what the input says: its indices, its doorbell page, then slots. */
static void hostile(struct client *c, unsigned flags, const uint8_t *in, size_t len,
		    uint32_t prod[NRINGS])
{
	for (unsigned r = 0; r < NRINGS; r++) {
		struct emu_ring *g = ring_of(c, r);
		uint32_t a = get32(in + 8 * r), b = get32(in + 8 * r + 4);

		prod[r] = a;
		if (r < R_SCQ) {
			atomic_store(&g->hdr->cons, b);
			produce(g, a);
		} else {
			atomic_store(&g->hdr->cons, a);
			atomic_store(&g->hdr->arm_seq, b);
			atomic_store(&g->hdr->arm_solicited, (flags >> 3) & 1);
		}
	}
	in += 8 * NRINGS;
	len -= 8 * NRINGS;
	if (c->s->db)
		hostile_marks(c->s->db, in);
	in += 4 * NMARKS;
	len -= 4 * NMARKS;
	while (len >= 2) {
		struct emu_ring *g = ring_of(c, in[0] % R_SCQ);
		size_t n = len - 2 < g->slot ? len - 2 : g->slot;

		memcpy(slot(g, in[1]), in + 2, n);
		in += 2 + n;
		len -= 2 + n;
	}
}

/* ---- checks ---- */

static bool qp_of(const struct client *c, uint32_t qpn)
{
	struct emu_obj *qps[] = { c->rc, c->ud, c->rc_srq };

	for (unsigned i = 0; i < 3; i++)
		if (qps[i] && nic_qp_num(qps[i]->u.qp.qp) == qpn)
			return true;
	return false;
}

/* The completions the daemon wrote into a CQ ring: never more than the ring holds beyond
 * the consumer index, each naming a QP of the ring's client (client 2: successes only). */
static void check_cq(const struct client *c, struct emu_obj *o, bool ok_only)
{
	struct emu_ring *r = &o->u.cq.ring;
	uint32_t cons = atomic_load(&r->hdr->cons), prod = atomic_load(&r->hdr->prod);

	if (prod != r->idx || (r->idx && r->idx - cons > r->size))
		__builtin_trap();
	for (uint32_t i = 0; i < r->idx && i < r->size; i++) {
		const struct ipc_cqe *e = slot(r, r->idx - 1 - i);

		if (!qp_of(c, e->qp_num) || (ok_only && e->status != ODPEMU_WC_SUCCESS))
			__builtin_trap();
	}
}

static bool is_obj_of(struct client *c, uint32_t handle)
{
	return handle && handle < c->s->tab->nobjs && c->s->tab->objs[handle];
}

/* Client 1's events: each names one of its objects; a QP_FATAL's QP is in ERR. Returns
 * the QP_FATAL count. */
/* The client's events; the QP_FATALs counted, each for a QP in ERR. An SRQ that failed
 * raised SRQ_ERR once, and its QP is in ERR. */
static unsigned check_events(struct client *c)
{
	struct ipc_event ev;
	unsigned fatal = 0, srq_err = 0;

	while (read(c->events[0], &ev, sizeof(ev)) == (ssize_t)sizeof(ev)) {
		struct emu_obj *o;

		if (c == &cl[2] || !is_obj_of(c, ev.handle))
			__builtin_trap();	/* an event for the other client, or for nothing */
		o = c->s->tab->objs[ev.handle];
		if (ev.type == ODPEMU_EVENT_QP_FATAL) {
			if (o->type != EMU_OBJ_QP || nic_qp_state(o->u.qp.qp) != ODPEMU_QPS_ERR)
				__builtin_trap();
			fatal++;
		} else if (ev.type == ODPEMU_EVENT_SRQ_ERR) {
			if (o->type != EMU_OBJ_SRQ || !nic_srq_in_error(o->u.srq.srq))
				__builtin_trap();
			srq_err++;
		}
	}
	if (c->srq && srq_err != (nic_srq_in_error(c->srq->u.srq.srq) ? 1u : 0u))
		__builtin_trap();	/* an SRQ failed without SRQ_ERR, or twice */
	if (srq_err && nic_qp_state(c->rc_srq->u.qp.qp) != ODPEMU_QPS_ERR)
		__builtin_trap();	/* the failed SRQ's QP still runs */
	return fatal;
}

/* ODPEMU_FUZZ_TRACE=1: what the daemon made of client 1's rings. */
static void trace(uint64_t bad_before, uint64_t sent_before)
{
	struct client *h = &cl[1];
	struct emu_obj *qps[] = { h->rc, h->ud, h->rc_srq };

	fprintf(stderr, "fuzz-rings: taken");
	for (unsigned r = 0; r < NRINGS; r++)
		fprintf(stderr, " %u", ring_of(h, r)->idx);
	fprintf(stderr, "; bad %llu, sent %llu, QPs", (unsigned long long)(d.ctr.ring_bad_wqe -
		bad_before), (unsigned long long)(fz_sent - sent_before));
	for (unsigned i = 0; i < 3; i++)
		fprintf(stderr, " %s", odpemu_qp_state_str(nic_qp_state(qps[i]->u.qp.qp)));
	for (unsigned q = 0; q < 2; q++) {
		struct emu_ring *r = &(q ? h->rcq : h->scq)->u.cq.ring;

		for (uint32_t i = 0; i < r->idx && i < r->size; i++)
			fprintf(stderr, " %s:%s", q ? "rcqe" : "scqe", odpemu_wc_status_str(
				((const struct ipc_cqe *)slot(r, i))->status));
	}
	fputc('\n', stderr);
}

static void check(const uint32_t prod[NRINGS], uint64_t bad_before, uint64_t sent_before)
{
	struct client *h = &cl[1], *g = &cl[2];
	struct nic_qp_counters rc, ud;
	unsigned fatal;

	for (unsigned r = 0; r < R_SCQ; r++) {
		struct emu_ring *x = ring_of(h, r);

		if (x->idx > prod[r] || (x->idx && atomic_load(&x->hdr->cons) != x->idx))
			__builtin_trap();	/* consumed what was never produced */
	}
	check_cq(h, h->scq, false);
	check_cq(h, h->rcq, false);
	check_cq(g, g->scq, true);
	check_cq(g, g->rcq, true);
	fatal = check_events(h);
	check_events(g);
	/* Every QP_FATAL is a refusal (the first of its QP, or of the SRQ it receives from:
	 * later ones are only counted). */
	if (d.ctr.ring_bad_wqe - bad_before < fatal)
		__builtin_trap();
	nic_qp_counters(g->rc->u.qp.qp, &rc);
	nic_qp_counters(g->ud->u.qp.qp, &ud);
	if (g->rc->u.qp.sq.idx != 1 || g->rc->u.qp.rq.idx != 1 || g->ud->u.qp.sq.idx != 1 ||
	    !rc.pkts_sent || !ud.pkts_sent || fz_sent == sent_before ||
	    nic_qp_state(g->rc->u.qp.qp) != ODPEMU_QPS_RTS ||
	    nic_qp_state(g->ud->u.qp.qp) != ODPEMU_QPS_RTS)
		__builtin_trap();	/* the well-behaved client was not served */
}

/* ---- the corpus ---- */

static size_t put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
	return 4;
}

/* One slot of a seed: a WQE as the library would write it. */
struct seed_slot {
	unsigned ring, idx;
	_Alignas(8) uint8_t b[512];
};

static struct ipc_swqe *swqe(struct seed_slot *s) { return (struct ipc_swqe *)(void *)s->b; }

/* One seed: flags, indices (the producers of prod[]; CQs: consumer and arm sequence both
 * prod[]), slots. */
static size_t seed(uint8_t *out, unsigned flags, const uint32_t prod[NRINGS],
		   const uint32_t marks[NMARKS], const struct seed_slot *s, unsigned n)
{
	size_t at = 1;

	out[0] = (uint8_t)flags;
	for (unsigned r = 0; r < NRINGS; r++) {
		at += put32(out + at, prod[r]);
		at += put32(out + at, r < R_SCQ ? 0 : prod[r]);
	}
	for (unsigned i = 0; i < NMARKS; i++)
		at += put32(out + at, marks[i]);
	for (unsigned i = 0; i < n; i++) {
		uint32_t len = ring_of(&cl[1], s[i].ring)->slot;

		out[at++] = (uint8_t)s[i].ring;
		out[at++] = (uint8_t)s[i].idx;
		memcpy(out + at, s[i].b, len);
		at += len;
	}
	return at;
}

static int write_seed(const char *dir, const char *name, const uint8_t *buf, size_t n)
{
	char path[4096];
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "wb")))
		return 1;
	if (fwrite(buf, 1, n, f) != n)
		rc = 1;
	return fclose(f) ? 1 : rc;
}

static const struct {
	const char *name;
	unsigned flags, ring, nslots;
	uint32_t prod;
	uint32_t marks[NMARKS];		/* with F_DB: handle + 1 marked, 0 none; raw bits */
} seeds[] = {
	{ "rc-send", 0, R_RC_SQ, 1, 1 }, { "rc-send-inline", 0, R_RC_SQ, 1, 1 },
	{ "rc-write", 0, R_RC_SQ, 1, 1 }, { "rc-read-odp", 1, R_RC_SQ, 1, 1 },
	{ "rc-read-odp-fail", 2, R_RC_SQ, 1, 1 }, { "rc-cas", 0, R_RC_SQ, 1, 1 },
	{ "rc-fadd", 0, R_RC_SQ, 1, 1 }, { "rc-flush", 0, R_RC_SQ, 1, 1 },
	{ "rc-atomic-write", 0, R_RC_SQ, 1, 1 }, { "rc-batch", 16, R_RC_SQ, 4, 4 },
	{ "rc-recv", 0, R_RC_RQ, 2, 2 }, { "ud-send", 0, R_UD_SQ, 1, 1 },
	{ "ud-recv", 0, R_UD_RQ, 1, 1 }, { "srq-qp-send", 0, R_SRQ_SQ, 1, 1 },
	{ "srq-recv", 0, R_SRQ, 2, 2 }, { "bad-num-sge", 0, R_RC_SQ, 1, 1 },
	{ "bad-inline-len", 0, R_RC_SQ, 1, 1 }, { "bad-opcode", 0, R_RC_SQ, 1, 1 },
	{ "bad-lkey", 0, R_RC_SQ, 1, 1 }, { "bad-recv-sge", 0, R_RC_RQ, 1, 1 },
	{ "bad-srq-sge", 0, R_SRQ, 1, 1 }, { "prod-huge", 0, R_RC_SQ, 1, 0xfffffff0u },
	{ "cq-cons-ahead", 4, R_RC_SQ, 1, 1 }, { "ud-send-rc-opcode", 0, R_UD_SQ, 1, 1 },
	/* doorbell pages: client 1 marks everything (handle 0), its RC QP (6) and SRQ (8),
	 * or handles it does not have and bits of no mark */
	{ "db-all", F_DB, R_RC_SQ, 1, 1, { 1 } },
	{ "db-rc-srq", F_DB, R_SRQ, 1, 1, { 7, 9 } },
	{ "db-garbage", F_DB | 4, R_RC_SQ, 1, 1, { 0xffffffffu, 12345, 0x100000, 0xdeadbeefu } },
};

/* Seed t's slot i: a signaled SEND of 64 bytes from the pinned MR, changed per name. */
static void seed_slot(unsigned t, unsigned i, struct seed_slot *s)
{
	struct client *c = &cl[1];
	uint64_t pin = (uint64_t)(uintptr_t)c->mem, odp = pin + ODP_OFF;
	uint32_t lk = nic_mr_lkey(c->pin->u.mr.mr), ok = nic_mr_lkey(c->odp->u.mr.mr);
	struct nic_gid peer = nic_gid_from_v4(0x0a000002u);
	const char *name = seeds[t].name;
	unsigned ring = seeds[t].ring;
	struct ipc_swqe *w = swqe(s);
	struct ipc_sge *sge = w->sge;

	memset(s, 0, sizeof(*s));
	s->ring = ring;
	s->idx = i;
	*w = (struct ipc_swqe){ .wr_id = 0x100 + 16 * t + i, .opcode = ODPEMU_WR_SEND,
		.send_flags = ODPEMU_SEND_SIGNALED, .num_sge = 1, .rkey = 0x1234,
		.remote_addr = 0x700000, .compare_add = 1, .swap = 2 };
	if (ring == R_RC_RQ || ring == R_UD_RQ || ring == R_SRQ) {
		struct ipc_rwqe *rw = (struct ipc_rwqe *)(void *)s->b;

		*rw = (struct ipc_rwqe){ .wr_id = 0x100 + 16 * t + i, .num_sge = 1 };
		sge = rw->sge;
		if (!strncmp(name, "bad-", 4))
			rw->num_sge = SGE + 1;
	}
	sge[0] = (struct ipc_sge){ pin + 0x100 * i, 64, lk };
	sge[1] = (struct ipc_sge){ pin + 0x4000, 32, lk };
	if (!strcmp(name, "rc-send-inline")) {
		w->send_flags |= ODPEMU_SEND_INLINE;
		w->num_sge = 0;
		w->inline_len = 48;
		memset(w->sge, 0x42, 48);
	} else if (!strcmp(name, "rc-write")) {
		w->opcode = ODPEMU_WR_RDMA_WRITE_WITH_IMM;
		w->num_sge = 2;
	} else if (!strncmp(name, "rc-read-odp", 11)) {
		w->opcode = ODPEMU_WR_RDMA_READ;
		sge[0] = (struct ipc_sge){ odp + 0x1000, 256, ok };
	} else if (!strcmp(name, "rc-cas") || !strcmp(name, "rc-fadd")) {
		w->opcode = name[3] == 'c' ? ODPEMU_WR_ATOMIC_CMP_AND_SWP :
			ODPEMU_WR_ATOMIC_FETCH_AND_ADD;
		sge[0].length = 8;
	} else if (!strcmp(name, "rc-flush")) {
		w->opcode = ODPEMU_WR_FLUSH;
		w->num_sge = 0;
		w->flush_len = 4096;
		w->flush_type = 1;
	} else if (!strcmp(name, "rc-atomic-write")) {
		w->opcode = ODPEMU_WR_ATOMIC_WRITE;
		sge[0].length = 8;
	} else if (!strcmp(name, "rc-batch")) {
		static const uint32_t ops[] = { ODPEMU_WR_SEND, ODPEMU_WR_RDMA_WRITE,
			ODPEMU_WR_RDMA_READ, ODPEMU_WR_SEND };

		w->opcode = ops[i];
		w->send_flags = i == 3 ? 0 : ODPEMU_SEND_SIGNALED;
	} else if (!strncmp(name, "ud-send", 7)) {
		w->remote_qpn = 0x66;
		w->remote_qkey = 0x1111;
		memcpy(w->ud_dgid, peer.raw, 16);
		if (name[7])
			w->opcode = ODPEMU_WR_RDMA_WRITE;
	} else if (!strcmp(name, "bad-num-sge")) {
		w->num_sge = 0x10000001u;
	} else if (!strcmp(name, "bad-inline-len")) {
		w->send_flags |= ODPEMU_SEND_INLINE;
		w->num_sge = 0;
		w->inline_len = 0xfffffff0u;
	} else if (!strcmp(name, "bad-opcode")) {
		w->opcode = 0x7777;
	} else if (!strcmp(name, "bad-lkey")) {
		sge[0].lkey = 0xdead00;
	} else if (ring == R_RC_RQ || ring == R_UD_RQ || ring == R_SRQ) {
		if (i == 0)
			sge[0] = (struct ipc_sge){ odp, 2048, ok };
	}
}

static int write_corpus(const char *dir)
{
	static uint8_t buf[65536];
	struct seed_slot s[8];
	uint32_t prod[NRINGS];
	int rc = 0;

	mkdir(dir, 0755);
	for (unsigned t = 0; t < sizeof(seeds) / sizeof(seeds[0]); t++) {
		memset(prod, 0, sizeof(prod));
		prod[seeds[t].ring] = seeds[t].prod;
		if (!strcmp(seeds[t].name, "cq-cons-ahead")) {
			prod[R_SCQ] = 0x80000000u;	/* a consumer index far ahead */
			prod[R_RCQ] = 5;
		}
		for (unsigned i = 0; i < seeds[t].nslots; i++)
			seed_slot(t, i, &s[i]);
		rc |= write_seed(dir, seeds[t].name, buf, seed(buf, seeds[t].flags, prod,
								seeds[t].marks, s, seeds[t].nslots));
	}
	return rc;
}

/* ---- libFuzzer ---- */

static void build(bool db)
{
	fz_nic_up(&d);
	client_up(1, db);
	client_up(2, db);
	/* client 1 first: a hostile client drained before the others must not starve them */
	if (d.sessions != cl[2].s)
		abort();
	d.sessions = cl[1].s;
	cl[1].s->next = cl[2].s;
	cl[2].s->next = NULL;
}

static void teardown(void)
{
	client_down(&cl[1]);
	client_down(&cl[2]);
	for (int i = 0; i < 8 && d.closing_sessions; i++)
		emu_loop_run_once(&d.loop, 0);	/* the polls' last completions free them */
	if (d.closing_sessions || d.sessions)
		__builtin_trap();	/* a session outlived its close */
	fz_nic_down(&d);
	for (uint32_t id = 1; id <= 2; id++)
		for (unsigned i = 0; i < cl[id].nblocks; i++)
			free(cl[id].blocks[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_daemon_init(&d, true);
	tracing = getenv("ODPEMU_FUZZ_TRACE") != NULL;
	for (uint32_t id = 1; id <= 2; id++) {
		/* At a fixed address: the corpus's SGEs name it. */
		cl[id].mem = mmap((void *)(MEM_AT + id * 0x100000ull), MEM, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (cl[id].mem != (void *)(MEM_AT + id * 0x100000ull) ||
		    pipe2(cl[id].events, O_NONBLOCK | O_CLOEXEC))
			abort();
		fz_client_mem(id, cl[id].mem, MEM);
	}
	for (int i = 1; i < *argc; i++)
		if (!strncmp((*argv)[i], "--write-corpus=", 15)) {
			int rc;

			build(false);
			rc = write_corpus((*argv)[i] + 15);
			teardown();
			exit(rc);
		}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t prod[NRINGS];
	uint64_t bad, sent;
	unsigned flags;

	if (size < HEAD)
		return 0;
	flags = data[0];
	build(flags & F_DB);
	bad = d.ctr.ring_bad_wqe;
	sent = fz_sent;
	hostile(&cl[1], flags, data + 1, size - 1, prod);
	well_behaved(&cl[2]);
	for (int i = 0; i < DRAINS && emu_rings_drain(&d); i++)
		;
	if (flags & 3)
		fz_answer_faults(&d, flags & 2);
	if (flags & 4)
		emu_rings_service_cqs(&d);
	if (flags & 16)
		nic_tick(d.nic, emu_now_ns() + 10000000000ull);
	for (int i = 0; i < DRAINS && emu_rings_drain(&d); i++)
		;
	if (tracing)
		trace(bad, sent);
	check(prod, bad, sent);
	teardown();
	return 0;
}
