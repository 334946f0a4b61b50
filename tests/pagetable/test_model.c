/* SPDX-License-Identifier: MIT */
/*
 * Model-based randomized test: random translate / fill / invalidate / remap / snapshot /
 * dirty walk / fault + handler / prefetch / read_retry operations on an implicit domain,
 * each checked against a trivial reference (one record per page). The pages live in zones
 * that straddle every table level boundary and both ends of the 47-bit space; fills are
 * often 2 MiB-aligned so blocks form and split. One seed reproduces one run (--seed N).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "iopt.h"
#include "t.h"
#include "t_pt.h"

#define ZONES 5
#define ZPAGES 2048u		/* 8 MiB per zone */
#define MAXREQ 64

struct page {			/* reference IOPT */
	uint64_t frame;
	uint8_t present, w, written;
};
struct hpage {			/* the host's view of the page */
	uint64_t frame;
	uint8_t w, resident;
};

struct waiter {
	struct iopt_waiter w;
	uint64_t va, len;	/* its need */
	unsigned access;
	int wakes, status, live;
};

static struct {
	struct t_rng rng;
	struct iopt *d;
	struct iopt_fq *fq;
	uint64_t base[ZONES];
	struct page ref[ZONES][ZPAGES];
	struct hpage host[ZONES][ZPAGES];
	struct waiter waiters[256];
	struct iopt_req *held[MAXREQ];	/* popped, not answered yet */
	unsigned nheld;
	uint64_t next_frame, fa;
	uint64_t ops[16];
} M;

static uint64_t rnd(uint64_t n) { return t_below(&M.rng, n); }
static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static struct page *refp(unsigned z, uint64_t va) { return &M.ref[z][(va - M.base[z]) / PG]; }
static struct hpage *hostp(unsigned z, uint64_t va) { return &M.host[z][(va - M.base[z]) / PG]; }

static unsigned zone_of(uint64_t va)
{
	for (unsigned z = 0; z < ZONES; z++)
		if (va >= M.base[z] && va < M.base[z] + ZPAGES * PG)
			return z;
	return ZONES;
}

/* New host frames for [va, end) of zone z: one contiguous run, or per-page scatter. */
static void host_remap(unsigned z, uint64_t va, uint64_t end)
{
	bool scatter = rnd(4) == 0;
	uint64_t f = M.next_frame;

	M.next_frame += (end - va) / PG + 1 + rnd(3);
	for (uint64_t a = va; a < end; a += PG) {
		struct hpage *h = hostp(z, a);

		h->frame = scatter ? (M.next_frame += 2) : f++;
		h->w = rnd(8) != 0;
		h->resident = rnd(3) != 0;
	}
}

/* A random page-aligned range [*va, *end) inside a random zone; 2 MiB-aligned at times. */
static unsigned pick_range(uint64_t *va, uint64_t *end, bool bytes)
{
	unsigned z = (unsigned)rnd(ZONES);
	uint64_t first, n;

	switch (rnd(8)) {
	case 0:		/* whole 2 MiB blocks */
		first = rnd(ZPAGES / 512) * 512;
		n = (1 + rnd(ZPAGES / 512 - first / 512)) * 512;
		break;
	case 1:		/* big */
		first = rnd(ZPAGES);
		n = 1 + rnd(ZPAGES - first);
		break;
	default:	/* small */
		first = rnd(ZPAGES);
		n = 1 + rnd(min64(32, ZPAGES - first));
	}
	*va = M.base[z] + first * PG;
	*end = *va + n * PG;
	if (bytes) {		/* byte granular: trim both ends inside their pages */
		*va += rnd(PG);
		*end -= rnd(PG);
		if (*end <= *va)
			*end = *va + 1;
	}
	return z;
}

/* ---- translate ---- */

