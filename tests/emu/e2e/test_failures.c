/* SPDX-License-Identifier: MIT */
/*
 * Failures as hardware shows them:
 *  - rnr_retry 0, rnr fault policy, a slow fault handler: RNR_RETRY_EXC_ERR (ConnectX ODP
 *    with rnr_retry 0 turns every responder fault into a QP error);
 *  - a client killed with SIGKILL mid-traffic: the daemon frees everything it owned (the
 *    device's object counts return to zero) and its peer's QP ends in RETRY_EXC_ERR;
 *  - a daemon killed: its clients get DEVICE_FATAL, poll_cq fails, control calls fail with
 *    ENODEV, and nothing hangs.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "t.h"

#define LEN (4u << 20)
#define ALL_ACCESS (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | \
		    ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC)

static int write_once(struct h_side *s, struct odpemu_mr *lmr, void *buf, uint64_t raddr,
		      uint32_t rkey, uint32_t len, int timeout_ms)
{
	struct odpemu_sge sge = { (uintptr_t)buf, len, lmr->lkey };
	struct odpemu_send_wr wr = { .opcode = ODPEMU_WR_RDMA_WRITE, .sg_list = &sge,
		.num_sge = 1, .send_flags = ODPEMU_SEND_SIGNALED, .wr.rdma = { raddr, rkey } }, *bad;
	struct odpemu_wc wc;

	if (odpemu_post_send(s->qp, &wr, &bad))
		return -1;
	return h_poll(s->cq, &wc, 1, timeout_ms) == 1 ? (int)wc.status : -2;
}

static void rnr_retry_zero(struct h_env *e, struct odpemu_context **ctx)
{
	struct h_pair p = { .s = { { .ctx = ctx[0] }, { .ctx = ctx[1] } } };
	struct h_qp_opts o;
	uint8_t *t = h_cold(LEN), *l = h_cold(LEN);
	struct odpemu_mr *mr, *lmr;
	unsigned long long rnr_exc;
	int st;

	T_EQ(odpemu_set_inject(ctx[1], "fault-delay-us", "20000"), 0, "set fault delay");
	h_qp_opts_default(&o);
	o.policy = ODPEMU_FAULT_POLICY_RNR;
	o.rnr_retry = 0;
	if (h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	mr = odpemu_reg_mr(p.s[1].pd, t, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	lmr = odpemu_reg_mr(p.s[0].pd, l, LEN, ALL_ACCESS);	/* pinned: no local fault */
	if (!mr || !lmr) {
		T_CHECK(0, "reg_mr: %m");
		return;
	}
	rnr_exc = h_counter(ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "wc_err_rnr_exc");
	st = write_once(&p.s[0], lmr, l, (uintptr_t)t, mr->rkey, 65536, 20000);
	T_EQ(st, ODPEMU_WC_RNR_RETRY_EXC_ERR, "WRITE into a cold ODP MR, rnr_retry 0");
	T_EQ(h_counter(ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "wc_err_rnr_exc") - rnr_exc, 1,
	     "the requester's device counts the RNR_RETRY_EXC_ERR completion");
	T_CHECK(h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "rnr_naks_sent") > 0,
		"the responder sent no RNR NAK");
	printf("rnr_retry 0 + rnr policy + 20 ms faults: %s\n",
	       odpemu_wc_status_str((enum odpemu_wc_status)st));
	odpemu_set_inject(ctx[1], "fault-delay-us", "0");
	odpemu_dereg_mr(mr);
	odpemu_dereg_mr(lmr);
	h_pair_down(&p);
}

/* ---- the killed client: a child process owns side 1 ---- */

struct child_info {
	uint32_t qpn, rkey;
	uint64_t addr;
	union odpemu_gid gid;
};

static void child(struct h_env *e, int wr_fd, int rd_fd, const struct h_qp_opts *o)
{
	struct h_side s = { .ctx = h_open(e, 1) };
	uint8_t *buf = h_cold(LEN);
	struct odpemu_mr *mr;
	struct child_info ci;
	uint32_t peer_qpn;
	union odpemu_gid peer_gid;

	if (h_side_up(&s, o) || !(mr = odpemu_reg_mr(s.pd, buf, LEN, ALL_ACCESS |
						       ODPEMU_ACCESS_ON_DEMAND)))
		_exit(3);
	ci = (struct child_info){ s.qp->qp_num, mr->rkey, (uintptr_t)buf, s.gid };
	if (write(wr_fd, &ci, sizeof(ci)) != sizeof(ci) ||
	    read(rd_fd, &peer_qpn, 4) != 4 || read(rd_fd, &peer_gid, 16) != 16 ||
	    h_side_connect(&s, peer_qpn, &peer_gid, o))
		_exit(4);
	if (write(wr_fd, "r", 1) != 1)
		_exit(5);
	for (;;)
		pause();	/* serve as the target until SIGKILL */
}

