/* SPDX-License-Identifier: MIT */
/* A RoCEv2 packet as the UDP payload carries it: BTH, extension headers, payload, pad,
 * ICRC. roce_parse() validates one and returns a view; roce_build() writes one. */
#ifndef ODPEMU_PROTO_PACKET_H
#define ODPEMU_PROTO_PACKET_H

#include <stddef.h>
#include <stdint.h>

#include "headers.h"
#include "opcode.h"
#include "reason.h"

/* Every header's fields in host order. Parse fills those the opcode carries; build
 * reads those the opcode carries and ignores the rest. */
struct roce_hdr {
	struct roce_bth bth;
	struct roce_deth deth;
	struct roce_feth feth;
	struct roce_reth reth;
	struct roce_atmeth atmeth;
	struct roce_aeth aeth;
	uint64_t atmack;    /* AtomicAckETH: original remote value */
	uint32_t imm;       /* ImmDt read big-endian: bytes 11 22 33 44 = 0x11223344 */
	uint32_t ieth_rkey; /* IETH: R_Key to invalidate */
};

/* A parsed packet: a view into the caller's buffer, valid while that buffer is. */
struct roce_pkt {
	const uint8_t *buf;     /* first byte of the BTH */
	uint32_t len;           /* bytes from the BTH through the ICRC */
	uint32_t mask;          /* the opcode's enum roce_mask bits */
	uint8_t cls;            /* enum roce_class */
	uint8_t hdr_len;        /* BTH + extension headers */
	uint32_t payload_len;   /* without pad */
	const uint8_t *payload; /* buf + hdr_len */
	struct roce_hdr h;
};

/* Validate the UDP payload `buf` of `len` bytes (BTH first, ICRC last) for a QP whose
 * path MTU is `pmtu` bytes, and fill *pkt. Returns ROCE_R_OK or the first rule broken;
 * *pkt is meaningful only for ROCE_R_OK. Never reads outside buf[0..len). The ICRC is
 * not checked here (it needs the IP header: see icrc.h). Checks, in order: length,
 * TVer, opcode, QPN, header sizes, pad, payload length per opcode (FIRST/MIDDLE = pmtu,
 * LAST 1..pmtu, ONLY ≤ pmtu, no payload where none is carried), RETH length ≤ 2^31 and
 * consistent with an ONLY/FIRST write, atomic alignment, ATOMIC_WRITE = 8 bytes, FETH
 * and AETH reserved values. */
enum roce_reason roce_parse(const uint8_t *buf, size_t len, unsigned pmtu,
			    struct roce_pkt *pkt);

/* Destination QP of a packet, to find its QP (and so its path MTU) before parsing;
 * -1 if the buffer cannot hold a BTH. */
static inline int32_t roce_peek_dqpn(const uint8_t *buf, size_t len)
{
	return len >= ROCE_BTH_LEN ? (int32_t)roce_bth_dqpn_raw(buf) : -1;
}

/* Pad bytes after a payload: IBA 9.2 PadCnt = (-payload_len) & 3. */
static inline unsigned roce_pad(uint32_t payload_len)
{
	return -payload_len & 3u;
}

/* Total packet bytes (BTH through ICRC) for an opcode and a payload length. */
static inline size_t roce_packet_len(uint8_t opcode, uint32_t payload_len)
{
	return roce_hdrs_len(roce_opcode_table[opcode].mask) + (size_t)payload_len
		+ roce_pad(payload_len) + ROCE_ICRC_LEN;
}

/* Write the BTH and extension headers of h->bth.opcode into buf for a payload of
 * payload_len bytes (PadCnt is derived from it; h->bth.padcnt is ignored). Returns the
 * header length, -EINVAL for an unknown opcode or a payload the opcode cannot carry,
 * -ENOSPC if buf cannot hold headers, payload, pad and ICRC. The caller then places the
 * payload at buf + return value (or uses roce_build). */
int roce_build_headers(uint8_t *buf, size_t cap, const struct roce_hdr *h,
		       uint32_t payload_len);

/* Write a whole packet: headers, a copy of payload (payload_len bytes; NULL leaves the
 * payload area as the caller wrote it), zero pad and a zero ICRC slot, for the caller to
 * seal with roce_icrc4_seal()/roce_icrc6_seal(). Returns the packet length (including
 * the ICRC) or -EINVAL / -ENOSPC as roce_build_headers. */
long roce_build(uint8_t *buf, size_t cap, const struct roce_hdr *h,
		const void *payload, uint32_t payload_len);

#endif
