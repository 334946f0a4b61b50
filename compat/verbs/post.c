/* SPDX-License-Identifier: MIT */
/* The fast path: post_send, post_recv, post_srq_recv, poll_cq, req_notify_cq, reached
 * through ctx->ops from the verbs.h inlines.
 *
 * libodpemu's work requests, SGEs and completions have the ABI layouts of rdma-core's
 * (asserted below), so RC sends, all receives and every poll pass the client's structs
 * straight through: no copy, no lock or system call beyond libodpemu's own (its
 * per-queue spinlock, a doorbell only when the daemon sleeps). Only UD sends are copied,
 * in batches, to swap each ibv_ah for the libodpemu AH behind it. */
#include <string.h>

#include "compat.h"

#define SAME_FIELD(a, b, f) \
	static_assert(offsetof(struct a, f) == offsetof(struct b, f) && \
		      sizeof(((struct a *)0)->f) == sizeof(((struct b *)0)->f), #a "." #f)

SAME_FIELD(ibv_send_wr, odpemu_send_wr, wr_id);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, next);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, sg_list);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, num_sge);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, opcode);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, send_flags);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, imm_data);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, wr.rdma.remote_addr);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, wr.rdma.rkey);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, wr.atomic.remote_addr);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, wr.atomic.compare_add);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, wr.atomic.swap);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, wr.atomic.rkey);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, wr.ud.ah);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, wr.ud.remote_qpn);
SAME_FIELD(ibv_send_wr, odpemu_send_wr, wr.ud.remote_qkey);
static_assert(sizeof(struct ibv_send_wr) >= offsetof(struct odpemu_send_wr, bind_mw),
	      "send_wr copy");
SAME_FIELD(ibv_recv_wr, odpemu_recv_wr, wr_id);
SAME_FIELD(ibv_recv_wr, odpemu_recv_wr, next);
SAME_FIELD(ibv_recv_wr, odpemu_recv_wr, sg_list);
SAME_FIELD(ibv_recv_wr, odpemu_recv_wr, num_sge);
SAME_FIELD(ibv_sge, odpemu_sge, addr);
SAME_FIELD(ibv_sge, odpemu_sge, length);
SAME_FIELD(ibv_sge, odpemu_sge, lkey);
SAME_FIELD(ibv_wc, odpemu_wc, wr_id);
SAME_FIELD(ibv_wc, odpemu_wc, status);
SAME_FIELD(ibv_wc, odpemu_wc, opcode);
SAME_FIELD(ibv_wc, odpemu_wc, vendor_err);
SAME_FIELD(ibv_wc, odpemu_wc, byte_len);
SAME_FIELD(ibv_wc, odpemu_wc, imm_data);
SAME_FIELD(ibv_wc, odpemu_wc, qp_num);
SAME_FIELD(ibv_wc, odpemu_wc, src_qp);
SAME_FIELD(ibv_wc, odpemu_wc, wc_flags);
SAME_FIELD(ibv_wc, odpemu_wc, pkey_index);
SAME_FIELD(ibv_wc, odpemu_wc, slid);
SAME_FIELD(ibv_wc, odpemu_wc, sl);
SAME_FIELD(ibv_wc, odpemu_wc, dlid_path_bits);
static_assert(sizeof(struct ibv_wc) == sizeof(struct odpemu_wc), "wc array stride");

/* The numbers are rdma-core's (include/odpemu/verbs_types.h). */
static_assert(IBV_WR_RDMA_WRITE == (int)ODPEMU_WR_RDMA_WRITE && IBV_WR_SEND == (int)ODPEMU_WR_SEND &&
	      IBV_WR_RDMA_READ == (int)ODPEMU_WR_RDMA_READ &&
	      IBV_WR_ATOMIC_FETCH_AND_ADD == (int)ODPEMU_WR_ATOMIC_FETCH_AND_ADD &&
	      IBV_WR_SEND_WITH_INV == (int)ODPEMU_WR_SEND_WITH_INV &&
	      IBV_WR_ATOMIC_WRITE == (int)ODPEMU_WR_ATOMIC_WRITE, "wr opcodes");
