/* SPDX-License-Identifier: MIT */
/* spin — the loop's spin window (see spin.h). */
#include "spin.h"

void emu_spin_init(struct emu_spin *p, int poll_us)
{
	*p = (struct emu_spin){ .adaptive = poll_us < 0 };
	p->fixed_ns = poll_us < 0 ? 0 : (uint64_t)poll_us * 1000;
	p->spin_ns = p->adaptive ? EMU_SPIN_MIN_US * 1000ull : p->fixed_ns;
}

static void learn(struct emu_spin *p, uint64_t gap)
{
	uint64_t span;

	p->gap_avg_ns = p->gap_avg_ns ? (7 * p->gap_avg_ns + gap) / 8 : gap;
	span = 4 * p->gap_avg_ns;
	if (span > EMU_SPIN_MAX_US * 1000ull || span < EMU_SPIN_MIN_US * 1000ull)
		p->spin_ns = EMU_SPIN_MIN_US * 1000ull;
	else
		p->spin_ns = span;
}

uint64_t emu_spin_work(struct emu_spin *p, uint64_t now)
{
	if (p->adaptive && p->last_work_ns && now - p->last_work_ns >= EMU_SPIN_GAP_NS)
		learn(p, now - p->last_work_ns);
	p->last_work_ns = now;
	return now + p->spin_ns;
}
