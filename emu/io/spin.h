/* SPDX-License-Identifier: MIT */
/*
 * spin — how long the loop keeps spinning after its last work before it sleeps.
 *
 * Fixed (--poll-us N): N microseconds, as always.
 * Adaptive (the default): the loop learns the idle gaps between bursts of work (a moving
 * average, 1/8 weight per gap) and spins for four times the average gap (gaps vary: an ACK,
 * then the peer's next request), at least EMU_SPIN_MIN_US, the fixed default of before: a
 * ping-pong whose gaps are 100 us is caught spinning instead of waking from io_uring (tens
 * of microseconds on a busy 2-vCPU host). Gaps too long to bridge (four times the average
 * above EMU_SPIN_MAX_US) spin only the minimum: a quiet daemon sleeps instead of burning a
 * CPU its clients need.
 *
 * Pure arithmetic on the loop thread's clock; no syscalls.
 */
#ifndef ODPEMU_EMU_SPIN_H
#define ODPEMU_EMU_SPIN_H

#include <stdbool.h>
#include <stdint.h>

#define EMU_SPIN_MIN_US	50
#define EMU_SPIN_MAX_US	1000
#define EMU_SPIN_GAP_NS	5000	/* shorter pauses are one burst (a round of work can
				 * take microseconds), not a gap */

struct emu_spin {
	bool adaptive;
	uint64_t fixed_ns;		/* fixed: the spin */
	uint64_t gap_avg_ns;		/* adaptive: the moving average of idle gaps (0: none) */
	uint64_t last_work_ns;		/* when work was last seen (0: never) */
	uint64_t spin_ns;		/* the current spin window */
};

/* poll_us < 0: adaptive; else fixed at poll_us microseconds. */
void emu_spin_init(struct emu_spin *p, int poll_us);
/* Work was seen at now: learn the gap since the last work; returns the time until which
 * the loop keeps spinning. */
uint64_t emu_spin_work(struct emu_spin *p, uint64_t now);

#endif
