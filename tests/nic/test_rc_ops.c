/* SPDX-License-Identifier: MIT */
/* Focused tests of the transport, one behaviour per function, on the two-NIC bench:
 * every opcode end to end, each NAK and its completion status, flush-in-error, RNR,
 * retransmission after loss, and the ODP fault path on both sides. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "roce.h"
#include "t.h"

#define RW (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ | \
	    ODPEMU_ACCESS_REMOTE_ATOMIC)
#define BUF (64 * 1024)

static struct t_rng rng;

static void test_send_sizes(void)
{
	static const uint32_t sizes[] = { 0, 1, 1000, 1024, 1025, 5000, 40000 };
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	for (unsigned i = 0; i < T_ARRAY_SIZE(sizes); i++) {
		struct nic_sge s = pair_sge(x.a, sizes[i], x.ma);
		struct nic_send_wr wr = { .wr_id = i, .opcode = ODPEMU_WR_SEND,
			.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };
		struct nic_wc wc;

		memset(x.b, 0, BUF);
		T_EQ(pair_post_recv(p, 1, 100 + i, x.b, BUF, x.mb), 0, "post recv");
		wc = pair_send_wc(p, 0, &wr, "send");
		T_EQ(wc.status, ODPEMU_WC_SUCCESS, "send status");
		T_EQ(wc.opcode, ODPEMU_WC_SEND, "send opcode");
		T_EQ(wc.wr_id, i, "send wr_id");
		wc = pair_wc(p, 1, false, "recv");
		T_EQ(wc.status, ODPEMU_WC_SUCCESS, "recv status");
		T_EQ(wc.byte_len, sizes[i], "recv byte_len");
		T_EQ(wc.wr_id, 100 + i, "recv wr_id");
		T_EQ(wc.opcode, ODPEMU_WC_RECV, "recv opcode");
		T_CHECK(memcmp(x.a, x.b, sizes[i]) == 0, "data of %u bytes", sizes[i]);
	}
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_send_imm_inline_unsignaled(void)
{
	struct pair *p = pair_new(NULL);
	char msg[] = "inline hello";
	struct nic_sge s = { (uint64_t)(uintptr_t)msg, sizeof(msg), 0 };
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_SEND_WITH_IMM,
		.send_flags = ODPEMU_SEND_INLINE | ODPEMU_SEND_SOLICITED, .sg_list = &s,
		.num_sge = 1, .imm_data = 0xdeadbeef };
	struct pair_bufs x;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	T_EQ(pair_post_recv(p, 1, 7, x.b, BUF, x.mb), 0, "post recv");
	T_EQ(pair_post_send(p, 0, &wr), 0, "post inline send");
	memset(msg, 'X', sizeof(msg) - 1);	/* inline: copied at post time */
	pair_settle(p);
	wc = pair_wc(p, 1, false, "recv");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "status");
	T_CHECK(wc.wc_flags & NIC_WC_WITH_IMM, "WITH_IMM flag");
	T_EQ(wc.imm_data, 0xdeadbeef, "imm");
	T_CHECK(memcmp(x.b, "inline hello", 13) == 0, "inline data copied at post");
	T_CHECK(!pair_poll(p, 0, true, &wc), "unsignaled send: no completion");
	pair_bufs_free(&x);
	pair_free(p);
}

/* WRITE, WRITE_WITH_IMM and READ; built in the wire's transmit slot (as odpemud does) or,
 * with scratch, in nic/'s own buffer and copied by send(). */
static void write_read(bool scratch)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_wc wc;

	p->no_tx_slot = scratch;
	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	struct nic_sge s = pair_sge(x.a, 10000, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1,
		.remote_addr = (uint64_t)(uintptr_t)x.b + 100, .rkey = nic_mr_rkey(x.mb) };

	wc = pair_send_wc(p, 0, &wr, "write");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "write status");
	T_EQ(wc.opcode, ODPEMU_WC_RDMA_WRITE, "write opcode");
	T_CHECK(memcmp(x.a, x.b + 100, 10000) == 0, "write data");
	/* WRITE_WITH_IMM consumes a receive WQE and reports the length written. */
	T_EQ(pair_post_recv(p, 1, 9, x.b, 16, x.mb), 0, "recv for imm");
	wr.opcode = ODPEMU_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = 0x1234;
	s.length = 3000;
	(void)pair_send_wc(p, 0, &wr, "write imm");
	wc = pair_wc(p, 1, false, "imm recv");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "imm status");
	T_EQ(wc.opcode, ODPEMU_WC_RECV_RDMA_WITH_IMM, "imm opcode");
	T_EQ(wc.byte_len, 3000, "imm byte_len");
	T_EQ(wc.imm_data, 0x1234, "imm value");
	/* READ back 9000 bytes from b into a + 20000. */
	s = pair_sge(x.a + 20000, 9000, x.ma);
	wr = (struct nic_send_wr){ .wr_id = 2, .opcode = ODPEMU_WR_RDMA_READ,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1,
		.remote_addr = (uint64_t)(uintptr_t)x.b + 100, .rkey = nic_mr_rkey(x.mb) };
	wc = pair_send_wc(p, 0, &wr, "read");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "read status");
	T_EQ(wc.opcode, ODPEMU_WC_RDMA_READ, "read opcode");
	T_EQ(wc.byte_len, 9000, "read byte_len");
	T_CHECK(memcmp(x.a + 20000, x.b + 100, 9000) == 0, "read data");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_write_read(void)
{
	write_read(false);
	write_read(true);
}

static void atomic(struct pair *p, struct pair_bufs *x, enum odpemu_wr_opcode op, uint64_t cmp_add,
		   uint64_t swap, uint64_t want_orig, uint64_t want_after, const char *what)
{
	struct nic_sge s = pair_sge(x->a, 8, x->ma);
	struct nic_send_wr wr = { .wr_id = 5, .opcode = op, .send_flags = ODPEMU_SEND_SIGNALED,
		.sg_list = &s, .num_sge = 1, .remote_addr = (uint64_t)(uintptr_t)x->b + 64,
		.rkey = nic_mr_rkey(x->mb), .compare_add = cmp_add, .swap = swap };
	struct nic_wc wc;
	uint64_t v;

	if (op == ODPEMU_WR_ATOMIC_WRITE)
		memcpy(x->a, &swap, 8);
	wc = pair_send_wc(p, 0, &wr, what);
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, what);
	memcpy(&v, x->b + 64, 8);
	T_EQ(v, want_after, what);
	if (op != ODPEMU_WR_ATOMIC_WRITE) {
		memcpy(&v, x->a, 8);
		T_EQ(v, want_orig, what);
	}
}

static void test_atomics(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	uint64_t init = 40;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	memcpy(x.b + 64, &init, 8);
	atomic(p, &x, ODPEMU_WR_ATOMIC_FETCH_AND_ADD, 2, 0, 40, 42, "fetch_add");
	atomic(p, &x, ODPEMU_WR_ATOMIC_CMP_AND_SWP, 42, 7, 42, 7, "cmp_swap hit");
	atomic(p, &x, ODPEMU_WR_ATOMIC_CMP_AND_SWP, 42, 9, 7, 7, "cmp_swap miss");
	atomic(p, &x, ODPEMU_WR_ATOMIC_WRITE, 0, 0x1122334455667788ull, 0, 0x1122334455667788ull,
	       "atomic_write");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_flush(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_send_wr wr;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW | ODPEMU_ACCESS_FLUSH_GLOBAL, &rng);
	wr = (struct nic_send_wr){ .wr_id = 1, .opcode = ODPEMU_WR_FLUSH,
		.send_flags = ODPEMU_SEND_SIGNALED, .remote_addr = (uint64_t)(uintptr_t)x.b,
		.rkey = nic_mr_rkey(x.mb), .flush_type = 1, .flush_level = 0, .flush_len = 4096 };
	wc = pair_send_wc(p, 0, &wr, "flush");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "flush global");
	T_EQ(wc.opcode, ODPEMU_WC_FLUSH, "flush opcode");
	wr.flush_type = 2;	/* persistent: the MR does not allow it */
	wc = pair_send_wc(p, 0, &wr, "flush persistent");
	T_EQ(wc.status, ODPEMU_WC_REM_ACCESS_ERR, "flush persistent refused");
	pair_bufs_free(&x);
	pair_free(p);
}

