/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the receive path of a live NIC (nic_rx_from, what odpemud does with
 * every datagram its UDP socket reads). One struct nic with a fake host around it: host
 * memory is a 64 KiB arena, page faults queue until the input says to answer them. On it:
 *
 *   RC QPs in RESET, INIT, RTR, RTS (responder and requester: a SEND, a 2-packet READ and
 *   a compare-and-swap in flight), RTS behind a page fault held under the stall policy,
 *   RTS behind a page fault under the RNR policy, RTS on an SRQ, SQD and ERR; UD QPs in
 *   RTS (pinned receive buffers), RTS (an ODP receive buffer) and INIT; UC QPs in RTS
 *   (pinned receive buffers, stall policy; an ODP receive buffer, rnr policy); QP1 (GSI);
 *   a pinned MR, a read-only pinned MR, an ODP MR.
 *
 * Input: flags (byte 0), a QP selector (byte 1), then one UDP payload.
 *   flags bit 0: seal the ICRC after the selector is applied (so mutations get past it)
 *         bits 1-2: the source: 0 the peer (10.0.0.2), 1 a stranger (10.0.0.3), 2 the peer's
 *                   IPv6 GID, 3 the peer again
 *         bit 3: then answer every pending page fault; bit 4: then fail them
 *         bit 5: then run the timers 10 s later; bit 6: UDP source port 50000, not 4791
 *   selector < RX_NQP: the BTH's destination QP becomes that fixture QP's number.
 *
 * Checked for every input, besides ASan/UBSan:
 *  - the datagram's accounting (check_datagram): counted once (pkts_received), then exactly
 *    one fate: QP1's agent took it (gsi_received), or it was dropped with one reason on the
 *    device (and on the QP that took it, the same reason: nic_drop counts both), or a QP
 *    took it and it left a trace; a datagram dropped before any QP changes nothing (sends
 *    nothing, faults nothing);
 *  - DMA stays inside the host arena (the mem ports trap otherwise);
 *  - a datagram moves a QP to ERR or leaves its state alone, and never moves one in RESET
 *    or INIT;
 *  - every packet the NIC sends in answer parses, goes to the peer and has a good ICRC;
 *    every completion names a fixture QP; every async event names a fixture object;
 *  - afterwards every object can be destroyed (then the NIC).
 * A datagram a QP takes without any trace (no drop reason, no answer, no completion, no
 * progress, no counter) is an uncounted drop: it traps, after a line naming the QP and
 * opcode. ODPEMU_FUZZ_TRACE=1 prints what became of each datagram.
 *
 * The fixture is rebuilt whenever an input may have changed it (a QP took the datagram and
 * did not drop it on the spot, faults were raised or answered, timers ran), so each input
 * starts from the same state. `fuzz-rx --write-corpus=DIR` writes the seed corpus: valid
 * packets for every QP.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nic_int.h"
#include "roce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define ARENA		(64u * 1024)
#define NOW		1000000000ull		/* every input's time */
#define LATER		(NOW + 10000000000ull)	/* flags bit 5: timers 10 s on */
#define MAX_FAULTS	256
#define MAX_PKT		(NIC_PORT_TX_SLOT + 64)

/* The MRs: virtual ranges the corpus names, host ranges inside the arena. */
#define PIN_VA		0x10000ull	/* 32 KiB pinned, every access */
#define PIN_LEN		0x8000ull
#define PIN_HOST	0u
#define RO_VA		0x20000ull	/* 4 KiB pinned, local write and remote read only */
#define RO_LEN		0x1000ull
#define RO_HOST		0x8000u
#define ODP_VA		0x40000ull	/* 16 KiB on demand */
#define ODP_LEN		0x4000ull
#define ODP_HOST	0x9000u

#define PEER_QPN	0x300u		/* the RC QPs' remote QP numbers: PEER_QPN + index */
#define UD_QKEY		0x11111111u
#define UD_ODP_QKEY	0x22222222u

/* The fixture QPs, by index (the selector byte's numbering). */
enum rx_qp {
	Q_RESET, Q_INIT, Q_RTR, Q_RTS, Q_STALL, Q_RNR, Q_ERR, Q_SRQ, Q_SQD,
	Q_UD, Q_UD_ODP, Q_UD_INIT, Q_UC, Q_UC_RNR, RX_NQP
};
/* The responder's expected PSN of each RC and UC QP; the requester of Q_RTS starts at
 * SQ_PSN. */
#define RQ_PSN(i)	(1000u * ((unsigned)(i) + 1))
#define SQ_PSN		30000u

struct world {
	struct nic *nic;
	struct nic_pd *pd;
	struct nic_cq *scq, *rcq;
	struct nic_srq *srq;
	struct nic_mr *pin, *ro, *odp;
	struct nic_qp *qp[RX_NQP];
	struct iopt_req *faults[MAX_FAULTS];
	unsigned nfaults;
	uint64_t sent;			/* packets the NIC sent */
	uint64_t events;
	bool dirty;			/* something an input changed beyond counters */
};

static struct world w;
static uint8_t *arena;

static struct nic_gid peer_gid(void) { return nic_gid_from_v4(0x0a000002u); }
static struct nic_gid self_gid(void) { return nic_gid_from_v4(0x0a000001u); }

static struct nic_gid peer_gid6(void)
{
	struct nic_gid g = { { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 } };

	return g;
}

/* ---- the fake host ---- */

/* A host address the NIC may touch: inside the arena, whole. */
static void *host_ptr(uint64_t host, size_t len)
{
	uint64_t base = (uint64_t)(uintptr_t)arena;

	if (host < base || len > ARENA || host - base > ARENA - len)
		__builtin_trap();	/* DMA outside the client's memory */
	return (void *)(uintptr_t)host;
}

static int mem_read(void *ctx, uint32_t client, uint64_t host, void *dst, size_t len)
{
	(void)ctx;
	(void)client;
	memcpy(dst, host_ptr(host, len), len);
	return 0;
}

static int mem_write(void *ctx, uint32_t client, uint64_t host, const void *src, size_t len)
{
	(void)ctx;
	(void)client;
	memcpy(host_ptr(host, len), src, len);
	return 0;
}

