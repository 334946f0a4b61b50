/* SPDX-License-Identifier: MIT */
/* report — see report.h. */
#include "report.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "odp.h"
#include "tooldev.h"

#define RULE "---------------------------------------------------------------------------" \
	     "-----------------------------"

static const char *test_title(const struct perf_cfg *c)
{
	static const char *const names[] = { "RDMA_Write", "RDMA_Read", "Send", "Atomic FETCH_AND_ADD",
		"RDMA_Flush" };

	return names[c->test];
}

void report_init(struct perf_report *rep, const struct perf_opts *o, const struct perf_cfg *cfg,
		 bool server, const char *local_dev)
{
	memset(rep, 0, sizeof(*rep));
	rep->o = o;
	rep->cfg = cfg;
	rep->server = server;
	snprintf(rep->local_dev, sizeof(rep->local_dev), "%s", local_dev);
}

static void endpoint(const char *who, const struct perf_ep *e, uint64_t addr, uint32_t rkey)
{
	char gid[64];

	tool_gid_str(&e->gid, gid, sizeof(gid));
	printf(" %-6s address: QPN 0x%06x PSN 0x%06x RKey 0x%08x VAddr 0x%016" PRIx64 " GID %s\n",
	       who, e->qpn[0], e->psn[0], rkey, addr, gid);
}

static void table_head(const struct perf_cfg *c)
{
	printf(RULE "\n");
	if (c->lat)
		printf(" %-10s %-12s %12s %12s %12s %12s %12s %12s\n", "#bytes", "#iterations",
		       "t_min[usec]", "t_median", "t_avg", "t_p99", "t_p99.9", "t_max[usec]");
	else
		printf(" %-10s %-12s %15s %15s %15s %15s %14s\n", "#bytes", "#iterations",
		       "BW peak[Gb/s]", "BW avg[Gb/s]", "BW peak[MB/s]", "BW avg[MB/s]",
		       "MsgRate[Mpps]");
}

void report_banner(struct perf_report *rep, const struct perf_run *r,
		   const struct perf_ep *local)
{
	const struct perf_cfg *c = rep->cfg;

	snprintf(rep->remote_dev, sizeof(rep->remote_dev), "%s", r->peer.dev);
	if (rep->o->json)
		return;
	printf(RULE "\n");
	printf("                    %s %s Test (odpemu)\n", test_title(c), c->lat ? "Latency" :
	       "BW");
	printf(" Number of qps   : %-10u Transport type : RoCEv2 over UDP (odpemu)\n", c->qps);
	printf(" Connection type : RC         Using SRQ      : OFF\n");
	printf(" TX depth        : %-10u Role           : %s\n", r->lay.tx_depth,
	       rep->server ? "server" : "client");
	printf(" Mtu             : %u[B]\n", c->mtu ? c->mtu : local->mtu < r->peer.mtu ?
	       local->mtu : r->peer.mtu);
	printf(" Devices         : %s (this side), %s (peer)\n", rep->local_dev, r->peer.dev);
	printf(" ODP             : %s, fault policy %s, prefetch %s, cold %s, churn %s%s%s\n",
	       perf_odp_name(c->odp), c->policy == ODPEMU_FAULT_POLICY_DEFAULT ? "daemon's" :
	       c->policy == ODPEMU_FAULT_POLICY_RNR ? "rnr" : "stall", c->prefetch ? "on" : "off",
	       c->cold ? "on" : "off", c->churn ? "on" : "off",
	       c->evict_rate[0] ? ", evict-rate " : "", c->evict_rate);
	if (c->regcache)
		printf(" Regcache        : %s (the client's churned buffers, same address)\n",
		       perf_regcache_name(c->regcache));
	printf(" RNR             : retry %u, min timer code %u     Verify : %s\n", c->rnr_retry,
	       c->min_rnr_timer, c->verify ? "every byte" : "off");
	printf(RULE "\n");
	endpoint("local", local, r->target.nslots ? (uint64_t)(uintptr_t)r->target.base : 0,
		 r->target.rkey);
	endpoint("remote", &r->peer, r->peer.addr, r->peer.rkey);
	table_head(c);
}

