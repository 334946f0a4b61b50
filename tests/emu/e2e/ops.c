/* SPDX-License-Identifier: MIT */
/* ops — see ops.h. */
#include "ops.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#define WAIT_MS 20000

bool h_run_wr(struct h_pair *p, struct odpemu_send_wr *wr, const char *what)
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

static void post_recv(struct h_pair *p, struct h_mem *m, uint32_t len)
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

void h_data_ops(struct h_pair *p, struct h_mem *a, struct h_mem *b, uint32_t len,
		const char *tag, struct t_rng *rng)
{
	struct odpemu_sge sge = { (uintptr_t)a->buf, len, a->mr->lkey };
	struct odpemu_send_wr wr = { .sg_list = &sge, .num_sge = len ? 1 : 0 };
	char what[96];

	snprintf(what, sizeof(what), "%s WRITE %u", tag, len);
	t_fill(rng, a->buf, len);
	wr.opcode = ODPEMU_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf;
	wr.wr.rdma.rkey = b->mr->rkey;
	if (h_run_wr(p, &wr, what))
		check_bytes(b->buf, a->buf, len, what);

	snprintf(what, sizeof(what), "%s READ %u", tag, len);
	t_fill(rng, b->buf, len);
	wr.opcode = ODPEMU_WR_RDMA_READ;
	if (h_run_wr(p, &wr, what))
		check_bytes(a->buf, b->buf, len, what);

	snprintf(what, sizeof(what), "%s SEND %u", tag, len);
	t_fill(rng, a->buf, len);
	post_recv(p, b, len);
	wr.opcode = ODPEMU_WR_SEND;
	if (h_run_wr(p, &wr, what)) {
		check_recv(p, len, false, what);
		check_bytes(b->buf, a->buf, len, what);
	}

	snprintf(what, sizeof(what), "%s SEND_IMM %u", tag, len);
	t_fill(rng, a->buf, len);
	post_recv(p, b, len);
	wr.opcode = ODPEMU_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(0x1234abcd);
	if (h_run_wr(p, &wr, what)) {
		check_recv(p, len, true, what);
		check_bytes(b->buf, a->buf, len, what);
	}

	snprintf(what, sizeof(what), "%s WRITE_IMM %u", tag, len);
	t_fill(rng, a->buf, len);
	post_recv(p, b, 0);
	wr.opcode = ODPEMU_WR_RDMA_WRITE_WITH_IMM;
	if (h_run_wr(p, &wr, what)) {
		check_recv(p, len, true, what);
		check_bytes(b->buf, a->buf, len, what);
	}
}

void h_atomic_ops(struct h_pair *p, struct h_mem *a, struct h_mem *b, const char *tag)
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
	if (h_run_wr(p, &wr, what)) {
		T_EQ(*result, 1000, "FAA old value");
		T_EQ(*target, 1005, "FAA new value");
	}
	snprintf(what, sizeof(what), "%s CAS", tag);
	wr.opcode = ODPEMU_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 1005;
	wr.wr.atomic.swap = 77;
	if (h_run_wr(p, &wr, what)) {
		T_EQ(*result, 1005, "CAS old value");
		T_EQ(*target, 77, "CAS swapped");
	}
	snprintf(what, sizeof(what), "%s ATOMIC_WRITE", tag);
	*result = 0x0102030405060708ull;
	memset(&wr.wr, 0, sizeof(wr.wr));
	wr.opcode = ODPEMU_WR_ATOMIC_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)target;
	wr.wr.rdma.rkey = b->mr->rkey;
	if (h_run_wr(p, &wr, what))
		T_EQ(*target, 0x0102030405060708ull, "ATOMIC_WRITE value");
	snprintf(what, sizeof(what), "%s FLUSH", tag);
	memset(&wr.wr, 0, sizeof(wr.wr));
	wr.opcode = ODPEMU_WR_FLUSH;
	wr.num_sge = 0;
	wr.wr.flush.remote_addr = (uintptr_t)b->buf;
	wr.wr.flush.rkey = b->mr->rkey;
	wr.wr.flush.len = 4096;
	wr.wr.flush.type = 1;	/* global visibility */
	h_run_wr(p, &wr, what);
}