static void on_fault(void *ctx, uint32_t client, struct iopt_req *req)
{
	(void)ctx;
	if (client != 1 || w.nfaults == MAX_FAULTS)
		__builtin_trap();	/* a fault of no client, or faults without end */
	w.faults[w.nfaults++] = req;
}

static bool is_fixture_qp(const struct nic_qp *qp)
{
	for (unsigned i = 0; i < RX_NQP; i++)
		if (w.qp[i] == qp)
			return true;
	return false;
}

static void on_event(void *ctx, const struct nic_event *ev)
{
	(void)ctx;
	if ((ev->qp && !is_fixture_qp(ev->qp)) || (ev->cq && ev->cq != w.scq && ev->cq != w.rcq) ||
	    (ev->srq && ev->srq != w.srq) ||
	    (ev->mr && ev->mr != w.pin && ev->mr != w.ro && ev->mr != w.odp))
		__builtin_trap();
	w.events++;
}

/* Every packet the NIC sends must be well formed, sealed, and go to the peer: the only
 * address any fixture QP was given (RC answers go to the QP's path, never to whoever sent
 * the datagram; UD QPs here send nothing). Every RC QP's path MTU is 1024. */
static void on_send(void *ctx, const struct nic_gid *dst, const uint8_t *pkt, size_t len)
{
	struct nic_gid self = self_gid(), peer = peer_gid();
	struct roce_flow4 f = { .sport = ROCE_UDP_PORT, .dport = ROCE_UDP_PORT };
	struct roce_pkt p;

	(void)ctx;
	w.sent++;
	memcpy(&f.saddr, self.raw + 12, 4);
	memcpy(&f.daddr, peer.raw + 12, 4);
	if (memcmp(dst, &peer, sizeof(*dst)) || roce_parse(pkt, len, 1024, &p) != ROCE_R_OK ||
	    !roce_icrc4_ok(&f, pkt, len))
		__builtin_trap();
}

static void on_gsi(void *ctx, const struct nic_gsi_dgram *d)
{
	(void)ctx;
	if (!d->mad)
		__builtin_trap();
}

/* ---- the fixture ---- */

static void must(int rc)
{
	if (rc)
		abort();	/* the fixture itself failed: a harness bug, not a finding */
}

static struct nic_mr *reg(uint64_t va, uint64_t len, unsigned access, uint32_t host)
{
	struct nic_mr_init in = { va, len, access, (uint64_t)(uintptr_t)(arena + host) };
	struct nic_mr *mr;

	must(nic_mr_reg(w.pd, &in, &mr));
	return mr;
}

static void modify(struct nic_qp *qp, const struct nic_qp_attr *a, unsigned mask)
{
	must(nic_qp_modify(qp, a, mask, NOW, NULL));
}

static struct nic_qp *rc_qp(enum nic_fault_policy pol, bool srq)
{
	struct nic_qp_init in = { .type = ODPEMU_QPT_RC, .send_cq = w.scq, .recv_cq = w.rcq,
		.srq = srq ? w.srq : NULL, .max_send_wr = 4, .max_recv_wr = 8, .max_send_sge = 2,
		.max_recv_sge = 2, .max_inline_data = 64, .fault_policy = pol };
	struct nic_qp *qp;

	must(nic_qp_create(w.pd, &in, &qp));
	return qp;
}

/* An RC QP of index i through INIT, RTR and (up_to RTS) RTS, as connect_rc in pair.c. */
static void rc_up(unsigned i, enum odpemu_qp_state up_to)
{
	struct nic_gid peer = peer_gid();
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
		.qp_access_flags = ODPEMU_ACCESS_ALL_QP };

	modify(w.qp[i], &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT |
	       ODPEMU_QP_ACCESS_FLAGS);
	if (up_to == ODPEMU_QPS_INIT)
		return;
	a = (struct nic_qp_attr){ .qp_state = ODPEMU_QPS_RTR, .path_mtu = ODPEMU_MTU_1024,
		.dest_qp_num = PEER_QPN + i, .rq_psn = RQ_PSN(i), .max_dest_rd_atomic = 4,
		.min_rnr_timer = 1 };
	memcpy(a.ah_attr.dgid, peer.raw, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	modify(w.qp[i], &a, ODPEMU_QP_STATE | ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU |
	       ODPEMU_QP_DEST_QPN | ODPEMU_QP_RQ_PSN | ODPEMU_QP_MAX_DEST_RD_ATOMIC |
	       ODPEMU_QP_MIN_RNR_TIMER);
	if (up_to == ODPEMU_QPS_RTR)
		return;
	a = (struct nic_qp_attr){ .qp_state = ODPEMU_QPS_RTS, .sq_psn = SQ_PSN, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 4 };
	modify(w.qp[i], &a, ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN | ODPEMU_QP_TIMEOUT |
	       ODPEMU_QP_RETRY_CNT | ODPEMU_QP_RNR_RETRY | ODPEMU_QP_MAX_QP_RD_ATOMIC);
}

/* A UC QP of index i, in RTS with the UC attributes (IBA table 91: no RDMA-read, ACK timer
 * or RNR ones). */
static struct nic_qp *uc_qp(unsigned i, enum nic_fault_policy pol)
{
	struct nic_qp_init in = { .type = ODPEMU_QPT_UC, .send_cq = w.scq, .recv_cq = w.rcq,
		.max_send_wr = 2, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1,
		.fault_policy = pol };
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
		.qp_access_flags = ODPEMU_ACCESS_REMOTE_WRITE };
	struct nic_gid peer = peer_gid();
	struct nic_qp *qp;

	must(nic_qp_create(w.pd, &in, &qp));
	modify(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT |
	       ODPEMU_QP_ACCESS_FLAGS);
	a = (struct nic_qp_attr){ .qp_state = ODPEMU_QPS_RTR, .path_mtu = ODPEMU_MTU_1024,
		.dest_qp_num = PEER_QPN + i, .rq_psn = RQ_PSN(i) };
	memcpy(a.ah_attr.dgid, peer.raw, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	modify(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU | ODPEMU_QP_DEST_QPN |
	       ODPEMU_QP_RQ_PSN);
	a = (struct nic_qp_attr){ .qp_state = ODPEMU_QPS_RTS, .sq_psn = SQ_PSN };
	modify(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN);
	return qp;
}

