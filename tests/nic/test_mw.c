/* SPDX-License-Identifier: MIT */
/* Memory windows (IBA 10.6.7; nic/mw.c), one behaviour per function, on the two-NIC bench:
 * side 1 owns the MR and the window and binds it on its RC QP, side 0 reaches the window's
 * rkey with RDMA WRITE/READ/atomics. Inside the window and with its access: success;
 * outside, with another access, after LOCAL_INV or SEND_WITH_INVALIDATE: REM_ACCESS_ERR.
 * A bind the rules refuse completes MW_BIND_ERR and moves the QP to ERR. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "t.h"

#define RW (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ | \
	    ODPEMU_ACCESS_REMOTE_ATOMIC)
#define BUF (64 * 1024)
#define WIN_OFF 4096u		/* the window: [b + WIN_OFF, + WIN_LEN) */
#define WIN_LEN 8192u
#define MW_RW (ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ | \
	       ODPEMU_ACCESS_REMOTE_ATOMIC)

static struct t_rng rng;

/* A pair with a buffer on each side; side 1's MR has acc_b. */
static struct pair *mw_pair(struct pair_bufs *x, unsigned acc_b)
{
	struct pair *p = pair_new(NULL);

	pair_bufs_new(p, x, BUF, RW, acc_b, &rng);
	return p;
}

static struct nic_mw *mw_new(struct pair *p, unsigned type)
{
	struct nic_mw *mw = NULL;

	T_EQ(nic_mw_alloc(p->s[1].pd, type, &mw), 0, "alloc mw");
	return mw;
}

/* Bind mw on side 1's QP to [off, off+len) of x->mb with access; the new rkey is the old
 * one's key byte plus one (ibv_inc_rkey). Returns the completion's status. */
static enum odpemu_wc_status bind(struct pair *p, struct pair_bufs *x, struct nic_mw *mw,
				  uint64_t off, uint64_t len, unsigned access)
{
	uint32_t old = nic_mw_rkey(mw), rkey = (old & ~0xffu) | ((old + 1) & 0xffu);
	struct nic_send_wr wr = { .wr_id = 9, .opcode = ODPEMU_WR_BIND_MW,
		.send_flags = ODPEMU_SEND_SIGNALED, .imm_data = old, .rkey = rkey,
		.remote_addr = (uint64_t)(uintptr_t)x->b + off, .compare_add = len,
		.swap = NIC_BIND_SWAP(x->mb ? nic_mr_lkey(x->mb) : 0, access) };
	struct nic_wc wc = pair_send_wc(p, 1, &wr, "bind");

	T_EQ(wc.opcode, ODPEMU_WC_BIND_MW, "bind completion opcode");
	if (wc.status == ODPEMU_WC_SUCCESS)
		T_EQ(nic_mw_rkey(mw), rkey, "the window took the new rkey");
	return wc.status;
}

/* Side 0 RDMA op of len bytes at window offset off through rkey; the completion status. */
static enum odpemu_wc_status rdma(struct pair *p, struct pair_bufs *x, enum odpemu_wr_opcode op,
				  uint32_t rkey, uint64_t off, uint32_t len)
{
	struct nic_sge s = pair_sge(x->a, len, x->ma);
	struct nic_send_wr wr = { .wr_id = 3, .opcode = op, .send_flags = ODPEMU_SEND_SIGNALED,
		.sg_list = &s, .num_sge = 1,
		.remote_addr = (uint64_t)(uintptr_t)x->b + WIN_OFF + off, .rkey = rkey };

	return pair_send_wc(p, 0, &wr, odpemu_wr_opcode_str(op)).status;
}

static void done(struct pair *p, struct pair_bufs *x, struct nic_mw *mw)
{
	if (mw)
		T_EQ(nic_mw_dealloc(mw), 0, "dealloc mw");
	pair_bufs_free(x);
	pair_free(p);
}

