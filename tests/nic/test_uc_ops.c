/* SPDX-License-Identifier: MIT */
/* Focused tests of the UC transport (IBA 9.4; nic/uc.c), one behaviour per function, on the
 * two-NIC bench: multi-packet SEND and WRITE_WITH_IMM land and complete once sent; the
 * responder never answers; a lost packet drops its message and the next one lands; refused
 * requests (no receive WQE, R_Key, QP access, an ODP fault under rnr) drop the message and
 * leave the QP in RTS; what UC cannot carry is refused at post. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "roce.h"
#include "t.h"

#define RW (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE)
#define BUF (64 * 1024)

static struct t_rng rng;

/* A UC pair with a buffer on each side; side 0 sends, side 1 receives. */
static struct pair *uc_pair(struct pair_bufs *x, enum nic_fault_policy policy, unsigned qp_acc,
			    unsigned acc_b)
{
	struct pair *p = pair_new(NULL);

	pair_uc_up(p, policy, qp_acc);
	pair_bufs_new(p, x, BUF, RW, acc_b, &rng);
	return p;
}

static void post_recv(struct pair *p, uint64_t wr_id, void *buf, uint32_t len,
		      struct nic_mr *mr)
{
	struct nic_sge sge = pair_sge(buf, len, mr);
	struct nic_recv_wr wr = { wr_id, &sge, 1 };

	T_EQ(nic_post_recv(p->s[1].uc, &wr, p->now), 0, "uc post recv");
}

/* Post one WR of opcode from x.a + off (len bytes) to x.b + roff on side 0's UC QP. */
static int post(struct pair *p, struct pair_bufs *x, enum odpemu_wr_opcode op, uint32_t off,
		uint32_t len, uint32_t roff, uint32_t rkey, uint64_t wr_id)
{
	struct nic_sge s = pair_sge(x->a + off, len, x->ma);
	struct nic_send_wr wr = { .wr_id = wr_id, .opcode = op, .send_flags = ODPEMU_SEND_SIGNALED,
		.sg_list = &s, .num_sge = 1, .imm_data = 0xc0de0000u + (uint32_t)wr_id,
		.remote_addr = (uint64_t)(uintptr_t)x->b + roff, .rkey = rkey };

	return nic_post_send(p->s[0].uc, &wr, p->now);
}

static void expect_sent(struct pair *p, uint64_t wr_id, enum odpemu_wc_opcode op)
{
	struct nic_wc wc = pair_wc(p, 0, true, "uc send completion");

	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "uc send status");
	T_EQ(wc.wr_id, wr_id, "uc send wr_id");
	T_EQ(wc.opcode, op, "uc send opcode");
}

static uint64_t drops(struct pair *p, enum nic_drop_reason why)
{
	struct nic_qp_counters c;

	nic_qp_counters(p->s[1].uc, &c);
	return c.drops[why];
}

static uint64_t msgs_dropped(struct pair *p)
{
	struct nic_qp_counters c;

	nic_qp_counters(p->s[1].uc, &c);
	return c.uc_msgs_dropped;
}

static uint64_t responder_sent(struct pair *p)
{
	struct nic_counters c;

	nic_counters(p->s[1].nic, &c);
	return c.pkts_sent;
}

/* A 5000-byte SEND_WITH_IMM (5 packets at MTU 1024) and an 8000-byte WRITE_WITH_IMM land;
 * the sender completes SEND and RDMA_WRITE, the receiver RECV and RECV_RDMA_WITH_IMM with
 * the immediate data; the responder sends nothing at all. */
