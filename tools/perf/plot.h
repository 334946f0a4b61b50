/* SPDX-License-Identifier: MIT */
/* plot — --histogram FILE.svg|png through gnuplot: the latency histogram of a --lat run
 * and the fault-latency histogram of both devices (the daemons' log2 buckets). */
#ifndef ODPEMU_TOOLS_PERF_PLOT_H
#define ODPEMU_TOOLS_PERF_PLOT_H

#include "report.h"

/* samples may be NULL (bandwidth run, or the server). 0, or -1 (printed). */
int plot_histogram(const char *file, const struct perf_report *rep,
		   const struct perf_samples *samples, uint64_t size);

#endif
