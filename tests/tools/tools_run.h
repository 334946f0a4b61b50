/* SPDX-License-Identifier: MIT */
/*
 * tools_run — run odpemu-ctl and odpemu-perf as a user would, on the test hosts of the
 * e2e harness (tests/emu/e2e/harness.h): in host i's network namespace, output to a file,
 * every wait bounded. The tools' paths come from $ODPEMU_CTL and $ODPEMU_PERF.
 */
#ifndef ODPEMU_TESTS_TOOLS_RUN_H
#define ODPEMU_TESTS_TOOLS_RUN_H

#include <stdbool.h>
#include <sys/types.h>

#include "harness.h"

struct tr_proc {
	pid_t pid;
	char out[300];		/* stdout and stderr */
	int status;		/* wait status once reaped; -1 before */
};

/* $ODPEMU_CTL / $ODPEMU_PERF (meson sets them). */
const char *tr_ctl(void);
const char *tr_perf(void);

/* Start argv (argv[0] a program path) in host i's namespace (host < 0: here), with
 * extra environment "K=V" strings in env (NULL-terminated, may be NULL). 0 or -1. */
int tr_start(struct h_env *e, int host, const char *const *argv, const char *const *env,
	     struct tr_proc *p);
/* Reap it within timeout_s (then SIGKILL): the wait status. */
int tr_wait(struct tr_proc *p, int timeout_s);
/* Wait until its output holds `text`, or the process ended, or timeout_ms passed. */
bool tr_wait_for(struct tr_proc *p, const char *text, int timeout_ms);
/* Its output so far (malloc'd, NUL-terminated; "" when none). */
char *tr_output(const struct tr_proc *p);
/* Start, wait, collect: the exit code (128+sig when killed), *out malloc'd. */
int tr_run(struct h_env *e, int host, const char *const *argv, const char *const *env,
	   char **out, int timeout_s);

/* An odpemu-perf pair: server on host 1 (sargs after the test name), client on host 0
 * (cargs, then host 1's address). Exit codes and outputs (malloc'd). */
struct tr_pair {
	int client, server;
	char *cout, *sout;
};
int tr_perf_pair(struct h_env *e, const char *test, const char *const *cargs,
		 const char *const *sargs, struct tr_pair *r, int timeout_s);
void tr_pair_free(struct tr_pair *r);

/* Evaluate a Python expression over the JSON document `json` (bound to d): its printed
 * value in out; 0, or -1 when the document does not parse or the expression fails (the
 * error printed). */
int tr_json(const char *json, const char *expr, char *out, size_t len);
double tr_json_num(const char *json, const char *expr);

#endif
