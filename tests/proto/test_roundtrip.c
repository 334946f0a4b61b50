/* SPDX-License-Identifier: MIT */
/* Every opcode through build → seal → parse with random field values and payload sizes
 * legal for its place in a message: all fields come back, the ICRC verifies. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "roce.h"
#include "t.h"

#define ROUNDS_PER_OPCODE 2000

/* Random header values; PadCnt is derived by build. Only defined values of reserved
 * fields are drawn (they must survive the round trip). */
static void random_hdr(struct t_rng *r, uint8_t opcode, struct roce_hdr *h)
{
	t_fill(r, h, sizeof(*h));
	h->bth = (struct roce_bth){
		.opcode = opcode, .se = t_rand(r) & 1, .migreq = t_rand(r) & 1,
		.pkey = (uint16_t)t_rand(r), .resv8a = (uint8_t)t_rand(r),
		.dqpn = 1 + (uint32_t)t_below(r, ROCE_QPN_MASK), .ackreq = t_rand(r) & 1,
		.psn = (uint32_t)t_rand(r) & 0xFFFFFF,
	};
	h->deth.sqpn &= ROCE_QPN_MASK;
	h->feth.sel = (uint8_t)t_below(r, 2);
	h->feth.plt = (uint8_t)t_below(r, 4);
	h->reth.len = (uint32_t)t_below(r, ROCE_RETH_MAX_LEN + 1ull);
	h->atmeth.va &= ~7ull;
	h->aeth.syndrome = (uint8_t)((t_below(r, 3) == 2 ? 3 : t_below(r, 2)) << 5 | t_below(r, 32));
	h->aeth.msn &= 0xFFFFFF;
}

/* A payload length the opcode's place in a message allows, and the RETH length that
 * goes with it (writes carry the whole message length). */
static uint32_t legal_payload(struct t_rng *r, uint32_t mask, unsigned pmtu, struct roce_hdr *h)
{
	uint32_t n;

	if (!(mask & ROCE_M_PAYLOAD))
		return 0;
	if (mask & ROCE_M_PAYLOAD8) {
		h->reth.len = 8;
		h->reth.va &= ~7ull;
		return 8;
	}
	if ((mask & ROCE_M_MIDDLE) || (mask & ROCE_M_ONLY) == ROCE_M_FIRST)
		n = pmtu;
	else if ((mask & ROCE_M_ONLY) == ROCE_M_LAST)
		n = 1 + (uint32_t)t_below(r, pmtu);
	else
		n = (uint32_t)t_below(r, pmtu + 1);
	if ((mask & ROCE_M_RETH) && (mask & ROCE_M_ONLY) == ROCE_M_ONLY)
		h->reth.len = n;
	if ((mask & ROCE_M_RETH) && (mask & ROCE_M_ONLY) == ROCE_M_FIRST)
		h->reth.len = pmtu + 1 + (uint32_t)t_below(r, ROCE_RETH_MAX_LEN - pmtu);
	return n;
}

static void check_fields(const struct roce_hdr *a, const struct roce_hdr *b, uint32_t mask,
			 const char *op)
{
	T_CHECK(!memcmp(&a->bth.opcode, &b->bth.opcode, 1) && a->bth.se == b->bth.se
		&& a->bth.migreq == b->bth.migreq && a->bth.pkey == b->bth.pkey
		&& a->bth.resv8a == b->bth.resv8a && a->bth.dqpn == b->bth.dqpn
		&& a->bth.ackreq == b->bth.ackreq && a->bth.psn == b->bth.psn, "%s: BTH", op);
	if (mask & ROCE_M_DETH)
		T_CHECK(a->deth.qkey == b->deth.qkey && a->deth.sqpn == b->deth.sqpn, "%s: DETH", op);
	if (mask & ROCE_M_FETH)
		T_CHECK(a->feth.sel == b->feth.sel && a->feth.plt == b->feth.plt, "%s: FETH", op);
	if (mask & ROCE_M_RETH)
		T_CHECK(a->reth.va == b->reth.va && a->reth.rkey == b->reth.rkey
			&& a->reth.len == b->reth.len, "%s: RETH", op);
	if (mask & ROCE_M_ATMETH)
		T_CHECK(a->atmeth.va == b->atmeth.va && a->atmeth.rkey == b->atmeth.rkey
			&& a->atmeth.swap_add == b->atmeth.swap_add
			&& a->atmeth.compare == b->atmeth.compare, "%s: AtomicETH", op);
	if (mask & ROCE_M_AETH)
		T_CHECK(a->aeth.syndrome == b->aeth.syndrome && a->aeth.msn == b->aeth.msn,
			"%s: AETH", op);
	if (mask & ROCE_M_ATMACK)
		T_CHECK(a->atmack == b->atmack, "%s: AtomicAckETH", op);
	if (mask & ROCE_M_IMMDT)
		T_CHECK(a->imm == b->imm, "%s: ImmDt", op);
	if (mask & ROCE_M_IETH)
		T_CHECK(a->ieth_rkey == b->ieth_rkey, "%s: IETH", op);
}

