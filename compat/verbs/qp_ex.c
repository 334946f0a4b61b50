/* SPDX-License-Identifier: MIT */
/* The ibv_qp_ex work-request API (ibv_wr_start, ibv_wr_send, ibv_wr_set_sge, ...,
 * ibv_wr_complete): each operation starts a slot from qp->wr_id and qp->wr_flags, the
 * setters fill the latest slot, and wr_complete posts the batch as one libodpemu chain.
 * As in rdma-core the caller serialises start..complete on one QP. Errors found while
 * building (too many SGEs, inline data beyond the QP's size, a setter with no WR) are
 * kept and returned by wr_complete, which then posts nothing. */
#include <stdlib.h>
#include <string.h>

#include "compat.h"

#define FIRST_SLOTS	8

static struct cv_qp *qp_of(struct ibv_qp_ex *qpx)
{
	return (struct cv_qp *)qpx;
}

static void batch_error(struct cv_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* A new slot for one operation, or NULL (the error kept). */
static struct cv_wr_slot *slot_new(struct ibv_qp_ex *qpx, enum odpemu_wr_opcode opcode)
{
	struct cv_wr_batch *b = &qp_of(qpx)->batch;
	struct cv_wr_slot *s;

	if (b->n == b->cap) {
		unsigned cap = b->cap ? b->cap * 2 : FIRST_SLOTS;
		struct cv_wr_slot *grown = realloc(b->slot, cap * sizeof(*grown));

		if (!grown) {
			batch_error(b, ENOMEM);
			return NULL;
		}
		b->slot = grown;
		b->cap = cap;
	}
	s = &b->slot[b->n++];
	memset(&s->wr, 0, sizeof(s->wr));
	s->wr.wr_id = qpx->wr_id;
	s->wr.send_flags = qpx->wr_flags;
	s->wr.opcode = opcode;
	return s;
}

/* The slot the setters fill: the latest operation's. */
static struct cv_wr_slot *slot_last(struct ibv_qp_ex *qpx)
{
	struct cv_wr_batch *b = &qp_of(qpx)->batch;

	if (!b->n) {
		batch_error(b, EINVAL);
		return NULL;
	}
	return &b->slot[b->n - 1];
}

static void wr_start(struct ibv_qp_ex *qpx)
{
	qp_of(qpx)->batch.n = 0;
	qp_of(qpx)->batch.err = 0;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	wr_start(qpx);
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct cv_qp *qp = qp_of(qpx);
	struct cv_wr_batch *b = &qp->batch;
	struct odpemu_send_wr *bad;
	int rc = b->err;

	if (!rc && b->n) {
		for (unsigned i = 0; i < b->n; i++) {
			struct odpemu_send_wr *w = &b->slot[i].wr;

			if (w->send_flags & IBV_SEND_INLINE)
				w->sg_list = w->num_sge ? b->slot[i].sge : NULL;
			else if (w->num_sge)
				w->sg_list = b->slot[i].sge;
			w->next = i + 1 < b->n ? &b->slot[i + 1].wr : NULL;
		}
		rc = cv_post_odp(qp, &b->slot[0].wr, &bad);
	}
	wr_start(qpx);
	return rc;
}

/* ---- operations ---- */

static void rdma(struct ibv_qp_ex *qpx, enum odpemu_wr_opcode op, uint32_t rkey, uint64_t addr)
{
	struct cv_wr_slot *s = slot_new(qpx, op);

	if (s) {
		s->wr.wr.rdma.remote_addr = addr;
		s->wr.wr.rdma.rkey = rkey;
	}
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	rdma(qpx, ODPEMU_WR_RDMA_WRITE, rkey, addr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, __be32 imm)
{
	rdma(qpx, ODPEMU_WR_RDMA_WRITE_WITH_IMM, rkey, addr);
	if (qp_of(qpx)->batch.err == 0)
		slot_last(qpx)->wr.imm_data = imm;
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	rdma(qpx, ODPEMU_WR_RDMA_READ, rkey, addr);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	slot_new(qpx, ODPEMU_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct cv_wr_slot *s = slot_new(qpx, ODPEMU_WR_SEND_WITH_IMM);

	if (s)
		s->wr.imm_data = imm;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct cv_wr_slot *s = slot_new(qpx, ODPEMU_WR_SEND_WITH_INV);

	if (s)
		s->wr.invalidate_rkey = rkey;
}

static void atomic(struct ibv_qp_ex *qpx, enum odpemu_wr_opcode op, uint32_t rkey, uint64_t addr,
		   uint64_t compare_add, uint64_t swap)
{
	struct cv_wr_slot *s = slot_new(qpx, op);

	if (s) {
		s->wr.wr.atomic.remote_addr = addr;
		s->wr.wr.atomic.rkey = rkey;
		s->wr.wr.atomic.compare_add = compare_add;
		s->wr.wr.atomic.swap = swap;
	}
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr,
			      uint64_t compare, uint64_t swap)
{
	atomic(qpx, ODPEMU_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, uint64_t add)
{
	atomic(qpx, ODPEMU_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void set_inline(struct ibv_qp_ex *qpx, size_t num_buf, const struct ibv_data_buf *bufs);

/* IBA 9.4.6: 8 bytes placed atomically; carried inline from the caller's buffer. */
static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, const void *data)
{
	struct ibv_data_buf buf = { .addr = (void *)(uintptr_t)data, .length = 8 };
	struct cv_wr_slot *s;

	rdma(qpx, ODPEMU_WR_ATOMIC_WRITE, rkey, addr);
	if (!(s = qp_of(qpx)->batch.err ? NULL : slot_last(qpx)))
		return;
	s->wr.send_flags |= IBV_SEND_INLINE;
	set_inline(qpx, 1, &buf);
}

static void wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, size_t len,
		     uint8_t type, uint8_t level)
{
	struct cv_wr_slot *s;

	if (len > UINT32_MAX) {
		batch_error(&qp_of(qpx)->batch, EINVAL);
		return;
	}
	if (!(s = slot_new(qpx, ODPEMU_WR_FLUSH)))
		return;
	s->wr.wr.flush.remote_addr = addr;
	s->wr.wr.flush.rkey = rkey;
	s->wr.wr.flush.len = (uint32_t)len;
	s->wr.wr.flush.type = type;
	s->wr.wr.flush.level = level;
}

/* A type 2 window bound to info's range with rkey (same index, the caller's key byte). */
static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };
	struct cv_wr_slot *s;

	if (!mw || !info || (info->mw_access_flags & IBV_ACCESS_ZERO_BASED)) {
		batch_error(&qp_of(qpx)->batch, EINVAL);
		return;
	}
	if (!(s = slot_new(qpx, ODPEMU_WR_BIND_MW)))
		return;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = *info;
	cv_bind_to_odp(&s->wr, &wr);
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct cv_wr_slot *s = slot_new(qpx, ODPEMU_WR_LOCAL_INV);

	if (s)
		s->wr.invalidate_rkey = rkey;
}

static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr; (void)hdr_sz; (void)mss;
	batch_error(&qp_of(qpx)->batch, EOPNOTSUPP);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	(void)srqn;
	batch_error(&qp_of(qpx)->batch, EOPNOTSUPP);
}

/* ---- setters ---- */

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
			   uint32_t remote_qkey)
{
	struct cv_wr_slot *s = slot_last(qpx);

	if (s) {
		s->wr.wr.ud.ah = ah ? cv_ah(ah)->odp : NULL;
		s->wr.wr.ud.remote_qpn = remote_qpn;
		s->wr.wr.ud.remote_qkey = remote_qkey;
	}
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge, const struct ibv_sge *sg)
{
	struct cv_wr_slot *s = slot_last(qpx);

	if (!s)
		return;
	if (num_sge > CV_WR_SGE || (num_sge && !sg)) {
		batch_error(&qp_of(qpx)->batch, EINVAL);
		return;
	}
	memcpy(s->sge, sg, num_sge * sizeof(*sg));
	s->wr.num_sge = (int)num_sge;
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sge);
}

