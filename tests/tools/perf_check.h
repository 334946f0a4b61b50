/* SPDX-License-Identifier: MIT */
/* perf_check — assertions on an odpemu-perf pair's results, shared by the perf tests. */
#ifndef ODPEMU_TESTS_PERF_CHECK_H
#define ODPEMU_TESTS_PERF_CHECK_H

#include <stdbool.h>

#include "tools_run.h"

/* Both sides exited 0 and the client's --json document parses with ok true, `iters`
 * messages (0: any) and, with --verify, every one checked. Prints both outputs on a
 * failure. Returns true when all held. */
bool pc_ok(const struct tr_pair *r, const char *what, unsigned long iters, bool verify);
/* A counter of the client's --json: side "local" or "remote", key a daemon name. */
double pc_odp(const struct tr_pair *r, const char *side, const char *key);
/* Print both outputs (for a failure). */
void pc_show(const struct tr_pair *r, const char *what);

#endif
