/* SPDX-License-Identifier: MIT */
/* roce_parse(): validate a received RoCEv2 packet, one rule per step, in the order a
 * receiver must apply them (IBA 9.6 "packet header validation"). */
#include "packet.h"

#include "aeth.h"

#define ROCE_MAX_UDP_PAYLOAD 65527u /* 65535 - 8-byte UDP header */

/* BTH rules that hold for every opcode: TVer, a defined opcode, a valid QP. */
static enum roce_reason check_bth(const struct roce_bth *bth)
{
	if (bth->tver != ROCE_TVER)
		return ROCE_R_BAD_TVER; /* IBA C9-6: version mismatch → drop */
	if (!roce_opcode_info(bth->opcode))
		return ROCE_R_UNKNOWN_OPCODE;
	if (bth->dqpn == 0)
		return ROCE_R_BAD_QPN; /* QP0 (SMI) does not exist on RoCE */
	return ROCE_R_OK;
}

/* Split the bytes after the headers into payload and pad. */
static enum roce_reason locate_payload(struct roce_pkt *pkt)
{
	uint32_t padded;

	if (pkt->len < (uint32_t)pkt->hdr_len + ROCE_ICRC_LEN)
		return ROCE_R_TRUNCATED;
	padded = pkt->len - pkt->hdr_len - ROCE_ICRC_LEN;
	if (padded % 4)
		return ROCE_R_MISALIGNED_LENGTH; /* IBA 9.2: packets are whole 4-byte words */
	if (pkt->h.bth.padcnt > padded)
		return ROCE_R_BAD_PAD;
	pkt->payload = pkt->buf + pkt->hdr_len;
	pkt->payload_len = padded - pkt->h.bth.padcnt;
	return ROCE_R_OK;
}

/* IBA C9-95..C9-97 (as rxe's check_length): FIRST and MIDDLE carry exactly one path
 * MTU, LAST 1..PMTU bytes, ONLY 0..PMTU; opcodes without payload carry none. */
static enum roce_reason check_payload_len(const struct roce_pkt *pkt, unsigned pmtu)
{
	uint32_t n = pkt->payload_len, m = pkt->mask;

	if (!(m & ROCE_M_PAYLOAD))
		return n ? ROCE_R_UNEXPECTED_PAYLOAD : ROCE_R_OK;
	if (m & ROCE_M_PAYLOAD8)
		return n == 8 ? ROCE_R_OK : ROCE_R_ATOMIC_WRITE_LENGTH;
	if ((m & ROCE_M_MIDDLE) || (m & ROCE_M_ONLY) == ROCE_M_FIRST)
		return n == pmtu ? ROCE_R_OK : ROCE_R_PAYLOAD_NOT_PMTU;
	if ((m & ROCE_M_ONLY) == ROCE_M_LAST && n == 0)
		return ROCE_R_EMPTY_LAST;
	return n <= pmtu ? ROCE_R_OK : ROCE_R_PAYLOAD_OVER_PMTU;
}

/* Decode the extension headers the opcode carries, in their fixed wire order. */
static void decode_ext(const uint8_t *p, uint32_t mask, struct roce_hdr *h)
{
	p += ROCE_BTH_LEN;
	if (mask & ROCE_M_DETH) { roce_deth_decode(p, &h->deth); p += ROCE_DETH_LEN; }
	if (mask & ROCE_M_FETH) { roce_feth_decode(p, &h->feth); p += ROCE_FETH_LEN; }
	if (mask & ROCE_M_RETH) { roce_reth_decode(p, &h->reth); p += ROCE_RETH_LEN; }
	if (mask & ROCE_M_ATMETH) { roce_atmeth_decode(p, &h->atmeth); p += ROCE_ATMETH_LEN; }
	if (mask & ROCE_M_AETH) { roce_aeth_decode(p, &h->aeth); p += ROCE_AETH_LEN; }
	if (mask & ROCE_M_ATMACK) { h->atmack = roce_get64(p); p += ROCE_ATMACK_LEN; }
	if (mask & ROCE_M_IMMDT) { h->imm = roce_get32(p); p += ROCE_IMMDT_LEN; }
	if (mask & ROCE_M_IETH) h->ieth_rkey = roce_get32(p);
}

