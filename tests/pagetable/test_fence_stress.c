/* SPDX-License-Identifier: MIT */
/*
 * Concurrency stress of the fence with canary pages. Three threads share one domain:
 *  - data path: dma_begin, translate (write), copy a stamp into every host page of the
 *    extents, check each page is still live and belongs to that va, dma_end; on a miss,
 *    fault and wait (or not, as after an RNR NAK);
 *  - notifier: invalidate_begin, unmap or remap host pages, then kill the old pages: mark
 *    them dead and fill them with a canary, invalidate_end; dead pages sit in quarantine and
 *    their canary is verified before reuse and at the end;
 *  - fault handler: pop_wait, resolve each window against the host map (first touch
 *    allocates), complete; on -EAGAIN resolve again.
 * Any copy into a page after its invalidate returned breaks a canary, or is seen dead by the
 * copier, or (under TSan) is a data race with the canary fill. Bounded in count and time.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "iopt.h"
#include "t.h"
#include "t_pt.h"

#define VA_BASE		(0x7f0000000000ull)
#define VA_PAGES	512u		/* 2 MiB of client address space */
#define HOST_PAGES	4096u		/* 16 MiB arena of host pages */
#define QUARANTINE	1024u
#define CANARY		0xA5
#define MIN_INVALS	200

enum { FREE, LIVE, DEAD };

struct hpage {
	_Atomic int state;
	_Atomic uint64_t va;		/* the va it backs while LIVE */
};

static struct {
	struct iopt *d;
	struct iopt_fq *fq;
	uint8_t *arena;
	struct hpage hp[HOST_PAGES];
	pthread_mutex_t mm;		/* the client's "mm": hmap, free list, quarantine */
	int hmap[VA_PAGES];		/* va page -> host page, or -1 */
	unsigned freel[HOST_PAGES], nfree;
	unsigned quar[QUARANTINE], qhead, qlen;
	_Atomic int stop;
	double deadline;
	uint64_t seed;
	_Atomic uint64_t dmas, misses, invals, answers, retries;
} S;

/* T_CHECK's counters are not atomic: threads count their own failures and main reports. */
static _Atomic unsigned long thread_failures;
#define S_CHECK(cond, ...) do { \
		if (!(cond) && atomic_fetch_add(&thread_failures, 1) < 20) { \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
		} \
	} while (0)
#define S_EQ(a, b, what) do { \
		unsigned long long s_a_ = (unsigned long long)(a), s_b_ = (unsigned long long)(b); \
		S_CHECK(s_a_ == s_b_, "%s: got 0x%llx, want 0x%llx", (what), s_a_, s_b_); \
	} while (0)

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t host_of(unsigned idx) { return (uint64_t)(uintptr_t)(S.arena + (size_t)idx * PG); }

static unsigned idx_of(uint64_t host)
{
	return (unsigned)((host - (uint64_t)(uintptr_t)S.arena) / PG);
}

static void check_canary(unsigned idx)
{
	const uint8_t *p = S.arena + (size_t)idx * PG;

	for (unsigned i = 0; i < PG; i++)
		if (p[i] != CANARY) {
			S_CHECK(0, "host page %u written after its invalidation (byte %u)", idx, i);
			return;
		}
}

/* Under mm: a free page for va (recycling the oldest quarantined page if needed). */
static int page_alloc_locked(uint64_t va)
{
	unsigned idx;

	if (!S.nfree) {
		if (!S.qlen)
			return -1;
		idx = S.quar[S.qhead];
		S.qhead = (S.qhead + 1) % QUARANTINE;
		S.qlen--;
		check_canary(idx);
	} else {
		idx = S.freel[--S.nfree];
	}
	atomic_store(&S.hp[idx].va, va);
	atomic_store(&S.hp[idx].state, LIVE);
	return (int)idx;
}

/* ---- data path ---- */

static bool copy_extents(const struct iopt_xlate *x, uint64_t va, uint8_t stamp)
{
	for (unsigned i = 0; i < x->n; i++) {
		uint64_t h = x->ext[i].host, end = h + x->ext[i].len;

		for (; h < end; h = (h | (PG - 1)) + 1) {
			unsigned idx = idx_of(h);
			uint64_t n = min64(end, (h | (PG - 1)) + 1) - h;

			S_CHECK(idx < HOST_PAGES, "extent outside the arena");
			/* Write, look, write again: a DMA is a copy that takes a while, and a
			 * page killed in between is caught by its state or its canary. */
			memset((void *)(uintptr_t)h, stamp, n);
			for (unsigned k = 0; k < 8; k++) {
				S_EQ(atomic_load(&S.hp[idx].state), LIVE, "copy into a live page");
				S_EQ(atomic_load(&S.hp[idx].va), va & ~(PG - 1), "page backs this va");
			}
			memset((void *)(uintptr_t)h, stamp ^ 0xff, n);
			va = (va | (PG - 1)) + 1;
		}
	}
	return atomic_load(&thread_failures) == 0;
}

