/* SPDX-License-Identifier: MIT */
/* The verbs vocabulary shared by every layer: work request and completion opcodes,
 * completion statuses, QP types and states, access flags, QP attribute masks, async
 * events, ODP capability bits. Types and constants only (no functions to link), like a
 * kernel uapi header, so nic/, emu/ and lib/ all speak the same numbers.
 *
 * Values equal libibverbs' (rdma-core verbs.h) wherever libibverbs defines the same
 * thing, so the libibverbs-ABI shim in compat/ is an identity mapping. Every enum has a
 * _str() generated from the same list as its values. */
#ifndef ODPEMU_VERBS_TYPES_H
#define ODPEMU_VERBS_TYPES_H

#include <stdint.h>

#define ODPEMU_ENUM_VALUE_(prefix, name, value, ...) prefix##name = value,
#define ODPEMU_ENUM_CASE_(prefix, name, value, ...) case value: return #name;

/* Completion status (ibv_wc_status). */
#define ODPEMU_WC_STATUSES(X) \
	X(ODPEMU_WC_, SUCCESS, 0) X(ODPEMU_WC_, LOC_LEN_ERR, 1) X(ODPEMU_WC_, LOC_QP_OP_ERR, 2) \
	X(ODPEMU_WC_, LOC_EEC_OP_ERR, 3) X(ODPEMU_WC_, LOC_PROT_ERR, 4) \
	X(ODPEMU_WC_, WR_FLUSH_ERR, 5) X(ODPEMU_WC_, MW_BIND_ERR, 6) X(ODPEMU_WC_, BAD_RESP_ERR, 7) \
	X(ODPEMU_WC_, LOC_ACCESS_ERR, 8) X(ODPEMU_WC_, REM_INV_REQ_ERR, 9) \
	X(ODPEMU_WC_, REM_ACCESS_ERR, 10) X(ODPEMU_WC_, REM_OP_ERR, 11) \
	X(ODPEMU_WC_, RETRY_EXC_ERR, 12) X(ODPEMU_WC_, RNR_RETRY_EXC_ERR, 13) \
	X(ODPEMU_WC_, LOC_RDD_VIOL_ERR, 14) X(ODPEMU_WC_, REM_INV_RD_REQ_ERR, 15) \
	X(ODPEMU_WC_, REM_ABORT_ERR, 16) X(ODPEMU_WC_, INV_EECN_ERR, 17) \
	X(ODPEMU_WC_, INV_EEC_STATE_ERR, 18) X(ODPEMU_WC_, FATAL_ERR, 19) \
	X(ODPEMU_WC_, RESP_TIMEOUT_ERR, 20) X(ODPEMU_WC_, GENERAL_ERR, 21)

enum odpemu_wc_status { ODPEMU_WC_STATUSES(ODPEMU_ENUM_VALUE_) };

/* Completion opcode (ibv_wc_opcode). */
#define ODPEMU_WC_OPCODES(X) \
	X(ODPEMU_WC_, SEND, 0) X(ODPEMU_WC_, RDMA_WRITE, 1) X(ODPEMU_WC_, RDMA_READ, 2) \
	X(ODPEMU_WC_, COMP_SWAP, 3) X(ODPEMU_WC_, FETCH_ADD, 4) X(ODPEMU_WC_, BIND_MW, 5) \
	X(ODPEMU_WC_, LOCAL_INV, 6) X(ODPEMU_WC_, FLUSH, 8) X(ODPEMU_WC_, ATOMIC_WRITE, 9) \
	X(ODPEMU_WC_, RECV, 128) X(ODPEMU_WC_, RECV_RDMA_WITH_IMM, 129)

enum odpemu_wc_opcode { ODPEMU_WC_OPCODES(ODPEMU_ENUM_VALUE_) };