static void merge_verify(struct perf_verify *out, const struct perf_verify *a,
			 const struct perf_verify *b)
{
	*out = *a;
	out->checked = a->checked + b->checked;
	out->stale = a->stale + b->stale;
	if (!a->failed && b->failed) {
		out->failed = true;
		memcpy(out->msg, b->msg, sizeof(out->msg));
	}
}

static void print_row(const struct perf_cfg *c, const struct perf_result *s)
{
	if (c->lat) {
		printf(" %-10" PRIu64 " %-12" PRIu64 " %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f\n",
		       s->size, s->iters, s->t_min, s->t_med, s->t_avg, s->t_p99, s->t_p999,
		       s->t_max);
		return;
	}
	printf(" %-10" PRIu64 " %-12" PRIu64 " %15.2f %15.2f %15.2f %15.2f %14.6f\n", s->size,
	       s->iters, s->bw_peak * 8 / 1e9, s->bw_avg * 8 / 1e9, s->bw_peak / 1e6,
	       s->bw_avg / 1e6, s->msg_rate / 1e6);
}

/* --regcache: stale messages are the bug none exists to show; any other back-end must
 * deliver every message's own bytes. Both sides judge alike (they have the same counts). */
static void stale_verdict(const struct perf_cfg *c, struct perf_verify *v)
{
	if (c->regcache <= PERF_RC_NONE || !v->stale || v->failed)
		return;
	v->failed = true;
	snprintf(v->msg, sizeof(v->msg), "%" PRIu64 " of %" PRIu64 " messages stale (%s): "
		 "--regcache %s must deliver every message's own bytes", v->stale, v->checked,
		 c->test == PERF_READ ? "READs that never reached the buffer" :
		 "an earlier message's bytes", perf_regcache_name(c->regcache));
	perf_err("VERIFY FAILED: %s", v->msg);
}

void report_row(struct perf_report *rep, const struct perf_run *r, const struct perf_result *res,
		const struct ctrs *local, const struct ctrs *remote,
		const struct perf_verify *remote_verify)
{
	struct report_row *row;

	if (rep->nrows == REPORT_MAX_ROWS)
		return;
	row = &rep->rows[rep->nrows++];
	row->res = *res;
	row->local = *local;
	row->remote = *remote;
	merge_verify(&row->verify, &r->verify, remote_verify);
	stale_verdict(rep->cfg, &row->verify);
	odp_accumulate(&rep->local_total, local);
	odp_accumulate(&rep->remote_total, remote);
	if (row->verify.failed)
		rep->failed = true;
	if (!rep->o->json) {
		print_row(rep->cfg, res);
		fflush(stdout);
	}
}

/* "< 64" or "-": a percentile of the daemon's histogram is a bucket bound. */
static void fault_pct(const struct ctrs *s, double pct, char *buf, size_t len)
{
	uint64_t b = ctrs_hist_pct(s, pct);

	if (b)
		snprintf(buf, len, "< %" PRIu64, b);
	else
		snprintf(buf, len, "-");
}

/* "< 12.80" or "-": from the log-linear ns buckets, in µs. */
static void fault_pct_ns(const struct ctrs *s, double pct, char *buf, size_t len)
{
	uint64_t b = ctrs_hist_pct_of(s, CTRS_NS_HIST_PREFIX, pct);

	if (b)
		snprintf(buf, len, "< %.2f", (double)b / 1e3);
	else
		snprintf(buf, len, "-");
}