/* Type 1: bound by a WR on the QP; WRITE and READ inside land and come back. */
static void test_type1_write_read(void)
{
	struct pair_bufs x;
	struct pair *p = mw_pair(&x, RW | ODPEMU_ACCESS_MW_BIND);
	struct nic_mw *mw = mw_new(p, ODPEMU_MW_TYPE_1);

	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, MW_RW), ODPEMU_WC_SUCCESS, "type 1 bind");
	T_EQ(rdma(p, &x, ODPEMU_WR_RDMA_WRITE, nic_mw_rkey(mw), 100, 3000), ODPEMU_WC_SUCCESS,
	     "write inside the window");
	T_CHECK(!memcmp(x.b + WIN_OFF + 100, x.a, 3000), "the write landed in the window");
	memset(x.a, 0, 3000);
	T_EQ(rdma(p, &x, ODPEMU_WR_RDMA_READ, nic_mw_rkey(mw), WIN_LEN - 3000, 3000),
	     ODPEMU_WC_SUCCESS, "read at the window's end");
	T_CHECK(!memcmp(x.a, x.b + WIN_OFF + WIN_LEN - 3000, 3000), "the read came back");
	done(p, &x, mw);
}

/* One byte past the window (still inside the MR): REM_ACCESS_ERR. */
static void test_outside_window(void)
{
	struct pair_bufs x;
	struct pair *p = mw_pair(&x, RW | ODPEMU_ACCESS_MW_BIND);
	struct nic_mw *mw = mw_new(p, ODPEMU_MW_TYPE_1);

	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, MW_RW), ODPEMU_WC_SUCCESS, "bind");
	T_EQ(rdma(p, &x, ODPEMU_WR_RDMA_WRITE, nic_mw_rkey(mw), WIN_LEN - 100, 101),
	     ODPEMU_WC_REM_ACCESS_ERR, "write one byte past the window");
	done(p, &x, mw);
}

/* A read-only window refuses a WRITE; the old rkey of a moved type 1 window misses. */
static void test_window_access(void)
{
	struct pair_bufs x;
	struct pair *p = mw_pair(&x, RW | ODPEMU_ACCESS_MW_BIND);
	struct nic_mw *mw = mw_new(p, ODPEMU_MW_TYPE_1);
	uint32_t first;

	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, MW_RW), ODPEMU_WC_SUCCESS, "bind");
	first = nic_mw_rkey(mw);
	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, ODPEMU_ACCESS_REMOTE_READ), ODPEMU_WC_SUCCESS,
	     "rebind read-only");
	T_CHECK(first != nic_mw_rkey(mw), "a type 1 rebind changes the key");
	T_EQ(rdma(p, &x, ODPEMU_WR_RDMA_READ, nic_mw_rkey(mw), 0, 64), ODPEMU_WC_SUCCESS,
	     "read a read-only window");
	T_EQ(rdma(p, &x, ODPEMU_WR_RDMA_WRITE, first, 0, 64), ODPEMU_WC_REM_ACCESS_ERR,
	     "the previous rkey no longer matches");
	done(p, &x, mw);
	p = mw_pair(&x, RW | ODPEMU_ACCESS_MW_BIND);
	mw = mw_new(p, ODPEMU_MW_TYPE_1);
	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, ODPEMU_ACCESS_REMOTE_READ), ODPEMU_WC_SUCCESS,
	     "bind read-only");
	T_EQ(rdma(p, &x, ODPEMU_WR_RDMA_WRITE, nic_mw_rkey(mw), 0, 64), ODPEMU_WC_REM_ACCESS_ERR,
	     "write to a read-only window");
	done(p, &x, mw);
}

