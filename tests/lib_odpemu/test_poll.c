/* SPDX-License-Identifier: MIT */
/* Polling a CQ ring filled here as the daemon would: conversion of each field, partial
 * polls, wrap-around, arming, and noticing a dead daemon. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "t_lib.h"

#define CQ_SIZE 8

struct t_cq {
	struct lib_cq *cq;
	void *map;
	uint32_t prod;		/* the daemon's */
};

static struct t_cq make_cq(struct lib_context *c)
{
	uint32_t len = ipc_ring_bytes(CQ_SIZE, ipc_cq_slot());
	struct t_cq t = { .map = t_memfd_map(len) };

	ipc_ring_init(t.map, 0, CQ_SIZE, ipc_cq_slot());
	t.cq = calloc(1, sizeof(*t.cq));
	t.cq->pub.context = &c->pub;
	if (lib_cq_attach(t.cq, t.map, len))
		abort();
	return t;
}

static struct ipc_ring *hdr(struct t_cq *t)
{
	return t->map;
}

/* The daemon completes one WR: fill the slot, publish. */
static void produce(struct t_cq *t, uint64_t wr_id, uint32_t flags, uint32_t imm)
{
	struct ipc_cqe *e = ipc_ring_slot(t->map, IPC_RING_HDR_BYTES, CQ_SIZE, ipc_cq_slot(),
					  t->prod);

	memset(e, 0, sizeof(*e));
	e->wr_id = wr_id;
	e->status = wr_id % 3 ? ODPEMU_WC_SUCCESS : ODPEMU_WC_REM_ACCESS_ERR;
	e->opcode = ODPEMU_WC_RECV;
	e->byte_len = (uint32_t)wr_id * 10;
	e->imm_data = imm;
	e->qp_num = 0x42;
	e->src_qp = 0x43;
	e->wc_flags = flags;
	e->vendor_err = wr_id % 3 ? 0 : 8;
	atomic_store_explicit(&hdr(t)->prod, ++t->prod, memory_order_release);
}

static void test_poll(void)
{
	struct lib_context *c = t_ctx_new(false);
	struct t_cq t = make_cq(c);
	struct odpemu_wc wc[10];

	T_EQ(odpemu_poll_cq(&t.cq->pub, 10, wc), 0, "empty");
	produce(&t, 1, ODPEMU_WC_WITH_IMM, 0xaabbccdd);
	produce(&t, 2, ODPEMU_WC_WITH_INV, 0x1234);
	produce(&t, 3, ODPEMU_WC_GRH, 0);
	produce(&t, 4, 0, 0);
	produce(&t, 5, 0, 0);
	T_EQ(odpemu_poll_cq(&t.cq->pub, 3, wc), 3, "three of five");
	T_EQ(atomic_load(&hdr(&t)->cons), 3, "cons published");
	T_EQ(wc[0].wr_id, 1, "wr_id");
	T_EQ(wc[0].imm_data, htonl(0xaabbccdd), "imm in network order");
	T_EQ(wc[0].wc_flags, ODPEMU_WC_WITH_IMM, "flags");
	T_EQ(wc[0].byte_len, 10, "byte_len");
	T_EQ(wc[0].qp_num, 0x42, "qp_num");
	T_EQ(wc[0].src_qp, 0x43, "src_qp");
	T_EQ(wc[0].opcode, ODPEMU_WC_RECV, "opcode");
	T_EQ(wc[1].invalidated_rkey, 0x1234, "invalidated rkey in host order");
	T_EQ(wc[2].status, ODPEMU_WC_REM_ACCESS_ERR, "status");
	T_EQ(wc[2].vendor_err, 8, "vendor_err");
	T_EQ(wc[2].imm_data, 0, "no imm");
	T_EQ(odpemu_poll_cq(&t.cq->pub, 10, wc), 2, "the other two");
	T_EQ(wc[1].wr_id, 5, "in order");
	T_EQ(odpemu_poll_cq(&t.cq->pub, 10, wc), 0, "empty again");

	/* Across the wrap: 8 more, slots 5..12 of an 8-slot ring. */
	for (uint64_t i = 6; i < 14; i++)
		produce(&t, i, 0, 0);
	T_EQ(odpemu_poll_cq(&t.cq->pub, 10, wc), 8, "a full ring");
	for (int i = 0; i < 8; i++)
		T_EQ(wc[i].wr_id, 6 + i, "wrapped order");
	T_EQ(atomic_load(&hdr(&t)->cons), 13, "cons");
	lib_cq_free(t.cq);
	t_ctx_free(c);
}

static void test_notify(void)
{
	struct lib_context *c = t_ctx_new(true);
	struct t_cq t = make_cq(c);

	T_EQ(odpemu_req_notify_cq(&t.cq->pub, 1), 0, "arm solicited");
	T_EQ(atomic_load(&hdr(&t)->arm_seq), 1, "arm_seq");
	T_EQ(atomic_load(&hdr(&t)->arm_solicited), 1, "solicited");
	T_EQ(t_doorbells(c), 1, "doorbell: the daemon sleeps");
	T_EQ(odpemu_req_notify_cq(&t.cq->pub, 0), 0, "arm all");
	T_EQ(atomic_load(&hdr(&t)->arm_seq), 2, "arm_seq");
	T_EQ(atomic_load(&hdr(&t)->arm_solicited), 0, "not solicited");
	atomic_store(&c->status->sleeping, 0);
	T_EQ(odpemu_req_notify_cq(&t.cq->pub, 0), 0, "arm again");
	T_EQ(t_doorbells(c), 1, "no doorbell while awake (one from before)");

	atomic_store(&c->status->fatal, 1);
	errno = 0;
	T_EQ(odpemu_poll_cq(&t.cq->pub, 1, NULL), -1, "fatal: poll fails");
	T_EQ(errno, ENODEV, "ENODEV");
	T_EQ(odpemu_req_notify_cq(&t.cq->pub, 0), ENODEV, "fatal: arm fails");
	lib_cq_free(t.cq);
	t_ctx_free(c);
}

/* An empty CQ polled in a loop notices that the control socket hung up. */
static void test_daemon_gone(void)
{
	struct lib_context *c = t_ctx_new(false);
	struct t_cq t = make_cq(c);
	struct odpemu_wc wc;
	struct timespec t0, t1;
	int sv[2], rc = 0;
	long ms = 0;

	T_CHECK(!socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), "socketpair");
	c->sock = sv[0];
	for (int i = 0; i < 5000 && rc == 0; i++)
		rc = odpemu_poll_cq(&t.cq->pub, 1, &wc);
	T_EQ(rc, 0, "alive while the peer is there");
	close(sv[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rc == 0 && ms < 5000) {
		rc = odpemu_poll_cq(&t.cq->pub, 1, &wc);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	}
	T_EQ(rc, -1, "poll notices the hang-up (within 5 s; 20 ms by design)");
	T_EQ(errno, ENODEV, "ENODEV");
	T_EQ(odpemu_poll_cq(&t.cq->pub, 1, &wc), -1, "and stays dead");
	close(sv[0]);
	c->sock = -1;
	lib_cq_free(t.cq);
	t_ctx_free(c);
}

int main(void)
{
	test_poll();
	test_notify();
	test_daemon_gone();
	return t_done("poll");
}
