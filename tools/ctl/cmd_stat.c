/* SPDX-License-Identifier: MIT */
/* odpemu-ctl stat — a device's counters (as `rdma stat show`), or those of every QP or MR
 * on it (as `rdma stat show qp|mr`; --pid: one process's, --limit: the first N), or its
 * client processes (stat clients: stat_clients.c), one per line or as JSON:
 * {"devices": [{"name": "odp0", "personality": "cx5", "fault_policy": "rnr",
 * "counters": {"page_faults": 12, ...}}]} (the device it acts as, odpemud --personality,
 * and its default fault policy), with "qps" or
 * "mrs": [{"qp_num"|"lkey": N, "pid": P, "counters": {...}}] for stat qp|mr, and
 * "truncated": true when --limit left some out. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctrs.h"
#include "json.h"
#include "tooldev.h"

static void print_text(const char *name, const struct ctrs *s)
{
	uint64_t p50 = ctrs_hist_pct_of(s, CTRS_NS_HIST_PREFIX, 50);

	printf("dev %s\n", name);
	for (int i = 0; i < s->n; i++)
		printf("  %-32s %" PRIu64 "\n", s->c[i].name, s->c[i].value);
	if (p50)	/* the percentiles of every fault since the daemon started */
		printf("  fault latency since start: p50 < %.2f us, p99 < %.2f us, p99.9 < %.2f us "
		       "(log-linear buckets: within 25 %%)\n", (double)p50 / 1e3,
		       (double)ctrs_hist_pct_of(s, CTRS_NS_HIST_PREFIX, 99) / 1e3,
		       (double)ctrs_hist_pct_of(s, CTRS_NS_HIST_PREFIX, 99.9) / 1e3);
}

static void print_json(struct jw *w, const char *name, const struct odpemu_port_attr *pa,
		       const struct ctrs *s)
{
	jw_obj(w, NULL);
	jw_str(w, "name", name);
	jw_str(w, "personality", pa->personality);
	/* spelt as odpemud --fault-policy and the fault-policy knob spell it */
	jw_str(w, "fault_policy", pa->fault_policy == ODPEMU_FAULT_POLICY_RNR ? "rnr" : "stall");
	jw_obj(w, "counters");
	for (int i = 0; i < s->n; i++)
		jw_u64(w, s->c[i].name, s->c[i].value);
	jw_end(w);
	jw_end(w);
}

/* One QP or MR of any process (listed as "qp PID" / "mr PID" = QP number / lkey). */
static int object(struct odpemu_context *ctx, const struct odpemu_counter *o, bool qp,
		  struct jw *w)
{
	static struct ctrs s;
	const char *key = qp ? "qp_num" : "lkey";

	if (ctrs_query(ctx, qp ? ODPEMU_COUNTERS_ANY_QP : ODPEMU_COUNTERS_ANY_MR,
		       (uint32_t)o->value, &s))
		return errno == ENOENT ? 0 : 1;		/* gone since the list was made */
	if (w) {
		jw_obj(w, NULL);
		jw_u64(w, key, o->value);
		jw_u64(w, "pid", strtoull(o->name + 3, NULL, 10));
		jw_obj(w, "counters");
		for (int i = 0; i < s.n; i++)
			jw_u64(w, s.c[i].name, s.c[i].value);
		jw_end(w);
		jw_end(w);
		return 0;
	}
	printf("  %s %#" PRIx64 " (pid %s)\n", qp ? "qp" : "mr", o->value, o->name + 3);
	for (int i = 0; i < s.n; i++)
		printf("    %-30s %" PRIu64 "\n", s.c[i].name, s.c[i].value);
	return 0;
}

/* Which objects stat qp|mr shows. */
struct filter {
	uint32_t pid;		/* 0: every process */
	int limit;		/* 0: all */
};

/* The list of QPs (MRs) to show: at most limit + 1 (to tell that more exist), else all the
 * device has (read from its counters, with room for those made meanwhile). */
static int list_objects(struct odpemu_context *ctx, bool qp, const struct filter *f,
			struct odpemu_counter **out)
{
	static struct ctrs s;
	int max = f->limit ? f->limit + 1 : 1024;

	if (!f->limit && !ctrs_query(ctx, ODPEMU_COUNTERS_DEVICE, 0, &s))
		max += (int)ctrs_get(&s, qp ? "qps" : "mrs");
	if (!(*out = calloc((size_t)max, sizeof(**out))))
		return -1;
	return odpemu_query_counters(ctx, qp ? ODPEMU_COUNTERS_QPS : ODPEMU_COUNTERS_MRS, f->pid,
				     *out, max);
}

/* Every QP or MR of the device (or of one process), with its counters. */
static int objects(struct odpemu_context *ctx, const char *name, bool qp,
		   const struct filter *f, struct jw *w)
{
	struct odpemu_counter *list = NULL;
	int n = list_objects(ctx, qp, f, &list), shown, rc = 0;

	if (n < 0) {
		fprintf(stderr, "%s: cannot list the objects of %s: %s\n", CTL_PROG, name,
			strerror(errno));
		free(list);
		return 1;
	}
	shown = f->limit && n > f->limit ? f->limit : n;
	if (w) {
		jw_obj(w, NULL);
		jw_str(w, "name", name);
		jw_arr(w, qp ? "qps" : "mrs");
	} else {
		printf("dev %s\n", name);
	}
	for (int i = 0; i < shown; i++)
		rc |= object(ctx, &list[i], qp, w);
	if (w) {
		jw_end(w);
		if (shown < n)
			jw_bool(w, "truncated", true);
		jw_end(w);
	} else if (shown < n) {
		printf("  ... more %s: %d shown (--limit 0 shows all, --pid one process's)\n",
		       qp ? "QPs" : "MRs", shown);
	}
	free(list);
	return rc;
}

