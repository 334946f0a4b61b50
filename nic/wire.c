/* SPDX-License-Identifier: MIT */
/*
 * The wire: build a packet (in the port's transmit slot when it lends one), seal its ICRC,
 * hand it to the port (send_slot, or send for a packet built in our scratch); verify
 * received ICRCs.
 * The ICRC covers the IP and UDP headers (REFERENCE.md "ICRC"), so nic/ computes it from
 * both GIDs and both UDP ports: the source port is the device's configured one, 4791 when
 * unset (the daemon sends from its bound 4791 socket); nic_rx() assumes a peer that does
 * the same, nic_rx_from() takes the port the socket saw.
 */
#include "nic_int.h"

static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool nic_gid_is_v4(const struct nic_gid *g)
{
	return memcmp(g->raw, v4_prefix, sizeof(v4_prefix)) == 0;
}

struct nic_gid nic_gid_from_v4(uint32_t addr)
{
	struct nic_gid g;

	memcpy(g.raw, v4_prefix, sizeof(v4_prefix));
	roce_put32(g.raw + 12, addr);
	return g;
}

static uint16_t sport_of(const struct nic *nic)
{
	return nic->cfg.udp_sport ? nic->cfg.udp_sport : ROCE_UDP_PORT;
}

/* The UDP destination port the ICRC covers: where the device listens and its peers send
 * (4791 on real networks; a test setup may move both ends to another port). */
static uint16_t dport_of(const struct nic *nic)
{
	return nic->cfg.udp_dport ? nic->cfg.udp_dport : ROCE_UDP_PORT;
}

static void flow4_of(struct roce_flow4 *f, const struct nic_gid *src, uint16_t sport,
		     const struct nic_gid *dst, uint16_t dport)
{
	*f = (struct roce_flow4){ .sport = sport, .dport = dport };
	memcpy(&f->saddr, src->raw + 12, 4);
	memcpy(&f->daddr, dst->raw + 12, 4);
}

static void flow6_of(struct roce_flow6 *f, const struct nic_gid *src, uint16_t sport,
		     const struct nic_gid *dst, uint16_t dport)
{
	*f = (struct roce_flow6){ .sport = sport, .dport = dport };
	memcpy(f->saddr, src->raw, 16);
	memcpy(f->daddr, dst->raw, 16);
}

/* Seal as sent on its own: IPv4 Identification 0 (a segmentation offload below re-seals
 * the segments it numbers, icrc.h). */
static void seal(const struct nic_gid *src, uint16_t sport, const struct nic_gid *dst,
		 uint16_t dport, uint8_t *pkt, size_t len)
{
	struct roce_flow4 f4;
	struct roce_flow6 f6;

	if (nic_gid_is_v4(src) && nic_gid_is_v4(dst)) {
		flow4_of(&f4, src, sport, dst, dport);
		roce_icrc4_seal(&f4, pkt, len);
	} else {
		flow6_of(&f6, src, sport, dst, dport);
		roce_icrc6_seal(&f6, pkt, len);
	}
}

/* IPv4: any Identification a segmentation offload numbers (0 .. ROCE_ICRC_MAX_ID-1), since
 * a UDP socket never sees it; IPv6 has none. */
bool nic_icrc_ok_from(struct nic *nic, const struct nic_gid *src, uint16_t sport,
		      const struct nic_gid *dst, const uint8_t *pkt, size_t len)
{
	struct roce_flow4 f4;
	struct roce_flow6 f6;
	uint16_t id;

	if (nic_gid_is_v4(src) && nic_gid_is_v4(dst)) {
		flow4_of(&f4, src, sport, dst, dport_of(nic));
		return roce_icrc4_ok_any_id(&nic->icrc_ids, &f4, pkt, len, &id);
	}
	flow6_of(&f6, src, sport, dst, dport_of(nic));
	return roce_icrc6_ok(&f6, pkt, len);
}

/* Where the next packet is built: the slot the port lends (nic.h, tx_slot), else our
 * scratch. The port's answer holds until we send, so the payload's place
 * (nic_tx_payload) and the headers' (build_and_send) are in the same buffer. */
static uint8_t *tx_buf(struct nic *nic, bool *in_slot)
{
	const struct nic_ports *p = &nic->cfg.ports;
	uint8_t *slot = p->tx_slot && p->send_slot ? p->tx_slot(p->ctx) : NULL;

	*in_slot = slot != NULL;
	return slot ? slot : nic->pkt;
}

/* Headers around the payload (copied from payload, or already in place when NULL), seal,
 * send: a packet built in the port's slot goes back to it by send_slot, with no copy; one
 * built in our scratch by send, which copies. Copies per payload byte on the way out:
 * host memory -> packet (the gather, into the slot), packet -> kernel (the port's). */
static long build_and_send(struct nic *nic, const struct nic_gid *dst, const struct roce_hdr *h,
			   const void *payload, uint32_t len)
{
	bool in_slot;
	uint8_t *pkt = tx_buf(nic, &in_slot);
	long n = roce_build(pkt, NIC_PKT_MAX, h, payload, len);

	if (n < 0)
		return n;	/* a lent slot stays lent: the next packet is built over it */
	seal(&nic->cfg.gid, sport_of(nic), dst, dport_of(nic), pkt, (size_t)n);
	nic->ctr.pkts_sent++;
	if (nic_gid_is_mcast(dst))
		nic->ctr.mcast_pkts_sent++;
	if (in_slot)
		nic->cfg.ports.send_slot(nic->cfg.ports.ctx, dst, (size_t)n);
	else
		nic->cfg.ports.send(nic->cfg.ports.ctx, dst, pkt, (size_t)n);
	return n;
}

static int qp_send(struct nic_qp *qp, const struct nic_gid *dst, const struct roce_hdr *h,
		   const void *payload, uint32_t len)
{
	long n = build_and_send(qp->nic, dst, h, payload, len);

	if (n < 0)
		return (int)n;
	qp->ctr.pkts_sent++;
	qp->ctr.bytes_sent += (uint64_t)n;
	return 0;
}

int nic_xmit_raw(struct nic *nic, const struct nic_gid *dst, const struct roce_hdr *h,
		 const void *payload, uint32_t len)
{
	long n = payload || !len ? build_and_send(nic, dst, h, payload, len) : -EINVAL;

	return n < 0 ? (int)n : 0;
}

int nic_xmit(struct nic_qp *qp, const struct nic_gid *dst, const struct roce_hdr *h,
	     const void *payload, uint32_t len)
{
	/* A NULL payload of len > 0 would mean "in place": not what a copying caller means. */
	if (!payload && len)
		return -EINVAL;
	return qp_send(qp, dst, h, payload, len);
}

uint8_t *nic_tx_payload(struct nic *nic, const struct roce_hdr *h)
{
	bool in_slot;

	return tx_buf(nic, &in_slot) + roce_hdrs_len(roce_opcode_table[h->bth.opcode].mask);
}

int nic_xmit_in_place(struct nic_qp *qp, const struct nic_gid *dst, const struct roce_hdr *h,
		      uint32_t len)
{
	return qp_send(qp, dst, h, NULL, len);
}
