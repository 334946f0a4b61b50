/* SPDX-License-Identifier: MIT */
/* Why roce_parse() rejected a packet. Every rejection has a name; the daemon counts
 * drops per reason. Names and texts are generated from one list. */
#ifndef ODPEMU_PROTO_REASON_H
#define ODPEMU_PROTO_REASON_H

/* X(name, explanation) */
#define ROCE_REASONS(X) \
	X(OK,                  "valid packet") \
	X(TOO_SHORT,           "shorter than a BTH and an ICRC") \
	X(TOO_LONG,            "longer than a UDP datagram can be") \
	X(BAD_TVER,            "BTH transport header version is not 0") \
	X(UNKNOWN_OPCODE,      "opcode is not defined for RoCEv2") \
	X(BAD_QPN,             "destination QP number 0") \
	X(TRUNCATED,           "shorter than the opcode's headers and an ICRC") \
	X(MISALIGNED_LENGTH,   "payload plus pad is not a multiple of 4 bytes") \
	X(BAD_PAD,             "pad count exceeds the bytes after the headers") \
	X(UNEXPECTED_PAYLOAD,  "payload on an opcode that carries none") \
	X(PAYLOAD_NOT_PMTU,    "FIRST or MIDDLE packet payload differs from the path MTU") \
	X(PAYLOAD_OVER_PMTU,   "LAST or ONLY packet payload exceeds the path MTU") \
	X(EMPTY_LAST,          "LAST packet without payload") \
	X(RETH_TOO_LONG,       "RETH DMA length above 2^31") \
	X(RETH_LENGTH_MISMATCH, "RETH DMA length does not fit the packet's place in the message") \
	X(ATOMIC_MISALIGNED,   "atomic virtual address not 8-byte aligned") \
	X(ATOMIC_WRITE_LENGTH, "ATOMIC_WRITE payload or DMA length is not 8 bytes") \
	X(BAD_FETH,            "FETH selectivity or placement type uses reserved values") \
	X(BAD_AETH,            "AETH syndrome uses the reserved type or bit 7") \
	X(BAD_PMTU,            "path MTU argument is not 256, 512, 1024, 2048 or 4096")

enum roce_reason {
#define X(name, text) ROCE_R_##name,
	ROCE_REASONS(X)
#undef X
	ROCE_R_COUNT
};

/* "BAD_TVER" */
const char *roce_reason_str(enum roce_reason r);
/* "BTH transport header version is not 0" */
const char *roce_reason_text(enum roce_reason r);

#endif
