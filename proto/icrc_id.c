/* SPDX-License-Identifier: MIT */
/*
 * The IPv4 Identification in the ICRC, for UDP segmentation offload.
 *
 * A UDP_SEGMENT send leaves as one super-packet with Identification 0 (unconnected socket,
 * DF); whoever cuts it (the kernel's __udp_gso_segment through inet_gso_segment, or a
 * device) numbers segment k with Identification k. The ICRC covers the Identification
 * (icrc.h), so segment k must be sealed for k, and a receiver, which never sees the IP
 * header, accepts any k a sender can have produced.
 *
 * The CRC is linear: changing the Identification from 0 to k changes the ICRC by a value
 * that depends only on k and on how many bytes follow the field, never on the packet's
 * contents. So a sender re-seals a packet sealed for 0 with one XOR, and a receiver tries
 * every k with one XOR and one compare each. The per-length values are cached by the
 * caller (struct roce_icrc_ids): computing one costs a few hundred carry-less steps.
 */
#include "icrc.h"

#include <string.h>

#include "headers.h"

#define CRC_POLY_REFL 0xEDB88320u	/* CRC-32, reflected: bit 31 is x^0 */
#define ID_OFFSET 12u			/* 8 bytes of ones, then the IP header's bytes 4-5 */
#define PRE_BEFORE_BTH (8u + 20u + 8u)	/* ones, IPv4 header, UDP header */

/* a * b mod P in the reflected representation. */
static uint32_t mul_mod_p(uint32_t a, uint32_t b)
{
	uint32_t product = 0;

	for (uint32_t bit = 1u << 31; bit && a; bit >>= 1) {
		if (a & bit) {
			product ^= b;
			a ^= bit;
		}
		b = (b & 1) ? (b >> 1) ^ CRC_POLY_REFL : b >> 1;
	}
	return product;
}

/* x^(8 n) mod P: what appending n zero bytes multiplies a (raw) CRC register by. */
static uint32_t x_pow_8n(uint64_t n)
{
	uint32_t result = 1u << 31;	/* x^0 */
	uint32_t square = 1u << 23;	/* x^8 */

	for (; n; n >>= 1) {
		if (n & 1)
			result = mul_mod_p(result, square);
		square = mul_mod_p(square, square);
	}
	return result;
}

/* The raw (zero start, no final xor) CRC register after the two bytes of id. */
static uint32_t raw_crc_of_id(uint16_t id)
{
	uint8_t bytes[2] = { (uint8_t)(id >> 8), (uint8_t)id };
	uint32_t reg = 0;

	for (unsigned i = 0; i < 2; i++) {
		reg ^= bytes[i];
		for (unsigned b = 0; b < 8; b++)
			reg = (reg & 1) ? (reg >> 1) ^ CRC_POLY_REFL : reg >> 1;
	}
	return reg;
}

/* The XOR between the ICRC of a len-byte packet (ICRC included) with Identification id
 * and with Identification 0. */
static uint32_t id_delta(uint16_t id, uint32_t shift)
{
	return mul_mod_p(raw_crc_of_id(id), shift);
}

/* The shift for a packet of len bytes (ICRC included): x^8 per byte after the field. */
static uint32_t shift_for(size_t len)
{
	return x_pow_8n(PRE_BEFORE_BTH - ID_OFFSET - 2 + (len - ROCE_ICRC_LEN));
}

/* The cache line for len, filled on a miss. */
static const struct roce_icrc_id_line *line_of(struct roce_icrc_ids *c, size_t len)
{
	struct roce_icrc_id_line *l = &c->line[len % ROCE_ICRC_ID_LINES];
	uint32_t shift;

	if (l->len == len)
		return l;
	shift = shift_for(len);
	l->len = len;
	for (unsigned k = 0; k < ROCE_ICRC_MAX_ID; k++)
		l->delta[k] = id_delta((uint16_t)k, shift);
	return l;
}

void roce_icrc_ids_init(struct roce_icrc_ids *c)
{
	memset(c, 0, sizeof(*c));	/* len 0: no line is valid (a packet is >= 16 bytes) */
}

void roce_icrc4_reseal_id(struct roce_icrc_ids *c, uint16_t id, uint8_t *pkt, size_t len)
{
	uint8_t *at = pkt + len - ROCE_ICRC_LEN;

	if (id == 0 || id >= ROCE_ICRC_MAX_ID || len < 16)
		return;
	roce_icrc_put(at, roce_icrc_get(at) ^ line_of(c, len)->delta[id]);
}

bool roce_icrc4_ok_any_id(struct roce_icrc_ids *c, const struct roce_flow4 *flow,
			  const uint8_t *pkt, size_t len, uint16_t *id)
{
	uint32_t diff;
	const struct roce_icrc_id_line *l;

	if (len < 16)
		return false;
	diff = roce_icrc4(flow, pkt, len - ROCE_ICRC_LEN) ^
	       roce_icrc_get(pkt + len - ROCE_ICRC_LEN);
	if (diff == 0) {
		*id = 0;
		return true;
	}
	l = line_of(c, len);
	for (unsigned k = 1; k < ROCE_ICRC_MAX_ID; k++)
		if (l->delta[k] == diff) {
			*id = (uint16_t)k;
			return true;
		}
	return false;
}

uint32_t roce_icrc4_id(const struct roce_flow4 *flow, uint16_t id, const uint8_t *pkt,
		       size_t len)
{
	uint32_t crc0 = roce_icrc4(flow, pkt, len);

	return id ? crc0 ^ id_delta(id, shift_for(len + ROCE_ICRC_LEN)) : crc0;
}
