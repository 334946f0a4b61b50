/* SPDX-License-Identifier: MIT */
/*
 * odpemu-perf's features between two hosts: defaults just work (and print perftest's
 * table), --json agrees with `odpemu-ctl stat --json` on what happened to the device,
 * latency figures are ordered, several QPs, --churn, --prefetch, -D, -a, --mtu, --inline,
 * --evict-rate, flush, and --histogram writes an SVG and a PNG.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_check.h"
#include "t.h"

static struct h_env env;

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static bool pair(const char *test, const char *const *args, const char *what,
		 unsigned long iters, bool verify, struct tr_pair *r)
{
	tr_perf_pair(&env, test, args, NULL, r, 120);
	return pc_ok(r, what, iters, verify);
}

static void test_defaults(void)
{
	struct tr_pair r;

	tr_perf_pair(&env, "write", NULL, NULL, &r, 120);
	T_CHECK(r.client == 0 && r.server == 0, "plain `odpemu-perf write`: exit %d/%d",
		r.client, r.server);
	T_CHECK(strstr(r.cout, "BW peak[Gb/s]") && strstr(r.cout, " 65536      5000 "),
		"the client prints perftest's table:\n%s", r.cout);
	T_CHECK(strstr(r.sout, " 65536      5000 ") && strstr(r.sout, "page_faults"),
		"the server prints the table and the ODP section:\n%s", r.sout);
	printf("---- odpemu-perf write (defaults), client on %s ----\n%s", env.host[0].name,
	       r.cout);
	tr_pair_free(&r);
}

/* The sum of a device's fault latency buckets and its faults_raised, from odpemu-ctl. */
static void ctl_faults(int host, double *raised, double *hist)
{
	char *out;
	const char *argv[] = { tr_ctl(), "stat", "-d", env.host[host].name, "--json", NULL };
	int rc = tr_run(&env, host, argv, NULL, &out, 20);

	T_EQ(rc, 0, "odpemu-ctl stat --json");
	*raised = tr_json_num(out, "d[\"devices\"][0][\"counters\"][\"faults_raised\"]");
	*hist = tr_json_num(out, "sum(v for k, v in d[\"devices\"][0][\"counters\"].items() "
			    "if k.startswith(\"fault_latency_us_lt_\"))");
	free(out);
}

static void test_json_vs_ctl(void)
{
	struct tr_pair r;
	double raised0, hist0, raised1, hist1;

	ctl_faults(1, &raised0, &hist0);
	if (pair("write", ARGS("-n", "300", "-s", "8192", "--odp", "implicit", "--cold", "--json",
			       "--fault-policy", "stall"), "write cold implicit --json", 300, false,
		 &r)) {
		double faults = pc_odp(&r, "remote", "page_faults");
		double p50 = pc_odp(&r, "remote", "fault_latency_us_p50");
		double perf_hist = tr_json_num(r.cout, "sum(v for k, v in d[\"odp\"][\"remote\"]."
					       "items() if k.startswith(\"fault_latency_us_lt_\"))");

		ctl_faults(1, &raised1, &hist1);
		/* a message held behind another's fault has its pages faulted ahead (prefetch) */
		double ahead = pc_odp(&r, "remote", "page_prefetch");

		T_CHECK(faults + ahead >= 300, "cold ODP run: %.0f responder page faults, %.0f pages "
			"faulted ahead", faults, ahead);
		T_CHECK(p50 > 0, "fault latency p50 of a faulting run: %.0f", p50);
		{
			/* the log-linear ns buckets: the same faults, a bound within 25 % of the
			 * true p50, so under 1.25 x the log2 µs bound */
			double ns50 = pc_odp(&r, "remote", "fault_latency_ns_p50");

			T_CHECK(ns50 > 0 && ns50 < 1.25 * p50 * 1000, "fault latency p50 from the "
				"ns buckets %.0f ns, from the µs buckets < %.0f µs", ns50, p50);
		}
		/* same direction (a request may cover merged faults, so not the same count) */
		T_CHECK(raised1 - raised0 > 0, "odpemu-ctl: faults_raised grew %.0f, "
			"odpemu-perf saw %.0f page faults", raised1 - raised0, faults);
		T_CHECK(hist1 - hist0 >= perf_hist && perf_hist > 0, "odpemu-ctl: fault latency "
			"histogram grew %.0f, odpemu-perf's has %.0f", hist1 - hist0, perf_hist);
		T_CHECK(tr_json_num(r.sout, "0") == -1, "the server printed text, not JSON");
	}
	tr_pair_free(&r);
}

