/* SPDX-License-Identifier: MIT */
/*
 * The device personalities (docs/personalities.md). Each value says where it comes from:
 *   [cx5-devinfo]  ibv_devinfo -v of a ConnectX-5 (4119, fw 16.23.1020) in Open MPI PR #6137,
 *                  the same limits in UCX issue #9830 (4119, fw 16.27.1016, upstream driver);
 *   [cx6-devinfo]  ibv_devinfo -v of a ConnectX-6 (4123, fw 20.29.1016) in UCX issue #8229,
 *                  and a ConnectX-6-family output with its ODP caps in UCX issue #9727;
 *   [odp-5376]     the ODP caps of the MLNX_OFED 5 device in UCX issue #5376;
 *   [mlx5-query]   Linux drivers/infiniband/hw/mlx5/main.c mlx5_ib_query_device;
 *   [mlx5-odp]     Linux drivers/infiniband/hw/mlx5/odp.c mlx5_ib_internal_fill_odp_caps;
 *   [rxe-param]    Linux 6.16 drivers/infiniband/sw/rxe/rxe_param.h (DEFAULT_MAX_VALUE = 1 << 20);
 *   [rxe-init]     Linux 6.16 drivers/infiniband/sw/rxe/rxe.c rxe_init_device_param;
 *   [rxe-caps]     Linux 6.16 rxe_param.h RXE_DEVICE_CAP_FLAGS: FLUSH_GLOBAL and
 *                  FLUSH_PERSISTENT and ATOMIC_WRITE since 6.2 (ATOMIC_WRITE on 64-bit
 *                  builds: rxe's atomic write is one 8-byte store);
 *   [mr-access]    Linux include/rdma/ib_verbs.h ib_check_mr_access: FLUSH access on a
 *                  device without that FLUSH cap is -EOPNOTSUPP.
 * Device capability flags: only those odpemu honours are reported (ODPEMU_DEVICE_CAPS_ALL
 * says which); a real device's others (XRC, checksum offloads, BAD_PKEY_CNTR, ...) are not.
 * Where odpemu cannot honour a device's value, the entry says so and what it reports.
 */
#include "personality.h"

#include <string.h>

/* The largest queue the shared-memory rings hold (ipc/ipc_ring.h IPC_RING_MAX): a device
 * value above it is reported as this, so a program sizing its queues to max_qp_wr works. */
#define RING_MAX (1u << 16)

/* What every ConnectX generation here shares; the generations differ in ids and ODP. */
static void mlx5_common(struct nic_device_attr *a)
{
	nic_device_attr_default(a);	/* multicast, P_Keys, GIDs stay odpemu's */
	a->vendor_id = 0x02c9;			/* [cx5-devinfo] Mellanox OUI */
	a->hw_ver = 0;				/* [cx5-devinfo] */
	a->max_mr_size = UINT64_MAX;		/* [cx5-devinfo] */
	a->page_size_cap = 0xfffffffffffff000ull; /* [cx5-devinfo] */
	a->max_qp = 262144;			/* [cx5-devinfo] 1 << log_max_qp */
	a->max_qp_wr = 32768;			/* [cx5-devinfo] 1 << log_max_qp_sz */
	/* [cx5-devinfo] 30: [mlx5-query] (min(max_wqe_sz_sq, 512) - ctrl - raddr) / 16 */
	a->max_sge = 30;
	a->max_cq = 16777216;			/* [cx5-devinfo] */
	a->max_cqe = 4194303;			/* [cx5-devinfo] (1 << log_max_cq_sz) - 1 */
	a->max_mr = 16777216;			/* [cx5-devinfo] 1 << log_max_mkey */
	a->max_pd = 16777216;			/* [cx5-devinfo] */
	a->max_mw = 16777216;			/* [mlx5-query] max_mw = 1 << log_max_mkey */
	a->max_qp_rd_atom = 16;			/* [cx5-devinfo] */
	a->max_qp_init_rd_atom = 16;		/* [cx5-devinfo] */
	a->max_srq = 8388608;			/* [mlx5-query] 1 << log_max_srq */
	a->max_srq_wr = 32767;			/* [mlx5-query] (1 << log_max_srq_sz) - 1 */
	a->max_srq_sge = 31;			/* [cx6-devinfo] UCX #9727: max_srq_sge 31 */
	/* The largest inline a send WQE of 1024 bytes (FW max_wqe_sz_sq) can grant: a UD QP's
	 * (nic/sq_caps.c); libfabric PR #3790 found RC 988 / UD 512 on a 4115 with an older
	 * provider, perftest PR #176 RC 1004 on a ConnectX-4 Lx (SEND-only qp_ex). */
	a->max_inline_data = 956;
	a->sq_rule = NIC_SQ_MLX5;
	/* [mlx5-query]: CHANGE_PHY_PORT, PORT_ACTIVE_EVENT, SYS_IMAGE_GUID and RC_RNR_NAK_GEN
	 * always, MEM_WINDOW and MEM_WINDOW_TYPE_2B with the imaicl cap (ConnectX-4 on);
	 * never FLUSH_GLOBAL, FLUSH_PERSISTENT or ATOMIC_WRITE: mlx5 offers neither RDMA
	 * FLUSH nor ATOMIC WRITE (rdma-core providers/mlx5/qp.c: no IBV_QP_EX_WITH_FLUSH or
	 * _WITH_ATOMIC_WRITE in MLX5_SUPPORTED_SEND_OPS_FLAGS_RC). */
	a->device_cap_flags = ODPEMU_DEVICE_CAPS_ALL & ~(ODPEMU_DEVICE_FLUSH_ANY |
							  ODPEMU_DEVICE_ATOMIC_WRITE);
}