static void op_translate(void)
{
	uint64_t va, end, cur, done = 0, miss = 0;
	unsigned acc = (unsigned[]){ IOPT_READ, IOPT_WRITE, IOPT_ATOMIC }[rnd(3)];
	unsigned z = pick_range(&va, &end, true), n = 0;
	struct iopt_extent ext[IOPT_XLATE_MAX] = { { 0, 0 } };
	struct iopt_xlate x;
	int want = 0, got, miss_present = 0;

	for (cur = va; cur < end; ) {
		struct page *p = refp(z, cur);
		uint64_t next = min64((cur | (PG - 1)) + 1, end), host;

		if (!p->present || (acc != IOPT_READ && !p->w)) {
			want = -EFAULT;
			miss = cur & ~(PG - 1);
			miss_present = p->present;
			break;
		}
		host = p->frame * PG + (cur & (PG - 1));
		if (n && ext[n - 1].host + ext[n - 1].len == host) {
			ext[n - 1].len += next - cur;
		} else if (n == IOPT_XLATE_MAX) {
			want = -E2BIG;
			break;
		} else {
			ext[n].host = host;
			ext[n++].len = next - cur;
		}
		if (acc != IOPT_READ)
			p->written = 1;
		cur = next;
	}
	done = cur - va;
	got = iopt_translate(M.d, va, end - va, acc, &x);
	T_EQ(got, want, "translate result");
	T_EQ(x.done, done, "translate done");
	T_EQ(x.n, n, "translate extents");
	for (unsigned i = 0; i < n && i < x.n; i++) {
		T_EQ(x.ext[i].host, ext[i].host, "extent host");
		T_EQ(x.ext[i].len, ext[i].len, "extent len");
	}
	if (want == -EFAULT) {
		T_EQ(x.miss, miss, "miss page");
		T_EQ(x.miss_present, miss_present, "miss_present");
	}
}

/* ---- fill, invalidate, remap ---- */

/* What a fill of [va, end) with the host's frames should do. */
static long expect_fill(unsigned z, uint64_t va, uint64_t end)
{
	long added = 0;

	for (uint64_t a = va; a < end; a += PG) {
		struct page *p = refp(z, a);

		if (p->present && p->frame != hostp(z, a)->frame)
			return -EEXIST;
		added += !p->present;
	}
	return added;
}

/* Does a run of frames from `frame` on disagree with a present page? */
static bool linear_conflict(unsigned z, uint64_t va, uint64_t end, uint64_t frame)
{
	for (uint64_t a = va; a < end; a += PG, frame++)
		if (refp(z, a)->present && refp(z, a)->frame != frame)
			return true;
	return false;
}

static void apply_fill(unsigned z, uint64_t va, uint64_t end, bool w_all)
{
	for (uint64_t a = va; a < end; a += PG) {
		struct page *p = refp(z, a);
		struct hpage *h = hostp(z, a);
		uint8_t w = w_all || h->w;

		if (!p->present) {
			*p = (struct page){ h->frame, 1, w, 0 };
		} else {
			p->w |= w;
		}
	}
}

/* The host runs of [va, end): maximal runs of consecutive frames and equal permission. */
static unsigned host_maps(unsigned z, uint64_t va, uint64_t end, struct iopt_map *m,
	unsigned cap, bool resident_only, bool w_all)
{
	unsigned n = 0;

	for (uint64_t a = va; a < end; a += PG) {
		struct hpage *h = hostp(z, a);
		unsigned perm = IOPT_READ | ((w_all || h->w) ? IOPT_WRITE : 0);

		if (resident_only && !h->resident)
			continue;
		if (n && m[n - 1].va + m[n - 1].len == a && m[n - 1].perm == perm &&
		    m[n - 1].host + m[n - 1].len == h->frame * PG) {
			m[n - 1].len += PG;
			continue;
		}
		if (n == cap)
			return n;
		m[n++] = (struct iopt_map){ a, PG, h->frame * PG, perm };
	}
	return n;
}

static void op_fill(void)
{
	uint64_t va, end;
	unsigned z = pick_range(&va, &end, false);
	bool w_all = rnd(2);	/* a handler that maps everything writable (blocks form) */
	struct iopt_map m[64];
	unsigned n = host_maps(z, va, end, m, 64, false, w_all);
	long want, got;

	end = m[n - 1].va + m[n - 1].len;	/* what fits in 64 runs */
	if (rnd(10) == 0 && linear_conflict(z, va, end, hostp(z, va)->frame + 7)) {
		struct iopt_map bad = { va, end - va, hostp(z, va)->frame * PG + 7 * PG, IOPT_READ };

		/* A frame that disagrees with a present page: all or nothing. */
		got = iopt_fill(M.d, &bad, 1, IOPT_SEQ_NONE);
		T_EQ(got, -EEXIST, "conflicting fill");
		return;
	}
	want = expect_fill(z, va, end);
	got = iopt_fill(M.d, m, n, rnd(2) ? IOPT_SEQ_NONE : iopt_read_begin(M.d));
	T_EQ(got, want, "fill result");
	if (got >= 0)
		apply_fill(z, va, end, w_all);
}

