/* SPDX-License-Identifier: MIT */
/*
 * The send queue caps a device grants. rxe (rxe_qp.c rxe_qp_chk_cap) and odpemu grant what
 * is asked. mlx5 sizes one send WQE for the QP and grants all the inline room it has: the
 * user-space provider (rdma-core providers/mlx5/verbs.c mlx5_calc_send_wqe and
 * mlx5_calc_sq_size) computes
 *   overhead = ctrl segment + the largest operation segment + the transport's segment
 *   wqe      = max(overhead + 16 * max_send_sge, overhead + align16(4 + max_inline))
 *              rounded up to the 64-byte basic block, at most max_sq_desc_sz
 *   granted  = wqe - overhead - 4 (the inline segment's byte count)
 * and writes the granted value back into ibv_qp_init_attr.cap.max_inline_data. So a
 * ConnectX RC QP asked for 64 inline bytes gets 124, and one asked for none gets 60.
 */
#include <errno.h>

#include "device_attr.h"

enum {
	MLX5_CTRL = 16,		/* struct mlx5_wqe_ctrl_seg */
	MLX5_DATA = 16,		/* struct mlx5_wqe_data_seg */
	MLX5_INL = 4,		/* struct mlx5_wqe_inl_data_seg */
	MLX5_AV = 48,		/* struct mlx5_wqe_datagram_seg (an mlx5_wqe_av) */
	/* Memory-window bind / local invalidate, the largest op of an RC/UC QP created
	 * without send_ops_flags: ctrl + umr ctrl (48) + mkey context (64) + max(klm, 64) */
	MLX5_MW = MLX5_CTRL + 48 + 64 + 64,
	MLX5_BB = 64,		/* MLX5_SEND_WQE_BB */
	/* max_sq_desc_sz: the FW's max_wqe_sz_sq, 1024 on ConnectX-4/5/6 (perftest PR
	 * #176: 1004 inline bytes on a ConnectX-4 Lx with a SEND-only QP = 1024 - 16 - 4) */
	MLX5_MAX_WQE = 1024,
};

static unsigned align_up(unsigned n, unsigned a)
{
	return (n + a - 1) / a * a;
}

/* sq_overhead with the default operations of ibv_create_qp: RC and UC may bind memory
 * windows; UD sends carry an address vector. */
static unsigned mlx5_overhead(enum odpemu_qp_type type)
{
	return type == ODPEMU_QPT_UD ? MLX5_CTRL + MLX5_AV : MLX5_MW;
}

static int mlx5_sq_caps(enum odpemu_qp_type type, unsigned max_send_wr, unsigned max_send_sge,
			unsigned *max_inline)
{
	unsigned over = mlx5_overhead(type), size, inl = 0, wqe;

	if (!max_send_wr)
		return 0;	/* no send queue: the provider leaves the caps as asked */
	if (*max_inline > MLX5_MAX_WQE || max_send_sge > (MLX5_MAX_WQE - over) / MLX5_DATA)
		return -EINVAL;
	if (*max_inline)
		inl = over + align_up(MLX5_INL + *max_inline, 16);
	size = over + max_send_sge * MLX5_DATA;
	if (inl > size)
		size = inl;
	if (size > MLX5_MAX_WQE)
		return -EINVAL;
	wqe = align_up(size, MLX5_BB);
	*max_inline = wqe - over - MLX5_INL;
	return 0;
}

int nic_sq_caps(const struct nic_device_attr *a, enum odpemu_qp_type type,
		unsigned max_send_wr, unsigned max_send_sge, unsigned *max_inline)
{
	if (a->sq_rule == NIC_SQ_MLX5)
		return mlx5_sq_caps(type, max_send_wr, max_send_sge, max_inline);
	return 0;
}
