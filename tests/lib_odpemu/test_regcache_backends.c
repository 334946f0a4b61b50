/* SPDX-License-Identifier: MIT */
/* The registration cache's three back-ends over fake registrations (regcache_fake.h):
 * NONE reproduces the classic stale-registration bug, NOTIFY drops on a set Z word, LEASE
 * marks at decoherence and restores at the next get. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "regcache_fake.h"
#include "t.h"

/* ---- the back-ends ---- */

/* NONE: after a remap at the same address the cache hands out the old registration, and
 * the data sent is the old pages' — the 2009 bug (COHERENCE.md), reproduced on purpose. */
static void test_none_classic_bug(void)
{
	struct fake f;
	struct odpemu_regcache *c;
	struct odpemu_regcache_entry *e;

	fake_init(&f, 16, 64);
	c = cache_new(ODPEMU_REGCACHE_NONE, &f, 0, 0);
	e = get(c, PG(1), 100);
	T_CHECK(e && fresh(&f, e, PG(1), 100), "fresh after registration");
	put(c, e);
	fake_remap(&f, PG(1), pgsz);	/* free(A); munmap; B = malloc() at the same address */
	e = get(c, PG(1), 100);
	T_EQ(id_of(e), 1, "the same old registration");
	T_CHECK(e && !fresh(&f, e, PG(1), 100), "and it sends the old pages (the bug)");
	put(c, e);
	T_EQ(stats(c).stale_drops, 0, "NONE never drops");
	T_EQ(stats(c).hits, 1, "a hit");
	destroy(c);
	fake_fini(&f);
}

static void test_notify(void)
{
	struct fake f;
	struct odpemu_regcache *c;
	struct odpemu_regcache_entry *e, *e2, *held;
	struct odpemu_regcache_stats s;

	fake_init(&f, 16, 64);
	c = cache_new(ODPEMU_REGCACHE_NOTIFY, &f, 0, 0);
	e = get(c, PG(1), 100);
	T_EQ(f.live_watches, 1, "a watch per entry");
	T_CHECK(f.watches.next->addr == (uintptr_t)PG(1) && f.watches.next->len == pgsz,
		"over the entry's range");
	put(c, e);

	fake_remap(&f, PG(1), pgsz);
	T_EQ(*f.watches.next->z, 1, "the notifier set the entry's Z word");
	e = get(c, PG(1), 100);
	T_EQ(id_of(e), 2, "a set Z word: the entry is dropped, the range registered anew");
	T_CHECK(e && fresh(&f, e, PG(1), 100), "fresh data");
	T_CHECK(!f.live[1], "the old registration is gone");
	T_EQ(f.live_watches, 1, "its watch too; the new entry has its own");
	s = stats(c);
	T_EQ(s.stale_drops, 1, "one stale drop");
	T_EQ(s.misses, 2, "the stale lookup counts as a miss");
	put(c, e);

	fake_remap(&f, PG(5), pgsz);
	T_EQ(touch(c, PG(1), 100), 2, "a change elsewhere leaves the entry");

	/* a referenced entry whose word is set: stale, out of lookups, deregistered at its
	 * last put */
	held = get(c, PG(1), 100);
	fake_remap(&f, PG(1), pgsz);
	e2 = get(c, PG(1), 100);
	T_EQ(id_of(e2), 3, "a new entry for new lookups");
	T_CHECK(f.live[2], "the held one stays registered under its holder");
	T_EQ(stats(c).entries, 2, "the stale entry counts until its put");
	put(c, held);
	T_CHECK(!f.live[2] && f.live[3], "deregistered at its last put");
	T_EQ(stats(c).stale_drops, 2, "two stale drops");

	/* a set word noticed at the last put */
	fake_remap(&f, PG(1), pgsz);
	put(c, e2);
	T_CHECK(!f.live[3], "dropped at the put that released it");
	s = stats(c);
	T_EQ(s.stale_drops, 3, "three stale drops");
	T_EQ(s.entries, 0, "nothing cached");
	T_EQ(f.live_watches, 0, "no watch left");

	/* a registration that moves the pages sets its own word: it serves its get, and the
	 * next lookup replaces it once */
	f.reg_moves = true;
	e = get(c, PG(7), 1);
	T_CHECK(e && id_of(e) == 4 && fresh(&f, e, PG(7), 1), "served, fresh");
	put(c, e);
	T_EQ(touch(c, PG(7), 1), 5, "replaced at the next lookup");
	T_EQ(touch(c, PG(7), 1), 5, "then stable");
	destroy(c);
	fake_fini(&f);
}

