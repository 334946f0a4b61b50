/* SPDX-License-Identifier: MIT */
/* Helpers shared by the pagetable tests: sizing for sanitizer builds, a time bound. */
#ifndef ODPEMU_T_PT_H
#define ODPEMU_T_PT_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define T_PT_SANITIZED 1
#else
#define T_PT_SANITIZED 0
#endif

/* n in a plain build; n / div under TSan (10x to 50x slower here), n / (div / 4) under
 * ASan (~5x slower). $T_PT_SCALE (a percentage) overrides all, for long soak runs. */
static inline uint64_t t_pt_ops(uint64_t n, uint64_t div)
{
	const char *env = getenv("T_PT_SCALE");

	if (env && *env)
		return n * strtoull(env, NULL, 0) / 100 + 1;
#if defined(__SANITIZE_THREAD__)
	return n / div + 1;
#elif defined(__SANITIZE_ADDRESS__)
	return n / (div / 4 ? div / 4 : 1) + 1;
#else
	(void)div;
	return n;
#endif
}

static inline double t_pt_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define KiB UINT64_C(1024)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define PG UINT64_C(4096)

#endif
