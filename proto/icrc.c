/* SPDX-License-Identifier: MIT */
/* ICRC with ISA-L's crc32_gzip_refl (reflected CRC-32, poly 0xEDB88320, init and final
 * xor ~0 — the same function as zlib's crc32). ISA-L folds with PCLMULQDQ; zlib 1.2.13
 * does not. proto-bench measures both; ISA-L is the faster on this machine. */
#include "icrc.h"

#include <isa-l/crc.h>
#include <string.h>

#include "bytes.h"
#include "headers.h"

#define IPPROTO_UDP_ 17u
#define IP4_HDR_LEN 20u
#define IP6_HDR_LEN 40u
#define UDP_HDR_LEN 8u
#define LRH_ONES 8u /* RoCEv2: 8 bytes of ones stand where the IB LRH was */

static uint32_t crc32_chain(uint32_t crc, const uint8_t *p, size_t n)
{
	return crc32_gzip_refl(crc, p, n);
}

/* ISA-L's AVX-512 CRC returns with the upper vector state dirty; the legacy-SSE code gcc
 * emits for the caller (memcpy, struct moves in roce_parse) then pays a state-transition
 * stall on every packet: measured 240 ns instead of 62 ns for parse + verify of a 64-byte
 * packet (proto-bench). VZEROUPPER after the CRC removes it. */
static void clear_upper_vector_state(void)
{
#if defined(__x86_64__)
	static int has_avx = -1;

	if (has_avx < 0)
		has_avx = __builtin_cpu_supports("avx");
	if (has_avx)
		__asm__ volatile("vzeroupper" ::: "memory");
#endif
}

/* UDP header with its checksum masked to ones; `len` counts the ICRC too. */
static void put_udp(uint8_t *p, uint16_t sport, uint16_t dport, size_t roce_len)
{
	roce_put16(p, sport);
	roce_put16(p + 2, dport);
	roce_put16(p + 4, (uint16_t)(UDP_HDR_LEN + roce_len));
	roce_put16(p + 6, 0xFFFF);
}

/* CRC of the masked pseudo-headers `pre`, then of the BTH with byte 4 (FECN/BECN) set
 * to ones, then of the rest of the packet in place. */
static uint32_t crc_packet(uint8_t *pre, size_t pre_len, const uint8_t *pkt, size_t len)
{
	uint32_t crc;

	memcpy(pre + pre_len, pkt, ROCE_BTH_LEN);
	pre[pre_len + 4] = 0xFF;
	crc = crc32_chain(0, pre, pre_len + ROCE_BTH_LEN);
	crc = crc32_chain(crc, pkt + ROCE_BTH_LEN, len - ROCE_BTH_LEN);
	clear_upper_vector_state();
	return crc;
}

uint32_t roce_icrc4(const struct roce_flow4 *flow, const uint8_t *pkt, size_t len)
{
	uint8_t pre[LRH_ONES + IP4_HDR_LEN + UDP_HDR_LEN + ROCE_BTH_LEN];
	uint8_t *ip = pre + LRH_ONES;
	size_t wire = len + ROCE_ICRC_LEN;

	if (len < ROCE_BTH_LEN)
		return 0;
	memset(pre, 0xFF, LRH_ONES);
	ip[0] = 0x45;                 /* version 4, IHL 5 */
	ip[1] = 0xFF;                 /* TOS: masked */
	roce_put16(ip + 2, (uint16_t)(IP4_HDR_LEN + UDP_HDR_LEN + wire));
	roce_put16(ip + 4, 0);        /* Identification 0 ... */
	roce_put16(ip + 6, 0x4000);   /* ... with DF: IP_PMTUDISC_DO */
	ip[8] = 0xFF;                 /* TTL: masked */
	ip[9] = IPPROTO_UDP_;
	roce_put16(ip + 10, 0xFFFF);  /* header checksum: masked */
	memcpy(ip + 12, &flow->saddr, 4);
	memcpy(ip + 16, &flow->daddr, 4);
	put_udp(ip + IP4_HDR_LEN, flow->sport, flow->dport, wire);
	return crc_packet(pre, LRH_ONES + IP4_HDR_LEN + UDP_HDR_LEN, pkt, len);
}

uint32_t roce_icrc6(const struct roce_flow6 *flow, const uint8_t *pkt, size_t len)
{
	uint8_t pre[LRH_ONES + IP6_HDR_LEN + UDP_HDR_LEN + ROCE_BTH_LEN];
	uint8_t *ip = pre + LRH_ONES;
	size_t wire = len + ROCE_ICRC_LEN;

	if (len < ROCE_BTH_LEN)
		return 0;
	memset(pre, 0xFF, LRH_ONES);
	roce_put32(ip, 0x6FFFFFFFu);  /* version 6; traffic class and flow label masked */
	roce_put16(ip + 4, (uint16_t)(UDP_HDR_LEN + wire)); /* payload length */
	ip[6] = IPPROTO_UDP_;         /* next header */
	ip[7] = 0xFF;                 /* hop limit: masked */
	memcpy(ip + 8, flow->saddr, 16);
	memcpy(ip + 24, flow->daddr, 16);
	put_udp(ip + IP6_HDR_LEN, flow->sport, flow->dport, wire);
	return crc_packet(pre, LRH_ONES + IP6_HDR_LEN + UDP_HDR_LEN, pkt, len);
}

void roce_icrc4_seal(const struct roce_flow4 *flow, uint8_t *pkt, size_t len)
{
	if (len >= ROCE_BTH_LEN + ROCE_ICRC_LEN)
		roce_icrc_put(pkt + len - ROCE_ICRC_LEN, roce_icrc4(flow, pkt, len - ROCE_ICRC_LEN));
}

void roce_icrc6_seal(const struct roce_flow6 *flow, uint8_t *pkt, size_t len)
{
	if (len >= ROCE_BTH_LEN + ROCE_ICRC_LEN)
		roce_icrc_put(pkt + len - ROCE_ICRC_LEN, roce_icrc6(flow, pkt, len - ROCE_ICRC_LEN));
}

bool roce_icrc4_ok(const struct roce_flow4 *flow, const uint8_t *pkt, size_t len)
{
	return len >= ROCE_BTH_LEN + ROCE_ICRC_LEN
		&& roce_icrc4(flow, pkt, len - ROCE_ICRC_LEN) == roce_icrc_get(pkt + len - ROCE_ICRC_LEN);
}

bool roce_icrc6_ok(const struct roce_flow6 *flow, const uint8_t *pkt, size_t len)
{
	return len >= ROCE_BTH_LEN + ROCE_ICRC_LEN
		&& roce_icrc6(flow, pkt, len - ROCE_ICRC_LEN) == roce_icrc_get(pkt + len - ROCE_ICRC_LEN);
}
