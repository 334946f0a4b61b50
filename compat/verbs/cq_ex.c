/* SPDX-License-Identifier: MIT */
/* The ibv_cq_ex polling API: start_poll / next_poll take one completion (ENOENT when
 * there is none, and then no end_poll, as in rdma-core), keep status and wr_id current,
 * and the read_* methods read the rest of it. Completion timestamps are the daemon's
 * CLOCK_MONOTONIC nanoseconds (hca_core_clock 1 GHz); wallclock ones are those shifted
 * to CLOCK_REALTIME. */
#include <time.h>

#include "compat.h"

static struct cv_cq *cq_of(struct ibv_cq_ex *cqx)
{
	return (struct cv_cq *)cqx;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int poll_one(struct ibv_cq_ex *cqx)
{
	struct cv_cq *cq = cq_of(cqx);
	int n = odpemu_poll_cq_ts(cq->odp, 1, (struct odpemu_wc *)&cq->cur, &cq->cur_ts);

	if (n < 0)
		return errno ? errno : ENODEV;
	if (n == 0)
		return ENOENT;
	if (cq->ctx->ipv4 && (cq->cur.wc_flags & IBV_WC_GRH))
		cq->cur.sl = 2;		/* RoCEv2 over IPv4, as post.c's cv_poll_cq */
	cqx->status = cq->cur.status;
	cqx->wr_id = cq->cur.wr_id;
	return 0;
}

static int start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	if (attr && attr->comp_mask)
		return EINVAL;
	return poll_one(cqx);
}

static int next_poll(struct ibv_cq_ex *cqx)
{
	return poll_one(cqx);
}

static void end_poll(struct ibv_cq_ex *cqx)
{
	(void)cqx;	/* nothing held between start and end: libodpemu locks per poll */
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *c) { return cq_of(c)->cur.opcode; }
static uint32_t read_vendor_err(struct ibv_cq_ex *c) { return cq_of(c)->cur.vendor_err; }
static uint32_t read_byte_len(struct ibv_cq_ex *c) { return cq_of(c)->cur.byte_len; }
static __be32 read_imm_data(struct ibv_cq_ex *c) { return cq_of(c)->cur.imm_data; }
static uint32_t read_qp_num(struct ibv_cq_ex *c) { return cq_of(c)->cur.qp_num; }
static uint32_t read_src_qp(struct ibv_cq_ex *c) { return cq_of(c)->cur.src_qp; }
static unsigned int read_wc_flags(struct ibv_cq_ex *c) { return cq_of(c)->cur.wc_flags; }
static uint32_t read_slid(struct ibv_cq_ex *c) { return cq_of(c)->cur.slid; }
static uint8_t read_sl(struct ibv_cq_ex *c) { return cq_of(c)->cur.sl; }
static uint8_t read_dlid_path_bits(struct ibv_cq_ex *c) { return cq_of(c)->cur.dlid_path_bits; }
static uint64_t read_completion_ts(struct ibv_cq_ex *c) { return cq_of(c)->cur_ts; }

static uint64_t read_completion_wallclock_ns(struct ibv_cq_ex *c)
{
	return cq_of(c)->cur_ts + clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
}

void cv_cq_ex_init(struct cv_cq *cq)
{
	struct ibv_cq_ex *x = &cq->cqx;

	x->start_poll = start_poll;
	x->next_poll = next_poll;
	x->end_poll = end_poll;
	x->read_opcode = read_opcode;
	x->read_vendor_err = read_vendor_err;
	x->read_byte_len = read_byte_len;
	x->read_imm_data = read_imm_data;
	x->read_qp_num = read_qp_num;
	x->read_src_qp = read_src_qp;
	x->read_wc_flags = read_wc_flags;
	x->read_slid = read_slid;
	x->read_sl = read_sl;
	x->read_dlid_path_bits = read_dlid_path_bits;
	x->read_completion_ts = read_completion_ts;
	x->read_completion_wallclock_ns = read_completion_wallclock_ns;
	/* read_cvlan, read_flow_tag, read_tm_info stay NULL: create_cq_ex refuses the flags
	 * that would make a client call them. */
}
