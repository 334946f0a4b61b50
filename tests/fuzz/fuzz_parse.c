/* SPDX-License-Identifier: MIT */
/* libFuzzer target for roce_parse(). Input: one byte choosing the path MTU, then the UDP
 * payload. Besides "no crash, no out-of-bounds read" (ASan), every accepted packet must
 * be rebuilt byte for byte by roce_build() from the parsed fields, up to the bits the
 * spec reserves (BTH byte 8 bits 6:0, the DETH reserved byte, FETH bits 31:6), the pad
 * bytes and the ICRC, and its ICRC must compute without fault. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "roce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void normalise_reserved(uint8_t *p, const struct roce_pkt *pkt)
{
	uint8_t *ext = p + ROCE_BTH_LEN;

	p[8] &= 0x80;
	if (pkt->mask & ROCE_M_DETH) {
		ext[4] = 0;
		ext += ROCE_DETH_LEN;
	}
	if (pkt->mask & ROCE_M_FETH) {
		ext[0] = ext[1] = ext[2] = 0;
		ext[3] &= 0x3F;
	}
	memset(p + pkt->hdr_len + pkt->payload_len, 0, pkt->h.bth.padcnt + ROCE_ICRC_LEN);
}

static void check_rebuild(const struct roce_pkt *pkt)
{
	uint8_t *orig = malloc(pkt->len), *again = malloc(pkt->len);
	long n;

	if (!orig || !again)
		abort();
	memcpy(orig, pkt->buf, pkt->len);
	normalise_reserved(orig, pkt);
	n = roce_build(again, pkt->len, &pkt->h, pkt->payload, pkt->payload_len);
	if (n != (long)pkt->len || memcmp(orig, again, pkt->len))
		__builtin_trap();
	free(orig);
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned pmtus[] = { 256, 512, 1024, 2048, 4096 };
	struct roce_flow4 f4 = { 0x0100000A, 0x0200000A, 49152, ROCE_UDP_PORT };
	struct roce_flow6 f6 = { .sport = 49152, .dport = ROCE_UDP_PORT };
	struct roce_pkt pkt;

	if (size < 1)
		return 0;
	if (roce_parse(data + 1, size - 1, pmtus[data[0] % 5], &pkt) != ROCE_R_OK)
		return 0;
	if (pkt.hdr_len + pkt.payload_len + pkt.h.bth.padcnt + ROCE_ICRC_LEN != pkt.len)
		__builtin_trap();
	check_rebuild(&pkt);
	(void)roce_icrc4_ok(&f4, pkt.buf, pkt.len);
	(void)roce_icrc6_ok(&f6, pkt.buf, pkt.len);
	return 0;
}
