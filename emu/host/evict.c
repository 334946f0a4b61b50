/* SPDX-License-Identifier: MIT */
/*
 * evict — --evict-rate: drop random present pages of ODP MRs, so faults happen in steady
 * traffic too (a host under memory pressure, or khugepaged and page migration, which
 * invalidate ODP mappings on real systems). Deterministic for a seed and a sequence of
 * ticks: the page is drawn from the inject module's eviction stream.
 */
#include "daemon.h"
#include "evict.h"
#include "inject/inject.h"
#include "nic.h"
#include "session.h"

#define EVICT_MAX_PER_TICK 1024

/* Remember a fill (ports.c calls this for every completed fault): evictions pick from the
 * recent fills rather than walking page tables, which for implicit ODP span 2^47 bytes. */
void emu_evict_note_fill(struct emu_daemon *d, struct iopt *t, uint64_t va, uint64_t len)
{
	struct emu_fill *f = &d->fills[d->nfills++ % EMU_FILLS];

	f->iopt = t;
	f->va = va;
	f->len = len;
}

/* Is t still the page table of a live ODP MR? (A fill may outlive its MR.) */
static bool live(struct emu_daemon *d, const struct iopt *t)
{
	for (struct emu_session *s = d->sessions; s; s = s->next)
		emu_for_each_obj(mr, s, EMU_OBJ_MR)
			if (!mr->u.mr.pin && nic_mr_iopt(mr->u.mr.mr) == t)
				return true;
	return false;
}

/* Drop one random page of one recent fill; false if it was gone already. */
static bool evict_one(struct emu_daemon *d)
{
	unsigned n = d->nfills < EMU_FILLS ? d->nfills : EMU_FILLS;
	struct emu_fill *f;
	uint64_t page;

	if (!n)
		return false;
	f = &d->fills[emu_rng_next(&d->inject.evict_rng) % n];
	if (!f->iopt || !live(d, f->iopt))
		return false;
	page = f->va + (emu_rng_next(&d->inject.evict_rng) % (f->len >> 12) << 12);
	return iopt_invalidate(f->iopt, page, 4096) > 0;
}

void emu_evict_tick(struct emu_daemon *d, uint64_t now)
{
	unsigned due = emu_inject_evictions_due(&d->inject, now - d->evict_last_ns);

	d->evict_last_ns = now;
	if (due > EVICT_MAX_PER_TICK)
		due = EVICT_MAX_PER_TICK;
	for (unsigned i = 0; i < due; i++)
		if (evict_one(d))
			d->ctr.evictions++;
}

uint64_t emu_evict_next(const struct emu_daemon *d)
{
	/* evict_per_s and evict_left_ns belong to the loop thread (inject.h) */
	return d->inject.evict_per_s > 0 ? d->evict_last_ns + d->inject.evict_left_ns : UINT64_MAX;
}
