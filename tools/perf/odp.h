/* SPDX-License-Identifier: MIT */
/* odp — the ODP section: device counter deltas over one run, corrected for MRs freed
 * during it (the device's page counters are sums over live MRs), and the keys shown. */
#ifndef ODPEMU_TOOLS_PERF_ODP_H
#define ODPEMU_TOOLS_PERF_ODP_H

#include "ctrs.h"
#include "dev.h"

/* The counters the section shows, daemon names, in order. */
extern const char *const perf_odp_keys[];
extern const unsigned perf_odp_nkeys;

struct perf_odp_track {
	struct ctrs before;
	struct ctrs retired;	/* page counters of MRs deregistered during the run */
};

/* 0, or -1 (printed). */
int odp_begin(struct perf_odp_track *t, struct perf_dev *d);
int odp_end(struct perf_odp_track *t, struct perf_dev *d, struct ctrs *delta);
/* acc += d, counter by counter (sizes of -a add up). */
void odp_accumulate(struct ctrs *acc, const struct ctrs *d);

#endif