static void roundtrip_one(struct t_rng *r, uint8_t opcode)
{
	static const unsigned pmtus[] = { 256, 512, 1024, 2048, 4096 };
	const struct roce_opcode_info *info = roce_opcode_info(opcode);
	unsigned pmtu = pmtus[t_below(r, 5)];
	struct roce_flow4 f4 = { (uint32_t)t_rand(r), (uint32_t)t_rand(r), (uint16_t)t_rand(r), ROCE_UDP_PORT };
	uint8_t payload[4096], wire[4096 + 128];
	struct roce_hdr h;
	struct roce_pkt pkt;
	uint32_t n;
	long len;
	enum roce_reason why;

	random_hdr(r, opcode, &h);
	n = legal_payload(r, info->mask, pmtu, &h);
	t_fill(r, payload, n);
	len = roce_build(wire, sizeof(wire), &h, payload, n);
	T_EQ(len, roce_packet_len(opcode, n), info->name);
	if (len < 0)
		return;
	T_EQ(len % 4, 0, "packets are whole words");
	roce_icrc4_seal(&f4, wire, (size_t)len);
	T_CHECK(roce_icrc4_ok(&f4, wire, (size_t)len), "%s: ICRC verifies", info->name);
	why = roce_parse(wire, (size_t)len, pmtu, &pkt);
	T_CHECK(why == ROCE_R_OK, "%s (payload %u, pmtu %u): %s", info->name, n, pmtu,
		roce_reason_str(why));
	if (why != ROCE_R_OK)
		return;
	T_EQ(pkt.mask, info->mask, "mask");
	T_EQ(pkt.payload_len, n, "payload length");
	T_EQ(pkt.h.bth.padcnt, roce_pad(n), "pad count");
	T_CHECK(pkt.payload == wire + info->hdr_len && !memcmp(pkt.payload, payload, n),
		"%s: payload bytes", info->name);
	check_fields(&h, &pkt.h, info->mask, info->name);
}

/* Table sanity: names match the enum, header lengths add up, every payload opcode
 * says where in a message it sits. */
static void test_table(void)
{
	unsigned count = 0;

	for (unsigned op = 0; op < 256; op++) {
		const struct roce_opcode_info *info = roce_opcode_info((uint8_t)op);
		if (!info) {
			T_CHECK(!strcmp(roce_opcode_str((uint8_t)op), "UNKNOWN"), "unknown name");
			continue;
		}
		count++;
		T_EQ(info->hdr_len, roce_hdrs_len(info->mask), info->name);
		T_CHECK(info->mask & (ROCE_M_FIRST | ROCE_M_MIDDLE | ROCE_M_LAST), "%s: place", info->name);
		T_CHECK(!!(info->mask & ROCE_M_REQ) != !!(info->mask & ROCE_M_RESP), "%s: side", info->name);
	}
	T_EQ(count, roce_opcode_count, "opcode count");
	T_CHECK(!strcmp(roce_opcode_str(0x1C), "RC_FLUSH"), "FLUSH name");
	T_CHECK(!strcmp(roce_opcode_str(0x1D), "RC_ATOMIC_WRITE"), "ATOMIC_WRITE name");
	T_CHECK(!strcmp(roce_opcode_str(0x64), "UD_SEND_ONLY"), "UD name");
	T_EQ(roce_opcode_table[ROCE_OP_RC_FLUSH].hdr_len, 12 + 4 + 16, "FLUSH headers");
	T_EQ(roce_opcode_table[ROCE_OP_RC_ATOMIC_ACKNOWLEDGE].hdr_len, 12 + 4 + 8, "atomic ACK headers");
	T_EQ(roce_opcode_table[ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE].hdr_len, 12 + 8 + 4, "UD imm headers");
	T_EQ(roce_opcode_table[ROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE].hdr_len, 12 + 16 + 4, "write imm");
}

static void test_build_errors(void)
{
	struct roce_hdr h = { .bth = { .opcode = ROCE_OP_RC_ACKNOWLEDGE, .dqpn = 5 } };
	uint8_t buf[64];

	T_EQ(roce_build(buf, sizeof(buf), &h, "x", 1), -EINVAL, "ACK carries no payload");
	h.bth.opcode = 0x15;
	T_EQ(roce_build(buf, sizeof(buf), &h, NULL, 0), -EINVAL, "0x15 is not an opcode");
	h.bth.opcode = ROCE_OP_RC_ATOMIC_WRITE;
	T_EQ(roce_build(buf, sizeof(buf), &h, "1234", 4), -EINVAL, "ATOMIC_WRITE carries 8 bytes");
	h.bth.opcode = ROCE_OP_RC_SEND_ONLY;
	T_EQ(roce_build(buf, 12 + 3, &h, NULL, 0), -ENOSPC, "no room for the ICRC");
	T_EQ(roce_build(buf, 12 + 4, &h, NULL, 0), 16, "exact room");
	T_EQ(roce_build(buf, 12 + 4 + 4, &h, "a", 1), 20, "one byte payload + pad 3");
	T_EQ(roce_build(buf, 12 + 4 + 3, &h, "a", 1), -ENOSPC, "pad counts");
}

int main(int argc, char **argv)
{
	struct t_rng rng = { t_seed(argc, argv, 1) };

	test_table();
	test_build_errors();
	for (unsigned i = 0; i < roce_opcode_count; i++)
		for (int round = 0; round < ROUNDS_PER_OPCODE; round++)
			roundtrip_one(&rng, roce_opcodes[i]);
	return t_done("roundtrip");
}
