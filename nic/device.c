/* SPDX-License-Identifier: MIT */
/* The device: creation, the receive dispatch, timers, the run queue of QPs with work, and
 * the fault queue between the IO page tables and the owner's fault handler. */
#include "nic_int.h"

int nic_create(const struct nic_config *cfg, struct nic **out)
{
	struct nic *nic;
	int rc;

	if (!cfg || !out || !cfg->ports.send || !cfg->ports.mem_read || !cfg->ports.mem_write ||
	    !cfg->ports.fault || !cfg->ports.event)
		return -EINVAL;
	if (cfg->active_mtu && (cfg->active_mtu < ODPEMU_MTU_256 || cfg->active_mtu > ODPEMU_MTU_4096))
		return -EINVAL;
	nic = calloc(1, sizeof(*nic));
	if (!nic)
		return -ENOMEM;
	nic->cfg = *cfg;
	roce_icrc_ids_init(&nic->icrc_ids);
	if (!nic->cfg.active_mtu)
		nic->cfg.active_mtu = ODPEMU_MTU_4096;
	if (!nic->cfg.stall_queue)	/* hold a whole window behind a fault (no go-back-N) */
		nic->cfg.stall_queue = 256;
	if (!nic->cfg.max_inflight)
		nic->cfg.max_inflight = 256;
	if (cfg->attr.max_qp)
		nic->attr = cfg->attr;
	else
		nic_device_attr_default(&nic->attr);
	nic->mr_slot = calloc(NIC_MR_SLOTS, sizeof(*nic->mr_slot));
	nic->mr_variant = calloc(NIC_MR_SLOTS, 1);
	rc = (nic->mr_slot && nic->mr_variant) ? iopt_fq_create(NULL, &nic->fq) : -ENOMEM;
	if (rc) {
		free(nic->mr_slot);
		free(nic->mr_variant);
		free(nic);
		return rc;
	}
	nic->next_qpn = NIC_QPN_FIRST;
	nic->mr_next_slot = 1;
	nic_list_init(&nic->qps);
	nic_list_init(&nic->mrs);
	nic_list_init(&nic->zombies);
	nic_list_init(&nic->run);
	*out = nic;
	return 0;
}

int nic_destroy(struct nic *nic)
{
	if (!nic)
		return 0;
	nic_mr_reap(nic);
	if (nic->ctr.pds || nic->ctr.mrs || nic->ctr.cqs || nic->ctr.srqs || nic->ctr.qps ||
	    !nic_list_empty(&nic->zombies))
		return -EBUSY;
	if (iopt_fq_destroy(nic->fq))
		return -EBUSY;
	free(nic->mr_slot);
	free(nic->mr_variant);
	free(nic);
	return 0;
}

const struct nic_device_attr *nic_attr(const struct nic *nic) { return &nic->attr; }
const struct nic_gid *nic_gid(const struct nic *nic) { return &nic->cfg.gid; }

void nic_counters(const struct nic *nic, struct nic_counters *out)
{
	*out = nic->ctr;
}

void nic_event(struct nic *nic, enum odpemu_event_type type, struct nic_qp *qp,
	       struct nic_cq *cq, struct nic_srq *srq, struct nic_mr *mr)
{
	struct nic_event ev = { type, qp, cq, srq, mr };

	nic->cfg.ports.event(nic->cfg.ports.ctx, &ev);
}

/* ---- QP table ---- */

struct nic_qp *nic_qp_lookup(struct nic *nic, uint32_t qpn)
{
	struct nic_qp *qp = nic->qp_hash[qpn % NIC_QP_HASH];

	while (qp && qp->qpn != qpn)
		qp = qp->hash_next;
	return qp;
}

void nic_qp_hash_add(struct nic *nic, struct nic_qp *qp)
{
	struct nic_qp **head = &nic->qp_hash[qp->qpn % NIC_QP_HASH];

	qp->hash_next = *head;
	*head = qp;
}

void nic_qp_hash_del(struct nic *nic, struct nic_qp *qp)
{
	struct nic_qp **pp = &nic->qp_hash[qp->qpn % NIC_QP_HASH];

	while (*pp && *pp != qp)
		pp = &(*pp)->hash_next;
	if (*pp)
		*pp = qp->hash_next;
}

/* ---- run queue: QPs whose engines have work ---- */

void nic_qp_schedule(struct nic_qp *qp)
{
	if (!qp->runnable) {
		qp->runnable = true;
		nic_list_add_tail(&qp->nic->run, &qp->run_link);
	}
}

/* Run each scheduled QP's engines until none has work. Re-entrant calls (a port callback
 * that posts) only schedule; the outermost call drains. */
void nic_run(struct nic *nic)
{
	if (nic->depth++)
		goto out;
	for (unsigned rounds = 0; !nic_list_empty(&nic->run) && rounds < 1000000; rounds++) {
		struct nic_qp *qp = nic_container_of(nic->run.next, struct nic_qp, run_link);

		nic_list_del(&qp->run_link);
		qp->runnable = false;
		nic_resp_run(qp);
		nic_req_run(qp);
		nic_comp_retire(qp);
	}
	nic_pump_faults(nic);
out:
	nic->depth--;
}

/* ---- faults ---- */

/* Hand every queued page request to the owner's fault handler. */
void nic_pump_faults(struct nic *nic)
{
	struct iopt_req *r[16];
	unsigned n;

	while ((n = iopt_fq_pop(nic->fq, r, 16)) > 0)
		for (unsigned i = 0; i < n; i++) {
			struct nic_mr *mr = iopt_owner(r[i]->dom);

			nic->ctr.faults_raised++;
			nic->cfg.ports.fault(nic->cfg.ports.ctx, mr->client, r[i]);
		}
}