/* What a work request opcode is (the props column of ODPEMU_WR_OPCODES). */
enum odpemu_wr_props {
	ODPEMU_WRP_RC = 1 << 0,		/* may be posted on an RC QP */
	ODPEMU_WRP_UD = 1 << 1,		/* may be posted on a UD QP */
	ODPEMU_WRP_RESPONSE = 1 << 2,	/* answered with data (READ, atomics): counted against
					 * max_rd_atomic, completed by the response, never
					 * inline */
	ODPEMU_WRP_ATOMIC = 1 << 3,	/* compare/add operands (wr.atomic); the old value
					 * lands locally */
	ODPEMU_WRP_ONE_PACKET = 1 << 4,	/* one request packet whatever the length */
	ODPEMU_WRP_IMM = 1 << 5,	/* carries immediate data */
	ODPEMU_WRP_INV = 1 << 6,	/* carries an rkey to invalidate */
	ODPEMU_WRP_WORD8 = 1 << 7,	/* one naturally aligned 8-byte remote word and 8 bytes
					 * of local data (atomics, ATOMIC_WRITE) */
	ODPEMU_WRP_REMOTE = 1 << 8,	/* names remote memory: remote_addr and rkey */
	ODPEMU_WRP_PAYLOAD = 1 << 9,	/* its local data is the request's payload (gathered
					 * from the SGEs, or inline) */
	ODPEMU_WRP_NO_LOCAL = 1 << 10,	/* no local buffer, no SGEs: its length is the remote
					 * range's (FLUSH) */
	ODPEMU_WRP_UC = 1 << 11,	/* may be posted on a UC QP (IBA 9.4: SEND and RDMA
					 * WRITE, with or without immediate data) */
	ODPEMU_WRP_LOCAL = 1 << 12,	/* a local operation (IBA 10.6.7: BIND_MW, LOCAL_INV):
					 * no packet, no SGE; the requester carries it out in
					 * queue order */
};

/* Work request opcode (ibv_wr_opcode): value, the completion opcode it produces, props.
 * The one place these facts live (lib/ and nic/ ask odpemu_wr_props; the shape rules built
 * on them are odpemu/wr_shape.h). */
#define ODPEMU_WRP_ALLQP_ (ODPEMU_WRP_RC | ODPEMU_WRP_UC | ODPEMU_WRP_UD)
#define ODPEMU_WRP_WRITE_ (ODPEMU_WRP_RC | ODPEMU_WRP_REMOTE | ODPEMU_WRP_PAYLOAD)
#define ODPEMU_WRP_ATOMICS_ (ODPEMU_WRP_RC | ODPEMU_WRP_RESPONSE | ODPEMU_WRP_ATOMIC | \
	ODPEMU_WRP_WORD8 | ODPEMU_WRP_ONE_PACKET | ODPEMU_WRP_REMOTE)
/* Memory windows are bound and invalidated through RC and UC QPs (IBA 10.6.7.2). */
#define ODPEMU_WRP_LOCAL_ (ODPEMU_WRP_RC | ODPEMU_WRP_UC | ODPEMU_WRP_LOCAL)
#define ODPEMU_WR_OPCODES(X) \
	X(ODPEMU_WR_, RDMA_WRITE, 0, ODPEMU_WC_RDMA_WRITE, ODPEMU_WRP_WRITE_ | ODPEMU_WRP_UC) \
	X(ODPEMU_WR_, RDMA_WRITE_WITH_IMM, 1, ODPEMU_WC_RDMA_WRITE, \
	  ODPEMU_WRP_WRITE_ | ODPEMU_WRP_UC | ODPEMU_WRP_IMM) \
	X(ODPEMU_WR_, SEND, 2, ODPEMU_WC_SEND, ODPEMU_WRP_ALLQP_ | ODPEMU_WRP_PAYLOAD) \
	X(ODPEMU_WR_, SEND_WITH_IMM, 3, ODPEMU_WC_SEND, \
	  ODPEMU_WRP_ALLQP_ | ODPEMU_WRP_PAYLOAD | ODPEMU_WRP_IMM) \
	X(ODPEMU_WR_, RDMA_READ, 4, ODPEMU_WC_RDMA_READ, \
	  ODPEMU_WRP_RC | ODPEMU_WRP_RESPONSE | ODPEMU_WRP_REMOTE) \
	X(ODPEMU_WR_, ATOMIC_CMP_AND_SWP, 5, ODPEMU_WC_COMP_SWAP, ODPEMU_WRP_ATOMICS_) \
	X(ODPEMU_WR_, ATOMIC_FETCH_AND_ADD, 6, ODPEMU_WC_FETCH_ADD, ODPEMU_WRP_ATOMICS_) \
	X(ODPEMU_WR_, LOCAL_INV, 7, ODPEMU_WC_LOCAL_INV, ODPEMU_WRP_LOCAL_) \
	X(ODPEMU_WR_, BIND_MW, 8, ODPEMU_WC_BIND_MW, ODPEMU_WRP_LOCAL_) \
	X(ODPEMU_WR_, SEND_WITH_INV, 9, ODPEMU_WC_SEND, \
	  ODPEMU_WRP_RC | ODPEMU_WRP_PAYLOAD | ODPEMU_WRP_INV) \
	X(ODPEMU_WR_, FLUSH, 14, ODPEMU_WC_FLUSH, ODPEMU_WRP_RC | ODPEMU_WRP_ONE_PACKET | \
	  ODPEMU_WRP_REMOTE | ODPEMU_WRP_NO_LOCAL) \
	X(ODPEMU_WR_, ATOMIC_WRITE, 15, ODPEMU_WC_ATOMIC_WRITE, \
	  ODPEMU_WRP_WRITE_ | ODPEMU_WRP_WORD8 | ODPEMU_WRP_ONE_PACKET)

