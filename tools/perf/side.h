/* SPDX-License-Identifier: MIT */
/* side — what client and server do alike around a run: build one size's QPs and buffers
 * (and tear them down), set the --evict-rate knob, finish with results and the report. */
#ifndef ODPEMU_TOOLS_PERF_SIDE_H
#define ODPEMU_TOOLS_PERF_SIDE_H

#include "report.h"
#include "run.h"

/* Lay out, create QPs (INIT) and buffers for r->size; 0 or -1 (printed). */
int side_build(struct perf_run *r);
void side_teardown(struct perf_run *r);
/* Our endpoint: QPs and target area. */
void side_ep(const struct perf_run *r, struct perf_ep *e);
/* Set our daemon's evict-rate (value NULL: put it back to 0). */
void side_evict(struct perf_dev *d, const struct perf_cfg *c, bool restore);
/* bw figures from r->done, r->size and r->res.secs. */
void side_figures(struct perf_run *r);
/* "VERIFY ok n=N stale=S" or "VERIFY fail n=N stale=S <why>": 0 or -1. */
int side_send_verify(struct perf_conn *c, const struct perf_verify *v);
/* The peer's verdict; a failure is also printed. */
void side_parse_verify(const char *line, struct perf_verify *v);
/* The line every "peer went away" ends with. */
void side_lost(void) __attribute__((noreturn));
/* --histogram, then the report's end; the exit status (0, or 1 when verification or the
 * plot failed). */
int side_finish(struct perf_report *rep, const struct perf_samples *samples, uint64_t size);

#endif
