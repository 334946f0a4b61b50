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
	uint64_t checked = 0;

	if (!rep->cfg->verify)
		return;
	for (int i = 0; i < rep->nrows; i++)
		checked += rep->rows[i].verify.checked;
	if (rep->failed)
		printf(" verify: FAILED\n");
	else
		printf(" verify: OK, every byte of %" PRIu64 " messages checked\n", checked);
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
	jw_str(w, "error", row->verify.msg);
	jw_end(w);
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
	jw_bool(&w, "ok", !rep->failed);
	jw_end(&w);
}

void report_end(struct perf_report *rep)
{
	if (rep->o->json) {
		json_doc(rep);
	} else if (rep->nrows) {
		odp_text(rep);
		verify_text(rep);
		printf(RULE "\n");
	}
	fflush(stdout);
}
