/* SPDX-License-Identifier: MIT */
/* The ICRC test vectors of REFERENCE.md, byte for byte, and the masking rules: the
 * variant fields (TOS/TTL/checksums, traffic class/flow label/hop limit, UDP checksum,
 * BTH byte 4) do not change the ICRC; every other bit does. */
#include <arpa/inet.h>
#include <string.h>
#include <zlib.h>

#include <isa-l/crc.h>

#include "roce.h"
#include "t.h"

/* IPv4: 10.0.0.1 → 10.0.0.2, UDP 49152 → 4791, RC SEND_ONLY "hello" to QP 0x11, A=1,
 * PSN 0x123456, pad 3. */
static const char v4_ip[] = "4500003400004000401126b70a0000010a000002";
static const char v4_udp[] = "c00012b700200000";
static const char v4_payload[] = "0430ffff000000118012345668656c6c6f000000";
static const char v4_icrc[] = "b222dce0";

static void test_ipv4_vector(void)
{
	uint8_t ip[20], udp[8], pkt[64];
	long n = t_unhex(v4_payload, pkt, sizeof(pkt));
	struct roce_flow4 flow;
	struct roce_pkt view;
	char hex[9];

	T_CHECK(t_unhex(v4_ip, ip, sizeof(ip)) == 20 && t_unhex(v4_udp, udp, sizeof(udp)) == 8,
		"vector decodes");
	memcpy(&flow.saddr, ip + 12, 4);
	memcpy(&flow.daddr, ip + 16, 4);
	flow.sport = roce_get16(udp);
	flow.dport = roce_get16(udp + 2);
	T_EQ(roce_get16(ip + 4), 0, "vector uses IP ID 0");
	T_EQ(roce_get16(ip + 6), 0x4000, "vector uses DF");
	/* The UDP length in the vector covers the ICRC, as our synthesized header does. */
	T_EQ(roce_get16(udp + 4), 8 + n + 4, "vector UDP length");

	uint8_t wire[64];
	memcpy(wire, pkt, (size_t)n);
	roce_icrc4_seal(&flow, wire, (size_t)n + 4);
	t_hex(wire + n, 4, hex);
	T_CHECK(!strcmp(hex, v4_icrc), "IPv4 ICRC bytes %s, want %s", hex, v4_icrc);
	T_CHECK(roce_icrc4_ok(&flow, wire, (size_t)n + 4), "IPv4 ICRC verifies");

	T_EQ(roce_parse(wire, (size_t)n + 4, 1024, &view), ROCE_R_OK, "vector parses");
	T_EQ(view.h.bth.opcode, ROCE_OP_RC_SEND_ONLY, "opcode");
	T_EQ(view.h.bth.dqpn, 0x11, "dqpn");
	T_EQ(view.h.bth.psn, 0x123456, "psn");
	T_EQ(view.h.bth.ackreq, 1, "ackreq");
	T_EQ(view.payload_len, 5, "payload length");
	T_CHECK(!memcmp(view.payload, "hello", 5), "payload");
}

/* IPv6: fd00::1 → fd00::2, UDP 49153 → 4791, RC SEND_ONLY to QP 0x11, A=1, PSN 7, 8 zero
 * bytes; the flow label 0x12345 is masked, so it never enters the ICRC. */
static void test_ipv6_vector(void)
{
	struct roce_flow6 flow = { .sport = 49153, .dport = ROCE_UDP_PORT };
	struct roce_hdr h = { .bth = { .opcode = ROCE_OP_RC_SEND_ONLY, .pkey = 0xFFFF,
				       .dqpn = 0x11, .ackreq = true, .psn = 7 } };
	static const uint8_t zeros[8];
	uint8_t wire[64];
	long n;
	char hex[9];

	inet_pton(AF_INET6, "fd00::1", flow.saddr);
	inet_pton(AF_INET6, "fd00::2", flow.daddr);
	n = roce_build(wire, sizeof(wire), &h, zeros, sizeof(zeros));
	T_EQ(n, 12 + 8 + 4, "IPv6 vector length");
	roce_icrc6_seal(&flow, wire, (size_t)n);
	t_hex(wire + n - 4, 4, hex);
	T_CHECK(!strcmp(hex, "989cf268"), "IPv6 ICRC bytes %s, want 989cf268", hex);
	T_CHECK(roce_icrc6_ok(&flow, wire, (size_t)n), "IPv6 ICRC verifies");
}

/* ISA-L's crc32_gzip_refl must equal zlib's crc32 (the definition in REFERENCE.md),
 * including when chained, for every length around the folding block sizes. */
static void test_crc_library(void)
{
	struct t_rng rng = { 42 };
	uint8_t buf[4200];

	t_fill(&rng, buf, sizeof(buf));
	for (size_t len = 0; len < sizeof(buf); len += 1 + len / 16) {
		uint32_t z = (uint32_t)crc32(0, buf, (uInt)len);
		size_t cut = len / 3;
		uint32_t i = crc32_gzip_refl(crc32_gzip_refl(0, buf, cut), buf + cut, len - cut);
		T_EQ(i, z, "ISA-L chained CRC equals zlib crc32");
	}
}

