/* SPDX-License-Identifier: MIT */
/* odpemu-ctl inject — change a daemon's fault injection while it runs, with the words and
 * values of odpemud's own flags (odpemu_set_inject). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "tooldev.h"

#define MAX_KNOBS 8

struct knob {
	const char *key, *value;
};

static int usage(void)
{
	printf("usage: %s inject [-d DEV] KNOB VALUE...\n"
	       "  --fault-delay-us SPEC   N | uniform:A-B | exp:MEAN | normal:MEAN,SD (us)\n"
	       "  --fault-fail-rate P     probability 0..1 that a page fault fails\n"
	       "  --evict-rate N          drop N random present ODP pages per second\n"
	       "  --fault-policy P        rnr or stall: the default of QPs created from now on\n"
	       "The knobs apply at once, in the order given; odpemud --help explains them.\n",
	       CTL_PROG);
	return 0;
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

int ctl_inject(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "fault-delay-us", required_argument, NULL, 'D' },
		{ "fault-fail-rate", required_argument, NULL, 'F' },
		{ "evict-rate", required_argument, NULL, 'E' },
		{ "fault-policy", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	struct knob knobs[MAX_KNOBS];
	const char *dev = NULL;
	struct odpemu_context *ctx;
	int c, n = 0, rc = 0, idx;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:h", opts, &idx)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'h': return usage();
		case 'D': case 'F': case 'E': case 'P':
			if (n == MAX_KNOBS)
				return ctl_usage_err("inject", "too many knobs");
			knobs[n++] = (struct knob){ opts[idx].name, optarg };
			break;
		default: return ctl_usage_err("inject", "bad option");
		}
	}
	if (optind < argc)
		return ctl_usage_err("inject", "unexpected argument '%s'", argv[optind]);
	if (!n)
		return ctl_usage_err("inject", "nothing to change: give --fault-delay-us, "
				     "--fault-fail-rate, --evict-rate or --fault-policy");
	if (!(ctx = tool_open(CTL_PROG, dev)))
		return 1;
	for (int i = 0; i < n && !rc; i++)
		rc = apply(ctx, &knobs[i]);
	odpemu_close_device(ctx);
	return rc;
}