static void killed_client(struct h_env *e, struct odpemu_context **ctx)
{
	struct h_qp_opts o;
	struct h_side s = { .ctx = ctx[0] };
	struct child_info ci;
	uint8_t *l = h_cold(LEN);
	struct odpemu_mr *lmr;
	int to_child[2], from_child[2], st = 0;
	unsigned long long retry_exc;
	char ready;
	pid_t pid;

	h_qp_opts_default(&o);
	o.timeout = 10;		/* 4 ms */
	o.retry_cnt = 2;
	if (pipe(to_child) || pipe(from_child) || (pid = fork()) < 0)
		exit(1);
	if (pid == 0)
		child(e, from_child[1], to_child[0], &o);
	if (h_side_up(&s, &o) || !(lmr = odpemu_reg_mr(s.pd, l, LEN, ALL_ACCESS)) ||
	    read(from_child[0], &ci, sizeof(ci)) != sizeof(ci) ||
	    write(to_child[1], &s.qp->qp_num, 4) != 4 || write(to_child[1], &s.gid, 16) != 16 ||
	    h_side_connect(&s, ci.qpn, &ci.gid, &o) || read(from_child[0], &ready, 1) != 1) {
		T_CHECK(0, "killed client: setup failed");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return;
	}
	for (int i = 0; i < 8; i++)
		T_EQ(write_once(&s, lmr, l, ci.addr + i * 65536u, ci.rkey, 65536, 20000),
		     ODPEMU_WC_SUCCESS, "WRITE to the live client");
	retry_exc = h_counter(ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "wc_err_retry_exc");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < 50 && st == 0; i++)	/* the daemon frees the session at once */
		st = write_once(&s, lmr, l, ci.addr, ci.rkey, 4096, 20000);
	T_EQ(st, ODPEMU_WC_RETRY_EXC_ERR, "WRITE to the killed client's QP");
	T_EQ(h_counter(ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "wc_err_retry_exc") - retry_exc, 1,
	     "the surviving device counts the RETRY_EXC_ERR completion");
	for (int i = 0; i < 100 && h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "qps"); i++)
		usleep(10000);
	T_EQ(h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "qps"), 0, "QPs left on host b");
	T_EQ(h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "mrs"), 0, "MRs left on host b");
	T_EQ(h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "pds"), 0, "PDs left on host b");
	T_EQ(h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "sessions"), 1, "sessions on host b");
	printf("killed client: objects freed, peer saw %s\n",
	       odpemu_wc_status_str((enum odpemu_wc_status)st));
	odpemu_dereg_mr(lmr);
	odpemu_destroy_qp(s.qp);
	odpemu_destroy_cq(s.cq);
	odpemu_dealloc_pd(s.pd);
}

static void killed_daemon(struct h_env *e, struct odpemu_context *ctx)
{
	struct odpemu_async_event ev;
	struct odpemu_wc wc;
	struct odpemu_cq *cq = odpemu_create_cq(ctx, 16, NULL, NULL, 0);
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	int rc, n = 0;

	T_CHECK(cq != NULL, "create_cq before the kill");
	h_daemon_stop(e, 0, SIGKILL);
	T_CHECK(poll(&pfd, 1, 5000) == 1, "async fd not readable after the daemon died");
	rc = odpemu_get_async_event(ctx, &ev);
	T_CHECK(rc == 0 && ev.event_type == ODPEMU_EVENT_DEVICE_FATAL,
		"want DEVICE_FATAL, got rc %d type %d", rc, rc ? -1 : (int)ev.event_type);
	if (!rc)
		odpemu_ack_async_event(&ev);
	for (int i = 0; i < 5000 && (n = odpemu_poll_cq(cq, 1, &wc)) == 0; i++)
		usleep(1000);
	T_CHECK(n < 0, "poll_cq on a dead device returned %d, want < 0", n);
	T_CHECK(odpemu_alloc_pd(ctx) == NULL && errno == ENODEV, "alloc_pd on a dead device: "
		"errno %d, want ENODEV", errno);
	odpemu_destroy_cq(cq);
	printf("killed daemon: DEVICE_FATAL, poll_cq %d, alloc_pd ENODEV\n", n);
}

static void failures(struct h_env *e)
{
	struct odpemu_context **ctx = e->ctx;

	rnr_retry_zero(e, ctx);
	killed_client(e, ctx);
	killed_daemon(e, ctx[0]);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "emu-failures", .watchdog_s = 300,
		.open = H_OPEN_BOTH, .body = failures };

	return h_main(argc, argv, &t);
}
