/* SPDX-License-Identifier: MIT */
/* Shared benchmark timing: run a body for a fixed time, repeat, report the median.
 * Benchmarks print figures; they never pass or fail on time. */
#ifndef ODPEMU_BENCH_H
#define ODPEMU_BENCH_H

#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <time.h>

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Keeps a computed value alive so the compiler cannot drop the work. */
/* The 1-minute load average (-1 when unreadable): benchmarks print it beside their
 * figures, which a busy machine skews. */
static inline double bench_load_avg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

static inline void bench_keep(uint64_t v)
{
	__asm__ volatile("" : : "r"(v) : "memory");
}

/* In a child the benchmark forked: the e2e harness's signal handlers would tear the test
 * hosts down from here (not the child's to do), and the child dies with its parent. */
static inline void bench_child_detach(void)
{
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

#endif