/* The rnr policy: RNR NAKs while the host works, the port asked once, its answer read by
 * PSN when the FLUSH comes again; a later failure; a QP destroyed while it waits cancels
 * the request. */
static void flush_persist_rnr(void)
{
	struct pair_qp_opts o = { .policy = NIC_FAULT_RNR, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .min_rnr_timer = 1, .access = ODPEMU_ACCESS_REMOTE_WRITE |
		ODPEMU_ACCESS_FLUSH_PERSISTENT };
	struct pair *p = pair_new(&o);
	struct nic_qp_counters ctr;
	struct pair_bufs x;
	struct nic_send_wr wr;
	struct nic_wc wc;
	unsigned cancels;

	pair_bufs_new(p, &x, BUF, RW, RW | ODPEMU_ACCESS_FLUSH_PERSISTENT, &rng);
	wr = (struct nic_send_wr){ .wr_id = 2, .opcode = ODPEMU_WR_FLUSH,
		.send_flags = ODPEMU_SEND_SIGNALED, .remote_addr = (uint64_t)(uintptr_t)x.b,
		.rkey = nic_mr_rkey(x.mb), .flush_type = 2, .flush_level = 1 };
	p->persist_rc = 1;
	T_EQ(pair_post_send(p, 0, &wr), 0, "post");
	pair_run(p, 10 * 1000 * 1000);
	T_EQ(nic_cq_poll(p->s[0].scq, &wc, 1), 0, "rnr: no completion before the answer");
	T_CHECK(nic_qp_counters(p->s[0].qp, &ctr) == 0 && ctr.rnr_naks_received > 0,
		"rnr: RNR NAKs meanwhile");
	T_EQ(p->s[1].persist_calls, 1, "rnr: asked once, not at every retry");
	T_EQ(p->s[1].persist_len, BUF, "rnr: a whole-MR FLUSH persists the MR");
	pair_persist_answer(p, 1, 0);
	pair_settle(p);
	wc = pair_wc(p, 0, true, "rnr: durable later");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "rnr: durable later");

	T_EQ(pair_post_send(p, 0, &wr), 0, "post");
	pair_run(p, 10 * 1000 * 1000);
	pair_persist_answer(p, 1, -EIO);
	pair_settle(p);
	wc = pair_wc(p, 0, true, "rnr: failed later");
	T_EQ(wc.status, ODPEMU_WC_REM_OP_ERR, "rnr: failed later: REM_OP_ERR");
	pair_bufs_free(&x);
	pair_free(p);

	p = pair_new(&o);	/* the QP goes while the host works: the request is cancelled */
	pair_bufs_new(p, &x, BUF, RW, RW | ODPEMU_ACCESS_FLUSH_PERSISTENT, &rng);
	wr.rkey = nic_mr_rkey(x.mb);
	wr.remote_addr = (uint64_t)(uintptr_t)x.b;
	p->persist_rc = 1;
	T_EQ(pair_post_send(p, 0, &wr), 0, "post");
	pair_run(p, 1000 * 1000);
	T_CHECK(p->s[1].persist_w != NULL, "a request outstanding");
	cancels = pair_persist_cancels;
	pair_bufs_free(&x);
	pair_free(p);
	T_EQ(pair_persist_cancels - cancels, 1, "cancelled with its QP");
}

/* A persistent FLUSH waits for the host's persist port: answered at once (0), later
 * (1: held meanwhile, the port asked once; under rnr, RNR NAKs and the answer read by
 * PSN when the FLUSH comes again), or failed (REM_OP_ERR, now or later). */
static void test_flush_persist(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_send_wr wr;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW | ODPEMU_ACCESS_FLUSH_PERSISTENT, &rng);
	wr = (struct nic_send_wr){ .wr_id = 1, .opcode = ODPEMU_WR_FLUSH,
		.send_flags = ODPEMU_SEND_SIGNALED, .remote_addr = (uint64_t)(uintptr_t)x.b + 4096,
		.rkey = nic_mr_rkey(x.mb), .flush_type = 2, .flush_level = 0, .flush_len = 8192 };
	p->persist_rc = 0;
	wc = pair_send_wc(p, 0, &wr, "flush persistent, durable at once");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "durable at once");
	T_EQ(p->s[1].persist_calls, 1, "the port asked once");
	T_EQ(p->s[1].persist_len, 8192, "for the FLUSH's length");
	T_CHECK(!p->s[1].persist_odp, "a pinned MR: a host address");

	/* later: held (stall policy) for 10 ms, within the requester's ACK timeout (67 ms) */
	p->persist_rc = 1;
	T_EQ(pair_post_send(p, 0, &wr), 0, "post");
	pair_run(p, 10 * 1000 * 1000);
	T_EQ(nic_cq_poll(p->s[0].scq, &wc, 1), 0, "no completion before the host answers");
	T_EQ(p->s[1].persist_calls, 2, "asked once");
	pair_persist_answer(p, 1, 0);
	pair_settle(p);
	wc = pair_wc(p, 0, true, "flush persistent, durable later");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "durable later");
	T_EQ(p->s[1].persist_calls, 2, "the answer read by PSN, not asked again");

	p->persist_rc = -EIO;	/* the host cannot make it durable: a remote operational error */
	wc = pair_send_wc(p, 0, &wr, "flush persistent, failing");
	T_EQ(wc.status, ODPEMU_WC_REM_OP_ERR, "persist failed: REM_OP_ERR");
	pair_bufs_free(&x);
	pair_free(p);
	flush_persist_rnr();
}