static struct nic_qp *ud_qp(uint32_t qkey, bool rts)
{
	struct nic_qp_init in = { .type = ODPEMU_QPT_UD, .send_cq = w.scq, .recv_cq = w.rcq,
		.max_send_wr = 1, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 };
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1, .qkey = qkey };
	struct nic_qp *qp;

	must(nic_qp_create(w.pd, &in, &qp));
	modify(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT | ODPEMU_QP_QKEY);
	if (!rts)
		return qp;
	a.qp_state = ODPEMU_QPS_RTR;
	modify(qp, &a, ODPEMU_QP_STATE);
	a.qp_state = ODPEMU_QPS_RTS;
	a.sq_psn = 7;
	modify(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN);
	return qp;
}

static void post_recv(struct nic_qp *qp, uint64_t va, uint32_t len, const struct nic_mr *mr)
{
	struct nic_sge s = { va, len, nic_mr_lkey(mr) };
	struct nic_recv_wr r = { va, &s, 1 };

	must(qp ? nic_post_recv(qp, &r, NOW) : nic_srq_post_recv(w.srq, &r, NOW));
}

static void post_send(struct nic_qp *qp, enum odpemu_wr_opcode op, uint64_t va, uint32_t len)
{
	struct nic_sge s = { va, len, nic_mr_lkey(w.pin) };
	struct nic_send_wr wr = { .wr_id = va, .opcode = op, .send_flags = ODPEMU_SEND_SIGNALED,
		.sg_list = &s, .num_sge = 1, .remote_addr = 0x90000000ull, .rkey = 0x77,
		.compare_add = 1, .swap = 2 };

	must(nic_post_send(qp, &wr, NOW));
}

static long build_pkt(uint8_t *buf, size_t cap, struct roce_hdr *h, uint32_t dqpn,
		      const void *payload, uint32_t len);
static void deliver_sealed(const uint8_t *pkt, size_t len);

/* A packet the fixture itself sends to a QP, to leave a page fault in flight. */
static void inject(unsigned q, uint8_t opcode, uint32_t psn, uint64_t va, uint32_t len)
{
	static const uint8_t payload[1024];
	struct roce_hdr h = { .bth = { .opcode = opcode, .psn = psn, .ackreq = true } };
	uint8_t pkt[MAX_PKT];
	long n;

	h.reth = (struct roce_reth){ va, nic_mr_rkey(w.odp), len };
	n = build_pkt(pkt, sizeof(pkt), &h, nic_qp_num(w.qp[q]), payload, len);
	if (n <= 0)
		abort();
	deliver_sealed(pkt, (size_t)n);
}

static void build(void)
{
	struct nic_config cfg = { .gid = self_gid(), .fault_around = 4096, .stall_queue = 2,
		.max_inflight = 16, .ports = { .send = on_send, .mem_read = mem_read,
			.mem_write = mem_write, .fault = on_fault, .event = on_event,
			.gsi_rx = on_gsi } };
	struct nic_qp_attr a = { 0 };

	memset(&w, 0, sizeof(w));
	memset(arena, 0x5a, ARENA);
	must(nic_create(&cfg, &w.nic));
	must(nic_pd_alloc(w.nic, 1, &w.pd));
	must(nic_cq_create(w.nic, 256, &w.scq));
	must(nic_cq_create(w.nic, 256, &w.rcq));
	must(nic_srq_create(w.pd, 8, 2, &w.srq));
	w.pin = reg(PIN_VA, PIN_LEN, ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
		    ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC |
		    ODPEMU_ACCESS_FLUSH_GLOBAL | ODPEMU_ACCESS_FLUSH_PERSISTENT, PIN_HOST);
	w.ro = reg(RO_VA, RO_LEN, ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_READ, RO_HOST);
	w.odp = reg(ODP_VA, ODP_LEN, ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
		    ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC |
		    ODPEMU_ACCESS_ON_DEMAND | ODPEMU_ACCESS_FLUSH_GLOBAL, 0);

	for (unsigned i = Q_RESET; i <= Q_SQD; i++)
		w.qp[i] = rc_qp(i == Q_RNR ? NIC_FAULT_RNR : NIC_FAULT_STALL, i == Q_SRQ);
	w.qp[Q_UD] = ud_qp(UD_QKEY, true);
	w.qp[Q_UD_ODP] = ud_qp(UD_ODP_QKEY, true);
	w.qp[Q_UD_INIT] = ud_qp(UD_QKEY, false);
	w.qp[Q_UC] = uc_qp(Q_UC, NIC_FAULT_STALL);
	w.qp[Q_UC_RNR] = uc_qp(Q_UC_RNR, NIC_FAULT_RNR);

	rc_up(Q_INIT, ODPEMU_QPS_INIT);
	rc_up(Q_RTR, ODPEMU_QPS_RTR);
	for (unsigned i = Q_RTS; i <= Q_SQD; i++)
		rc_up(i, ODPEMU_QPS_RTS);
	a.qp_state = ODPEMU_QPS_ERR;
	modify(w.qp[Q_ERR], &a, ODPEMU_QP_STATE);
	a.qp_state = ODPEMU_QPS_SQD;
	modify(w.qp[Q_SQD], &a, ODPEMU_QP_STATE);

	/* Receive buffers: 1 KiB each, pinned unless the QP is about faults. */
	post_recv(w.qp[Q_RTR], PIN_VA, 1024, w.pin);
	post_recv(w.qp[Q_RTS], PIN_VA, 512, w.pin);	/* a SEND of 513+ B is too long */
	for (unsigned k = 1; k < 4; k++)
		post_recv(w.qp[Q_RTS], PIN_VA + 0x400 * k, 1024, w.pin);
	post_recv(w.qp[Q_RTS], RO_VA, 1024, w.ro);
	post_recv(w.qp[Q_STALL], PIN_VA + 0x1000, 1024, w.pin);
	post_recv(w.qp[Q_RNR], ODP_VA + 0x1000, 1024, w.odp);
	post_recv(w.qp[Q_SQD], PIN_VA + 0x1400, 1024, w.pin);
	for (unsigned k = 0; k < 4; k++)
		post_recv(NULL, PIN_VA + 0x2000 + 0x400 * k, 1024, w.pin);
	for (unsigned k = 0; k < 2; k++)
		post_recv(w.qp[Q_UD], PIN_VA + 0x3000 + 0x800 * k, 0x800, w.pin);
	post_recv(w.qp[Q_UD_ODP], ODP_VA + 0x2000, 0x800, w.odp);
	post_recv(w.qp[Q_UC], PIN_VA + 0x1800, 512, w.pin);	/* 513+ B is too long */
	post_recv(w.qp[Q_UC], PIN_VA + 0x1c00, 1024, w.pin);
	post_recv(w.qp[Q_UC_RNR], ODP_VA + 0x2800, 1024, w.odp);

	/* The requester of Q_RTS has a SEND (SQ_PSN), a READ of 2 KiB (+1, +2) and a
	 * compare-and-swap (+3) in flight, so responses of every kind have a WQE. */
	post_send(w.qp[Q_RTS], ODPEMU_WR_SEND, PIN_VA + 0x4000, 64);
	post_send(w.qp[Q_RTS], ODPEMU_WR_RDMA_READ, PIN_VA + 0x5000, 2048);
	post_send(w.qp[Q_RTS], ODPEMU_WR_ATOMIC_CMP_AND_SWP, PIN_VA + 0x6000, 8);

	/* Faults left in flight: a WRITE held behind one (stall), a SEND whose receive
	 * buffer faulted (RNR). */
	inject(Q_STALL, ROCE_OP_RC_RDMA_WRITE_ONLY, RQ_PSN(Q_STALL), ODP_VA, 256);
	inject(Q_RNR, ROCE_OP_RC_SEND_ONLY, RQ_PSN(Q_RNR), 0, 128);
	if (w.nfaults != 2)
		abort();
	w.dirty = false;
}

