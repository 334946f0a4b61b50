/* SPDX-License-Identifier: MIT */
/*
 * round — what one round of a worker's traffic needs from the worker (worker.c), and the
 * rounds: rc.c (every RC verb on a pair), ud.c (datagrams), victim.c (a peer process
 * killed under traffic). A round creates its objects, runs, checks, destroys them all.
 */
#ifndef ODPEMU_TESTS_SOAK_ROUND_H
#define ODPEMU_TESTS_SOAK_ROUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "soak.h"

/* Memory kinds of an MR. */
enum soak_mem { SOAK_PINNED, SOAK_ODP, SOAK_IMPLICIT, SOAK_NMEM };
extern const char *const soak_mem_name[SOAK_NMEM];

#define SOAK_ALL_ACCESS (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | \
	ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC | ODPEMU_ACCESS_FLUSH_GLOBAL | \
	ODPEMU_ACCESS_FLUSH_PERSISTENT)

struct soak_w {
	const struct soak_worker_cfg *cfg;
	struct h_env *e;
	struct odpemu_context *ctx[2];	/* this process's sessions on host 0 and host 1 */
	struct soak_stats *st;
	struct t_rng rng;		/* the worker's seeded choices */
	uint64_t pat;			/* the worker's pattern stream (pattern.h) */
	uint64_t nwr;			/* pattern items drawn so far */
	unsigned round;
	unsigned warmup;		/* > 0: the warm-up worker's rounds run each kind in turn */
};

/* Device i (host 0 or 1), opened; on failure a failure recorded and _exit(1) (h_open's
 * exit() would run the harness's atexit handler, which tears the hosts down). */
struct odpemu_context *soak_open(struct soak_w *w, int i);
/* The parent asked the workers to stop (finish the round). */
bool soak_stopping(const struct soak_w *w);
/* An MR of kind k over [buf, buf+len) (implicit: the whole address space); NULL with a
 * failure recorded. */
struct odpemu_mr *soak_reg(struct soak_w *w, struct odpemu_pd *pd, void *buf, size_t len,
			   enum soak_mem k);
/* The MR's fault_failed counter (0 for a pinned MR or NULL). */
uint64_t soak_fault_failed(struct soak_w *w, struct odpemu_mr *mr);
/* A seeded length: mostly small, some page-crossing, some up to max. */
uint32_t soak_len(struct soak_w *w, uint32_t max);
/* Take (and acknowledge) every async event waiting on both devices: QP error events are
 * counted (each comes with an error completion the ledger judges), anything else is a
 * failure (CQ overflow, device or port errors, MR decoherence: nothing here causes one). */
void soak_drain_events(struct soak_w *w);
/* Sleep a little: two cores are shared by the daemons and the workers. */
void soak_nap(void);

void soak_round_rc(struct soak_w *w);
void soak_round_ud(struct soak_w *w);
void soak_round_victim(struct soak_w *w);

#endif
