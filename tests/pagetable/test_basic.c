/* SPDX-License-Identifier: MIT */
/* One behaviour per function: argument checks, hits and misses, permissions, extents,
 * blocks and their split, conflicts, address-space edges, the fence's self-deadlock rule,
 * read_retry, dirty walk. */
#include <errno.h>
#include <string.h>

#include "iopt.h"
#include "t.h"
#include "t_pt.h"

static struct iopt *mk(uint64_t va, uint64_t len)
{
	struct iopt_config cfg = { .va = va, .len = len };
	struct iopt *d = NULL;

	T_EQ(iopt_create(&cfg, &d), 0, "create");
	return d;
}

static long fill1(struct iopt *d, uint64_t va, uint64_t len, uint64_t host, unsigned perm)
{
	struct iopt_map m = { va, len, host, perm };

	return iopt_fill(d, &m, 1, IOPT_SEQ_NONE);
}

static void test_args(void)
{
	struct iopt_config bad = { .fault_around = 3 * PG };
	struct iopt *d = mk(0x10000, 0x10000), *x = NULL;
	struct iopt_xlate xl;

	T_EQ(iopt_create(&bad, &x), -EINVAL, "fault_around not a power of two");
	bad = (struct iopt_config){ .va = IOPT_VA_END - PG, .len = 2 * PG };
	T_EQ(iopt_create(&bad, &x), -ERANGE, "window beyond 47 bits");
	T_EQ(iopt_translate(d, 0x10000, 0, IOPT_READ, &xl), -EINVAL, "len 0");
	T_EQ(iopt_translate(d, 0x10000, 1, 3, &xl), -EINVAL, "two accesses");
	T_EQ(iopt_translate(d, 0xf000, 2 * PG, IOPT_READ, &xl), -ERANGE, "below window");
	T_EQ(iopt_translate(d, 0x1f000, 2 * PG, IOPT_READ, &xl), -ERANGE, "above window");
	T_EQ(fill1(d, 0x10001, PG, 0, IOPT_READ), -EINVAL, "unaligned fill");
	T_EQ(fill1(d, 0x10000, PG, 0, IOPT_WRITE), -EINVAL, "perm without READ");
	T_EQ(fill1(d, 0x20000, PG, 0, IOPT_READ), -ERANGE, "fill outside window");
	T_EQ(iopt_invalidate(d, 0x30000, PG), -ERANGE, "invalidate outside window");
	T_EQ(iopt_fault(d, 0x10000, 1, IOPT_READ, 0, NULL), -ENOTSUP, "fault without fq");
	T_EQ(iopt_destroy(d), 0, "destroy");
}

static void test_hit_miss(void)
{
	struct iopt *d = mk(0, 0);
	struct iopt_xlate x;

	T_EQ(iopt_translate(d, 0x5000123, 10, IOPT_READ, &x), -EFAULT, "empty: miss");
	T_EQ(x.miss, 0x5000000, "miss page");
	T_EQ(x.done, 0, "nothing done");
	T_EQ(fill1(d, 0x5000000, 2 * PG, 0x7f0000000000, IOPT_READ), 2, "fill 2 pages");
	T_EQ(iopt_translate(d, 0x5000123, 10, IOPT_READ, &x), 0, "hit");
	T_EQ(x.n, 1, "one extent");
	T_EQ(x.ext[0].host, 0x7f0000000123, "host keeps the offset");
	T_EQ(x.ext[0].len, 10, "len");
	T_EQ(iopt_translate(d, 0x5000ff0, PG + 0x10, IOPT_READ, &x), 0, "cross pages");
	T_EQ(x.n, 1, "contiguous host: one extent");
	T_EQ(x.ext[0].len, PG + 0x10, "extent len");
	T_EQ(iopt_translate(d, 0x5001ff0, 0x20, IOPT_READ, &x), -EFAULT, "third page missing");
	T_EQ(x.miss, 0x5002000, "miss at third page");
	T_EQ(x.done, 0x10, "16 bytes done");
	T_EQ(x.n, 1, "their extent");
	T_EQ(x.miss_present, 0, "absent, not read-only");
	T_EQ(iopt_translate(d, 0x5000000, 8, IOPT_WRITE, &x), -EFAULT, "write to read-only");
	T_EQ(x.miss_present, 1, "present but read-only");
	T_EQ(fill1(d, 0x5000000, PG, 0x7f0000000000, IOPT_READ | IOPT_WRITE), 0, "upgrade");
	T_EQ(iopt_translate(d, 0x5000000, 8, IOPT_ATOMIC, &x), 0, "atomic after upgrade");
	T_EQ(fill1(d, 0x5000000, PG, 0x7f0000000000, IOPT_READ), 0, "refill read-only");
	T_EQ(iopt_translate(d, 0x5000000, 8, IOPT_WRITE, &x), 0, "WRITE is never lost");
	T_EQ(fill1(d, 0x5000000, PG, 0x1000, IOPT_READ), -EEXIST, "other frame: -EEXIST");
	T_EQ(iopt_invalidate(d, 0x5000000, 3 * PG), 2, "invalidate returns removed pages");
	T_EQ(iopt_translate(d, 0x5000000, 1, IOPT_READ, &x), -EFAULT, "gone");
	T_EQ(iopt_destroy(d), 0, "destroy");
}