static void cx4_attr(struct nic_device_attr *a)
{
	mlx5_common(a);
	a->vendor_part_id = 4115;	/* PCI 15b3:1013, ConnectX-4 (libfabric PR #3790) */
	/* [mlx5-odp] IMPLICIT needs the FW's fixed_buffer_size, null_mkey and
	 * umr_extended_translation_offset, which ConnectX-4 lacks: explicit ODP only.
	 * Transport caps: [odp-5376] (no SRQ, no atomic). */
	a->odp.general_caps = ODPEMU_ODP_SUPPORT;
	a->odp.rc_odp_caps = ODPEMU_ODP_SEND | ODPEMU_ODP_RECV | ODPEMU_ODP_WRITE | ODPEMU_ODP_READ;
	a->odp.uc_odp_caps = 0;
	a->odp.ud_odp_caps = ODPEMU_ODP_SEND;
}

static void cx5_attr(struct nic_device_attr *a)
{
	mlx5_common(a);
	a->vendor_part_id = 4119;	/* [cx5-devinfo] */
	/* [odp-5376] and UCX #9727: ODP_SUPPORT | ODP_SUPPORT_IMPLICIT; RC SEND RECV WRITE
	 * READ SRQ; UC none; UD SEND */
	a->odp.general_caps = ODPEMU_ODP_SUPPORT | ODPEMU_ODP_SUPPORT_IMPLICIT;
	a->odp.rc_odp_caps = ODPEMU_ODP_SEND | ODPEMU_ODP_RECV | ODPEMU_ODP_WRITE | ODPEMU_ODP_READ
		| ODPEMU_ODP_SRQ_RECV;
	a->odp.uc_odp_caps = 0;
	a->odp.ud_odp_caps = ODPEMU_ODP_SEND;
}

static void cx6_attr(struct nic_device_attr *a)
{
	cx5_attr(a);			/* [cx6-devinfo]: the same limits and ODP caps */
	a->vendor_part_id = 4123;	/* [cx6-devinfo] */
}

