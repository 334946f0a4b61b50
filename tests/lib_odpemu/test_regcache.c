/* SPDX-License-Identifier: MIT */
/* The reference registration cache (lib/regcache.c) over fake registrations
 * (regcache_fake.h), the rules that do not depend on the back-end: hits and misses, which
 * entry covers a request, LRU eviction by entries and bytes, references, invalidate,
 * destroy, bad input. The back-ends' own rules: test_regcache_backends.c; a randomized run against
 * a naive model: test_regcache_random.c; 100,000 entries and threads:
 * test_regcache_scale.c; the interval index: tests/ipc/test_interval.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "regcache_fake.h"
#include "t.h"

/* ---- behaviours ---- */

static void test_hit_miss(void)
{
	struct fake f;
	struct odpemu_regcache *c;
	struct odpemu_regcache_entry *e1, *e2, *e3;
	struct odpemu_regcache_stats s;

	fake_init(&f, 16, 64);
	c = cache_new(ODPEMU_REGCACHE_NONE, &f, 0, 0);
	e1 = get(c, (char *)PG(2) + 100, 200);
	T_CHECK(e1 && e1->addr == PG(2) && e1->length == pgsz && id_of(e1) == 1,
		"a miss registers the request's page");
	e2 = get(c, (char *)PG(2) + 5, 10);
	T_CHECK(e2 == e1, "same page: a hit on the same entry");
	e3 = get(c, (char *)PG(3) - 1, 2);
	T_CHECK(e3 && e3->addr == PG(2) && e3->length == 2 * pgsz && id_of(e3) == 2,
		"a request crossing into the next page is not covered: new entry of two pages");
	put(c, e1);
	put(c, e2);
	put(c, e3);
	s = stats(c);
	T_EQ(s.hits, 1, "hits");
	T_EQ(s.misses, 2, "misses");
	T_EQ(s.registrations, 2, "registrations");
	T_EQ(s.entries, 2, "entries");
	T_EQ(s.bytes, 3 * pgsz, "bytes");
	T_EQ(s.in_use, 0, "nothing in use");
	T_EQ(touch(c, PG(3), 1), 2, "page 3 is inside the two-page entry");
	destroy(c);
	T_EQ(f.regs, 2, "two registrations in all");
	fake_fini(&f);
}

/* Overlapping entries coexist; of several covering ones, the lowest start, then the
 * lowest end (regcache.h). */
static void test_covering_choice(void)
{
	struct fake f;
	struct odpemu_regcache *c;

	fake_init(&f, 16, 64);
	c = cache_new(ODPEMU_REGCACHE_NONE, &f, 0, 0);
	T_EQ(touch(c, PG(0), 2 * pgsz), 1, "A = [0,2)");
	T_EQ(touch(c, PG(1), 2 * pgsz), 2, "[1,3) overlaps A but A does not cover it: B");
	T_EQ(touch(c, PG(0), 1), 1, "[0,1): A");
	T_EQ(touch(c, PG(1), 1), 1, "[1,2): A and B cover, A starts lower");
	T_EQ(touch(c, PG(2), 1), 2, "[2,3): B");
	T_EQ(touch(c, PG(0), 3 * pgsz), 3, "[0,3): C");
	T_EQ(touch(c, (char *)PG(1) + 1, pgsz), 3, "[1,3): B and C cover, C starts lower");
	T_EQ(touch(c, PG(1), 1), 1, "[1,2): A and C start at 0, A ends lower");
	T_EQ(touch(c, (char *)PG(2) + 7, pgsz - 7), 3, "[2,3) within the page: C before B");
	T_EQ(touch(c, PG(5), 1), 4, "elsewhere: a miss");
	T_EQ(stats(c).entries, 4, "four entries");
	destroy(c);
	fake_fini(&f);
}

