/* SPDX-License-Identifier: MIT */
/* The registration cache at scale, over fake registrations (regcache_fake.h): 100,000
 * entries (lookups timed, not asserted; invalidate and LRU at that size), and threads
 * getting, putting, invalidating and writing Z words at once. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "regcache_fake.h"
#include "t.h"

/* ---- scale ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* n entries (every other page), then n random lookups: all hits. Returns ns per lookup. */
static double fill_and_look(struct odpemu_regcache *c, size_t n, struct t_rng *r)
{
	uint64_t t0;
	size_t hits = 0;

	for (size_t i = 0; i < n; i++)
		touch(c, PG(2 * i), 1);
	t0 = now_ns();
	for (size_t i = 0; i < 100000; i++) {
		struct odpemu_regcache_entry *e = NULL;
		size_t k = t_below(r, n);

		if (!odpemu_regcache_get(c, (char *)PG(2 * k) + 8, 64, &e)) {
			hits += e->addr == PG(2 * k);
			odpemu_regcache_put(c, e);
		}
	}
	T_EQ(hits, 100000, "every lookup finds its entry");
	return (double)(now_ns() - t0) / 100000;
}

/* 100,000 entries: lookups stay O(log n) (timings printed, not asserted: a loaded CI
 * machine must not fail a test on time); one invalidate drops them all; LRU at scale. */
static void test_many(struct t_rng *r)
{
	enum { N = 100000 };
	struct fake f;
	struct odpemu_regcache *c;
	struct odpemu_regcache_stats s;
	double small, mid, big;
	size_t live = 0;

	fake_init(&f, 2 * N + 2, 3 * N);
	c = cache_new(ODPEMU_REGCACHE_NOTIFY, &f, 0, 0);
	small = fill_and_look(c, 1000, r);
	T_EQ(odpemu_regcache_invalidate(c, PG(0), 2 * N * pgsz), 0, "invalidate all");
	mid = fill_and_look(c, N / 10, r);
	T_EQ(odpemu_regcache_invalidate(c, PG(0), 2 * N * pgsz), 0, "invalidate all");
	big = fill_and_look(c, N, r);
	s = stats(c);
	T_EQ(s.entries, N, "100,000 entries");
	T_EQ(s.hits, 300000, "hits");
	T_EQ(odpemu_regcache_invalidate(c, PG(0), 2 * N * pgsz), 0, "invalidate all");
	s = stats(c);
	T_EQ(s.entries, 0, "all gone");
	T_EQ(s.invalidations, 1000 + N / 10 + N, "each counted");
	printf("lookup: %.0f ns with 1,000 entries, %.0f ns with 10,000, %.0f ns with 100,000 "
	       "(not asserted)\n", small, mid, big);
	destroy(c);

	c = cache_new(ODPEMU_REGCACHE_NONE, &f, N / 2, 0);
	for (size_t i = 0; i < N; i++)
		touch(c, PG(2 * i), 1);
	s = stats(c);
	T_EQ(s.entries, N / 2, "at the limit");
	T_EQ(s.evictions, N / 2, "the rest evicted");
	for (size_t i = 0; i < N; i++)
		live += f.live[f.regs - N + 1 + i];
	T_EQ(live, N / 2, "half of the second cache's registrations live");
	T_CHECK(!f.live[f.regs - N + 1] && f.live[f.regs], "the oldest went, the newest stay");
	destroy(c);
	fake_fini(&f);
}

/* ---- threads: gets, puts, invalidations and Z writes at once ---- */
struct thr {
	struct odpemu_regcache *c;
	struct fake *f;
	uint64_t seed;
	bool remapper;
	unsigned gets, bad;		/* t.h's counters are not thread-safe: counted here */
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	struct t_rng r = { t->seed };
	struct odpemu_regcache_entry *mine[4];
	unsigned n = 0;

	for (unsigned i = 0; i < 20000; i++) {
		uintptr_t a = FAKE_BASE + t_below(&r, 60 * pgsz);
		size_t len = 1 + t_below(&r, 2 * pgsz);

		if (t->remapper && !t_below(&r, 4)) {
			if (t_below(&r, 2))
				fake_remap(t->f, (void *)a, len);
			else
				t->bad += odpemu_regcache_invalidate(t->c, (void *)a, len) != 0;
			continue;
		}
		if (n == 4 || (n && t_below(&r, 2))) {
			t->bad += odpemu_regcache_put(t->c, mine[--n]) != 0;
			continue;
		}
		if (!odpemu_regcache_get(t->c, (void *)a, len, &mine[n])) {
			t->bad += !((uintptr_t)mine[n]->addr <= a &&
				    (uintptr_t)mine[n]->addr + mine[n]->length >= a + len);
			n++;
			t->gets++;
		} else {
			t->bad++;
		}
	}
	while (n)
		t->bad += odpemu_regcache_put(t->c, mine[--n]) != 0;
	return NULL;
}

static void test_threads(void)
{
	enum { NT = 4 };
	struct fake f;
	struct odpemu_regcache *c;
	struct thr t[NT];
	pthread_t th[NT];
	struct odpemu_regcache_stats s;
	unsigned gets = 0;

	fake_init(&f, 64, 0);
	c = cache_new(ODPEMU_REGCACHE_NOTIFY, &f, 20, 0);
	for (int i = 0; i < NT; i++) {
		t[i] = (struct thr){ .c = c, .f = &f, .seed = 100 + (uint64_t)i,
				     .remapper = i == 0 };
		if (pthread_create(&th[i], NULL, thr_main, &t[i]))
			abort();
	}
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	/* only now: the fake's checks count in t.h's globals from the threads (under the
	 * cache's mutex), and so would these */
	for (int i = 0; i < NT; i++) {
		gets += t[i].gets;
		T_EQ(t[i].bad, 0, "thread: failed calls or entries not covering");
	}
	s = stats(c);
	T_EQ(s.hits + s.misses, gets, "every get counted once");
	T_EQ(s.registrations - s.deregistrations, s.entries, "registrations balance");
	T_EQ(s.in_use, 0, "nothing in use");
	T_CHECK(s.entries <= 20, "within the limit once nothing is held");
	T_EQ(f.live_mrs, s.entries, "the fake agrees");
	printf("threads: %u gets, %" PRIu64 " hits, %" PRIu64 " stale drops, %" PRIu64
	       " invalidations\n", gets, s.hits, s.stale_drops, s.invalidations);
	destroy(c);
	fake_fini(&f);
}

int main(int argc, char **argv)
{
	struct t_rng r = { t_seed(argc, argv, 16) };

	pgsz = (size_t)sysconf(_SC_PAGESIZE);
	test_many(&r);
	test_threads();
	return t_done("regcache-scale");
}