static void test_extents(void)
{
	struct iopt *d = mk(0, 0);
	struct iopt_xlate x;

	/* 20 pages, each with a host frame two pages apart: 20 extents > IOPT_XLATE_MAX. */
	for (unsigned i = 0; i < 20; i++)
		T_EQ(fill1(d, 0x100000 + i * PG, PG, 0x900000 + 2 * i * PG, IOPT_READ), 1, "fill");
	T_EQ(iopt_translate(d, 0x100000, 20 * PG, IOPT_READ, &x), -E2BIG, "too many extents");
	T_EQ(x.n, IOPT_XLATE_MAX, "extents full");
	T_EQ(x.done, IOPT_XLATE_MAX * PG, "done up to the full list");
	T_EQ(iopt_translate(d, 0x100000 + x.done, 20 * PG - x.done, IOPT_READ, &x), 0, "rest");
	T_EQ(x.n, 20 - IOPT_XLATE_MAX, "remaining extents");
	T_EQ(x.ext[0].host, 0x900000 + 2 * IOPT_XLATE_MAX * PG, "continues");
	T_EQ(iopt_destroy(d), 0, "destroy");
}

static void test_block_split(void)
{
	struct iopt *d = mk(0, 0);
	struct iopt_counters c0, c1;
	struct iopt_xlate x;
	uint64_t va = 0x40000000, host = 0x12345000;	/* host need only be page aligned */

	iopt_counters_get(d, &c0);
	T_EQ(fill1(d, va, 4 * MiB, host, IOPT_READ | IOPT_WRITE), 1024, "two blocks");
	iopt_counters_get(d, &c1);
	/* The root (made by the first fill) and levels 2 and 1, no leaf tables: blocks are one
	 * entry each. */
	T_EQ(c0.table_bytes, 0, "no table before the first fill");
	T_EQ(c1.table_bytes - c0.table_bytes, 3 * 4160, "blocks need no leaf table");
	T_EQ(iopt_translate(d, va + 2 * MiB - 8, 16, IOPT_WRITE, &x), 0, "across blocks");
	T_EQ(x.n, 1, "host contiguous across blocks");
	T_EQ(x.ext[0].host, host + 2 * MiB - 8, "host");
	T_EQ(iopt_invalidate(d, va + 5 * PG, 3 * PG), 3, "split: 3 pages");
	T_EQ(iopt_translate(d, va + 4 * PG, PG, IOPT_WRITE, &x), 0, "page before hole");
	T_EQ(x.ext[0].host, host + 4 * PG, "frame after split");
	T_EQ(iopt_translate(d, va + 4 * PG, 2 * PG, IOPT_READ, &x), -EFAULT, "hole");
	T_EQ(x.miss, va + 5 * PG, "hole start");
	T_EQ(iopt_translate(d, va + 8 * PG, PG, IOPT_READ, &x), 0, "after hole");
	T_EQ(x.ext[0].host, host + 8 * PG, "frame after hole");
	T_EQ(iopt_snapshot(d, va, 4 * MiB, NULL, NULL), 1021, "present pages");
	/* Refill the hole as a whole block: the leaf table is merged back into a block. */
	T_EQ(fill1(d, va, 2 * MiB, host, IOPT_READ | IOPT_WRITE), 3, "refill block");
	T_EQ(iopt_reclaim(d), 0, "reclaim");
	iopt_counters_get(d, &c1);
	T_EQ(c1.table_bytes - c0.table_bytes, 3 * 4160, "merged back, leaf freed");
	T_EQ(c1.present_pages, 1024, "present counter");
	T_EQ(iopt_invalidate(d, 0, IOPT_VA_END), 1024, "invalidate everything");
	iopt_counters_get(d, &c1);
	T_EQ(c1.table_bytes, 4160, "all tables freed but the root");
	T_EQ(c1.page_invalidated_pages, 1027, "invalidated pages counter");
	T_EQ(c1.page_invalidations, 2, "invalidations counter");
	T_EQ(iopt_destroy(d), 0, "destroy");
}

