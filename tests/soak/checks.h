/* SPDX-License-Identifier: MIT */
/*
 * checks — what a daemon holds, so the soak can say it gave everything back: its objects
 * (the device counters sessions pds mrs cqs srqs qps), its file descriptors, the memfds
 * among them and among its mappings, and its resident memory (/proc/PID).
 */
#ifndef ODPEMU_TESTS_SOAK_CHECKS_H
#define ODPEMU_TESTS_SOAK_CHECKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

#define SOAK_NOBJ 6
extern const char *const soak_obj_name[SOAK_NOBJ];	/* sessions pds mrs cqs srqs qps */

struct soak_hold {
	uint64_t obj[SOAK_NOBJ];
	long fds, memfd_fds, memfd_maps;	/* -1: could not read */
	long rss_kib;
};

/* The odpemud process of host i (the harness starts it through `ip netns exec`, which
 * execs it: normally e->host[i].pid itself). 0 if not found. */
pid_t soak_daemon_pid(struct h_env *e, int i);
/* Read what the daemon holds; false (with a message) if its counters cannot be read. */
bool soak_hold_read(struct odpemu_context *ctx, pid_t pid, struct soak_hold *h);
/* The same objects, descriptors and memfds (RSS aside). */
bool soak_hold_same(const struct soak_hold *a, const struct soak_hold *b);
/* "sessions 1 pds 0 ... fds 31 memfds 2+0 rss 41 MiB" */
void soak_hold_str(const struct soak_hold *h, char *buf, size_t len);

/* A device's counters, all of them, by name. */
struct soak_ctrs {
	struct odpemu_counter *c;
	int n;
};
bool soak_ctrs_read(struct odpemu_context *ctx, struct soak_ctrs *out);
uint64_t soak_ctr(const struct soak_ctrs *c, const char *name);	/* 0 if missing */
void soak_ctrs_free(struct soak_ctrs *c);

#endif
