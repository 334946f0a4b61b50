/* SPDX-License-Identifier: MIT */
/* stats — the figures of one run: bandwidth (average and peak) and latency percentiles. */
#ifndef ODPEMU_TOOLS_PERF_STATS_H
#define ODPEMU_TOOLS_PERF_STATS_H

#include <stddef.h>
#include <stdint.h>

/* --regcache: what the churned buffers cost the client that churns them (mem.h). Times
 * are sums over the run; the cache's counters as odpemu_regcache_stats. */
struct perf_rc_figs {
	uint64_t remaps;		/* munmap + mmap(MAP_FIXED) pairs */
	double munmap_secs, mmap_secs;
	uint64_t gets;			/* registrations taken for a message */
	double get_secs;		/* odpemu_regcache_get (a registration or restore) */
	uint64_t registrations, hits, misses, restores, stale_drops;
	uint64_t decoherence;		/* MR_DECOHERENCE events served */
};

struct perf_result {
	uint64_t size, iters;
	double secs;		/* timed: recycling and verify syncs are not counted */
	double bw_peak, bw_avg;	/* bytes per second */
	double msg_rate;	/* messages per second */
	double t_min, t_med, t_avg, t_p99, t_p999, t_max;	/* µs, --lat */
	struct perf_rc_figs rc;
};

/* Latency samples in µs. */
struct perf_samples {
	double *v;
	size_t n, cap;
};
void samples_add(struct perf_samples *s, double us);
/* Fill the t_* fields (sorts the samples). */
void samples_summary(struct perf_samples *s, struct perf_result *r);
void samples_free(struct perf_samples *s);

/* Peak bandwidth: the best rate over windows of `window` completions (perftest's peak is
 * also a short-interval best). */
struct perf_peak {
	double t0, best;
	uint64_t n0, window;
};
void peak_init(struct perf_peak *p, double now, uint64_t window);
void peak_tick(struct perf_peak *p, double now, uint64_t completed, uint64_t size);
/* Shift the window start by `paused` seconds not to count (a recycling sync). */
void peak_pause(struct perf_peak *p, double paused);

#endif