static void test_lru_entries(void)
{
	struct fake f;
	struct odpemu_regcache *c;
	struct odpemu_regcache_stats s;

	fake_init(&f, 16, 64);
	c = cache_new(ODPEMU_REGCACHE_NONE, &f, 3, 0);
	T_EQ(touch(c, PG(0), 1), 1, "A");
	T_EQ(touch(c, PG(1), 1), 2, "B");
	T_EQ(touch(c, PG(2), 1), 3, "C");
	T_EQ(touch(c, PG(0), 1), 1, "A again: LRU order B, C, A");
	T_EQ(touch(c, PG(3), 1), 4, "D evicts the least recently used");
	T_CHECK(f.live[1] && !f.live[2] && f.live[3] && f.live[4], "B evicted");
	T_EQ(touch(c, PG(4), 1), 5, "E");
	T_CHECK(f.live[1] && !f.live[3] && f.live[4] && f.live[5], "then C");
	T_EQ(touch(c, PG(1), 1), 6, "B is gone: registered anew");
	T_CHECK(!f.live[1] && f.live[4] && f.live[5] && f.live[6], "then A");
	s = stats(c);
	T_EQ(s.evictions, 3, "evictions");
	T_EQ(s.entries, 3, "at the limit");
	T_EQ(s.hits, 1, "one hit");
	T_EQ(s.deregistrations, 3, "evictions deregister");
	destroy(c);
	fake_fini(&f);
}

static void test_lru_bytes(void)
{
	struct fake f;
	struct odpemu_regcache *c;
	struct odpemu_regcache_entry *big;
	struct odpemu_regcache_stats s;

	fake_init(&f, 32, 64);
	c = cache_new(ODPEMU_REGCACHE_NONE, &f, 0, 4 * pgsz);
	T_EQ(touch(c, PG(0), 2 * pgsz), 1, "A: 2 pages");
	T_EQ(touch(c, PG(2), 1), 2, "B: 1 page");
	T_EQ(touch(c, PG(3), 1), 3, "C: 1 page (4 of 4)");
	T_EQ(stats(c).evictions, 0, "at the limit, not over");
	T_EQ(touch(c, PG(4), 2 * pgsz), 4, "D: 2 pages");
	T_CHECK(!f.live[1] && f.live[2] && f.live[3] && f.live[4], "A evicted: D fits");
	T_EQ(stats(c).bytes, 4 * pgsz, "4 pages");
	big = get(c, PG(10), 5 * pgsz);
	T_CHECK(big && id_of(big) == 5, "larger than max_bytes: registered all the same");
	s = stats(c);
	T_EQ(s.entries, 1, "everything unreferenced evicted to make room");
	T_EQ(s.bytes, 5 * pgsz, "over the limit while referenced");
	put(c, big);
	s = stats(c);
	T_EQ(s.entries, 0, "evicted at its put");
	T_EQ(s.evictions, 5, "A, B, C, D, the big one");
	destroy(c);
	fake_fini(&f);
}

/* References prevent eviction; the cache stays over its limit while they hold it. */
static void test_references(void)
{
	struct fake f;
	struct odpemu_regcache *c;
	struct odpemu_regcache_entry *a, *b, *cc, *d;

	fake_init(&f, 16, 64);
	c = cache_new(ODPEMU_REGCACHE_NONE, &f, 2, 0);
	a = get(c, PG(0), 1);
	b = get(c, PG(1), 1);
	cc = get(c, PG(2), 1);
	T_CHECK(a && b && cc, "three held");
	T_EQ(stats(c).entries, 3, "over the limit of 2: nothing evictable");
	T_EQ(stats(c).evictions, 0, "no eviction of referenced entries");
	T_EQ(stats(c).in_use, 3, "three in use");
	put(c, cc);
	T_CHECK(f.live[1] && f.live[2] && !f.live[3], "the first one put goes (LRU of one)");
	put(c, a);
	T_CHECK(f.live[1], "back at the limit: A stays");
	d = get(c, PG(3), 1);
	T_CHECK(!f.live[1] && f.live[2] && f.live[4], "D evicts A, not the held B");
	put(c, b);
	put(c, d);
	T_EQ(stats(c).entries, 2, "two");
	destroy(c);
	fake_fini(&f);
}

