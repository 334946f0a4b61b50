/* SPDX-License-Identifier: MIT */
/*
 * compat_run — run unmodified Debian verbs programs (ibverbs-utils, perftest) on the test
 * hosts of the e2e harness, against odpemu's drop-in libibverbs.so.1: every client gets
 * LD_LIBRARY_PATH=$ODPEMU_COMPAT_DIR (meson passes the library's build directory) and the
 * harness's ODPEMU_RUNDIR, and always names its host's device (-d odpa on host 0, -d odpb
 * on host 1). Every wait is bounded; a failure prints the commands and their output.
 */
#ifndef ODPEMU_TESTS_COMPAT_RUN_H
#define ODPEMU_TESTS_COMPAT_RUN_H

#include <stdbool.h>

#include "tools_run.h"

/* A command line under construction: argv plus room for the strings it owns. */
struct cr_args {
	const char *v[64];
	int n;
	char own[8][64];
	int nown;
};

/* Append strings up to the NULL. */
void cr_push(struct cr_args *a, ...) __attribute__((sentinel));
void cr_push_list(struct cr_args *a, const char *const *list);
/* Append a formatted string (the args keep it). */
void cr_pushf(struct cr_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The command line as one string, for messages (static buffer). */
const char *cr_cmdline(const struct cr_args *a);

/* Exit 77 with a message naming the package when `prog` is not on PATH. */
void cr_need(const char *prog, const char *package);

/* Wait until p's own socket listens on TCP port `port` (servers print nothing useful
 * before they exit: their stdout is a file, fully buffered). */
bool cr_wait_listen(struct tr_proc *p, unsigned port, int timeout_ms);

/* The clients' environment: LD_LIBRARY_PATH=$ODPEMU_COMPAT_DIR and cr_preload_env();
 * NULL-terminated. */
const char *const *cr_env(void);
/* In a sanitizer build, the runtimes the library needs (LD_PRELOAD) and no leak checks
 * for the programs (ASAN_OPTIONS); otherwise empty. */
const char *const *cr_preload_env(void);

/* Run a on host (< 0: here) with cr_env() plus `extra` (may be NULL), bounded: its exit
 * code (128+sig when killed), its stdout+stderr in *out (malloc'd). */
int cr_run(struct h_env *e, int host, const struct cr_args *a, const char *const *extra,
	   char **out, int timeout_s);

/* A TCP port for the next server: a fresh one per run (in the test's own namespaces a
 * counter from 18515; on loopback, where tests share ports, one the kernel says is free). */
unsigned cr_port(struct h_env *e);

/* Programs that had to be killed so far (each hung past its time: its stacks were
 * printed). Tests stop after a few: a daemon may be stuck, and every wait is long. */
extern unsigned cr_hangs;
#define CR_MAX_HANGS 2

/* A server/client run: the server on host 1 with -d <host 1 device>, started first; the
 * client on host 0 with -d <host 0 device> and host 1's address last, started once the
 * server's own socket listens on the port. */
struct cr_pair {
	struct cr_args server, client;
	int sexit, cexit;		/* exit codes; -1 when not run */
	char *sout, *cout;		/* their output (malloc'd) */
};
/* prog -d <device> -p <cr_port()> opts... on both sides (pingpong and perftest spell the
 * port -p); 0 when both ran, -1 when the server never listened (its output kept). */
int cr_pair_run(struct h_env *e, const char *prog, const char *const *opts, struct cr_pair *r,
		int timeout_s);
/* The same with r->server and r->client already built by the caller (the client names
 * the server's address itself), both listening/connecting on TCP port `port`, and extra
 * environment per side (NULL-terminated, may be NULL). */
int cr_pair_run_args(struct h_env *e, unsigned port, const char *const *senv,
		     const char *const *cenv, struct cr_pair *r, int timeout_s);
/* The same for programs that connect with rdma_cm (rping, ucmatose, perftest -R): the
 * client starts once the server's daemon has a new rdma_cm listener (its cm_listens
 * counter grew), since such a server opens no socket of its own. */
int cr_pair_run_cm(struct h_env *e, const char *const *senv, const char *const *cenv,
		   struct cr_pair *r, int timeout_s);
/* cr_pair_run for programs that meet over rdma_cm (perftest -R: its -p port is an
 * rdma_cm port, not a TCP one). */
int cr_pair_run_rdmacm(struct h_env *e, const char *prog, const char *const *opts,
		       struct cr_pair *r, int timeout_s);
/* Both exited 0 and the client's output holds `want` (NULL: anything); otherwise print
 * both command lines and outputs. */
bool cr_pair_ok(const struct cr_pair *r, const char *want);
void cr_pair_show(const struct cr_pair *r);
void cr_pair_free(struct cr_pair *r);

/* The device counter `name` of device `dev` (odpemu-ctl stat -d dev --json), or -1 with a
 * message. */
double cr_counter(struct h_env *e, const char *dev, const char *name);

/* Start a on host (< 0: here) in the background with cr_env() plus `extra` (may be
 * NULL): 0 or -1. Collect it with cr_collect. */
int cr_start(struct h_env *e, int host, const struct cr_args *a, const char *const *extra,
	     struct tr_proc *p);
/* Has p exited within timeout_ms (0: now)? Reaps it. */
bool cr_exited(struct tr_proc *p, int timeout_ms);
/* Reap p (started as a) within timeout_s, else print its stacks (counted in cr_hangs) and
 * kill it: its exit code (128+sig when killed), its output in *out (malloc'd). */
int cr_collect(struct tr_proc *p, const struct cr_args *a, int timeout_s, char **out);
/* Host's device counter `name` (device scope) through a session of its own, opened for
 * the call (so a restarted daemon is read, not a dead one's stale session); 0 when the
 * daemon lacks it. The daemon must be running. */
unsigned long long cr_dev_counter(struct h_env *e, int host, const char *name);
/* Wait until that counter exceeds `above`: true; false when p (may be NULL) exits first
 * or timeout_ms passes. */
bool cr_wait_dev_counter(struct h_env *e, int host, const char *name,
			 unsigned long long above, struct tr_proc *p, int timeout_ms);

/* The end of a test: hung programs counted, the daemons' logs shown after a failure, the
 * hosts taken down (their daemons must stop cleanly); the exit code. */
int cr_finish(struct h_env *e, const char *name);

#endif
