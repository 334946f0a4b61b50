/* SPDX-License-Identifier: MIT */
/* QP attributes and the modify-QP rules: which state transitions exist, which attributes
 * each requires or allows per QP type (IBA 11.2.5.2 table 91; the kernel encodes the same
 * table in ib_modify_qp_is_ok), and the range of every value. */
#ifndef ODPEMU_NIC_QP_ATTR_H
#define ODPEMU_NIC_QP_ATTR_H

#include <stdint.h>

#include "device_attr.h"
#include "odpemu/verbs_types.h"

/* Address vector: for RoCEv2 always a global route; the GID is an IPv6 address or an
 * IPv4-mapped one (::ffff:a.b.c.d). */
struct nic_ah_attr {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t is_global;
	uint8_t port_num;
};

struct nic_qp_attr {
	enum odpemu_qp_state qp_state;
	enum odpemu_qp_state cur_qp_state;
	enum odpemu_mtu path_mtu;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned qp_access_flags;
	struct nic_ah_attr ah_attr;
	uint16_t pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;  /* RNR timer code, 0..31 */
	uint8_t port_num;
	uint8_t timeout;        /* local ACK timeout: 4.096 µs × 2^timeout; 0 = none */
	uint8_t retry_cnt;      /* 0..7 */
	uint8_t rnr_retry;      /* 0..7; 7 = retry forever */
};

/* What the port offers, for the value checks. */
struct nic_port_limits {
	enum odpemu_mtu active_mtu;
	unsigned gid_count;
};

/* Check one modify-QP call: the transition cur → attr->qp_state (or cur → cur without
 * ODPEMU_QP_STATE) must exist for this QP type, every required attribute must be in
 * mask, no attribute outside required ∪ optional may be, and every value must be in
 * range. Returns 0, or -EINVAL with *why naming the problem (a static string). */
int nic_qp_check_modify(enum odpemu_qp_type type, enum odpemu_qp_state cur,
			const struct nic_qp_attr *attr, unsigned mask,
			const struct nic_device_attr *dev, const struct nic_port_limits *port,
			const char **why);

/* The attributes a transition requires and allows, or -EINVAL if it does not exist. */
int nic_qp_transition_masks(enum odpemu_qp_type type, enum odpemu_qp_state cur,
			    enum odpemu_qp_state next, unsigned *required, unsigned *optional);

#endif