static void test_invalidate(void)
{
	struct fake f;
	struct odpemu_regcache *c;
	struct odpemu_regcache_entry *d;

	fake_init(&f, 128, 64);
	c = cache_new(ODPEMU_REGCACHE_NONE, &f, 0, 0);
	T_EQ(touch(c, PG(0), 2 * pgsz), 1, "A [0,2)");
	T_EQ(touch(c, PG(4), 2 * pgsz), 2, "B [4,6)");
	T_EQ(touch(c, PG(1), 4 * pgsz), 3, "C [1,5)");
	d = get(c, PG(8), 1);
	T_EQ(odpemu_regcache_invalidate(c, (char *)PG(2) - 1, 2), 0, "invalidate 2 bytes");
	T_CHECK(!f.live[1] && f.live[2] && !f.live[3] && f.live[4], "A and C overlap it, B not");
	T_EQ(stats(c).invalidations, 2, "two invalidated");
	T_EQ(odpemu_regcache_invalidate(c, PG(6), pgsz), 0, "[6,7)");
	T_CHECK(f.live[2], "B ends where it starts: untouched");
	T_EQ(odpemu_regcache_invalidate(c, PG(8), 1), 0, "the held entry");
	T_CHECK(f.live[4], "referenced: stays registered");
	T_EQ(touch(c, PG(8), 1), 5, "but out of lookups");
	put(c, d);
	T_CHECK(!f.live[4], "deregistered at its last put");
	T_EQ(odpemu_regcache_invalidate(c, NULL, (uintptr_t)PG(100)), 0, "from address 0 on");
	T_EQ(stats(c).entries, 0, "everything");
	T_EQ(stats(c).invalidations, 5, "A, C, D, B, E");
	destroy(c);
	fake_fini(&f);
}

/* Destroy refuses while anything is referenced (stale entries too) and leaves the cache
 * usable; then deregisters everything. */
static void test_destroy_busy(void)
{
	struct fake f;
	struct odpemu_regcache *c;
	struct odpemu_regcache_entry *e;

	fake_init(&f, 16, 64);
	c = cache_new(ODPEMU_REGCACHE_NOTIFY, &f, 0, 0);
	T_EQ(touch(c, PG(3), 1), 1, "an unreferenced entry");
	e = get(c, PG(1), 1);
	errno = 0;
	T_EQ(odpemu_regcache_destroy(c), EBUSY, "a live reference: EBUSY");
	T_EQ(errno, EBUSY, "errno");
	T_EQ(touch(c, PG(3), 1), 1, "still usable");
	fake_remap(&f, PG(1), 1);
	T_EQ(touch(c, PG(1), 1), 3, "the held entry went stale");
	T_EQ(odpemu_regcache_destroy(c), EBUSY, "a stale entry's reference: still EBUSY");
	put(c, e);
	T_EQ(f.live_mrs, 2, "two left");
	destroy(c);
	T_EQ(f.live_mrs, 0, "destroy deregistered them");
	fake_fini(&f);
}