/* Type 2: bound, reached, LOCAL_INV, then refused; bound again after the invalidation. */
static void test_type2_local_inv(void)
{
	struct pair_bufs x;
	struct pair *p = mw_pair(&x, RW | ODPEMU_ACCESS_MW_BIND);
	struct nic_mw *mw = mw_new(p, ODPEMU_MW_TYPE_2);
	struct nic_send_wr inv = { .wr_id = 11, .opcode = ODPEMU_WR_LOCAL_INV,
		.send_flags = ODPEMU_SEND_SIGNALED };
	struct nic_wc wc;

	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, MW_RW), ODPEMU_WC_SUCCESS, "type 2 bind");
	T_EQ(rdma(p, &x, ODPEMU_WR_RDMA_WRITE, nic_mw_rkey(mw), 0, 512), ODPEMU_WC_SUCCESS,
	     "write through a type 2 window");
	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, MW_RW), ODPEMU_WC_MW_BIND_ERR,
	     "C10-72: a bound type 2 window is not bound again");
	done(p, &x, mw);

	p = mw_pair(&x, RW | ODPEMU_ACCESS_MW_BIND);
	mw = mw_new(p, ODPEMU_MW_TYPE_2);
	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, MW_RW), ODPEMU_WC_SUCCESS, "type 2 bind");
	inv.imm_data = nic_mw_rkey(mw);
	wc = pair_send_wc(p, 1, &inv, "local inv");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "LOCAL_INV of a bound type 2 window");
	T_EQ(wc.opcode, ODPEMU_WC_LOCAL_INV, "LOCAL_INV completion opcode");
	T_EQ(bind(p, &x, mw, 0, 4096, MW_RW), ODPEMU_WC_SUCCESS, "bound again once free");
	T_EQ(rdma(p, &x, ODPEMU_WR_RDMA_WRITE, nic_mw_rkey(mw), 0, 64),
	     ODPEMU_WC_REM_ACCESS_ERR, "the rebound window [0, 4096) does not hold WIN_OFF");
	done(p, &x, mw);

	p = mw_pair(&x, RW | ODPEMU_ACCESS_MW_BIND);
	mw = mw_new(p, ODPEMU_MW_TYPE_2);
	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, MW_RW), ODPEMU_WC_SUCCESS, "type 2 bind");
	inv.imm_data = nic_mw_rkey(mw);
	T_EQ(pair_send_wc(p, 1, &inv, "local inv").status, ODPEMU_WC_SUCCESS, "LOCAL_INV");
	T_EQ(rdma(p, &x, ODPEMU_WR_RDMA_READ, nic_mw_rkey(mw), 0, 64), ODPEMU_WC_REM_ACCESS_ERR,
	     "read after LOCAL_INV");
	done(p, &x, mw);
}

/* The peer's SEND_WITH_INVALIDATE frees a type 2 window. */
static void test_type2_send_inv(void)
{
	struct pair_bufs x;
	struct pair *p = mw_pair(&x, RW | ODPEMU_ACCESS_MW_BIND);
	struct nic_mw *mw = mw_new(p, ODPEMU_MW_TYPE_2);
	struct nic_sge s = pair_sge(x.a, 16, x.ma);
	struct nic_send_wr wr = { .wr_id = 4, .opcode = ODPEMU_WR_SEND_WITH_INV,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };
	struct nic_wc wc;

	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, MW_RW), ODPEMU_WC_SUCCESS, "type 2 bind");
	T_EQ(pair_post_recv(p, 1, 7, x.b, 64, x.mb), 0, "post recv");
	wr.imm_data = nic_mw_rkey(mw);
	T_EQ(pair_send_wc(p, 0, &wr, "send with inv").status, ODPEMU_WC_SUCCESS, "send with inv");
	wc = pair_wc(p, 1, false, "recv");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "recv status");
	T_CHECK(wc.wc_flags & NIC_WC_WITH_INV, "recv says WITH_INV");
	T_EQ(wc.imm_data, nic_mw_rkey(mw), "recv names the invalidated rkey");
	T_EQ(rdma(p, &x, ODPEMU_WR_RDMA_WRITE, nic_mw_rkey(mw), 0, 64), ODPEMU_WC_REM_ACCESS_ERR,
	     "write after the remote invalidation");
	done(p, &x, mw);
}