/* Fail (fail) or complete every pending page request; answering may raise more. */
static void answer_faults(bool fail)
{
	for (unsigned round = 0; w.nfaults && round < 64; round++) {
		struct iopt_req *r[MAX_FAULTS];
		unsigned n = w.nfaults;

		memcpy(r, w.faults, n * sizeof(r[0]));
		w.nfaults = 0;
		for (unsigned k = 0; k < n; k++) {
			struct iopt_map m = { r[k]->va, r[k]->len,
				(uint64_t)(uintptr_t)arena + ODP_HOST + (r[k]->va - ODP_VA),
				IOPT_READ | IOPT_WRITE };

			if (fail || r[k]->va < ODP_VA || r[k]->len > ODP_LEN ||
			    r[k]->va - ODP_VA > ODP_LEN - r[k]->len)
				nic_fault_fail(w.nic, r[k], fail ? -EFAULT : -ERANGE, NOW);
			else
				nic_fault_complete(w.nic, r[k], &m, 1, NOW);
		}
	}
	if (w.nfaults)
		__builtin_trap();	/* answering never ends */
}

static void teardown(void)
{
	answer_faults(true);
	for (unsigned i = 0; i < RX_NQP; i++)
		if (nic_qp_destroy(w.qp[i]))
			__builtin_trap();
	if (nic_srq_destroy(w.srq) || nic_cq_destroy(w.scq) || nic_cq_destroy(w.rcq) ||
	    nic_mr_dereg(w.pin) || nic_mr_dereg(w.ro) || nic_mr_dereg(w.odp) ||
	    nic_pd_dealloc(w.pd) || nic_destroy(w.nic))
		__builtin_trap();
}

/* ---- packets ---- */

static struct nic_gid source(unsigned sel)
{
	if (sel == 1)
		return nic_gid_from_v4(0x0a000003u);
	return sel == 2 ? peer_gid6() : peer_gid();
}

static void seal(uint8_t *pkt, size_t len, const struct nic_gid *src, uint16_t sport)
{
	struct nic_gid self = self_gid();

	if (len < ROCE_BTH_LEN + ROCE_ICRC_LEN)
		return;
	if (nic_gid_is_v4(src)) {
		struct roce_flow4 f = { .sport = sport, .dport = ROCE_UDP_PORT };

		memcpy(&f.saddr, src->raw + 12, 4);
		memcpy(&f.daddr, self.raw + 12, 4);
		roce_icrc4_seal(&f, pkt, len);
	} else {
		struct roce_flow6 f = { .sport = sport, .dport = ROCE_UDP_PORT };

		memcpy(f.saddr, src->raw, 16);
		memcpy(f.daddr, self.raw, 16);
		roce_icrc6_seal(&f, pkt, len);
	}
}

static long build_pkt(uint8_t *buf, size_t cap, struct roce_hdr *h, uint32_t dqpn,
		      const void *payload, uint32_t len)
{
	h->bth.pkey = ROCE_DEFAULT_PKEY;
	h->bth.dqpn = dqpn;
	return roce_build(buf, cap, h, payload, len);
}

static void deliver_sealed(const uint8_t *pkt, size_t len)
{
	struct nic_gid src = peer_gid();
	uint8_t copy[MAX_PKT];

	memcpy(copy, pkt, len);
	seal(copy, len, &src, ROCE_UDP_PORT);
	nic_rx(w.nic, copy, len, &src, NOW);
}

/* ---- what one input did ---- */

/* The device's and each QP's counters, and each QP's progress, before and after. */
struct snap {
	struct nic_counters dev;
	struct nic_qp_counters qp[RX_NQP];
	uint64_t progress[RX_NQP];
	enum odpemu_qp_state state[RX_NQP];
	uint64_t sent, events;
	unsigned faults;
};

