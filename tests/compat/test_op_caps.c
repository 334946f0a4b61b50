/* SPDX-License-Identifier: MIT */
/*
 * RDMA FLUSH and ATOMIC WRITE between devices that differ in them: host 0's daemon runs the
 * odpemu personality (both offered), host 1's cx5 (neither: mlx5 has no FLUSH and no
 * ATOMIC WRITE). A verbs program linked against the drop-in sees:
 *  - on host 1, ibv_post_send of an ATOMIC WRITE refused with EINVAL and *bad_wr set (the
 *    device does not know the opcode), the QP still working;
 *  - from host 0 to host 1, a FLUSH and (on a second QP pair) an ATOMIC WRITE complete
 *    with IBV_WC_REM_INV_REQ_ERR: host 1's responder NAKs an opcode its device does not
 *    execute as an invalid request (IBA 9.9.3.1 class C), and the target memory is
 *    unchanged; the RDMA WRITE before the FLUSH, an operation host 1 has, succeeds.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "harness.h"
#include "verbs_t.h"
#include "odpemu/verbs_ext.h"
#include "t.h"

#define LEN 65536u


static struct h_env env;
static struct verbs_side s[2];
static uint8_t *lbuf, *rbuf;
static struct ibv_mr *lmr, *rmr;

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS);
}

/* A connected pair: host 0's QP made with the ibv_qp_ex ops, host 1's a plain one. */
struct pair {
	struct ibv_qp *qp, *peer;
	struct ibv_qp_ex *qpx;
};

static int pair_up(struct pair *p)
{
	struct ibv_qp_init_attr_ex a = { .send_cq = s[0].cq, .recv_cq = s[0].cq,
		.qp_type = IBV_QPT_RC, .cap = { 8, 4, 1, 1, 8 }, .pd = s[0].pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE |
				  IBV_QP_EX_WITH_FLUSH };
	struct ibv_qp_init_attr b = { .send_cq = s[1].cq, .recv_cq = s[1].cq,
		.qp_type = IBV_QPT_RC, .cap = { 8, 4, 1, 1, 8 } };

	memset(p, 0, sizeof(*p));
	if (!(p->qp = ibv_create_qp_ex(s[0].ctx, &a)) || !(p->qpx = ibv_qp_to_qp_ex(p->qp)) ||
	    !(p->peer = ibv_create_qp(s[1].pd, &b)))
		return -1;
	return to_init(p->qp) || to_init(p->peer) ||
	       rc_connect(p->qp, p->peer->qp_num, &s[1].gid, 1) ||
	       rc_connect(p->peer, p->qp->qp_num, &s[0].gid, 1) ? -1 : 0;
}

static void pair_down(struct pair *p)
{
	if (p->qp)
		ibv_destroy_qp(p->qp);
	if (p->peer)
		ibv_destroy_qp(p->peer);
}

/* Host 0's next completion (5 s at most). */
static bool next_wc(struct ibv_wc *wc)
{
	int n = 0;

	for (int k = 0; k < 5000 && !(n = ibv_poll_cq(s[0].cq, 1, wc)); k++)
		usleep(1000);
	return n == 1;
}

/* The cx5 side cannot post what its device lacks: EINVAL, *bad_wr the WR. */
static void post_refused(struct pair *p)
{
	uint64_t word = 42;
	struct ibv_sge sge = { (uintptr_t)&word, 8, 0 };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_WRITE, .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)lbuf, lmr->rkey } }, *bad = NULL;
	int rc = ibv_post_send(p->peer, &wr, &bad);

	T_CHECK(rc == EINVAL && bad == &wr, "cx5: post ATOMIC_WRITE: %d (%s), bad_wr %p, want "
		"EINVAL", rc, strerror(rc), (void *)bad);
}

/* WRITE then FLUSH: the WRITE lands, the FLUSH is NAKed. */
static void flush_nak(void)
{
	struct pair p;
	struct ibv_wc wc;

	if (pair_up(&p)) {
		T_CHECK(0, "FLUSH pair: %m");
		goto out;
	}
	post_refused(&p);
	memset(lbuf, 0x5c, 4096);
	ibv_wr_start(p.qpx);
	p.qpx->wr_id = 1;
	p.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(p.qpx, rmr->rkey, (uintptr_t)rbuf);
	ibv_wr_set_sge(p.qpx, lmr->lkey, (uintptr_t)lbuf, 4096);
	p.qpx->wr_id = 2;
	ibv_wr_flush(p.qpx, rmr->rkey, (uintptr_t)rbuf, 4096, IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE);
	T_EQ(ibv_wr_complete(p.qpx), 0, "odpemu: WRITE + FLUSH posted");
	T_CHECK(next_wc(&wc) && wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS,
		"WRITE to cx5: %s", ibv_wc_status_str(wc.status));
	T_CHECK(rbuf[0] == 0x5c && rbuf[4095] == 0x5c, "the WRITE landed");
	T_CHECK(next_wc(&wc) && wc.wr_id == 2 && wc.status == IBV_WC_REM_INV_REQ_ERR,
		"FLUSH to cx5: wr_id %llu %s, want REM_INV_REQ_ERR",
		(unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
out:
	pair_down(&p);
}

/* ATOMIC WRITE: NAKed, the word unchanged. */
static void atomic_write_nak(void)
{
	uint64_t word = 0x0123456789abcdefull, before;
	struct pair p;
	struct ibv_wc wc;

	if (pair_up(&p)) {
		T_CHECK(0, "ATOMIC_WRITE pair: %m");
		goto out;
	}
	memcpy(&before, rbuf + 8192, 8);
	ibv_wr_start(p.qpx);
	p.qpx->wr_id = 3;
	p.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(p.qpx, rmr->rkey, (uintptr_t)rbuf + 8192, &word);
	T_EQ(ibv_wr_complete(p.qpx), 0, "odpemu: ATOMIC_WRITE posted");
	T_CHECK(next_wc(&wc) && wc.wr_id == 3 && wc.status == IBV_WC_REM_INV_REQ_ERR,
		"ATOMIC_WRITE to cx5: %s, want REM_INV_REQ_ERR", ibv_wc_status_str(wc.status));
	T_CHECK(!memcmp(rbuf + 8192, &before, 8), "the NAKed ATOMIC_WRITE changed the target");
out:
	pair_down(&p);
}

static int setup(void)
{
	for (int i = 0; i < 2; i++)
		if (verbs_side_open(&s[i], env.host[i].name))
			return -1;
	lbuf = h_cold(LEN);
	rbuf = h_cold(LEN);
	/* no FLUSH access on host 1: its device cannot grant it */
	lmr = ibv_reg_mr(s[0].pd, lbuf, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rmr = ibv_reg_mr(s[1].pd, rbuf, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	return lmr && rmr ? 0 : -1;
}

int main(void)
{
	const char *a[] = { "--personality", "odpemu", NULL };
	const char *b[] = { "--personality", "cx5", NULL };

	h_up(&env, a, b, 120);
	if (setup()) {
		T_CHECK(0, "setup: %m");
	} else {
		flush_nak();
		atomic_write_nak();
	}
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	if (lmr)
		ibv_dereg_mr(lmr);
	if (rmr)
		ibv_dereg_mr(rmr);
	for (int i = 0; i < 2; i++)
		verbs_side_close(&s[i]);
	if (lbuf)
		munmap(lbuf, LEN + 4096);
	if (rbuf)
		munmap(rbuf, LEN + 4096);
	T_CHECK(h_down(&env) == 0, "the daemons did not stop cleanly");
	return t_done("compat-op-caps");
}