/* Each rule of a bind fails it with MW_BIND_ERR and the QP goes to ERR. */
static void bind_refused(unsigned acc_b, unsigned type, uint64_t off, uint64_t len,
			 unsigned access, const char *what)
{
	struct pair_bufs x;
	struct pair *p = mw_pair(&x, acc_b);
	struct nic_mw *mw = mw_new(p, type);

	T_EQ(bind(p, &x, mw, off, len, access), ODPEMU_WC_MW_BIND_ERR, what);
	T_EQ(nic_qp_state(p->s[1].qp), ODPEMU_QPS_ERR, what);
	done(p, &x, mw);
}

static void test_bind_errors(void)
{
	struct pair *p = pair_new(NULL);
	struct nic_mw *mw;

	T_EQ(nic_mw_alloc(p->s[0].pd, 3, &mw), -EINVAL, "type 3 is refused");
	T_EQ(nic_mw_alloc(p->s[0].pd, 0, &mw), -EINVAL, "type 0 is refused");
	pair_free(p);
	bind_refused(RW, ODPEMU_MW_TYPE_1, WIN_OFF, WIN_LEN, MW_RW,
		     "C10-73: an MR without MW_BIND");
	bind_refused(RW | ODPEMU_ACCESS_MW_BIND, ODPEMU_MW_TYPE_1, BUF - 4096, 8192, MW_RW,
		     "C10-75: a window past the MR's end");
	bind_refused(ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_MW_BIND, ODPEMU_MW_TYPE_1, 0, 64,
		     ODPEMU_ACCESS_REMOTE_WRITE, "C10-74: remote write without local write");
	bind_refused(RW | ODPEMU_ACCESS_MW_BIND, ODPEMU_MW_TYPE_2, 0, 0, MW_RW,
		     "a type 2 window of length 0");
	bind_refused(RW | ODPEMU_ACCESS_MW_BIND, ODPEMU_MW_TYPE_1, 0, 64,
		     MW_RW | ODPEMU_ACCESS_ZERO_BASED, "zero-based windows");
}

/* An MR with a bound window is not deregistered (EINVAL, as rxe); a bound window is
 * deallocated (unbound first), and then the MR goes. A window's key is no lkey. */
static void test_dereg_dealloc(void)
{
	struct pair_bufs x;
	struct pair *p = mw_pair(&x, RW | ODPEMU_ACCESS_MW_BIND);
	struct nic_mw *mw = mw_new(p, ODPEMU_MW_TYPE_1);
	struct nic_sge s;
	struct nic_send_wr wr = { .wr_id = 2, .opcode = ODPEMU_WR_SEND,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };

	T_EQ(bind(p, &x, mw, WIN_OFF, WIN_LEN, MW_RW), ODPEMU_WC_SUCCESS, "bind");
	T_EQ(nic_mr_dereg(x.mb), -EINVAL, "dereg of an MR with a bound window");
	s = (struct nic_sge){ (uint64_t)(uintptr_t)x.b + WIN_OFF, 16, nic_mw_rkey(mw) };
	T_EQ(pair_send_wc(p, 1, &wr, "send from a window key").status, ODPEMU_WC_LOC_PROT_ERR,
	     "a window's key as an lkey");
	T_EQ(nic_mw_dealloc(mw), 0, "dealloc a bound window");
	done(p, &x, NULL);	/* the MR deregisters now (checked) */
}

static const struct t_case cases[] = {
	{ "type1-write-read", test_type1_write_read },
	{ "outside-window", test_outside_window },
	{ "window-access", test_window_access },
	{ "type2-local-inv", test_type2_local_inv },
	{ "type2-send-inv", test_type2_send_inv },
	{ "bind-errors", test_bind_errors },
	{ "dereg-dealloc", test_dereg_dealloc },
};

/* usage: test-mw [--seed N] [--case NAME]; no case: all of them. */
int main(int argc, char **argv)
{
	rng.s = t_seed(argc, argv, 1);
	if (t_run_cases(argc, argv, cases, T_ARRAY_SIZE(cases)))
		return 1;
	return t_done("nic-mw");
}