/* A digest of where a QP's engines are: changes whenever one makes progress. */
static uint64_t progress_of(const struct nic_qp *qp)
{
	const struct nic_resp *r = &qp->resp;
	const struct nic_comp *c = &qp->comp;
	uint64_t h = 1469598103934665603ull;
	uint64_t v[] = { r->epsn, r->msn, r->msg, r->uc_dropping, r->recv_off, r->rwqe_held,
		r->write.va,
		r->write.resid, r->nheld, r->fault.state, r->rsrc_next, c->una, c->wait,
		c->resume_psn, c->gap_asked, c->fault.state, qp->sq.head, qp->sq.next,
		qp->req.psn, qp->rq.count, qp->srq ? qp->srq->rq.count : 0 };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		h = (h ^ v[i]) * 1099511628211ull;
	for (uint64_t i = qp->sq.head; i < qp->sq.tail; i++) {
		const struct nic_swqe *s = nic_sq_at(&qp->sq, i);

		h = (h ^ s->state ^ ((uint64_t)s->landed << 8)) * 1099511628211ull;
	}
	return h;
}

static void take(struct snap *s)
{
	nic_counters(w.nic, &s->dev);
	for (unsigned i = 0; i < RX_NQP; i++) {
		nic_qp_counters(w.qp[i], &s->qp[i]);
		s->progress[i] = progress_of(w.qp[i]);
		s->state[i] = nic_qp_state(w.qp[i]);
	}
	s->sent = w.sent;
	s->events = w.events;
	s->faults = w.nfaults;
}

static uint64_t sum(const uint64_t *v, unsigned n)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < n; i++)
		t += v[i];
	return t;
}

/* QP counters that record that the responder or completer did something with a packet. */
static uint64_t qp_activity(const struct nic_qp_counters *c)
{
	return sum(c->drops, NIC_DROP__COUNT) + c->dup_requests + c->seq_naks_sent +
	       c->rnr_naks_sent + c->seq_naks_received + c->rnr_naks_received + c->faults_resp +
	       c->faults_req + c->stalls + c->stall_drops + c->faults_ahead + c->retransmits +
	       c->uc_msgs_dropped;
}

/* Completions are taken at once: each must name a fixture QP. Returns how many. */
static unsigned drain_cqs(void)
{
	struct nic_cq *cqs[2] = { w.scq, w.rcq };
	struct nic_wc wc[16];
	unsigned total = 0;
	int n;

	for (unsigned c = 0; c < 2; c++)
		while ((n = nic_cq_poll(cqs[c], wc, 16)) > 0) {
			for (int k = 0; k < n; k++) {
				bool known = false;

				for (unsigned i = 0; i < RX_NQP; i++)
					known |= wc[k].qp_num == nic_qp_num(w.qp[i]);
				if (!known || !strcmp(odpemu_wc_status_str(wc[k].status), "UNKNOWN"))
					__builtin_trap();
			}
			total += (unsigned)n;
		}
	return total;
}

static bool trace;	/* ODPEMU_FUZZ_TRACE */

/* ODPEMU_FUZZ_TRACE=1: what became of each datagram, to read what an input does. */
static void trace_datagram(const struct snap *b, const struct snap *a, int qp, unsigned wcs)
{
	fprintf(stderr, "fuzz-rx: qp %d sent %llu wcs %u faults %u->%u", qp,
		(unsigned long long)(a->sent - b->sent), wcs, b->faults, a->faults);
	for (unsigned r = 0; r < NIC_DROP__COUNT; r++)
		if (a->dev.drops[r] != b->dev.drops[r])
			fprintf(stderr, " drop %s", nic_drop_reason_str(r));
	for (unsigned i = 0; i < RX_NQP; i++)
		if (a->state[i] != b->state[i])
			fprintf(stderr, " qp %u -> %s", i, odpemu_qp_state_str(a->state[i]));
	fputc('\n', stderr);
}

/* Did a datagram that QP qp took, and that left no trace, change nothing at all? Only
 * where the code shows it returns before touching any state: dropped by nic_rx_from
 * after the QP lookup (wrong transport, wrong source), by UD for its Q_Key or a missing
 * WQE, by the completer as a ghost, or a response to a QP whose completer is off. Then
 * the fixture need not be rebuilt (rebuilding is most of an input's cost). */
static bool untouched(const struct snap *b, const struct snap *a, int qp, const uint8_t *pkt,
		      size_t len)
{
	static const enum nic_drop_reason early[] = { NIC_DROP_BAD_QP_TYPE,
		NIC_DROP_SRC_MISMATCH, NIC_DROP_BAD_QKEY, NIC_DROP_UD_NO_WQE,
		NIC_DROP_GHOST_RESP };

	for (size_t k = 0; k < sizeof(early) / sizeof(early[0]); k++)
		if (a->qp[qp].drops[early[k]] != b->qp[qp].drops[early[k]])
			return true;
	return len && (roce_opcode_table[pkt[0]].mask & ROCE_M_RESP) &&
	       b->state[qp] != ODPEMU_QPS_RTS && b->state[qp] != ODPEMU_QPS_SQD;
}

/* A drop a QP counts is the device's too (nic_drop counts both): per reason, the QPs'
 * drops of this datagram are none or the device's. */
static void check_drops_shared(const struct snap *b, const struct snap *a)
{
	for (unsigned r = 0; r < NIC_DROP__COUNT; r++) {
		uint64_t q = 0, dev = a->dev.drops[r] - b->dev.drops[r];

		for (unsigned i = 0; i < RX_NQP; i++)
			q += a->qp[i].drops[r] - b->qp[i].drops[r];
		if (q && q != dev)
			__builtin_trap();	/* a drop counted on a QP only */
	}
}

/* The accounting of one datagram. An exact sum over a run, pkts_received == accepted +
 * drops + gsi_received, is not something nic/'s counters can state: nothing counts
 * "accepted", and a QP's pkts_received also counts packets it took and then dropped
 * (BAD_QP_TYPE, SRC_MISMATCH, the engines' drops), but not those dropped for its state,
 * P_Key or parse. So each datagram is held to exactly one fate instead: QP1's agent took
 * it, or one drop reason counted it (on the device, and on the QP if one took it), or a
 * QP took it and it left a trace (an answer, a completion, an event, a fault, progress,
 * a state change, a counter). A datagram that changes nothing and bumps no drop counter
 * is an uncounted drop, and traps. */