static void test_latency(void)
{
	struct tr_pair r;

	if (pair("write", ARGS("--lat", "-n", "300", "--json", "--verify"), "write --lat", 300,
		 true, &r)) {
		double mn = tr_json_num(r.cout, "d[\"results\"][0][\"t_min_us\"]");
		double med = tr_json_num(r.cout, "d[\"results\"][0][\"t_median_us\"]");
		double p99 = tr_json_num(r.cout, "d[\"results\"][0][\"t_p99_us\"]");
		double mx = tr_json_num(r.cout, "d[\"results\"][0][\"t_max_us\"]");

		T_CHECK(mn > 0 && mn <= med && med <= p99 && p99 <= mx, "latency figures out of "
			"order: min %g median %g p99 %g max %g", mn, med, p99, mx);
		printf("write --lat 2 B: median %.1f us, p99 %.1f us\n", med, p99);
	}
	tr_pair_free(&r);
	if (pair("send", ARGS("--lat", "-n", "200", "-s", "3000", "--odp", "implicit", "--cold",
			      "--verify", "--json"), "send --lat cold", 200, true, &r))
		T_CHECK(pc_odp(&r, "remote", "page_faults") > 0, "send --lat --cold: no faults");
	tr_pair_free(&r);
}

static void test_shapes(void)
{
	struct tr_pair r;

	pair("write", ARGS("-q", "4", "-t", "16", "-n", "400", "-s", "3000", "--verify",
			   "--json"), "write -q 4", 400, true, &r);
	tr_pair_free(&r);
	pair("send", ARGS("-q", "3", "-n", "300", "-s", "5000", "--verify", "--json", "--cold",
			  "--odp", "explicit"), "send -q 3 cold", 300, true, &r);
	tr_pair_free(&r);
	if (pair("write", ARGS("-D", "1", "--json"), "write -D 1", 0, false, &r))
		T_CHECK(tr_json_num(r.cout, "d[\"results\"][0][\"seconds\"]") > 0.5 &&
			tr_json_num(r.cout, "d[\"results\"][0][\"iterations\"]") > 10,
			"write -D 1: seconds %s", r.cout);
	tr_pair_free(&r);
	pair("send", ARGS("-D", "0.5", "--json", "--verify"), "send -D 0.5", 0, true, &r);
	tr_pair_free(&r);
	if (pair("write", ARGS("-a", "-n", "4", "--json", "--verify"), "write -a", 4, true, &r))
		T_EQ(tr_json_num(r.cout, "len(d[\"results\"])"), 23, "-a: 2 B .. 8 MiB");
	tr_pair_free(&r);
	pair("write", ARGS("--mtu", "1024", "-s", "10000", "-n", "100", "--verify", "--json"),
	     "write --mtu 1024", 100, true, &r);
	tr_pair_free(&r);
	pair("write", ARGS("--inline", "64", "-s", "64", "-n", "300", "--verify", "--json"),
	     "write --inline 64", 300, true, &r);
	tr_pair_free(&r);
	pair("flush", ARGS("-n", "200", "--odp", "implicit", "--cold", "--json"), "flush cold", 200,
	     false, &r);
	tr_pair_free(&r);
	pair("read", ARGS("-a", "-n", "3", "--lat", "--json", "--verify", "--odp", "explicit"),
	     "read -a --lat", 3, true, &r);
	tr_pair_free(&r);
}