enum odpemu_wr_opcode { ODPEMU_WR_OPCODES(ODPEMU_ENUM_VALUE_) };


/* Why an error completion happened: odpemu_wc.vendor_err is the position of its cause in
 * this list, odpemu_vendor_err_str() its name. nic/ raises them (enum nic_vendor_err). */
#define ODPEMU_VENDOR_ERRS(X) \
	X(NONE) X(FLUSH) X(BAD_LKEY) X(LKEY_RANGE) X(LKEY_ACCESS) X(LOCAL_FAULT) \
	X(LOCAL_LEN) X(NAK_INV_REQ) X(NAK_ACCESS) X(NAK_OP) X(RETRY_EXC) X(RNR_EXC) \
	X(RECV_TOO_SMALL) X(BAD_RESPONSE) X(BAD_WQE) X(MW_BIND) X(LOCAL_INV)

/* Send flags (ibv_send_flags). */
enum odpemu_send_flags {
	ODPEMU_SEND_FENCE = 1 << 0,
	ODPEMU_SEND_SIGNALED = 1 << 1,
	ODPEMU_SEND_SOLICITED = 1 << 2,
	ODPEMU_SEND_INLINE = 1 << 3,
};

/* QP type (ibv_qp_type). */
#define ODPEMU_QP_TYPES(X) X(ODPEMU_QPT_, RC, 2) X(ODPEMU_QPT_, UC, 3) X(ODPEMU_QPT_, UD, 4)
enum odpemu_qp_type { ODPEMU_QP_TYPES(ODPEMU_ENUM_VALUE_) };

/* QP state (ibv_qp_state). */
#define ODPEMU_QP_STATES(X) \
	X(ODPEMU_QPS_, RESET, 0) X(ODPEMU_QPS_, INIT, 1) X(ODPEMU_QPS_, RTR, 2) \
	X(ODPEMU_QPS_, RTS, 3) X(ODPEMU_QPS_, SQD, 4) X(ODPEMU_QPS_, SQE, 5) X(ODPEMU_QPS_, ERR, 6)
enum odpemu_qp_state { ODPEMU_QP_STATES(ODPEMU_ENUM_VALUE_) };
#define ODPEMU_QPS_COUNT 7

/* MR and QP access flags (ibv_access_flags). */
enum odpemu_access_flags {
	ODPEMU_ACCESS_LOCAL_WRITE = 1 << 0,
	ODPEMU_ACCESS_REMOTE_WRITE = 1 << 1,
	ODPEMU_ACCESS_REMOTE_READ = 1 << 2,
	ODPEMU_ACCESS_REMOTE_ATOMIC = 1 << 3,
	ODPEMU_ACCESS_MW_BIND = 1 << 4,		/* memory windows may be bound to the MR */
	ODPEMU_ACCESS_ZERO_BASED = 1 << 5,	/* a window addressed from 0: refused, as rxe */
	ODPEMU_ACCESS_ON_DEMAND = 1 << 6,
	ODPEMU_ACCESS_FLUSH_GLOBAL = 1 << 8,
	ODPEMU_ACCESS_FLUSH_PERSISTENT = 1 << 9,
	/* odpemu: an MR lease (docs/regcache.md); a bit no libibverbs flag uses, outside
	 * the optional range, so a real device refuses it rather than ignoring it. */
	ODPEMU_ACCESS_LEASE = 1 << 15,
};
#define ODPEMU_ACCESS_ALL_MR (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE \
	| ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC | ODPEMU_ACCESS_ON_DEMAND \
	| ODPEMU_ACCESS_MW_BIND \
	| ODPEMU_ACCESS_FLUSH_GLOBAL | ODPEMU_ACCESS_FLUSH_PERSISTENT | ODPEMU_ACCESS_LEASE)