/* LEASE: decoherent only marks; the next get restores (or drops on failure). */
static void test_lease(void)
{
	struct fake f;
	struct odpemu_regcache *c, *other;
	struct odpemu_regcache_entry *e, *e2, *held;
	struct odpemu_regcache_stats s;
	void *handle;

	fake_init(&f, 16, 64);
	c = cache_new(ODPEMU_REGCACHE_LEASE, &f, 0, 0);
	/* held: decoherent marks it; the get of another user restores it under the holder */
	held = get(c, PG(1), 100);
	fake_remap(&f, PG(1), pgsz);
	T_EQ(lease_break(&f, c, PG(1), pgsz), 0, "MR_DECOHERENCE -> decoherent");
	T_EQ(stats(c).restores, 0, "decoherent restores nothing");
	T_CHECK(held && !fresh(&f, held, PG(1), 100), "still on the old pages until a get");
	e = get(c, PG(1), 100);
	T_CHECK(e && e == held && id_of(e) == 1, "the next get: the same entry and handle");
	T_CHECK(held && fresh(&f, held, PG(1), 100), "restored under the holder");
	s = stats(c);
	T_EQ(s.restores, 1, "one restore");
	T_EQ(s.hits, 1, "a hit");
	put(c, e);
	put(c, held);

	/* cached: decoherent twice, then one get restores once */
	handle = held ? held->handle : NULL;
	fake_remap(&f, PG(1), pgsz);
	T_EQ(lease_break(&f, c, PG(1), pgsz), 0, "decoherent");
	T_EQ(lease_break(&f, c, PG(1), pgsz), 0, "decoherent again: the same mark");
	T_CHECK(!handle_fresh(&f, handle, PG(1), 100), "not restored while cached");
	e = get(c, PG(1), 100);
	T_EQ(id_of(e), 1, "the same handle, a hit");
	T_CHECK(e && fresh(&f, e, PG(1), 100), "fresh data");
	put(c, e);
	T_EQ(touch(c, PG(1), 100), 1, "then a plain hit");
	s = stats(c);
	T_EQ(s.restores, 2, "one restore for two marks");
	T_EQ(s.registrations, 1, "no new registration");
	T_EQ(s.hits, 3, "hits");
	T_EQ(s.misses, 1, "one miss");

	/* put does not restore; a broken entry invalidated is deregistered, not restored */
	held = get(c, PG(1), 100);
	fake_remap(&f, PG(1), pgsz);
	T_EQ(lease_break(&f, c, PG(1), pgsz), 0, "decoherent");
	put(c, held);
	T_EQ(stats(c).restores, 2, "put does not restore");
	T_EQ(odpemu_regcache_invalidate(c, PG(1), 1), 0, "invalidate");
	T_CHECK(!f.live[1], "invalidated: deregistered");
	T_EQ(stats(c).restores, 2, "without a restore");

	/* a failed restore at the get (nothing mapped there now) drops the entry and the get
	 * registers anew */
	T_EQ(touch(c, PG(1), 100), 2, "B");
	fake_remap(&f, PG(1), pgsz);
	T_EQ(lease_break(&f, c, PG(1), pgsz), 0, "decoherent");
	f.fail_restore = EFAULT;
	e = get(c, PG(1), 100);
	T_EQ(id_of(e), 3, "registered anew");
	T_CHECK(e && fresh(&f, e, PG(1), 100), "fresh data");
	T_CHECK(!f.live[2], "unreferenced: deregistered now");
	s = stats(c);
	T_EQ(s.stale_drops, 1, "a stale drop");
	T_EQ(s.misses, 3, "the get counts as a miss");
	T_EQ(s.registrations, 3, "registrations");
	T_EQ(s.restores, 2, "no restore");
	put(c, e);

	/* referenced and its restore fails: stale, stays broken, deregistered at its put */
	held = get(c, PG(1), 100);
	fake_remap(&f, PG(1), pgsz);
	T_EQ(lease_break(&f, c, PG(1), pgsz), 0, "decoherent");
	f.fail_restore = EFAULT;
	e = get(c, PG(1), 100);
	T_EQ(id_of(e), 4, "a new entry for new lookups");
	T_CHECK(f.live[3], "the held one stays registered under its holder");
	T_CHECK(held && !fresh(&f, held, PG(1), 100), "and is never restored");
	T_EQ(odpemu_regcache_decoherent(c, held ? held->handle : NULL), 0,
	     "a stale entry is still registered: marked, not restored");
	T_EQ(stats(c).restores, 2, "no restore");
	put(c, held);
	T_CHECK(!f.live[3] && f.live[4], "deregistered at its last put");
	put(c, e);
	s = stats(c);
	T_EQ(s.stale_drops, 2, "two failed restores dropped");
	T_EQ(s.entries, 1, "one entry left");

	T_EQ(odpemu_regcache_decoherent(c, &f), ENOENT, "a handle that is not the cache's");
	T_EQ(errno, ENOENT, "errno");
	T_EQ(odpemu_regcache_decoherent(NULL, &f), EINVAL, "NULL cache");
	other = cache_new(ODPEMU_REGCACHE_NOTIFY, &f, 0, 0);
	T_EQ(odpemu_regcache_decoherent(other, &f), EINVAL, "not a LEASE cache");
	destroy(other);
	destroy(c);

	/* a broken entry evicted is deregistered, not restored */
	c = cache_new(ODPEMU_REGCACHE_LEASE, &f, 1, 0);
	T_EQ(touch(c, PG(3), 1), 5, "E");
	fake_remap(&f, PG(3), pgsz);
	T_EQ(lease_break(&f, c, PG(3), pgsz), 0, "decoherent");
	T_EQ(touch(c, PG(5), 1), 6, "F evicts E");
	T_CHECK(!f.live[5], "E deregistered");
	s = stats(c);
	T_EQ(s.evictions, 1, "an eviction");
	T_EQ(s.restores, 0, "no restore");
	T_EQ(s.stale_drops, 0, "not a stale drop");
	e2 = get(c, PG(5), 1);
	T_CHECK(e2 && odpemu_regcache_decoherent(c, e2->handle) == 0, "F marked");
	put(c, e2);
	T_EQ(stats(c).restores, 0, "destroyed broken, without a restore");
	destroy(c);
	fake_fini(&f);
}

int main(void)
{
	pgsz = (size_t)sysconf(_SC_PAGESIZE);
	test_none_classic_bug();
	test_notify();
	test_lease();
	return t_done("regcache-backends");
}
