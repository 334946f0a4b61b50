/* SPDX-License-Identifier: MIT */
/*
 * victim — a peer process killed under traffic. The worker forks a victim that opens host
 * 1 on its own, fills a pinned 1 MiB buffer with a per-page pattern and connects an RC QP
 * to one of the worker's on host 0 (local MR of a drawn kind). The worker READs from the
 * victim (each result checked against the pattern) and WRITEs into the other half of its
 * buffer, WINDOW in flight; after a drawn number of completions it SIGKILLs the victim
 * and keeps posting. Then:
 *  - before the kill, every completion succeeded (or a fault injected into the worker's
 *    own ODP memory explains it: the ledger);
 *  - after it, the QP ends in RETRY_EXC_ERR (the victim's daemon drops what comes to a QP
 *    that is gone), then WR_FLUSH_ERR;
 *  - host 1's daemon has freed the victim's QP and MR (its object list) within 5 s.
 */
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ledger.h"
#include "pattern.h"
#include "round.h"

#define VLEN (1u << 20)			/* the victim's buffer: READs below half, WRITEs above */
#define LLEN (1u << 20)			/* the worker's */
#define SLOT (64u << 10)
#define WINDOW 8u
#define DEPTH 64u
#define PAGE 4096u

struct info {
	uint32_t qpn, rkey;
	uint64_t addr;
	union odpemu_gid gid;
};

struct vop {
	bool busy, read;
	uint32_t off, len;		/* in the victim's buffer */
};

struct victim {
	struct soak_w *w;
	struct h_side s;
	uint8_t *buf;
	struct odpemu_mr *mr;
	enum soak_mem kind;
	struct info peer;
	uint64_t seed;			/* the victim's page patterns */
	struct vop op[WINDOW];		/* op i uses the worker's slot i */
	unsigned inflight, ok;
	bool killed;
	struct ledger l;
};

/* Does data hold the victim's bytes [off, off+len)? Page k of its buffer is the pattern
 * of pat_seed(seed, k). */
static bool victim_bytes(uint64_t seed, uint32_t off, const uint8_t *data, uint32_t len)
{
	uint8_t page[PAGE];

	while (len) {
		uint32_t k = off / PAGE, in = off % PAGE, n = PAGE - in < len ? PAGE - in : len;

		pat_fill(pat_seed(seed, k), page, PAGE);
		if (memcmp(page + in, data, n))
			return false;
		off += n;
		data += n;
		len -= n;
	}
	return true;
}

static void child(struct soak_w *w, int wr_fd, int rd_fd, const struct h_qp_opts *o,
		  uint64_t seed)
{
	struct h_side s = { 0 };
	uint8_t *buf;
	struct odpemu_mr *mr;
	struct info me, peer;
	char go = 'r';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(1);
	s.ctx = soak_open(w, 1);
	buf = mmap(NULL, VLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || h_side_up(&s, o))
		_exit(3);
	for (uint32_t k = 0; k < VLEN / PAGE; k++)
		pat_fill(pat_seed(seed, k), buf + (size_t)k * PAGE, PAGE);
	if (!(mr = soak_reg(w, s.pd, buf, VLEN, SOAK_PINNED)))
		_exit(3);
	me = (struct info){ s.qp->qp_num, mr->rkey, (uintptr_t)buf, s.gid };
	if (write(wr_fd, &me, sizeof(me)) != sizeof(me) ||
	    read(rd_fd, &peer, sizeof(peer)) != sizeof(peer) ||
	    h_side_connect(&s, peer.qpn, &peer.gid, o) || write(wr_fd, &go, 1) != 1)
		_exit(4);
	for (;;)
		pause();	/* the target, until SIGKILL */
}

static void on_wc(void *round, int side, const struct odpemu_wc *wc, void *opp)
{
	struct victim *v = round;
	struct vop *o = opp;
	unsigned slot = (unsigned)(o - v->op);

	(void)side;
	if (wc->status == ODPEMU_WC_SUCCESS) {
		if (o->read && !victim_bytes(v->seed, o->off, v->buf + (size_t)slot * SLOT, o->len))
			soak_fail(v->w->st, "%s: READ of %u bytes at %u from the victim: wrong bytes",
				  v->l.what, o->len, o->off);
		SOAK_ADD(v->w->st->bytes, o->len);
		v->ok++;
	}
	o->busy = false;
	v->inflight--;
}

