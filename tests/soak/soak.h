/* SPDX-License-Identifier: MIT */
/*
 * soak — hours of every verb between two test hosts under injected faults (docs/testing.md
 * "Soak"). The parent (soak.c) runs the hosts, forks worker processes, SIGKILLs them at
 * seeded times and checks the daemons; each worker (worker.c) runs rounds of traffic —
 * rc.c, ud.c, victim.c — whose completions ledger.c accounts for; checks.c reads what the
 * daemons hold.
 *
 * What the processes share is one MAP_SHARED block (struct soak_shared): the stop flag and
 * one struct soak_stats per worker slot, which its worker adds to with relaxed atomics and
 * the parent sums once the worker is gone (or reads, racily, for a progress line).
 */
#ifndef ODPEMU_TESTS_SOAK_H
#define ODPEMU_TESTS_SOAK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

#define SOAK_MAX_WORKERS 16
#define SOAK_NSTATUS 22			/* enum odpemu_wc_status: SUCCESS .. GENERAL_ERR */
#define SOAK_WAIT_MS 20000		/* one completion may take this long, at most */

/* What a worker did. Completions are counted by status, each also as "justified" when it
 * is an error the test can explain (an injected fault failure, the flush after it, a
 * killed peer) and as "teardown" when it is a flush the round's own move to ERR caused. */
struct soak_stats {
	uint64_t by_status[SOAK_NSTATUS];
	uint64_t justified, teardown;
	uint64_t posted;		/* WRs posted (send and receive queues) */
	uint64_t bytes;			/* payload bytes of successful, checked completions */
	uint64_t rounds_rc, rounds_ud, rounds_victim, reopens;
	uint64_t rc_error_rounds;	/* RC rounds ended by an (injected) error */
	uint64_t ud_sent, ud_received, ud_dups;
	uint64_t victims_killed;
	uint64_t qp_events;		/* QP error async events taken */
	uint64_t failures;		/* checks that failed */
	pid_t pid, victim_pid;		/* the worker, and its victim while one lives */
	char first_failure[512];
};

struct soak_shared {
	int stop;			/* set by the parent: finish the round and exit */
	struct soak_stats slot[SOAK_MAX_WORKERS];
};

/* One worker's settings (copied into the child by fork). */
struct soak_worker_cfg {
	struct h_env *e;		/* the hosts (rundir, names, addresses) */
	struct soak_shared *sh;
	int slot;
	uint64_t seed;
	unsigned max_rounds;		/* 0: until stopped; the warm-up worker runs a few */
	int only;			/* -1: the usual mix; else always this kind of round */
};

#define SOAK_ADD(field, v) __atomic_fetch_add(&(field), (v), __ATOMIC_RELAXED)

/* Kinds of rounds (worker.c draws one per round). */
enum soak_round { SOAK_RC, SOAK_UD, SOAK_VICTIM, SOAK_NROUND };

/* worker.c: runs in the forked child; never returns (exit status 0: no check failed). */
void soak_worker_main(const struct soak_worker_cfg *cfg) __attribute__((noreturn));

/* Record a failed check in st (the first message is kept) and print it. */
void soak_fail(struct soak_stats *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The number of "qp PID" and "mr PID" entries in the device's object list (-1: cannot
 * read it). */
int soak_objects_of(struct odpemu_context *ctx, pid_t pid);
/* Monotonic milliseconds. */
long long soak_ms(void);

#endif
