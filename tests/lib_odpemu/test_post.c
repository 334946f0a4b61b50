/* SPDX-License-Identifier: MIT */
/* Posting into rings built here as the daemon would (ipc_ring_init in a memfd), then
 * reading the slots back the daemon's way: WR conversion, checks, chains, ring space,
 * doorbells. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "t_lib.h"

struct t_qp {
	struct lib_qp *qp;
	struct ipc_qp_layout l;
	void *map;
};

static struct t_qp make_qp(struct lib_context *c, enum odpemu_qp_type type, struct odpemu_srq *srq)
{
	struct odpemu_qp_cap cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 2,
				     .max_recv_sge = 2, .max_inline_data = 64 };
	struct t_qp t;

	t.l = ipc_qp_layout(cap.max_send_wr, cap.max_send_sge, cap.max_inline_data,
			    cap.max_recv_wr, cap.max_recv_sge, !srq);
	t.map = t_memfd_map(t.l.map_len);
	ipc_ring_init(t.map, 0, t.l.sq_size, t.l.sq_slot);
	if (!srq)
		ipc_ring_init(t.map, t.l.rq_offset, t.l.rq_size, t.l.rq_slot);
	t.qp = calloc(1, sizeof(*t.qp));
	t.qp->cap = cap;
	t.qp->pub.srq = srq;
	t.qp->pub.context = &c->pub;
	t.qp->pub.qp_type = type;
	t.qp->device_caps = ODPEMU_DEVICE_CAPS_ALL;
	if (lib_qp_attach(t.qp, t.map, t.l.map_len, t.l.rq_offset))
		abort();
	atomic_store(&t.qp->state, ODPEMU_QPS_RTS);
	return t;
}

/* The daemon's view. */
static uint32_t sq_prod(const struct t_qp *t)
{
	return atomic_load_explicit(&((struct ipc_ring *)t->map)->prod, memory_order_acquire);
}

static struct ipc_swqe *sq_slot(const struct t_qp *t, uint32_t i)
{
	return ipc_ring_slot(t->map, IPC_RING_HDR_BYTES, t->l.sq_size, t->l.sq_slot, i);
}

static void sq_consume(const struct t_qp *t, uint32_t cons)
{
	atomic_store_explicit(&((struct ipc_ring *)t->map)->cons, cons, memory_order_release);
}

