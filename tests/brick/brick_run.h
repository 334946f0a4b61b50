/* SPDX-License-Identifier: MIT */
/*
 * brick_run — odpemu-brick between the two test hosts of the e2e harness: the brick on
 * host 1 (its path from $ODPEMU_BRICK), run as a user runs it on odpemu (the drop-in
 * libraries through LD_LIBRARY_PATH, compat_run's environment); initiators on host 0 are
 * the test's own client program ($ODPEMU_BRICK_CLIENT), an ordinary program that links
 * libodpemu-brick only. Every wait is bounded.
 */
#ifndef ODPEMU_TESTS_BRICK_RUN_H
#define ODPEMU_TESTS_BRICK_RUN_H

#include <stdbool.h>

#include "brick_check.h"
#include "compat_run.h"

struct br_brick {
	struct cr_args args;
	struct tr_proc proc;
	bool running;
	unsigned port;
};

/* Start odpemu-brick on host 1: --file file --size size [--mem mem] (NULL: none) on host
 * 1's address and a fresh port, and wait until it listens. 0, or -1 with its output
 * printed. */
int br_start(struct h_env *e, struct br_brick *b, const char *file, const char *size,
	     const char *mem);
/* Send sig and reap it (bounded): its exit code (128+sig when killed by it). */
int br_stop(struct br_brick *b, int sig);
/* Its pid while it runs. */
int br_pid(const struct br_brick *b);
/* Run the client program on host 0 as "$ODPEMU_BRICK_CLIENT <addr> <port> args...": its
 * exit code, its output in *out (malloc'd). */
int br_client(struct h_env *e, const struct br_brick *b, const char *const *args, char **out,
	      int timeout_s);
/* The same, started in the background (collect with cr_collect). */
int br_client_start(struct h_env *e, const struct br_brick *b, const char *const *args,
		    struct tr_proc *p, struct cr_args *a);
/* A field of /proc/PID/status in KiB ("RssFile"), or 0. */
unsigned long br_status_kib(int pid, const char *field);
/* The resident KiB of pid's mappings of the file whose path ends with name (the Rss of
 * its VMAs in /proc/PID/smaps), or 0. */
unsigned long br_mapping_rss_kib(int pid, const char *name);

#endif
