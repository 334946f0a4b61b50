/* SPDX-License-Identifier: MIT */
/*
 * evict — --evict-rate: random present pages of ODP MRs are invalidated, so warm memory
 * faults again during steady traffic. The pages are drawn from the recent fault fills, in
 * the inject module's eviction stream (deterministic for a seed).
 *
 * THREADING. The loop thread only.
 */
#ifndef ODPEMU_EMU_EVICT_H
#define ODPEMU_EMU_EVICT_H

#include <stdint.h>

struct emu_daemon;
struct iopt;

/* A recent fault fill, for --evict-rate. */
struct emu_fill {
	struct iopt *iopt;
	uint64_t va, len;
};
#define EMU_FILLS 256

/* Evict what the rate makes due since the last tick. */
void emu_evict_tick(struct emu_daemon *d, uint64_t now);
/* When the next eviction is due (UINT64_MAX: none). */
uint64_t emu_evict_next(const struct emu_daemon *d);
/* Remember a fill: [va, va+len) of t was just made present. */
void emu_evict_note_fill(struct emu_daemon *d, struct iopt *t, uint64_t va, uint64_t len);

#endif