static bool post(struct victim *v)
{
	struct vop *o = NULL;
	unsigned slot;
	int rc;

	for (slot = 0; slot < WINDOW && !o; slot++)
		if (!v->op[slot].busy)
			o = &v->op[slot];
	if (!o)
		return true;
	slot = (unsigned)(o - v->op);
	o->read = t_below(&v->w->rng, 2);
	o->len = 1 + (uint32_t)t_below(&v->w->rng, SLOT);
	o->off = (uint32_t)t_below(&v->w->rng, VLEN / 2 - o->len + 1) + (o->read ? 0 : VLEN / 2);
	if (!o->read)
		pat_fill(pat_seed(v->w->pat, v->w->nwr++), v->buf + (size_t)slot * SLOT, o->len);
	{
		struct odpemu_sge sge = { (uintptr_t)v->buf + (size_t)slot * SLOT, o->len,
			v->mr->lkey };
		struct odpemu_send_wr wr = { .sg_list = &sge, .num_sge = 1,
			.opcode = o->read ? ODPEMU_WR_RDMA_READ : ODPEMU_WR_RDMA_WRITE,
			.send_flags = ODPEMU_SEND_SIGNALED,
			.wr.rdma = { v->peer.addr + o->off, v->peer.rkey } }, *bad;

		wr.wr_id = ledger_post(&v->l, 0, 0, o);
		if ((rc = odpemu_post_send(v->s.qp, &wr, &bad))) {
			ledger_unpost(&v->l, 0, 0);
			soak_fail(v->w->st, "%s: post_send: %s", v->l.what, strerror(rc));
			return false;
		}
	}
	o->busy = true;
	v->inflight++;
	return true;
}

/* Traffic until kill_after completions, the kill, traffic until the QP fails. */
static void traffic(struct victim *v, pid_t pid, unsigned kill_after)
{
	struct odpemu_cq *cq[2] = { v->s.cq, NULL };
	struct odpemu_qp *qp[2] = { v->s.qp, NULL };
	long long since = soak_ms();
	int n;

	while (!ledger_any_error(&v->l) && soak_ms() - since < SOAK_WAIT_MS) {
		if (!v->killed && v->ok >= kill_after) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			v->killed = v->l.peer_killed[0] = true;
			v->w->st->victim_pid = 0;
			SOAK_ADD(v->w->st->victims_killed, 1);
			since = soak_ms();
		}
		if (v->inflight < WINDOW && !post(v))
			break;
		if ((n = ledger_poll(&v->l, cq, on_wc, v)) < 0)
			break;
		if (!n)
			soak_nap();
		else if (!v->killed)
			since = soak_ms();
	}
	ledger_drain(&v->l, cq, on_wc, v, SOAK_WAIT_MS, true);
	if (ledger_outstanding(&v->l))
		ledger_teardown(&v->l, qp, cq, on_wc, v);
}

/* After the kill the QP fails with RETRY_EXC_ERR (unless a fault injected into the local
 * memory failed it first). */
static void check_end(struct victim *v, uint64_t inj)
{
	int root = v->l.err[0].n_root ? v->l.err[0].root : -1;

	if (v->killed && root != ODPEMU_WC_RETRY_EXC_ERR &&
	    !(root == ODPEMU_WC_LOC_PROT_ERR && inj))
		soak_fail(v->w->st, "%s: after the victim was killed the QP ended in %s, not "
			  "RETRY_EXC_ERR", v->l.what, root < 0 ? "no error" :
			  odpemu_wc_status_str((enum odpemu_wc_status)root));
}

