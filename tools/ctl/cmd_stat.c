/* SPDX-License-Identifier: MIT */
/* odpemu-ctl stat — a device's counters (as `rdma stat show`), one per line or as JSON:
 * {"devices": [{"name": "odp0", "counters": {"page_faults": 12, ...}}]}. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "ctrs.h"
#include "json.h"
#include "tooldev.h"

static void print_text(const char *name, const struct ctrs *s)
{
	printf("dev %s\n", name);
	for (int i = 0; i < s->n; i++)
		printf("  %-32s %" PRIu64 "\n", s->c[i].name, s->c[i].value);
}

static void print_json(struct jw *w, const char *name, const struct ctrs *s)
{
	jw_obj(w, NULL);
	jw_str(w, "name", name);
	jw_obj(w, "counters");
	for (int i = 0; i < s->n; i++)
		jw_u64(w, s->c[i].name, s->c[i].value);
	jw_end(w);
	jw_end(w);
}

/* One device's counters, printed; 0 or 1. */
static int one(struct odpemu_context *ctx, struct jw *w)
{
	static struct ctrs s;
	const char *name = odpemu_get_device_name(ctx->device);

	if (ctrs_query(ctx, ODPEMU_COUNTERS_DEVICE, 0, &s)) {
		fprintf(stderr, "%s: cannot read the counters of %s: %s\n", CTL_PROG, name,
			strerror(errno));
		return 1;
	}
	if (w)
		print_json(w, name, &s);
	else
		print_text(name, &s);
	return 0;
}

static int each_device(const char *dev, struct jw *w)
{
	struct odpemu_device **list;
	struct odpemu_context *ctx;
	int rc = 0;

	if (dev) {
		if (!(ctx = tool_open(CTL_PROG, dev)))
			return 1;
		rc = one(ctx, w);
		odpemu_close_device(ctx);
		return rc;
	}
	if (!(list = tool_devices(CTL_PROG, NULL)))
		return 1;
	for (int i = 0; list[i]; i++) {
		if (!(ctx = odpemu_open_device(list[i]))) {
			fprintf(stderr, "%s: cannot open %s: %s\n", CTL_PROG,
				odpemu_get_device_name(list[i]), strerror(errno));
			rc = 1;
			continue;
		}
		rc |= one(ctx, w);
		odpemu_close_device(ctx);
	}
	odpemu_free_device_list(list);
	return rc;
}

static int usage(void)
{
	printf("usage: %s stat [-d DEV] [dev|qp|mr] [--json]\n"
	       "  dev (default): the counters of every device (or DEV): packets, page_faults,\n"
	       "  page_fault_pages, page_invalidations, page_prefetch, rnr_naks_sent, ...,\n"
	       "  fault_latency_us_lt_N (faults answered in under N us); docs/emu.md lists them.\n"
	       "  The page and QP counters are sums over the MRs and QPs alive now.\n", CTL_PROG);
	return 0;
}

int ctl_stat(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	const char *dev = NULL, *scope = "dev";
	bool json = false;
	struct jw w;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'j': json = true; break;
		case 'h': return usage();
		default: return ctl_usage_err("stat", "bad option");
		}
	}
	if (optind < argc)
		scope = argv[optind++];
	if (optind < argc)
		return ctl_usage_err("stat", "unexpected argument '%s'", argv[optind]);
	if (!strcmp(scope, "qp") || !strcmp(scope, "mr")) {
		fprintf(stderr, "%s stat %s: not yet: needs a cross-session query (the daemon "
			"shows %s counters only to the process that owns the %s); `%s stat` shows "
			"the device's sums over them\n", CTL_PROG, scope, scope, scope, CTL_PROG);
		return 1;
	}
	if (strcmp(scope, "dev"))
		return ctl_usage_err("stat", "unknown object '%s' (dev, qp or mr)", scope);
	if (json) {
		jw_init(&w, stdout);
		jw_obj(&w, NULL);
		jw_arr(&w, "devices");
	}
	rc = each_device(dev, json ? &w : NULL);
	if (json) {
		jw_end(&w);
		jw_end(&w);
	}
	return rc;
}
