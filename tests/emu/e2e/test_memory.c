/* SPDX-License-Identifier: MIT */
/*
 * The memory scenarios of ODP against pinning:
 *  - stale registration: buffer A registered pinned, freed, buffer B mapped at the same
 *    address: a remote READ returns A's old bytes and MR_DECOHERENCE names the MR; with an
 *    ODP MR the same READ returns B's bytes (the notifier invalidated, the fault refilled);
 *  - munmap under an ODP MR during traffic: the next remote access is REM_ACCESS_ERR at the
 *    peer, the daemon keeps serving;
 *  - a read-only mapping under an ODP MR: a remote WRITE is REM_ACCESS_ERR, a READ works.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "t.h"

#define LEN (1u << 20)
#define ALL_ACCESS (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | \
		    ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC)

static uint8_t *map_at(void *where, size_t len, int prot)
{
	uint8_t *p = mmap(where, len + 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS |
			  (where ? MAP_FIXED_NOREPLACE : 0), -1, 0);

	if (p == MAP_FAILED || (where && p != where) || mprotect(p + len, 4096, PROT_NONE)) {
		fprintf(stderr, "mmap at %p: %s\n", where, strerror(errno));
		exit(1);
	}
	return p;
}

/* One op from side 0 against side 1's [raddr, +len); the completion status. */
static int op(struct h_pair *p, enum odpemu_wr_opcode opc, struct odpemu_mr *lmr, void *local,
	      uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct odpemu_sge sge = { (uintptr_t)local, len, lmr->lkey };
	struct odpemu_send_wr wr = { .opcode = opc, .sg_list = &sge, .num_sge = 1,
		.send_flags = ODPEMU_SEND_SIGNALED, .wr.rdma = { raddr, rkey } }, *bad;
	struct odpemu_wc wc;

	if (odpemu_post_send(p->s[0].qp, &wr, &bad))
		return -1;
	if (h_poll(p->s[0].cq, &wc, 1, 20000) != 1)
		return -2;
	return (int)wc.status;
}

/* Wait up to 2 s for an async event of type t on ctx; true if it came (for obj). */
static bool async_event(struct odpemu_context *ctx, enum odpemu_event_type t, void *obj)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	for (int i = 0; i < 20 && poll(&pfd, 1, 100) >= 0; i++) {
		struct odpemu_async_event ev;

		if (!(pfd.revents & POLLIN))
			continue;
		if (odpemu_get_async_event(ctx, &ev))
			return false;
		odpemu_ack_async_event(&ev);
		if (ev.event_type == t && (!obj || ev.element.mr == obj))
			return true;
	}
	return false;
}

