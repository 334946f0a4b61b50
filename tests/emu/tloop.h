/* SPDX-License-Identifier: MIT */
/* Which event loop a test of emu/io can run here: the one odpemud would pick, from the host
 * report (emu/check.h, ODPEMU_MASK included). A test of the io_uring kind where io_uring is
 * refused (a container's seccomp profile, RHEL 9) runs the epoll kind and says why. */
#ifndef ODPEMU_TESTS_EMU_TLOOP_H
#define ODPEMU_TESTS_EMU_TLOOP_H

#include <stddef.h>

#include "io/loop.h"

/* EMU_LOOP_URING when the io_uring loop works here, else EMU_LOOP_EPOLL with the reason in
 * why (the daemon's own words). */
enum emu_loop_kind t_loop_kind(char *why, size_t len);

#endif
