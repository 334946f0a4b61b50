/* SPDX-License-Identifier: MIT */
/*
 * lathist — a log-linear latency histogram in nanoseconds: four buckets per power of two,
 * so a bucket's bounds are within 25 % of each other, from 64 ns to 2^34 ns. The
 * daemon's fault latency (submit to answer delivered) is kept in one, exported as
 * fault_latency_ns_lt_N counters (the faults answered in under N ns, N a bucket's upper
 * bound), fine enough for microsecond faults where the log2 µs buckets
 * (fault_latency_us_lt_N) are not. Loop thread only.
 */
#ifndef ODPEMU_EMU_LATHIST_H
#define ODPEMU_EMU_LATHIST_H

#include <stdint.h>

#define EMU_LATHIST_SUB 4u		/* buckets per power of two */
#define EMU_LATHIST_MIN_SHIFT 6u	/* bucket 0: under 64 ns */
#define EMU_LATHIST_MAX_SHIFT 34u	/* the last bucket also holds everything longer */
#define EMU_LATHIST_BUCKETS (1u + (EMU_LATHIST_MAX_SHIFT - EMU_LATHIST_MIN_SHIFT) * \
			     EMU_LATHIST_SUB)

struct emu_lathist {
	uint64_t count[EMU_LATHIST_BUCKETS];
};

/* The bucket of ns, and a bucket's exclusive upper bound in ns. */
unsigned emu_lathist_index(uint64_t ns);
uint64_t emu_lathist_upper(unsigned i);

static inline void emu_lathist_add(struct emu_lathist *h, uint64_t ns)
{
	h->count[emu_lathist_index(ns)]++;
}

#endif
