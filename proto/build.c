/* SPDX-License-Identifier: MIT */
/* roce_build_headers() / roce_build(): write a packet for the wire. */
#include <errno.h>
#include <string.h>

#include "packet.h"

/* Encode the extension headers the opcode carries, in their fixed wire order. */
static void encode_ext(uint8_t *p, uint32_t mask, const struct roce_hdr *h)
{
	p += ROCE_BTH_LEN;
	if (mask & ROCE_M_DETH) { roce_deth_encode(p, &h->deth); p += ROCE_DETH_LEN; }
	if (mask & ROCE_M_FETH) { roce_feth_encode(p, &h->feth); p += ROCE_FETH_LEN; }
	if (mask & ROCE_M_RETH) { roce_reth_encode(p, &h->reth); p += ROCE_RETH_LEN; }
	if (mask & ROCE_M_ATMETH) { roce_atmeth_encode(p, &h->atmeth); p += ROCE_ATMETH_LEN; }
	if (mask & ROCE_M_AETH) { roce_aeth_encode(p, &h->aeth); p += ROCE_AETH_LEN; }
	if (mask & ROCE_M_ATMACK) { roce_put64(p, h->atmack); p += ROCE_ATMACK_LEN; }
	if (mask & ROCE_M_IMMDT) { roce_put32(p, h->imm); p += ROCE_IMMDT_LEN; }
	if (mask & ROCE_M_IETH) roce_put32(p, h->ieth_rkey);
}

int roce_build_headers(uint8_t *buf, size_t cap, const struct roce_hdr *h,
		       uint32_t payload_len)
{
	const struct roce_opcode_info *info = roce_opcode_info(h->bth.opcode);
	struct roce_bth bth;

	if (!info)
		return -EINVAL;
	if (payload_len && !(info->mask & ROCE_M_PAYLOAD))
		return -EINVAL;
	if ((info->mask & ROCE_M_PAYLOAD8) && payload_len != 8)
		return -EINVAL;
	if (cap < roce_packet_len(h->bth.opcode, payload_len))
		return -ENOSPC;
	bth = h->bth;
	bth.padcnt = (uint8_t)roce_pad(payload_len);
	roce_bth_encode(buf, &bth);
	encode_ext(buf, info->mask, h);
	return info->hdr_len;
}

long roce_build(uint8_t *buf, size_t cap, const struct roce_hdr *h,
		const void *payload, uint32_t payload_len)
{
	int hdr_len = roce_build_headers(buf, cap, h, payload_len);
	uint8_t *tail;

	if (hdr_len < 0)
		return hdr_len;
	if (payload)
		memmove(buf + hdr_len, payload, payload_len);
	tail = buf + hdr_len + payload_len;
	/* Pad bytes and the ICRC slot are zero until the packet is sealed. */
	memset(tail, 0, roce_pad(payload_len) + ROCE_ICRC_LEN);
	return (long)roce_packet_len(h->bth.opcode, payload_len);
}