static long expect_invalidate(unsigned z, uint64_t va, uint64_t end)
{
	long n = 0;

	for (uint64_t a = va & ~(PG - 1); a < end; a += PG) {
		n += refp(z, a)->present;
		memset(refp(z, a), 0, sizeof(struct page));
	}
	return n;
}

static void op_invalidate(bool remap)
{
	uint64_t va, end;
	unsigned z = pick_range(&va, &end, !remap);
	long want = expect_invalidate(z, va, end);

	T_EQ(iopt_invalidate(M.d, va, end - va), want, "invalidate count");
	if (remap)
		host_remap(z, va & ~(PG - 1), (end + PG - 1) & ~(PG - 1));
}

static void op_snapshot(void)
{
	uint64_t va, end, present[ZPAGES / 64], writable[ZPAGES / 64];
	unsigned z = pick_range(&va, &end, true);
	uint64_t first = va & ~(PG - 1);
	long want = 0;

	T_CHECK(iopt_snapshot(M.d, va, end - va, present, writable) >= 0, "snapshot");
	for (uint64_t a = first, i = 0; a < end; a += PG, i++) {
		struct page *p = refp(z, a);
		int bp = (int)((present[i / 64] >> (i % 64)) & 1);
		int bw = (int)((writable[i / 64] >> (i % 64)) & 1);

		want += p->present;
		T_EQ(bp, p->present, "snapshot present bit");
		T_EQ(bw, p->present && p->w, "snapshot writable bit");
	}
	T_EQ(iopt_snapshot(M.d, va, end - va, NULL, NULL), want, "snapshot count");
}

struct dwalk {
	unsigned z;
	uint64_t va, end, prev_end;
};

static int dirty_cb(void *arg, uint64_t va, uint64_t len)
{
	struct dwalk *w = arg;

	T_CHECK(va >= w->va && va + len <= w->end, "dirty run inside the range");
	T_CHECK(va > w->prev_end || w->prev_end == 0, "dirty runs ascending and maximal");
	w->prev_end = va + len;
	for (uint64_t a = va; a < va + len; a += PG) {
		T_EQ(refp(w->z, a)->present, 1, "dirty page is present");
		refp(w->z, a)->written = 2;	/* seen */
	}
	return 0;
}

static void op_dirty(void)
{
	struct dwalk w;
	unsigned flags = rnd(2) ? IOPT_DIRTY_CLEAR : 0;

	w.z = pick_range(&w.va, &w.end, false);
	w.prev_end = 0;
	T_CHECK(iopt_dirty_walk(M.d, w.va, w.end - w.va, flags, dirty_cb, &w) >= 0, "dirty walk");
	for (uint64_t a = w.va; a < w.end; a += PG) {
		struct page *p = refp(w.z, a);

		T_CHECK(p->written != 1, "written page %#" PRIx64 " not reported dirty", a);
		p->written = (p->written == 2 && !flags) ? 1 : 0;
	}
}

/* ---- faults, the handler, prefetch ---- */

static void wake_cb(void *cookie, int status)
{
	struct waiter *w = cookie;

	w->wakes++;
	w->status = status;
}

static void op_fault(void)
{
	uint64_t va, end;
	unsigned z = pick_range(&va, &end, true), i;
	struct waiter *w = NULL;

	for (i = 0; i < 256; i++)
		if (!M.waiters[i].live) {
			w = &M.waiters[i];
			break;
		}
	if (w) {
		*w = (struct waiter){ .va = va, .len = end - va, .live = 1,
			.access = rnd(2) ? IOPT_READ : IOPT_WRITE };
		w->w.fn = wake_cb;
		w->w.cookie = w;
	}
	(void)z;
	T_EQ(iopt_fault(M.d, va, end - va, w ? w->access : IOPT_READ, M.ops[0], w ? &w->w : NULL),
		0, "fault queued");
}

/* A popped request's shape: need inside the window, the window fault-around aligned. */
static void check_req(const struct iopt_req *r)
{
	T_CHECK(r->len && r->va % PG == 0 && r->len % PG == 0, "window in pages");
	T_CHECK(r->need_va >= r->va && r->need_va + r->need_len <= r->va + r->len, "need in window");
	if (!(r->flags & IOPT_REQ_PREFETCH)) {
		T_CHECK(r->need_len > 0, "a fault needs something");
		T_EQ(r->va % M.fa, 0, "window start aligned");
		T_EQ((r->va + r->len) % M.fa, 0, "window end aligned");
	} else {
		T_EQ(r->need_len, 0, "prefetch needs nothing");
	}
}