/* A bad R_Key: REM_ACCESS_ERR, the QP goes to ERR, the WR behind it is flushed. */
static void test_bad_rkey_flush(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	struct nic_sge s = pair_sge(x.a, 100, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
		.sg_list = &s, .num_sge = 1, .remote_addr = (uint64_t)(uintptr_t)x.b,
		.rkey = nic_mr_rkey(x.mb) ^ 0x100 };

	T_EQ(pair_post_send(p, 0, &wr), 0, "post bad write (unsignaled)");
	wr.wr_id = 2;
	wr.rkey = nic_mr_rkey(x.mb);
	T_EQ(pair_post_send(p, 0, &wr), 0, "post good write");
	pair_settle(p);
	wc = pair_wc(p, 0, true, "bad write");
	T_EQ(wc.wr_id, 1, "error completes even unsignaled");
	T_EQ(wc.status, ODPEMU_WC_REM_ACCESS_ERR, "bad rkey");
	wc = pair_wc(p, 0, true, "flushed");
	T_EQ(wc.wr_id, 2, "second WR");
	T_EQ(wc.status, ODPEMU_WC_WR_FLUSH_ERR, "flushed");
	T_EQ(nic_qp_state(p->s[0].qp), ODPEMU_QPS_ERR, "requester in ERR");
	T_EQ(nic_qp_state(p->s[1].qp), ODPEMU_QPS_ERR, "responder in ERR");
	T_EQ(p->s[1].events[ODPEMU_EVENT_QP_ACCESS_ERR], 1, "responder access error event");
	/* Posting in ERR completes at once with WR_FLUSH_ERR. */
	wr.wr_id = 3;
	T_EQ(pair_post_send(p, 0, &wr), 0, "post in ERR");
	wc = pair_wc(p, 0, true, "post in ERR");
	T_EQ(wc.status, ODPEMU_WC_WR_FLUSH_ERR, "post in ERR flushed");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_recv_too_small(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	struct nic_sge s = pair_sge(x.a, 2000, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_SEND, .sg_list = &s, .num_sge = 1 };

	T_EQ(pair_post_recv(p, 1, 5, x.b, 1500, x.mb), 0, "small recv");
	wc = pair_send_wc(p, 0, &wr, "send");
	T_EQ(wc.status, ODPEMU_WC_REM_INV_REQ_ERR, "sender REM_INV_REQ_ERR");
	wc = pair_wc(p, 1, false, "recv");
	T_EQ(wc.status, ODPEMU_WC_LOC_LEN_ERR, "receiver LOC_LEN_ERR");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_rnr(void)
{
	struct pair_qp_opts o = { .policy = NIC_FAULT_STALL, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 2, .min_rnr_timer = 1, .access = ODPEMU_ACCESS_REMOTE_WRITE };
	struct pair *p = pair_new(&o);
	struct pair_bufs x;
	struct nic_wc wc;
	struct nic_qp_counters c;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	struct nic_sge s = pair_sge(x.a, 10, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_SEND, .sg_list = &s, .num_sge = 1 };

	wc = pair_send_wc(p, 0, &wr, "send without recv");
	T_EQ(wc.status, ODPEMU_WC_RNR_RETRY_EXC_ERR, "RNR retries exhausted");
	nic_qp_counters(p->s[0].qp, &c);
	T_EQ(c.rnr_naks_received, 3, "1 + rnr_retry RNR NAKs");
	pair_bufs_free(&x);
	pair_free(p);

	/* rnr_retry 7 waits forever; a receive posted later lets the send through. */
	o.rnr_retry = 7;
	p = pair_new(&o);
	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	s = pair_sge(x.a, 10, x.ma);
	T_EQ(pair_post_send(p, 0, &wr), 0, "send");
	pair_run(p, 100000);	/* 0.1 ms: a few RNR rounds (timer 10 us) */
	T_CHECK(!pair_poll(p, 0, true, &wc), "still retrying");
	T_EQ(pair_post_recv(p, 1, 1, x.b, 64, x.mb), 0, "recv");
	pair_settle(p);
	wc = pair_wc(p, 1, false, "late recv");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "delivered after RNR");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_loss_retransmit(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_wc wc;
	struct nic_qp_counters c;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	for (uint64_t nth = 1; nth <= 12; nth++) {
		struct nic_sge s = pair_sge(x.a, 8000, x.ma);
		struct nic_send_wr wr = { .wr_id = nth, .opcode = ODPEMU_WR_RDMA_WRITE,
			.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1,
			.remote_addr = (uint64_t)(uintptr_t)x.b, .rkey = nic_mr_rkey(x.mb) };
		struct nic_send_wr rd = wr;
		struct nic_sge rs = pair_sge(x.a + 32768, 8000, x.ma);

		rd.opcode = ODPEMU_WR_RDMA_READ;
		rd.sg_list = &rs;
		memset(x.b, 0, 8000);
		p->drop_nth = p->sent + nth;	/* lose one packet of this exchange */
		T_EQ(pair_post_send(p, 0, &wr), 0, "write");
		T_EQ(pair_post_send(p, 0, &rd), 0, "read");
		pair_run(p, 10000000000ull);
		wc = pair_wc(p, 0, true, "write after loss");
		T_EQ(wc.status, ODPEMU_WC_SUCCESS, "write after loss");
		wc = pair_wc(p, 0, true, "read after loss");
		T_EQ(wc.status, ODPEMU_WC_SUCCESS, "read after loss");
		T_CHECK(memcmp(x.a, x.b, 8000) == 0, "data after loss of packet %llu",
			(unsigned long long)nth);
		T_CHECK(memcmp(x.a, x.a + 32768, 8000) == 0, "read data after loss");
	}
	nic_qp_counters(p->s[0].qp, &c);
	T_CHECK(c.retransmits > 0, "retransmitted");
	pair_bufs_free(&x);
	pair_free(p);
}

/* ODP on the responder: the target MR starts empty; faults fill it; data lands. */
/* The frame of the resend tests: an ODP requester buffer (x.a) and a pinned responder
 * buffer (x.b, zeroed); the QP's first PSN in *psn0. */
static struct pair *resend_pair(unsigned max_inflight, struct pair_bufs *x, uint32_t *psn0)
{
	struct pair_qp_opts o = { .policy = NIC_FAULT_STALL, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .min_rnr_timer = 1, .access = RW, .max_inflight = max_inflight };
	struct pair *p = pair_new(&o);
	struct nic_qp_attr qa;

	pair_bufs_new(p, x, BUF, RW | ODPEMU_ACCESS_ON_DEMAND, RW, &rng);
	memset(x->b, 0, BUF);
	T_EQ(nic_qp_query(p->s[0].qp, &qa), 0, "query");
	*psn0 = qa.sq_psn;
	return p;
}

/* The WRs posted are executed by the responder while every answer of an opcode in lost is
 * lost; then the ACK timeout resends from the first, whose gather faults (the requester's
 * pages were invalidated) and waits: the fault is held until the test answers it. */
static void resend_parked(struct pair *p, struct pair_bufs *x, unsigned lost)
{
	p->drop_mask = lost;
	pair_run(p, 1000000);
	T_CHECK(memcmp(x->a, x->b, 4096) == 0, "the first WRITE was executed");
	p->drop_mask = 0;
	p->hold_faults = true;
	nic_host_invalidate(p->s[0].nic, 1, (uint64_t)(uintptr_t)x->a, BUF);
	pair_run(p, 100000000);
	T_CHECK(p->s[0].nfaults >= 1, "the resend waits on a gather fault");
}

/* A response to side 0 as the responder's NIC would send it. */
static void inject_answer(struct pair *p, uint8_t opcode, uint32_t psn, uint32_t msn,
			  const void *payload, uint32_t len)
{
	struct roce_hdr h = { .bth = { .opcode = opcode, .psn = psn & ROCE_PSN_MASK },
		.aeth = { .syndrome = roce_syndrome_ack(ROCE_CREDIT_INVALID), .msn = msn } };

	pair_inject(p, 0, &h, payload, len);
}

#define LOST(op) (1u << ((op) & 31))

/* A go-back-N resend parked on a requester fault, overtaken by the READ response of the
 * original transmission, which completes every WQE sent: the next WQE must number on from
 * the highest PSN sent. Numbered from the resend's PSN, it reused PSNs the responder had
 * executed, was ACKed as a duplicate and completed SUCCESS without landing (the soak found
 * it under loss and reordering). */
static void test_resend_overtaken(void)
{
	uint8_t *landing = calloc(1, 4096);
	struct pair_bufs x;
	struct nic_wc wc;
	uint32_t psn0;
	struct pair *p = resend_pair(5, &x, &psn0);
	struct nic_mr *ml = pair_mr(p, 0, landing, 4096, RW);
	struct nic_sge s1 = pair_sge(x.a, 4096, x.ma), s2 = pair_sge(landing, 100, ml),
		s3 = pair_sge(x.a + 8192, 100, x.ma);
	struct nic_send_wr wr[3] = {
		{ .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE, .send_flags = ODPEMU_SEND_SIGNALED,
		  .sg_list = &s1, .num_sge = 1, .remote_addr = (uint64_t)(uintptr_t)x.b,
		  .rkey = nic_mr_rkey(x.mb) },	/* PSNs psn0 .. psn0+3 (MTU 1024) */
		{ .wr_id = 2, .opcode = ODPEMU_WR_RDMA_READ, .send_flags = ODPEMU_SEND_SIGNALED,
		  .sg_list = &s2, .num_sge = 1, .remote_addr = (uint64_t)(uintptr_t)x.b + 16384,
		  .rkey = nic_mr_rkey(x.mb) },	/* psn0+4: fills the window of 5 */
		{ .wr_id = 3, .opcode = ODPEMU_WR_RDMA_WRITE, .send_flags = ODPEMU_SEND_SIGNALED,
		  .sg_list = &s3, .num_sge = 1, .remote_addr = (uint64_t)(uintptr_t)x.b + 8192,
		  .rkey = nic_mr_rkey(x.mb) },	/* waits for the window */
	};

	for (int i = 0; i < 3; i++)
		T_EQ(pair_post_send(p, 0, &wr[i]), 0, "post");
	resend_parked(p, &x, LOST(ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY) |
			     LOST(ROCE_OP_RC_ACKNOWLEDGE));
	/* The READ response of the first transmission arrives: WRITE and READ complete. */
	inject_answer(p, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, psn0 + 4, 2, x.b + 16384, 100);
	wc = pair_wc(p, 0, true, "the WRITE");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "the WRITE completes by the READ response");
	wc = pair_wc(p, 0, true, "the READ");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "the READ completes");
	/* The fault is answered; the third WR goes out with new PSNs and lands. */
	p->hold_faults = false;
	pair_settle(p);
	wc = pair_wc(p, 0, true, "the WRITE behind");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "the WRITE behind completes");
	T_CHECK(memcmp(x.a + 8192, x.b + 8192, 100) == 0,
		"the WRITE behind landed (not ACKed as a duplicate)");
	T_EQ(nic_mr_dereg(ml), 0, "dereg landing");
	free(landing);
	pair_bufs_free(&x);
	pair_free(p);
}