static void test_multi_packet(void)
{
	struct pair_bufs x;
	struct pair *p = uc_pair(&x, NIC_FAULT_STALL, ODPEMU_ACCESS_REMOTE_WRITE, RW);
	struct nic_wc wc;

	post_recv(p, 10, x.b, 8192, x.mb);
	post_recv(p, 11, x.b + 60000, 16, x.mb);
	T_EQ(post(p, &x, ODPEMU_WR_SEND_WITH_IMM, 0, 5000, 0, 0, 1), 0, "post send");
	T_EQ(post(p, &x, ODPEMU_WR_RDMA_WRITE_WITH_IMM, 8192, 8000, 16384, nic_mr_rkey(x.mb), 2),
	     0, "post write imm");
	pair_settle(p);
	expect_sent(p, 1, ODPEMU_WC_SEND);
	expect_sent(p, 2, ODPEMU_WC_RDMA_WRITE);
	wc = pair_wc(p, 1, false, "recv of the send");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "recv status");
	T_EQ(wc.opcode, ODPEMU_WC_RECV, "recv opcode");
	T_EQ(wc.wr_id, 10, "recv wr_id");
	T_EQ(wc.byte_len, 5000, "recv byte_len");
	T_CHECK(wc.wc_flags & NIC_WC_WITH_IMM, "send imm flag");
	T_EQ(wc.imm_data, 0xc0de0001u, "send imm");
	T_CHECK(memcmp(x.a, x.b, 5000) == 0, "send data");
	wc = pair_wc(p, 1, false, "recv of the write imm");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "write imm status");
	T_EQ(wc.opcode, ODPEMU_WC_RECV_RDMA_WITH_IMM, "write imm opcode");
	T_EQ(wc.wr_id, 11, "write imm wr_id");
	T_EQ(wc.byte_len, 8000, "write imm byte_len");
	T_EQ(wc.imm_data, 0xc0de0002u, "write imm data");
	T_CHECK(memcmp(x.a + 8192, x.b + 16384, 8000) == 0, "write data");
	T_EQ(responder_sent(p), 0, "the UC responder sent no ACK");
	T_EQ(nic_qp_state(p->s[1].uc), ODPEMU_QPS_RTS, "responder in RTS");
	pair_bufs_free(&x);
	pair_free(p);
}

/* Lose the 2nd packet (a MIDDLE) of a 3-packet message: the message is dropped silently
 * (its LAST counted as UC_SEQ), the sender still completes it, and the next message lands
 * (a SEND in the same receive WQE, which the dropped SEND did not consume). */
static void lost_middle(enum odpemu_wr_opcode op)
{
	bool send = op == ODPEMU_WR_SEND;
	struct pair_bufs x;
	struct pair *p = uc_pair(&x, NIC_FAULT_STALL, ODPEMU_ACCESS_REMOTE_WRITE, RW);
	uint32_t rkey = nic_mr_rkey(x.mb);
	struct nic_wc wc;

	post_recv(p, 20, x.b, 4096, x.mb);
	p->drop_nth = p->sent + 2;
	T_EQ(post(p, &x, op, 0, 3000, 8192, rkey, 1), 0, "post 3-packet message");
	pair_settle(p);
	expect_sent(p, 1, send ? ODPEMU_WC_SEND : ODPEMU_WC_RDMA_WRITE);
	T_CHECK(!pair_poll(p, 1, false, &wc), "the broken message completes nothing");
	T_EQ(drops(p, NIC_DROP_UC_SEQ), 1, "its LAST dropped as UC_SEQ");
	T_EQ(msgs_dropped(p), 1, "one message dropped");
	memset(x.b, 0, BUF);
	T_EQ(post(p, &x, op, 4096, 2500, 8192, rkey, 2), 0, "post the next message");
	pair_settle(p);
	expect_sent(p, 2, send ? ODPEMU_WC_SEND : ODPEMU_WC_RDMA_WRITE);
	wc = pair_wc(p, 1, false, "the next message");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "next message status");
	T_EQ(wc.wr_id, 20, "the same receive WQE");
	T_EQ(wc.byte_len, 2500, "next message byte_len");
	T_CHECK(memcmp(x.a + 4096, x.b + (send ? 0 : 8192), 2500) == 0, "next message data");
	T_EQ(responder_sent(p), 0, "no ACK or NAK");
	T_EQ(nic_qp_state(p->s[1].uc), ODPEMU_QPS_RTS, "responder in RTS");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_lost_middle(void)
{
	lost_middle(ODPEMU_WR_SEND);
	lost_middle(ODPEMU_WR_RDMA_WRITE_WITH_IMM);
}

/* A lost LAST: the next message's FIRST resynchronises the responder, which abandons the
 * broken message (counted) and takes the new one. */
