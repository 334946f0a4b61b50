/* SPDX-License-Identifier: MIT */
/* The registration cache against a naive model (below), over fake registrations
 * (regcache_fake.h): random gets, puts, remaps, invalidations and failures with each
 * back-end, with and without limits, every lookup and counter compared. --seed N (or
 * $T_SEED) repeats a run. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "regcache_fake.h"
#include "t.h"

/* ---- the randomized run against a naive model ----
 * The model keeps the registered entries in an array and decides everything by linear
 * search, following regcache.h's rules literally: the covering entry with the lowest
 * (start, end); NOTIFY drops one whose Z was set; LEASE restores a broken one (marked by
 * decoherent) at the get that finds it, or drops it if the restore fails; LRU by the time
 * of the last put; limits checked before a miss registers and after a put. Every
 * lookup's answer (which registration, which range) and every counter is compared after
 * every operation. */
#define R_ARENA 32			/* pages */
#define R_HELD 16

struct m_entry {
	uintptr_t start, end;
	struct fake_mr *mr;		/* what the cache registered for it */
	unsigned id;
	size_t refs;
	bool indexed, fired;
	bool broken;			/* LEASE: decoherent since its last restore */
	uint64_t stamp;			/* the time of its last put (LRU) */
};

struct model {
	enum odpemu_regcache_backend b;
	size_t max_entries, max_bytes;
	struct m_entry **e;
	size_t n, cap;
	uint64_t clock;
	unsigned next_id;
	struct odpemu_regcache_stats st;
};

static void m_release(struct model *m, struct m_entry *x)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->e[i] == x) {
			m->e[i] = m->e[--m->n];
			break;
		}
	}
	m->st.deregistrations++;
	m->st.entries--;
	m->st.bytes -= x->end - x->start;
	free(x);
}

static void m_drop(struct model *m, struct m_entry *x)
{
	x->indexed = false;
	if (!x->refs)
		m_release(m, x);
}

static bool m_over(const struct model *m, size_t ne, size_t nb)
{
	return m->st.entries + ne > m->max_entries || nb > m->max_bytes ||
	       m->st.bytes > m->max_bytes - nb;
}

static void m_evict(struct model *m, size_t ne, size_t nb)
{
	while (m_over(m, ne, nb)) {
		struct m_entry *lru = NULL;

		for (size_t i = 0; i < m->n; i++)
			if (m->e[i]->indexed && !m->e[i]->refs &&
			    (!lru || m->e[i]->stamp < lru->stamp))
				lru = m->e[i];
		if (!lru)
			break;
		m->st.evictions++;
		m_drop(m, lru);
	}
}

/* Whether a found entry may be handed out (regcache.h); a LEASE restore consumes
 * *fail_restore, as the fake's one-shot failure. */
static bool m_usable(struct model *m, struct m_entry *x, int *fail_restore)
{
	if (m->b == ODPEMU_REGCACHE_NOTIFY)
		return !x->fired;
	if (m->b != ODPEMU_REGCACHE_LEASE || !x->broken)
		return true;
	if (*fail_restore) {
		*fail_restore = 0;
		return false;
	}
	x->broken = false;
	m->st.restores++;
	return true;
}

/* A get; *rc the error expected from the injected failures. */
static struct m_entry *m_get(struct model *m, uintptr_t addr, size_t len, int fail_watch,
			     int fail_reg, int fail_restore, int *rc)
{
	uintptr_t s = addr & ~(pgsz - 1), e = (addr + len + pgsz - 1) & ~(pgsz - 1);
	struct m_entry *best, *x;

	*rc = 0;
	for (;;) {
		best = NULL;
		for (size_t i = 0; i < m->n; i++) {
			x = m->e[i];
			if (x->indexed && x->start <= s && x->end >= e &&
			    (!best || x->start < best->start ||
			     (x->start == best->start && x->end < best->end)))
				best = x;
		}
		if (!best || m_usable(m, best, &fail_restore))
			break;
		m->st.stale_drops++;
		m_drop(m, best);
	}
	if (best) {
		m->st.hits++;
		if (!best->refs++)
			m->st.in_use++;
		return best;
	}
	m->st.misses++;
	m_evict(m, 1, e - s);
	if ((m->b == ODPEMU_REGCACHE_NOTIFY && (*rc = fail_watch)) || (*rc = fail_reg))
		return NULL;
	if (!(x = calloc(1, sizeof(*x))))
		abort();
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		if (!(m->e = realloc(m->e, m->cap * sizeof(*m->e))))
			abort();
	}
	m->e[m->n++] = x;
	x->start = s;
	x->end = e;
	x->id = ++m->next_id;
	x->refs = 1;
	x->indexed = true;
	m->st.registrations++;
	m->st.entries++;
	m->st.bytes += e - s;
	m->st.in_use++;
	return x;
}