/* The same resend, overtaken by the ACK of the original transmission's last packet: the
 * WQE being resent completes now. Left SENDING, una passed it, the resend's own ACK was a
 * duplicate, and it never completed (the soak found the hang). */
static void test_resend_acked(void)
{
	struct pair_bufs x;
	struct nic_wc wc;
	uint32_t psn0;
	struct pair *p = resend_pair(0, &x, &psn0);
	struct nic_sge s1 = pair_sge(x.a, 4096, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s1, .num_sge = 1,
		.remote_addr = (uint64_t)(uintptr_t)x.b, .rkey = nic_mr_rkey(x.mb) };

	T_EQ(pair_post_send(p, 0, &wr), 0, "post");
	resend_parked(p, &x, LOST(ROCE_OP_RC_ACKNOWLEDGE));
	inject_answer(p, ROCE_OP_RC_ACKNOWLEDGE, psn0 + 3, 1, NULL, 0);
	wc = pair_wc(p, 0, true, "the WRITE acknowledged during its resend");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "the WRITE completes by the late ACK");
	p->hold_faults = false;
	pair_settle(p);
	T_CHECK(!pair_poll(p, 0, true, &wc), "no second completion");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_odp_responder(enum nic_fault_policy policy)
{
	struct pair_qp_opts o = { .policy = policy, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .min_rnr_timer = 1, .access = ODPEMU_ACCESS_REMOTE_WRITE |
		ODPEMU_ACCESS_REMOTE_READ };
	struct pair *p = pair_new(&o);
	struct iopt_counters ic;
	struct nic_qp_counters c;
	struct pair_bufs x;
	struct nic_wc wc;

	p->fault_latency_ns = 50000;
	p->settle_ns = 10 * PAIR_SETTLE_NS;
	pair_bufs_new(p, &x, BUF, RW, RW | ODPEMU_ACCESS_ON_DEMAND, &rng);
	struct nic_sge s = pair_sge(x.a, 40000, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1,
		.remote_addr = (uint64_t)(uintptr_t)x.b + 5, .rkey = nic_mr_rkey(x.mb) };

	wc = pair_send_wc(p, 0, &wr, "odp write");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "odp write status");
	T_CHECK(memcmp(x.a, x.b + 5, 40000) == 0, "odp write data");
	iopt_counters_get(nic_mr_iopt(x.mb), &ic);
	T_CHECK(ic.page_faults >= 1, "faults counted");
	T_CHECK(ic.page_fault_pages >= 10, "fault pages counted");
	nic_qp_counters(p->s[1].qp, &c);
	if (policy == NIC_FAULT_RNR)
		T_CHECK(c.rnr_naks_sent >= 1, "rnr policy NAKs");
	else
		T_CHECK(c.stalls >= 1, "stall policy stalls");
	/* After an invalidation the next access faults again. */
	nic_host_invalidate(p->s[1].nic, 1, (uint64_t)(uintptr_t)x.b, BUF);
	wc = pair_send_wc(p, 0, &wr, "odp write again");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "after invalidation");
	iopt_counters_get(nic_mr_iopt(x.mb), &ic);
	T_CHECK(ic.page_invalidations >= 1, "invalidation counted");
	T_CHECK(ic.page_faults >= 2, "refaulted after invalidation");
	pair_bufs_free(&x);
	pair_free(p);
}

/* Fault-around off: eight 4 KiB WRITEs to eight cold pages in one post. The first faults;
 * the seven behind it wait (rnr: dropped after its RNR NAK; stall: held), and their pages
 * are faulted in ahead (faults_ahead), so they find them present: rnr pays one RNR round
 * instead of eight, stall one fault in a row instead of eight. */
static void test_odp_fault_ahead(void)
{
	for (int stall = 0; stall < 2; stall++) {
		struct pair_qp_opts o = { .policy = stall ? NIC_FAULT_STALL : NIC_FAULT_RNR,
			.timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1,
			.access = ODPEMU_ACCESS_REMOTE_WRITE, .fault_around = 4096 };
		struct pair *p = pair_new(&o);
		struct nic_send_wr wr[8];
		struct nic_sge sge[8];
		struct nic_qp_counters c;
		struct pair_bufs x;
		unsigned posted = 0, ok = 0;

		p->fault_latency_ns = 50000;
		p->settle_ns = 10 * PAIR_SETTLE_NS;
		pair_bufs_new(p, &x, BUF, RW, RW | ODPEMU_ACCESS_ON_DEMAND, &rng);
		for (unsigned i = 0; i < 8; i++) {
			sge[i] = pair_sge(x.a + i * 4096, 4096, x.ma);
			wr[i] = (struct nic_send_wr){ .wr_id = i, .opcode = ODPEMU_WR_RDMA_WRITE,
				.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &sge[i],
				.num_sge = 1, .rkey = nic_mr_rkey(x.mb),
				.remote_addr = (uint64_t)(uintptr_t)x.b + i * 4096 };
		}
		T_EQ(pair_post_send_list(p, 0, wr, 8, &posted), 0, "post 8 WRITEs");
		pair_settle(p);
		for (unsigned i = 0; i < 8; i++)
			ok += pair_wc(p, 0, true, "write").status == ODPEMU_WC_SUCCESS;
		T_EQ(ok, 8, "all WRITEs complete");
		T_CHECK(memcmp(x.a, x.b, 8 * 4096) == 0, "data");
		nic_qp_counters(p->s[1].qp, &c);
		printf("%s: rnr_naks_sent %llu, faults_ahead %llu, faults_resp %llu\n",
		       stall ? "stall" : "rnr", (unsigned long long)c.rnr_naks_sent,
		       (unsigned long long)c.faults_ahead, (unsigned long long)c.faults_resp);
		T_CHECK(c.faults_ahead >= 1, "%s: the waiting WRITEs' pages faulted ahead",
			stall ? "stall" : "rnr");
		if (stall)
			T_CHECK(c.faults_resp < 8, "stall: fewer faults in a row than messages (%llu)",
				(unsigned long long)c.faults_resp);
		else
			T_CHECK(c.rnr_naks_sent < 8, "rnr: fewer RNR rounds than messages (%llu)",
				(unsigned long long)c.rnr_naks_sent);
		pair_bufs_free(&x);
		pair_free(p);
	}
}

static void test_odp_fault_fails(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_wc wc;

	p->fail_faults = true;
	pair_bufs_new(p, &x, BUF, RW, RW | ODPEMU_ACCESS_ON_DEMAND, &rng);
	struct nic_sge s = pair_sge(x.a, 100, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
		.sg_list = &s, .num_sge = 1, .remote_addr = (uint64_t)(uintptr_t)x.b,
		.rkey = nic_mr_rkey(x.mb) };

	wc = pair_send_wc(p, 0, &wr, "failed fault");
	T_EQ(wc.status, ODPEMU_WC_REM_ACCESS_ERR, "failed responder fault");
	pair_bufs_free(&x);
	pair_free(p);

	/* Requester side: the gather faults and the fault fails: LOC_PROT_ERR. */
	p = pair_new(NULL);
	p->fail_faults = true;
	pair_bufs_new(p, &x, BUF, RW | ODPEMU_ACCESS_ON_DEMAND, RW, &rng);
	s = pair_sge(x.a, 100, x.ma);
	wr.rkey = nic_mr_rkey(x.mb);
	wr.remote_addr = (uint64_t)(uintptr_t)x.b;
	wc = pair_send_wc(p, 0, &wr, "failed local fault");
	T_EQ(wc.status, ODPEMU_WC_LOC_PROT_ERR, "failed requester fault");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_odp_requester_and_read_landing(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_wc wc;
	struct nic_qp_counters c;

	p->fault_latency_ns = 20000;
	p->settle_ns = 10 * PAIR_SETTLE_NS;
	pair_bufs_new(p, &x, BUF, RW | ODPEMU_ACCESS_ON_DEMAND, RW, &rng);
	struct nic_sge s = pair_sge(x.a, 30000, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1,
		.remote_addr = (uint64_t)(uintptr_t)x.b, .rkey = nic_mr_rkey(x.mb) };

	wc = pair_send_wc(p, 0, &wr, "write from ODP");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "gather through faults");
	T_CHECK(memcmp(x.a, x.b, 30000) == 0, "gathered data");
	/* READ landing into the ODP MR made cold again by an invalidation. */
	nic_host_invalidate(p->s[0].nic, 1, (uint64_t)(uintptr_t)x.a, BUF);
	memset(x.b + 40000, 0x5a, 20000);
	s = pair_sge(x.a + 40000, 20000, x.ma);
	wr.opcode = ODPEMU_WR_RDMA_READ;
	wr.remote_addr = (uint64_t)(uintptr_t)x.b + 40000;
	wc = pair_send_wc(p, 0, &wr, "read into ODP");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "read landing through faults");
	T_CHECK(memcmp(x.a + 40000, x.b + 40000, 20000) == 0, "landed data");
	nic_qp_counters(p->s[0].qp, &c);
	T_CHECK(c.faults_req >= 2, "requester faults counted");
	pair_bufs_free(&x);
	pair_free(p);
}