static void check_datagram(const struct snap *b, const struct snap *a, unsigned completions,
			   const uint8_t *pkt, size_t len)
{
	uint64_t dn = sum(a->dev.drops, NIC_DROP__COUNT) - sum(b->dev.drops, NIC_DROP__COUNT);
	uint64_t g = a->dev.gsi_received - b->dev.gsi_received, took = 0;
	int qp = -1;
	bool quiet;

	if (a->dev.pkts_received != b->dev.pkts_received + 1 || dn > 1)
		__builtin_trap();
	check_drops_shared(b, a);
	for (unsigned i = 0; i < RX_NQP; i++) {
		uint64_t d = a->qp[i].pkts_received - b->qp[i].pkts_received;

		took += d;
		if (d)
			qp = (int)i;
		if (a->state[i] != b->state[i] && (a->state[i] != ODPEMU_QPS_ERR ||
		    b->state[i] == ODPEMU_QPS_RESET || b->state[i] == ODPEMU_QPS_INIT))
			__builtin_trap();	/* a datagram moves a QP to ERR or nowhere */
	}
	if (took + g > 1 || (took + g == 0 && dn != 1) || (g && dn))
		__builtin_trap();
	if (took + g == 0 && (a->sent != b->sent || a->faults != b->faults || completions))
		__builtin_trap();	/* dropped before any QP, yet it did something */
	if (took && dn && sum(a->qp[qp].drops, NIC_DROP__COUNT) !=
	    sum(b->qp[qp].drops, NIC_DROP__COUNT) + 1)
		__builtin_trap();	/* a QP took it, the device dropped it: not on the QP */
	if (trace)
		trace_datagram(b, a, qp, completions);
	if (qp < 0)
		return;
	quiet = a->sent == b->sent && !completions && a->events == b->events &&
		a->faults == b->faults && a->progress[qp] == b->progress[qp] &&
		a->state[qp] == b->state[qp];
	w.dirty |= !quiet || !untouched(b, a, qp, pkt, len);
	if (!quiet || dn || qp_activity(&a->qp[qp]) != qp_activity(&b->qp[qp]))
		return;
	fprintf(stderr, "fuzz-rx: a datagram of opcode %#x taken by QP %d (state %s) without "
		"a trace\n", len ? pkt[0] : 0, qp, odpemu_qp_state_str(b->state[qp]));
	__builtin_trap();	/* an uncounted drop */
}

/* ---- the corpus ---- */

struct seed {
	const char *name;
	unsigned flags, q;		/* flags byte; fixture QP (RX_NQP + 0: QP1) */
	uint8_t opcode;
	int psn;			/* offset from the QP's expected PSN */
	uint32_t len;			/* payload bytes */
	uint64_t va;			/* RETH / AtomicETH address */
	int mr;				/* 0 pin, 1 ro, 2 odp */
	uint8_t syndrome;		/* AETH */
	uint32_t qkey;			/* DETH */
	uint32_t rlen;			/* RETH length when not len */
};

#define SEAL 1u
#define ANSWER 8u
#define FAIL 16u
#define TICK 32u
#define QP1 RX_NQP

