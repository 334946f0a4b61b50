/* SPDX-License-Identifier: MIT */
/* lathist — bucket arithmetic of the log-linear latency histogram (lathist.h). */
#include "lathist.h"

#define SUB_BITS 2u	/* log2(EMU_LATHIST_SUB) */

unsigned emu_lathist_index(uint64_t ns)
{
	unsigned octave;

	if (ns < (1ull << EMU_LATHIST_MIN_SHIFT))
		return 0;
	octave = 63u - (unsigned)__builtin_clzll(ns);
	if (octave >= EMU_LATHIST_MAX_SHIFT)
		return EMU_LATHIST_BUCKETS - 1;
	/* the two bits below the leading one pick the quarter of the octave */
	return 1u + (octave - EMU_LATHIST_MIN_SHIFT) * EMU_LATHIST_SUB +
	       (unsigned)((ns >> (octave - SUB_BITS)) & (EMU_LATHIST_SUB - 1));
}

uint64_t emu_lathist_upper(unsigned i)
{
	unsigned octave, quarter;

	if (i == 0)
		return 1ull << EMU_LATHIST_MIN_SHIFT;
	octave = EMU_LATHIST_MIN_SHIFT + (i - 1) / EMU_LATHIST_SUB;
	quarter = (i - 1) % EMU_LATHIST_SUB;
	return (uint64_t)(EMU_LATHIST_SUB + quarter + 1) << (octave - SUB_BITS);
}
