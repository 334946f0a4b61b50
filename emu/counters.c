/* SPDX-License-Identifier: MIT */
/*
 * counters — the COUNTERS op: name/value pairs of the device, a QP or an MR, named as mlx5
 * and `rdma stat` name them where they exist (page_faults, page_invalidations,
 * page_prefetch, ...). docs/emu.md lists them all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "nic.h"
#include "persist.h"
#include "session.h"
#include "udp.h"

#define MAX_CTRS 4096

struct ctr_list {
	struct ipc_counter c[MAX_CTRS];
	unsigned n;
};

static void put(struct ctr_list *l, const char *name, uint64_t v)
{
	if (l->n < MAX_CTRS) {
		snprintf(l->c[l->n].name, sizeof(l->c[0].name), "%s", name);
		l->c[l->n++].value = v;
	}
}

/* prefix + an upper-case table name, in lower case: "drop_" "NO_QP" -> "drop_no_qp". */
static void lower_into(char *name, size_t len, const char *prefix, const char *upper)
{
	snprintf(name, len, "%s%s", prefix, upper);
	for (char *p = name; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
}

static void put_drops(struct ctr_list *l, const uint64_t *drops)
{
	char name[IPC_CTR_NAME];

	for (int i = 0; i < NIC_DROP__COUNT; i++) {
		lower_into(name, sizeof(name), "drop_",
			   nic_drop_reason_str((enum nic_drop_reason)i));
		put(l, name, drops[i]);
	}
}

/* Error completions by why: wc_err_retry_exc, wc_err_flush, ... (nic_counters.wc_errors) */
static void put_wc_errors(struct ctr_list *l, const uint64_t *wc_errors)
{
	char name[IPC_CTR_NAME];

	for (unsigned i = 0; i < NIC_VERR__COUNT; i++) {
		/* NONE: an error status whose cause has no vendor code of its own */
		lower_into(name, sizeof(name), "wc_err_",
			   i == NIC_VERR_NONE ? "OTHER" : nic_vendor_err_str(i));
		put(l, name, wc_errors[i]);
	}
}

/* Fault latency as a log2 histogram: fault_latency_us_lt_N counts faults under N µs. */
static void put_hist(struct ctr_list *l, const char *prefix, const uint64_t *b, unsigned n,
		     unsigned shift)
{
	char name[IPC_CTR_NAME];

	for (unsigned i = 0; i < n; i++)
		if (b[i]) {
			snprintf(name, sizeof(name), "%s_lt_%llu", prefix,
				 (unsigned long long)(2ull << i) >> shift);
			put(l, name, b[i]);
		}
}

static uint64_t count_listeners(const struct emu_cm *cm)
{
	uint64_t n = 0;

	for (const struct emu_cm_listener *l = cm->listeners; l; l = l->next)
		n++;
	return n;
}

static uint64_t count_conns(const struct emu_cm *cm)
{
	uint64_t n = 0;

	for (const struct emu_cm_conn *c = cm->conns; c; c = c->next)
		n++;
	return n;
}

/* The connection manager: MADs in and out by type, and what it could not use. */
static void put_cm(struct ctr_list *l, const struct emu_cm *cm)
{
	char name[IPC_CTR_NAME];

	for (unsigned i = 0; i < EMU_CM_NATTR; i++) {
		const char *a = emu_cm_attr_name(i);

		lower_into(name, sizeof(name), "cm_rx_", a);
		put(l, name, cm->ctr.rx[i]);
		lower_into(name, sizeof(name), "cm_tx_", a);
		put(l, name, cm->ctr.tx[i]);
	}
	put(l, "cm_rx_malformed", cm->ctr.rx_malformed);
	put(l, "cm_rx_bad_src_qp", cm->ctr.rx_bad_src_qp);
	put(l, "cm_unmatched", cm->ctr.unmatched);
	put(l, "cm_duplicates", cm->ctr.duplicates);
	put(l, "cm_tx_errors", cm->ctr.tx_errors);
	put(l, "cm_retransmits", cm->ctr.retransmits);
	put(l, "cm_give_ups", cm->ctr.give_ups);
	put(l, "cm_events_sent", cm->ctr.events_sent);
	put(l, "cm_events_dropped", cm->ctr.events_dropped);
	put(l, "cm_established", cm->ctr.established);
	put(l, "cm_listens", cm->ctr.listens);
	put(l, "cm_listeners", count_listeners(cm));
	put(l, "cm_connections", count_conns(cm));
}

/* The fault thread's own account: requests resolved, and the time spent resolving them and
 * waiting in its queue (fault_resolve_ns / fault_jobs is the service time of one); then
 * the loop's part, from an answer being due to its delivery to nic/. */
static void put_fault_thread(struct ctr_list *l, struct emu_daemon *d)
{
	struct emu_fault_stats f = { 0 };

	if (d->fault)
		emu_fault_stats_get(d->fault, &f);
	put(l, "fault_jobs", f.jobs);
	put(l, "fault_resolve_ns", f.resolve_ns_total);
	put(l, "fault_queue_wait_ns", f.wait_ns_total);
	put(l, "fault_deliver_wait_ns", d->ctr.fault_deliver_wait_ns);
	put(l, "fault_batches", f.batches);
	put(l, "fault_batch_reused", f.batch_reused);
	put(l, "fault_jobs_inline", f.inline_jobs);
	put(l, "fault_maps_errors", f.maps_errors);
}

/* The non-empty buckets of a log-linear histogram, as PREFIX_lt_N (N: its upper bound). */
static void put_lathist(struct ctr_list *l, const char *prefix, const struct emu_lathist *h)
{
	char name[IPC_CTR_NAME];

	for (unsigned i = 0; i < EMU_LATHIST_BUCKETS; i++)
		if (h->count[i]) {
			snprintf(name, sizeof(name), "%s_lt_%llu", prefix,
				 (unsigned long long)emu_lathist_upper(i));
			put(l, name, h->count[i]);
		}
}

static void put_iopt(struct ctr_list *l, const struct iopt_counters *c)
{
	put(l, "page_faults", c->page_faults);
	put(l, "page_fault_pages", c->page_fault_pages);
	put(l, "page_invalidations", c->page_invalidations);
	put(l, "page_invalidated_pages", c->page_invalidated_pages);
	put(l, "page_prefetch", c->page_prefetch);
	put(l, "fault_merged", c->fault_merged);
	put(l, "fault_races", c->fault_races);
	put(l, "fault_failed", c->fault_failed);
	put(l, "present_pages", c->present_pages);
	put(l, "table_bytes", c->table_bytes);
}

/* Events add up over time; present_pages and table_bytes are "now" (live MRs only). */
static void add_iopt(struct iopt_counters *sum, const struct iopt_counters *c, bool gauges)
{
	sum->page_faults += c->page_faults;
	sum->page_fault_pages += c->page_fault_pages;
	sum->page_invalidations += c->page_invalidations;
	sum->page_invalidated_pages += c->page_invalidated_pages;
	sum->page_prefetch += c->page_prefetch;
	sum->fault_merged += c->fault_merged;
	sum->fault_races += c->fault_races;
	sum->fault_failed += c->fault_failed;
	if (gauges) {
		sum->present_pages += c->present_pages;
		sum->table_bytes += c->table_bytes;
	}
}

static void add_qp(struct nic_qp_counters *sum, const struct nic_qp_counters *q)
{
	sum->rnr_naks_sent += q->rnr_naks_sent;
	sum->rnr_naks_received += q->rnr_naks_received;
	sum->retransmits += q->retransmits;
	sum->timeouts += q->timeouts;
	sum->stalls += q->stalls;
}

static void put_persist(struct ctr_list *l, const struct emu_daemon *d)
{
	struct emu_persist_stats st = { 0 };

	if (d->persist)
		emu_persist_stats(d->persist, &st);
	put(l, "flush_persist_syncs", st.syncs);
	put(l, "flush_persist_volatile", st.volatile_ranges);
	put(l, "flush_persist_errors", st.errors);
	put(l, "flush_persist_ns", st.ns);
	put(l, "flush_persist_max_ns", st.max_ns);
}

void emu_counters_retire(struct emu_obj *o)
{
	struct emu_daemon *d = o->s->d;

	if (o->type == EMU_OBJ_MR) {
		struct iopt_counters c;

		iopt_counters_get(nic_mr_iopt(o->u.mr.mr), &c);
		add_iopt(&d->retired_mr, &c, false);
	} else if (o->type == EMU_OBJ_QP) {
		struct nic_qp_counters q;

		if (!nic_qp_counters(o->u.qp.qp, &q))
			add_qp(&d->retired_qp, &q);
	}
}

/* Device: nic/'s packet counters, the sums over MRs and QPs (live and destroyed: device
 * counters never go down), the daemon's own. */
static void dev_counters(struct emu_daemon *d, struct ctr_list *l)
{
	struct nic_counters nc;
	struct iopt_counters sum = d->retired_mr, one;
	struct nic_qp_counters qsum = d->retired_qp, q;
	struct emu_udp_stats us;

	nic_counters(d->nic, &nc);
	emu_udp_stats(d->udp, &us);
	for (struct emu_session *s = d->sessions; s; s = s->next) {
		emu_for_each_obj(mr, s, EMU_OBJ_MR) {
			iopt_counters_get(nic_mr_iopt(mr->u.mr.mr), &one);
			add_iopt(&sum, &one, true);
		}
		emu_for_each_obj(qp, s, EMU_OBJ_QP)
			if (!nic_qp_counters(qp->u.qp.qp, &q))
				add_qp(&qsum, &q);
	}
	put(l, "sessions", d->nsessions);
	put(l, "pds", nc.pds);
	put(l, "mrs", nc.mrs);
	put(l, "cqs", nc.cqs);
	put(l, "srqs", nc.srqs);
	put(l, "qps", nc.qps);
	put(l, "pkts_received", nc.pkts_received);
	put(l, "pkts_sent", nc.pkts_sent);
	put(l, "gsi_received", nc.gsi_received);
	put(l, "gsi_sent", nc.gsi_sent);
	put_cm(l, &d->cm);
#define PUT_UDP_(name) put(l, "udp_" #name, us.name);
	EMU_UDP_STATS(PUT_UDP_)
#undef PUT_UDP_
#define PUT_WIRE_(name) put(l, "wire_" #name, d->wire.st.name);
	EMU_WIRE_STATS(PUT_WIRE_)
#undef PUT_WIRE_
	put(l, "faults_raised", nc.faults_raised);
	put(l, "faults_failed", nc.faults_failed);
	put_fault_thread(l, d);
	put_iopt(l, &sum);
	put(l, "rnr_naks_sent", qsum.rnr_naks_sent);
	put(l, "rnr_naks_received", qsum.rnr_naks_received);
	put(l, "retransmits", qsum.retransmits);
	put(l, "timeouts", qsum.timeouts);
	put(l, "stalls", qsum.stalls);
	put(l, "evictions", d->ctr.evictions);
	put(l, "host_invalidations", d->ctr.invalidations_host);
	put(l, "mrs_pinned_shared", d->ctr.mrs_pinned_shared);
	put(l, "mrs_pinned_by_address", d->ctr.mrs_pinned_by_address);
	put(l, "uffd_events", d->ctr.uffd_events);
	put(l, "watch_changes", d->ctr.watch_changes);
	put(l, "watch_fired", d->ctr.watch_fired);
	put(l, "watch_errors", d->ctr.watch_errors);
	put(l, "lease_breaks", d->ctr.lease_breaks);
	put(l, "lease_acks", d->ctr.lease_acks);
	put(l, "lease_revocations", d->ctr.lease_revocations);
	put(l, "lease_restores", d->ctr.lease_restores);
	put_persist(l, d);
	put(l, "loop_sleeps", d->ctr.loop_sleeps);
	put(l, "mem_read_errors", d->ctr.mem_read_errors);
	put(l, "mem_write_errors", d->ctr.mem_write_errors);
	put(l, "requests", d->ctr.requests);
	put(l, "request_errors", d->ctr.request_errors);
	put(l, "bad_wqes", d->ctr.ring_bad_wqe);
	put(l, "events_sent", d->ctr.events_sent);
	put(l, "events_dropped", d->ctr.events_dropped);
	put_drops(l, nc.drops);
	put_wc_errors(l, nc.wc_errors);
	put_hist(l, "fault_latency_us", d->ctr.fault_lat_us, 24, 0);
	put_lathist(l, "fault_latency_ns", &d->ctr.fault_lat_ns);
}

static void qp_counters(struct emu_obj *o, struct ctr_list *l)
{
	struct nic_qp_counters q;

	nic_qp_counters(o->u.qp.qp, &q);
	put(l, "qp_num", nic_qp_num(o->u.qp.qp));
#define PUT_QP_CTR_(name) put(l, #name, q.name);
	NIC_QP_COUNTERS(PUT_QP_CTR_)
#undef PUT_QP_CTR_
	put_drops(l, q.drops);
}

static void mr_counters(struct emu_obj *o, struct ctr_list *l)
{
	struct iopt_counters c;

	iopt_counters_get(nic_mr_iopt(o->u.mr.mr), &c);
	put(l, "lkey", nic_mr_lkey(o->u.mr.mr));
	put_iopt(l, &c);
	/* iopt's buckets are [2^i, 2^(i+1)) ns: shown in µs from 1 µs on */
	put_hist(l, "fault_latency_us", c.fault_latency_ns + 9, IOPT_LAT_BUCKETS - 9, 0);
}

/* SIGUSR1: the device counters into the log, one "name value" per line. */
void emu_counters_dump(struct emu_daemon *d)
{
	struct ctr_list *l = calloc(1, sizeof(*l));

	if (!l) {
		emu_log(EMU_LOG_WARN, "counters of %s: no memory to list them", d->opt.name);
		return;
	}
	dev_counters(d, l);
	emu_log(EMU_LOG_INFO, "counters of %s (%u):", d->opt.name, l->n);
	for (unsigned i = 0; i < l->n; i++)
		emu_log(EMU_LOG_INFO, "  %-28s %llu", l->c[i].name, (unsigned long long)l->c[i].value);
	free(l);
}

/* The QP with this number, or the MR with this lkey, of any session (nic/'s tables). */
static struct emu_obj *any_obj(struct emu_daemon *d, enum emu_obj_type type, uint32_t id)
{
	struct emu_obj *o = type == EMU_OBJ_QP ? nic_qp_owner_by_num(d->nic, id) :
			    nic_mr_owner_by_key(d->nic, id);

	return o && o->type == type ? o : NULL;
}

/* One page of the object list (IPC_CTR_LIST): from entry q->start of the QPs and MRs of
 * the sessions q->id names (a pid; 0: all), per session its QPs, then its MRs (or only
 * one kind), at most IPC_MAX_COUNTERS. Whole sessions and lists before the page are
 * skipped by their counts: a page costs what it holds and a walk to its first entry
 * within one session's list. *more: entries follow. */
static void list_page(struct emu_daemon *d, const struct ipc_counters_req *q,
		      struct ctr_list *l, bool *more)
{
	static const enum emu_obj_type types[] = { EMU_OBJ_QP, EMU_OBJ_MR };
	uint32_t skip = q->start;
	char name[IPC_CTR_NAME];

	*more = false;
	for (struct emu_session *s = d->sessions; s && !*more; s = s->next) {
		if (q->id && (uint32_t)s->pid != q->id)
			continue;
		for (int k = 0; k < 2 && !*more; k++) {
			enum emu_obj_type t = types[k];
			struct emu_obj *o = s->of_type[t].first;

			if ((q->flags & IPC_CTR_ONLY_QPS && t != EMU_OBJ_QP) ||
			    (q->flags & IPC_CTR_ONLY_MRS && t != EMU_OBJ_MR))
				continue;
			if (skip >= s->of_type[t].n) {
				skip -= s->of_type[t].n;
				continue;
			}
			for (; o && skip; o = o->type_next)
				skip--;
			snprintf(name, sizeof(name), "%s %d", t == EMU_OBJ_QP ? "qp" : "mr",
				 (int)s->pid);
			for (; o; o = o->type_next) {
				if (l->n == IPC_MAX_COUNTERS) {
					*more = true;
					break;
				}
				put(l, name, t == EMU_OBJ_QP ? nic_qp_num(o->u.qp.qp) :
					     nic_mr_lkey(o->u.mr.mr));
			}
		}
	}
}

/* The object a COUNTERS request names: the session's handle, or with IPC_CTR_ANY a QP
 * number / lkey of any session. */
static struct emu_obj *named(struct emu_req *r, const struct ipc_counters_req *q,
			     enum emu_obj_type type)
{
	if (q->flags & IPC_CTR_ANY)
		return any_obj(r->s->d, type, q->id);
	return emu_obj_get(r->s, q->id, type);
}

/* Fill l with what q asks for; false: no such scope or object. */
static bool collect(struct emu_req *r, const struct ipc_counters_req *q, struct ctr_list *l)
{
	struct emu_obj *o;

	switch (q->scope) {
	case IPC_CTR_DEV: dev_counters(r->s->d, l); return true;
	case IPC_CTR_QP: return (o = named(r, q, EMU_OBJ_QP)) && (qp_counters(o, l), true);
	case IPC_CTR_MR: return (o = named(r, q, EMU_OBJ_MR)) && (mr_counters(o, l), true);
	default: return false;
	}
}

static int reply_page(struct emu_req *r, const struct ipc_counter *c, unsigned n, bool more)
{
	_Alignas(8) char buf[IPC_MAX_MSG];
	struct ipc_counters_rep *rep = (struct ipc_counters_rep *)(void *)buf;

	rep->n = n;
	rep->more = more;
	memcpy(rep->c, c, n * sizeof(rep->c[0]));
	return emu_ctl_reply(r->s, r->hdr, 0, rep, sizeof(*rep) + n * sizeof(rep->c[0]), NULL, 0);
}

/* Reply with the slice of l from q->start, as many as one message holds. */
static int reply_slice(struct emu_req *r, const struct ipc_counters_req *q,
		       const struct ctr_list *l)
{
	unsigned n;

	if (q->start > l->n)
		return emu_reply_err(r, -EINVAL, "counters: start %u past %u", q->start, l->n);
	n = l->n - q->start;
	if (n > IPC_MAX_COUNTERS)
		n = IPC_MAX_COUNTERS;
	return reply_page(r, l->c + q->start, n, q->start + n < l->n);
}

int emu_op_counters(struct emu_req *r)
{
	const struct ipc_counters_req *q = r->body;
	struct ctr_list *l;
	int rc;

	if (r->len != sizeof(*q))
		return emu_reply_err(r, -EBADMSG, "COUNTERS body of %zu bytes", r->len);
	if (q->flags & ~(IPC_CTR_ANY | IPC_CTR_ONLY_QPS | IPC_CTR_ONLY_MRS) ||
	    (q->flags & (IPC_CTR_ONLY_QPS | IPC_CTR_ONLY_MRS) && q->scope != IPC_CTR_LIST))
		return emu_reply_err(r, -EINVAL, "counters: unknown flags %#x", q->flags);
	l = calloc(1, sizeof(*l));	/* ~200 KiB: a control request, not the data path */
	if (!l)
		return emu_reply_err(r, -ENOMEM, "counters: no memory for the list");
	if (q->scope == IPC_CTR_LIST) {
		bool more;

		list_page(r->s->d, q, l, &more);
		rc = reply_page(r, l->c, l->n, more);
	} else if (collect(r, q, l))
		rc = reply_slice(r, q, l);
	else
		rc = emu_reply_err(r, -ENOENT, "counters: no such scope %u / object %u in this "
				   "session", q->scope, q->id);
	free(l);
	return rc;
}