static void stale_registration(struct h_env *e, struct odpemu_context **ctx, bool odp)
{
	const char *tag = odp ? "odp" : "pinned";
	struct h_pair p = { .s = { { .ctx = ctx[0] }, { .ctx = ctx[1] } } };
	struct h_qp_opts o;
	uint8_t *a, *b, *local = map_at(NULL, LEN, PROT_READ | PROT_WRITE);
	struct odpemu_mr *mr, *lmr;
	int st;

	h_qp_opts_default(&o);
	if (h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	a = map_at(NULL, LEN, PROT_READ | PROT_WRITE);
	memset(a, 'A', LEN);
	mr = odpemu_reg_mr(p.s[1].pd, a, LEN, ALL_ACCESS | (odp ? ODPEMU_ACCESS_ON_DEMAND : 0));
	lmr = odpemu_reg_mr(p.s[0].pd, local, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	T_CHECK(mr && lmr, "%s: reg_mr: %m", tag);
	if (!mr || !lmr)
		return;
	st = op(&p, ODPEMU_WR_RDMA_READ, lmr, local, (uintptr_t)a, mr->rkey, 4096);
	T_EQ(st, ODPEMU_WC_SUCCESS, "READ of A before the free");
	T_CHECK(local[0] == 'A' && local[4095] == 'A', "%s: first READ saw A", tag);

	/* free(A); B = malloc() landing at the same address */
	munmap(a, LEN + 4096);
	b = map_at(a, LEN, PROT_READ | PROT_WRITE);
	memset(b, 'B', LEN);
	st = op(&p, ODPEMU_WR_RDMA_READ, lmr, local, (uintptr_t)b, mr->rkey, 4096);
	T_EQ(st, ODPEMU_WC_SUCCESS, "READ after the remap");
	if (odp) {
		T_CHECK(local[0] == 'B' && local[4095] == 'B', "odp: READ after remap returned "
			"'%c', want B's data", local[0]);
	} else {
		T_CHECK(local[0] == 'A' && local[4095] == 'A', "pinned: READ after remap returned "
			"'%c', want A's stale data (the registration-cache bug)", local[0]);
		T_CHECK(async_event(ctx[1], ODPEMU_EVENT_MR_DECOHERENCE, mr),
			"pinned: no MR_DECOHERENCE event for the MR");
	}
	printf("stale registration, %s MR: READ returned %s data\n", tag,
	       local[0] == 'A' ? "the OLD (A)" : "the NEW (B)");
	odpemu_dereg_mr(mr);
	odpemu_dereg_mr(lmr);
	h_pair_down(&p);
	munmap(b, LEN + 4096);
	munmap(local, LEN + 4096);
}

static void munmap_under_traffic(struct h_env *e, struct odpemu_context **ctx)
{
	struct h_pair p = { .s = { { .ctx = ctx[0] }, { .ctx = ctx[1] } } };
	struct h_qp_opts o;
	uint8_t *t = map_at(NULL, LEN, PROT_READ | PROT_WRITE);
	uint8_t *local = map_at(NULL, LEN, PROT_READ | PROT_WRITE);
	struct odpemu_mr *mr, *lmr;
	int st;

	h_qp_opts_default(&o);
	if (h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	mr = odpemu_reg_mr(p.s[1].pd, t, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	lmr = odpemu_reg_mr(p.s[0].pd, local, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	if (!mr || !lmr) {
		T_CHECK(0, "reg_mr: %m");
		return;
	}
	for (int i = 0; i < 16; i++)
		T_EQ(op(&p, ODPEMU_WR_RDMA_WRITE, lmr, local, (uintptr_t)t + i * 65536u, mr->rkey,
			65536), ODPEMU_WC_SUCCESS, "WRITE before munmap");
	munmap(t, LEN);		/* the buffer goes, the MR stays */
	st = op(&p, ODPEMU_WR_RDMA_WRITE, lmr, local, (uintptr_t)t, mr->rkey, 4096);
	T_EQ(st, ODPEMU_WC_REM_ACCESS_ERR, "WRITE to unmapped memory under an ODP MR");
	printf("munmap under an ODP MR: the next WRITE completed %s\n",
	       odpemu_wc_status_str((enum odpemu_wc_status)st));
	odpemu_dereg_mr(mr);
	odpemu_dereg_mr(lmr);
	h_pair_down(&p);
	munmap(local, LEN + 4096);
}

static void read_only(struct h_env *e, struct odpemu_context **ctx)
{
	struct h_pair p = { .s = { { .ctx = ctx[0] }, { .ctx = ctx[1] } } };
	struct h_qp_opts o;
	uint8_t *t = map_at(NULL, LEN, PROT_READ | PROT_WRITE);
	uint8_t *local = map_at(NULL, LEN, PROT_READ | PROT_WRITE);
	struct odpemu_mr *mr, *lmr;

	memset(t, 'R', LEN);
	mprotect(t, LEN, PROT_READ);
	h_qp_opts_default(&o);
	if (h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	mr = odpemu_reg_mr(p.s[1].pd, t, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	lmr = odpemu_reg_mr(p.s[0].pd, local, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	if (!mr || !lmr) {
		T_CHECK(0, "reg_mr: %m");
		return;
	}
	T_EQ(op(&p, ODPEMU_WR_RDMA_READ, lmr, local, (uintptr_t)t, mr->rkey, 4096),
	     ODPEMU_WC_SUCCESS, "READ of read-only memory");
	T_CHECK(local[100] == 'R', "READ of read-only memory returned its bytes");
	T_EQ(op(&p, ODPEMU_WR_RDMA_WRITE, lmr, local, (uintptr_t)t, mr->rkey, 4096),
	     ODPEMU_WC_REM_ACCESS_ERR, "WRITE into read-only memory");
	T_CHECK(t[0] == 'R', "read-only memory unchanged");
	odpemu_dereg_mr(mr);
	odpemu_dereg_mr(lmr);
	h_pair_down(&p);
	munmap(t, LEN + 4096);
	munmap(local, LEN + 4096);
}

static void memory_scenarios(struct h_env *e)
{
	struct odpemu_context **ctx = e->ctx;

	stale_registration(e, ctx, false);
	stale_registration(e, ctx, true);
	munmap_under_traffic(e, ctx);
	read_only(e, ctx);
	/* relayed events (from the userfaultfd, or from the other daemon by the seccomp
	 * route), or held calls this daemon applied itself (the seccomp route) */
	T_CHECK(h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "uffd_events") +
		h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "seccomp_invalidations") > 0,
		"the notifier saw no event");
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "emu-memory", .watchdog_s = 300,
		.open = H_OPEN_BOTH, .body = memory_scenarios };

	return h_main(argc, argv, &t);
}