/* The bytes are copied now (the caller may reuse its buffers), into one SGE over the
 * slot's own buffer; libodpemu copies them into the ring at wr_complete. */
static void set_inline(struct ibv_qp_ex *qpx, size_t num_buf, const struct ibv_data_buf *bufs)
{
	struct cv_wr_slot *s = slot_last(qpx);
	size_t len = 0;

	if (!s)
		return;
	for (size_t i = 0; i < num_buf; i++) {
		if (bufs[i].length > qp_of(qpx)->max_inline - len) {
			batch_error(&qp_of(qpx)->batch, EINVAL);
			return;
		}
		if (bufs[i].length)	/* an empty buffer's addr may be NULL */
			memcpy(s->inl + len, bufs[i].addr, bufs[i].length);
		len += bufs[i].length;
	}
	s->sge[0] = (struct odpemu_sge){ .addr = (uintptr_t)s->inl, .length = (uint32_t)len };
	s->wr.num_sge = len ? 1 : 0;
	s->wr.send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	set_inline(qpx, 1, &buf);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *bufs)
{
	set_inline(qpx, num_buf, bufs);
}

int cv_qp_ex_init(struct cv_qp *qp)
{
	struct ibv_qp_ex *x = &qp->qpx;

	/* 956: the largest max_inline_data of a personality (cx*, nic/personality.c) */
	static_assert(CV_WR_INLINE >= 956, "the device's max_inline_data fits a slot");
	if (qp->max_inline > CV_WR_INLINE)
		return EINVAL;
	x->comp_mask = 0;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_atomic_write = wr_atomic_write;
	qp->wr_flush = wr_flush;
	return 0;
}