static void test_chain(void)
{
	struct lib_context *c = t_ctx_new(true);
	struct t_qp t = make_qp(c, ODPEMU_QPT_RC, NULL);
	char a[8] = "hello", b[3] = "abc";
	struct odpemu_sge sg[2] = { { (uintptr_t)a, 5, 11 }, { (uintptr_t)b, 3, 12 } };
	struct odpemu_send_wr w[3], *bad = NULL;
	struct ipc_swqe *s;

	memset(w, 0, sizeof(w));
	w[0] = (struct odpemu_send_wr){ .wr_id = 1, .next = &w[1], .sg_list = sg, .num_sge = 2,
		.opcode = ODPEMU_WR_SEND_WITH_IMM, .send_flags = ODPEMU_SEND_SIGNALED,
		.imm_data = htonl(0x11223344) };
	w[1] = (struct odpemu_send_wr){ .wr_id = 2, .next = &w[2], .sg_list = sg, .num_sge = 2,
		.opcode = ODPEMU_WR_RDMA_WRITE, .send_flags = ODPEMU_SEND_INLINE };
	w[1].wr.rdma.remote_addr = 0x1000;
	w[1].wr.rdma.rkey = 77;
	w[2] = (struct odpemu_send_wr){ .wr_id = 3, .sg_list = sg, .num_sge = 1,
		.opcode = ODPEMU_WR_ATOMIC_FETCH_AND_ADD };
	sg[0].length = 8;
	w[2].wr.atomic.remote_addr = 0x2008;
	w[2].wr.atomic.rkey = 78;
	w[2].wr.atomic.compare_add = 5;
	w[2].wr.atomic.swap = 6;

	sg[0].length = 5;
	T_EQ(odpemu_post_send(&t.qp->pub, &w[0], &bad), EINVAL, "atomic of 5 bytes refused");
	T_CHECK(bad == &w[2], "bad_wr is the atomic");
	T_EQ(sq_prod(&t), 2, "the two before it are posted");
	T_EQ(t_doorbells(c), 1, "one doorbell for them");
	sq_consume(&t, 2);

	sg[0].length = 8;	/* the inline write now carries 8 + 3 bytes */
	T_EQ(odpemu_post_send(&t.qp->pub, &w[0], &bad), 0, "chain of 3");
	T_EQ(sq_prod(&t), 5, "prod");
	T_EQ(t_doorbells(c), 1, "one doorbell per chain");
	s = sq_slot(&t, 2);
	T_EQ(s->wr_id, 1, "wr_id");
	T_EQ(s->opcode, ODPEMU_WR_SEND_WITH_IMM, "opcode");
	T_EQ(s->send_flags, ODPEMU_SEND_SIGNALED, "flags");
	T_EQ(s->imm_data, 0x11223344, "imm in host order");
	T_EQ(s->num_sge, 2, "num_sge");
	T_EQ(s->sge[1].addr, (uintptr_t)b, "sge addr");
	T_EQ(s->sge[1].lkey, 12, "sge lkey");
	T_EQ(s->inline_len, 0, "not inline");
	s = sq_slot(&t, 3);
	T_EQ(s->num_sge, 0, "inline: no SGEs");
	T_EQ(s->inline_len, 11, "inline bytes");
	T_CHECK(!memcmp(s->sge, "hello\0\0\0abc", 11), "inline copy");
	T_EQ(s->remote_addr, 0x1000, "remote_addr");
	T_EQ(s->rkey, 77, "rkey");
	s = sq_slot(&t, 4);
	T_EQ(s->remote_addr, 0x2008, "atomic addr");
	T_EQ(s->rkey, 78, "atomic rkey");
	T_EQ(s->compare_add, 5, "compare_add");
	T_EQ(s->swap, 6, "swap");
	T_EQ(s->sge[0].length, 8, "atomic sge");
	t_ctx_free(c);
	lib_qp_free(t.qp);
}

static int post1(struct t_qp *t, struct odpemu_send_wr *w)
{
	struct odpemu_send_wr *bad = NULL;
	int rc = odpemu_post_send(&t->qp->pub, w, &bad);

	T_CHECK(rc ? bad == w : bad == NULL, "bad_wr with rc %d", rc);
	return rc;
}

