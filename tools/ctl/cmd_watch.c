/* SPDX-License-Identifier: MIT */
/* odpemu-ctl watch — device counters as rates, one line per device per interval (like
 * `rdma stat` in a loop, or vmstat): traffic, page faults, invalidations, prefetches,
 * RNR NAKs, retransmits, and the interval's median fault latency. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "ctrs.h"
#include "json.h"
#include "tooldev.h"

#define MAX_DEVS 16

/* The columns: counter name, heading. */
static const struct {
	const char *name, *head;
} cols[] = {
	{ "pkts_received", "rx_pkt/s" }, { "pkts_sent", "tx_pkt/s" },
	{ "udp_rx_bytes", "rx_MB/s" }, { "udp_tx_bytes", "tx_MB/s" },
	{ "page_faults", "faults/s" }, { "page_fault_pages", "fpages/s" },
	{ "page_invalidations", "inval/s" }, { "page_prefetch", "prefet/s" },
	{ "rnr_naks_sent", "rnr_tx/s" }, { "rnr_naks_received", "rnr_rx/s" },
	{ "retransmits", "retx/s" },
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

struct watched {
	struct odpemu_context *ctx;
	struct ctrs last;
};

struct watch_opts {
	const char *dev;
	long count;		/* 0: until interrupted */
	double interval;
	bool json;
};

static double rate(const struct ctrs *d, const char *name, double secs)
{
	double v = (double)ctrs_get(d, name) / secs;

	return strstr(name, "bytes") ? v / 1e6 : v;
}

static void header(void)
{
	printf("%-8s %-10s", "time_s", "device");
	for (size_t i = 0; i < NCOLS; i++)
		printf(" %9s", cols[i].head);
	printf(" %9s\n", "p50_us");
}

static void line(double t, const char *name, const struct ctrs *d, double secs, struct jw *w)
{
	uint64_t p50 = ctrs_hist_pct(d, 50);

	if (w) {
		jw_obj(w, NULL);
		jw_dbl(w, "time_s", t);
		jw_str(w, "device", name);
		jw_dbl(w, "interval_s", secs);
		jw_obj(w, "per_second");
		for (size_t i = 0; i < NCOLS; i++)
			jw_dbl(w, cols[i].name, (double)ctrs_get(d, cols[i].name) / secs);
		jw_end(w);
		jw_u64(w, "fault_latency_us_p50", p50);
		jw_end(w);
		return;
	}
	printf("%-8.1f %-10s", t, name);
	for (size_t i = 0; i < NCOLS; i++)
		printf(" %9.0f", rate(d, cols[i].name, secs));
	if (p50)
		printf(" %9llu\n", (unsigned long long)p50);
	else
		printf(" %9s\n", "-");
}

static int open_all(const char *dev, struct watched *w, int *n)
{
	struct odpemu_device **list;

	*n = 0;
	if (dev) {
		if (!(w[0].ctx = tool_open(CTL_PROG, dev)))
			return 1;
		*n = 1;
		return 0;
	}
	if (!(list = tool_devices(CTL_PROG, NULL)))
		return 1;
	for (int i = 0; list[i] && *n < MAX_DEVS; i++)
		if ((w[*n].ctx = odpemu_open_device(list[i])))
			(*n)++;
	odpemu_free_device_list(list);
	return *n ? 0 : 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
	struct timespec ts = { (time_t)t, (long)((t - (double)(time_t)t) * 1e9) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int loop(struct watched *w, int n, const struct watch_opts *o)
{
	static struct ctrs cur, d;
	double start = now_s(), prev = start;
	struct jw jw;

	jw_init(&jw, stdout);
	for (int i = 0; i < n; i++)
		if (ctrs_query(w[i].ctx, ODPEMU_COUNTERS_DEVICE, 0, &w[i].last))
			return fprintf(stderr, "%s watch: cannot read counters: %s\n", CTL_PROG,
				       strerror(errno)), 1;
	if (!o->json)
		header();
	for (long k = 1; !o->count || k <= o->count; k++) {
		double t;

		sleep_until(start + (double)k * o->interval);
		t = now_s();
		for (int i = 0; i < n; i++) {
			if (ctrs_query(w[i].ctx, ODPEMU_COUNTERS_DEVICE, 0, &cur))
				return fprintf(stderr, "%s watch: %s: %s (daemon gone?)\n", CTL_PROG,
					       odpemu_get_device_name(w[i].ctx->device),
					       strerror(errno)), 1;
			ctrs_delta(&cur, &w[i].last, &d);
			line(t - start, odpemu_get_device_name(w[i].ctx->device), &d, t - prev,
			     o->json ? &jw : NULL);
			w[i].last = cur;
		}
		prev = t;
		fflush(stdout);
	}
	return 0;
}

static int usage(void)
{
	printf("usage: %s watch [-d DEV] [-n COUNT] [-i SECONDS] [--json]\n"
	       "  every interval (default 1 s), one line per device (or DEV): packets and bytes,\n"
	       "  page faults, fault pages, invalidations, prefetches, RNR NAKs sent/received,\n"
	       "  retransmits per second, and the interval's median fault latency (bucket bound).\n"
	       "  -n stops after COUNT intervals; --json prints one object per line.\n", CTL_PROG);
	return 0;
}

static int parse(int argc, char **argv, struct watch_opts *o)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' }, { "count", required_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'i' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	char *end;
	int c;

	*o = (struct watch_opts){ .interval = 1.0 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:n:i:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->dev = optarg; break;
		case 'j': o->json = true; break;
		case 'n':
			o->count = strtol(optarg, &end, 10);
			if (*end || o->count <= 0)
				return ctl_usage_err("watch", "-n '%s': want a count > 0", optarg);
			break;
		case 'i':
			o->interval = strtod(optarg, &end);
			if (*end || !(o->interval >= 0.01 && o->interval <= 3600))
				return ctl_usage_err("watch", "-i '%s': want 0.01..3600 seconds", optarg);
			break;
		case 'h': return usage(), -1;
		default: return ctl_usage_err("watch", "bad option");
		}
	}
	if (optind < argc)
		return ctl_usage_err("watch", "unexpected argument '%s'", argv[optind]);
	return 0;
}

int ctl_watch(int argc, char **argv)
{
	static struct watched w[MAX_DEVS];
	struct watch_opts o;
	int n, rc = parse(argc, argv, &o);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (open_all(o.dev, w, &n))
		return 1;
	rc = loop(w, n, &o);
	for (int i = 0; i < n; i++)
		odpemu_close_device(w[i].ctx);
	return rc;
}
