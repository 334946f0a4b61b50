/* SPDX-License-Identifier: MIT */
/*
 * Every verb end to end between two daemons: SEND/RECV (+imm), WRITE (+imm), READ, CAS,
 * FAA, FLUSH, ATOMIC_WRITE on pinned, explicit-ODP and implicit-ODP MRs, both fault
 * policies, message sizes 0 B to 16 MiB, every byte checked. ODP buffers are fresh
 * mappings, so page faults really happen: the responder's page_faults counter must grow.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "t.h"

enum kind { PINNED, ODP, IMPLICIT };
static const char *const kind_name[] = { "pinned", "odp", "implicit" };

#define BUF (16u << 20)
#define WAIT_MS 20000

struct side_mem {
	uint8_t *buf;
	struct odpemu_mr *mr;
};

static struct t_rng rng;

/* A cold buffer in a VMA of its own (a PROT_NONE guard page keeps the kernel from merging
 * it with a neighbour): each side's memory is then watched by its own device's notifier. */
static void *fresh(size_t len)
{
	uint8_t *p = mmap(NULL, len + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	if (p == MAP_FAILED || mprotect(p + len, 4096, PROT_NONE)) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static struct odpemu_mr *reg(struct odpemu_pd *pd, void *buf, enum kind k)
{
	int acc = ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
		  ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC |
		  ODPEMU_ACCESS_FLUSH_GLOBAL | ODPEMU_ACCESS_FLUSH_PERSISTENT;
	struct odpemu_mr *mr;

	if (k == IMPLICIT)
		mr = odpemu_reg_mr(pd, NULL, SIZE_MAX, acc | ODPEMU_ACCESS_ON_DEMAND);
	else
		mr = odpemu_reg_mr(pd, buf, BUF, acc | (k == ODP ? ODPEMU_ACCESS_ON_DEMAND : 0));
	T_CHECK(mr != NULL, "reg_mr %s: %m", kind_name[k]);
	return mr;
}

/* Post wr on side 0 and wait for its completion; true if it succeeded. */
static bool run(struct h_pair *p, struct odpemu_send_wr *wr, const char *what)
{
	struct odpemu_send_wr *bad;
	struct odpemu_wc wc;
	int rc;

	wr->send_flags |= ODPEMU_SEND_SIGNALED;
	rc = odpemu_post_send(p->s[0].qp, wr, &bad);
	T_CHECK(rc == 0, "%s: post_send: %d", what, rc);
	if (rc)
		return false;
	if (h_poll(p->s[0].cq, &wc, 1, WAIT_MS) != 1) {
		T_CHECK(0, "%s: no completion", what);
		return false;
	}
	T_CHECK(wc.status == ODPEMU_WC_SUCCESS, "%s: status %s (%s)", what,
		odpemu_wc_status_str(wc.status), odpemu_vendor_err_str(wc.vendor_err));
	return wc.status == ODPEMU_WC_SUCCESS;
}

static void post_recv(struct h_pair *p, struct side_mem *m, uint32_t len)
{
	struct odpemu_sge sge = { (uintptr_t)m->buf, len, m->mr->lkey };
	struct odpemu_recv_wr wr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 }, *bad;

	T_CHECK(odpemu_post_recv(p->s[1].qp, &wr, &bad) == 0, "post_recv");
}

static void check_recv(struct h_pair *p, uint32_t len, bool imm, const char *what)
{
	struct odpemu_wc wc;

	if (h_poll(p->s[1].cq, &wc, 1, WAIT_MS) != 1) {
		T_CHECK(0, "%s: no receive completion", what);
		return;
	}
	T_CHECK(wc.status == ODPEMU_WC_SUCCESS, "%s: recv status %s", what,
		odpemu_wc_status_str(wc.status));
	T_EQ(wc.byte_len, len, "recv byte_len");
	T_EQ(!!(wc.wc_flags & ODPEMU_WC_WITH_IMM), imm, "recv WITH_IMM");
	if (imm)
		T_EQ(ntohl(wc.imm_data), 0x1234abcd, "imm_data");
}

static void check_bytes(const uint8_t *got, const uint8_t *want, size_t len, const char *what)
{
	T_CHECK(memcmp(got, want, len) == 0, "%s: %zu bytes differ", what, len);
}

static void data_ops(struct h_pair *p, struct side_mem *a, struct side_mem *b, uint32_t len,
		     const char *tag)
{
	struct odpemu_sge sge = { (uintptr_t)a->buf, len, a->mr->lkey };
	struct odpemu_send_wr wr = { .sg_list = &sge, .num_sge = len ? 1 : 0 };
	char what[96];

	snprintf(what, sizeof(what), "%s WRITE %u", tag, len);
	t_fill(&rng, a->buf, len);
	wr.opcode = ODPEMU_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf;
	wr.wr.rdma.rkey = b->mr->rkey;
	if (run(p, &wr, what))
		check_bytes(b->buf, a->buf, len, what);

	snprintf(what, sizeof(what), "%s READ %u", tag, len);
	t_fill(&rng, b->buf, len);
	wr.opcode = ODPEMU_WR_RDMA_READ;
	if (run(p, &wr, what))
		check_bytes(a->buf, b->buf, len, what);

	snprintf(what, sizeof(what), "%s SEND %u", tag, len);
	t_fill(&rng, a->buf, len);
	post_recv(p, b, len);
	wr.opcode = ODPEMU_WR_SEND;
	if (run(p, &wr, what)) {
		check_recv(p, len, false, what);
		check_bytes(b->buf, a->buf, len, what);
	}

	snprintf(what, sizeof(what), "%s SEND_IMM %u", tag, len);
	t_fill(&rng, a->buf, len);
	post_recv(p, b, len);
	wr.opcode = ODPEMU_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(0x1234abcd);
	if (run(p, &wr, what)) {
		check_recv(p, len, true, what);
		check_bytes(b->buf, a->buf, len, what);
	}

	snprintf(what, sizeof(what), "%s WRITE_IMM %u", tag, len);
	t_fill(&rng, a->buf, len);
	post_recv(p, b, 0);
	wr.opcode = ODPEMU_WR_RDMA_WRITE_WITH_IMM;
	if (run(p, &wr, what)) {
		check_recv(p, len, true, what);
		check_bytes(b->buf, a->buf, len, what);
	}
}

static void atomic_ops(struct h_pair *p, struct side_mem *a, struct side_mem *b, const char *tag)
{
	uint64_t *target = (uint64_t *)(void *)(b->buf + 4096 * 3 + 8), *result = (uint64_t *)(void *)a->buf;
	struct odpemu_sge sge = { (uintptr_t)result, 8, a->mr->lkey };
	struct odpemu_send_wr wr = { .sg_list = &sge, .num_sge = 1 };
	char what[96];

	*target = 1000;
	snprintf(what, sizeof(what), "%s FAA", tag);
	wr.opcode = ODPEMU_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.compare_add = 5;
	wr.wr.atomic.rkey = b->mr->rkey;
	if (run(p, &wr, what)) {
		T_EQ(*result, 1000, "FAA old value");
		T_EQ(*target, 1005, "FAA new value");
	}
	snprintf(what, sizeof(what), "%s CAS", tag);
	wr.opcode = ODPEMU_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 1005;
	wr.wr.atomic.swap = 77;
	if (run(p, &wr, what)) {
		T_EQ(*result, 1005, "CAS old value");
		T_EQ(*target, 77, "CAS swapped");
	}
	snprintf(what, sizeof(what), "%s ATOMIC_WRITE", tag);
	*result = 0x0102030405060708ull;
	memset(&wr.wr, 0, sizeof(wr.wr));
	wr.opcode = ODPEMU_WR_ATOMIC_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)target;
	wr.wr.rdma.rkey = b->mr->rkey;
	if (run(p, &wr, what))
		T_EQ(*target, 0x0102030405060708ull, "ATOMIC_WRITE value");
	snprintf(what, sizeof(what), "%s FLUSH", tag);
	memset(&wr.wr, 0, sizeof(wr.wr));
	wr.opcode = ODPEMU_WR_FLUSH;
	wr.num_sge = 0;
	wr.wr.flush.remote_addr = (uintptr_t)b->buf;
	wr.wr.flush.rkey = b->mr->rkey;
	wr.wr.flush.len = 4096;
	wr.wr.flush.type = 1;	/* global visibility */
	run(p, &wr, what);
}

