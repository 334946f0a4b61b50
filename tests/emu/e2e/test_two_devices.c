/* SPDX-License-Identifier: MIT */
/*
 * One process, two devices, ODP MRs over the same buffer on both (UCX, libfabric and MPI
 * open every device they find). One VMA can belong to one userfaultfd, so the library
 * keeps one per process and relays its events to every device (lib/relay.c):
 *  - both devices fault the buffer in (odpa as the requester gathering a WRITE, odpb as
 *    the responder of a READ);
 *  - the process maps new memory over the buffer: both devices' MRs count the
 *    invalidation (before the relay, only the device that registered the VMA first did);
 *  - the next WRITE and READ carry the new bytes and fault again on both devices.
 * Then the seccomp route (no userfaultfd, forced in a child by ODPEMU_MASK): the first
 * device with an MR supervises the process and relays to the other; when the process
 * closes it, the listener moves to the other device, whose daemon then sees the
 * process's unmaps itself (before, nobody relayed them any more).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "t.h"

#define LEN	(64u * 1024)
#define PINNED	(ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | \
		 ODPEMU_ACCESS_REMOTE_READ)
#define ODP	(PINNED | ODPEMU_ACCESS_ON_DEMAND)

static struct h_pair p;

static int op(enum odpemu_wr_opcode opc, struct odpemu_mr *lmr, void *local, uint64_t raddr,
	      uint32_t rkey)
{
	struct odpemu_sge sge = { (uintptr_t)local, LEN, lmr->lkey };
	struct odpemu_send_wr wr = { .opcode = opc, .sg_list = &sge, .num_sge = 1,
		.send_flags = ODPEMU_SEND_SIGNALED, .wr.rdma = { raddr, rkey } }, *bad;
	struct odpemu_wc wc;

	if (odpemu_post_send(p.s[0].qp, &wr, &bad) || h_poll(p.s[0].cq, &wc, 1, 20000) != 1)
		return -1;
	return (int)wc.status;
}

static unsigned long long mr_ctr(int side, struct odpemu_mr *mr, const char *name)
{
	return h_counter(p.s[side].ctx, ODPEMU_COUNTERS_MR, mr->handle, name);
}

/* The relayed event reaches each daemon before the process's next request to it (the
 * counter query is one: lib/relay.c); the wait is a bound, not a need. */