static void test_lost_last(void)
{
	struct pair_bufs x;
	struct pair *p = uc_pair(&x, NIC_FAULT_STALL, ODPEMU_ACCESS_REMOTE_WRITE, RW);
	struct nic_wc wc;

	post_recv(p, 30, x.b, 8192, x.mb);
	p->drop_nth = p->sent + 3;
	T_EQ(post(p, &x, ODPEMU_WR_SEND, 0, 3000, 0, 0, 1), 0, "post");
	T_EQ(post(p, &x, ODPEMU_WR_SEND, 4096, 2000, 0, 0, 2), 0, "post next");
	pair_settle(p);
	expect_sent(p, 1, ODPEMU_WC_SEND);
	expect_sent(p, 2, ODPEMU_WC_SEND);
	wc = pair_wc(p, 1, false, "the next message");
	T_EQ(wc.byte_len, 2000, "only the next message completes");
	T_CHECK(memcmp(x.a + 4096, x.b, 2000) == 0, "next message data");
	T_EQ(msgs_dropped(p), 1, "the abandoned message counted");
	T_CHECK(!pair_poll(p, 1, false, &wc), "nothing else");
	pair_bufs_free(&x);
	pair_free(p);
}

/* What UC cannot carry is refused at post time (EINVAL), as rxe and mlx5 do. */
static void test_post_refused(void)
{
	static const enum odpemu_wr_opcode refused[] = { ODPEMU_WR_RDMA_READ,
		ODPEMU_WR_ATOMIC_CMP_AND_SWP, ODPEMU_WR_ATOMIC_FETCH_AND_ADD, ODPEMU_WR_FLUSH,
		ODPEMU_WR_ATOMIC_WRITE, ODPEMU_WR_SEND_WITH_INV };
	struct pair_bufs x;
	struct pair *p = uc_pair(&x, NIC_FAULT_STALL, ODPEMU_ACCESS_REMOTE_WRITE, RW);
	struct nic_wc wc;

	for (unsigned i = 0; i < T_ARRAY_SIZE(refused); i++)
		T_EQ(post(p, &x, refused[i], 0, 8, 0, nic_mr_rkey(x.mb), i), -EINVAL,
		     odpemu_wr_opcode_str(refused[i]));
	pair_settle(p);
	T_CHECK(!pair_poll(p, 0, true, &wc), "refused WRs complete nothing");
	T_EQ(nic_qp_state(p->s[0].uc), ODPEMU_QPS_RTS, "requester still in RTS");
	T_EQ(post(p, &x, ODPEMU_WR_RDMA_WRITE, 0, 8, 0, nic_mr_rkey(x.mb), 9), 0, "a WRITE is fine");
	pair_settle(p);
	expect_sent(p, 9, ODPEMU_WC_RDMA_WRITE);
	pair_bufs_free(&x);
	pair_free(p);
}

/* A SEND with no receive WQE, a WRITE with a bad R_Key, a WRITE to a QP without
 * REMOTE_WRITE: each message is dropped and counted, no NAK, the QP stays in RTS, and a
 * good message afterwards lands. */
static void test_refused_dropped(void)
{
	struct pair_bufs x;
	struct pair *p = uc_pair(&x, NIC_FAULT_STALL, ODPEMU_ACCESS_REMOTE_WRITE, RW);
	uint32_t rkey = nic_mr_rkey(x.mb);
	struct nic_wc wc;

	T_EQ(post(p, &x, ODPEMU_WR_SEND, 0, 3000, 0, 0, 1), 0, "send, no recv");
	T_EQ(post(p, &x, ODPEMU_WR_RDMA_WRITE, 0, 3000, 0, rkey ^ 0x100, 2), 0, "bad rkey");
	T_EQ(post(p, &x, ODPEMU_WR_RDMA_WRITE, 0, 100, BUF - 50, rkey, 3), 0, "out of range");
	pair_settle(p);
	for (uint64_t id = 1; id <= 3; id++)
		expect_sent(p, id, id == 1 ? ODPEMU_WC_SEND : ODPEMU_WC_RDMA_WRITE);
	T_EQ(drops(p, NIC_DROP_UC_NO_WQE), 3, "the SEND's 3 packets: UC_NO_WQE");
	T_EQ(drops(p, NIC_DROP_UC_ACCESS), 4, "the WRITEs' 3 + 1 packets: UC_ACCESS");
	T_EQ(msgs_dropped(p), 3, "three messages dropped");
	T_EQ(responder_sent(p), 0, "no NAK");
	T_EQ(nic_qp_state(p->s[1].uc), ODPEMU_QPS_RTS, "responder in RTS");
	T_CHECK(!pair_poll(p, 1, false, &wc), "no receive completion");
	post_recv(p, 40, x.b, 4096, x.mb);
	T_EQ(post(p, &x, ODPEMU_WR_SEND, 0, 3000, 0, 0, 4), 0, "good send");
	pair_settle(p);
	expect_sent(p, 4, ODPEMU_WC_SEND);
	wc = pair_wc(p, 1, false, "good send");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "good send lands");
	T_CHECK(memcmp(x.a, x.b, 3000) == 0, "good send data");
	pair_bufs_free(&x);
	pair_free(p);

	p = uc_pair(&x, NIC_FAULT_STALL, 0, RW);	/* the QP forbids remote writes */
	T_EQ(post(p, &x, ODPEMU_WR_RDMA_WRITE, 0, 100, 0, nic_mr_rkey(x.mb), 1), 0, "write");
	pair_settle(p);
	expect_sent(p, 1, ODPEMU_WC_RDMA_WRITE);
	T_EQ(drops(p, NIC_DROP_UC_ACCESS), 1, "no REMOTE_WRITE on the QP: UC_ACCESS");
	T_EQ(x.b[0], 0, "nothing written");
	T_EQ(nic_qp_state(p->s[1].uc), ODPEMU_QPS_RTS, "responder in RTS");
	pair_bufs_free(&x);
	pair_free(p);
}