static void rxe_attr(struct nic_device_attr *a)
{
	nic_device_attr_default(a);	/* multicast, P_Keys, GIDs stay odpemu's */
	a->vendor_id = 0xFFFFFF;	/* [rxe-param] RXE_VENDOR_ID */
	a->vendor_part_id = 0;		/* [rxe-init] not set */
	a->hw_ver = 0;			/* [rxe-init] not set */
	a->max_mr_size = UINT64_MAX;	/* [rxe-param] RXE_MAX_MR_SIZE */
	a->page_size_cap = 0xfffff000;	/* [rxe-param] RXE_PAGE_SIZE_CAP */
	a->max_qp = (1u << 20) - 16;	/* [rxe-param] RXE_MAX_QP */
	a->max_qp_wr = RING_MAX;	/* [rxe-param] 1 << 20: above RING_MAX */
	a->max_sge = 32;		/* [rxe-param] RXE_MAX_SGE */
	a->max_cq = 1u << 20;		/* [rxe-param] RXE_MAX_CQ */
	a->max_cqe = (1u << 15) - 1;	/* [rxe-init] (1 << RXE_MAX_LOG_CQE) - 1 */
	a->max_mr = (1u << 19) - 1;	/* [rxe-param] RXE_MAX_MR */
	a->max_mw = (1u << 19) - 1;	/* [rxe-param] RXE_MAX_MW */
	a->max_pd = 1u << 20;		/* [rxe-param] RXE_MAX_PD */
	a->max_qp_rd_atom = 128;	/* [rxe-param] RXE_MAX_QP_RD_ATOM */
	a->max_qp_init_rd_atom = 128;	/* [rxe-param] RXE_MAX_QP_INIT_RD_ATOM */
	a->max_srq = (1u << 20) - 0x20001; /* [rxe-param] RXE_MAX_SRQ */
	a->max_srq_wr = RING_MAX;	/* [rxe-param] 1 << 20: above RING_MAX */
	a->max_srq_sge = 27;		/* [rxe-param] RXE_MAX_SRQ_SGE */
	a->max_inline_data = 512;	/* [rxe-param] RXE_MAX_INLINE_DATA: 32 SGEs of 16 bytes */
	a->sq_rule = NIC_SQ_EXACT;	/* rxe_qp.c grants what is asked */
	/* [rxe-caps]: MEM_WINDOW, MEM_WINDOW_TYPE_2B, FLUSH_GLOBAL, FLUSH_PERSISTENT and
	 * ATOMIC_WRITE among them: all that odpemu reports */
	a->device_cap_flags = ODPEMU_DEVICE_CAPS_ALL;
	/* [rxe-init] "IB_ODP_SUPPORT_IMPLICIT is not supported right now"; RC: SEND RECV
	 * WRITE READ ATOMIC SRQ_RECV, FLUSH and ATOMIC_WRITE (6.16); UD: SEND RECV SRQ_RECV */
	a->odp.general_caps = ODPEMU_ODP_SUPPORT;
	a->odp.rc_odp_caps = ODPEMU_ODP_SEND | ODPEMU_ODP_RECV | ODPEMU_ODP_WRITE | ODPEMU_ODP_READ
		| ODPEMU_ODP_ATOMIC | ODPEMU_ODP_SRQ_RECV | ODPEMU_ODP_FLUSH
		| ODPEMU_ODP_ATOMIC_WRITE;
	a->odp.uc_odp_caps = 0;
	a->odp.ud_odp_caps = ODPEMU_ODP_SEND | ODPEMU_ODP_RECV | ODPEMU_ODP_SRQ_RECV;
}

/* fault_rnr: ConnectX answers an ODP fault on the responder with an RNR NAK (mlx5
 * odp.c: the page fault is resolved by the driver while the HCA NAKs); rxe's responder
 * waits for the fault (rxe_odp_map_range_and_lock faults in line): stall. odpemu keeps
 * its own default, rnr. fw_ver: cx4 a ConnectX-4 (12.x) firmware line, cx5 UCX #9830,
 * cx6 [cx6-devinfo]; rxe registers no firmware string. cq_clean: rdma-core's
 * mlx5_destroy_qp and mlx5_modify_qp (to RESET) call __mlx5_cq_clean on the QP's CQs;
 * rxe_destroy_qp and the kernel's rxe_qp_reset leave the CQ queue as it is, so a
 * destroyed QP's completions (its flushes too) still reach the next poll. */
static const struct nic_personality table[] = {
	{ "odpemu", "odpemu's own device: implicit ODP, every ODP op, rnr on faults",
	  "odpemu 0.1.0", ODPEMU_MTU_4096, true, true, nic_device_attr_default },
	{ "cx4", "Mellanox ConnectX-4 (4115): explicit ODP only, mlx5 limits, rnr",
	  "12.28.2006", ODPEMU_MTU_4096, true, true, cx4_attr },
	{ "cx5", "Mellanox ConnectX-5 (4119): implicit ODP, mlx5 limits, rnr",
	  "16.27.1016", ODPEMU_MTU_4096, true, true, cx5_attr },
	{ "cx6", "Mellanox ConnectX-6 (4123): implicit ODP, mlx5 limits, rnr",
	  "20.29.1016", ODPEMU_MTU_4096, true, true, cx6_attr },
	{ "rxe", "Linux 6.16 soft-RoCE: explicit ODP for RC/UD, no implicit, stall",
	  "", ODPEMU_MTU_4096, false, false, rxe_attr },
};

#define NTABLE (sizeof(table) / sizeof(table[0]))

const struct nic_personality *nic_personality_at(unsigned i)
{
	return i < NTABLE ? &table[i] : NULL;
}

const struct nic_personality *nic_personality_find(const char *name)
{
	for (unsigned i = 0; i < NTABLE; i++)
		if (!strcmp(table[i].name, name))
			return &table[i];
	return NULL;
}