static void test_checks(void)
{
	struct lib_context *c = t_ctx_new(false);
	struct t_qp t = make_qp(c, ODPEMU_QPT_RC, NULL);
	uint64_t word;
	char big[100];
	struct odpemu_sge sg[3] = { { (uintptr_t)&word, 8, 1 }, { (uintptr_t)big, 100, 1 },
				    { (uintptr_t)big, 1, 1 } };
	struct odpemu_send_wr w = { .sg_list = sg, .num_sge = 1, .opcode = ODPEMU_WR_SEND };

	memset(big, 0, sizeof(big));
	atomic_store(&t.qp->state, ODPEMU_QPS_RESET);
	T_EQ(post1(&t, &w), EINVAL, "RESET");
	atomic_store(&t.qp->state, ODPEMU_QPS_INIT);
	T_EQ(post1(&t, &w), EINVAL, "INIT");
	atomic_store(&t.qp->state, ODPEMU_QPS_RTR);
	T_EQ(post1(&t, &w), EINVAL, "RTR");
	T_EQ(sq_prod(&t), 0, "nothing posted");
	atomic_store(&t.qp->state, ODPEMU_QPS_ERR);
	T_EQ(post1(&t, &w), 0, "ERR accepts (flushed by the daemon)");
	atomic_store(&t.qp->state, ODPEMU_QPS_RTS);

	w.num_sge = 3;
	T_EQ(post1(&t, &w), EINVAL, "num_sge above the granted 2");
	w.num_sge = -1;
	T_EQ(post1(&t, &w), EINVAL, "negative num_sge");
	w.num_sge = 2;
	w.send_flags = ODPEMU_SEND_INLINE;
	T_EQ(post1(&t, &w), EINVAL, "inline 108 > 64");
	w.send_flags = 1u << 7;
	T_EQ(post1(&t, &w), EINVAL, "unknown flag");
	w.send_flags = ODPEMU_SEND_INLINE;
	w.num_sge = 1;
	w.opcode = ODPEMU_WR_RDMA_READ;
	T_EQ(post1(&t, &w), EINVAL, "inline READ");
	w.send_flags = 0;
	w.opcode = ODPEMU_WR_LOCAL_INV;
	T_EQ(post1(&t, &w), EINVAL, "LOCAL_INV not supported");
	w.opcode = ODPEMU_WR_ATOMIC_CMP_AND_SWP;
	w.wr.atomic.remote_addr = 0x1004;
	T_EQ(post1(&t, &w), EINVAL, "misaligned atomic");
	w.opcode = ODPEMU_WR_ATOMIC_WRITE;
	w.wr.rdma.remote_addr = 0x1000;
	t.qp->device_caps = ODPEMU_DEVICE_CAPS_ALL & ~ODPEMU_DEVICE_ATOMIC_WRITE;
	T_EQ(post1(&t, &w), EINVAL, "ATOMIC_WRITE on a device without it (mlx5)");
	t.qp->device_caps = ODPEMU_DEVICE_CAPS_ALL;
	T_EQ(post1(&t, &w), 0, "ATOMIC_WRITE of 8 bytes");
	w.opcode = ODPEMU_WR_FLUSH;
	w.wr.flush.type = 1;
	T_EQ(post1(&t, &w), EINVAL, "FLUSH with an SGE");
	w.num_sge = 0;
	w.wr.flush.type = 4;
	T_EQ(post1(&t, &w), EINVAL, "FLUSH type");
	w.wr.flush.type = 3;
	w.wr.flush.level = 1;
	w.wr.flush.len = 4096;
	w.wr.flush.remote_addr = 0x3000;
	w.wr.flush.rkey = 9;
	t.qp->device_caps = ODPEMU_DEVICE_CAPS_ALL & ~ODPEMU_DEVICE_FLUSH_ANY;
	T_EQ(post1(&t, &w), EINVAL, "FLUSH on a device without it (mlx5)");
	t.qp->device_caps = ODPEMU_DEVICE_CAPS_ALL & ~ODPEMU_DEVICE_FLUSH_PERSISTENT;
	T_EQ(post1(&t, &w), EINVAL, "persistent FLUSH on a device with global FLUSH only");
	t.qp->device_caps = ODPEMU_DEVICE_CAPS_ALL;
	T_EQ(post1(&t, &w), 0, "FLUSH");
	T_EQ(sq_slot(&t, 2)->flush_len, 4096, "flush_len");
	T_EQ(sq_slot(&t, 2)->flush_type, 3, "flush_type");
	T_EQ(sq_slot(&t, 2)->flush_level, 1, "flush_level");
	T_EQ(sq_slot(&t, 2)->remote_addr, 0x3000, "flush addr");
	T_EQ(sq_slot(&t, 2)->rkey, 9, "flush rkey");
	w.opcode = ODPEMU_WR_SEND_WITH_INV;
	w.invalidate_rkey = 0xabcd;
	T_EQ(post1(&t, &w), 0, "SEND_WITH_INV");
	T_EQ(sq_slot(&t, 3)->imm_data, 0xabcd, "invalidate rkey as is");
	T_EQ(t_doorbells(c), 0, "no doorbell while the daemon is awake");
	t_ctx_free(c);
	lib_qp_free(t.qp);
}

