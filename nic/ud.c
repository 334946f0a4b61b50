/* SPDX-License-Identifier: MIT */
/*
 * UD receive (IBA 9.8, 11.4.1.2): Q_Key check, then the 40-byte GRH followed by the data
 * into the next receive WQE. UD is unreliable, so anything that cannot land now (no WQE,
 * a page fault in the receive buffer) drops the datagram and counts it; a fault still goes
 * to the handler so the next datagram finds the page (ConnectX drops UD on a fault too).
 */
#include "nic_int.h"

/* The GRH as RoCEv2 presents it (IBA A17.4.5.1): for IPv4, 20 zero bytes then the IPv4
 * header; for IPv6, the IPv6 header. */
static void make_grh(uint8_t grh[NIC_GRH_LEN], const struct nic_gid *src,
		     const struct nic_gid *dst, uint32_t udp_payload)
{
	memset(grh, 0, NIC_GRH_LEN);
	if (nic_gid_is_v4(src)) {
		uint8_t *ip = grh + 20;

		ip[0] = 0x45;
		roce_put16(ip + 2, (uint16_t)(20 + 8 + udp_payload));
		ip[6] = 0x40;	/* DF */
		ip[8] = 64;
		ip[9] = 17;
		memcpy(ip + 12, src->raw + 12, 4);
		memcpy(ip + 16, dst->raw + 12, 4);
	} else {
		roce_put32(grh, 6u << 28);
		roce_put16(grh + 4, (uint16_t)(8 + udp_payload));
		grh[6] = 17;
		grh[7] = 64;
		memcpy(grh + 8, src->raw, 16);
		memcpy(grh + 24, dst->raw, 16);
	}
}

void nic_ud_rx(struct nic_qp *qp, const struct roce_pkt *pkt, const struct nic_gid *src,
	       const struct nic_gid *dst)
{
	struct nic_rq *rq = qp->srq ? &qp->srq->rq : &qp->rq;
	struct nic_rwqe head;
	const struct nic_rwqe *w = nic_rq_peek(rq, &head) ? &head : NULL;
	struct nic_dma_ctx c = nic_dma_ctx(qp, NULL);	/* a miss drops: fire and forget */
	uint8_t buf[NIC_GRH_LEN + NIC_PKT_MAX];
	uint32_t len = NIC_GRH_LEN + pkt->payload_len;
	struct nic_rwqe taken;
	enum nic_dma_result res;
	struct nic_wc wc;

	if (!(pkt->mask & ROCE_M_DETH) || pkt->h.deth.qkey != qp->attr.qkey)
		return nic_drop(qp->nic, qp, NIC_DROP_BAD_QKEY);
	if (!w)
		return nic_drop(qp->nic, qp, NIC_DROP_UD_NO_WQE);
	make_grh(buf, src, dst, pkt->len);
	memcpy(buf + NIC_GRH_LEN, pkt->payload, pkt->payload_len);
	wc = (struct nic_wc){ .wr_id = w->wr_id, .opcode = ODPEMU_WC_RECV, .byte_len = len,
		.qp_num = qp->qpn, .src_qp = pkt->h.deth.sqpn, .wc_flags = NIC_WC_GRH };
	if (pkt->mask & ROCE_M_IMMDT) {
		wc.wc_flags |= NIC_WC_WITH_IMM;
		wc.imm_data = pkt->h.imm;
	}
	if (len > nic_sge_total(w->sge, w->num_sge)) {
		wc.status = ODPEMU_WC_LOC_LEN_ERR;	/* rxe: the WQE completes in error */
		wc.vendor_err = NIC_VERR_RECV_TOO_SMALL;
		wc.byte_len = 0;
	} else {
		res = nic_dma_sge(&c, w->sge, w->num_sge, 0, buf, len, true);
		if (res == NIC_DMA_FAULT) {
			qp->ctr.faults_resp++;
			return nic_drop(qp->nic, qp, NIC_DROP_RNR);
		}
		if (res != NIC_DMA_OK) {
			wc.status = ODPEMU_WC_LOC_PROT_ERR;
			wc.vendor_err = NIC_VERR_LOCAL_FAULT;
		}
	}
	nic_rq_take(rq, &taken);
	if (qp->srq)
		nic_srq_check_limit(qp->srq);
	nic_recv_complete(qp, &wc, pkt->h.bth.se);
}
