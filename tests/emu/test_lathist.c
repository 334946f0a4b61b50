/* SPDX-License-Identifier: MIT */
/* emu/lathist: every value lands in the bucket whose bounds hold it, buckets are ordered and
 * each spans at most a quarter of its power of two (25 % of its upper bound), and the ends
 * (0, under 64 ns, beyond 2^34 ns) land in the first and last buckets. */
#include "lathist.h"
#include "t.h"

/* The inclusive lower bound of bucket i: the previous bucket's upper bound. */
static uint64_t lower(unsigned i)
{
	return i ? emu_lathist_upper(i - 1) : 0;
}

int main(int argc, char **argv)
{
	struct t_rng rng = { t_seed(argc, argv, 3) };
	unsigned wrong = 0;

	T_EQ(emu_lathist_index(0), 0, "0 ns");
	T_EQ(emu_lathist_index(63), 0, "63 ns");
	T_EQ(emu_lathist_index(64), 1, "64 ns");
	T_EQ(emu_lathist_upper(1), 80, "64..80 ns");
	T_EQ(emu_lathist_index(1000), emu_lathist_index(1023), "1000 and 1023 ns share 896..1024");
	T_EQ(emu_lathist_upper(emu_lathist_index(1000)), 1024, "its bound");
	T_EQ(emu_lathist_index(UINT64_MAX), EMU_LATHIST_BUCKETS - 1, "the longest: last bucket");
	for (unsigned i = 1; i < EMU_LATHIST_BUCKETS; i++) {
		uint64_t lo = lower(i), hi = emu_lathist_upper(i);

		wrong += !(hi > lo) || (i > 1 && (hi - lo) * 4 > hi) ||
			 emu_lathist_index(lo) != i || emu_lathist_index(hi - 1) != i;
	}
	T_EQ(wrong, 0, "buckets ordered, at most 25 % wide, their bounds in them");
	wrong = 0;
	for (unsigned k = 0; k < 100000; k++) {
		uint64_t v = t_below(&rng, 1u << 30) >> t_below(&rng, 24);
		unsigned i = emu_lathist_index(v);

		wrong += v < lower(i) || v >= emu_lathist_upper(i);
	}
	T_EQ(wrong, 0, "random values: each in its bucket's bounds");
	return t_done("lathist");
}
