/* SPDX-License-Identifier: MIT */
/*
 * emu/spin: the loop's spin window. Fixed keeps --poll-us; adaptive learns the idle gaps
 * (bridging ping-pong gaps, giving up on gaps too long to bridge, ignoring the pauses
 * inside a burst).
 */
#include "io/spin.h"
#include "t.h"

#define US 1000ull

/* Work at t, then every gap for n rounds; returns the spin window after the last. */
static uint64_t feed(struct emu_spin *p, uint64_t *t, uint64_t gap, int n)
{
	uint64_t until = 0;

	for (int i = 0; i < n; i++) {
		*t += gap;
		until = emu_spin_work(p, *t);
	}
	return until - *t;
}

int main(int argc, char **argv)
{
	struct emu_spin p;
	uint64_t t = 1000 * US, w;

	t_seed(argc, argv, 1);
	emu_spin_init(&p, 50);
	T_EQ(feed(&p, &t, 30 * US, 10), 50 * US, "fixed: --poll-us 50 whatever the gaps");
	T_EQ(feed(&p, &t, 5000 * US, 10), 50 * US, "fixed: long gaps too");
	emu_spin_init(&p, 0);
	T_EQ(feed(&p, &t, 30 * US, 3), 0, "fixed 0: never spins");

	emu_spin_init(&p, -1);
	T_EQ(feed(&p, &t, 1 * US, 1), EMU_SPIN_MIN_US * US, "adaptive: starts at the minimum");
	T_EQ(feed(&p, &t, 30 * US, 40), 120 * US, "30 us gaps: spin four times the gap");
	T_EQ(feed(&p, &t, 2 * US, 200), 120 * US, "pauses inside a burst are not gaps");
	w = feed(&p, &t, 200 * US, 60);
	T_CHECK(w > 790 * US && w <= 800 * US, "200 us gaps: still bridged (spin %llu ns)",
		(unsigned long long)w);
	T_EQ(feed(&p, &t, 5000 * US, 60), EMU_SPIN_MIN_US * US,
	     "gaps too long to bridge: the minimum, then sleep");
	T_EQ(feed(&p, &t, 8 * US, 100), EMU_SPIN_MIN_US * US,
	     "gaps shorter than a quarter of the minimum: the minimum");
	return t_done("emu-spin");
}
