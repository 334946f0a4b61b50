/* SPDX-License-Identifier: MIT */
/* The opcode table (IBA 9.2.1 table 38, RoCEv2): per opcode, which extension headers
 * follow the BTH, whether a payload follows, the packet's place in its message, and
 * its class. Code asks `mask & ROCE_M_RETH`, never lists opcodes. */
#ifndef ODPEMU_PROTO_OPCODE_H
#define ODPEMU_PROTO_OPCODE_H

#include <stddef.h>
#include <stdint.h>

/* Mask bits: extension headers (in their wire order after the BTH), then properties. */
enum roce_mask {
	ROCE_M_DETH = 1u << 0,
	ROCE_M_FETH = 1u << 1,
	ROCE_M_RETH = 1u << 2,
	ROCE_M_ATMETH = 1u << 3,
	ROCE_M_AETH = 1u << 4,
	ROCE_M_ATMACK = 1u << 5,
	ROCE_M_IMMDT = 1u << 6,
	ROCE_M_IETH = 1u << 7,
	ROCE_M_HDRS = 0xFFu,

	ROCE_M_PAYLOAD = 1u << 8,  /* carries payload bytes */
	ROCE_M_FIRST = 1u << 9,    /* first packet of a message (ONLY = FIRST|LAST) */
	ROCE_M_MIDDLE = 1u << 10,
	ROCE_M_LAST = 1u << 11,
	ROCE_M_REQ = 1u << 12,     /* sent by a requester */
	ROCE_M_RESP = 1u << 13,    /* sent by a responder (ACK, READ response, atomic ACK) */
	ROCE_M_PAYLOAD8 = 1u << 14, /* payload is exactly 8 bytes (ATOMIC_WRITE) */
	ROCE_M_RWQE = 1u << 15,    /* completes a receive WQE at the responder */
};

#define ROCE_M_ONLY (ROCE_M_FIRST | ROCE_M_LAST)

/* The operation a packet belongs to; ROCE_M_RESP tells request from answer. */
#define ROCE_CLASSES(X) \
	X(SEND, "send") \
	X(WRITE, "write") \
	X(READ, "read") \
	X(ATOMIC, "atomic") \
	X(ATOMIC_WRITE, "atomic_write") \
	X(FLUSH, "flush") \
	X(ACK, "ack")

enum roce_class {
#define X(name, str) ROCE_CLASS_##name,
	ROCE_CLASSES(X)
#undef X
};

enum roce_transport { ROCE_RC = 0, ROCE_UC = 1, ROCE_UD = 3 };

/* Shorthands for the table below. */
#define ROCE_M_SEND_ (ROCE_M_REQ | ROCE_M_PAYLOAD)
#define ROCE_M_WRITE_ (ROCE_M_REQ | ROCE_M_PAYLOAD)
#define ROCE_M_RRESP_ (ROCE_M_RESP | ROCE_M_PAYLOAD)