/* A large READ into cold ODP memory, with the fault held far longer than the ACK timeout:
 * the first landing fault prefetches the rest of the buffer, so the READ is asked for
 * again once (the rest of the first response stream is dropped: one stream wasted, not one
 * per fault-around window), and the wait on the local fault costs no retry (with
 * retry_cnt 1 it would otherwise end in RETRY_EXC_ERR). */
static void test_odp_read_landing_large(void)
{
	enum { LEN = 1 << 20, NPKTS = LEN / 4096 };
	struct pair_qp_opts o = { .policy = NIC_FAULT_STALL, .timeout = 1, .retry_cnt = 1,
		.rnr_retry = 7, .access = RW, .mtu = ODPEMU_MTU_4096 };
	struct pair *p = pair_new(&o);
	struct nic_qp_counters c;
	struct pair_bufs x;
	struct nic_wc wc;

	p->settle_ns = 10 * PAIR_SETTLE_NS;
	pair_bufs_new(p, &x, LEN, RW | ODPEMU_ACCESS_ON_DEMAND, RW, &rng);
	struct nic_sge s = pair_sge(x.a, LEN, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_READ,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1,
		.remote_addr = (uint64_t)(uintptr_t)x.b, .rkey = nic_mr_rkey(x.mb) };

	p->hold_faults = true;
	T_EQ(pair_post_send(p, 0, &wr), 0, "post a 1 MiB READ into cold ODP");
	pair_run(p, 2000000);	/* 2 ms of held fault; the ACK timeout is 8 us */
	T_CHECK(!pair_poll(p, 0, true, &wc), "nothing completes while the fault is held");
	p->hold_faults = false;
	pair_settle(p);
	wc = pair_wc(p, 0, true, "1 MiB READ");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "large READ lands through a slow fault");
	T_CHECK(memcmp(x.a, x.b, LEN) == 0, "landed data");
	nic_qp_counters(p->s[0].qp, &c);
	printf("1 MiB READ: faults_req %llu, faults_ahead %llu, timeouts %llu, "
	       "responses received %llu (%u per stream)\n", (unsigned long long)c.faults_req,
	       (unsigned long long)c.faults_ahead, (unsigned long long)c.timeouts,
	       (unsigned long long)c.pkts_received, NPKTS);
	T_EQ(c.faults_req, 1, "one landing fault: the rest was prefetched");
	T_EQ(c.faults_ahead, 1, "the rest of the buffer prefetched at the first fault");
	T_EQ(c.timeouts, 0, "waiting on a local fault is not an ACK timeout");
	T_CHECK(c.pkts_received <= 2 * NPKTS, "%llu responses: at most one stream wasted",
		(unsigned long long)c.pkts_received);
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_dereg_and_rekey(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_wc wc;
	uint32_t old;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	old = nic_mr_rkey(x.mb);
	T_EQ(nic_mr_dereg(x.mb), 0, "dereg");
	x.mb = pair_mr(p, 1, x.b, BUF, RW);
	T_CHECK(nic_mr_rkey(x.mb) != old, "re-registration changes the key");
	struct nic_sge s = pair_sge(x.a, 100, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
		.sg_list = &s, .num_sge = 1, .remote_addr = (uint64_t)(uintptr_t)x.b, .rkey = old };

	wc = pair_send_wc(p, 0, &wr, "write with the stale key");
	T_EQ(wc.status, ODPEMU_WC_REM_ACCESS_ERR, "stale key refused");
	pair_bufs_free(&x);
	pair_free(p);
}

/* A QP parked on a fault of an ODP MR that is deregistered: the MR waits as a zombie for
 * the handler's answer, the answer wakes the QP and frees the domain, and the QP is
 * destroyed before its engine read the answer. Destroying it must not touch the freed
 * domain (ASan catches it: the soak found this use-after-free). */
static void test_dereg_while_faulting(void)
{
	struct pair_qp_opts o = { .policy = NIC_FAULT_STALL, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .min_rnr_timer = 1, .access = ODPEMU_ACCESS_REMOTE_WRITE };
	struct pair *p = pair_new(&o);
	struct pair_bufs x;
	struct nic_counters c;

	p->hold_faults = true;
	pair_bufs_new(p, &x, BUF, RW, RW | ODPEMU_ACCESS_ON_DEMAND, &rng);
	struct nic_sge s = pair_sge(x.a, 4096, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1,
		.remote_addr = (uint64_t)(uintptr_t)x.b, .rkey = nic_mr_rkey(x.mb) };

	T_EQ(pair_post_send(p, 0, &wr), 0, "post");
	pair_run(p, 1000000);
	T_CHECK(p->s[1].nfaults >= 1, "the responder faulted and waits");
	T_EQ(nic_mr_dereg(x.mb), 0, "dereg with a fault in flight");
	x.mb = NULL;
	nic_counters(p->s[1].nic, &c);
	T_EQ(c.mrs, 0, "the MR is gone for the user");
	pair_bufs_free(&x);
	/* As the daemon does in one batch: the answer arrives (the domain goes with it) and
	 * the QP is destroyed before the engine runs. */
	nic_batch_begin(p->s[1].nic);
	for (unsigned k = 0; k < p->s[1].nfaults; k++)
		nic_fault_fail(p->s[1].nic, p->s[1].faults[k].req, -ECANCELED, p->now);
	p->s[1].nfaults = 0;
	T_EQ(nic_qp_destroy(p->s[1].qp), 0, "destroy the parked QP");
	p->s[1].qp = NULL;
	nic_batch_end(p->s[1].nic, p->now);
	pair_free(p);
}

static void test_bad_lkey(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	struct nic_sge s = { (uint64_t)(uintptr_t)x.a, 100, 0xabcdef };
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
		.sg_list = &s, .num_sge = 1, .remote_addr = (uint64_t)(uintptr_t)x.b,
		.rkey = nic_mr_rkey(x.mb) };

	wc = pair_send_wc(p, 0, &wr, "bad lkey");
	T_EQ(wc.status, ODPEMU_WC_LOC_PROT_ERR, "bad lkey");
	T_EQ(wc.vendor_err, NIC_VERR_BAD_LKEY, "vendor err");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_ud(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	struct nic_sge rs = pair_sge(x.b, 2000, x.mb);
	struct nic_recv_wr rwr = { 77, &rs, 1 };
	struct nic_sge s = pair_sge(x.a, 500, x.ma);
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_SEND_WITH_IMM,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1, .imm_data = 5,
		.ud_dgid = p->s[1].gid, .remote_qpn = nic_qp_num(p->s[1].ud),
		.remote_qkey = 0x1234 };

	T_EQ(nic_post_recv(p->s[1].ud, &rwr, 0), 0, "ud recv");
	T_EQ(nic_post_send(p->s[0].ud, &wr, 0), 0, "ud send");
	pair_settle(p);
	wc = pair_wc(p, 0, true, "ud send");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "ud send");
	wc = pair_wc(p, 1, false, "ud recv");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "ud recv");
	T_EQ(wc.byte_len, 540, "GRH + data");
	T_CHECK(wc.wc_flags & NIC_WC_GRH, "GRH flag");
	T_EQ(wc.src_qp, nic_qp_num(p->s[0].ud), "src qp");
	T_EQ(x.b[20], 0x45, "IPv4 header in the GRH");
	T_CHECK(memcmp(x.b + 40, x.a, 500) == 0, "ud data");
	/* Wrong Q_Key: dropped and counted. */
	wr.remote_qkey = 0x9999;
	T_EQ(nic_post_recv(p->s[1].ud, &rwr, 0), 0, "ud recv 2");
	T_EQ(nic_post_send(p->s[0].ud, &wr, 0), 0, "ud send bad qkey");
	pair_settle(p);
	T_CHECK(!pair_poll(p, 1, false, &wc), "bad qkey not delivered");
	struct nic_qp_counters c;

	nic_qp_counters(p->s[1].ud, &c);
	T_EQ(c.drops[NIC_DROP_BAD_QKEY], 1, "bad qkey counted");
	pair_bufs_free(&x);
	pair_free(p);
}