/* Bits a memory window's access flags may hold (IBA 10.6.7.2.2: remote access; local
 * write is accepted and means nothing, as on rxe: pyverbs binds with it). */
#define ODPEMU_ACCESS_ALL_MW (ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ \
	| ODPEMU_ACCESS_REMOTE_ATOMIC | ODPEMU_ACCESS_LOCAL_WRITE)
/* Memory window types (ibv_mw_type). */
enum odpemu_mw_type { ODPEMU_MW_TYPE_1 = 1, ODPEMU_MW_TYPE_2 = 2 };

/* Bits a QP's access flags may hold: the remote operations it accepts. */
#define ODPEMU_ACCESS_ALL_QP (ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ \
	| ODPEMU_ACCESS_REMOTE_ATOMIC | ODPEMU_ACCESS_FLUSH_GLOBAL | ODPEMU_ACCESS_FLUSH_PERSISTENT)

/* QP attribute mask (ibv_qp_attr_mask). */
#define ODPEMU_QP_ATTRS(X) \
	X(ODPEMU_QP_, STATE, 1 << 0) X(ODPEMU_QP_, CUR_STATE, 1 << 1) \
	X(ODPEMU_QP_, EN_SQD_ASYNC_NOTIFY, 1 << 2) X(ODPEMU_QP_, ACCESS_FLAGS, 1 << 3) \
	X(ODPEMU_QP_, PKEY_INDEX, 1 << 4) X(ODPEMU_QP_, PORT, 1 << 5) X(ODPEMU_QP_, QKEY, 1 << 6) \
	X(ODPEMU_QP_, AV, 1 << 7) X(ODPEMU_QP_, PATH_MTU, 1 << 8) X(ODPEMU_QP_, TIMEOUT, 1 << 9) \
	X(ODPEMU_QP_, RETRY_CNT, 1 << 10) X(ODPEMU_QP_, RNR_RETRY, 1 << 11) \
	X(ODPEMU_QP_, RQ_PSN, 1 << 12) X(ODPEMU_QP_, MAX_QP_RD_ATOMIC, 1 << 13) \
	X(ODPEMU_QP_, ALT_PATH, 1 << 14) X(ODPEMU_QP_, MIN_RNR_TIMER, 1 << 15) \
	X(ODPEMU_QP_, SQ_PSN, 1 << 16) X(ODPEMU_QP_, MAX_DEST_RD_ATOMIC, 1 << 17) \
	X(ODPEMU_QP_, PATH_MIG_STATE, 1 << 18) X(ODPEMU_QP_, CAP, 1 << 19) \
	X(ODPEMU_QP_, DEST_QPN, 1 << 20)
enum odpemu_qp_attr_mask { ODPEMU_QP_ATTRS(ODPEMU_ENUM_VALUE_) };

/* Path MTU (ibv_mtu); the same values as proto/mtu.h's enum roce_mtu. */
enum odpemu_mtu {
	ODPEMU_MTU_256 = 1, ODPEMU_MTU_512 = 2, ODPEMU_MTU_1024 = 3,
	ODPEMU_MTU_2048 = 4, ODPEMU_MTU_4096 = 5,
};

/* Async events (ibv_event_type), plus odpemu's own from 0x100 on. */
#define ODPEMU_EVENTS(X) \
	X(ODPEMU_EVENT_, CQ_ERR, 0) X(ODPEMU_EVENT_, QP_FATAL, 1) X(ODPEMU_EVENT_, QP_REQ_ERR, 2) \
	X(ODPEMU_EVENT_, QP_ACCESS_ERR, 3) X(ODPEMU_EVENT_, COMM_EST, 4) \
	X(ODPEMU_EVENT_, SQ_DRAINED, 5) X(ODPEMU_EVENT_, DEVICE_FATAL, 8) \
	X(ODPEMU_EVENT_, PORT_ACTIVE, 9) X(ODPEMU_EVENT_, PORT_ERR, 10) \
	X(ODPEMU_EVENT_, SRQ_ERR, 14) X(ODPEMU_EVENT_, SRQ_LIMIT_REACHED, 15) \
	X(ODPEMU_EVENT_, QP_LAST_WQE_REACHED, 16) X(ODPEMU_EVENT_, GID_CHANGE, 18) \
	X(ODPEMU_EVENT_, MR_DECOHERENCE, 0x100)
