/* SPDX-License-Identifier: MIT */
/* odpemu-ctl — the command table and its help. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *what;
};

static const struct command commands[] = {
	{ "list", ctl_list, "the running devices" },
	{ "devinfo", ctl_devinfo, "[-d DEV] [-v]: capabilities, ODP caps, port, GIDs" },
	{ "stat", ctl_stat, "[-d DEV] [dev|qp|mr] [--json]: counters (page_faults, ...)" },
	{ "inject", ctl_inject, "[-d DEV] [KNOB VALUE]...: change fault injection at run time,\n"
	  "           or list it (fault-delay-us, fault-fail-rate, evict-rate, fault-policy,\n"
	  "           wire-loss, wire-dup, wire-reorder, wire-delay-us, wire-corrupt,\n"
	  "           wire-match, wire-peer)" },
	{ "watch", ctl_watch, "[-d DEV] [-n COUNT] [-i SECONDS] [--json]: counters per second" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: %s COMMAND [options]\n\n", CTL_PROG);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].what);
	fprintf(f, "\nDevices are the odpemud daemons whose sockets are in $ODPEMU_RUNDIR "
		"(see odpemud --help).\nWithout -d, devinfo, stat and watch show every device; "
		"inject takes the device of\nthis host (the one whose address is local here), "
		"else the first.\n");
}

int ctl_usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s %s: ", CTL_PROG, cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see %s %s --help)\n", CTL_PROG, cmd);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s' (commands: list, devinfo, stat, inject, "
		"watch; see %s --help)\n", CTL_PROG, argv[1], CTL_PROG);
	return 2;
}
