/* SPDX-License-Identifier: MIT */
/* The device: creation, the receive dispatch, timers, the run queue of QPs with work, and
 * the fault queue between the IO page tables and the owner's fault handler. */
#include "nic_int.h"

static void free_tables(struct nic *nic)
{
	free(nic->qp_hash);
	free(nic->timers);
	free(nic->due);
	free(nic->mr_slot);
	free(nic->mr_variant);
	free(nic->mr_free);
	nic_mcast_free(nic);
}

int nic_set_active_mtu(struct nic *nic, enum odpemu_mtu mtu)
{
	if (mtu < ODPEMU_MTU_256 || mtu > ODPEMU_MTU_4096)
		return -EINVAL;
	nic->cfg.active_mtu = mtu;
	return 0;
}

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
	nic->qp_hash_size = NIC_QP_HASH_MIN;
	nic->qp_hash = calloc(nic->qp_hash_size, sizeof(*nic->qp_hash));
	rc = nic->qp_hash && !nic_mr_slots_grow(nic) ? iopt_fq_create(NULL, &nic->fq) : -ENOMEM;
	if (rc) {
		free_tables(nic);
		free(nic);
		return rc;
	}
	nic->next_qpn = NIC_QPN_FIRST;
	nic_list_init(&nic->qps);
	nic_list_init(&nic->mrs);
	nic_list_init(&nic->mws);
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
	    nic->ctr.mws ||
	    !nic_list_empty(&nic->zombies))
		return -EBUSY;
	if (iopt_fq_destroy(nic->fq))
		return -EBUSY;
	free_tables(nic);
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

/* ---- QP table: chained hash on the QP number, grown to keep one QP per bucket ---- */

struct nic_qp *nic_qp_lookup(struct nic *nic, uint32_t qpn)
{
	struct nic_qp *qp = nic->qp_hash[qpn & (nic->qp_hash_size - 1)];

	while (qp && qp->qpn != qpn)
		qp = qp->hash_next;
	return qp;
}

void nic_qp_hash_add(struct nic *nic, struct nic_qp *qp)
{
	struct nic_qp **head = &nic->qp_hash[qp->qpn & (nic->qp_hash_size - 1)];

	qp->hash_next = *head;
	*head = qp;
}

void nic_qp_hash_del(struct nic *nic, struct nic_qp *qp)
{
	struct nic_qp **pp = &nic->qp_hash[qp->qpn & (nic->qp_hash_size - 1)];

	while (*pp && *pp != qp)
		pp = &(*pp)->hash_next;
	if (*pp)
		*pp = qp->hash_next;
}

