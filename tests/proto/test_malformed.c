/* SPDX-License-Identifier: MIT */
/* Bad input never crashes or reads out of bounds, and each rejection names its reason.
 * Every packet is parsed from a heap copy of exactly its length, so an ASan build of
 * this test catches a read past the end. Every enum roce_reason value must be hit. */
#include <stdlib.h>
#include <string.h>

#include "roce.h"
#include "t.h"

#define PMTU 1024u

static unsigned hits[ROCE_R_COUNT];

/* Parse an exact-size heap copy. */
static enum roce_reason parse_exact(const uint8_t *src, size_t len, unsigned pmtu)
{
	uint8_t *copy = malloc(len ? len : 1);
	struct roce_pkt pkt;
	enum roce_reason r;

	if (!copy)
		abort();
	memcpy(copy, src, len);
	r = roce_parse(copy, len, pmtu, &pkt);
	free(copy);
	if ((unsigned)r < ROCE_R_COUNT)
		hits[r]++;
	return r;
}

static void expect(const uint8_t *buf, size_t len, unsigned pmtu, enum roce_reason want,
		   const char *what)
{
	enum roce_reason got = parse_exact(buf, len, pmtu);

	T_CHECK(got == want, "%s: got %s, want %s", what, roce_reason_str(got), roce_reason_str(want));
}

/* A valid packet of `opcode` with `n` payload bytes; returns its length. */
static size_t valid(uint8_t *buf, size_t cap, uint8_t opcode, uint32_t n, uint32_t reth_len)
{
	struct roce_hdr h = { .bth = { .opcode = opcode, .pkey = 0xFFFF, .dqpn = 0x11, .psn = 3 },
			      .reth = { .va = 0x1000, .rkey = 7, .len = reth_len },
			      .atmeth = { .va = 0x2000 }, .feth = { .plt = 1 } };
	uint8_t payload[4096] = { 0 };
	long len = roce_build(buf, cap, &h, payload, n);

	if (len < 0)
		abort();
	return (size_t)len;
}

/* What a word-aligned prefix of a valid packet (built with a whole-message RETH length)
 * must parse as, from the opcode's length rule alone. */
static enum roce_reason cut_verdict(uint32_t mask, uint32_t payload)
{
	if (mask & ROCE_M_PAYLOAD8)
		return ROCE_R_ATOMIC_WRITE_LENGTH;
	if ((mask & ROCE_M_MIDDLE) || (mask & ROCE_M_ONLY) == ROCE_M_FIRST)
		return ROCE_R_PAYLOAD_NOT_PMTU;
	if ((mask & ROCE_M_ONLY) == ROCE_M_LAST)
		return payload ? ROCE_R_OK : ROCE_R_EMPTY_LAST;
	return (mask & ROCE_M_RETH) ? ROCE_R_RETH_LENGTH_MISMATCH : ROCE_R_OK;
}

/* Every prefix of a valid packet of every opcode: TOO_SHORT below a BTH + ICRC,
 * TRUNCATED below the opcode's headers + ICRC, MISALIGNED_LENGTH off a word boundary,
 * and on a word boundary what the opcode's length rule says. */
static void test_truncation(void)
{
	uint8_t buf[4200];

	for (unsigned i = 0; i < roce_opcode_count; i++) {
		uint8_t op = roce_opcodes[i];
		const struct roce_opcode_info *info = roce_opcode_info(op);
		uint32_t n = info->mask & ROCE_M_PAYLOAD8 ? 8 : info->mask & ROCE_M_PAYLOAD ? PMTU : 0;
		uint32_t reth_len = (info->mask & ROCE_M_ONLY) == ROCE_M_FIRST ? 2 * PMTU : n;
		size_t len = valid(buf, sizeof(buf), op, n, reth_len);
		size_t min = (size_t)info->hdr_len + ROCE_ICRC_LEN;

		T_EQ(parse_exact(buf, len, PMTU), ROCE_R_OK, info->name);
		for (size_t cut = 0; cut < len; cut++) {
			enum roce_reason r = parse_exact(buf, cut, PMTU), want;
			if (cut < ROCE_BTH_LEN + ROCE_ICRC_LEN)
				want = ROCE_R_TOO_SHORT;
			else if (cut < min)
				want = ROCE_R_TRUNCATED;
			else if ((cut - min) % 4)
				want = ROCE_R_MISALIGNED_LENGTH;
			else
				want = cut_verdict(info->mask, (uint32_t)(cut - min));
			T_CHECK(r == want, "%s cut to %zu: got %s, want %s", info->name, cut,
				roce_reason_str(r), roce_reason_str(want));
		}
	}
}

