/* SPDX-License-Identifier: MIT */
/* What the soft-HCA reports about itself (ibv_query_device / ibv_query_device_ex): limits
 * and ODP capabilities. One device has one port. */
#ifndef ODPEMU_NIC_DEVICE_ATTR_H
#define ODPEMU_NIC_DEVICE_ATTR_H

#include <stdint.h>

#include "odpemu/verbs_types.h"

struct nic_odp_caps {
	uint64_t general_caps;  /* enum odpemu_odp_general_caps */
	uint32_t rc_odp_caps;   /* enum odpemu_odp_transport_caps */
	uint32_t uc_odp_caps;
	uint32_t ud_odp_caps;
};

/* How a QP's send queue caps are granted (nic/sq_caps.c). */
enum nic_sq_rule {
	NIC_SQ_EXACT = 0,	/* what is asked, up to the limits (rxe, odpemu) */
	NIC_SQ_MLX5,		/* mlx5's WQE sizing: inline rounded up to the WQE's room */
};

struct nic_device_attr {
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id, vendor_part_id, hw_ver;
	uint32_t max_qp, max_qp_wr, max_sge, max_cq, max_cqe, max_mr, max_pd, max_mw;
	uint32_t max_srq, max_srq_wr, max_srq_sge;
	uint32_t max_inline_data;
	uint32_t max_qp_rd_atom;      /* outstanding READ/atomic requests as requester */
	uint32_t max_qp_init_rd_atom; /* responder resources for READ/atomic */
	uint32_t max_pkeys;
	uint32_t gid_tbl_len;
	/* UD multicast (nic/mcast.c): groups, QPs per group, attachments in all; 0 groups:
	 * no multicast (attach answers -EOPNOTSUPP) */
	uint32_t max_mcast_grp, max_mcast_qp_attach, max_total_mcast_qp_attach;
	struct nic_odp_caps odp;
	/* ODPEMU_DEVICE_* (odpemu/verbs_types.h): besides what is reported, FLUSH and
	 * ATOMIC_WRITE are enforced: a QP of a device without them cannot post them
	 * (odpemu/wr_shape.h), its responder NAKs them (resp.c), an MR cannot grant FLUSH
	 * access (mr.c) */
	uint64_t device_cap_flags;
	enum nic_sq_rule sq_rule;
};

/* The defaults odpemu reports: rxe's limits (drivers/infiniband/sw/rxe/rxe_param.h) where
 * a software HCA has the same constraints, ConnectX-like ODP caps. */
void nic_device_attr_default(struct nic_device_attr *attr);

/* The send queue caps the device grants a QP of that type: 0 and *max_inline set to the
 * inline room granted (>= the asked one), or -EINVAL when the WQE cannot hold
 * max_send_sge SGEs or the asked inline bytes. Limits of the attr (max_sge, ...) are
 * checked elsewhere (nic_qp_init_why). */
int nic_sq_caps(const struct nic_device_attr *a, enum odpemu_qp_type type,
		unsigned max_send_wr, unsigned max_send_sge, unsigned *max_inline);

#endif
