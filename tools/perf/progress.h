/* SPDX-License-Identifier: MIT */
/* progress — a live one-line status per second on a terminal, for long runs. */
#ifndef ODPEMU_TOOLS_PERF_PROGRESS_H
#define ODPEMU_TOOLS_PERF_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct perf_progress {
	bool on, shown;
	double start, last;
	uint64_t last_done;
};

/* On only when stderr is a terminal and the output is not JSON. */
void progress_init(struct perf_progress *p, bool json, double now);
/* done messages of size bytes so far; prints at most once a second. */
void progress_tick(struct perf_progress *p, double now, uint64_t done, uint64_t size);
/* Erase the line. */
void progress_end(struct perf_progress *p);

#endif