static void m_put(struct model *m, struct m_entry *x)
{
	if (--x->refs)
		return;
	m->st.in_use--;
	if (!x->indexed) {
		m_release(m, x);
	} else if (m->b == ODPEMU_REGCACHE_NOTIFY && x->fired) {
		m->st.stale_drops++;
		m_drop(m, x);
	} else {
		x->stamp = ++m->clock;
		m_evict(m, 0, 0);
	}
}

static void m_invalidate(struct model *m, uintptr_t a, size_t len)
{
	for (size_t i = m->n; i-- > 0;) {	/* m_release moves the last entry to i */
		struct m_entry *x = m->e[i];

		if (x->indexed && overlaps(x->start, x->end - x->start, a, len)) {
			m->st.invalidations++;
			m_drop(m, x);
		}
	}
}

struct r_held {
	struct odpemu_regcache_entry *e;
	struct m_entry *m;
};

struct r_run {
	struct odpemu_regcache *c;
	struct fake f;
	struct model m;
	struct t_rng r;
	struct r_held held[R_HELD];
	size_t nheld;
	unsigned op, gets, stale_sends;
};

static void r_compare(struct odpemu_regcache *c, struct fake *f, const struct model *m,
		      unsigned op)
{
	struct odpemu_regcache_stats s = stats(c);
	const struct odpemu_regcache_stats *w = &m->st;

	T_CHECK(s.hits == w->hits && s.misses == w->misses &&
		s.registrations == w->registrations && s.deregistrations == w->deregistrations &&
		s.evictions == w->evictions && s.stale_drops == w->stale_drops &&
		s.restores == w->restores && s.invalidations == w->invalidations &&
		s.entries == w->entries && s.bytes == w->bytes && s.in_use == w->in_use,
		"op %u: counters differ from the model", op);
	T_EQ(f->live_mrs, m->n, "live registrations = the model's");
	if (m->b == ODPEMU_REGCACHE_NOTIFY)
		T_EQ(f->live_watches, m->n, "a watch per registration");
}

/* One remap in the randomized run: the fake's pages and Z words, the model's fired
 * flags, and for LEASE the decoherence handler entry by entry (sometimes twice): it only
 * marks, so nothing but the marks may change (r_compare checks the counters). */
static void r_remap(struct odpemu_regcache *c, struct fake *f, struct model *m,
		    struct t_rng *r, uintptr_t a, size_t len)
{
	struct m_entry *hit[256];
	size_t n = 0;

	fake_remap(f, (void *)a, len);
	for (size_t i = 0; i < m->n && n < 256; i++) {
		if (!overlaps(m->e[i]->start, m->e[i]->end - m->e[i]->start, a, len))
			continue;
		m->e[i]->fired = true;
		hit[n++] = m->e[i];
	}
	if (m->b != ODPEMU_REGCACHE_LEASE)
		return;
	for (size_t i = 0; i < n; i++) {
		struct m_entry *x = hit[i];

		T_EQ(odpemu_regcache_decoherent(c, x->mr), 0, "decoherent");
		if (!t_below(r, 4))
			T_EQ(odpemu_regcache_decoherent(c, x->mr), 0, "decoherent again");
		x->broken = true;
		T_CHECK(!handle_fresh(f, x->mr, (void *)x->start, x->end - x->start),
			"a broken registration is not restored before the next get");
	}
}