static void odp_text(const struct perf_report *rep)
{
	char a[32], b[32];

	printf(RULE "\n");
	printf(" %-40s %18s %18s\n", "ODP: device counter deltas over the run",
	       rep->local_dev, rep->remote_dev);
	for (unsigned i = 0; i < perf_odp_nkeys; i++)
		printf(" %-40s %18" PRIu64 " %18" PRIu64 "\n", perf_odp_keys[i],
		       ctrs_get(&rep->local_total, perf_odp_keys[i]),
		       ctrs_get(&rep->remote_total, perf_odp_keys[i]));
	fault_pct(&rep->local_total, 50, a, sizeof(a));
	fault_pct(&rep->remote_total, 50, b, sizeof(b));
	printf(" %-40s %18s %18s\n", "fault latency p50 [usec]", a, b);
	fault_pct(&rep->local_total, 99, a, sizeof(a));
	fault_pct(&rep->remote_total, 99, b, sizeof(b));
	printf(" %-40s %18s %18s\n", "fault latency p99 [usec]", a, b);
	for (unsigned i = 0; i < 3; i++) {
		static const double pcts[3] = { 50, 99, 99.9 };
		static const char *const names[3] = { "fault latency p50 [usec, +-25%]",
			"fault latency p99 [usec, +-25%]", "fault latency p99.9 [usec, +-25%]" };

		fault_pct_ns(&rep->local_total, pcts[i], a, sizeof(a));
		fault_pct_ns(&rep->remote_total, pcts[i], b, sizeof(b));
		printf(" %-40s %18s %18s\n", names[i], a, b);
	}
}

static void verify_text(const struct perf_report *rep)
{
	uint64_t checked = 0, stale = 0;

	if (!rep->cfg->verify)
		return;
	for (int i = 0; i < rep->nrows; i++) {
		checked += rep->rows[i].verify.checked;
		stale += rep->rows[i].verify.stale;
	}
	if (rep->cfg->regcache)
		printf(" stale messages: %" PRIu64 " of %" PRIu64 "%s\n", stale, checked,
		       rep->cfg->regcache == PERF_RC_NONE ? " (the bug --regcache none shows)" :
		       "");
	if (rep->failed)
		printf(" verify: FAILED\n");
	else
		printf(" verify: OK, every byte of %" PRIu64 " messages checked\n", checked);
}

/* ---- --regcache ---- */

/* The daemons' counters of the notifier and of leases (those this odpemud has). */
static bool rc_key(const char *name)
{
	return !strncmp(name, "watch_", 6) || !strncmp(name, "lease_", 6);
}

static double per_call_us(double secs, uint64_t calls)
{
	return calls ? secs * 1e6 / (double)calls : 0;
}

static double us_per_msg(const struct perf_result *s)
{
	return s->msg_rate > 0 ? 1e6 / s->msg_rate : 0;
}

static void rc_text(const struct perf_report *rep)
{
	uint64_t events = 0;
	char n[24];

	printf(RULE "\n");
	printf(" --regcache %s: the client's churned buffers; munmap, mmap (MAP_FIXED) and get "
	       "in usec per call\n", perf_regcache_name(rep->cfg->regcache));
	printf(" %-9s %9s %9s %8s %8s %8s %7s %7s %7s %8s %7s\n", "#bytes", "msgs/s",
	       "usec/msg", "munmap", "mmap", "get", "regs", "hits", "misses", "restores",
	       "drops");
	for (int i = 0; i < rep->nrows; i++) {
		const struct perf_result *s = &rep->rows[i].res;
		const struct perf_rc_figs *f = &s->rc;

		printf(" %-9" PRIu64 " %9.0f %9.2f %8.2f %8.2f %8.2f %7" PRIu64 " %7" PRIu64
		       " %7" PRIu64 " %8" PRIu64 " %7" PRIu64 "\n", s->size, s->msg_rate,
		       us_per_msg(s), per_call_us(f->munmap_secs, f->remaps),
		       per_call_us(f->mmap_secs, f->remaps), per_call_us(f->get_secs, f->gets),
		       f->registrations, f->hits, f->misses, f->restores, f->stale_drops);
		events += f->decoherence;
	}
	printf(" %-40s %18s %18s\n", "daemon counter deltas over the run", rep->local_dev,
	       rep->remote_dev);
	/* served by the client: its column is the remote one on the server */
	snprintf(n, sizeof(n), "%" PRIu64, events);
	printf(" %-40s %18s %18s\n", "MR_DECOHERENCE events (client's, served)",
	       rep->server ? "-" : n, rep->server ? n : "-");
	for (int i = 0; i < rep->local_total.n; i++) {
		const char *k = rep->local_total.c[i].name;

		if (rc_key(k))
			printf(" %-40s %18" PRIu64 " %18" PRIu64 "\n", k,
			       ctrs_get(&rep->local_total, k), ctrs_get(&rep->remote_total, k));
	}
}