/* Masked fields leave the ICRC alone; any other bit of the packet changes it. */
static void test_masking(void)
{
	struct roce_flow4 f4 = { .saddr = htonl(0x0a000001), .daddr = htonl(0x0a000002),
				 .sport = 50000, .dport = ROCE_UDP_PORT };
	uint8_t pkt[64];
	long n = t_unhex(v4_payload, pkt, sizeof(pkt));
	uint32_t base = roce_icrc4(&f4, pkt, (size_t)n), other;

	pkt[4] = 0xC0; /* FECN and BECN set by a switch on the way */
	T_EQ(roce_icrc4(&f4, pkt, (size_t)n), base, "BTH byte 4 is masked");
	pkt[4] = 0;
	for (long byte = 0; byte < n; byte++) {
		if (byte == 4)
			continue;
		for (int bit = 0; bit < 8; bit++) {
			pkt[byte] ^= (uint8_t)(1 << bit);
			other = roce_icrc4(&f4, pkt, (size_t)n);
			pkt[byte] ^= (uint8_t)(1 << bit);
			T_CHECK(other != base, "flipping byte %ld bit %d must change the ICRC", byte, bit);
		}
	}
	f4.sport++;
	T_CHECK(roce_icrc4(&f4, pkt, (size_t)n) != base, "UDP source port is covered");
	f4.sport--;
	f4.saddr ^= htonl(1);
	T_CHECK(roce_icrc4(&f4, pkt, (size_t)n) != base, "IP source address is covered");
}

/* The ICRC by its definition, with zlib and an IPv4 header carrying Identification id. */
static uint32_t icrc4_reference(const struct roce_flow4 *f, uint16_t id, const uint8_t *pkt,
				size_t len)
{
	uint8_t pre[8 + 20 + 8 + 12];
	uint8_t *ip = pre + 8, *udp = ip + 20;
	uint32_t crc;

	memset(pre, 0xFF, 8);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[1] = 0xFF;
	roce_put16(ip + 2, (uint16_t)(20 + 8 + len + 4));
	roce_put16(ip + 4, id);
	roce_put16(ip + 6, 0x4000);
	ip[8] = 0xFF;
	ip[9] = 17;
	roce_put16(ip + 10, 0xFFFF);
	memcpy(ip + 12, &f->saddr, 4);
	memcpy(ip + 16, &f->daddr, 4);
	roce_put16(udp, f->sport);
	roce_put16(udp + 2, f->dport);
	roce_put16(udp + 4, (uint16_t)(8 + len + 4));
	roce_put16(udp + 6, 0xFFFF);
	memcpy(udp + 8, pkt, 12);
	udp[8 + 4] = 0xFF;
	crc = (uint32_t)crc32(0, pre, sizeof(pre));
	return (uint32_t)crc32(crc, pkt + 12, (uInt)(len - 12));
}

/* GSO segment k leaves with Identification k: the ICRC for k, the one-XOR reseal and the
 * receiver's search all agree with the definition, for every k the cache serves and for
 * lengths that share a cache line. */
static void test_ipv4_ids(void)
{
	static const size_t lens[] = { 16, 44, 1068, 4136, 4136 + 8 * 8, 4140 };
	struct roce_flow4 f = { htonl(0x0a000001), htonl(0x0a000002), 49152, 4791 };
	static uint8_t pkt[4200], sealed[4200];
	struct roce_icrc_ids ids;
	uint16_t got;

	roce_icrc_ids_init(&ids);
	for (size_t i = 0; i < sizeof(pkt); i++)
		pkt[i] = (uint8_t)(i * 7 + 3);
	for (size_t l = 0; l < T_ARRAY_SIZE(lens); l++) {
		size_t len = lens[l];

		for (uint16_t k = 0; k < ROCE_ICRC_MAX_ID + 2; k++) {
			uint32_t want = icrc4_reference(&f, k, pkt, len - 4);
			bool served = k < ROCE_ICRC_MAX_ID;

			T_CHECK(roce_icrc4_id(&f, k, pkt, len - 4) == want, "len %zu id %u", len, k);
			memcpy(sealed, pkt, len);
			roce_icrc4_seal(&f, sealed, len);
			roce_icrc4_reseal_id(&ids, k, sealed, len);
			T_CHECK((roce_icrc_get(sealed + len - 4) == want) == served,
				"len %zu id %u resealed", len, k);
			roce_icrc_put(sealed + len - 4, want);
			T_CHECK(roce_icrc4_ok_any_id(&ids, &f, sealed, len, &got) == served &&
				(!served || got == k), "len %zu id %u accepted as %u", len, k, got);
			sealed[len / 2] ^= 1;
			T_CHECK(!roce_icrc4_ok_any_id(&ids, &f, sealed, len, &got),
				"len %zu id %u: a flipped bit is refused", len, k);
		}
	}
}

static void test_short(void)
{
	struct roce_flow4 f4 = { 0 };
	struct roce_flow6 f6 = { 0 };
	uint8_t pkt[16] = { 0 };

	for (size_t len = 0; len < sizeof(pkt); len++) {
		T_CHECK(!roce_icrc4_ok(&f4, pkt, len), "len %zu is too short for an ICRC", len);
		T_CHECK(!roce_icrc6_ok(&f6, pkt, len), "len %zu is too short for an ICRC", len);
	}
}

int main(void)
{
	test_ipv4_vector();
	test_ipv6_vector();
	test_crc_library();
	test_masking();
	test_ipv4_ids();
	test_short();
	return t_done("icrc-vectors");
}