static bool invalidated(int side, struct odpemu_mr *mr, unsigned long long before)
{
	for (int i = 0; i < 200; i++) {
		if (mr_ctr(side, mr, "page_invalidations") > before)
			return true;
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	return false;
}

/* odpa gathers a WRITE from the buffer; odpb answers a READ of it: both reach it. */
static void touch_both(uint8_t *buf, struct odpemu_mr *mr_a, struct odpemu_mr *mr_b,
		       uint8_t *l0, struct odpemu_mr *m0, uint8_t *l1, struct odpemu_mr *m1,
		       uint8_t want, const char *when)
{
	memset(l0, 0, LEN);
	memset(l1, 0, LEN);
	T_EQ(op(ODPEMU_WR_RDMA_WRITE, mr_a, buf, (uintptr_t)l1, m1->rkey), ODPEMU_WC_SUCCESS,
	     "WRITE from the buffer through odpa");
	T_CHECK(l1[0] == want && l1[LEN - 1] == want, "%s: WRITE carried %#x (got %#x)", when,
		want, l1[0]);
	T_EQ(op(ODPEMU_WR_RDMA_READ, m0, l0, (uintptr_t)buf, mr_b->rkey), ODPEMU_WC_SUCCESS,
	     "READ of the buffer from odpb");
	T_CHECK(l0[0] == want && l0[LEN - 1] == want, "%s: READ returned %#x (got %#x)", when,
		want, l0[0]);
}

static void one_buffer_two_devices(struct h_env *e)
{
	struct h_qp_opts o;
	struct odpemu_mr *mr_a, *mr_b, *m0, *m1;
	uint8_t *buf, *l0, *l1;
	unsigned long long inv_a, inv_b, faults_a, faults_b;

	h_qp_opts_default(&o);
	if (h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	buf = h_cold(LEN);
	l0 = h_cold(LEN);
	l1 = h_cold(LEN);
	memset(buf, 0x11, LEN);
	mr_a = odpemu_reg_mr(p.s[0].pd, buf, LEN, ODP);
	mr_b = odpemu_reg_mr(p.s[1].pd, buf, LEN, ODP);
	m0 = odpemu_reg_mr(p.s[0].pd, l0, LEN, PINNED);
	m1 = odpemu_reg_mr(p.s[1].pd, l1, LEN, PINNED);
	if (!mr_a || !mr_b || !m0 || !m1) {
		T_CHECK(0, "reg_mr: %m");
		return;
	}
	touch_both(buf, mr_a, mr_b, l0, m0, l1, m1, 0x11, "first");
	faults_a = mr_ctr(0, mr_a, "page_faults");
	faults_b = mr_ctr(1, mr_b, "page_faults");
	T_CHECK(faults_a > 0 && faults_b > 0, "both devices faulted the buffer in (%llu, %llu)",
		faults_a, faults_b);
	inv_a = mr_ctr(0, mr_a, "page_invalidations");
	inv_b = mr_ctr(1, mr_b, "page_invalidations");

	/* new memory over the buffer: one unmap the kernel reports once, to one userfaultfd */
	T_CHECK(mmap(buf, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		     -1, 0) == buf, "remap: %m");
	memset(buf, 0x22, LEN);
	T_CHECK(invalidated(0, mr_a, inv_a), "odpa's MR was invalidated");
	T_CHECK(invalidated(1, mr_b, inv_b), "odpb's MR was invalidated");

	touch_both(buf, mr_a, mr_b, l0, m0, l1, m1, 0x22, "after the remap");
	T_CHECK(mr_ctr(0, mr_a, "page_faults") > faults_a, "odpa faulted the new pages in");
	T_CHECK(mr_ctr(1, mr_b, "page_faults") > faults_b, "odpb faulted the new pages in");

	odpemu_dereg_mr(mr_a);
	odpemu_dereg_mr(mr_b);
	odpemu_dereg_mr(m0);
	odpemu_dereg_mr(m1);
	h_pair_down(&p);
}

/* Our record among ctx's clients: its flags, or 0. */
static uint32_t my_flags(struct odpemu_context *ctx)
{
	struct odpemu_client_info c[16];
	int n = odpemu_query_clients(ctx, c, 16);

	for (int i = 0; i < n; i++)
		if (c[i].pid == (uint32_t)getpid())
			return c[i].flags;
	return 0;
}

static void route_child(struct h_env *e)
{
	const char *mask = getenv("ODPEMU_MASK");
	char both[256];
	struct odpemu_context *c0, *c1;
	struct odpemu_pd *pd0, *pd1;
	struct odpemu_mr *mr0, *mr1;
	uint8_t *a = h_cold(LEN), *b = h_cold(LEN);
	unsigned long long before;

	snprintf(both, sizeof(both), "%s%suserfaultfd", mask ? mask : "", mask ? "," : "");
	setenv("ODPEMU_MASK", both, 1);		/* read when the first device opens */
	c0 = h_open(e, 0);
	c1 = h_open(e, 1);
	pd0 = c0 ? odpemu_alloc_pd(c0) : NULL;
	pd1 = c1 ? odpemu_alloc_pd(c1) : NULL;
	mr0 = pd0 ? odpemu_reg_mr(pd0, a, LEN, ODP) : NULL;
	mr1 = pd1 ? odpemu_reg_mr(pd1, b, LEN, ODP) : NULL;
	if (!mr0 || !mr1) {
		T_CHECK(0, "the route child's MRs: %m");
		return;
	}
	T_CHECK((my_flags(c0) & ODPEMU_CLIENT_SUPERVISED) &&
		(my_flags(c1) & ODPEMU_CLIENT_NOTIFIER_SECCOMP) &&
		!(my_flags(c1) & ODPEMU_CLIENT_SUPERVISED),
		"odpa supervises, odpb is relayed to (flags %#x, %#x)", my_flags(c0), my_flags(c1));
	odpemu_dereg_mr(mr0);
	odpemu_dealloc_pd(pd0);
	odpemu_close_device(c0);
	T_CHECK(my_flags(c1) & ODPEMU_CLIENT_SUPERVISED,
		"after odpa closed, odpb holds the listener (flags %#x)", my_flags(c1));
	before = h_counter(c1, ODPEMU_COUNTERS_DEVICE, 0, "seccomp_invalidations");
	T_CHECK(munmap(b, 4096) == 0, "munmap: %m");
	T_CHECK(h_counter(c1, ODPEMU_COUNTERS_DEVICE, 0, "seccomp_invalidations") > before,
		"odpb's daemon applied the munmap itself");
	odpemu_dereg_mr(mr1);
	odpemu_dealloc_pd(pd1);
	odpemu_close_device(c1);
}

static void body(struct h_env *e)
{
	/* first: a child of a process already on the route would inherit its filter */
	h_checks_in_child(e, route_child, "the seccomp route's move on close");
	one_buffer_two_devices(e);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "e2e-two-devices", .watchdog_s = 120,
		.open = H_OPEN_NONE, .body = body };

	return h_main(argc, argv, &t);
}