static void test_bad_input(void)
{
	struct fake f;
	struct odpemu_regcache *c, *c2;
	struct odpemu_regcache_entry *e, *sentinel = (void *)0x1, *out = sentinel;
	struct odpemu_regcache_ops ops = fake_ops;
	struct odpemu_regcache_stats s;
	uintptr_t top = UINTPTR_MAX;

	fake_init(&f, 16, 64);
	errno = 0;
	T_CHECK(!odpemu_regcache_create(ODPEMU_REGCACHE_NONE, NULL, &f, 0, 0) && errno == EINVAL,
		"no ops");
	ops.reg = NULL;
	T_CHECK(!odpemu_regcache_create(ODPEMU_REGCACHE_NONE, &ops, &f, 0, 0), "no reg");
	ops = fake_ops;
	ops.dereg = NULL;
	T_CHECK(!odpemu_regcache_create(ODPEMU_REGCACHE_LEASE, &ops, &f, 0, 0), "no dereg");
	ops = fake_ops;
	ops.watch = NULL;
	T_CHECK(!odpemu_regcache_create(ODPEMU_REGCACHE_NOTIFY, &ops, &f, 0, 0), "no watch");
	c = odpemu_regcache_create(ODPEMU_REGCACHE_LEASE, &ops, &f, 0, 0);
	T_CHECK(c, "LEASE needs no watch");
	destroy(c);
	ops = fake_ops;
	ops.unwatch = NULL;
	T_CHECK(!odpemu_regcache_create(ODPEMU_REGCACHE_NOTIFY, &ops, &f, 0, 0), "no unwatch");
	ops = fake_ops;
	ops.restore = NULL;
	T_CHECK(!odpemu_regcache_create(ODPEMU_REGCACHE_LEASE, &ops, &f, 0, 0), "no restore");
	errno = 0;
	T_CHECK(!odpemu_regcache_create((enum odpemu_regcache_backend)7, &fake_ops, &f, 0, 0) &&
		errno == EINVAL, "unknown back-end");
	ops.watch = NULL;
	ops.unwatch = NULL;
	c = odpemu_regcache_create(ODPEMU_REGCACHE_NONE, &ops, &f, 0, 0);
	T_CHECK(c, "NONE needs only reg and dereg");
	destroy(c);

	c = cache_new(ODPEMU_REGCACHE_NOTIFY, &f, 0, 0);
	T_EQ(odpemu_regcache_get(NULL, PG(1), 1, &out), EINVAL, "get: NULL cache");
	T_EQ(odpemu_regcache_get(c, NULL, 1, &out), EINVAL, "get: NULL address");
	T_EQ(odpemu_regcache_get(c, PG(1), 0, &out), EINVAL, "get: len 0");
	T_EQ(odpemu_regcache_get(c, PG(1), 1, NULL), EINVAL, "get: NULL entry");
	errno = 0;
	T_EQ(odpemu_regcache_get(c, (void *)(top - 10), 100, &out), EINVAL, "get: addr+len wraps");
	T_EQ(errno, EINVAL, "errno");
	T_EQ(odpemu_regcache_get(c, (void *)(top - 100), 10, &out), EINVAL,
	     "get: the last page (its end is not representable)");
	T_EQ(odpemu_regcache_get(c, (void *)1, SIZE_MAX, &out), EINVAL, "get: SIZE_MAX");
	T_CHECK(out == sentinel, "*entry untouched on failure");

	f.fail_reg = EFAULT;
	T_EQ(odpemu_regcache_get(c, PG(1), 1, &out), EFAULT, "reg's error");
	T_EQ(errno, EFAULT, "errno");
	T_EQ(f.live_watches, 0, "the watch made for it is undone");
	f.fail_reg = -ENOMEM;
	T_EQ(odpemu_regcache_get(c, PG(1), 1, &out), ENOMEM, "a -errno from reg is read as errno");
	f.fail_watch = ENOSYS;
	T_EQ(odpemu_regcache_get(c, PG(1), 1, &out), ENOSYS, "watch's error");
	T_CHECK(out == sentinel, "*entry untouched on failure");
	s = stats(c);
	T_EQ(s.misses, 3, "failed gets are misses");
	T_EQ(s.registrations, 0, "no registration");
	T_EQ(s.entries, 0, "nothing cached");
	T_EQ(f.regs, 0, "a failed watch registers nothing");

	e = get(c, PG(1), 1);
	c2 = cache_new(ODPEMU_REGCACHE_NOTIFY, &f, 0, 0);
	T_EQ(odpemu_regcache_put(c2, e), EINVAL, "put: another cache's entry");
	T_EQ(odpemu_regcache_put(NULL, e), EINVAL, "put: NULL cache");
	T_EQ(odpemu_regcache_put(c, NULL), EINVAL, "put: NULL entry");
	put(c, e);
	T_EQ(odpemu_regcache_put(c, e), EINVAL, "put: no reference left");
	T_EQ(stats(c).in_use, 0, "the double put changed nothing");
	destroy(c2);

	T_EQ(odpemu_regcache_invalidate(NULL, PG(1), 1), EINVAL, "invalidate: NULL");
	T_EQ(odpemu_regcache_invalidate(c, PG(1), 0), EINVAL, "invalidate: len 0");
	T_EQ(odpemu_regcache_invalidate(c, (void *)(top - 10), 100), EINVAL, "invalidate: wraps");
	T_EQ(odpemu_regcache_stats(NULL, &s), EINVAL, "stats: NULL cache");
	T_EQ(odpemu_regcache_stats(c, NULL), EINVAL, "stats: NULL");
	T_EQ(odpemu_regcache_destroy(NULL), EINVAL, "destroy: NULL");
	T_EQ(stats(c).entries, 1, "bad calls changed nothing");
	destroy(c);

	T_CHECK(!strcmp(odpemu_regcache_backend_str(ODPEMU_REGCACHE_NONE), "NONE"), "NONE");
	T_CHECK(!strcmp(odpemu_regcache_backend_str(ODPEMU_REGCACHE_NOTIFY), "NOTIFY"), "NOTIFY");
	T_CHECK(!strcmp(odpemu_regcache_backend_str(ODPEMU_REGCACHE_LEASE), "LEASE"), "LEASE");
	T_CHECK(!strcmp(odpemu_regcache_backend_str((enum odpemu_regcache_backend)9), "UNKNOWN"),
		"UNKNOWN");
	fake_fini(&f);
}

int main(void)
{
	pgsz = (size_t)sysconf(_SC_PAGESIZE);
	test_hit_miss();
	test_covering_choice();
	test_lru_entries();
	test_lru_bytes();
	test_references();
	test_invalidate();
	test_destroy_busy();
	test_bad_input();
	return t_done("regcache");
}