static void *data_path(void *arg)
{
	struct t_rng rng = { S.seed * 3 + 1 };
	struct iopt_waiter w = { 0 };
	uint64_t n = (uint64_t)(uintptr_t)arg;

	/* n DMAs, and at least MIN_INVALS invalidations among them (the deadline bounds it). */
	for (uint64_t i = 0; (i < n || atomic_load(&S.invals) < MIN_INVALS) &&
	     !atomic_load(&S.stop); i++) {
		uint64_t va = VA_BASE + t_below(&rng, VA_PAGES) * PG + t_below(&rng, PG);
		uint64_t len = 1 + t_below(&rng, min64(4 * PG, VA_BASE + VA_PAGES * PG - va) - 1);
		struct iopt_dma dma;
		struct iopt_xlate x;
		int rc;

		if ((i & 255) == 0 && t_pt_seconds() > S.deadline)
			break;
		iopt_dma_begin(S.d, &dma);
		rc = iopt_translate(S.d, va, len, IOPT_WRITE, &x);
		if (x.n && !copy_extents(&x, va, (uint8_t)(i | 1))) {
			iopt_dma_end(&dma);
			break;
		}
		iopt_dma_end(&dma);
		atomic_fetch_add(&S.dmas, 1);
		if (rc != -EFAULT)
			continue;
		atomic_fetch_add(&S.misses, 1);
		if (t_below(&rng, 4) == 0) {	/* RNR style: do not wait */
			S_EQ(iopt_fault(S.d, x.miss, va + len - x.miss, IOPT_WRITE, 0, NULL), 0, "f");
			continue;
		}
		S_EQ(iopt_fault(S.d, x.miss, va + len - x.miss, IOPT_WRITE, 0, &w), 0, "fault");
		rc = iopt_waiter_wait(S.fq, &w, 20000);
		S_EQ(rc, 0, "fault answered");
	}
	atomic_store(&S.stop, 1);
	iopt_fq_kick(S.fq);
	return NULL;
}

/* ---- notifier ---- */

static void notifier_once(struct t_rng *rng)
{
	uint64_t first = t_below(rng, VA_PAGES), n = 1 + t_below(rng, min64(64, VA_PAGES - first));
	unsigned dead[64], ndead = 0;
	bool remap = t_below(rng, 2);
	long rc;

	if (t_below(rng, 50) == 0) {
		first = 0;
		n = 64;
	}
	rc = iopt_invalidate_begin(S.d, VA_BASE + first * PG, n * PG);
	S_CHECK(rc >= 0, "invalidate_begin %ld", rc);
	/* The fence has returned: no DMA uses these pages any more. Change the host map. */
	pthread_mutex_lock(&S.mm);
	for (uint64_t p = first; p < first + n; p++) {
		if (S.hmap[p] >= 0)
			dead[ndead++] = (unsigned)S.hmap[p];
		S.hmap[p] = remap ? page_alloc_locked(VA_BASE + p * PG) : -1;
	}
	pthread_mutex_unlock(&S.mm);
	for (unsigned i = 0; i < ndead; i++) {
		atomic_store(&S.hp[dead[i]].state, DEAD);
		atomic_store(&S.hp[dead[i]].va, 0);
		memset(S.arena + (size_t)dead[i] * PG, CANARY, PG);
	}
	pthread_mutex_lock(&S.mm);
	for (unsigned i = 0; i < ndead; i++) {
		if (S.qlen == QUARANTINE) {	/* full: the oldest goes back to the free list */
			unsigned old = S.quar[S.qhead];

			check_canary(old);
			S.qhead = (S.qhead + 1) % QUARANTINE;
			S.qlen--;
			atomic_store(&S.hp[old].state, FREE);
			S.freel[S.nfree++] = old;
		}
		S.quar[(S.qhead + S.qlen++) % QUARANTINE] = dead[i];
	}
	pthread_mutex_unlock(&S.mm);
	iopt_invalidate_end(S.d);
	atomic_fetch_add(&S.invals, 1);
}

static void *notifier(void *arg)
{
	struct t_rng rng = { S.seed * 5 + 2 };

	(void)arg;
	while (!atomic_load(&S.stop) && t_pt_seconds() < S.deadline) {
		uint64_t mark = atomic_load(&S.dmas) + 1 + t_below(&rng, 16);

		notifier_once(&rng);
		/* Pace: let a few DMAs run between invalidations (two cores, three threads, and
		 * back-to-back invalidations would starve every fill). */
		while (atomic_load(&S.dmas) < mark && !atomic_load(&S.stop) &&
		       t_pt_seconds() < S.deadline)
			sched_yield();
	}
	return NULL;
}

