/* SPDX-License-Identifier: MIT */
/*
 * counters — the COUNTERS op and the SIGUSR1 dump: name/value pairs of the device, a QP or
 * an MR, named as mlx5 and `rdma stat` name them where they exist. Device counters never go
 * down: destroyed MRs and QPs leave their counts in the totals (emu_counters_retire).
 *
 * THREADING. The loop thread only.
 */
#ifndef ODPEMU_EMU_COUNTERS_H
#define ODPEMU_EMU_COUNTERS_H

struct emu_daemon;
struct emu_obj;
struct emu_req;

/* The COUNTERS op handler (verbs.h). */
int emu_op_counters(struct emu_req *r);
/* The device counters into the log, one per line. */
void emu_counters_dump(struct emu_daemon *d);
/* An MR or QP is about to go: keep its counts in the device's totals. */
void emu_counters_retire(struct emu_obj *o);

#endif
