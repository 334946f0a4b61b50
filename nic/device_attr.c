/* SPDX-License-Identifier: MIT */
#include "device_attr.h"

#include <string.h>

void nic_device_attr_default(struct nic_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0x1000 | 0x200000; /* 4 KiB pages and 2 MiB blocks (pagetable/) */
	a->vendor_id = 0xFFFFFF;              /* as rxe: no IEEE OUI of our own */
	a->vendor_part_id = 0x0D9E;           /* "ODPE" */
	a->max_qp = 1 << 16;
	a->max_qp_wr = 1 << 14;
	a->max_sge = 32;
	a->max_cq = 1 << 14;
	a->max_cqe = (1 << 22) - 1;	/* as mlx5: libfabric's rxm asks (rx + tx size) x 1024 */
	a->max_mr = 1 << 18;
	a->max_mw = 1 << 16;	/* rxe's RXE_MAX_MW */
	a->max_pd = 1 << 16;
	a->max_srq = 1 << 10;
	a->max_srq_wr = 1 << 14;
	a->max_srq_sge = 27;
	a->max_inline_data = 160;
	a->max_qp_rd_atom = 128;
	a->max_qp_init_rd_atom = 128;
	a->max_pkeys = 1;   /* RoCE: the default partition 0xFFFF only */
	a->gid_tbl_len = 16;
	/* rxe's RXE_MAX_MCAST_QP_ATTACH (56) QPs per group; groups: 256, not rxe's 8192,
	 * because each joined group costs the daemon a socket (emu/io/mcast.c) and 8192
	 * would pass a default open-files limit; the total is both multiplied. */
	a->max_mcast_grp = 256;
	a->max_mcast_qp_attach = 56;
	a->max_total_mcast_qp_attach = 256 * 56;
	/* RC: every ODP operation, as rxe advertises; UC: what UC does, SEND, RECV and WRITE
	 * (a fault on its responder stalls, or drops the message under the rnr policy: UC
	 * has no RNR NAK); UD: sends and receives. IMPLICIT:
	 * an implicit MR is one IO page table over the whole 47-bit space (nic/mr.c), where
	 * rxe has none and mlx5 builds it from 1 GiB children. */
	a->odp.general_caps = ODPEMU_ODP_SUPPORT | ODPEMU_ODP_SUPPORT_IMPLICIT;
	a->odp.rc_odp_caps = ODPEMU_ODP_SEND | ODPEMU_ODP_RECV | ODPEMU_ODP_WRITE
		| ODPEMU_ODP_READ | ODPEMU_ODP_ATOMIC | ODPEMU_ODP_SRQ_RECV | ODPEMU_ODP_FLUSH
		| ODPEMU_ODP_ATOMIC_WRITE;
	a->odp.uc_odp_caps = ODPEMU_ODP_SEND | ODPEMU_ODP_RECV | ODPEMU_ODP_WRITE;
	a->odp.ud_odp_caps = ODPEMU_ODP_SEND | ODPEMU_ODP_RECV | ODPEMU_ODP_SRQ_RECV;
	/* rxe's set where odpemu does the same: RNR NAKs, windows of type 1 and 2B, FLUSH
	 * (both placement types, nic/resp.c) and ATOMIC WRITE */
	a->device_cap_flags = ODPEMU_DEVICE_CAPS_ALL;
}
