/* SPDX-License-Identifier: MIT */
/* Focused tests of the verbs objects around the transport: SRQ, its limit event and its
 * error (a WQE it cannot take), CQ overflow and notification, QP transitions (SQD drain,
 * reset and reconnect), implicit ODP, advise (prefetch), pinned-MR decoherence,
 * deregistration with traffic in flight. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "t.h"

#define RW (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ | \
	    ODPEMU_ACCESS_REMOTE_ATOMIC)
#define BUF (256 * 1024)

static struct nic_send_wr wr_of(enum odpemu_wr_opcode op, struct nic_sge *s, void *dst,
				struct nic_mr *mr, uint64_t id)
{
	return (struct nic_send_wr){ .wr_id = id, .opcode = op, .send_flags = ODPEMU_SEND_SIGNALED,
		.sg_list = s, .num_sge = s ? 1 : 0, .remote_addr = (uint64_t)(uintptr_t)dst,
		.rkey = mr ? nic_mr_rkey(mr) : 0 };
}

/* A QP of side 1 on an SRQ, connected to a new QP of side 0. */
static void test_srq(void)
{
	struct pair *p = pair_new(NULL);
	struct nic_srq *srq;
	struct pair_bufs x;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW, NULL);
	T_EQ(nic_srq_create(p->s[1].pd, 8, 1, &srq), 0, "srq create");
	T_EQ(nic_srq_create(p->s[1].pd, 0, 1, &srq) == -EINVAL, 1, "srq of 0 WRs refused");
	for (unsigned i = 0; i < 4; i++) {
		struct nic_sge s = pair_sge(x.b + i * 4096, 4096, x.mb);
		struct nic_recv_wr r = { i, &s, 1 };

		T_EQ(nic_srq_post_recv(srq, &r, 0), 0, "srq post");
	}
	T_EQ(nic_srq_arm(srq, 3), 0, "arm limit 3");
	/* Swap side 1's RC QP for one on the SRQ: destroy, create, connect by hand. */
	struct nic_qp_init qi = { .type = ODPEMU_QPT_RC, .send_cq = p->s[1].scq,
		.recv_cq = p->s[1].rcq, .srq = srq, .max_send_wr = 16, .max_send_sge = 1 };
	struct nic_qp *old = p->s[1].qp, *q;

	T_EQ(nic_qp_create(p->s[1].pd, &qi, &q), 0, "qp on srq");
	T_EQ(nic_srq_destroy(srq), -EBUSY, "srq in use");
	struct nic_qp_attr a;

	T_EQ(nic_qp_query(old, &a), 0, "query");
	struct nic_qp_attr i1 = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
		.qp_access_flags = ODPEMU_ACCESS_REMOTE_WRITE };
	T_EQ(nic_qp_modify(q, &i1, PAIR_RC_INIT_MASK, 0, NULL), 0, "init");
	a.qp_state = ODPEMU_QPS_RTR;
	a.rq_psn = 100;		/* side 0 will send from PSN 100 */
	T_EQ(nic_qp_modify(q, &a, PAIR_RC_RTR_MASK, 0, NULL), 0, "rtr");
	p->s[1].qp = q;
	/* Point side 0's QP at the new one: RESET and reconnect it. */
	struct nic_qp_attr r0 = { .qp_state = ODPEMU_QPS_RESET };
	T_EQ(nic_qp_modify(p->s[0].qp, &r0, ODPEMU_QP_STATE, 0, NULL), 0, "reset side 0");
	T_EQ(nic_qp_query(p->s[0].qp, &a), 0, "query 0");
	T_EQ(nic_qp_modify(p->s[0].qp, &i1, PAIR_RC_INIT_MASK, 0, NULL), 0, "init 0");
	a.qp_state = ODPEMU_QPS_RTR;
	a.dest_qp_num = nic_qp_num(q);
	a.rq_psn = 100;
	T_EQ(nic_qp_modify(p->s[0].qp, &a, PAIR_RC_RTR_MASK, 0, NULL), 0, "rtr 0");
	a.qp_state = ODPEMU_QPS_RTS;
	a.sq_psn = 100;
	T_EQ(nic_qp_modify(p->s[0].qp, &a, PAIR_RC_RTS_MASK, 0, NULL), 0, "rts 0");
	a.sq_psn = 100;
	T_EQ(nic_qp_modify(q, &a, PAIR_RC_RTS_MASK, 0, NULL), 0, "rts 1");
	for (unsigned i = 0; i < 2; i++) {
		struct nic_sge s = pair_sge(x.a, 100, x.ma);
		struct nic_send_wr w = wr_of(ODPEMU_WR_SEND, &s, NULL, NULL, i);

		T_EQ(pair_post_send(p, 0, &w), 0, "send to srq qp");
	}
	pair_settle(p);
	T_CHECK(pair_poll(p, 1, false, &wc) && wc.status == ODPEMU_WC_SUCCESS, "srq recv 1");
	T_EQ(wc.wr_id, 0, "first srq wqe");
	T_CHECK(pair_poll(p, 1, false, &wc) && wc.status == ODPEMU_WC_SUCCESS, "srq recv 2");
	T_EQ(p->s[1].events[ODPEMU_EVENT_SRQ_LIMIT_REACHED], 1, "limit event once");
	T_EQ(nic_qp_modify(q, &(struct nic_qp_attr){ .qp_state = ODPEMU_QPS_ERR },
		ODPEMU_QP_STATE, 0, NULL), 0, "srq qp to ERR");
	T_EQ(p->s[1].events[ODPEMU_EVENT_QP_LAST_WQE_REACHED], 1, "last WQE event");
	T_EQ(nic_qp_destroy(q), 0, "destroy the SRQ's QP");
	T_EQ(nic_srq_destroy(srq), 0, "srq destroy (after its QP)");
	p->s[1].qp = old;
	pair_bufs_free(&x);
	pair_free(p);
}

