/* SPDX-License-Identifier: MIT */
/* odpemu-ctl inject — change a daemon's fault injection while it runs, with the words and
 * values of odpemud's own flags (odpemu_set_inject), or list the knobs' current values
 * (odpemu_get_inject). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "tooldev.h"

#define MAX_KNOBS 16

/* Every knob a daemon has, in the order they are listed; the daemon checks the values. */
static const struct {
	const char *key, *value, *what;
} known[] = {
	{ "fault-delay-us", "SPEC", "N | uniform:A-B | exp:MEAN | normal:MEAN,SD (us)" },
	{ "fault-fail-rate", "P", "probability 0..1 that a page fault fails" },
	{ "evict-rate", "N", "drop N random present ODP pages per second" },
	{ "fault-policy", "P", "rnr or stall: the default of QPs created from now on" },
	{ "wire-loss", "[DIR:]P[@ON/PERIOD]", "lose packets (DIR tx, rx or both; default tx)" },
	{ "wire-dup", "[DIR:]P[@ON/PERIOD]", "send or deliver packets twice" },
	{ "wire-reorder", "[DIR:]P[:DEPTH][@ON/PERIOD]", "let DEPTH later packets pass one" },
	{ "wire-delay-us", "[DIR:]SPEC[@ON/PERIOD]", "delay packets, SPEC as fault-delay-us" },
	{ "wire-corrupt", "[DIR:]P[@ON/PERIOD]", "flip a bit: the receiver drops it (ICRC)" },
	{ "wire-match", "CLASS,...|all", "the wire knobs act on these opcode classes only" },
	{ "wire-peer", "ADDR|any", "the wire knobs act on this peer's packets only" },
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

struct knob {
	const char *key, *value;
};

static int usage(void)
{
	printf("usage: %s inject [-d DEV] [KNOB VALUE | --KNOB VALUE]...\n", CTL_PROG);
	for (size_t i = 0; i < NKNOWN; i++)
		printf("  %-16s %-28s %s\n", known[i].key, known[i].value, known[i].what);
	printf("The knobs apply at once, in the order given; without any, the current values\n"
	       "are listed. odpemud --help and docs/emu.md explain them.\n");
	return 0;
}

static bool is_knob(const char *key)
{
	for (size_t i = 0; i < NKNOWN; i++)
		if (!strcmp(key, known[i].key))
			return true;
	return false;
}

static int apply(struct odpemu_context *ctx, const struct knob *k)
{
	const char *name = odpemu_get_device_name(ctx->device);
	int rc = odpemu_set_inject(ctx, k->key, k->value);

	if (rc) {
		const char *why = odpemu_last_error(ctx);

		fprintf(stderr, "%s inject: %s: --%s %s refused: %s\n", CTL_PROG, name, k->key,
			k->value, *why ? why : strerror(rc));
		return 1;
	}
	printf("%s: %s = %s\n", name, k->key, k->value);
	return 0;
}

/* Every knob's current value; a knob an older daemon does not know is said so. */
static int list(struct odpemu_context *ctx)
{
	const char *name = odpemu_get_device_name(ctx->device);
	char v[128];

	for (size_t i = 0; i < NKNOWN; i++) {
		int rc = odpemu_get_inject(ctx, known[i].key, v, sizeof(v));

		if (rc == EINVAL) {
			printf("%s: %s (not known to this daemon)\n", name, known[i].key);
		} else if (rc) {
			fprintf(stderr, "%s inject: %s: cannot read %s: %s\n", CTL_PROG, name,
				known[i].key, strerror(rc));
			return 1;
		} else {
			printf("%s: %s = %s\n", name, known[i].key, v);
		}
	}
	return 0;
}

/* KNOB VALUE pairs after the options ("wire-loss 0.02"; "--wire-loss" came as an option). */
static int positional(int argc, char **argv, struct knob *knobs, int *n)
{
	for (int i = optind; i < argc; i += 2) {
		const char *key = argv[i] + (strncmp(argv[i], "--", 2) ? 0 : 2);

		if (!is_knob(key))
			return ctl_usage_err("inject", "unknown knob '%s'", argv[i]);
		if (i + 1 == argc)
			return ctl_usage_err("inject", "%s: no value", key);
		if (*n == MAX_KNOBS)
			return ctl_usage_err("inject", "too many knobs");
		knobs[(*n)++] = (struct knob){ key, argv[i + 1] };
	}
	return 0;
}

int ctl_inject(int argc, char **argv)
{
	struct option opts[NKNOWN + 3] = {
		{ "device", required_argument, NULL, 'd' }, { "help", no_argument, NULL, 'h' } };
	struct knob knobs[MAX_KNOBS];
	const char *dev = NULL;
	struct odpemu_context *ctx;
	int c, n = 0, rc = 0, idx = 0;

	for (size_t i = 0; i < NKNOWN; i++)	/* --KNOB VALUE: option value 'K' */
		opts[2 + i] = (struct option){ known[i].key, required_argument, NULL, 'K' };
	optind = 1;
	while ((c = getopt_long(argc, argv, "+d:h", opts, &idx)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'h': return usage();
		case 'K':
			if (n == MAX_KNOBS)
				return ctl_usage_err("inject", "too many knobs");
			knobs[n++] = (struct knob){ opts[idx].name, optarg };
			break;
		default: return ctl_usage_err("inject", "bad option");
		}
	}
	if ((rc = positional(argc, argv, knobs, &n)))
		return rc;
	if (!(ctx = tool_open(CTL_PROG, dev)))
		return 1;
	if (!n)
		rc = list(ctx);
	for (int i = 0; i < n && !rc; i++)
		rc = apply(ctx, &knobs[i]);
	odpemu_close_device(ctx);
	return rc;
}
