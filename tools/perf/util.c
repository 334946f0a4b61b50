/* SPDX-License-Identifier: MIT */
/* util — errors, time, and the wait-loop policy. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <time.h>

#include "perf.h"

static void verr(const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s: ", PERF_PROG);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void perf_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(fmt, ap);
	va_end(ap);
}

void perf_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(fmt, ap);
	va_end(ap);
	exit(1);
}

double perf_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void perf_idle(unsigned *spins)
{
	/* Spinning is what perftest does, but here the NIC is two daemons that need the same
	 * cores as we do. Spin a little, then yield (a daemon with work gets the CPU at
	 * once; the daemons yield too when their own spin finds nothing), and after a long
	 * wait nap (1 us asked; the kernel's timer slack makes it ~50 us). Measured on the
	 * 2-vCPU test hosts, write --lat: 16-20 us median with the yields, 31-58 us when
	 * napping after 16 spins; 64 KiB WRITE 690-990 MB/s either way. */
	static const struct timespec nap = { 0, 1000 };

	if (++*spins > 256)
		nanosleep(&nap, NULL);
	else if (*spins > 16)
		sched_yield();
}