/* A receive WQE the SRQ cannot take (nic_srq_post_recv_bad, emu/'s malformed SRQ slot):
 * SRQ_ERR once, every QP on it to ERR with QP_FATAL (its send queue flushed), the SRQ
 * takes nothing more, no QP is created on it and one on it cannot leave RESET. */
static void test_srq_error(void)
{
	struct pair *p = pair_new(NULL);
	struct nic_qp_init qi = { .type = ODPEMU_QPT_RC, .send_cq = p->s[1].scq,
		.recv_cq = p->s[1].rcq, .max_send_wr = 4, .max_send_sge = 1 };
	struct nic_qp_attr init = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
		.qp_access_flags = ODPEMU_ACCESS_REMOTE_WRITE };
	struct nic_qp_attr reset = { .qp_state = ODPEMU_QPS_RESET };
	unsigned *ev = p->s[1].events;
	struct nic_qp *q[2], *late;
	struct nic_recv_wr r = { 7, NULL, 0 };
	struct nic_wc wc;

	T_EQ(nic_srq_create(p->s[1].pd, 8, 1, &qi.srq), 0, "srq create");
	T_EQ(nic_srq_post_recv(qi.srq, &r, 0), 0, "a good WQE first");
	for (int i = 0; i < 2; i++) {
		T_EQ(nic_qp_create(p->s[1].pd, &qi, &q[i]), 0, "qp on the srq");
		T_EQ(nic_qp_modify(q[i], &init, PAIR_RC_INIT_MASK, 0, NULL), 0, "qp to INIT");
	}
	T_CHECK(!nic_srq_in_error(qi.srq), "a fresh SRQ is not in error");
	T_EQ(nic_srq_post_recv_bad(qi.srq, 0), 0, "bad WQE");
	T_EQ(nic_srq_post_recv_bad(qi.srq, 0), 0, "bad WQE again");
	T_CHECK(nic_srq_in_error(qi.srq), "the SRQ is in error");
	T_EQ(ev[ODPEMU_EVENT_SRQ_ERR], 1, "SRQ_ERR once");
	T_EQ(ev[ODPEMU_EVENT_QP_FATAL], 2, "QP_FATAL for each QP on the SRQ");
	for (int i = 0; i < 2; i++)
		T_EQ(nic_qp_state(q[i]), ODPEMU_QPS_ERR, "the SRQ's QPs are in ERR");
	T_EQ(nic_srq_post_recv(qi.srq, &r, 0), -EPERM, "the failed SRQ takes no WQE");
	T_EQ(nic_qp_create(p->s[1].pd, &qi, &late), -EINVAL, "no new QP on the failed SRQ");
	T_EQ(nic_qp_modify(q[0], &reset, ODPEMU_QP_STATE, 0, NULL), 0, "ERR to RESET");
	T_EQ(nic_qp_modify(q[0], &init, PAIR_RC_INIT_MASK, 0, NULL), -EINVAL,
	     "a QP of the failed SRQ cannot leave RESET");
	T_CHECK(!nic_cq_poll(p->s[1].rcq, &wc, 1), "no receive completes: the SRQ's WQEs stay");
	for (int i = 0; i < 2; i++)
		T_EQ(nic_qp_destroy(q[i]), 0, "destroy the QPs");
	T_EQ(nic_srq_destroy(qi.srq), 0, "the failed SRQ is destroyed as any");
	pair_free(p);
}