/* ODP on the UC responder: under stall the first WRITE waits for its fault and lands; under
 * rnr it is dropped (UC_FAULT, no RNR NAK), the fault still fills the page table, and the
 * same WRITE again lands. */
static void odp_responder(enum nic_fault_policy policy)
{
	struct pair_bufs x;
	struct pair *p = uc_pair(&x, policy, ODPEMU_ACCESS_REMOTE_WRITE,
				 RW | ODPEMU_ACCESS_ON_DEMAND);
	uint32_t rkey = nic_mr_rkey(x.mb);
	struct nic_qp_counters c;

	p->fault_latency_ns = 50000;
	T_EQ(post(p, &x, ODPEMU_WR_RDMA_WRITE, 0, 3000, 100, rkey, 1), 0, "cold write");
	pair_settle(p);
	expect_sent(p, 1, ODPEMU_WC_RDMA_WRITE);
	if (policy == NIC_FAULT_STALL) {
		T_CHECK(memcmp(x.a, x.b + 100, 3000) == 0, "stall: the write waited and landed");
	} else {
		T_EQ(drops(p, NIC_DROP_UC_FAULT), 3, "rnr: the message dropped as UC_FAULT");
		T_CHECK(x.b[100] == 0, "rnr: nothing landed");
		T_EQ(post(p, &x, ODPEMU_WR_RDMA_WRITE, 0, 3000, 100, rkey, 2), 0, "again");
		pair_settle(p);
		expect_sent(p, 2, ODPEMU_WC_RDMA_WRITE);
		T_CHECK(memcmp(x.a, x.b + 100, 3000) == 0, "rnr: the later write landed");
	}
	nic_qp_counters(p->s[1].uc, &c);
	T_CHECK(c.faults_resp >= 1, "the responder faulted");
	T_EQ(c.rnr_naks_sent, 0, "no RNR NAK");
	T_EQ(responder_sent(p), 0, "nothing sent by the responder");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_odp_stall(void) { odp_responder(NIC_FAULT_STALL); }
static void test_odp_rnr(void) { odp_responder(NIC_FAULT_RNR); }

/* The device reports what UC does under ODP. */
static void test_odp_caps(void)
{
	struct pair *p = pair_new(NULL);
	const struct nic_device_attr *a = nic_attr(p->s[0].nic);

	T_EQ(a->odp.uc_odp_caps, ODPEMU_ODP_SEND | ODPEMU_ODP_RECV | ODPEMU_ODP_WRITE,
	     "uc_odp_caps");
	pair_free(p);
}

static const struct t_case cases[] = {
	{ "multi-packet", test_multi_packet },
	{ "lost-middle", test_lost_middle },
	{ "lost-last", test_lost_last },
	{ "post-refused", test_post_refused },
	{ "refused-dropped", test_refused_dropped },
	{ "odp-stall", test_odp_stall },
	{ "odp-rnr", test_odp_rnr },
	{ "odp-caps", test_odp_caps },
};

/* usage: test-uc-ops [--seed N] [--case NAME]; no case: all of them. */
int main(int argc, char **argv)
{
	rng.s = t_seed(argc, argv, 1);
	if (t_run_cases(argc, argv, cases, T_ARRAY_SIZE(cases)))
		return 1;
	return t_done("nic-uc-ops");
}