static void json_odp(struct jw *w, const char *key, const char *dev, const struct ctrs *s)
{
	uint64_t bounds[64], counts[64];
	int n = ctrs_hist(s, bounds, counts, 64);

	jw_obj(w, key);
	jw_str(w, "device", dev);
	for (unsigned i = 0; i < perf_odp_nkeys; i++)
		jw_u64(w, perf_odp_keys[i], ctrs_get(s, perf_odp_keys[i]));
	jw_u64(w, "fault_latency_us_p50", ctrs_hist_pct(s, 50));
	jw_u64(w, "fault_latency_us_p99", ctrs_hist_pct(s, 99));
	jw_u64(w, "fault_latency_ns_p50", ctrs_hist_pct_of(s, CTRS_NS_HIST_PREFIX, 50));
	jw_u64(w, "fault_latency_ns_p99", ctrs_hist_pct_of(s, CTRS_NS_HIST_PREFIX, 99));
	jw_u64(w, "fault_latency_ns_p999", ctrs_hist_pct_of(s, CTRS_NS_HIST_PREFIX, 99.9));
	for (int i = 0; i < n; i++) {
		char name[64];

		snprintf(name, sizeof(name), CTRS_HIST_PREFIX "%" PRIu64, bounds[i]);
		jw_u64(w, name, counts[i]);
	}
	jw_end(w);
}

static void json_config(struct jw *w, const struct perf_cfg *c)
{
	jw_obj(w, "config");
	jw_u64(w, "qps", c->qps);
	jw_u64(w, "tx_depth", c->tx_depth);
	jw_u64(w, "inline", c->inline_size);
	jw_u64(w, "mtu", c->mtu);
	jw_str(w, "odp", perf_odp_name(c->odp));
	jw_str(w, "fault_policy", c->policy == ODPEMU_FAULT_POLICY_DEFAULT ? "default" :
	       c->policy == ODPEMU_FAULT_POLICY_RNR ? "rnr" : "stall");
	jw_bool(w, "prefetch", c->prefetch);
	jw_bool(w, "cold", c->cold);
	jw_bool(w, "churn", c->churn);
	jw_bool(w, "verify", c->verify);
	jw_u64(w, "rnr_retry", c->rnr_retry);
	jw_u64(w, "min_rnr_timer", c->min_rnr_timer);
	jw_str(w, "evict_rate", c->evict_rate);
	jw_str(w, "regcache", perf_regcache_name(c->regcache));
	jw_end(w);
}

static void json_rc_row(struct jw *w, const struct report_row *row)
{
	const struct perf_rc_figs *f = &row->res.rc;

	jw_obj(w, "regcache");
	jw_dbl(w, "msgs_per_s", row->res.msg_rate);
	jw_dbl(w, "us_per_msg", us_per_msg(&row->res));
	jw_u64(w, "remaps", f->remaps);
	jw_dbl(w, "munmap_us", per_call_us(f->munmap_secs, f->remaps));
	jw_dbl(w, "mmap_us", per_call_us(f->mmap_secs, f->remaps));
	jw_dbl(w, "remap_us", per_call_us(f->munmap_secs + f->mmap_secs, f->remaps));
	jw_u64(w, "gets", f->gets);
	jw_dbl(w, "get_us", per_call_us(f->get_secs, f->gets));
	jw_u64(w, "registrations", f->registrations);
	jw_u64(w, "hits", f->hits);
	jw_u64(w, "misses", f->misses);
	jw_u64(w, "restores", f->restores);
	jw_u64(w, "stale_drops", f->stale_drops);
	jw_u64(w, "decoherence_events", f->decoherence);
	jw_u64(w, "stale", row->verify.stale);
	jw_u64(w, "checked", row->verify.checked);
	jw_end(w);
}

static void json_rc_ctrs(struct jw *w, const char *key, const char *dev, const struct ctrs *s)
{
	jw_obj(w, key);
	jw_str(w, "device", dev);
	for (int i = 0; i < s->n; i++)
		if (rc_key(s->c[i].name))
			jw_u64(w, s->c[i].name, s->c[i].value);
	jw_end(w);
}