static void test_edges(void)
{
	struct iopt *d = mk(0, 0);
	struct iopt_xlate x;
	uint64_t top = IOPT_VA_END - PG;

	T_EQ(fill1(d, 0, PG, 0x1000, IOPT_READ), 1, "page 0");
	T_EQ(fill1(d, top, PG, 0x2000, IOPT_READ), 1, "last page");
	T_EQ(iopt_translate(d, 0, PG, IOPT_READ, &x), 0, "bottom");
	T_EQ(iopt_translate(d, top, PG, IOPT_READ, &x), 0, "top");
	T_EQ(x.ext[0].host, 0x2000, "top frame");
	T_EQ(iopt_translate(d, top, PG + 1, IOPT_READ, &x), -ERANGE, "beyond 2^47");
	T_EQ(iopt_translate(d, top + 1, UINT64_MAX, IOPT_READ, &x), -EINVAL, "wrap");
	T_EQ(iopt_snapshot(d, 0, IOPT_VA_END, NULL, NULL), 2, "two pages in 128 TiB");
	T_EQ(iopt_invalidate(d, top, PG), 1, "invalidate top");
	T_EQ(iopt_destroy(d), 0, "destroy");
}

static int dirty_nop(void *arg, uint64_t va, uint64_t len)
{
	(void)arg;
	(void)va;
	(void)len;
	return 0;
}

static void test_fence_rules(void)
{
	struct iopt *d = mk(0, 0);
	struct iopt_dma dma;
	struct iopt_xlate x;
	uint64_t seq;

	T_EQ(fill1(d, 0x10000, 4 * PG, 0x80000, IOPT_READ), 4, "fill");
	iopt_dma_begin(d, &dma);
	T_EQ(iopt_translate(d, 0x10000, PG, IOPT_READ, &x), 0, "translate in bracket");
	T_EQ(iopt_invalidate(d, 0x10000, PG), -EDEADLK, "invalidate inside own bracket");
	T_EQ(iopt_reclaim(d), -EDEADLK, "reclaim inside own bracket");
	T_EQ(iopt_dirty_walk(d, 0x10000, PG, IOPT_DIRTY_CLEAR, dirty_nop, NULL), -EDEADLK,
		"clearing dirty bits inside own bracket");
	T_EQ(iopt_dirty_walk(d, 0x10000, PG, 0, dirty_nop, NULL), 0, "reading them is fine");
	T_EQ(iopt_destroy(d), -EBUSY, "destroy with a bracket open");
	iopt_dma_end(&dma);
	T_EQ(iopt_translate(d, 0x10000, PG, IOPT_READ, &x), 0, "-EDEADLK changed nothing");
	T_EQ(iopt_invalidate(d, 0x10000, PG), 1, "after the bracket");

	/* read_begin / read_retry. */
	seq = iopt_read_begin(d);
	T_EQ(iopt_invalidate(d, 0x900000, PG), 0, "unrelated invalidation");
	{
		struct iopt_map m = { 0x10000, PG, 0x80000, IOPT_READ };

		T_EQ(iopt_fill(d, &m, 1, seq), 1, "unrelated range does not retry");
		seq = iopt_read_begin(d);
		T_EQ(iopt_invalidate(d, 0x10000, PG), 1, "overlapping invalidation");
		T_EQ(iopt_fill(d, &m, 1, seq), -EAGAIN, "stale snapshot");
		T_EQ(iopt_invalidate_begin(d, 0x700000, PG), 0, "begin");
		seq = iopt_read_begin(d);
		T_EQ(seq & 1, 1, "odd while in progress");
		T_EQ(iopt_fill(d, &m, 1, iopt_read_begin(d)), -EAGAIN, "during invalidation");
		iopt_invalidate_end(d);
		T_EQ(iopt_fill(d, &m, 1, seq), -EAGAIN, "snapshot taken during one");
		T_EQ(iopt_fill(d, &m, 1, iopt_read_begin(d)), 1, "fresh snapshot");
		seq = iopt_read_begin(d);
		for (unsigned i = 0; i < 20; i++)
			iopt_invalidate(d, 0x900000, PG);
		T_EQ(iopt_fill(d, &m, 1, seq), -EAGAIN, "log overrun is conservative");
	}
	T_EQ(iopt_destroy(d), 0, "destroy");
}

struct runs {
	unsigned n;
	uint64_t va[8], len[8];
};

static int collect(void *arg, uint64_t va, uint64_t len)
{
	struct runs *r = arg;

	if (r->n < 8) {
		r->va[r->n] = va;
		r->len[r->n] = len;
	}
	r->n++;
	return 0;
}