static int rehash(struct nic *nic, uint32_t size)
{
	struct nic_qp **t = calloc(size, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (uint32_t b = 0; b < nic->qp_hash_size; b++)
		for (struct nic_qp *qp = nic->qp_hash[b], *next; qp; qp = next) {
			next = qp->hash_next;
			qp->hash_next = t[qp->qpn & (size - 1)];
			t[qp->qpn & (size - 1)] = qp;
		}
	free(nic->qp_hash);
	nic->qp_hash = t;
	nic->qp_hash_size = size;
	return 0;
}

int nic_qp_reserve(struct nic *nic)
{
	uint64_t want = nic->ctr.qps + 1;

	if (want > nic->qp_hash_size && rehash(nic, nic->qp_hash_size * 2))
		return -ENOMEM;
	if (want > nic->timers_cap) {
		uint32_t cap = nic->timers_cap ? nic->timers_cap * 2 : 64;
		struct nic_qp **t = realloc(nic->timers, cap * sizeof(*t)), **d;

		if (!t)
			return -ENOMEM;
		nic->timers = t;
		if (!(d = realloc(nic->due, cap * sizeof(*d))))
			return -ENOMEM;
		nic->due = d;
		nic->timers_cap = cap;
	}
	return 0;
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

void nic_drop(struct nic *nic, struct nic_qp *qp, enum nic_drop_reason why)
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

int32_t nic_rx_begin(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src,
		     uint16_t sport, const struct nic_gid *dst, uint64_t now)
{
	int32_t dqpn = roce_peek_dqpn(pkt, len);

	nic->now = now;
	nic->ctr.pkts_received++;
	if (dqpn < 0) {
		nic_drop(nic, NULL, NIC_DROP_PARSE);
		return -1;
	}
	if (!nic_icrc_ok_from(nic, src, sport, dst, pkt, len)) {
		nic_drop(nic, NULL, NIC_DROP_ICRC);
		return -1;
	}
	return dqpn;
}

void nic_rx_from(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src,
		 uint16_t sport, uint64_t now)
{
	int32_t dqpn = nic_rx_begin(nic, pkt, len, src, sport, &nic->cfg.gid, now);
	struct nic_qp *qp;

	if (dqpn < 0)
		return;
	if (dqpn == ROCE_GSI_QPN)
		return nic_gsi_rx(nic, pkt, len, src);
	/* QP 0xFFFFFF is no QP: multicast comes by nic_rx_mcast, from the group's address */
	qp = nic_qp_lookup(nic, (uint32_t)dqpn);
	if (!qp)
		return nic_drop(nic, NULL, NIC_DROP_NO_QP);
	nic_rx_qp(nic, qp, pkt, len, src, &nic->cfg.gid);
}

void nic_rx_qp(struct nic *nic, struct nic_qp *qp, const uint8_t *pkt, size_t len,
	       const struct nic_gid *src, const struct nic_gid *dst)
{
	struct roce_pkt p;

	/* The state first (IBA 10.3.1: RESET and INIT drop every packet): before RTR the QP
	 * has no path MTU to parse with. */
	if (!state_receives(qp))
		return nic_drop(nic, qp, NIC_DROP_QP_STATE);
	if (roce_parse(pkt, len, qp->pmtu, &p) != ROCE_R_OK)
		return nic_drop(nic, qp, NIC_DROP_PARSE);
	if (p.h.bth.pkey != ROCE_DEFAULT_PKEY)
		return nic_drop(nic, qp, NIC_DROP_BAD_PKEY);
	qp->ctr.pkts_received++;
	qp->ctr.bytes_received += len;
	if (qp->type == ODPEMU_QPT_UD) {
		if (roce_opcode_transport(p.h.bth.opcode) != ROCE_UD)
			return nic_drop(nic, qp, NIC_DROP_BAD_QP_TYPE);
		nic_ud_rx(qp, &p, src, dst);
	} else if (roce_opcode_transport(p.h.bth.opcode) !=
		   (qp->type == ODPEMU_QPT_UC ? ROCE_UC : ROCE_RC)) {
		return nic_drop(nic, qp, NIC_DROP_BAD_QP_TYPE);
	} else if (memcmp(src, &qp->attr.ah_attr.dgid, sizeof(*src))) {
		return nic_drop(nic, qp, NIC_DROP_SRC_MISMATCH);
	} else if (p.mask & ROCE_M_RESP) {
		nic_comp_rx(qp, &p);
	} else {
		nic_resp_rx(qp, &p, src);
	}
	nic_run(nic);
}

/* ---- timers: the completers' deadlines in a min-heap (nic->timers) ---- */

static uint64_t qp_deadline(const struct nic_qp *qp)
{
	return qp->comp.ack_deadline < qp->comp.rnr_deadline ? qp->comp.ack_deadline
							     : qp->comp.rnr_deadline;
}

static void heap_set(struct nic *nic, uint32_t i, struct nic_qp *qp)
{
	nic->timers[i] = qp;
	qp->timer_pos = i + 1;
}

static void sift_up(struct nic *nic, uint32_t i)
{
	struct nic_qp *qp = nic->timers[i];

	while (i && nic->timers[(i - 1) / 2]->timer_key > qp->timer_key) {
		heap_set(nic, i, nic->timers[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(nic, i, qp);
}

static void sift_down(struct nic *nic, uint32_t i)
{
	struct nic_qp *qp = nic->timers[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= nic->ntimers)
			break;
		if (c + 1 < nic->ntimers && nic->timers[c + 1]->timer_key < nic->timers[c]->timer_key)
			c++;
		if (nic->timers[c]->timer_key >= qp->timer_key)
			break;
		heap_set(nic, i, nic->timers[c]);
		i = c;
	}
	heap_set(nic, i, qp);
}

void nic_timer_arm(struct nic_qp *qp, uint64_t t)
{
	struct nic *nic = qp->nic;

	if (qp->timer_pos) {
		if (t < qp->timer_key) {
			qp->timer_key = t;
			sift_up(nic, qp->timer_pos - 1);
		}
		return;
	}
	qp->timer_key = t;		/* room was made when qp was created */
	nic->timers[nic->ntimers++] = qp;
	sift_up(nic, nic->ntimers - 1);
}

void nic_timer_del(struct nic_qp *qp)
{
	struct nic *nic = qp->nic;
	uint32_t i = qp->timer_pos - 1;

	if (!qp->timer_pos)
		return;
	qp->timer_pos = 0;
	if (i == --nic->ntimers)
		return;
	heap_set(nic, i, nic->timers[nic->ntimers]);
	if (i && nic->timers[(i - 1) / 2]->timer_key > nic->timers[i]->timer_key)
		sift_up(nic, i);
	else
		sift_down(nic, i);
}

/* The top's key made exact (its deadline moved later or went): false when the heap is
 * empty or the top is exact. */
static bool settle_top(struct nic *nic)
{
	struct nic_qp *top;
	uint64_t d;

	if (!nic->ntimers)
		return false;
	top = nic->timers[0];
	d = qp_deadline(top);
	if (d == top->timer_key)
		return false;
	if (d == UINT64_MAX) {
		nic_timer_del(top);
	} else {
		top->timer_key = d;
		sift_down(nic, 0);
	}
	return true;
}

static int by_seq(const void *a, const void *b)
{
	const struct nic_qp *x = *(struct nic_qp *const *)a, *y = *(struct nic_qp *const *)b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The QPs whose deadline is due run in creation order, as a walk of every QP would. */
void nic_tick(struct nic *nic, uint64_t now)
{
	uint32_t n = 0, bound = nic->ntimers;

	nic->now = now;
	/* Each step pops a QP or makes one key exact (or removes it): at most two per QP. */
	for (uint32_t k = 0; k <= 2 * bound && nic->ntimers &&
			     nic->timers[0]->timer_key <= now; k++) {
		struct nic_qp *qp = nic->timers[0];

		if (settle_top(nic))
			continue;
		nic_timer_del(qp);
		nic->due[n++] = qp;
	}
	if (n > 1)
		qsort(nic->due, n, sizeof(*nic->due), by_seq);
	for (uint32_t i = 0; i < n; i++) {
		struct nic_qp *qp = nic->due[i];

		nic_comp_tick(qp, now);
		if (qp_deadline(qp) != UINT64_MAX)
			nic_timer_arm(qp, qp_deadline(qp));
	}
	nic_run(nic);
}

uint64_t nic_next_deadline(struct nic *nic)
{
	for (uint32_t k = 0, bound = nic->ntimers; k <= bound && settle_top(nic); k++)
		;
	return nic->ntimers ? nic->timers[0]->timer_key : UINT64_MAX;
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