static void test_bth_rules(void)
{
	uint8_t buf[64];
	size_t len = valid(buf, sizeof(buf), ROCE_OP_RC_SEND_ONLY, 4, 0);

	for (uint8_t tver = 1; tver < 16; tver++) {
		buf[1] = (uint8_t)((buf[1] & 0xF0) | tver);
		expect(buf, len, PMTU, ROCE_R_BAD_TVER, "TVer != 0");
	}
	buf[1] &= 0xF0;
	for (unsigned op = 0; op < 256; op++) {
		if (roce_opcode_info((uint8_t)op))
			continue;
		buf[0] = (uint8_t)op;
		expect(buf, len, PMTU, ROCE_R_UNKNOWN_OPCODE, "undefined opcode");
	}
	buf[0] = ROCE_OP_RC_SEND_ONLY;
	roce_put24(buf + 5, 0);
	expect(buf, len, PMTU, ROCE_R_BAD_QPN, "QP 0");
	roce_put24(buf + 5, 0x11);
	expect(buf, len, PMTU, ROCE_R_OK, "restored");
	expect(buf, len, 1500, ROCE_R_BAD_PMTU, "pmtu 1500");
	expect(buf, len, 0, ROCE_R_BAD_PMTU, "pmtu 0");
	uint8_t *big = calloc(1, 65528);
	if (!big)
		abort();
	memcpy(big, buf, len);
	expect(big, 65524, PMTU, ROCE_R_PAYLOAD_OVER_PMTU, "a 64 KiB datagram");
	expect(big, 65528, PMTU, ROCE_R_TOO_LONG, "longer than a UDP datagram");
	free(big);
}

static void set_pad(uint8_t *buf, unsigned pad)
{
	buf[1] = (uint8_t)((buf[1] & ~0x30) | pad << 4);
}

static void test_pad_and_payload(void)
{
	uint8_t buf[4200];
	size_t len;

	len = valid(buf, sizeof(buf), ROCE_OP_RC_SEND_ONLY, 0, 0);
	set_pad(buf, 3);
	expect(buf, len, PMTU, ROCE_R_BAD_PAD, "pad 3 with no bytes after the headers");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_ACKNOWLEDGE, 0, 0);
	set_pad(buf, 2);
	expect(buf, len, PMTU, ROCE_R_BAD_PAD, "pad on an ACK");
	set_pad(buf, 0);
	memset(buf + len, 0, 4);
	expect(buf, len + 4, PMTU, ROCE_R_UNEXPECTED_PAYLOAD, "payload on an ACK");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_RDMA_READ_REQUEST, 0, 64);
	memset(buf + len, 0, 8);
	expect(buf, len + 8, PMTU, ROCE_R_UNEXPECTED_PAYLOAD, "payload on a READ request");

	len = valid(buf, sizeof(buf), ROCE_OP_RC_SEND_FIRST, PMTU, 0);
	set_pad(buf, 1);
	expect(buf, len, PMTU, ROCE_R_PAYLOAD_NOT_PMTU, "pad on a FIRST packet");
	set_pad(buf, 0);
	expect(buf, len, 2048, ROCE_R_PAYLOAD_NOT_PMTU, "FIRST shorter than the PMTU");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE, PMTU - 4, 0);
	expect(buf, len, PMTU, ROCE_R_PAYLOAD_NOT_PMTU, "MIDDLE shorter than the PMTU");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_SEND_ONLY, PMTU + 1, 0);
	expect(buf, len, PMTU, ROCE_R_PAYLOAD_OVER_PMTU, "ONLY above the PMTU");
	len = valid(buf, sizeof(buf), ROCE_OP_UD_SEND_ONLY, PMTU + 4, 0);
	expect(buf, len, PMTU, ROCE_R_PAYLOAD_OVER_PMTU, "UD above the PMTU");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_SEND_LAST, 0, 0);
	expect(buf, len, PMTU, ROCE_R_EMPTY_LAST, "empty LAST");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, 0, 0);
	expect(buf, len, PMTU, ROCE_R_OK, "empty READ response ONLY (FLUSH/ATOMIC_WRITE answer)");
}