/* One get of the run: the cache's answer against the model's, then held or put. */
static void r_get(struct r_run *run, uintptr_t a, size_t len, bool hold)
{
	struct odpemu_regcache_entry *e = NULL;
	struct m_entry *x;
	int fw = t_below(&run->r, 33) ? 0 : ENOSYS, fr = t_below(&run->r, 33) ? 0 : EFAULT;
	int fres = run->m.b == ODPEMU_REGCACHE_LEASE && !t_below(&run->r, 8) ? EFAULT : 0;
	int want, rc;

	run->f.fail_watch = fw;
	run->f.fail_reg = fr;
	run->f.fail_restore = fres;
	rc = odpemu_regcache_get(run->c, (void *)a, len, &e);
	run->f.fail_watch = run->f.fail_reg = run->f.fail_restore = 0;
	x = m_get(&run->m, a, len, fw, fr, fres, &want);
	T_EQ(rc, want, "get's result");
	if (rc || !x)
		return;
	if (!x->mr) {
		x->mr = e->handle;
		T_EQ(x->mr->id, x->id, "a new registration, as the model");
	}
	T_CHECK(e->handle == x->mr && (uintptr_t)e->addr == x->start &&
		e->length == x->end - x->start,
		"op %u: [%#zx,+%zu) gave id %u [%#zx,+%zu), model id %u", run->op, (size_t)a,
		len, id_of(e), (size_t)(uintptr_t)e->addr, e->length, x->id);
	run->gets++;
	if (!fresh(&run->f, e, (void *)a, len)) {
		run->stale_sends++;
		T_CHECK(run->m.b == ODPEMU_REGCACHE_NONE, "op %u: %s sent stale data", run->op,
			odpemu_regcache_backend_str(run->m.b));
	}
	if (hold) {
		run->held[run->nheld].e = e;
		run->held[run->nheld++].m = x;
	} else {
		put(run->c, e);
		m_put(&run->m, x);
	}
}

static void r_put(struct r_run *run, size_t i)
{
	put(run->c, run->held[i].e);
	m_put(&run->m, run->held[i].m);
	run->held[i] = run->held[--run->nheld];
}

/* 10,000 operations: 45% get and hold, 30% put, 12% remap, 5% invalidate, 8% get and
 * put (also when there is nothing to put, or enough held). */
static void test_random(enum odpemu_regcache_backend b, size_t max_entries, size_t max_bytes,
			uint64_t seed)
{
	struct r_run *run = calloc(1, sizeof(*run));
	struct model *m;

	if (!run)
		abort();
	m = &run->m;
	run->r.s = seed;
	m->b = b;
	m->max_entries = max_entries ? max_entries : SIZE_MAX;
	m->max_bytes = max_bytes ? max_bytes : SIZE_MAX;
	fake_init(&run->f, R_ARENA + 8, 0);
	run->c = cache_new(b, &run->f, max_entries, max_bytes);
	for (run->op = 0; run->op < 10000; run->op++) {
		unsigned what = (unsigned)t_below(&run->r, 100);
		unsigned long failures = t_failures;
		uintptr_t a = FAKE_BASE + t_below(&run->r, (R_ARENA - 4) * pgsz);
		size_t len = 1 + t_below(&run->r, 3 * pgsz);

		if (what < 45 ? run->nheld == R_HELD : what < 75 && !run->nheld)
			what = 92;
		if (what < 45 || what >= 92) {
			r_get(run, a, len, what < 45);
		} else if (what < 75) {
			r_put(run, t_below(&run->r, run->nheld));
		} else if (what < 87) {
			r_remap(run->c, &run->f, m, &run->r, a, len);
		} else {
			T_EQ(odpemu_regcache_invalidate(run->c, (void *)a, len), 0, "invalidate");
			m_invalidate(m, a, len);
		}
		r_compare(run->c, &run->f, m, run->op);
		if (t_failures != failures) {
			printf("random %s: first difference at op %u\n",
			       odpemu_regcache_backend_str(b), run->op);
			break;
		}
	}
	while (run->nheld)
		r_put(run, run->nheld - 1);
	r_compare(run->c, &run->f, m, run->op);
	printf("random %s (max %zu entries, %zu bytes): %u gets, %" PRIu64 " hits, %" PRIu64
	       " evictions, %" PRIu64 " stale drops, %" PRIu64 " restores, %u stale sends\n",
	       odpemu_regcache_backend_str(b), max_entries, max_bytes, run->gets, m->st.hits,
	       m->st.evictions, m->st.stale_drops, m->st.restores, run->stale_sends);
	if (b == ODPEMU_REGCACHE_NONE)
		T_CHECK(run->stale_sends > 0, "NONE: the random run met the classic bug");
	destroy(run->c);
	while (m->n)
		m_release(m, m->e[m->n - 1]);
	free(m->e);
	fake_fini(&run->f);
	free(run);
}

int main(int argc, char **argv)
{
	uint64_t seed = t_seed(argc, argv, 16);

	pgsz = (size_t)sysconf(_SC_PAGESIZE);
	for (int b = ODPEMU_REGCACHE_NONE; b <= ODPEMU_REGCACHE_LEASE; b++) {
		test_random((enum odpemu_regcache_backend)b, 6, 10 * pgsz, seed + (uint64_t)b);
		test_random((enum odpemu_regcache_backend)b, 0, 0, seed + 10 + (uint64_t)b);
	}
	return t_done("regcache-random");
}
