/* SPDX-License-Identifier: MIT */
/* Modify-QP validation: the transition table (IBA 11.2.5.2, table 91) and value ranges. */
#include "qp_attr.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#define A(name) ODPEMU_QP_##name

enum { T_RC, T_UC, T_UD, T_COUNT };

struct transition {
	bool valid;
	unsigned req[T_COUNT];
	unsigned opt[T_COUNT];
};

#define RESET_ ODPEMU_QPS_RESET
#define INIT_ ODPEMU_QPS_INIT
#define RTR_ ODPEMU_QPS_RTR
#define RTS_ ODPEMU_QPS_RTS
#define SQD_ ODPEMU_QPS_SQD
#define SQE_ ODPEMU_QPS_SQE
#define ERR_ ODPEMU_QPS_ERR

/* [current][next]. Every state may go to RESET or ERR with no attributes (added in
 * transition_of); these are the others. UC follows RC without the RDMA-read and RNR
 * attributes; UD needs a Q_Key instead of a remote address. */
static const struct transition table[ODPEMU_QPS_COUNT][ODPEMU_QPS_COUNT] = {
	[RESET_][INIT_] = { true,
		.req = { [T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			 [T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			 [T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY) } },
	[INIT_][INIT_] = { true,
		.opt = { [T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			 [T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			 [T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY) } },
	[INIT_][RTR_] = { true,
		.req = { [T_RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN)
				| A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
			 [T_UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) },
		.opt = { [T_RC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
			 [T_UC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
			 [T_UD] = A(PKEY_INDEX) | A(QKEY) } },
	[RTR_][RTS_] = { true,
		.req = { [T_RC] = A(SQ_PSN) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY)
				| A(MAX_QP_RD_ATOMIC),
			 [T_UC] = A(SQ_PSN), [T_UD] = A(SQ_PSN) },
		.opt = { [T_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(MIN_RNR_TIMER)
				| A(PATH_MIG_STATE),
			 [T_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PATH_MIG_STATE),
			 [T_UD] = A(CUR_STATE) | A(QKEY) } },
	[RTS_][RTS_] = { true,
		.opt = { [T_RC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) | A(PATH_MIG_STATE)
				| A(MIN_RNR_TIMER),
			 [T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS) | A(ALT_PATH) | A(PATH_MIG_STATE),
			 [T_UD] = A(CUR_STATE) | A(QKEY) } },
	[RTS_][SQD_] = { true,
		.opt = { [T_RC] = A(EN_SQD_ASYNC_NOTIFY), [T_UC] = A(EN_SQD_ASYNC_NOTIFY),
			 [T_UD] = A(EN_SQD_ASYNC_NOTIFY) } },
	[SQD_][RTS_] = { true,
		.opt = { [T_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(MIN_RNR_TIMER)
				| A(PATH_MIG_STATE),
			 [T_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PATH_MIG_STATE),
			 [T_UD] = A(CUR_STATE) | A(QKEY) } },
	[SQD_][SQD_] = { true,
		.opt = { [T_RC] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY)
				| A(MAX_QP_RD_ATOMIC) | A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH)
				| A(ACCESS_FLAGS) | A(PKEY_INDEX) | A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
			 [T_UC] = A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX)
				| A(PATH_MIG_STATE),
			 [T_UD] = A(PKEY_INDEX) | A(QKEY) } },
	/* SQE exists for UC and UD only: an RC send-queue error takes the whole QP to ERR. */
	[SQE_][RTS_] = { true,
		.opt = { [T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS), [T_UD] = A(CUR_STATE) | A(QKEY) } },
};

static int type_index(enum odpemu_qp_type type)
{
	switch (type) {
	case ODPEMU_QPT_RC: return T_RC;
	case ODPEMU_QPT_UC: return T_UC;
	case ODPEMU_QPT_UD: return T_UD;
	default: return -1;
	}
}

static bool state_ok(enum odpemu_qp_state s)
{
	return (unsigned)s < ODPEMU_QPS_COUNT;
}

int nic_qp_transition_masks(enum odpemu_qp_type type, enum odpemu_qp_state cur,
			    enum odpemu_qp_state next, unsigned *required, unsigned *optional)
{
	int t = type_index(type);
	const struct transition *tr;

	if (t < 0 || !state_ok(cur) || !state_ok(next))
		return -EINVAL;
	*required = *optional = 0;
	if (next == ODPEMU_QPS_RESET || next == ODPEMU_QPS_ERR)
		return 0; /* IBA: any state may be reset or put in error */
	tr = &table[cur][next];
	if (!tr->valid || (cur == ODPEMU_QPS_SQE && type == ODPEMU_QPT_RC))
		return -EINVAL;
	*required = tr->req[t];
	*optional = tr->opt[t];
	return 0;
}

/* The address vector of a RoCE QP: a global route from one of our GIDs on port 1. */
static const char *check_av(const struct nic_ah_attr *ah, const struct nic_port_limits *port)
{
	static const uint8_t zero[16];
	unsigned i = 0;

	if (!ah->is_global)
		return "AV: RoCE needs a global route (ah_attr.is_global = 1 with a GRH)";
	if (ah->port_num != 1)
		return "AV: ah_attr.port_num must be 1 (the device has one port)";
	if (ah->sgid_index >= port->gid_count)
		return "AV: ah_attr.sgid_index is beyond the port's GID table";
	while (i < 16 && ah->dgid[i] == zero[i])
		i++;
	if (i == 16)
		return "AV: destination GID is all zeros";
	if (ah->flow_label > 0xFFFFF)
		return "AV: flow label is 20 bits";
	return NULL;
}

/* Range of each attribute present in mask. */
static const char *check_values(const struct nic_qp_attr *a, unsigned mask,
				const struct nic_device_attr *dev, const struct nic_port_limits *port)
{
	if ((mask & A(PORT)) && a->port_num != 1)
		return "port_num must be 1 (the device has one port)";
	if ((mask & A(PKEY_INDEX)) && a->pkey_index >= dev->max_pkeys)
		return "pkey_index is beyond the P_Key table (RoCE has only index 0, 0xFFFF)";
	/* qp_access_flags: any bits. Only REMOTE_WRITE/READ/ATOMIC and FLUSH_* mean anything
	 * on a QP; the kernel does not check the others and rxe and mlx5 ignore them (MR-only
	 * bits such as ON_DEMAND come in from programs, rdma-core's test_odp among them, that
	 * share one access value between their MRs and QPs). */
	if ((mask & A(PATH_MTU)) && (a->path_mtu < ODPEMU_MTU_256 || a->path_mtu > port->active_mtu))
		return "path_mtu must be 256..the port's active MTU (ibv_query_port)";
	if ((mask & A(DEST_QPN)) && (a->dest_qp_num == 0 || a->dest_qp_num > 0xFFFFFF))
		return "dest_qp_num must be 1..0xFFFFFF";
	if ((mask & A(RQ_PSN)) && a->rq_psn > 0xFFFFFF)
		return "rq_psn is 24 bits";
	if ((mask & A(SQ_PSN)) && a->sq_psn > 0xFFFFFF)
		return "sq_psn is 24 bits";
	if ((mask & A(TIMEOUT)) && a->timeout > 31)
		return "timeout is 0..31 (4.096 us << timeout)";
	if ((mask & A(RETRY_CNT)) && a->retry_cnt > 7)
		return "retry_cnt is 0..7";
	if ((mask & A(RNR_RETRY)) && a->rnr_retry > 7)
		return "rnr_retry is 0..7 (7 = infinite)";
	if ((mask & A(MIN_RNR_TIMER)) && a->min_rnr_timer > 31)
		return "min_rnr_timer is an RNR timer code 0..31";
	if ((mask & A(MAX_QP_RD_ATOMIC)) && a->max_rd_atomic > dev->max_qp_rd_atom)
		return "max_rd_atomic exceeds the device's max_qp_rd_atom";
	if ((mask & A(MAX_DEST_RD_ATOMIC)) && a->max_dest_rd_atomic > dev->max_qp_init_rd_atom)
		return "max_dest_rd_atomic exceeds the device's max_qp_init_rd_atom";
	if (mask & A(AV))
		return check_av(&a->ah_attr, port);
	return NULL;
}

int nic_qp_check_modify(enum odpemu_qp_type type, enum odpemu_qp_state cur,
			const struct nic_qp_attr *attr, unsigned mask,
			const struct nic_device_attr *dev, const struct nic_port_limits *port,
			const char **why)
{
	enum odpemu_qp_state next = (mask & A(STATE)) ? attr->qp_state : cur;
	unsigned req, opt, given = mask & ~(unsigned)A(STATE);

	*why = NULL;
	if (type_index(type) < 0)
		*why = "QP type must be RC, UC or UD";
	else if (!state_ok(next))
		*why = "qp_state is not a QP state";
	else if ((mask & A(CUR_STATE)) && attr->cur_qp_state != cur)
		*why = "cur_qp_state does not match the QP's current state";
	else if (nic_qp_transition_masks(type, cur, next, &req, &opt))
		*why = "this state transition does not exist for this QP type";
	else if ((given & req) != req)
		*why = "a required attribute for this transition is missing from attr_mask";
	else if (given & ~(req | opt))
		*why = "attr_mask has an attribute this transition does not accept";
	else if (given & (A(ALT_PATH) | A(PATH_MIG_STATE)))
		*why = "automatic path migration (ALT_PATH, PATH_MIG_STATE) is not supported";
	else
		*why = check_values(attr, given, dev, port);
	return *why ? -EINVAL : 0;
}
