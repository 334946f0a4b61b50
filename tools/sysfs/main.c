/* SPDX-License-Identifier: MIT */
/*
 * odpemu-sysfs CMD [ARGS...] — odpemu-run's helper for --sysfs (not meant to be run on its
 * own: odpemu-run gives it the drop-in libibverbs). It enters private namespaces, writes
 * the devices' /sys/class/infiniband view, makes it read-only and execs CMD there; when
 * any step fails it says why and runs nothing, since CMD without the view would quietly
 * test something else.
 *
 * C and not util-linux's unshare(1): the view is written from inside the namespace by a
 * verbs client anyway, the user namespace maps the caller to itself (unshare -r maps to
 * root), and the refusal is explained from the errno and the host's knobs (ns.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sysfs.h"

#define EXIT_NO_VIEW	2	/* odpemu-run's status for "could not run CMD as asked" */

int main(int argc, char **argv)
{
	int first = 1;

	if (argc > 1 && !strcmp(argv[1], "--"))
		first = 2;
	if (first >= argc) {
		fprintf(stderr, "usage: odpemu-sysfs [--] CMD [ARGS...] (run by odpemu-run "
			"--sysfs)\n");
		return EXIT_NO_VIEW;
	}
	if (sysfs_ns_enter() || sysfs_view_write("/sys/class/infiniband") || sysfs_ns_seal())
		return EXIT_NO_VIEW;
	execvp(argv[first], argv + first);
	fprintf(stderr, "%s: cannot run %s: %s\n", SYSFS_PROG, argv[first], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