/* The waiters woken by the answer just given: each once, and a successful wake-up means
 * its need translates now. */
static void check_woken(void)
{
	for (unsigned i = 0; i < 256; i++) {
		struct waiter *w = &M.waiters[i];
		struct iopt_xlate x;

		if (!w->live || !w->wakes)
			continue;
		T_EQ(w->wakes, 1, "woken once");
		T_EQ(atomic_load(&w->w.status), w->status, "status stored before the callback");
		if (w->status == 0) {
			int rc = iopt_translate(M.d, w->va, min64(w->len, 2 * MiB - (w->va & (PG - 1))),
				w->access, &x);

			T_CHECK(rc == 0 || rc == -E2BIG, "woken need translates (rc %d)", rc);
		} else {
			T_EQ(w->status, -EACCES, "failure propagated");
		}
		w->live = 0;
	}
}

/* Answer one held request from the host model: fail if a needed page cannot be given with
 * the needed access, else install the window (resident pages only for NO_FAULT). */
static void answer(struct iopt_req *r)
{
	unsigned z = zone_of(r->va);
	bool write = r->access == IOPT_WRITE, nofault = r->flags & IOPT_REQ_NO_FAULT;
	struct iopt_map m[512];
	unsigned n;
	bool fresh;
	int rc;

	for (uint64_t a = r->need_va; a < r->need_va + r->need_len; a += PG)
		if (write && !hostp(z, a)->w) {
			iopt_req_fail(r, -EACCES, M.ops[0]);
			return;
		}
	/* Resolving starts now: a fresh snapshot (else the pop's, maybe overtaken since). */
	fresh = rnd(2) || M.ops[0] % 7 == 0;
	if (fresh)
		r->seq = iopt_read_begin(M.d);
	n = host_maps(z, r->va, r->va + r->len, m, 512, nofault, false);
	/* The host frames cover the window unless cut at 512 runs: then the need must fit. */
	if (n == 512 && m[n - 1].va + m[n - 1].len < r->need_va + r->need_len) {
		iopt_req_fail(r, -EACCES, M.ops[0]);
		return;
	}
	if (fresh && rnd(8) == 0) {	/* an invalidation lands between resolve and install */
		uint64_t a = r->va + rnd(r->len / PG) * PG;

		bool overlap = false;

		for (unsigned i = 0; i < n; i++)
			overlap |= m[i].va <= a && a < m[i].va + m[i].len;
		T_EQ(iopt_invalidate(M.d, a, PG), expect_invalidate(z, a, a + PG), "race inval");
		rc = iopt_req_complete(r, m, n, M.ops[0]);
		/* Only runs overlapping the invalidated range make it retry (range log). */
		T_EQ(rc, overlap ? -EAGAIN : 0, "raced completion retries");
		if (rc == 0)
			goto installed;
	}
	rc = iopt_req_complete(r, m, n, M.ops[0]);
	if (rc == -EAGAIN && !fresh)	/* invalidated since the pop: resolve again */
		rc = iopt_req_complete(r, m, n, M.ops[0]);
	T_EQ(rc, 0, "completion");
installed:
	for (unsigned i = 0; i < n; i++)
		apply_fill(z, m[i].va, m[i].va + m[i].len, false);
}

static void op_handler(void)
{
	unsigned k = (unsigned)rnd(4), got;

	got = iopt_fq_pop(M.fq, M.held + M.nheld, MAXREQ - M.nheld);
	for (unsigned i = 0; i < got; i++)
		check_req(M.held[M.nheld + i]);
	M.nheld += got;
	/* Answer k of them, in random order; the rest stay in flight for a while. */
	while (k-- && M.nheld) {
		unsigned i = (unsigned)rnd(M.nheld);
		struct iopt_req *r = M.held[i];

		M.held[i] = M.held[--M.nheld];
		if (rnd(16) == 0) {
			iopt_req_requeue(r);
			continue;
		}
		answer(r);
		check_woken();
	}
}

