/* SPDX-License-Identifier: MIT */
/* tloop — see tloop.h. */
#include "tloop.h"

#include <stdio.h>
#include <stdlib.h>

#include "check.h"

enum emu_loop_kind t_loop_kind(char *why, size_t len)
{
	struct emu_check_report rep;
	char err[256] = "";

	snprintf(why, len, "io_uring");
	if (emu_check_run(&rep, getenv("ODPEMU_MASK"), false, err, sizeof(err)))
		return EMU_LOOP_EPOLL;	/* a bad mask: the daemon would refuse it too */
	return emu_check_loop_uring(&rep, why, len) ? EMU_LOOP_URING : EMU_LOOP_EPOLL;
}