static_assert(IBV_WC_RECV_RDMA_WITH_IMM == (int)ODPEMU_WC_RECV_RDMA_WITH_IMM &&
	      IBV_WC_ATOMIC_WRITE == (int)ODPEMU_WC_ATOMIC_WRITE &&
	      IBV_WC_GENERAL_ERR == (int)ODPEMU_WC_GENERAL_ERR, "wc values");
static_assert(IBV_SEND_INLINE == (int)ODPEMU_SEND_INLINE && IBV_WC_WITH_INV == (int)ODPEMU_WC_WITH_INV,
	      "flags");

#define UD_BATCH	16
#define SL_ROCE_V2_IPV4	2	/* mlx5's report for a RoCEv2 packet that came over IPv4 */

/* FLUSH has no fields in rdma-core 44's ibv_send_wr: only ibv_wr_flush posts it. A
 * BIND_MW names the client's ibv_mw and ibv_mr: copied to name libodpemu's. */
static bool passes_through(const struct ibv_send_wr *wr)
{
	for (; wr; wr = wr->next)
		if (wr->opcode == (enum ibv_wr_opcode)IBV_WR_FLUSH || wr->opcode == IBV_WR_BIND_MW)
			return false;
	return true;
}

/* The prefix both structs share, then what differs: the AH (UD), FLUSH (refused), the
 * window and MR of a BIND_MW. */
static void to_odp(struct odpemu_send_wr *o, const struct ibv_send_wr *wr, bool ud)
{
	memcpy(o, wr, offsetof(struct odpemu_send_wr, bind_mw));
	if (wr->opcode == (enum ibv_wr_opcode)IBV_WR_FLUSH)
		o->opcode = (enum odpemu_wr_opcode)-1;		/* libodpemu: EINVAL */
	if (wr->opcode == IBV_WR_BIND_MW)
		cv_bind_to_odp(o, wr);
	if (ud)
		o->wr.ud.ah = wr->wr.ud.ah ? cv_ah(wr->wr.ud.ah)->odp : NULL;
}

/* The chain in batches of copies; *bad_wr maps back to the client's WR. */
static int post_copied(struct cv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	bool ud = qp->qpx.qp_base.qp_type == IBV_QPT_UD;	/* else: FLUSH, BIND_MW */

	while (wr) {
		struct odpemu_send_wr b[UD_BATCH], *bad = NULL;
		struct ibv_send_wr *orig[UD_BATCH];
		int n = 0, rc;

		for (; wr && n < UD_BATCH; wr = wr->next, n++) {
			orig[n] = wr;
			to_odp(&b[n], wr, ud);
			b[n].next = &b[n + 1];
		}
		b[n - 1].next = NULL;
		if ((rc = cv_post_odp(qp, b, &bad))) {
			*bad_wr = orig[bad - b];
			return rc;
		}
	}
	return 0;
}

int cv_post_odp(struct cv_qp *qp, struct odpemu_send_wr *wr, struct odpemu_send_wr **bad)
{
	return odpemu_post_send(qp->odp, wr, bad);
}

int cv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct cv_qp *q = cv_qp(qp);

	if (qp->qp_type != IBV_QPT_UD && passes_through(wr))
		return odpemu_post_send(q->odp, (struct odpemu_send_wr *)wr,
					(struct odpemu_send_wr **)bad_wr);
	return post_copied(q, wr, bad_wr);
}

int cv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return odpemu_post_recv(cv_qp(qp)->odp, (struct odpemu_recv_wr *)wr,
				(struct odpemu_recv_wr **)bad_wr);
}

int cv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return odpemu_post_srq_recv(cv_srq(srq)->odp, (struct odpemu_recv_wr *)wr,
				    (struct odpemu_recv_wr **)bad_wr);
}

int cv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct cv_cq *c = cv_cq(cq);
	int n = odpemu_poll_cq(c->odp, num_entries, (struct odpemu_wc *)wc);

	if (n > 0 && c->ctx->ipv4)
		for (int i = 0; i < n; i++)
			if (wc[i].wc_flags & IBV_WC_GRH)
				wc[i].sl = SL_ROCE_V2_IPV4;
	return n;
}

int cv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return odpemu_req_notify_cq(cv_cq(cq)->odp, solicited_only);
}