/* More WRs than the send queue holds, over the QP's life: reused slots must not keep the
 * previous WR's PSNs (regression: copy_wqe left them, the QP hung or hit RETRY_EXC). */
static void test_sq_wraps(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	unsigned done = 0;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	for (unsigned round = 0; round < 3 * 256 / 64; round++) {
		for (unsigned i = 0; i < 64; i++) {
			struct nic_sge s = pair_sge(x.a + i * 64, 64, x.ma);
			struct nic_send_wr wr = { .wr_id = round * 64 + i,
				.opcode = ODPEMU_WR_RDMA_WRITE, .send_flags = ODPEMU_SEND_SIGNALED,
				.sg_list = &s, .num_sge = 1,
				.remote_addr = (uint64_t)(uintptr_t)x.b + i * 64,
				.rkey = nic_mr_rkey(x.mb) };

			T_EQ(pair_post_send(p, 0, &wr), 0, "post");
		}
		pair_settle(p);
		while (pair_poll(p, 0, true, &wc)) {
			T_EQ(wc.status, ODPEMU_WC_SUCCESS, "write in a reused slot");
			done++;
		}
	}
	T_EQ(done, 3 * 256, "every WR completed");
	T_CHECK(memcmp(x.a, x.b, 64 * 64) == 0, "data");
	pair_bufs_free(&x);
	pair_free(p);
}

/* nic_post_send_list: the messages of one list share one AckReq, so the responder sends
 * one ACK for the list; posting them one by one asks for (and gets) one ACK each. */
static void test_post_list_one_ack(void)
{
	struct pair *p = pair_new(NULL);
	struct nic_qp_counters before, after;
	struct nic_send_wr wr[8];
	struct nic_sge sg[8];
	struct pair_bufs x;
	unsigned posted;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	for (unsigned i = 0; i < 8; i++) {
		sg[i] = pair_sge(x.a + i * 64, 64, x.ma);
		wr[i] = (struct nic_send_wr){ .wr_id = i, .opcode = ODPEMU_WR_RDMA_WRITE,
			.sg_list = &sg[i], .num_sge = 1, .rkey = nic_mr_rkey(x.mb),
			.remote_addr = (uint64_t)(uintptr_t)x.b + i * 64 };
	}
	wr[7].send_flags = ODPEMU_SEND_SIGNALED;
	nic_qp_counters(p->s[1].qp, &before);
	T_EQ(pair_post_send_list(p, 0, wr, 8, &posted), 0, "post list");
	T_EQ(posted, 8, "all 8 posted");
	pair_settle(p);
	nic_qp_counters(p->s[1].qp, &after);
	T_EQ(after.pkts_sent - before.pkts_sent, 1, "one ACK for the list");
	wc = pair_wc(p, 0, true, "list");
	T_EQ(wc.wr_id, 7, "the signaled last WR");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "list status");
	T_CHECK(memcmp(x.a, x.b, 8 * 64) == 0, "list data");
	for (unsigned i = 0; i < 8; i++)
		wr[i].send_flags = ODPEMU_SEND_SIGNALED;
	nic_qp_counters(p->s[1].qp, &before);
	for (unsigned i = 0; i < 8; i++)
		T_EQ(pair_post_send(p, 0, &wr[i]), 0, "post one");
	pair_settle(p);
	nic_qp_counters(p->s[1].qp, &after);
	T_EQ(after.pkts_sent - before.pkts_sent, 8, "one ACK per single post");
	for (unsigned i = 0; i < 8; i++)
		T_EQ(pair_wc(p, 0, true, "single").status, ODPEMU_WC_SUCCESS, "single post");
	/* A refused WR stops the list: the ones before it are queued and sent. */
	wr[3].num_sge = 1000;
	T_EQ(pair_post_send_list(p, 0, wr, 8, &posted), -EINVAL, "bad WR in a list");
	T_EQ(posted, 3, "three posted before it");
	pair_settle(p);
	for (unsigned i = 0; i < 3; i++)
		T_EQ(pair_wc(p, 0, true, "prefix").status, ODPEMU_WC_SUCCESS, "prefix sent");
	T_CHECK(!pair_poll(p, 0, true, &wc), "nothing after the refused WR");
	pair_bufs_free(&x);
	pair_free(p);
}

/* UD has no send window: more datagrams than an RC window (256) all go out (regression:
 * the RC window stopped UD after 256, una never moves on UD). */
static void test_ud_many(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	unsigned sent = 0;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	struct nic_sge s = pair_sge(x.a, 16, x.ma);
	struct nic_send_wr wr = { .opcode = ODPEMU_WR_SEND, .send_flags = ODPEMU_SEND_SIGNALED,
		.sg_list = &s, .num_sge = 1, .ud_dgid = p->s[1].gid,
		.remote_qpn = nic_qp_num(p->s[1].ud), .remote_qkey = 0x1234 };

	for (unsigned i = 0; i < 600; i++) {
		wr.wr_id = i;
		T_EQ(nic_post_send(p->s[0].ud, &wr, 0), 0, "ud send");
		pair_settle(p);
		while (pair_poll(p, 0, true, &wc))
			sent += wc.status == ODPEMU_WC_SUCCESS;
	}
	T_EQ(sent, 600, "600 UD sends completed");
	pair_bufs_free(&x);
	pair_free(p);
}

/* ibv_req_notify_cq: armed, the next completion notifies once; armed solicited-only, a
 * plain completion does not, a solicited one (SE) does (IBA 11.4.2.2). */
static void test_cq_notify(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;

	pair_bufs_new(p, &x, BUF, RW, RW, &rng);
	struct nic_sge s = pair_sge(x.a, 32, x.ma), rs = pair_sge(x.b, 64, x.mb);
	struct nic_recv_wr rwr = { 1, &rs, 1 };
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_SEND,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };

	pair_settle(p);	/* nothing armed: a completion notifies nobody */
	T_EQ(pair_post_recv(p, 1, 1, x.b, 64, x.mb), 0, "recv");
	T_EQ(pair_post_send(p, 0, &wr), 0, "send");
	pair_settle(p);
	T_EQ(p->s[0].notified_scq + p->s[1].notified_rcq, 0, "unarmed: no notification");
	T_CHECK(pair_wc(p, 0, true, "send").status == ODPEMU_WC_SUCCESS, "send 1");
	T_CHECK(pair_wc(p, 1, false, "recv").status == ODPEMU_WC_SUCCESS, "recv 1");
	T_EQ(nic_cq_req_notify(p->s[0].scq, false), 0, "arm scq");
	T_EQ(nic_cq_req_notify(p->s[1].rcq, true), 0, "arm rcq solicited");
	T_EQ(nic_post_recv(p->s[1].qp, &rwr, p->now), 0, "recv 2");
	T_EQ(pair_post_send(p, 0, &wr), 0, "send 2");
	T_EQ(nic_post_recv(p->s[1].qp, &rwr, p->now), 0, "recv 3");
	T_EQ(pair_post_send(p, 0, &wr), 0, "send 3");
	pair_settle(p);
	T_EQ(p->s[0].notified_scq, 1, "armed: one notification for two completions");
	T_EQ(p->s[1].notified_rcq, 0, "solicited-only: plain SENDs do not notify");
	wr.send_flags |= ODPEMU_SEND_SOLICITED;
	T_EQ(nic_post_recv(p->s[1].qp, &rwr, p->now), 0, "recv 4");
	T_EQ(pair_post_send(p, 0, &wr), 0, "send 4 (SE)");
	pair_settle(p);
	T_EQ(p->s[1].notified_rcq, 1, "solicited-only: the SE message notifies");
	T_EQ(p->s[0].notified_scq, 1, "the send CQ was not re-armed");
	T_EQ(nic_cq_req_notify(NULL, false), -EINVAL, "arm NULL");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_odp_responder_stall(void)
{
	test_odp_responder(NIC_FAULT_STALL);
}

