/* SPDX-License-Identifier: MIT */
/*
 * rundir — where the control sockets live, the one rule lib/, emu/ and tools/ share
 * (tools/odpemu-run.in spells the same rule in shell): $ODPEMU_RUNDIR, else /run/odpemu
 * for root, else $XDG_RUNTIME_DIR/odpemu, else /tmp/odpemu-UID.
 */
#ifndef ODPEMU_IPC_RUNDIR_H
#define ODPEMU_IPC_RUNDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void ipc_rundir(char *buf, size_t len)
{
	const char *env = getenv("ODPEMU_RUNDIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (env && *env)
		snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		snprintf(buf, len, "/run/odpemu");
	else if (xdg && *xdg)
		snprintf(buf, len, "%s/odpemu", xdg);
	else
		snprintf(buf, len, "/tmp/odpemu-%u", (unsigned)geteuid());
}

#endif
