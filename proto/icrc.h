/* SPDX-License-Identifier: MIT */
/* The RoCEv2 invariant CRC (IBA annex A17.3.3): CRC-32 over 8 bytes of 0xFF, the IP and
 * UDP headers with their variant fields set to all ones, and the packet from the BTH
 * (byte 4 set to all ones) through the pad; appended least-significant byte first.
 *
 * A UDP socket never sees the IP header, so both ends synthesize it from the flow:
 * IPv4 with IHL 5, Identification 0 and DF set (what the kernel sends for an
 * unconnected socket with IP_PMTUDISC_DO); IPv6 with no extension headers. */
#ifndef ODPEMU_PROTO_ICRC_H
#define ODPEMU_PROTO_ICRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* IPv4 endpoints: addresses in network byte order (as struct in_addr holds them),
 * ports in host order. */
struct roce_flow4 {
	uint32_t saddr, daddr;
	uint16_t sport, dport;
};

struct roce_flow6 {
	uint8_t saddr[16], daddr[16];
	uint16_t sport, dport;
};

/* ICRC of the packet pkt[0..len) — BTH through pad, without the ICRC — as sent on flow. */
uint32_t roce_icrc4(const struct roce_flow4 *flow, const uint8_t *pkt, size_t len);
uint32_t roce_icrc6(const struct roce_flow6 *flow, const uint8_t *pkt, size_t len);

/* Compute and store the ICRC in the last 4 bytes of pkt[0..len) (len includes them). */
void roce_icrc4_seal(const struct roce_flow4 *flow, uint8_t *pkt, size_t len);
void roce_icrc6_seal(const struct roce_flow6 *flow, uint8_t *pkt, size_t len);

/* Whether the last 4 bytes of pkt[0..len) hold the right ICRC (false if len < 16). */
bool roce_icrc4_ok(const struct roce_flow4 *flow, const uint8_t *pkt, size_t len);
bool roce_icrc6_ok(const struct roce_flow6 *flow, const uint8_t *pkt, size_t len);

/*
 * IPv4 Identification k (icrc_id.c): segment k of a UDP_SEGMENT (GSO) send leaves with
 * Identification k, which the ICRC covers. A sender seals as for 0 and re-seals segment k;
 * a receiver accepts Identification 0 .. ROCE_ICRC_MAX_ID-1. Both need a cache of the
 * per-length corrections (one per thread; roce_icrc_ids_init, then use).
 */
#define ROCE_ICRC_MAX_ID 64u	/* the kernel's UDP_MAX_SEGMENTS before 6.9; odpemu's cap */
#define ROCE_ICRC_ID_LINES 8u
struct roce_icrc_id_line {
	size_t len;				/* packet length with ICRC; 0: empty */
	uint32_t delta[ROCE_ICRC_MAX_ID];	/* ICRC(id k) ^ ICRC(id 0) */
};
struct roce_icrc_ids {
	struct roce_icrc_id_line line[ROCE_ICRC_ID_LINES];	/* by len % lines */
};
void roce_icrc_ids_init(struct roce_icrc_ids *c);
/* ICRC of pkt[0..len) (without the ICRC) as sent with Identification id. */
uint32_t roce_icrc4_id(const struct roce_flow4 *flow, uint16_t id, const uint8_t *pkt,
		       size_t len);
/* pkt[0..len) (ICRC included) is sealed for Identification 0: seal it for id instead
 * (id 0 or >= ROCE_ICRC_MAX_ID: unchanged). */
void roce_icrc4_reseal_id(struct roce_icrc_ids *c, uint16_t id, uint8_t *pkt, size_t len);
/* Whether pkt's ICRC is right for some Identification below ROCE_ICRC_MAX_ID (*id: which). */
bool roce_icrc4_ok_any_id(struct roce_icrc_ids *c, const struct roce_flow4 *flow,
			  const uint8_t *pkt, size_t len, uint16_t *id);

/* The ICRC's wire bytes are the CRC least-significant byte first. */
static inline void roce_icrc_put(uint8_t *at, uint32_t crc)
{
	at[0] = (uint8_t)crc;
	at[1] = (uint8_t)(crc >> 8);
	at[2] = (uint8_t)(crc >> 16);
	at[3] = (uint8_t)(crc >> 24);
}

static inline uint32_t roce_icrc_get(const uint8_t *at)
{
	return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16
		| (uint32_t)at[3] << 24;
}

#endif