static const struct seed seeds[] = {
	{ "rts-send-only", SEAL, Q_RTS, ROCE_OP_RC_SEND_ONLY, 0, 64 },
	{ "rts-send-first", SEAL, Q_RTS, ROCE_OP_RC_SEND_FIRST, 0, 1024 },
	{ "rts-send-imm", SEAL, Q_RTS, ROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE, 0, 32 },
	{ "rts-send-inv", SEAL, Q_RTS, ROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE, 0, 16 },
	{ "rts-send-too-long", SEAL, Q_RTS, ROCE_OP_RC_SEND_ONLY, 0, 1000 },
	{ "rts-send-middle", SEAL, Q_RTS, ROCE_OP_RC_SEND_MIDDLE, 0, 1024 },
	{ "rts-write-only", SEAL, Q_RTS, ROCE_OP_RC_RDMA_WRITE_ONLY, 0, 128, PIN_VA + 0x7000, 0 },
	{ "rts-write-first", SEAL, Q_RTS, ROCE_OP_RC_RDMA_WRITE_FIRST, 0, 1024, PIN_VA + 0x7000, 0,
	  .rlen = 2048 },
	{ "rts-write-imm", SEAL, Q_RTS, ROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0, 8,
	  PIN_VA + 0x7000, 0 },
	{ "rts-write-odp", SEAL | ANSWER, Q_RTS, ROCE_OP_RC_RDMA_WRITE_ONLY, 0, 512,
	  ODP_VA + 0x3000, 2 },
	{ "rts-write-ro", SEAL, Q_RTS, ROCE_OP_RC_RDMA_WRITE_ONLY, 0, 64, RO_VA, 1 },
	{ "rts-write-zero", SEAL, Q_RTS, ROCE_OP_RC_RDMA_WRITE_ONLY, 0, 0, 0, 0 },
	{ "rts-read", SEAL, Q_RTS, ROCE_OP_RC_RDMA_READ_REQUEST, 0, 0, PIN_VA, 0, .rlen = 3000 },
	{ "rts-read-ro", SEAL, Q_RTS, ROCE_OP_RC_RDMA_READ_REQUEST, 0, 0, RO_VA, 1, .rlen = 64 },
	{ "rts-read-odp", SEAL | ANSWER, Q_RTS, ROCE_OP_RC_RDMA_READ_REQUEST, 0, 0, ODP_VA + 0x3000,
	  2, .rlen = 100 },
	{ "rts-cas", SEAL, Q_RTS, ROCE_OP_RC_COMPARE_SWAP, 0, 0, PIN_VA + 0x7800, 0 },
	{ "rts-fadd", SEAL, Q_RTS, ROCE_OP_RC_FETCH_ADD, 0, 0, PIN_VA + 0x7808, 0 },
	{ "rts-fadd-odp", SEAL | ANSWER, Q_RTS, ROCE_OP_RC_FETCH_ADD, 0, 0, ODP_VA + 0x3008, 2 },
	{ "rts-atomic-write", SEAL, Q_RTS, ROCE_OP_RC_ATOMIC_WRITE, 0, 8, PIN_VA + 0x7810, 0 },
	{ "rts-flush", SEAL, Q_RTS, ROCE_OP_RC_FLUSH, 0, 0, PIN_VA, 0, .rlen = 4096 },
	{ "rts-dup", SEAL, Q_RTS, ROCE_OP_RC_SEND_ONLY, -1, 64 },
	{ "rts-gap", SEAL, Q_RTS, ROCE_OP_RC_SEND_ONLY, 5, 64 },
	{ "rts-ack", SEAL, Q_RTS, ROCE_OP_RC_ACKNOWLEDGE, 0, 0, .syndrome = 0x1f },
	{ "rts-ack-all", SEAL, Q_RTS, ROCE_OP_RC_ACKNOWLEDGE, 3, 0, .syndrome = 0x1f },
	{ "rts-rnr-nak", SEAL | TICK, Q_RTS, ROCE_OP_RC_ACKNOWLEDGE, 0, 0, .syndrome = 0x21 },
	{ "rts-seq-nak", SEAL, Q_RTS, ROCE_OP_RC_ACKNOWLEDGE, 0, 0, .syndrome = 0x60 },
	{ "rts-access-nak", SEAL, Q_RTS, ROCE_OP_RC_ACKNOWLEDGE, 0, 0, .syndrome = 0x62 },
	{ "rts-read-resp-first", SEAL, Q_RTS, ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST, 1, 1024,
	  .syndrome = 0x1f },
	{ "rts-read-resp-only", SEAL, Q_RTS, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, 1, 512,
	  .syndrome = 0x1f },
	{ "rts-atomic-ack", SEAL, Q_RTS, ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, 3, 0, .syndrome = 0x1f },
	{ "rts-timeout", SEAL | TICK, Q_RTS, ROCE_OP_RC_ACKNOWLEDGE, -5, 0, .syndrome = 0x1f },
	{ "stall-held", SEAL, Q_STALL, ROCE_OP_RC_RDMA_WRITE_ONLY, 1, 64, PIN_VA + 0x7000, 0 },
	{ "stall-resume", SEAL | ANSWER, Q_STALL, ROCE_OP_RC_SEND_ONLY, 1, 64 },
	{ "stall-fail", SEAL | FAIL, Q_STALL, ROCE_OP_RC_SEND_ONLY, 1, 64 },
	{ "rnr-again", SEAL, Q_RNR, ROCE_OP_RC_SEND_ONLY, 0, 128 },
	{ "rnr-resume", SEAL | ANSWER, Q_RNR, ROCE_OP_RC_SEND_ONLY, 0, 128 },
	{ "rnr-ahead", SEAL, Q_RNR, ROCE_OP_RC_RDMA_WRITE_ONLY, 1, 64, ODP_VA + 0x3000, 2 },
	{ "srq-send", SEAL, Q_SRQ, ROCE_OP_RC_SEND_ONLY, 0, 200 },
	{ "sqd-send", SEAL, Q_SQD, ROCE_OP_RC_SEND_ONLY, 0, 200 },
	{ "rtr-send", SEAL, Q_RTR, ROCE_OP_RC_SEND_ONLY, 0, 100 },
	{ "rtr-ack", SEAL, Q_RTR, ROCE_OP_RC_ACKNOWLEDGE, 0, 0, .syndrome = 0x1f },
	{ "reset-send", SEAL, Q_RESET, ROCE_OP_RC_SEND_ONLY, 0, 10 },
	{ "init-send", SEAL, Q_INIT, ROCE_OP_RC_SEND_ONLY, 0, 10 },
	{ "err-send", SEAL, Q_ERR, ROCE_OP_RC_SEND_ONLY, 0, 10 },
	{ "rts-stranger", SEAL | 2, Q_RTS, ROCE_OP_RC_SEND_ONLY, 0, 64 },
	{ "rts-ipv6", SEAL | 4, Q_RTS, ROCE_OP_RC_SEND_ONLY, 0, 64 },
	{ "rts-sport", SEAL | 64, Q_RTS, ROCE_OP_RC_SEND_ONLY, 0, 64 },
	{ "rts-bad-icrc", 0, Q_RTS, ROCE_OP_RC_SEND_ONLY, 0, 64 },
	{ "rts-ud-opcode", SEAL, Q_RTS, ROCE_OP_UD_SEND_ONLY, 0, 64, .qkey = UD_QKEY },
	{ "ud-send", SEAL, Q_UD, ROCE_OP_UD_SEND_ONLY, 0, 512, .qkey = UD_QKEY },
	{ "ud-send-imm", SEAL, Q_UD, ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE, 0, 16, .qkey = UD_QKEY },
	{ "ud-too-long", SEAL, Q_UD, ROCE_OP_UD_SEND_ONLY, 0, 1024, .qkey = UD_QKEY },
	{ "ud-bad-qkey", SEAL, Q_UD, ROCE_OP_UD_SEND_ONLY, 0, 64, .qkey = 0x1234 },
	{ "ud-rc-opcode", SEAL, Q_UD, ROCE_OP_RC_SEND_ONLY, 0, 64 },
	{ "ud-odp", SEAL | ANSWER, Q_UD_ODP, ROCE_OP_UD_SEND_ONLY, 0, 64, .qkey = UD_ODP_QKEY },
	{ "ud-init", SEAL, Q_UD_INIT, ROCE_OP_UD_SEND_ONLY, 0, 64, .qkey = UD_QKEY },
	{ "uc-send-only", SEAL, Q_UC, ROCE_OP_UC_SEND_ONLY, 0, 64 },
	{ "uc-send-first", SEAL, Q_UC, ROCE_OP_UC_SEND_FIRST, 0, 1024 },
	{ "uc-send-middle", SEAL, Q_UC, ROCE_OP_UC_SEND_MIDDLE, 0, 1024 },
	{ "uc-send-imm", SEAL, Q_UC, ROCE_OP_UC_SEND_ONLY_WITH_IMMEDIATE, 0, 32 },
	{ "uc-send-too-long", SEAL, Q_UC, ROCE_OP_UC_SEND_ONLY, 0, 1000 },
	{ "uc-gap-first", SEAL, Q_UC, ROCE_OP_UC_SEND_FIRST, 5, 1024 },
	{ "uc-write-first", SEAL, Q_UC, ROCE_OP_UC_RDMA_WRITE_FIRST, 0, 1024, PIN_VA + 0x7000, 0,
	  .rlen = 3000 },
	{ "uc-write-imm", SEAL, Q_UC, ROCE_OP_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0, 8,
	  PIN_VA + 0x7000, 0 },
	{ "uc-write-ro", SEAL, Q_UC, ROCE_OP_UC_RDMA_WRITE_ONLY, 0, 64, RO_VA, 1 },
	{ "uc-write-odp", SEAL | ANSWER, Q_UC, ROCE_OP_UC_RDMA_WRITE_ONLY, 0, 512,
	  ODP_VA + 0x3000, 2 },
	{ "uc-rc-opcode", SEAL, Q_UC, ROCE_OP_RC_SEND_ONLY, 0, 64 },
	{ "uc-rnr-odp", SEAL | ANSWER, Q_UC_RNR, ROCE_OP_UC_SEND_ONLY, 0, 128 },
	{ "gsi-mad", SEAL, QP1, ROCE_OP_UD_SEND_ONLY, 0, NIC_GSI_MAD_LEN, .qkey = NIC_GSI_QKEY },
	{ "gsi-short", SEAL, QP1, ROCE_OP_UD_SEND_ONLY, 0, 64, .qkey = NIC_GSI_QKEY },
	{ "no-qp", SEAL, RX_NQP + 1, ROCE_OP_RC_SEND_ONLY, 0, 64 },
};