/* One device's counters (scope dev, qp or mr), printed; 0 or 1. */
static int one(struct odpemu_context *ctx, const char *scope, const struct filter *f,
	       struct jw *w)
{
	static struct ctrs s;
	const char *name = odpemu_get_device_name(ctx->device);
	struct odpemu_port_attr pa;

	if (!strcmp(scope, "clients"))
		return ctl_stat_clients(ctx, name, w);
	if (strcmp(scope, "dev"))
		return objects(ctx, name, !strcmp(scope, "qp"), f, w);
	if (ctrs_query(ctx, ODPEMU_COUNTERS_DEVICE, 0, &s) || odpemu_query_port(ctx, 1, &pa)) {
		fprintf(stderr, "%s: cannot read the counters of %s: %s\n", CTL_PROG, name,
			strerror(errno));
		return 1;
	}
	if (w)
		print_json(w, name, &pa, &s);
	else
		print_text(name, &s);
	return 0;
}

static int each_device(const char *dev, const char *scope, const struct filter *f,
		       struct jw *w)
{
	struct odpemu_device **list;
	struct odpemu_context *ctx;
	int rc = 0;

	if (dev) {
		if (!(ctx = tool_open(CTL_PROG, dev)))
			return 1;
		rc = one(ctx, scope, f, w);
		odpemu_close_device(ctx);
		return rc;
	}
	if (!(list = tool_devices(CTL_PROG, NULL)))
		return 1;
	for (int i = 0; list[i]; i++) {
		if (!(ctx = odpemu_open_device(list[i]))) {
			char why[512];

			fprintf(stderr, "%s: cannot open %s: %s\n", CTL_PROG,
				odpemu_get_device_name(list[i]),
				tool_open_why(list[i], errno, why, sizeof(why)));
			rc = 1;
			continue;
		}
		rc |= one(ctx, scope, f, w);
		odpemu_close_device(ctx);
	}
	odpemu_free_device_list(list);
	return rc;
}

static int usage(void)
{
	printf("usage: %s stat [-d DEV] [dev|qp|mr|clients] [--pid PID] [--limit N] [--json]\n"
	       "  dev (default): the counters of every device (or DEV): packets, page_faults,\n"
	       "  page_fault_pages, page_invalidations, page_prefetch, rnr_naks_sent, ...,\n"
	       "  fault_latency_us_lt_N (faults answered in under N us); docs/emu.md lists them.\n"
	       "  The page and QP counters add up every MR and QP the device has had.\n"
	       "  qp, mr: every QP (MR) of every process on the device, with its counters;\n"
	       "  --pid PID: those of one process; --limit N: the first N (a line, or\n"
	       "  \"truncated\": true, says more exist). Listing costs the daemon what it shows.\n"
	       "  clients: every process with the device open and what it gave the daemon at\n"
	       "  open: its userfaultfd's features (the notifier), whether the daemon can read\n"
	       "  its memory (Yama, ptrace), its seccomp listener.\n",
	       CTL_PROG);
	return 0;
}

int ctl_stat(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' }, { "json", no_argument, NULL, 'j' },
		{ "pid", required_argument, NULL, 'p' }, { "limit", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	const char *dev = NULL, *scope = "dev";
	struct filter f = { 0, 0 };
	bool json = false;
	struct jw w;
	char *end;
	long v;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:jp:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'j': json = true; break;
		case 'p':
		case 'n':
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 0 || v > (c == 'p' ? 4194304 : 1 << 24))
				return ctl_usage_err("stat", "--%s wants a number, not '%s'",
						     c == 'p' ? "pid" : "limit", optarg);
			if (c == 'p')
				f.pid = (uint32_t)v;
			else
				f.limit = (int)v;
			break;
		case 'h': return usage();
		default: return ctl_usage_err("stat", "bad option");
		}
	}
	if (optind < argc)
		scope = argv[optind++];
	if (optind < argc)
		return ctl_usage_err("stat", "unexpected argument '%s'", argv[optind]);
	if (strcmp(scope, "dev") && strcmp(scope, "qp") && strcmp(scope, "mr") &&
	    strcmp(scope, "clients"))
		return ctl_usage_err("stat", "unknown object '%s' (dev, qp, mr or clients)", scope);
	if ((!strcmp(scope, "dev") || !strcmp(scope, "clients")) && (f.pid || f.limit))
		return ctl_usage_err("stat", "--pid and --limit are for stat qp and stat mr");
	if (json) {
		jw_init(&w, stdout);
		jw_obj(&w, NULL);
		jw_arr(&w, "devices");
	}
	rc = each_device(dev, scope, &f, json ? &w : NULL);
	if (json) {
		jw_end(&w);
		jw_end(&w);
	}
	return rc;
}