static void test_odp_responder_rnr(void)
{
	test_odp_responder(NIC_FAULT_RNR);
}

/* The responder's error table (nic/resp_err.h), row by row as a requester can provoke it:
 * the sender's status, the receive WQE's status and vendor error, the responder's event,
 * and both QPs in ERR. Requests our requester never sends are crafted (no sender WQE). */
enum provoke { BAD_RKEY, NO_QP_ACCESS, HOST_FAULT, RECV_TOO_SMALL, RECV_BAD_LKEY,
	BAD_INVALIDATE, CRAFT_LAST_FIRST, CRAFT_SHORT_WRITE };

static const struct resp_err_case {
	enum provoke how;
	const char *name;
	enum odpemu_wc_status sender;	/* SUCCESS: crafted, no sender WQE */
	enum odpemu_wc_status recv;	/* SUCCESS: no receive posted */
	enum nic_vendor_err recv_verr;
	enum odpemu_event_type event;
} resp_err_cases[] = {
	{ BAD_RKEY, "bad rkey", ODPEMU_WC_REM_ACCESS_ERR, ODPEMU_WC_SUCCESS, NIC_VERR_NONE,
	  ODPEMU_EVENT_QP_ACCESS_ERR },
	{ NO_QP_ACCESS, "QP without remote write", ODPEMU_WC_REM_ACCESS_ERR, ODPEMU_WC_SUCCESS,
	  NIC_VERR_NONE, ODPEMU_EVENT_QP_ACCESS_ERR },
	{ HOST_FAULT, "failed responder fault", ODPEMU_WC_REM_ACCESS_ERR, ODPEMU_WC_SUCCESS,
	  NIC_VERR_NONE, ODPEMU_EVENT_QP_ACCESS_ERR },
	{ RECV_TOO_SMALL, "receive too small", ODPEMU_WC_REM_INV_REQ_ERR, ODPEMU_WC_LOC_LEN_ERR,
	  NIC_VERR_RECV_TOO_SMALL, ODPEMU_EVENT_QP_REQ_ERR },
	{ RECV_BAD_LKEY, "receive with a bad lkey", ODPEMU_WC_REM_OP_ERR, ODPEMU_WC_LOC_PROT_ERR,
	  NIC_VERR_LOCAL_FAULT, ODPEMU_EVENT_QP_FATAL },
	{ BAD_INVALIDATE, "invalidate of no MR", ODPEMU_WC_REM_INV_REQ_ERR,
	  ODPEMU_WC_WR_FLUSH_ERR, NIC_VERR_FLUSH, ODPEMU_EVENT_QP_REQ_ERR },
	{ CRAFT_LAST_FIRST, "SEND_LAST with no message", ODPEMU_WC_SUCCESS,
	  ODPEMU_WC_SUCCESS, NIC_VERR_NONE, ODPEMU_EVENT_QP_REQ_ERR },
	{ CRAFT_SHORT_WRITE, "WRITE_LAST short of the RETH length", ODPEMU_WC_SUCCESS,
	  ODPEMU_WC_SUCCESS, NIC_VERR_NONE, ODPEMU_EVENT_QP_REQ_ERR },
};

/* Requests from side 0 at side 1's expected PSN that pass the parser (which drops what
 * it can tell is malformed on its own, e.g. a misaligned atomic) but not the responder. */
static void craft(struct pair *p, struct pair_bufs *x, enum provoke how)
{
	static uint8_t payload[4096];
	struct roce_hdr h = { .bth.ackreq = true };
	struct nic_qp_attr a;
	uint32_t pmtu;

	T_EQ(nic_qp_query(p->s[1].qp, &a), 0, "query");
	pmtu = roce_mtu_bytes((enum roce_mtu)a.path_mtu);
	h.bth.psn = a.rq_psn;
	if (how == CRAFT_LAST_FIRST) {
		h.bth.opcode = ROCE_OP_RC_SEND_LAST;
		return pair_inject(p, 1, &h, payload, 8);
	}
	h.bth.opcode = ROCE_OP_RC_RDMA_WRITE_FIRST;
	h.reth = (struct roce_reth){ (uint64_t)(uintptr_t)x->b, nic_mr_rkey(x->mb), 3 * pmtu };
	pair_inject(p, 1, &h, payload, pmtu);
	h.bth.opcode = ROCE_OP_RC_RDMA_WRITE_LAST;
	h.bth.psn = roce_psn_next(h.bth.psn);
	pair_inject(p, 1, &h, payload, 8);
}

static void provoke(struct pair *p, struct pair_bufs *x, enum provoke how)
{
	struct nic_sge s = pair_sge(x->a, 100, x->ma), bad = { (uint64_t)(uintptr_t)x->b, 4096, 0xabcdef };
	struct nic_recv_wr rwr = { 7, &bad, 1 };
	struct nic_send_wr wr = { .wr_id = 1, .opcode = ODPEMU_WR_RDMA_WRITE, .sg_list = &s,
		.num_sge = 1, .remote_addr = (uint64_t)(uintptr_t)x->b, .rkey = nic_mr_rkey(x->mb) };

	switch (how) {
	case BAD_RKEY: wr.rkey ^= 0x100; break;
	case NO_QP_ACCESS: case HOST_FAULT: break;
	case RECV_TOO_SMALL:
		wr.opcode = ODPEMU_WR_SEND;
		T_EQ(pair_post_recv(p, 1, 7, x->b, 50, x->mb), 0, "small recv");
		break;
	case RECV_BAD_LKEY:
		wr.opcode = ODPEMU_WR_SEND;
		T_EQ(nic_post_recv(p->s[1].qp, &rwr, p->now), 0, "recv with a bad lkey");
		break;
	case BAD_INVALIDATE:
		wr.opcode = ODPEMU_WR_SEND_WITH_INV;
		wr.imm_data = nic_mr_rkey(x->mb) ^ 0x100;
		T_EQ(pair_post_recv(p, 1, 7, x->b, BUF, x->mb), 0, "recv");
		break;
	default:
		return craft(p, x, how);
	}
	T_EQ(pair_post_send(p, 0, &wr), 0, "post");
}

static void test_responder_errors(void)
{
	for (size_t i = 0; i < T_ARRAY_SIZE(resp_err_cases); i++) {
		const struct resp_err_case *c = &resp_err_cases[i];
		struct pair_qp_opts o = { .access = c->how == NO_QP_ACCESS ? ODPEMU_ACCESS_REMOTE_READ : 0 };
		struct pair *p = pair_new(c->how == NO_QP_ACCESS ? &o : NULL);
		struct pair_bufs x;
		struct nic_wc wc;

		p->fail_faults = c->how == HOST_FAULT;
		pair_bufs_new(p, &x, BUF, RW, c->how == HOST_FAULT ? RW | ODPEMU_ACCESS_ON_DEMAND : RW,
			      &rng);
		provoke(p, &x, c->how);
		pair_settle(p);
		if (c->sender != ODPEMU_WC_SUCCESS) {
			wc = pair_wc(p, 0, true, c->name);
			T_CHECK(wc.status == c->sender, "%s: sender %s", c->name,
				odpemu_wc_status_str(wc.status));
		}
		if (c->recv != ODPEMU_WC_SUCCESS) {
			wc = pair_wc(p, 1, false, c->name);
			T_CHECK(wc.status == c->recv && wc.vendor_err == c->recv_verr && wc.wr_id == 7,
				"%s: receive %s (%s)", c->name, odpemu_wc_status_str(wc.status),
				nic_vendor_err_str(wc.vendor_err));
		}
		T_CHECK(p->s[1].events[c->event] == 1, "%s: responder event %s", c->name,
			odpemu_event_type_str(c->event));
		T_CHECK(nic_qp_state(p->s[1].qp) == ODPEMU_QPS_ERR, "%s: responder in ERR", c->name);
		T_CHECK(c->sender == ODPEMU_WC_SUCCESS || nic_qp_state(p->s[0].qp) == ODPEMU_QPS_ERR,
			"%s: requester in ERR", c->name);
		pair_bufs_free(&x);
		pair_free(p);
	}
}