static uint32_t seed_rkey(int mr)
{
	return nic_mr_rkey(mr == 1 ? w.ro : mr == 2 ? w.odp : w.pin);
}

/* One seed as an input: flags, selector (none: the dqpn is already right), packet. */
static size_t seed_input(const struct seed *s, uint8_t *in, size_t cap)
{
	static uint8_t payload[4096];
	struct roce_hdr h = { 0 };
	uint32_t dqpn = s->q < RX_NQP ? nic_qp_num(w.qp[s->q]) : s->q == QP1 ? 1 : 0x7777;
	uint32_t epsn = s->q < RX_NQP ? RQ_PSN(s->q) : 0;
	struct nic_gid src = source((s->flags >> 1) & 3);
	long n;

	memset(payload, 0xab, sizeof(payload));
	if (s->q == Q_RTS && (roce_opcode_table[s->opcode].mask & ROCE_M_RESP))
		epsn = SQ_PSN;
	h.bth = (struct roce_bth){ .opcode = s->opcode, .ackreq = true,
		.psn = (epsn + (uint32_t)s->psn) & ROCE_PSN_MASK };
	h.reth = (struct roce_reth){ s->va, seed_rkey(s->mr), s->rlen ? s->rlen : s->len };
	h.atmeth = (struct roce_atmeth){ s->va, seed_rkey(s->mr), 5, 0 };
	h.aeth = (struct roce_aeth){ s->syndrome, 0 };
	h.deth = (struct roce_deth){ s->qkey, 0x99 };
	h.feth = (struct roce_feth){ .sel = ROCE_FLUSH_SEL_RANGE, .plt = ROCE_FLUSH_GLOBAL };
	h.imm = 0x11223344;
	h.ieth_rkey = nic_mr_rkey(w.ro);
	n = build_pkt(in + 2, cap - 2, &h, dqpn, payload, s->len);
	if (n <= 0)
		return 0;
	in[0] = (uint8_t)s->flags;
	in[1] = 0xff;
	seal(in + 2, (size_t)n, &src, (s->flags & 64) ? 50000 : ROCE_UDP_PORT);
	if (!(s->flags & SEAL))
		in[n + 1] ^= 1;		/* the one seed whose ICRC is wrong */
	return (size_t)n + 2;
}

static int write_corpus(const char *dir)
{
	static uint8_t in[MAX_PKT + 2];
	char path[4096];
	int rc = 0;

	mkdir(dir, 0755);
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		size_t n = seed_input(&seeds[i], in, sizeof(in));
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, seeds[i].name);
		if (!n || !(f = fopen(path, "wb"))) {
			fprintf(stderr, "fuzz-rx: seed %s: cannot build or write\n", seeds[i].name);
			rc = 1;
			continue;
		}
		if (fwrite(in, 1, n, f) != n)
			rc = 1;
		if (fclose(f))
			rc = 1;
	}
	return rc;
}

/* ---- libFuzzer ---- */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	arena = aligned_alloc(4096, ARENA);
	if (!arena)
		abort();
	build();
	trace = getenv("ODPEMU_FUZZ_TRACE") != NULL;
	for (int i = 1; i < *argc; i++)
		if (!strncmp((*argv)[i], "--write-corpus=", 15))
			exit(write_corpus((*argv)[i] + 15));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t pkt[MAX_PKT];
	struct snap before, after;
	unsigned flags, completions;
	struct nic_gid src;
	uint16_t sport;
	size_t len;

	if (size < 2 || size - 2 > sizeof(pkt))
		return 0;
	flags = data[0];
	len = size - 2;
	memcpy(pkt, data + 2, len);
	src = source((flags >> 1) & 3);
	sport = (flags & 64) ? 50000 : ROCE_UDP_PORT;
	if (data[1] < RX_NQP && len >= ROCE_BTH_LEN)
		roce_put24(pkt + 5, nic_qp_num(w.qp[data[1]]));
	if (flags & SEAL)
		seal(pkt, len, &src, sport);

	take(&before);
	nic_rx_from(w.nic, pkt, len, &src, sport, NOW);
	completions = drain_cqs();
	take(&after);
	check_datagram(&before, &after, completions, pkt, len);

	if (flags & (ANSWER | FAIL)) {
		w.dirty |= w.nfaults > 0;
		answer_faults(flags & FAIL);
	}
	if (flags & TICK) {
		w.dirty = true;
		nic_tick(w.nic, LATER);
	}
	drain_cqs();
	w.dirty |= w.nfaults != after.faults || w.nfaults != 2;
	if (w.dirty) {
		teardown();
		build();
	}
	return 0;
}
