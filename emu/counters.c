/* SPDX-License-Identifier: MIT */
/*
 * counters — the COUNTERS op: name/value pairs of the device, a QP or an MR, named as mlx5
 * and `rdma stat` name them where they exist (page_faults, page_invalidations,
 * page_prefetch, ...). docs/emu.md lists them all.
 *
 * Each scope's counters are one table, in the order they are listed (dev_rows, iopt_rows,
 * NIC_QP_COUNTERS): a row names a counter and the field it reads, or a family of counters
 * generated from another list (drop reasons, vendor errors, CM attributes, histograms).
 * The sums over MRs and QPs are generated from the same lists.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "nic.h"
#include "host/persist.h"
#include "session.h"
#include "io/udp.h"

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

/* ---- the tables: each counter's name and where its value lives, typed once ----
 *
 * The names and their order are an interface (odpemu-ctl stat and --json, scripts, tests,
 * docs/emu.md): add counters, never rename or reorder them. Where a struct already has its
 * list (NIC_QP_COUNTERS, EMU_UDP_STATS, EMU_WIRE_STATS, NIC_DROP_REASONS,
 * NIC_VENDOR_ERRS) the names come from it. */

/* An IO page table's counters (struct iopt_counters): X(field, sum). The device sums them
 * over its MRs: EVENT counts over destroyed MRs too (device counters never go down), GAUGE
 * ones ("now") over the live MRs only. memory_bytes is not listed: table_bytes plus the
 * domain's own few bytes, no news to a user. */
#define IOPT_EVENT 1
#define IOPT_GAUGE 0
#define IOPT_CTRS(X) \
	X(page_faults, EVENT) X(page_fault_pages, EVENT) X(page_invalidations, EVENT) \
	X(page_invalidated_pages, EVENT) X(page_prefetch, EVENT) X(fault_merged, EVENT) \
	X(fault_races, EVENT) X(fault_failed, EVENT) X(present_pages, GAUGE) X(table_bytes, GAUGE)
#define ONE_(...) + 1
static_assert(sizeof(struct iopt_counters) == sizeof(uint64_t) *
	      (IOPT_CTRS(ONE_) + 1 /* memory_bytes */ + IOPT_LAT_BUCKETS),
	      "iopt_counters has a field IOPT_CTRS does not list: list it (or say why not)");

/* The QP counters the device shows, summed over its QPs (all of NIC_QP_COUNTERS are summed;
 * the rest are per QP only). */
#define DEV_QP_CTRS(X) X(rnr_naks_sent) X(rnr_naks_received) X(rnr_naks_no_wqe) X(retransmits) \
	X(timeouts) X(stalls)

/* The connection manager's (emu_cm.ctr), each as cm_<field>, after its MADs by type. */
#define CM_CTRS(X) \
	X(rx_malformed) X(rx_bad_src_qp) X(unmatched) X(duplicates) X(tx_errors) \
	X(retransmits) X(give_ups) X(events_sent) X(events_dropped) X(established) X(listens) \
	X(req_port_elsewhere)

/* The persist thread's (struct emu_persist_stats, every field): X(name, field). */
#define PERSIST_CTRS(X) \
	X(flush_persist_syncs, syncs) X(flush_persist_volatile, volatile_ranges) \
	X(flush_persist_errors, errors) X(flush_persist_ns, ns) X(flush_persist_max_ns, max_ns)
static_assert(sizeof(struct emu_persist_stats) == sizeof(uint64_t) * (PERSIST_CTRS(ONE_)),
	      "emu_persist_stats has a field PERSIST_CTRS does not list");

/* Everything a device counter is read from besides the daemon itself, gathered once per
 * request (dev_snap_take). */
struct dev_snap {
	struct emu_daemon *d;
	struct nic_counters nic;
	struct emu_udp_stats udp;
	struct emu_fault_stats fault;		/* the fault thread's own account */
	struct emu_persist_stats persist;
	struct iopt_counters mrs;		/* summed over the MRs (IOPT_CTRS) */
	struct nic_qp_counters qps;		/* summed over the QPs */
	uint64_t cm_listeners, cm_connections;	/* live now */
	unsigned mcast_groups;			/* multicast groups listened on now */
};

/* One row of a counter table: a field (of the snapshot, or of struct emu_daemon), or a
 * family of counters that a function puts from a list of its own. */
struct ctr_row {
	const char *name;
	void (*family)(struct ctr_list *l, const struct dev_snap *s);
	bool in_daemon;
	uint8_t width;		/* of an unsigned (object counts) or a uint64_t */
	size_t off;
};
/* A field of any other type does not compile. */
#define CTR_WIDTH_(type, field) \
	_Generic(((type *)0)->field, unsigned: sizeof(unsigned), uint64_t: sizeof(uint64_t))
#define ROW_(nm, type, field, daemon) { .name = nm, .in_daemon = daemon, \
	.off = offsetof(type, field), .width = CTR_WIDTH_(type, field) }
