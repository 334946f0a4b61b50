/* SPDX-License-Identifier: MIT */
/*
 * bystander — another client of host 1's daemon, in a process of its own: canary memory
 * that an attacker must not reach, and traffic that must keep working meanwhile.
 *
 * It registers on host 1, each region filled with its own seeded pattern:
 *   rw     2 MiB pinned, REMOTE_WRITE|READ|ATOMIC: its first 64 KiB are where its own
 *          traffic lands, the rest is canary
 *   local  1 MiB pinned, local access only
 *   odp    1 MiB explicit ODP, local access only
 * and connects an RC pair from host 0 (both ends its own). Until it is stopped it WRITEs
 * 4 KiB of fresh bytes into the live area from host 0, READs them back and compares, one
 * pair every millisecond. Stopped, it checks every canary byte and that the live area
 * holds what it wrote last, and reports.
 */
#ifndef ODPEMU_TESTS_SEC_BYSTANDER_H
#define ODPEMU_TESTS_SEC_BYSTANDER_H

#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

struct bys_mem {
	uint64_t va;
	uint32_t len, lkey, rkey;
};

struct bys_info {		/* what the attacker may know */
	struct bys_mem rw, local, odp;
	uint32_t qpn;		/* its QP on host 1 */
	int ok;
};

struct bys_result {
	uint64_t ops;		/* WRITE + READ-back pairs */
	uint64_t errors;	/* pairs that failed or read back other bytes */
	uint64_t canary_bad;	/* canary bytes changed */
	uint64_t live_bad;	/* live-area bytes other than the last written */
};

struct bys {
	pid_t pid;
	int from, to;		/* pipes: its reports, our requests */
	struct bys_info info;
};

/* Fork the bystander and wait until it is set up. 0, or -1 (a check failed). */
int bys_start(struct h_env *e, struct bys *b);
/* Its operation count so far (it answers between two operations); UINT64_MAX if gone. */
uint64_t bys_ops(struct bys *b);
/* Stop it, take its report, reap it; the report is checked (T_*). */
void bys_stop(struct bys *b, struct bys_result *r);

#endif
