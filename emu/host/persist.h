/* SPDX-License-Identifier: MIT */
/*
 * persist — nic/'s persist port: a persistent FLUSH (IBA 1.5 Memory Placement Extensions)
 * made durable before it is acknowledged. The range is looked up in the mappings that
 * hold it (the client's for an ODP MR, the daemon's own for a pinned one): a shared file
 * mapping is fdatasync'ed (the file's pages are the page cache the DMA wrote into), which
 * is what durability means for a file; anonymous and private memory have nothing durable
 * behind them and are answered at once (the FLUSH then guarantees global visibility, as
 * every FLUSH does here: DMA is a synchronous copy). The work runs on a thread of its own
 * (an fdatasync takes milliseconds); answers come back to the loop through an eventfd.
 * Loop thread: emu_persist_start/request/cancel/rx/stop; the thread: the lookups and
 * syncs.
 */
#ifndef ODPEMU_EMU_PERSIST_H
#define ODPEMU_EMU_PERSIST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "io/loop.h"

struct emu_daemon;
struct emu_persist;
struct iopt_waiter;

/* What a persistent FLUSH found behind its range, for the counters. */
struct emu_persist_stats {
	uint64_t syncs;		/* answered after an fdatasync of the file(s) behind it */
	uint64_t volatile_ranges; /* answered at once: only anonymous or private memory */
	uint64_t errors;	/* the range could not be looked up or synced (REM_OP_ERR) */
	uint64_t ns;		/* summed time from request to answer */
	uint64_t max_ns;
};

/* The thread and its eventfd on d's loop: 0 or -errno. */
int emu_persist_start(struct emu_daemon *d, struct emu_persist **out);
/* nic's persist port (nic.h): pid's memory at addr (self: the daemon's own, a pinned
 * MR's mapping). Always 1 (answered later) or -ENOMEM. */
int emu_persist_request(struct emu_persist *p, pid_t pid, uint64_t addr, uint64_t len,
			struct iopt_waiter *w);
void emu_persist_cancel(struct emu_persist *p, struct iopt_waiter *w);
void emu_persist_stats(const struct emu_persist *p, struct emu_persist_stats *st);
/* Join the thread and free everything; waiters not answered are not touched. */
void emu_persist_stop(struct emu_persist *p);

#endif