static void test_dirty(void)
{
	struct iopt *d = mk(0, 0);
	struct iopt_xlate x;
	struct runs r = { 0 };

	T_EQ(fill1(d, 0x200000, 8 * PG, 0x1000000, IOPT_READ | IOPT_WRITE), 8, "fill");
	T_EQ(iopt_translate(d, 0x201000, 2 * PG, IOPT_WRITE, &x), 0, "write 2 pages");
	T_EQ(iopt_translate(d, 0x205000, PG, IOPT_READ, &x), 0, "read 1 page");
	T_EQ(iopt_dirty_walk(d, 0x200000, 8 * PG, IOPT_DIRTY_CLEAR, collect, &r), 2, "2 dirty");
	T_EQ(r.n, 1, "one run");
	T_EQ(r.va[0], 0x201000, "run va");
	T_EQ(r.len[0], 2 * PG, "run len");
	r.n = 0;
	T_EQ(iopt_dirty_walk(d, 0x200000, 8 * PG, 0, collect, &r), 0, "cleared");
	/* Blocks: dirty granularity is the block. */
	T_EQ(fill1(d, 0x400000, 2 * MiB, 0x2000000, IOPT_READ | IOPT_WRITE), 512, "block");
	T_EQ(iopt_translate(d, 0x400000, 1, IOPT_WRITE, &x), 0, "write 1 byte");
	T_EQ(iopt_dirty_walk(d, 0x400000, 2 * PG, IOPT_DIRTY_CLEAR, collect, &r), 2,
		"part of a dirty block");
	T_EQ(iopt_dirty_walk(d, 0x400000, 2 * MiB, IOPT_DIRTY_CLEAR, collect, &r), 512,
		"block still dirty after a partial clear");
	T_EQ(iopt_dirty_walk(d, 0x400000, 2 * MiB, 0, collect, &r), 0, "whole block cleared");
	T_EQ(iopt_destroy(d), 0, "destroy");
}

/* translate's per-thread walk cache (translate.c) must never outlive the tables it names:
 * not a leaf table merged into a block and freed, not a table of a destroyed domain. */
static void test_walk_cache(void)
{
	uint64_t va = 0x80000000, host = 0x200000000;
	struct iopt *d = mk(0, 0);
	struct iopt_xlate x;

	T_EQ(fill1(d, va, 16 * PG, host, IOPT_READ), 16, "leaf pages");
	T_EQ(iopt_translate(d, va + PG, PG, IOPT_READ, &x), 0, "walk caches the leaf table");
	T_EQ(fill1(d, va, 2 * MiB, host, IOPT_READ), 512 - 16, "merge into a block");
	T_EQ(iopt_reclaim(d), 0, "free the merged leaf table");
	T_EQ(iopt_translate(d, va + PG, PG, IOPT_READ, &x), 0, "through the block");
	T_EQ(x.ext[0].host, host + PG, "block host");
	T_EQ(iopt_invalidate(d, va, 2 * MiB), 512, "drop the block");
	T_EQ(iopt_translate(d, va + PG, PG, IOPT_READ, &x), -EFAULT, "miss after invalidate");
	T_EQ(fill1(d, va, PG, host + 64 * MiB, IOPT_READ), 1, "new leaf table");
	T_EQ(iopt_translate(d, va, PG, IOPT_READ, &x), 0, "hit in the new table");
	T_EQ(x.ext[0].host, host + 64 * MiB, "new host");
	T_EQ(iopt_invalidate(d, 0, IOPT_VA_END), 1, "empty the domain: tables unlinked");
	T_EQ(iopt_translate(d, va, PG, IOPT_READ, &x), -EFAULT, "miss in the empty domain");
	T_EQ(iopt_destroy(d), 0, "destroy");

	d = mk(0, 0);
	T_EQ(fill1(d, va, PG, host, IOPT_READ), 1, "first domain");
	T_EQ(iopt_translate(d, va, PG, IOPT_READ, &x), 0, "cache the first domain");
	T_EQ(iopt_destroy(d), 0, "destroy the first domain");
	d = mk(0, 0);
	T_EQ(iopt_translate(d, va, PG, IOPT_READ, &x), -EFAULT, "second domain starts empty");
	T_EQ(fill1(d, va, PG, host + PG, IOPT_READ), 1, "second domain");
	T_EQ(iopt_translate(d, va, PG, IOPT_READ, &x), 0, "hit");
	T_EQ(x.ext[0].host, host + PG, "second domain's host");
	T_EQ(iopt_destroy(d), 0, "destroy");
}

int main(int argc, char **argv)
{
	(void)t_seed(argc, argv, 1);
	test_args();
	test_hit_miss();
	test_extents();
	test_block_split();
	test_walk_cache();
	test_edges();
	test_fence_rules();
	test_dirty();
	return t_done("pagetable-basic");
}