static void test_reth_rules(void)
{
	uint8_t buf[4200];
	size_t len;

	len = valid(buf, sizeof(buf), ROCE_OP_RC_RDMA_READ_REQUEST, 0, ROCE_RETH_MAX_LEN);
	expect(buf, len, PMTU, ROCE_R_OK, "READ of exactly 2^31");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_RDMA_READ_REQUEST, 0, ROCE_RETH_MAX_LEN + 1);
	expect(buf, len, PMTU, ROCE_R_RETH_TOO_LONG, "READ of 2^31 + 1");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_RDMA_WRITE_FIRST, PMTU, 0xFFFFFFFFu);
	expect(buf, len, PMTU, ROCE_R_RETH_TOO_LONG, "WRITE of 4 GiB - 1");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_RDMA_WRITE_ONLY, 100, 101);
	expect(buf, len, PMTU, ROCE_R_RETH_LENGTH_MISMATCH, "WRITE_ONLY length != payload");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_RDMA_WRITE_FIRST, PMTU, PMTU);
	expect(buf, len, PMTU, ROCE_R_RETH_LENGTH_MISMATCH, "WRITE_FIRST of one PMTU");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_ATOMIC_WRITE, 8, 16);
	expect(buf, len, PMTU, ROCE_R_ATOMIC_WRITE_LENGTH, "ATOMIC_WRITE DMA length 16");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_ATOMIC_WRITE, 8, 8);
	roce_put64(buf + ROCE_BTH_LEN, 0x1004);
	expect(buf, len, PMTU, ROCE_R_ATOMIC_MISALIGNED, "ATOMIC_WRITE at VA % 8 == 4");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_SEND_ONLY, 8, 0);
	buf[0] = ROCE_OP_RC_ATOMIC_WRITE; /* 8 bytes after the BTH: too short for a RETH */
	expect(buf, len, PMTU, ROCE_R_TRUNCATED, "ATOMIC_WRITE without room for its RETH");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_RDMA_WRITE_ONLY, 12, 12);
	buf[0] = ROCE_OP_RC_ATOMIC_WRITE;
	expect(buf, len, PMTU, ROCE_R_ATOMIC_WRITE_LENGTH, "ATOMIC_WRITE with 12 bytes");
}

static void test_other_headers(void)
{
	uint8_t buf[128];
	size_t len;

	len = valid(buf, sizeof(buf), ROCE_OP_RC_COMPARE_SWAP, 0, 0);
	expect(buf, len, PMTU, ROCE_R_OK, "aligned CMP_SWP");
	for (unsigned off = 1; off < 8; off++) {
		roce_put64(buf + ROCE_BTH_LEN, 0x2000 + off);
		expect(buf, len, PMTU, ROCE_R_ATOMIC_MISALIGNED, "CMP_SWP misaligned");
	}
	len = valid(buf, sizeof(buf), ROCE_OP_RC_FLUSH, 0, 4096);
	expect(buf, len, PMTU, ROCE_R_OK, "FLUSH");
	roce_put32(buf + ROCE_BTH_LEN, 2u << 4 | 1);
	expect(buf, len, PMTU, ROCE_R_BAD_FETH, "FETH selectivity 2");
	roce_put32(buf + ROCE_BTH_LEN, 4);
	expect(buf, len, PMTU, ROCE_R_BAD_FETH, "FETH placement type bit 2");
	len = valid(buf, sizeof(buf), ROCE_OP_RC_ACKNOWLEDGE, 0, 0);
	buf[ROCE_BTH_LEN] = 2 << 5;
	expect(buf, len, PMTU, ROCE_R_BAD_AETH, "AETH reserved type");
	buf[ROCE_BTH_LEN] = 0x80 | 31;
	expect(buf, len, PMTU, ROCE_R_BAD_AETH, "AETH bit 7");
	buf[ROCE_BTH_LEN] = roce_syndrome_nak(ROCE_NAK_REMOTE_ACCESS);
	expect(buf, len, PMTU, ROCE_R_OK, "NAK remote access");
}

/* Random bytes of random lengths: whatever the verdict, no crash and no overread. */
static void test_random_garbage(int argc, char **argv)
{
	struct t_rng r = { t_seed(argc, argv, 7) };
	uint8_t buf[4200];

	for (int i = 0; i < 200000; i++) {
		size_t len = t_below(&r, 100) < 90 ? t_below(&r, 80) : t_below(&r, sizeof(buf));
		t_fill(&r, buf, len);
		if (t_below(&r, 2))
			buf[0] = roce_opcodes[t_below(&r, roce_opcode_count)];
		if (len > 1 && t_below(&r, 2))
			buf[1] &= 0xF0;
		enum roce_reason why = parse_exact(buf, len, 256u << t_below(&r, 5));
		T_CHECK((unsigned)why < ROCE_R_COUNT, "reason in range");
	}
}

int main(int argc, char **argv)
{
	test_truncation();
	test_bth_rules();
	test_pad_and_payload();
	test_reth_rules();
	test_other_headers();
	test_random_garbage(argc, argv);
	for (unsigned r = 0; r < ROCE_R_COUNT; r++) {
		T_CHECK(hits[r] > 0, "reason %s was never produced", roce_reason_str(r));
		T_CHECK(strlen(roce_reason_text(r)) > 0, "reason %u has a text", r);
	}
	return t_done("malformed");
}