static void test_cq_overflow(void)
{
	struct pair *p = pair_new(NULL);
	struct nic_cq *small;
	struct pair_bufs x;
	struct nic_wc wc[8];

	pair_bufs_new(p, &x, BUF, RW, RW, NULL);
	T_EQ(nic_cq_create(p->s[0].nic, 0, &small), -EINVAL, "cq of 0");
	struct nic_sge s = pair_sge(x.a, 10, x.ma);
	struct nic_send_wr w;

	/* Overflow: a 4-entry CQ takes 5 completions -> CQ_ERR. */
	T_EQ(nic_cq_create(p->s[0].nic, 4, &small), 0, "small cq");
	struct nic_qp_init qi = { .type = ODPEMU_QPT_UD, .send_cq = small, .recv_cq = small,
		.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 };
	struct nic_qp *ud;

	T_EQ(nic_qp_create(p->s[0].pd, &qi, &ud), 0, "ud on small cq");
	T_EQ(nic_cq_destroy(small), -EBUSY, "cq in use");
	pair_ud_up(ud, 1, 0);
	w = wr_of(ODPEMU_WR_SEND, &s, NULL, NULL, 9);
	w.ud_dgid = p->s[1].gid;
	w.remote_qpn = nic_qp_num(p->s[1].ud);
	w.remote_qkey = 0x1234;
	for (int i = 0; i < 5; i++)
		T_EQ(nic_post_send(ud, &w, 0), 0, "ud send");
	pair_settle(p);
	T_EQ(p->s[0].events[ODPEMU_EVENT_CQ_ERR], 1, "CQ_ERR on overflow");
	T_EQ(nic_cq_poll(small, wc, 8), -EIO, "overflowed CQ refuses polls");
	T_EQ(nic_qp_destroy(ud), 0, "destroy ud");
	T_EQ(nic_cq_destroy(small), 0, "destroy small cq");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_sqd_and_reconnect(void)
{
	struct pair *p = pair_new(NULL);
	struct nic_qp_attr a = { .qp_state = ODPEMU_QPS_SQD, .en_sqd_async_notify = 1 };
	struct pair_bufs x;
	struct nic_wc wc;
	const char *why = NULL;

	pair_bufs_new(p, &x, BUF, RW, RW, NULL);
	struct nic_sge s = pair_sge(x.a, 3000, x.ma);
	struct nic_send_wr w = wr_of(ODPEMU_WR_RDMA_WRITE, &s, x.b, x.mb, 1);

	T_EQ(nic_qp_modify(p->s[0].qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_EN_SQD_ASYNC_NOTIFY, 0,
			   &why), 0, why ? why : "RTS->SQD");
	T_EQ(pair_post_send(p, 0, &w), 0, "post in SQD");
	pair_settle(p);
	T_CHECK(!pair_poll(p, 0, true, &wc), "SQD starts nothing new");
	T_EQ(p->s[0].events[ODPEMU_EVENT_SQ_DRAINED], 1, "SQ_DRAINED");
	a.qp_state = ODPEMU_QPS_RTS;
	T_EQ(nic_qp_modify(p->s[0].qp, &a, ODPEMU_QP_STATE, 0, &why), 0, why ? why : "SQD->RTS");
	pair_settle(p);
	T_CHECK(pair_poll(p, 0, true, &wc) && wc.status == ODPEMU_WC_SUCCESS, "sent after SQD");
	/* Illegal transitions are refused with a reason. */
	a.qp_state = ODPEMU_QPS_RTR;
	T_EQ(nic_qp_modify(p->s[0].qp, &a, ODPEMU_QP_STATE, 0, &why), -EINVAL, "RTS->RTR");
	T_CHECK(why != NULL, "reason given");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_implicit_and_advise(void)
{
	struct pair *p = pair_new(NULL);
	struct nic_mr_init in = { 0, UINT64_MAX, RW | ODPEMU_ACCESS_ON_DEMAND, 0 };
	struct nic_mr *imp = NULL;
	struct iopt_counters c;
	struct pair_bufs x;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, PAIR_NO_MR, NULL);
	T_EQ(nic_mr_reg(p->s[1].pd, &in, &imp), 0, "implicit ODP MR");
	T_CHECK(nic_attr(p->s[1].nic)->odp.general_caps & ODPEMU_ODP_SUPPORT_IMPLICIT,
		"IMPLICIT cap advertised");
	/* Prefetch the first 128 KiB for write: no fault on the WRITE afterwards. */
	T_EQ(nic_mr_advise(imp, ODPEMU_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			   (uint64_t)(uintptr_t)x.b, 128 * 1024, 0), 0, "advise");
	pair_settle(p);
	iopt_counters_get(nic_mr_iopt(imp), &c);
	T_EQ(c.page_prefetch, 32, "32 pages prefetched");
	T_EQ(c.page_faults, 0, "no faults yet");
	struct nic_sge s = pair_sge(x.a, 100000, x.ma);
	struct nic_send_wr w = wr_of(ODPEMU_WR_RDMA_WRITE, &s, x.b, imp, 1);

	T_EQ(pair_post_send(p, 0, &w), 0, "write into implicit MR");
	pair_settle(p);
	T_CHECK(pair_poll(p, 0, true, &wc) && wc.status == ODPEMU_WC_SUCCESS, "write ok");
	T_CHECK(memcmp(x.a, x.b, 100000) == 0, "data");
	iopt_counters_get(nic_mr_iopt(imp), &c);
	T_EQ(c.page_faults, 0, "prefetched pages did not fault");
	T_EQ(nic_mr_advise(x.ma, 0, (uint64_t)(uintptr_t)x.a, 4096, 0), -EOPNOTSUPP,
	     "advise on a pinned MR");
	T_EQ(nic_mr_dereg(imp), 0, "dereg implicit");
	pair_bufs_free(&x);
	pair_free(p);
}

static void test_decoherence_and_dereg_in_flight(void)
{
	struct pair *p = pair_new(NULL);
	struct pair_bufs x;
	struct nic_wc wc;

	pair_bufs_new(p, &x, BUF, RW, RW, NULL);
	struct nic_sge s = pair_sge(x.a, 50000, x.ma);
	struct nic_send_wr w = wr_of(ODPEMU_WR_RDMA_WRITE, &s, x.b, x.mb, 1);

	nic_host_invalidate(p->s[1].nic, 1, (uint64_t)(uintptr_t)x.b, 4096);
	T_EQ(p->s[1].events[ODPEMU_EVENT_MR_DECOHERENCE], 1, "pinned MR: decoherence event");
	/* Deregister the target while its packets are on the wire: the rest NAK. */
	T_EQ(pair_post_send(p, 0, &w), 0, "write");
	T_CHECK(p->qcount > 0, "packets in flight");
	T_EQ(nic_mr_dereg(x.mb), 0, "dereg with traffic in flight");
	x.mb = NULL;
	memset(x.b, 0, BUF);
	pair_settle(p);
	T_CHECK(pair_poll(p, 0, true, &wc), "completion");
	T_EQ(wc.status, ODPEMU_WC_REM_ACCESS_ERR, "write to a deregistered MR");
	for (unsigned i = 0; i < BUF; i++)
		if (x.b[i]) {
			T_CHECK(0, "byte %u landed after deregistration", i);
			break;
		}
	pair_bufs_free(&x);
	pair_free(p);
}

int main(int argc, char **argv)
{
	(void)t_seed(argc, argv, 1);
	test_srq();
	test_srq_error();
	test_cq_overflow();
	test_sqd_and_reconnect();
	test_implicit_and_advise();
	test_decoherence_and_dereg_in_flight();
	return t_done("nic-objects");
}