/* RETH rules: IBA 9.4.3 length ≤ 2^31; a write's RETH length covers the message, so an
 * ONLY packet carries all of it and a FIRST packet (exactly one PMTU) less than all. */
static enum roce_reason check_reth(const struct roce_pkt *pkt, unsigned pmtu)
{
	uint32_t dmalen = pkt->h.reth.len, m = pkt->mask;

	if (dmalen > ROCE_RETH_MAX_LEN)
		return ROCE_R_RETH_TOO_LONG;
	if (pkt->cls == ROCE_CLASS_ATOMIC_WRITE)
		return dmalen == 8 ? ROCE_R_OK : ROCE_R_ATOMIC_WRITE_LENGTH;
	if (pkt->cls != ROCE_CLASS_WRITE)
		return ROCE_R_OK;
	if ((m & ROCE_M_ONLY) == ROCE_M_ONLY && dmalen != pkt->payload_len)
		return ROCE_R_RETH_LENGTH_MISMATCH;
	if ((m & ROCE_M_ONLY) == ROCE_M_FIRST && dmalen <= pmtu)
		return ROCE_R_RETH_LENGTH_MISMATCH;
	return ROCE_R_OK;
}

/* Rules on the extension headers' values. */
static enum roce_reason check_ext(const struct roce_pkt *pkt, unsigned pmtu)
{
	const struct roce_hdr *h = &pkt->h;
	enum roce_reason r;

	if (pkt->mask & ROCE_M_RETH) {
		r = check_reth(pkt, pmtu);
		if (r != ROCE_R_OK)
			return r;
		if (pkt->cls == ROCE_CLASS_ATOMIC_WRITE && (h->reth.va & 7))
			return ROCE_R_ATOMIC_MISALIGNED;
	}
	if ((pkt->mask & ROCE_M_ATMETH) && (h->atmeth.va & 7))
		return ROCE_R_ATOMIC_MISALIGNED; /* IBA C9-29: atomics are 8-byte aligned */
	/* Reserved FETH values only; a placement type the MR lacks is the responder's
	 * access check (as in rxe), not a malformed packet. */
	if ((pkt->mask & ROCE_M_FETH)
	    && (h->feth.sel > ROCE_FETH_SEL_MAX || (h->feth.plt & ~ROCE_FETH_PLT_MASK)))
		return ROCE_R_BAD_FETH;
	if ((pkt->mask & ROCE_M_AETH) && !roce_syndrome_valid(h->aeth.syndrome))
		return ROCE_R_BAD_AETH;
	return ROCE_R_OK;
}

enum roce_reason roce_parse(const uint8_t *buf, size_t len, unsigned pmtu,
			    struct roce_pkt *pkt)
{
	const struct roce_opcode_info *info;
	enum roce_reason r;

	if (pmtu < 256 || pmtu > 4096 || (pmtu & (pmtu - 1)))
		return ROCE_R_BAD_PMTU; /* an IB MTU: a power of two in 256..4096 */
	if (len < ROCE_BTH_LEN + ROCE_ICRC_LEN)
		return ROCE_R_TOO_SHORT;
	if (len > ROCE_MAX_UDP_PAYLOAD)
		return ROCE_R_TOO_LONG;
	roce_bth_decode(buf, &pkt->h.bth);
	r = check_bth(&pkt->h.bth);
	if (r != ROCE_R_OK)
		return r;
	info = roce_opcode_info(pkt->h.bth.opcode);
	pkt->buf = buf;
	pkt->len = (uint32_t)len;
	pkt->mask = info->mask;
	pkt->cls = info->cls;
	pkt->hdr_len = info->hdr_len;
	r = locate_payload(pkt);
	if (r == ROCE_R_OK)
		r = check_payload_len(pkt, pmtu);
	if (r != ROCE_R_OK)
		return r;
	decode_ext(buf, pkt->mask, &pkt->h);
	return check_ext(pkt, pmtu);
}
