/* SPDX-License-Identifier: MIT */
/* progress — see progress.h. */
#include "progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

void progress_init(struct perf_progress *p, bool json, double now)
{
	*p = (struct perf_progress){ .on = !json && isatty(STDERR_FILENO), .start = now,
		.last = now };
}

void progress_tick(struct perf_progress *p, double now, uint64_t done, uint64_t size)
{
	double dt = now - p->last;

	if (!p->on || dt < 1.0)
		return;
	fprintf(stderr, "\r[%4.0f s] %12" PRIu64 " messages  %9.3f Gb/s  %10.0f msg/s ",
		now - p->start, done, (double)(done - p->last_done) * (double)size * 8 / dt / 1e9,
		(double)(done - p->last_done) / dt);
	p->last = now;
	p->last_done = done;
	p->shown = true;
}

void progress_end(struct perf_progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r%72s\r", "");
	p->shown = false;
}