static void test_full(void)
{
	struct lib_context *c = t_ctx_new(false);
	struct t_qp t = make_qp(c, ODPEMU_QPT_RC, NULL);
	struct odpemu_send_wr w[6], *bad = NULL;

	memset(w, 0, sizeof(w));
	for (int i = 0; i < 6; i++) {
		w[i].wr_id = (uint64_t)i + 100;
		w[i].opcode = ODPEMU_WR_SEND;
		w[i].next = i < 5 ? &w[i + 1] : NULL;
	}
	T_EQ(odpemu_post_send(&t.qp->pub, w, &bad), ENOMEM, "6 into 4 slots");
	T_CHECK(bad == &w[4], "the fifth is bad");
	T_EQ(sq_prod(&t), 4, "four posted");
	sq_consume(&t, 2);
	T_EQ(odpemu_post_send(&t.qp->pub, &w[4], &bad), 0, "two after the daemon took two");
	T_EQ(sq_prod(&t), 6, "prod 6");
	T_EQ(sq_slot(&t, 5)->wr_id, 105, "slot 5 wraps to slot 1");
	T_EQ(((struct ipc_swqe *)ipc_ring_slot(t.map, IPC_RING_HDR_BYTES, 4, t.l.sq_slot, 1))->wr_id,
	     105, "wrapped");
	t_ctx_free(c);
	lib_qp_free(t.qp);
}

static void test_ud(void)
{
	struct lib_context *c = t_ctx_new(false);
	struct t_qp t = make_qp(c, ODPEMU_QPT_UD, NULL);
	struct odpemu_ah ah;
	struct odpemu_send_wr w = { .opcode = ODPEMU_WR_SEND };
	struct ipc_swqe *s;

	memset(&ah, 0, sizeof(ah));
	for (int i = 0; i < 16; i++)
		ah.attr.grh.dgid.raw[i] = (uint8_t)(0xf0 + i);
	T_EQ(post1(&t, &w), EINVAL, "UD without an AH");
	w.wr.ud.ah = &ah;
	w.wr.ud.remote_qpn = 0x123456;
	w.wr.ud.remote_qkey = 0x11111111;
	T_EQ(post1(&t, &w), 0, "UD send");
	s = sq_slot(&t, 0);
	T_CHECK(!memcmp(s->ud_dgid, ah.attr.grh.dgid.raw, 16), "dgid");
	T_EQ(s->remote_qpn, 0x123456, "remote_qpn");
	T_EQ(s->remote_qkey, 0x11111111, "qkey");
	w.opcode = ODPEMU_WR_RDMA_WRITE;
	T_EQ(post1(&t, &w), EINVAL, "UD write");
	t_ctx_free(c);
	lib_qp_free(t.qp);
}

static void test_recv(void)
{
	struct lib_context *c = t_ctx_new(true);
	struct t_qp t = make_qp(c, ODPEMU_QPT_RC, NULL);
	struct odpemu_sge sg[3] = { { 0x1000, 10, 1 }, { 0x2000, 20, 2 }, { 0, 0, 0 } };
	struct odpemu_recv_wr r[2] = { { .wr_id = 7, .next = &r[1], .sg_list = sg, .num_sge = 2 },
				       { .wr_id = 8, .sg_list = sg, .num_sge = 3 } };
	struct odpemu_recv_wr *bad = NULL;
	struct ipc_ring *rq = (struct ipc_ring *)((char *)t.map + t.l.rq_offset);
	struct ipc_rwqe *s;

	atomic_store(&t.qp->state, ODPEMU_QPS_RESET);
	T_EQ(odpemu_post_recv(&t.qp->pub, r, &bad), EINVAL, "recv in RESET");
	atomic_store(&t.qp->state, ODPEMU_QPS_INIT);
	T_EQ(odpemu_post_recv(&t.qp->pub, r, &bad), EINVAL, "second has 3 SGEs");
	T_CHECK(bad == &r[1], "bad is the second");
	T_EQ(atomic_load(&rq->prod), 1, "first posted");
	T_EQ(t_doorbells(c), 1, "doorbell");
	s = ipc_ring_slot(t.map, t.l.rq_offset + IPC_RING_HDR_BYTES, t.l.rq_size, t.l.rq_slot, 0);
	T_EQ(s->wr_id, 7, "rwqe wr_id");
	T_EQ(s->num_sge, 2, "rwqe num_sge");
	T_EQ(s->sge[1].addr, 0x2000, "rwqe sge");
	T_EQ(atomic_load(&((struct ipc_ring *)t.map)->prod), 0, "SQ untouched");
	t_ctx_free(c);
	lib_qp_free(t.qp);
}

