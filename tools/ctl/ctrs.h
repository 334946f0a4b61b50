/* SPDX-License-Identifier: MIT */
/*
 * ctrs — a snapshot of a device's (or QP's, MR's) named counters, deltas between two
 * snapshots, and percentiles of the daemon's log2 fault-latency histogram
 * (fault_latency_us_lt_N: faults answered in under N µs, N a power of two).
 */
#ifndef ODPEMU_TOOLS_CTRS_H
#define ODPEMU_TOOLS_CTRS_H

#include <stdbool.h>
#include <stdint.h>

#include "odpemu/odpemu.h"

#define CTRS_MAX 256
#define CTRS_HIST_PREFIX "fault_latency_us_lt_"
/* The same faults in log-linear buckets (four per power of two, from 64 ns): N in ns. */
#define CTRS_NS_HIST_PREFIX "fault_latency_ns_lt_"

struct ctrs {
	int n;
	struct odpemu_counter c[CTRS_MAX];
};

/* 0, or -1 with errno (the daemon's explanation in odpemu_last_error). */
int ctrs_query(struct odpemu_context *ctx, enum odpemu_counter_scope scope, uint32_t id,
	       struct ctrs *out);
/* The value of `name`, 0 when absent (the daemon omits empty histogram buckets). */
uint64_t ctrs_get(const struct ctrs *s, const char *name);
bool ctrs_has(const struct ctrs *s, const char *name);
/* Set (or add) `name`. */
void ctrs_set(struct ctrs *s, const char *name, uint64_t v);
void ctrs_add(struct ctrs *s, const char *name, uint64_t v);
/* out = after - before, name by name (names of either; a counter that went down, a sum
 * over objects that were freed, gives 0). */
void ctrs_delta(const struct ctrs *after, const struct ctrs *before, struct ctrs *out);
/* Is this counter a gauge (a level, not a count: mrs, present_pages, ...)? */
bool ctrs_is_gauge(const char *name);

/* The histogram bucket bound N (µs) under which `pct` percent of the faults fall; 0 when
 * the histogram is empty. */
uint64_t ctrs_hist_pct(const struct ctrs *s, double pct);
/* The same for the histogram whose counters are prefix + N (CTRS_NS_HIST_PREFIX: N in ns,
 * within 25 % of the true percentile). */
uint64_t ctrs_hist_pct_of(const struct ctrs *s, const char *prefix, double pct);
/* The buckets in ascending order: bounds[i] (µs) and counts[i]; returns how many (≤ max). */
int ctrs_hist(const struct ctrs *s, uint64_t *bounds, uint64_t *counts, int max);
int ctrs_hist_of(const struct ctrs *s, const char *prefix, uint64_t *bounds, uint64_t *counts,
		 int max);

#endif