/* The run's totals: stale messages of every size, the daemons' counters. */
static void json_rc(struct perf_report *rep, struct jw *w)
{
	uint64_t stale = 0, checked = 0;

	for (int i = 0; i < rep->nrows; i++) {
		stale += rep->rows[i].verify.stale;
		checked += rep->rows[i].verify.checked;
	}
	jw_obj(w, "regcache");
	jw_str(w, "backend", perf_regcache_name(rep->cfg->regcache));
	jw_u64(w, "stale", stale);
	jw_u64(w, "checked", checked);
	json_rc_ctrs(w, "local", rep->local_dev, &rep->local_total);
	json_rc_ctrs(w, "remote", rep->remote_dev, &rep->remote_total);
	jw_end(w);
}

static void json_row(struct perf_report *rep, struct jw *w, const struct report_row *row)
{
	const struct perf_result *s = &row->res;

	jw_obj(w, NULL);
	jw_u64(w, "bytes", s->size);
	jw_u64(w, "iterations", s->iters);
	jw_dbl(w, "seconds", s->secs);
	if (rep->cfg->lat) {
		jw_dbl(w, "t_min_us", s->t_min);
		jw_dbl(w, "t_median_us", s->t_med);
		jw_dbl(w, "t_avg_us", s->t_avg);
		jw_dbl(w, "t_p99_us", s->t_p99);
		jw_dbl(w, "t_p999_us", s->t_p999);
		jw_dbl(w, "t_max_us", s->t_max);
	} else {
		jw_dbl(w, "bw_peak_gbps", s->bw_peak * 8 / 1e9);
		jw_dbl(w, "bw_avg_gbps", s->bw_avg * 8 / 1e9);
		jw_dbl(w, "bw_peak_mbps", s->bw_peak / 1e6);
		jw_dbl(w, "bw_avg_mbps", s->bw_avg / 1e6);
		jw_dbl(w, "msg_rate_mpps", s->msg_rate / 1e6);
	}
	jw_obj(w, "verify");
	jw_bool(w, "enabled", rep->cfg->verify);
	jw_bool(w, "ok", !row->verify.failed);
	jw_u64(w, "checked", row->verify.checked);
	jw_u64(w, "stale", row->verify.stale);
	jw_str(w, "error", row->verify.msg);
	jw_end(w);
	if (rep->cfg->regcache)
		json_rc_row(w, row);
	jw_obj(w, "odp");
	json_odp(w, "local", rep->local_dev, &row->local);
	json_odp(w, "remote", rep->remote_dev, &row->remote);
	jw_end(w);
	jw_end(w);
}

static void json_doc(struct perf_report *rep)
{
	struct jw w;

	jw_init(&w, stdout);
	jw_obj(&w, NULL);
	jw_str(&w, "test", perf_test_name(rep->cfg->test));
	jw_str(&w, "mode", rep->cfg->lat ? "lat" : "bw");
	jw_str(&w, "role", rep->server ? "server" : "client");
	jw_str(&w, "device", rep->local_dev);
	jw_str(&w, "peer_device", rep->remote_dev);
	json_config(&w, rep->cfg);
	jw_arr(&w, "results");
	for (int i = 0; i < rep->nrows; i++)
		json_row(rep, &w, &rep->rows[i]);
	jw_end(&w);
	jw_obj(&w, "odp");
	json_odp(&w, "local", rep->local_dev, &rep->local_total);
	json_odp(&w, "remote", rep->remote_dev, &rep->remote_total);
	jw_end(&w);
	if (rep->cfg->regcache)
		json_rc(rep, &w);
	jw_bool(&w, "ok", !rep->failed);
	jw_end(&w);
}

void report_end(struct perf_report *rep)
{
	if (rep->o->json) {
		json_doc(rep);
	} else if (rep->nrows) {
		odp_text(rep);
		if (rep->cfg->regcache)
			rc_text(rep);
		verify_text(rep);
		printf(RULE "\n");
	}
	fflush(stdout);
}