static void test_srq(void)
{
	struct lib_context *c = t_ctx_new(true);
	struct lib_srq *srq = calloc(1, sizeof(*srq));
	uint32_t slot = ipc_rq_slot(1), len = ipc_ring_bytes(2, slot);
	void *map = t_memfd_map(len);
	struct odpemu_sge sg = { 0x5000, 64, 3 };
	struct odpemu_recv_wr r = { .wr_id = 9, .sg_list = &sg, .num_sge = 1 }, *bad = NULL;
	struct t_qp t;

	ipc_ring_init(map, 0, 2, slot);
	srq->attr = (struct odpemu_srq_attr){ .max_wr = 2, .max_sge = 1 };
	srq->pub.context = &c->pub;
	T_EQ(lib_srq_attach(srq, map, len), 0, "attach");
	T_EQ(odpemu_post_srq_recv(&srq->pub, &r, &bad), 0, "post 1");
	T_EQ(odpemu_post_srq_recv(&srq->pub, &r, &bad), 0, "post 2");
	T_EQ(odpemu_post_srq_recv(&srq->pub, &r, &bad), ENOMEM, "full");
	T_EQ(t_doorbells(c), 2, "two doorbells");
	T_EQ(((struct ipc_rwqe *)ipc_ring_slot(map, IPC_RING_HDR_BYTES, 2, slot, 1))->sge[0].addr,
	     0x5000, "slot");
	t = make_qp(c, ODPEMU_QPT_RC, &srq->pub);
	T_EQ(odpemu_post_recv(&t.qp->pub, &r, &bad), EINVAL, "QP on an SRQ has no RQ");
	lib_qp_free(t.qp);
	lib_srq_free(srq);
	t_ctx_free(c);
}

/* A layout that is not what ipc_qp_layout computes is refused. */
static void test_attach_checks(void)
{
	struct lib_context *c = t_ctx_new(false);
	struct t_qp t = make_qp(c, ODPEMU_QPT_RC, NULL);
	struct lib_qp *q = calloc(1, sizeof(*q));

	q->cap = t.qp->cap;
	q->pub.context = &c->pub;
	T_EQ(lib_qp_attach(q, t.map, t.l.map_len, t.l.rq_offset + 4096), -EPROTO, "rq_offset");
	T_EQ(lib_qp_attach(q, t.map, t.l.map_len + 4096, t.l.rq_offset), -EPROTO, "map_len");
	((struct ipc_ring *)t.map)->slot = 8;
	T_EQ(lib_qp_attach(q, t.map, t.l.map_len, t.l.rq_offset), -EPROTO, "SQ slot size");
	((struct ipc_ring *)t.map)->slot = t.l.sq_slot;
	((struct ipc_ring *)t.map)->size = 8;
	T_EQ(lib_qp_attach(q, t.map, t.l.map_len, t.l.rq_offset), -EPROTO, "SQ ring size");
	free(q);
	lib_qp_free(t.qp);
	t_ctx_free(c);
}

int main(void)
{
	test_chain();
	test_checks();
	test_full();
	test_ud();
	test_recv();
	test_srq();
	test_attach_checks();
	return t_done("post");
}