/* X(name, value, class, mask) — RC, then UC (RC + 0x20, sends and writes), then UD. */
#define ROCE_OPCODES(X) \
	X(RC_SEND_FIRST,                     0x00, SEND,  ROCE_M_SEND_ | ROCE_M_FIRST) \
	X(RC_SEND_MIDDLE,                    0x01, SEND,  ROCE_M_SEND_ | ROCE_M_MIDDLE) \
	X(RC_SEND_LAST,                      0x02, SEND,  ROCE_M_SEND_ | ROCE_M_LAST | ROCE_M_RWQE) \
	X(RC_SEND_LAST_WITH_IMMEDIATE,       0x03, SEND,  ROCE_M_SEND_ | ROCE_M_LAST | ROCE_M_RWQE | ROCE_M_IMMDT) \
	X(RC_SEND_ONLY,                      0x04, SEND,  ROCE_M_SEND_ | ROCE_M_ONLY | ROCE_M_RWQE) \
	X(RC_SEND_ONLY_WITH_IMMEDIATE,       0x05, SEND,  ROCE_M_SEND_ | ROCE_M_ONLY | ROCE_M_RWQE | ROCE_M_IMMDT) \
	X(RC_RDMA_WRITE_FIRST,               0x06, WRITE, ROCE_M_WRITE_ | ROCE_M_FIRST | ROCE_M_RETH) \
	X(RC_RDMA_WRITE_MIDDLE,              0x07, WRITE, ROCE_M_WRITE_ | ROCE_M_MIDDLE) \
	X(RC_RDMA_WRITE_LAST,                0x08, WRITE, ROCE_M_WRITE_ | ROCE_M_LAST) \
	X(RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 0x09, WRITE, ROCE_M_WRITE_ | ROCE_M_LAST | ROCE_M_RWQE | ROCE_M_IMMDT) \
	X(RC_RDMA_WRITE_ONLY,                0x0A, WRITE, ROCE_M_WRITE_ | ROCE_M_ONLY | ROCE_M_RETH) \
	X(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0x0B, WRITE, ROCE_M_WRITE_ | ROCE_M_ONLY | ROCE_M_RETH | ROCE_M_RWQE | ROCE_M_IMMDT) \
	X(RC_RDMA_READ_REQUEST,              0x0C, READ,  ROCE_M_REQ | ROCE_M_ONLY | ROCE_M_RETH) \
	X(RC_RDMA_READ_RESPONSE_FIRST,       0x0D, READ,  ROCE_M_RRESP_ | ROCE_M_FIRST | ROCE_M_AETH) \
	X(RC_RDMA_READ_RESPONSE_MIDDLE,      0x0E, READ,  ROCE_M_RRESP_ | ROCE_M_MIDDLE) \
	X(RC_RDMA_READ_RESPONSE_LAST,        0x0F, READ,  ROCE_M_RRESP_ | ROCE_M_LAST | ROCE_M_AETH) \
	X(RC_RDMA_READ_RESPONSE_ONLY,        0x10, READ,  ROCE_M_RRESP_ | ROCE_M_ONLY | ROCE_M_AETH) \
	X(RC_ACKNOWLEDGE,                    0x11, ACK,   ROCE_M_RESP | ROCE_M_ONLY | ROCE_M_AETH) \
	X(RC_ATOMIC_ACKNOWLEDGE,             0x12, ATOMIC, ROCE_M_RESP | ROCE_M_ONLY | ROCE_M_AETH | ROCE_M_ATMACK) \
	X(RC_COMPARE_SWAP,                   0x13, ATOMIC, ROCE_M_REQ | ROCE_M_ONLY | ROCE_M_ATMETH) \
	X(RC_FETCH_ADD,                      0x14, ATOMIC, ROCE_M_REQ | ROCE_M_ONLY | ROCE_M_ATMETH) \
	X(RC_SEND_LAST_WITH_INVALIDATE,      0x16, SEND,  ROCE_M_SEND_ | ROCE_M_LAST | ROCE_M_RWQE | ROCE_M_IETH) \
	X(RC_SEND_ONLY_WITH_INVALIDATE,      0x17, SEND,  ROCE_M_SEND_ | ROCE_M_ONLY | ROCE_M_RWQE | ROCE_M_IETH) \
	X(RC_FLUSH,                          0x1C, FLUSH, ROCE_M_REQ | ROCE_M_ONLY | ROCE_M_FETH | ROCE_M_RETH) \
	X(RC_ATOMIC_WRITE,                   0x1D, ATOMIC_WRITE, ROCE_M_WRITE_ | ROCE_M_ONLY | ROCE_M_RETH | ROCE_M_PAYLOAD8) \
	X(UC_SEND_FIRST,                     0x20, SEND,  ROCE_M_SEND_ | ROCE_M_FIRST) \
	X(UC_SEND_MIDDLE,                    0x21, SEND,  ROCE_M_SEND_ | ROCE_M_MIDDLE) \
	X(UC_SEND_LAST,                      0x22, SEND,  ROCE_M_SEND_ | ROCE_M_LAST | ROCE_M_RWQE) \
	X(UC_SEND_LAST_WITH_IMMEDIATE,       0x23, SEND,  ROCE_M_SEND_ | ROCE_M_LAST | ROCE_M_RWQE | ROCE_M_IMMDT) \
	X(UC_SEND_ONLY,                      0x24, SEND,  ROCE_M_SEND_ | ROCE_M_ONLY | ROCE_M_RWQE) \
	X(UC_SEND_ONLY_WITH_IMMEDIATE,       0x25, SEND,  ROCE_M_SEND_ | ROCE_M_ONLY | ROCE_M_RWQE | ROCE_M_IMMDT) \
	X(UC_RDMA_WRITE_FIRST,               0x26, WRITE, ROCE_M_WRITE_ | ROCE_M_FIRST | ROCE_M_RETH) \
	X(UC_RDMA_WRITE_MIDDLE,              0x27, WRITE, ROCE_M_WRITE_ | ROCE_M_MIDDLE) \
	X(UC_RDMA_WRITE_LAST,                0x28, WRITE, ROCE_M_WRITE_ | ROCE_M_LAST) \
	X(UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 0x29, WRITE, ROCE_M_WRITE_ | ROCE_M_LAST | ROCE_M_RWQE | ROCE_M_IMMDT) \
	X(UC_RDMA_WRITE_ONLY,                0x2A, WRITE, ROCE_M_WRITE_ | ROCE_M_ONLY | ROCE_M_RETH) \
	X(UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0x2B, WRITE, ROCE_M_WRITE_ | ROCE_M_ONLY | ROCE_M_RETH | ROCE_M_RWQE | ROCE_M_IMMDT) \
	X(UD_SEND_ONLY,                      0x64, SEND,  ROCE_M_SEND_ | ROCE_M_ONLY | ROCE_M_RWQE | ROCE_M_DETH) \
	X(UD_SEND_ONLY_WITH_IMMEDIATE,       0x65, SEND,  ROCE_M_SEND_ | ROCE_M_ONLY | ROCE_M_RWQE | ROCE_M_DETH | ROCE_M_IMMDT)

enum roce_opcode {
#define X(name, value, cls, mask) ROCE_OP_##name = value,
	ROCE_OPCODES(X)
#undef X
};

struct roce_opcode_info {
	const char *name;     /* "RC_SEND_FIRST", generated from the enum */
	uint32_t mask;        /* enum roce_mask bits */
	uint8_t cls;          /* enum roce_class */
	uint8_t hdr_len;      /* BTH + extension headers */
	uint8_t valid;        /* 0 for values the table does not define */
};

/* Indexed by the opcode byte; .valid == 0 for unknown opcodes. */
extern const struct roce_opcode_info roce_opcode_table[256];

static inline const struct roce_opcode_info *roce_opcode_info(uint8_t opcode)
{
	const struct roce_opcode_info *info = &roce_opcode_table[opcode];

	return info->valid ? info : NULL;
}

static inline enum roce_transport roce_opcode_transport(uint8_t opcode)
{
	return (enum roce_transport)(opcode >> 5);
}

/* Name of an opcode ("RC_SEND_ONLY"), or "UNKNOWN". */
const char *roce_opcode_str(uint8_t opcode);
const char *roce_class_str(enum roce_class cls);

/* Bytes of BTH plus the extension headers named in mask. */
unsigned roce_hdrs_len(uint32_t mask);

/* Every defined opcode, in table order (for tests and tools). */
extern const uint8_t roce_opcodes[];
extern const unsigned roce_opcode_count;

#endif