enum odpemu_event_type { ODPEMU_EVENTS(ODPEMU_ENUM_VALUE_) };

/* ODP capabilities (ibv_odp_caps): general_caps and per-transport bits. */
enum odpemu_odp_general_caps {
	ODPEMU_ODP_SUPPORT = 1 << 0,
	ODPEMU_ODP_SUPPORT_IMPLICIT = 1 << 1,
};
enum odpemu_odp_transport_caps {
	ODPEMU_ODP_SEND = 1 << 0, ODPEMU_ODP_RECV = 1 << 1, ODPEMU_ODP_WRITE = 1 << 2,
	ODPEMU_ODP_READ = 1 << 3, ODPEMU_ODP_ATOMIC = 1 << 4, ODPEMU_ODP_SRQ_RECV = 1 << 5,
	ODPEMU_ODP_FLUSH = 1 << 6, ODPEMU_ODP_ATOMIC_WRITE = 1 << 7,
};

/* Device capability flags (ibv_device_attr_ex.device_cap_flags_ex): the operations and
 * objects a device offers beyond the IBA's mandatory ones, set per personality
 * (nic/personality.c). The values are the kernel ABI's (rdma/ib_user_verbs.h enum
 * ib_uverbs_device_cap_flags): the low 32 bits are ibv_device_attr.device_cap_flags.
 * 64-bit constants, not an enum: FLUSH and ATOMIC_WRITE lie above bit 31. */
#define ODPEMU_DEVICE_PORT_ACTIVE_EVENT	(1ull << 10)
#define ODPEMU_DEVICE_SYS_IMAGE_GUID	(1ull << 11)
#define ODPEMU_DEVICE_RC_RNR_NAK_GEN	(1ull << 12)
#define ODPEMU_DEVICE_MEM_WINDOW	(1ull << 17)	/* type 1 windows */
#define ODPEMU_DEVICE_MEM_WINDOW_TYPE_2B (1ull << 24)
#define ODPEMU_DEVICE_FLUSH_GLOBAL	(1ull << 38)	/* RDMA FLUSH, global visibility */
#define ODPEMU_DEVICE_FLUSH_PERSISTENT	(1ull << 39)	/* RDMA FLUSH, persistence */
#define ODPEMU_DEVICE_ATOMIC_WRITE	(1ull << 40)	/* RDMA ATOMIC WRITE */
#define ODPEMU_DEVICE_FLUSH_ANY	(ODPEMU_DEVICE_FLUSH_GLOBAL | ODPEMU_DEVICE_FLUSH_PERSISTENT)
/* What a device every IBA verb of which odpemu implements reports (rxe's set, less what
 * odpemu lacks: BAD_PKEY/QKEY counters, path migration, SRQ resize, fast registration). */
#define ODPEMU_DEVICE_CAPS_ALL	(ODPEMU_DEVICE_PORT_ACTIVE_EVENT | ODPEMU_DEVICE_SYS_IMAGE_GUID | \
	ODPEMU_DEVICE_RC_RNR_NAK_GEN | ODPEMU_DEVICE_MEM_WINDOW | ODPEMU_DEVICE_MEM_WINDOW_TYPE_2B | \
	ODPEMU_DEVICE_FLUSH_ANY | ODPEMU_DEVICE_ATOMIC_WRITE)

/* advise_mr advice (ibv_advise_mr_advice) and flags. */
enum odpemu_advise_mr_advice {
	ODPEMU_ADVISE_MR_ADVICE_PREFETCH = 0,
	ODPEMU_ADVISE_MR_ADVICE_PREFETCH_WRITE = 1,
	ODPEMU_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT = 2,
};
enum odpemu_advise_mr_flags { ODPEMU_ADVISE_MR_FLAG_FLUSH = 1 << 0 };

/* Port state (ibv_port_state). */
#define ODPEMU_PORT_STATES(X) \
	X(ODPEMU_PORT_, NOP, 0) X(ODPEMU_PORT_, DOWN, 1) X(ODPEMU_PORT_, INIT, 2) \
	X(ODPEMU_PORT_, ARMED, 3) X(ODPEMU_PORT_, ACTIVE, 4) X(ODPEMU_PORT_, ACTIVE_DEFER, 5)