static void test_odp_knobs(void)
{
	struct tr_pair r;

	/* --churn: every message from a buffer the NIC has never seen */
	if (pair("write", ARGS("--churn", "--odp", "explicit", "-n", "200", "-s", "4096",
			       "--verify", "--json"), "write --churn explicit", 200, true, &r))
		T_CHECK(pc_odp(&r, "local", "page_faults") >= 100, "--churn explicit: %.0f "
			"requester page faults for 200 fresh buffers",
			pc_odp(&r, "local", "page_faults"));
	tr_pair_free(&r);
	if (pair("read", ARGS("--churn", "--odp", "implicit", "-n", "200", "-s", "4096",
			      "--verify", "--json"), "read --churn implicit", 200, true, &r))
		T_CHECK(pc_odp(&r, "local", "page_invalidations") > 0, "--churn implicit: freed "
			"buffers must invalidate the NIC's mappings");
	tr_pair_free(&r);
	pair("write", ARGS("--churn", "-n", "100", "--verify", "--json", "-t", "8"),
	     "write --churn pinned", 100, true, &r);
	tr_pair_free(&r);
	/* --prefetch: the responder's memory is mapped before the first message */
	if (pair("write", ARGS("--prefetch", "--odp", "explicit", "-n", "300", "--json"),
		 "write --prefetch", 300, false, &r)) {
		T_CHECK(pc_odp(&r, "remote", "page_prefetch") > 0, "--prefetch: no prefetch");
		T_EQ(pc_odp(&r, "remote", "page_faults"), 0, "--prefetch: responder page faults");
	}
	tr_pair_free(&r);
	/* --evict-rate: warm memory is dropped under the run, so it faults again */
	if (pair("write", ARGS("--evict-rate", "2000", "--odp", "implicit", "-D", "1", "--json",
			       "--fault-policy", "stall", "-s", "4096"), "write --evict-rate", 0,
		 false, &r))
		T_CHECK(pc_odp(&r, "remote", "evictions") > 0, "--evict-rate: no evictions");
	tr_pair_free(&r);
}

/* Does the file start with `magic`? */
static bool starts_with(const char *path, const char *magic)
{
	char buf[64] = "";
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return strstr(buf, magic) != NULL;
}

static void test_histogram(void)
{
	char svg[200], png[200], bw[200];
	struct tr_pair r;

	snprintf(svg, sizeof(svg), "%s/lat.svg", env.rundir);
	snprintf(png, sizeof(png), "%s/lat.png", env.rundir);
	snprintf(bw, sizeof(bw), "%s/faults.svg", env.rundir);
	pair("write", ARGS("--lat", "-n", "300", "--odp", "implicit", "--cold", "--histogram",
			   svg, "--json"), "write --lat --histogram svg", 300, false, &r);
	T_CHECK(starts_with(svg, "<svg") || starts_with(svg, "<?xml"), "%s is not an SVG", svg);
	tr_pair_free(&r);
	pair("read", ARGS("--lat", "-n", "100", "--histogram", png, "--json"),
	     "read --lat --histogram png", 100, false, &r);
	T_CHECK(starts_with(png, "\x89PNG"), "%s is not a PNG", png);
	tr_pair_free(&r);
	pair("write", ARGS("-n", "200", "--odp", "explicit", "--cold", "--histogram", bw,
			   "--json"), "write --histogram (fault latency)", 200, false, &r);
	T_CHECK(starts_with(bw, "<svg") || starts_with(bw, "<?xml"), "%s is not an SVG", bw);
	tr_pair_free(&r);
}

int main(void)
{
	if (system("python3 -c 'import json' >/dev/null 2>&1")) {
		printf("tools-perf-features: SKIP (python3 checks the JSON)\n");
		return T_SKIP;
	}
	h_up(&env, NULL, NULL, 600);
	test_defaults();
	test_json_vs_ctl();
	test_latency();
	test_shapes();
	test_odp_knobs();
	test_histogram();
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	T_EQ(h_down(&env), 0, "daemons that did not stop cleanly");
	return t_done("tools-perf-features");
}
