/* SPDX-License-Identifier: MIT */
/* bystander — see bystander.h. */
#include "bystander.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

#define RW_LEN		(2u << 20)
#define LIVE_LEN	(64u << 10)
#define LOCAL_LEN	(1u << 20)
#define ODP_LEN		(1u << 20)
#define BYS_HINT	0x6f0000000000ull	/* where its canaries go if free */
#define SEED_RW		0xB0
#define SEED_LOCAL	0xB1
#define SEED_ODP	0xB2

static void fill(uint64_t seed, uint8_t *buf, size_t len)
{
	struct t_rng r = { seed };

	t_fill(&r, buf, len);
}

/* Bytes of buf[from..len) that differ from the pattern of seed over [0, len). */
static uint64_t diff(uint64_t seed, const uint8_t *buf, size_t from, size_t len)
{
	uint8_t *want = malloc(len);
	uint64_t bad = 0;

	if (!want)
		return len;
	fill(seed, want, len);
	for (size_t i = from; i < len; i++)
		bad += want[i] != buf[i];
	free(want);
	return bad;
}

/* A fresh buffer (and guard page) at hint if that is free: far below where the kernel
 * places mappings, so a process forked from the same parent can map something of its own
 * at the same address (test_lying_ring.c does). Anywhere otherwise. */
static uint8_t *cold_at(uintptr_t hint, size_t len)
{
	void *p = mmap((void *)hint, len + 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED)
		return h_cold(len);
	if (mprotect((uint8_t *)p + len, 4096, PROT_NONE)) {
		munmap(p, len + 4096);
		return h_cold(len);
	}
	return p;
}

static int op(struct h_pair *p, enum odpemu_wr_opcode opcode, uint8_t *local, uint32_t lkey,
	      uint64_t remote, uint32_t rkey, uint32_t len)
{
	struct odpemu_sge s = { (uint64_t)(uintptr_t)local, len, lkey };
	struct odpemu_send_wr wr = { .sg_list = &s, .num_sge = 1, .opcode = opcode,
		.send_flags = ODPEMU_SEND_SIGNALED }, *bad;
	struct odpemu_wc wc;

	wr.wr.rdma.remote_addr = remote;
	wr.wr.rdma.rkey = rkey;
	if (odpemu_post_send(p->s[0].qp, &wr, &bad) || h_poll(p->s[0].cq, &wc, 1, 10000) != 1)
		return -1;
	return wc.status == ODPEMU_WC_SUCCESS ? 0 : -1;
}

static struct odpemu_mr *reg(struct odpemu_pd *pd, uint8_t *buf, size_t len, int access,
			     uint64_t seed, struct bys_mem *m)
{
	struct odpemu_mr *mr;

	fill(seed, buf, len);
	mr = odpemu_reg_mr(pd, buf, len, access);
	if (mr)
		*m = (struct bys_mem){ (uint64_t)(uintptr_t)buf, (uint32_t)len, mr->lkey, mr->rkey };
	return mr;
}