static void one_combo(struct h_env *e, struct odpemu_context **ctx, enum kind k,
		      enum odpemu_fault_policy pol, const uint32_t *sizes, unsigned nsizes)
{
	struct h_qp_opts o;
	struct h_pair p = { 0 };
	struct side_mem a = { fresh(BUF), NULL }, b = { fresh(BUF), NULL };
	unsigned long long faults0, faults1;
	char tag[64];

	h_qp_opts_default(&o);
	o.policy = pol;
	p.s[0].ctx = ctx[0];
	p.s[1].ctx = ctx[1];
	if (h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	a.mr = reg(p.s[0].pd, a.buf, k);
	b.mr = reg(p.s[1].pd, b.buf, k);
	if (!a.mr || !b.mr)
		return;
	faults0 = h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "page_faults");
	snprintf(tag, sizeof(tag), "%s/%s", kind_name[k], odpemu_fault_policy_str(pol));
	for (unsigned i = 0; i < nsizes; i++)
		data_ops(&p, &a, &b, sizes[i], tag);
	atomic_ops(&p, &a, &b, tag);
	faults1 = h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "page_faults");
	if (k != PINNED)
		T_CHECK(faults1 > faults0 && faults1 != ~0ull, "%s: responder page_faults %llu -> "
			"%llu: no fault on a cold ODP buffer", tag, faults0, faults1);
	else
		T_EQ(faults1, faults0, "pinned MRs take no page faults");
	printf("%-16s page faults on the responder: %llu\n", tag, faults1 - faults0);
	odpemu_dereg_mr(a.mr);
	odpemu_dereg_mr(b.mr);
	h_pair_down(&p);
	munmap(a.buf, BUF + 4096);
	munmap(b.buf, BUF + 4096);
}

int main(int argc, char **argv)
{
	static const uint32_t all[] = { 0, 1, 63, 4096, 4097, 65536, 1u << 20, 16u << 20 };
	static const uint32_t few[] = { 0, 8, 4096, 65536 + 100 };
	struct odpemu_context *ctx[2];
	struct h_env e;

	rng.s = t_seed(argc, argv, 5);
	h_up(&e, NULL, NULL, 600);
	ctx[0] = h_open(&e, 0);
	ctx[1] = h_open(&e, 1);
	for (enum kind k = PINNED; k <= IMPLICIT; k++) {
		one_combo(&e, ctx, k, ODPEMU_FAULT_POLICY_STALL, all, sizeof(all) / sizeof(all[0]));
		one_combo(&e, ctx, k, ODPEMU_FAULT_POLICY_RNR, few, sizeof(few) / sizeof(few[0]));
	}
	odpemu_close_device(ctx[0]);
	odpemu_close_device(ctx[1]);
	if (t_failures) {
		h_show_log(&e, 0);
		h_show_log(&e, 1);
	}
	T_EQ(h_down(&e), 0, "daemons that did not stop cleanly");
	return t_done("emu-verbs");
}
