/* SPDX-License-Identifier: MIT */
/* Shared benchmark timing: run a body for a fixed time, repeat, report the median.
 * Benchmarks print figures; they never pass or fail on time. */
#ifndef ODPEMU_BENCH_H
#define ODPEMU_BENCH_H

#include <stdint.h>
#include <time.h>

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Keeps a computed value alive so the compiler cannot drop the work. */
static inline void bench_keep(uint64_t v)
{
	__asm__ volatile("" : : "r"(v) : "memory");
}

#endif