/* The child: never returns. */
static void run(struct h_env *e, int out, int in)
{
	struct h_pair p = { 0 };
	struct h_qp_opts o;
	struct bys_info info = { 0 };
	struct bys_result res = { 0 };
	struct t_rng rng = { 0xB5 };
	uint8_t *rw = cold_at(BYS_HINT, RW_LEN), *local = cold_at(BYS_HINT + (4u << 20), LOCAL_LEN);
	uint8_t *odp = cold_at(BYS_HINT + (8u << 20), ODP_LEN);
	uint8_t *io = h_cold(2 * 4096), *shadow = malloc(LIVE_LEN);
	struct odpemu_mr *iomr = NULL;
	bool up;

	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	h_qp_opts_default(&o);
	up = shadow && !h_pair_up(e, &p, &o) &&
	     reg(p.s[1].pd, rw, RW_LEN, ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
		 ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC, SEED_RW, &info.rw) &&
	     reg(p.s[1].pd, local, LOCAL_LEN, ODPEMU_ACCESS_LOCAL_WRITE, SEED_LOCAL, &info.local) &&
	     reg(p.s[1].pd, odp, ODP_LEN, ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_ON_DEMAND,
		 SEED_ODP, &info.odp) &&
	     (iomr = odpemu_reg_mr(p.s[0].pd, io, 2 * 4096, ODPEMU_ACCESS_LOCAL_WRITE));
	if (up) {
		memcpy(shadow, rw, LIVE_LEN);
		info.qpn = p.s[1].qp->qp_num;
		info.ok = 1;
	}
	if (write(out, &info, sizeof(info)) != sizeof(info) || !up)
		_exit(1);
	for (;;) {
		struct pollfd pf = { in, POLLIN, 0 };
		uint32_t off = (uint32_t)t_below(&rng, LIVE_LEN / 4096) * 4096;
		char c = 's';

		if (poll(&pf, 1, 1) > 0) {	/* 1 ms between pairs: the attack has the CPUs */
			if (read(in, &c, 1) != 1 || c != 'p')
				break;
			if (write(out, &res.ops, sizeof(res.ops)) != sizeof(res.ops))
				_exit(1);
		}
		t_fill(&rng, io, 4096);
		memcpy(shadow + off, io, 4096);
		memset(io + 4096, 0, 4096);
		if (op(&p, ODPEMU_WR_RDMA_WRITE, io, iomr->lkey, info.rw.va + off, info.rw.rkey,
		       4096) ||
		    op(&p, ODPEMU_WR_RDMA_READ, io + 4096, iomr->lkey, info.rw.va + off,
		       info.rw.rkey, 4096) || memcmp(io, io + 4096, 4096))
			res.errors++;
		res.ops++;
	}
	res.canary_bad = diff(SEED_RW, rw, LIVE_LEN, RW_LEN) + diff(SEED_LOCAL, local, 0, LOCAL_LEN) +
			 diff(SEED_ODP, odp, 0, ODP_LEN);
	for (size_t i = 0; i < LIVE_LEN; i++)
		res.live_bad += rw[i] != shadow[i];
	_exit(write(out, &res, sizeof(res)) == sizeof(res) ? 0 : 1);
}

int bys_start(struct h_env *e, struct bys *b)
{
	int up[2], down[2];

	memset(b, 0, sizeof(*b));
	if (pipe(up) || pipe(down)) {
		T_CHECK(0, "bystander pipes: %s", strerror(errno));
		return -1;
	}
	if ((b->pid = fork()) == 0) {
		close(up[0]);
		close(down[1]);
		run(e, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	b->from = up[0];
	b->to = down[1];
	T_CHECK(b->pid > 0 && read(b->from, &b->info, sizeof(b->info)) == sizeof(b->info) &&
		b->info.ok, "bystander set up");
	return t_failures ? -1 : 0;
}

uint64_t bys_ops(struct bys *b)
{
	uint64_t n;

	if (write(b->to, "p", 1) != 1 || read(b->from, &n, sizeof(n)) != sizeof(n))
		return UINT64_MAX;
	return n;
}

void bys_stop(struct bys *b, struct bys_result *r)
{
	int st = -1;

	memset(r, 0, sizeof(*r));
	if (b->pid <= 0)
		return;
	close(b->to);		/* end of file: stop */
	if (read(b->from, r, sizeof(*r)) == sizeof(*r)) {
		printf("bystander: %" PRIu64 " WRITE + READ-back pairs\n", r->ops);
		T_CHECK(r->ops > 0, "the bystander ran no operation");
		T_EQ(r->errors, 0, "bystander operations that failed or read back other bytes");
		T_EQ(r->canary_bad, 0, "bystander canary bytes changed");
		T_EQ(r->live_bad, 0, "bystander live bytes not the last it wrote");
	} else {
		T_CHECK(0, "no report from the bystander");
	}
	close(b->from);
	waitpid(b->pid, &st, 0);
	T_CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "bystander exit status %#x", st);
	b->pid = 0;
}