int nic_fault_complete(struct nic *nic, struct iopt_req *req, const struct iopt_map *maps,
		       unsigned n, uint64_t now)
{
	int rc;

	nic->now = now;
	rc = iopt_req_complete(req, maps, n, now);
	if (rc == -EAGAIN) {
		iopt_req_requeue(req);	/* raced an invalidation: the handler resolves again */
		rc = 0;
	} else if (rc) {
		nic->ctr.faults_failed++;
		iopt_req_fail(req, rc, now);
	}
	nic_mr_reap(nic);
	nic_run(nic);
	return rc;
}

void nic_batch_begin(struct nic *nic)
{
	nic->depth++;	/* nic_run only schedules until the matching end */
}

void nic_batch_end(struct nic *nic, uint64_t now)
{
	nic->now = now;
	nic->depth--;
	nic_run(nic);
}

int nic_fault_fail(struct nic *nic, struct iopt_req *req, int err, uint64_t now)
{
	if (err >= 0)
		return -EINVAL;
	nic->now = now;
	nic->ctr.faults_failed++;
	iopt_req_fail(req, err, now);
	nic_mr_reap(nic);
	nic_run(nic);
	return 0;
}

/* ---- receive ---- */

static void drop(struct nic *nic, struct nic_qp *qp, enum nic_drop_reason why)
{
	nic->ctr.drops[why]++;
	if (qp)
		qp->ctr.drops[why]++;
}

static bool state_receives(const struct nic_qp *qp)
{
	return qp->state == ODPEMU_QPS_RTR || qp->state == ODPEMU_QPS_RTS ||
	       qp->state == ODPEMU_QPS_SQD || qp->state == ODPEMU_QPS_SQE;
}

void nic_rx(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src,
	    uint64_t now)
{
	nic_rx_from(nic, pkt, len, src, ROCE_UDP_PORT, now);
}

void nic_rx_from(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src,
		 uint16_t sport, uint64_t now)
{
	int32_t dqpn = roce_peek_dqpn(pkt, len);
	struct nic_qp *qp;
	struct roce_pkt p;

	nic->now = now;
	nic->ctr.pkts_received++;
	if (dqpn < 0)
		return drop(nic, NULL, NIC_DROP_PARSE);
	if (!nic_icrc_ok_from(nic, src, sport, pkt, len))
		return drop(nic, NULL, NIC_DROP_ICRC);
	if (dqpn == ROCE_GSI_QPN)
		return nic_gsi_rx(nic, pkt, len, src);
	qp = nic_qp_lookup(nic, (uint32_t)dqpn);
	if (!qp)
		return drop(nic, NULL, NIC_DROP_NO_QP);
	if (roce_parse(pkt, len, qp->pmtu, &p) != ROCE_R_OK)
		return drop(nic, qp, NIC_DROP_PARSE);
	if (!state_receives(qp))
		return drop(nic, qp, NIC_DROP_QP_STATE);
	if (p.h.bth.pkey != ROCE_DEFAULT_PKEY)
		return drop(nic, qp, NIC_DROP_BAD_PKEY);
	qp->ctr.pkts_received++;
	qp->ctr.bytes_received += len;
	if (qp->type == ODPEMU_QPT_UD) {
		if (roce_opcode_transport(p.h.bth.opcode) != ROCE_UD)
			return drop(nic, qp, NIC_DROP_BAD_QP_TYPE);
		nic_ud_rx(qp, &p, src);
	} else if (roce_opcode_transport(p.h.bth.opcode) != ROCE_RC) {
		return drop(nic, qp, NIC_DROP_BAD_QP_TYPE);
	} else if (memcmp(src, &qp->attr.ah_attr.dgid, sizeof(*src))) {
		return drop(nic, qp, NIC_DROP_SRC_MISMATCH);
	} else if (p.mask & ROCE_M_RESP) {
		nic_comp_rx(qp, &p);
	} else {
		nic_resp_rx(qp, &p, src);
	}
	nic_run(nic);
}

/* ---- timers ---- */

void nic_tick(struct nic *nic, uint64_t now)
{
	nic->now = now;
	for (struct nic_list *l = nic->qps.next; l != &nic->qps; l = l->next)
		nic_comp_tick(nic_container_of(l, struct nic_qp, link), now);
	nic_run(nic);
}

uint64_t nic_next_deadline(const struct nic *nic)
{
	uint64_t t = UINT64_MAX;

	for (const struct nic_list *l = nic->qps.next; l != &nic->qps; l = l->next) {
		const struct nic_qp *qp = nic_container_of(l, struct nic_qp, link);

		if (qp->comp.ack_deadline < t)
			t = qp->comp.ack_deadline;
		if (qp->comp.rnr_deadline < t)
			t = qp->comp.rnr_deadline;
	}
	return t;
}

const char *nic_drop_reason_str(enum nic_drop_reason r)
{
	static const char *const names[] = {
#define NIC_DROP_NAME_(n) #n,
		NIC_DROP_REASONS(NIC_DROP_NAME_)
#undef NIC_DROP_NAME_
	};

	return (unsigned)r < NIC_DROP__COUNT ? names[r] : "UNKNOWN";
}

const char *nic_vendor_err_str(unsigned v)
{
	static const char *const names[] = {
#define NIC_VERR_NAME_(n) #n,
		NIC_VENDOR_ERRS(NIC_VERR_NAME_)
#undef NIC_VERR_NAME_
	};

	return v < sizeof(names) / sizeof(names[0]) ? names[v] : "UNKNOWN";
}
