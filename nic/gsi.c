/* SPDX-License-Identifier: MIT */
/*
 * QP1, the General Services Interface (IBA 13.5): management datagrams (MADs) to and from
 * the host's agents — on RoCE, the connection manager's. nic/ carries them as a NIC does
 * and leaves their meaning to the host (ports.gsi_rx): a UD SEND_ONLY of one 256-byte MAD,
 * destination QP 1, source QP 1 in the DETH, the GSI Q_Key 0x80010000 (IBA 13.5.1 Table
 * 158 "QP1 Q_Key"), the default P_Key (RoCE has one partition). QP1 has no WQEs here: the
 * host agent takes each MAD as it arrives, and what it cannot take it drops, as a MAD
 * layer's receive queue would when full (MADs are retried by their senders).
 */
#include "nic_int.h"

/* IBA 13.5.1: a GSI datagram is one MAD; rdma_cm's are all 256 bytes (IBA 13.4.2). */
void nic_gsi_rx(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src)
{
	struct nic_gsi_dgram d;
	struct roce_pkt p;

	if (!nic->cfg.ports.gsi_rx)
		return nic_drop(nic, NULL, NIC_DROP_NO_QP);
	if (roce_parse(pkt, len, 4096, &p) != ROCE_R_OK)	/* any MTU carries a MAD */
		return nic_drop(nic, NULL, NIC_DROP_PARSE);
	if (p.h.bth.opcode != ROCE_OP_UD_SEND_ONLY)
		return nic_drop(nic, NULL, NIC_DROP_BAD_QP_TYPE);
	if (p.h.bth.pkey != ROCE_DEFAULT_PKEY)
		return nic_drop(nic, NULL, NIC_DROP_BAD_PKEY);
	if (p.h.deth.qkey != NIC_GSI_QKEY)
		return nic_drop(nic, NULL, NIC_DROP_BAD_QKEY);
	if (p.payload_len != NIC_GSI_MAD_LEN)
		return nic_drop(nic, NULL, NIC_DROP_PARSE);
	d = (struct nic_gsi_dgram){ .src = *src, .src_qp = p.h.deth.sqpn, .mad = p.payload };
	nic->ctr.gsi_received++;
	nic->cfg.ports.gsi_rx(nic->cfg.ports.ctx, &d);
}

int nic_gsi_send(struct nic *nic, const struct nic_gid *dst, const uint8_t *mad)
{
	struct roce_hdr h = { 0 };
	int rc;

	h.bth = (struct roce_bth){ .opcode = ROCE_OP_UD_SEND_ONLY, .pkey = ROCE_DEFAULT_PKEY,
		.dqpn = ROCE_GSI_QPN, .psn = nic->gsi_psn };
	h.deth = (struct roce_deth){ .qkey = NIC_GSI_QKEY, .sqpn = ROCE_GSI_QPN };
	rc = nic_xmit_raw(nic, dst, &h, mad, NIC_GSI_MAD_LEN);
	if (rc)
		return rc;
	nic->gsi_psn = roce_psn_next(nic->gsi_psn);
	nic->ctr.gsi_sent++;
	return 0;
}