#define SNAP_(name, field)	ROW_(#name, struct dev_snap, field, false)
#define DAEMON_(name, field)	ROW_(#name, struct emu_daemon, field, true)
#define FAMILY_(fn)		{ .family = fn }
/* Rows whose name is their field's, with the table's prefix. */
#define NIC_(f)			SNAP_(f, nic.f),
#define UDP_(f)			SNAP_(udp_##f, udp.f),
#define WIRE_(f)		DAEMON_(wire_##f, wire.st.f),
#define CM_(f)			DAEMON_(cm_##f, cm.ctr.f),
#define MRS_(f, sum)		SNAP_(f, mrs.f),
#define QPS_(f)			SNAP_(f, qps.f),
#define CTR_(f)			DAEMON_(f, ctr.f),
#define PERSIST_(name, f)	SNAP_(name, persist.f),

static uint64_t row_value(const struct ctr_row *r, const void *base)
{
	const char *p = (const char *)base + r->off;
	unsigned u;
	uint64_t v;

	if (r->width == sizeof(u)) {	/* CTR_WIDTH_: the two widths differ */
		memcpy(&u, p, sizeof(u));
		return u;
	}
	memcpy(&v, p, sizeof(v));
	return v;
}

/* Put the counters of rows: fields read from snap (or d), families put by their function. */
static void put_rows(struct ctr_list *l, const struct ctr_row *rows, size_t n,
		     const void *snap, const struct emu_daemon *d)
{
	for (const struct ctr_row *r = rows; r < rows + n; r++) {
		if (r->family)
			r->family(l, snap);
		else
			put(l, r->name, row_value(r, r->in_daemon ? (const void *)d : snap));
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

static void put_dev_drops(struct ctr_list *l, const struct dev_snap *s)
{
	put_drops(l, s->nic.drops);
}

/* Error completions by why: wc_err_retry_exc, wc_err_flush, ... (nic_counters.wc_errors) */
static void put_wc_errors(struct ctr_list *l, const struct dev_snap *s)
{
	char name[IPC_CTR_NAME];

	for (unsigned i = 0; i < NIC_VERR__COUNT; i++) {
		/* NONE: an error status whose cause has no vendor code of its own */
		lower_into(name, sizeof(name), "wc_err_",
			   i == NIC_VERR_NONE ? "OTHER" : nic_vendor_err_str(i));
		put(l, name, s->nic.wc_errors[i]);
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

/* The daemon's: fault submit -> answer delivered. */
static void put_fault_hist(struct ctr_list *l, const struct dev_snap *s)
{
	const uint64_t *b = s->d->ctr.fault_lat_us;

	put_hist(l, "fault_latency_us", b, sizeof(s->d->ctr.fault_lat_us) / sizeof(b[0]), 0);
}

/* The same as a log-linear histogram, its non-empty buckets as fault_latency_ns_lt_N (N:
 * the bucket's upper bound). */
static void put_fault_lathist(struct ctr_list *l, const struct dev_snap *s)
{
	const struct emu_lathist *h = &s->d->ctr.fault_lat_ns;
	char name[IPC_CTR_NAME];

	for (unsigned i = 0; i < EMU_LATHIST_BUCKETS; i++)
		if (h->count[i]) {
			snprintf(name, sizeof(name), "fault_latency_ns_lt_%llu",
				 (unsigned long long)emu_lathist_upper(i));
			put(l, name, h->count[i]);
		}
}

/* The connection manager's MADs in and out by type: cm_rx_req, cm_tx_req, ... */
static void put_cm_mads(struct ctr_list *l, const struct dev_snap *s)
{
	const struct emu_cm *cm = &s->d->cm;
	char name[IPC_CTR_NAME];

	for (unsigned i = 0; i < EMU_CM_NATTR; i++) {
		const char *a = emu_cm_attr_name(i);

		lower_into(name, sizeof(name), "cm_rx_", a);
		put(l, name, cm->ctr.rx[i]);
		lower_into(name, sizeof(name), "cm_tx_", a);
		put(l, name, cm->ctr.tx[i]);
	}
}

/* The device's counters, in the order they are listed: nic/'s packet counters, the sums
 * over MRs and QPs (live and destroyed: device counters never go down), the daemon's own.
 * The fault thread's account: requests resolved, the time spent resolving them and
 * waiting in its queue (fault_resolve_ns / fault_jobs is the service time of one), then
 * the loop's part, from an answer being due to its delivery to nic/. */
static const struct ctr_row dev_rows[] = {
	DAEMON_(sessions, nsessions),
	NIC_(pds) NIC_(mrs) NIC_(cqs) NIC_(srqs) NIC_(qps)
	NIC_(pkts_received) NIC_(pkts_sent) NIC_(gsi_received) NIC_(gsi_sent)
	FAMILY_(put_cm_mads),
	CM_CTRS(CM_)
	SNAP_(cm_listeners, cm_listeners), SNAP_(cm_connections, cm_connections),
	EMU_UDP_STATS(UDP_)
	EMU_WIRE_STATS(WIRE_)
	NIC_(faults_raised) NIC_(faults_failed) NIC_(cq_overruns_ignored)
	SNAP_(fault_jobs, fault.jobs), SNAP_(fault_resolve_ns, fault.resolve_ns_total),
	SNAP_(fault_queue_wait_ns, fault.wait_ns_total),
	DAEMON_(fault_deliver_wait_ns, ctr.fault_deliver_wait_ns),
	SNAP_(fault_batches, fault.batches), SNAP_(fault_batch_reused, fault.batch_reused),
	SNAP_(fault_jobs_inline, fault.inline_jobs), SNAP_(fault_maps_errors, fault.maps_errors),
	IOPT_CTRS(MRS_)
	DEV_QP_CTRS(QPS_)
	CTR_(evictions) DAEMON_(host_invalidations, ctr.invalidations_host),
	CTR_(mrs_pinned_shared) CTR_(mrs_pinned_by_address) CTR_(uffd_events)
	CTR_(seccomp_invalidations) CTR_(seccomp_relay_drops)
	CTR_(watch_changes) CTR_(watch_fired) CTR_(watch_errors)
	CTR_(lease_breaks) CTR_(lease_acks) CTR_(lease_revocations) CTR_(lease_restores)
	PERSIST_CTRS(PERSIST_)
	CTR_(loop_sleeps) CTR_(mem_read_errors) CTR_(mem_write_errors)
	CTR_(requests) CTR_(request_errors) DAEMON_(bad_wqes, ctr.ring_bad_wqe),
	CTR_(events_sent) CTR_(events_dropped)
	FAMILY_(put_dev_drops),
	FAMILY_(put_wc_errors),
	FAMILY_(put_fault_hist),
	FAMILY_(put_fault_lathist),
	NIC_(mcast_pkts_sent) NIC_(mcast_pkts_received) NIC_(mcast_copies)
	SNAP_(mcast_groups, mcast_groups),
};

/* An MR's: its IOPT's counters, read from a struct iopt_counters. */
#define IOPT_ROW_(f, sum)	ROW_(#f, struct iopt_counters, f, false),
static const struct ctr_row iopt_rows[] = { IOPT_CTRS(IOPT_ROW_) };

#define NROWS(rows) (sizeof(rows) / sizeof((rows)[0]))

/* ---- the sums over MRs and QPs ---- */

/* EVENT counts always add up; GAUGE ones only for live MRs. */
static void add_iopt(struct iopt_counters *sum, const struct iopt_counters *c, bool live)
{
#define ADD_IOPT_(f, kind) if (IOPT_##kind || live) sum->f += c->f;
	IOPT_CTRS(ADD_IOPT_)
#undef ADD_IOPT_
}

static void add_qp(struct nic_qp_counters *sum, const struct nic_qp_counters *q)
{
#define ADD_QP_(f) sum->f += q->f;
	NIC_QP_COUNTERS(ADD_QP_)
#undef ADD_QP_
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

static uint64_t count_listeners(const struct emu_cm *cm)
{
	uint64_t n = 0;

	for (const struct emu_cm_listener *l = cm->listeners; l; l = l->next)
		n += l->state == EMU_CM_PORT_LISTEN;	/* not rdma_bind_addr's reservations */
	return n;
}

static uint64_t count_conns(const struct emu_cm *cm)
{
	uint64_t n = 0;

	for (const struct emu_cm_conn *c = cm->conns; c; c = c->next)
		n++;
	return n;
}

/* What dev_rows read besides d: nic/'s, the threads', the sums over every MR and QP. */
static void dev_snap_take(struct emu_daemon *d, struct dev_snap *s)
{
	struct iopt_counters one;
	struct nic_qp_counters q;

	*s = (struct dev_snap){ .d = d, .mrs = d->retired_mr, .qps = d->retired_qp,
		.cm_listeners = count_listeners(&d->cm), .cm_connections = count_conns(&d->cm),
		.mcast_groups = emu_mcast_groups(d->mcast) };
	nic_counters(d->nic, &s->nic);
	emu_udp_stats(d->udp, &s->udp);
	if (d->fault)
		emu_fault_stats_get(d->fault, &s->fault);
	if (d->persist)
		emu_persist_stats(d->persist, &s->persist);
	for (struct emu_session *ses = d->sessions; ses; ses = ses->next) {
		emu_for_each_obj(mr, ses, EMU_OBJ_MR) {
			iopt_counters_get(nic_mr_iopt(mr->u.mr.mr), &one);
			add_iopt(&s->mrs, &one, true);
		}
		emu_for_each_obj(qp, ses, EMU_OBJ_QP)
			if (!nic_qp_counters(qp->u.qp.qp, &q))
				add_qp(&s->qps, &q);
	}
}

static void dev_counters(struct emu_daemon *d, struct ctr_list *l)
{
	struct dev_snap s;

	dev_snap_take(d, &s);
	put_rows(l, dev_rows, NROWS(dev_rows), &s, d);
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
	put_rows(l, iopt_rows, NROWS(iopt_rows), &c, NULL);
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