/* ---- fault handler ---- */

static unsigned resolve(struct iopt_req *r, struct iopt_map *m)
{
	unsigned n = 0;

	pthread_mutex_lock(&S.mm);
	for (uint64_t va = r->va; va < r->va + r->len; va += PG) {
		unsigned p = (unsigned)((va - VA_BASE) / PG);

		if (S.hmap[p] < 0)
			S.hmap[p] = page_alloc_locked(va);	/* first touch */
		if (S.hmap[p] < 0)
			break;
		m[n++] = (struct iopt_map){ va, PG, host_of((unsigned)S.hmap[p]),
			IOPT_READ | IOPT_WRITE };
	}
	pthread_mutex_unlock(&S.mm);
	return n;
}

static void *handler(void *arg)
{
	struct iopt_req *reqs[16];
	static struct iopt_map m[VA_PAGES];

	(void)arg;
	while (!atomic_load(&S.stop)) {
		unsigned n = iopt_fq_pop_wait(S.fq, reqs, 16, 50000, 10);

		for (unsigned i = 0; i < n; i++) {
			struct iopt_req *r = reqs[i];
			int rc = -EAGAIN;

			for (unsigned tries = 0; rc == -EAGAIN && tries < 100; tries++) {
				unsigned k = resolve(r, m);

				rc = iopt_req_complete(r, m, k, 0);
				if (rc == -EAGAIN)
					atomic_fetch_add(&S.retries, 1);
				if (rc == -EAGAIN && (tries & 7) == 7)
					sched_yield();
			}
			if (rc == -EAGAIN) {
				iopt_req_requeue(r);
				continue;
			}
			S_EQ(rc, 0, "complete");
			if (rc)
				iopt_req_fail(r, -EFAULT, 0);
			atomic_fetch_add(&S.answers, 1);
		}
	}
	/* Drain what is left so the waiters and destroy see an empty queue. */
	for (unsigned n; (n = iopt_fq_pop(S.fq, reqs, 16)); )
		for (unsigned i = 0; i < n; i++)
			iopt_req_fail(reqs[i], -ECANCELED, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t n = t_pt_ops(3000000, 3);
	double secs = T_PT_SANITIZED ? 8 : 4, t0 = t_pt_seconds();
	struct iopt_config cfg = { .va = VA_BASE, .len = VA_PAGES * PG };
	pthread_t th[3];

	S.seed = t_seed(argc, argv, 1);
	S.deadline = t0 + secs;
	S.arena = aligned_alloc(PG, (size_t)HOST_PAGES * PG);
	memset(S.arena, CANARY, (size_t)HOST_PAGES * PG);
	pthread_mutex_init(&S.mm, NULL);
	for (unsigned i = 0; i < VA_PAGES; i++)
		S.hmap[i] = -1;
	for (unsigned i = 0; i < HOST_PAGES; i++)
		S.freel[S.nfree++] = HOST_PAGES - 1 - i;
	T_EQ(iopt_fq_create(NULL, &S.fq), 0, "fq");
	cfg.fq = S.fq;
	T_EQ(iopt_create(&cfg, &S.d), 0, "domain");

	pthread_create(&th[0], NULL, handler, NULL);
	pthread_create(&th[1], NULL, notifier, NULL);
	pthread_create(&th[2], NULL, data_path, (void *)(uintptr_t)n);
	pthread_join(th[2], NULL);
	pthread_join(th[1], NULL);
	pthread_join(th[0], NULL);

	for (unsigned i = 0; i < S.qlen; i++)
		check_canary(S.quar[(S.qhead + i) % QUARANTINE]);
	printf("%.1f s: %" PRIu64 " DMAs, %" PRIu64 " misses, %" PRIu64 " invalidations, %" PRIu64
		" answers, %" PRIu64 " read_retry races\n", t_pt_seconds() - t0,
		atomic_load(&S.dmas), atomic_load(&S.misses), atomic_load(&S.invals),
		atomic_load(&S.answers), atomic_load(&S.retries));
	T_EQ(atomic_load(&thread_failures), 0, "failures in the threads");
	T_CHECK(atomic_load(&S.dmas) > 1000, "the data path ran");
	T_CHECK(atomic_load(&S.invals) >= MIN_INVALS, "the notifier ran");
	T_CHECK(atomic_load(&S.answers) > 100, "the handler ran");
	T_EQ(iopt_destroy(S.d), 0, "destroy");
	T_EQ(iopt_fq_destroy(S.fq), 0, "fq destroy");
	free(S.arena);
	return t_done("pagetable-fence-stress");
}