enum odpemu_port_state { ODPEMU_PORT_STATES(ODPEMU_ENUM_VALUE_) };

/* The device node every odpemu device names as its ibv_device.dev_name: UCX lists a verbs
 * device only if /dev/infiniband/<dev_name> is a character device it may open read-write
 * (uct_ib_device_is_accessible). odpemud makes it an alias of /dev/null when it can
 * (emu/devnode.c); nothing ever opens it. */
#define ODPEMU_DEVNODE_DIR "/dev/infiniband"
#define ODPEMU_DEVNODE_NAME "odpemu"

/* odpemu's own: what a QP's responder does on an ODP page fault. DEFAULT takes the
 * daemon's --fault-policy; RNR answers RNR NAK (ConnectX); STALL holds the packets. */
#define ODPEMU_FAULT_POLICIES(X) \
	X(ODPEMU_FAULT_POLICY_, DEFAULT, 0) X(ODPEMU_FAULT_POLICY_, STALL, 1) \
	X(ODPEMU_FAULT_POLICY_, RNR, 2)
enum odpemu_fault_policy { ODPEMU_FAULT_POLICIES(ODPEMU_ENUM_VALUE_) };

#define ODPEMU_WR_PROPS_CASE_(prefix, name, value, wc, props) case value: return props;
#define ODPEMU_WR_WC_CASE_(prefix, name, value, wc, props) case value: return wc;
/* The props of op (0 for an opcode odpemu does not know). */
static inline unsigned odpemu_wr_props(enum odpemu_wr_opcode op)
{
	switch ((int)op) { ODPEMU_WR_OPCODES(ODPEMU_WR_PROPS_CASE_) default: return 0; }
}
/* The props bit that says an opcode may be posted on a QP of this type (0: none may). */
static inline unsigned odpemu_wr_qp_type_prop(enum odpemu_qp_type qp_type)
{
	switch (qp_type) {
	case ODPEMU_QPT_RC: return ODPEMU_WRP_RC;
	case ODPEMU_QPT_UC: return ODPEMU_WRP_UC;
	case ODPEMU_QPT_UD: return ODPEMU_WRP_UD;
	default: return 0;
	}
}
/* May op be posted on a QP of this type? */
static inline int odpemu_wr_allowed(enum odpemu_qp_type qp_type, enum odpemu_wr_opcode op)
{
	return !!(odpemu_wr_props(op) & odpemu_wr_qp_type_prop(qp_type));
}

/* The completion opcode a WR of op produces. */
static inline enum odpemu_wc_opcode odpemu_wr_wc_opcode(enum odpemu_wr_opcode op)
{
	switch ((int)op) { ODPEMU_WR_OPCODES(ODPEMU_WR_WC_CASE_) default: return ODPEMU_WC_SEND; }
}

/* Names: "REM_ACCESS_ERR", "RDMA_WRITE", ... or "UNKNOWN". */
#define ODPEMU_STR_FN_(fn, type, list) \
	static inline const char *fn(type v) \
	{ \
		switch ((int)v) { list(ODPEMU_ENUM_CASE_) default: return "UNKNOWN"; } \
	}
ODPEMU_STR_FN_(odpemu_wc_status_str, enum odpemu_wc_status, ODPEMU_WC_STATUSES)
ODPEMU_STR_FN_(odpemu_wc_opcode_str, enum odpemu_wc_opcode, ODPEMU_WC_OPCODES)
ODPEMU_STR_FN_(odpemu_wr_opcode_str, enum odpemu_wr_opcode, ODPEMU_WR_OPCODES)
ODPEMU_STR_FN_(odpemu_qp_type_str, enum odpemu_qp_type, ODPEMU_QP_TYPES)
ODPEMU_STR_FN_(odpemu_qp_state_str, enum odpemu_qp_state, ODPEMU_QP_STATES)
ODPEMU_STR_FN_(odpemu_qp_attr_str, enum odpemu_qp_attr_mask, ODPEMU_QP_ATTRS)
ODPEMU_STR_FN_(odpemu_event_type_str, enum odpemu_event_type, ODPEMU_EVENTS)
ODPEMU_STR_FN_(odpemu_port_state_str, enum odpemu_port_state, ODPEMU_PORT_STATES)
ODPEMU_STR_FN_(odpemu_fault_policy_str, enum odpemu_fault_policy, ODPEMU_FAULT_POLICIES)

#endif