/* Every receive-path drop counts once, by reason, on the device and on the QP that took
 * it (nic_drop). Regressions: a packet for a fresh QP in RESET counted PARSE (no path MTU
 * to parse with yet) instead of QP_STATE; a response to a QP in RTR was dropped uncounted;
 * the completer's and responder's drops (GHOST_RESP, SEQ_ERR_SILENT) were the QP's only. */
enum drop_at { AT_RESET, AT_RTR, AT_RTS };

static const struct drop_case {
	const char *what;
	enum drop_at at;
	uint8_t opcode;
	int psn;		/* from the PSN the QP expects (requests) or has outstanding */
	enum nic_drop_reason why;
} drop_cases[] = {
	{ "SEND to a fresh QP in RESET", AT_RESET, ROCE_OP_RC_SEND_ONLY, 0, NIC_DROP_QP_STATE },
	{ "ACK to a QP in RTR", AT_RTR, ROCE_OP_RC_ACKNOWLEDGE, 0, NIC_DROP_QP_STATE },
	{ "READ response to a QP in RTR", AT_RTR, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, 0,
	  NIC_DROP_QP_STATE },
	{ "ACK older than anything outstanding", AT_RTS, ROCE_OP_RC_ACKNOWLEDGE, -1,
	  NIC_DROP_GHOST_RESP },
	{ "SEND ahead of the expected PSN", AT_RTS, ROCE_OP_RC_SEND_ONLY, 5,
	  NIC_DROP_SEQ_ERR_SILENT },
};

/* A second RC QP on side 1, left in RESET or brought to RTR towards side 0 (rq_psn 500). */
static struct nic_qp *extra_qp(struct pair *p, enum drop_at at)
{
	struct pair_side *s = &p->s[1];
	struct nic_qp_init in = { .type = ODPEMU_QPT_RC, .send_cq = s->scq, .recv_cq = s->rcq,
		.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 };
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1 };
	struct nic_qp *qp = NULL;

	T_EQ(nic_qp_create(s->pd, &in, &qp), 0, "extra QP");
	if (!qp || at == AT_RESET)
		return qp;
	T_EQ(nic_qp_modify(qp, &a, PAIR_RC_INIT_MASK, p->now, NULL), 0, "extra QP to INIT");
	a = (struct nic_qp_attr){ .qp_state = ODPEMU_QPS_RTR, .path_mtu = ODPEMU_MTU_1024,
		.dest_qp_num = nic_qp_num(p->s[0].qp), .rq_psn = 500, .max_dest_rd_atomic = 1 };
	memcpy(a.ah_attr.dgid, p->s[0].gid.raw, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	T_EQ(nic_qp_modify(qp, &a, PAIR_RC_RTR_MASK, p->now, NULL), 0, "extra QP to RTR");
	return qp;
}

static uint64_t drops_sum(const uint64_t *d)
{
	uint64_t t = 0;

	for (unsigned r = 0; r < NIC_DROP__COUNT; r++)
		t += d[r];
	return t;
}

static void test_rx_drops_counted(void)
{
	for (unsigned i = 0; i < T_ARRAY_SIZE(drop_cases); i++) {
		const struct drop_case *c = &drop_cases[i];
		struct pair *p = pair_new(NULL);
		struct nic_qp *qp = c->at == AT_RTS ? p->s[1].qp : extra_qp(p, c->at);
		uint32_t base = c->at == AT_RTS && !(roce_opcode_table[c->opcode].mask &
			ROCE_M_RESP) ? 101 : c->at == AT_RTS ? 100 : 500;	/* connect_rc */
		struct roce_hdr h = { .bth = { .opcode = c->opcode, .ackreq = true,
			.psn = (base + (uint32_t)c->psn) & ROCE_PSN_MASK } };
		static const uint8_t payload[64];
		struct nic_counters d0, d1;
		struct nic_qp_counters q0, q1;

		if (!qp) {
			pair_free(p);
			continue;
		}
		h.aeth.syndrome = 0x1f;		/* an ACK, credits invalid */
		nic_counters(p->s[1].nic, &d0);
		nic_qp_counters(qp, &q0);
		pair_inject_qp(p, 1, qp, &h, payload, roce_opcode_table[c->opcode].mask &
			       ROCE_M_PAYLOAD ? sizeof(payload) : 0);
		nic_counters(p->s[1].nic, &d1);
		nic_qp_counters(qp, &q1);
		T_EQ(d1.pkts_received - d0.pkts_received, 1, c->what);
		T_CHECK(d1.drops[c->why] - d0.drops[c->why] == 1 &&
			drops_sum(d1.drops) - drops_sum(d0.drops) == 1, "%s: device drops %s "
			"+%llu of +%llu, want +1 of +1", c->what, nic_drop_reason_str(c->why),
			(unsigned long long)(d1.drops[c->why] - d0.drops[c->why]),
			(unsigned long long)(drops_sum(d1.drops) - drops_sum(d0.drops)));
		T_CHECK(q1.drops[c->why] - q0.drops[c->why] == 1 &&
			drops_sum(q1.drops) - drops_sum(q0.drops) == 1, "%s: QP drops %s +%llu "
			"of +%llu, want +1 of +1", c->what, nic_drop_reason_str(c->why),
			(unsigned long long)(q1.drops[c->why] - q0.drops[c->why]),
			(unsigned long long)(drops_sum(q1.drops) - drops_sum(q0.drops)));
		if (qp != p->s[1].qp)
			T_EQ(nic_qp_destroy(qp), 0, "extra QP destroyed");
		pair_free(p);
	}
}

/* One behaviour per case; meson runs each as its own test (tests/nic/meson.build passes
 * its list to --check, so a case missing there fails the suite). */
static const struct t_case cases[] = {
	{ "send-sizes", test_send_sizes },
	{ "send-imm-inline-unsignaled", test_send_imm_inline_unsignaled },
	{ "write-read", test_write_read },
	{ "atomics", test_atomics },
	{ "flush", test_flush },
	{ "bad-rkey-flush", test_bad_rkey_flush },
	{ "flush-persist", test_flush_persist },
	{ "recv-too-small", test_recv_too_small },
	{ "rnr", test_rnr },
	{ "loss-retransmit", test_loss_retransmit },
	{ "resend-overtaken", test_resend_overtaken },
	{ "resend-acked", test_resend_acked },
	{ "odp-responder-stall", test_odp_responder_stall },
	{ "odp-responder-rnr", test_odp_responder_rnr },
	{ "odp-fault-fails", test_odp_fault_fails },
	{ "odp-requester-read-landing", test_odp_requester_and_read_landing },
	{ "odp-read-landing-large", test_odp_read_landing_large },
	{ "dereg-and-rekey", test_dereg_and_rekey },
	{ "dereg-while-faulting", test_dereg_while_faulting },
	{ "bad-lkey", test_bad_lkey },
	{ "ud", test_ud },
	{ "sq-wraps", test_sq_wraps },
	{ "post-list-one-ack", test_post_list_one_ack },
	{ "ud-many", test_ud_many },
	{ "cq-notify", test_cq_notify },
	{ "responder-errors", test_responder_errors },
	{ "odp-fault-ahead", test_odp_fault_ahead },
	{ "rx-drops-counted", test_rx_drops_counted },
};
#define NCASES T_ARRAY_SIZE(cases)

/* --check NAME...: exactly the table's names, each once (the meson list is complete). */
static int check_list(int n, char **names)
{
	int bad = n != (int)NCASES;

	for (size_t i = 0; i < NCASES; i++) {
		int seen = 0;

		for (int k = 0; k < n; k++)
			seen += !strcmp(names[k], cases[i].name);
		if (seen != 1) {
			printf("case %s is listed %d times in tests/nic/meson.build\n", cases[i].name,
			       seen);
			bad = 1;
		}
	}
	return bad;
}

/* usage: test-rc-ops [--seed N] [--case NAME | --check NAME...]; no case: all of them. */
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--check"))
			return check_list(argc - i - 1, argv + i + 1);
	rng.s = t_seed(argc, argv, 1);
	if (t_run_cases(argc, argv, cases, NCASES))
		return 1;
	return t_done("nic-rc-ops");
}