/* The victim's objects must be gone from host 1 within 5 s of its death. */
static void check_freed(struct victim *v, pid_t pid)
{
	int n = -1;

	for (int i = 0; i < 500 && (n = soak_objects_of(v->w->ctx[1], pid)) != 0; i++)
		usleep(10000);
	if (n)
		soak_fail(v->w->st, "%s: %d QPs and MRs of the killed victim (pid %d) still on %s "
			  "after 5 s", v->l.what, n, (int)pid, v->w->e->host[1].name);
}

/* read(), but all len bytes within 10 s: a victim that hangs must not hang the worker. */
static bool read_in_time(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 10000) != 1 || (n = read(fd, (char *)buf + got, len - got)) <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

/* Fork the victim and connect to it; its pid, or -1. */
static pid_t start(struct victim *v, const struct h_qp_opts *o)
{
	int to[2], from[2];
	char go;
	pid_t pid;

	if (pipe(to) || pipe(from)) {
		soak_fail(v->w->st, "pipe: %m");
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) == 0) {
		close(to[1]);
		close(from[0]);
		child(v->w, from[1], to[0], o, v->seed);
	}
	close(to[0]);
	close(from[1]);
	if (pid > 0)
		v->w->st->victim_pid = pid;
	if (pid < 0 || !read_in_time(from[0], &v->peer, sizeof(v->peer)) ||
	    write(to[1], &(struct info){ v->s.qp->qp_num, 0, 0, v->s.gid },
		  sizeof(struct info)) != sizeof(struct info) ||
	    h_side_connect(&v->s, v->peer.qpn, &v->peer.gid, o) || !read_in_time(from[0], &go, 1)) {
		soak_fail(v->w->st, "%s: the victim did not come up", v->l.what);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			v->w->st->victim_pid = 0;
		}
		pid = -1;
	}
	close(to[1]);
	close(from[0]);
	return pid;
}

void soak_round_victim(struct soak_w *w)
{
	struct victim *v = calloc(1, sizeof(*v));
	struct h_qp_opts o;
	uint64_t inj[2] = { 0, 0 };
	char what[96];
	pid_t pid;

	if (!v)
		abort();
	v->w = w;
	v->s.ctx = w->ctx[0];
	v->kind = (enum soak_mem)t_below(&w->rng, SOAK_NMEM);
	v->seed = pat_seed(w->pat, w->nwr++);
	snprintf(what, sizeof(what), "victim round %u", w->round);
	ledger_init(&v->l, w->st, what, DEPTH);
	h_qp_opts_default(&o);
	o.depth = DEPTH;
	o.timeout = 12;		/* 16 ms: the victim's death is noticed in about 130 ms */
	o.policy = t_below(&w->rng, 2) ? ODPEMU_FAULT_POLICY_STALL : ODPEMU_FAULT_POLICY_RNR;
	v->buf = mmap(NULL, LLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->buf == MAP_FAILED) {
		v->buf = NULL;
		soak_fail(w->st, "mmap: %m");
	} else if (h_side_up(&v->s, &o)) {
		soak_fail(w->st, "%s: side up failed", what);
	} else if ((v->mr = soak_reg(w, v->s.pd, v->buf, LLEN, v->kind)) &&
		   (pid = start(v, &o)) > 0) {
		traffic(v, pid, 10 + (unsigned)t_below(&w->rng, 90));
		if (!v->killed) {	/* an error came first: the victim goes now */
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			w->st->victim_pid = 0;
		}
		check_freed(v, pid);
		inj[0] = v->kind == SOAK_PINNED ? 0 : soak_fault_failed(w, v->mr);
		ledger_judge(&v->l, inj);
		check_end(v, inj[0]);
	}
	soak_drain_events(w);
	if (v->mr)
		odpemu_dereg_mr(v->mr);
	if (v->s.qp)
		odpemu_destroy_qp(v->s.qp);
	if (v->s.cq)
		odpemu_destroy_cq(v->s.cq);
	if (v->s.pd)
		odpemu_dealloc_pd(v->s.pd);
	if (v->buf)
		munmap(v->buf, LLEN);
	ledger_free(&v->l);
	free(v);
	SOAK_ADD(w->st->rounds_victim, 1);
}