static void op_prefetch(void)
{
	uint64_t va, end;
	enum iopt_advice adv = (enum iopt_advice)rnd(3);
	unsigned z = pick_range(&va, &end, true);
	bool missing = false;
	int rc;

	for (uint64_t a = va & ~(PG - 1); a < end; a += PG)
		if (!refp(z, a)->present || (adv == IOPT_PREFETCH_WRITE && !refp(z, a)->w))
			missing = true;
	rc = iopt_prefetch(M.d, va, end - va, adv, M.ops[0], NULL);
	T_EQ(rc, missing ? 0 : 1, "prefetch queued iff something is missing");
}

static void drain_all(void)
{
	for (unsigned round = 0; round < 1000; round++) {
		M.nheld += iopt_fq_pop(M.fq, M.held + M.nheld, MAXREQ - M.nheld);
		if (!M.nheld)
			break;
		while (M.nheld) {
			answer(M.held[--M.nheld]);
			check_woken();
		}
	}
	for (unsigned i = 0; i < 256; i++)
		T_CHECK(!M.waiters[i].live, "waiter %u never woken", i);
}

/* The whole table against the reference, page by page (at the end). */
static void check_all(void)
{
	for (unsigned z = 0; z < ZONES; z++)
		for (uint64_t i = 0; i < ZPAGES; i++) {
			struct page *p = &M.ref[z][i];
			struct iopt_xlate x;
			int rc = iopt_translate(M.d, M.base[z] + i * PG, PG, IOPT_READ, &x);

			T_EQ(rc, p->present ? 0 : -EFAULT, "final state");
			if (!rc)
				T_EQ(x.ext[0].host, p->frame * PG, "final frame");
		}
}

int main(int argc, char **argv)
{
	uint64_t nops = t_pt_ops(3000000, 15), done = 0;
	double t0 = t_pt_seconds(), limit = T_PT_SANITIZED ? 20 : 25;
	struct iopt_counters c;
	struct iopt_config cfg = { 0 };

	M.rng.s = t_seed(argc, argv, 1);
	M.fa = (uint64_t[]){ 4 * KiB, 64 * KiB, 64 * KiB, 2 * MiB }[rnd(4)];
	M.base[0] = 0;				/* bottom */
	M.base[1] = GiB - 4 * MiB;		/* crosses a level-2 entry */
	M.base[2] = 512 * GiB - 4 * MiB;	/* crosses a root entry */
	M.base[3] = IOPT_VA_END - 8 * MiB;	/* top */
	M.base[4] = (1 + rnd(60000)) * 2 * GiB + rnd(512) * 2 * MiB;
	M.next_frame = 0x100000;
	for (unsigned z = 0; z < ZONES; z++)
		host_remap(z, M.base[z], M.base[z] + ZPAGES * PG);
	T_EQ(iopt_fq_create(NULL, &M.fq), 0, "fq");
	cfg.fq = M.fq;
	cfg.fault_around = M.fa;
	T_EQ(iopt_create(&cfg, &M.d), 0, "implicit domain");

	for (; done < nops && t_failures == 0; done++) {
		unsigned op = (unsigned)rnd(100);

		M.ops[0]++;	/* the virtual clock */
		if ((done & 0xfff) == 0 && t_pt_seconds() - t0 > limit)
			break;
		if (op < 55)
			op_translate();
		else if (op < 68)
			op_fill();
		else if (op < 76)
			op_invalidate(false);
		else if (op < 78)
			op_invalidate(true);
		else if (op < 81)
			op_snapshot();
		else if (op < 83)
			op_dirty();
		else if (op < 91)
			op_fault();
		else if (op < 98)
			op_handler();
		else
			op_prefetch();
	}
	drain_all();
	check_all();
	iopt_counters_get(M.d, &c);
	printf("%" PRIu64 " ops in %.1f s (fault-around %" PRIu64 " KiB): %" PRIu64 " faults, %"
		PRIu64 " merged, %" PRIu64 " races, %" PRIu64 " prefetched pages, %" PRIu64
		" present, %" PRIu64 " table bytes\n", done, t_pt_seconds() - t0, M.fa / KiB,
		c.page_faults, c.fault_merged, c.fault_races, c.page_prefetch, c.present_pages,
		c.table_bytes);
	T_CHECK(done >= nops / 4, "ran too few operations (%" PRIu64 ")", done);
	T_EQ(iopt_destroy(M.d), 0, "destroy");
	T_EQ(iopt_fq_destroy(M.fq), 0, "fq destroy");
	return t_done("pagetable-model");
}
