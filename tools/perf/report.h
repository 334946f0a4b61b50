/* SPDX-License-Identifier: MIT */
/* report — what both sides print: perftest's banner and table, then the ODP section
 * (counter deltas of this side's and the peer's device); or one JSON document. */
#ifndef ODPEMU_TOOLS_PERF_REPORT_H
#define ODPEMU_TOOLS_PERF_REPORT_H

#include "run.h"

#define REPORT_MAX_ROWS 32

struct report_row {
	struct perf_result res;
	struct ctrs local, remote;
	struct perf_verify verify;	/* both sides' checks, merged */
};

struct perf_report {
	const struct perf_opts *o;
	const struct perf_cfg *cfg;
	bool server;
	char local_dev[64], remote_dev[64];
	int nrows;
	struct report_row rows[REPORT_MAX_ROWS];
	struct ctrs local_total, remote_total;
	struct perf_samples *last_samples;	/* for --histogram */
	bool failed;
};

void report_init(struct perf_report *rep, const struct perf_opts *o, const struct perf_cfg *cfg,
		 bool server, const char *local_dev);
/* Before the first row: the run's settings and both endpoints. */
void report_banner(struct perf_report *rep, const struct perf_run *r,
		   const struct perf_ep *local);
/* One message size done; `remote_verify` is the peer's. */
void report_row(struct perf_report *rep, const struct perf_run *r, const struct perf_result *res,
		const struct ctrs *local, const struct ctrs *remote,
		const struct perf_verify *remote_verify);
/* The ODP section (or the JSON document). */
void report_end(struct perf_report *rep);

#endif
