/* SPDX-License-Identifier: MIT */
/*
 * brick-bench: odpemu-brick (docs/brick.md) as an initiator sees it, against the same
 * accesses made locally on the same files, measured in the same run. Figures, not a test:
 * it exits 1 only when something does not work at all, never on a figure.
 *
 * The e2e harness brings up two hosts and their daemons (network namespaces as root);
 * odpemu-brick runs on host 1 (tests/brick/brick_run.c) and the initiator on host 0:
 * brick-bench-client, this file built with BRICK_BENCH_CLIENT, an ordinary program that
 * links libodpemu-brick only (not libodpemu, which the drop-in libibverbs carries inside);
 * both on odpemu's drop-in libraries. It prints its figures as "fig KEY VALUE" lines.
 *
 *   1. Memory tier: a 64 MiB brick without a budget, its 32 blocks allocated, written and
 *      mapped RW (MAP prefetches them). 4 KiB READ and WRITE at a random page of a random
 *      block: QD 1 latency through the library's synchronous calls (they sleep on the
 *      completion channel) and, for READ, posted and polled without sleeping; QD 32 IOPS
 *      (the connection's depth in flight); the 8 B READ of the goal, both ways; a
 *      persistent FLUSH of 4 KiB and of 2 MiB just written (the FLUSH alone timed).
 *   2. File tier: a 1 GiB brick with --mem 64M. Its 512 blocks are allocated, mapped,
 *      written whole and unmapped one after another, so all but the last ~32 are written
 *      back and dropped (STAT's blocks_on_file says how many). Then every access goes to
 *      a block not touched since its eviction, once: MAP RO (the brick faults the block
 *      in from the file: its prefetch), one 4 KiB READ of a random page, UNMAP — what a
 *      cold 4 KiB read through the brick costs, MAP and UNMAP included. QD 1: one block at
 *      a time (latency, each step's median, and a second READ of another page before the
 *      UNMAP, outside the figure: was the block in memory after MAP?); QD 32: 32 MAPs, 32
 *      READs in flight, 32 UNMAPs (the brick answers requests one at a time: the MAPs
 *      never overlap). STAT before and after: page faults, invalidations and evictions
 *      per access. The first ~34 accesses, which evict the blocks the fill left dirty,
 *      are not counted.
 *   3. Anchors, in this process after that brick has stopped, on the same file: pread /
 *      pwrite of 4 KiB at random pages (QD 1: one thread; QD 32: 32 threads, fio's psync
 *      engine with numjobs=32), fdatasync after a 4 KiB and a 2 MiB pwrite; for the file
 *      tier one 4 KiB pread in each of N distinct 2 MiB blocks, as the brick's accesses,
 *      after fdatasync and POSIX_FADV_DONTNEED of the whole file, with POSIX_FADV_RANDOM
 *      (no readahead): every read from the disk (the resident pages before are printed).
 * Goals (issue 15): memory-tier 4 KiB READ median <= 1.5 x the 8 B READ median (both the
 * synchronous way); file-tier cold 4 KiB READ throughput >= 0.5 x local cold pread on the
 * same file (QD 32 against QD 32).
 *
 * Usage: brick-bench [--quick] [--seed N] [--dir DIR]. ODPEMUD, ODPEMU_COMPAT_DIR,
 * ODPEMU_BRICK and ODPEMU_BRICK_CLIENT default to this build tree; the brick's files go to
 * DIR (default: this binary's directory), 1.1 GiB of them, removed at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "odpemu/brick.h"
#include "t.h"
#ifndef BRICK_BENCH_CLIENT
#include "brick_run.h"
#endif

#define BLK BRICK_BLOCK_SIZE
#define PAGE 4096u
#define PAGES (BLK / PAGE)
#define QD 32u				/* the connection's depth, and the anchor's threads */
#define MEM_BLOCKS 32u			/* the memory tier: 64 MiB */
#define STALL_NS (5 * UINT64_C(1000000000))	/* no completion this long: broken */
#define SEC UINT64_C(1000000000)
#define MAGIC UINT64_C(0xb21c4be7c0000000)

static struct {
	bool quick;
	const char *dir;
} cfg;

/* Every page of the file tier starts with its tag, so a cold read can be checked. */
static uint64_t page_tag(uint64_t block, uint64_t page)
{
	return MAGIC ^ (block << 12) ^ page;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t *samples(unsigned n)
{
	uint64_t *ns = calloc(n ? n : 1, sizeof(*ns));

	if (!ns) {
		fprintf(stderr, "brick-bench: out of memory\n");
		exit(1);
	}
	return ns;
}

/* Blocks [0, n) in a random order. */
static uint64_t *shuffled(struct t_rng *rng, unsigned n)
{
	uint64_t *v = samples(n);

	for (unsigned i = 0; i < n; i++)
		v[i] = i;
	for (unsigned i = n; i > 1; i--) {
		uint64_t j = t_below(rng, i), t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
	return v;
}

enum op { OP_READ, OP_WRITE };

#ifdef BRICK_BENCH_CLIENT
/* ==== the client (host 0, brick-bench-client): "fig KEY VALUE" lines, and notes ==== */

static void fill_block(uint8_t *buf, uint64_t block)
{
	for (uint64_t pg = 0; pg < PAGES; pg++) {
		uint64_t tag = page_tag(block, pg);

		memcpy(buf + pg * PAGE, &tag, sizeof(tag));
		memset(buf + pg * PAGE + sizeof(tag), (int)(block + pg) | 1, PAGE - sizeof(tag));
	}
}

struct cl {
	struct brick_conn *c;
	struct t_rng rng;
	uint8_t *buf;		/* a block's worth, then QD pages, one per operation in flight */
	struct ibv_mr *mr;
	unsigned depth;
};

static void cl_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void cl_die(const char *fmt, ...)
{
	va_list ap;

	printf("client: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static void fig(const char *prefix, const char *name, double v)
{
	printf("fig %s.%s %.9g\n", prefix, name, v);
}

/* A request's failure names the call and the brick's own status. */
static void req_check(struct cl *k, int rc, const char *what, uint64_t block)
{
	if (rc)
		cl_die("%s of block %" PRIu64 ": %s (brick status: %s)", what, block,
		       strerror(-rc), brick_status_text(brick_status(k->c)));
}

static void data_check(int rc, int wc_status, const char *what)
{
	if (rc == -EIO)
		cl_die("%s completed with %s", what,
		       ibv_wc_status_str((enum ibv_wc_status)wc_status));
	if (rc)
		cl_die("%s: %s", what, strerror(-rc));
}

static uint8_t *slot(const struct cl *k, unsigned i)
{
	return k->buf + BLK + (size_t)(i % QD) * PAGE;
}

static void put_lat(const char *key, uint64_t *ns, unsigned n)
{
	if (!n) {
		printf("note: %s: no samples in the time given\n", key);
		return;
	}
	qsort(ns, n, sizeof(*ns), cmp_u64);
	fig(key, "med_us", ns[n / 2] / 1e3);
	fig(key, "p99_us", ns[(uint64_t)n * 99 / 100] / 1e3);
	fig(key, "n", n);
}

/* Reap completions (up to max, waiting up to timeout_ms for the first), each checked. */
static int reap(struct cl *k, struct ibv_wc *wc, int max, int timeout_ms)
{
	int n = brick_poll(k->c, wc, max, timeout_ms);

	if (n < 0)
		cl_die("brick_poll: %s", strerror(-n));
	for (int i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS)
			cl_die("operation %" PRIu64 " completed with %s", wc[i].wr_id,
			       ibv_wc_status_str(wc[i].status));
	return n;
}

static int post(struct cl *k, const struct brick_map *m, enum op op, uint64_t off, uint32_t len,
		uint64_t wr_id)
{
	return op == OP_READ ? brick_post_read(k->c, m, off, slot(k, (unsigned)wr_id), len, k->mr,
					       wr_id)
			     : brick_post_write(k->c, m, off, slot(k, (unsigned)wr_id), len, k->mr,
						wr_id);
}

/* One operation at QD 1, its time: synchronous (the library sleeps on its completion
 * channel), or posted and polled without sleeping (sched_yield between looks: on two
 * vCPUs a pure spinner takes the core a daemon needs). */
static uint64_t one_op(struct cl *k, const struct brick_map *m, enum op op, uint64_t off,
		       uint32_t len, bool polled)
{
	uint64_t t0 = bench_now_ns();
	struct ibv_wc wc;
	int rc, st = -1;

	if (!polled) {
		rc = op == OP_READ ? brick_read(k->c, m, off, slot(k, 0), len, k->mr, &st)
				   : brick_write(k->c, m, off, slot(k, 0), len, k->mr, &st);
		data_check(rc, st, op == OP_READ ? "READ" : "WRITE");
		return bench_now_ns() - t0;
	}
	data_check(post(k, m, op, off, len, 0), -1, "post");
	while (!reap(k, &wc, 1, 0)) {
		if (bench_now_ns() - t0 > STALL_NS)
			cl_die("an operation at QD 1 did not complete in 5 s");
		sched_yield();
	}
	return bench_now_ns() - t0;
}

/* QD 1 latency of len bytes at a random page of a random block. */
static void qd1(struct cl *k, const struct brick_map *m, unsigned nblocks, enum op op,
		uint32_t len, bool polled, const char *key)
{
	unsigned n = cfg.quick ? 2000 : 10000, warm = n / 10, got = 0;
	uint64_t *ns = samples(n), end = bench_now_ns() + (cfg.quick ? 15 : 40) * SEC;

	for (unsigned i = 0; i < warm + n && bench_now_ns() < end; i++) {
		const struct brick_map *b = &m[t_below(&k->rng, nblocks)];
		uint64_t t = one_op(k, b, op, t_below(&k->rng, PAGES) * PAGE, len, polled);

		if (i >= warm)
			ns[got++] = t;
	}
	put_lat(key, ns, got);
	free(ns);
}

/* QD 32 IOPS: the connection's depth of 4 KiB operations in flight, a fixed count or a
 * time, whichever comes first. */
static void qd32(struct cl *k, const struct brick_map *m, unsigned nblocks, enum op op,
		 const char *key)
{
	uint64_t count = cfg.quick ? 5000 : 20000, posted = 0, done = 0;
	uint64_t t0 = bench_now_ns(), end = t0 + (cfg.quick ? 10 : 30) * SEC, last = t0;
	struct ibv_wc wc[QD];

	for (;;) {
		uint64_t now = bench_now_ns();
		bool stop = posted >= count || now >= end;
		int n;

		for (; !stop && posted - done < k->depth; posted++) {
			const struct brick_map *b = &m[t_below(&k->rng, nblocks)];

			data_check(post(k, b, op, t_below(&k->rng, PAGES) * PAGE, PAGE, posted),
				   -1, "post");
		}
		if (stop && done == posted)
			break;
		n = reap(k, wc, QD, 1000);
		done += (unsigned)n;
		if (n)
			last = now;
		else if (now - last > STALL_NS)
			cl_die("stuck: %" PRIu64 " posted, %" PRIu64 " completed, none for 5 s",
			       posted, done);
	}
	fig(key, "iops", (double)done * 1e9 / (double)(bench_now_ns() - t0));
	fig(key, "n", (double)done);
}

/* A persistent FLUSH of len bytes just written (the WRITE untimed): the brick's daemon
 * makes them durable in the file before it answers. The first is not counted: it also
 * flushes whatever the runs before left dirty. */
static void flush_lat(struct cl *k, const struct brick_map *m, unsigned nblocks, uint32_t len,
		      const char *key)
{
	unsigned n = cfg.quick ? 20 : 50, got = 0;
	uint64_t *ns = samples(n), end = bench_now_ns() + (cfg.quick ? 20 : 60) * SEC;
	int rc, st = -1;

	for (unsigned i = 0; i <= n && bench_now_ns() < end; i++) {
		uint64_t blk = t_below(&k->rng, nblocks);
		uint64_t off = len == BLK ? 0 : t_below(&k->rng, PAGES) * PAGE, t0;

		fill_block(k->buf, blk);
		data_check(brick_write(k->c, &m[blk], off, k->buf + off, len, k->mr, &st), st,
			   "WRITE before FLUSH");
		t0 = bench_now_ns();
		rc = brick_flush(k->c, &m[blk], off, len, BRICK_FLUSH_PERSISTENT, &st);
		if (rc == -EOPNOTSUPP) {
			printf("note: the device offers no persistent FLUSH: no FLUSH figures\n");
			break;
		}
		data_check(rc, st, "FLUSH persistent");
		if (i)
			ns[got++] = bench_now_ns() - t0;
	}
	put_lat(key, ns, got);
	free(ns);
}

/* The brick's counter by name (STAT), or -1. */
static double stat_value(struct cl *k, const char *name)
{
	uint64_t v[64];
	unsigned n = 0;
	int rc = brick_stat(k->c, v, 64, &n);

	if (rc)
		cl_die("STAT: %s", strerror(-rc));
	for (unsigned i = 0; i < n; i++)
		if (brick_stat_label(i) && !strcmp(brick_stat_label(i), name))
			return (double)v[i];
	return -1;
}

static void stat_figs(struct cl *k, const char *prefix)
{
	static const char *const names[] = { "blocks_allocated", "blocks_in_memory",
		"blocks_on_file", "resident_bytes", "evictions", "page_faults", "invalidations",
		"flushes", "flush_ns_total" };

	for (unsigned i = 0; i < T_ARRAY_SIZE(names); i++)
		fig(prefix, names[i], stat_value(k, names[i]));
}

/* Allocate block i, map it RW (the brick prefetches it), write it whole with its tags. */
static void alloc_write(struct cl *k, uint64_t i, struct brick_map *m)
{
	int st = -1;

	req_check(k, brick_alloc(k->c, i * BLK), "ALLOC", i);
	req_check(k, brick_map(k->c, i * BLK, BRICK_RW, m), "MAP RW", i);
	fill_block(k->buf, i);
	data_check(brick_write(k->c, m, 0, k->buf, (uint32_t)BLK, k->mr, &st), st,
		   "WRITE of a whole block");
}

static void mem_tier(struct cl *k)
{
	struct brick_map m[MEM_BLOCKS];
	unsigned nb = MEM_BLOCKS;

	if (brick_conn_info(k->c)->slots < nb)
		cl_die("the memory-tier brick holds %" PRIu64 " blocks, not %u",
		       brick_conn_info(k->c)->slots, nb);
	for (unsigned i = 0; i < nb; i++)
		alloc_write(k, i, &m[i]);
	qd1(k, m, nb, OP_READ, PAGE, false, "mem.read4k");
	qd1(k, m, nb, OP_READ, 8, false, "mem.read8");
	qd1(k, m, nb, OP_READ, PAGE, true, "mem.read4k_poll");
	qd1(k, m, nb, OP_READ, 8, true, "mem.read8_poll");
	qd1(k, m, nb, OP_WRITE, PAGE, false, "mem.write4k");
	qd32(k, m, nb, OP_READ, "mem.read4k_qd32");
	qd32(k, m, nb, OP_WRITE, "mem.write4k_qd32");
	flush_lat(k, m, nb, PAGE, "mem.flush4k");
	flush_lat(k, m, nb, (uint32_t)BLK, "mem.flush2m");
	stat_figs(k, "mem.stat");
}

/* ---- the file tier ---- */

/* Allocate, write and unmap the brick's blocks in order: past the budget, the brick
 * writes back and drops the blocks released longest ago. The count written. */
static unsigned fill_file(struct cl *k, unsigned slots)
{
	uint64_t t0 = bench_now_ns(), end = t0 + 300 * SEC;
	struct brick_map m;
	unsigned i;

	for (i = 0; i < slots && bench_now_ns() < end; i++) {
		alloc_write(k, i, &m);
		req_check(k, brick_unmap(k->c, i * BLK), "UNMAP", i);
	}
	if (i < slots)
		printf("note: filling stopped after 300 s at %u of %u blocks\n", i, slots);
	fig("file", "blocks", i);
	fig("file", "fill_mbps", (double)i * BLK / 1e6 / ((bench_now_ns() - t0) / 1e9));
	return i;
}

static void tag_check(const uint8_t *page, uint64_t block, uint64_t pg)
{
	uint64_t got;

	memcpy(&got, page, sizeof(got));
	if (got != page_tag(block, pg))
		cl_die("block %" PRIu64 " page %" PRIu64 " read back 0x%016" PRIx64 ", not its tag "
		       "0x%016" PRIx64 ": the brick lost data", block, pg, got,
		       page_tag(block, pg));
}

/* One cold 4 KiB READ: MAP RO (the fault-in of the block), READ a random page, UNMAP;
 * each step's time in t[0..2]. In t[3], not part of the access: a second READ of another
 * page of the block, before the UNMAP, which tells whether the MAP left the block in
 * memory (then both READs cost the same) or the first READ faulted. */
enum { STEP_MAP, STEP_READ, STEP_UNMAP, STEP_READ2, STEPS };

static void cold_one(struct cl *k, uint64_t block, uint64_t t[STEPS])
{
	uint64_t pg = t_below(&k->rng, PAGES), pg2 = (pg + 1 + t_below(&k->rng, PAGES - 1)) % PAGES;
	uint64_t t0 = bench_now_ns(), t1, t2, t3;
	struct brick_map m;
	int st = -1;

	req_check(k, brick_map(k->c, block * BLK, BRICK_RO, &m), "MAP RO", block);
	t1 = bench_now_ns();
	data_check(brick_read(k->c, &m, pg * PAGE, slot(k, 0), PAGE, k->mr, &st), st,
		   "cold READ");
	t2 = bench_now_ns();
	data_check(brick_read(k->c, &m, pg2 * PAGE, slot(k, 1), PAGE, k->mr, &st), st,
		   "second READ");
	t3 = bench_now_ns();
	req_check(k, brick_unmap(k->c, block * BLK), "UNMAP", block);
	t[STEP_MAP] = t1 - t0;
	t[STEP_READ] = t2 - t1;
	t[STEP_READ2] = t3 - t2;
	t[STEP_UNMAP] = bench_now_ns() - t3;
	tag_check(slot(k, 0), block, pg);
	tag_check(slot(k, 1), block, pg2);
}

/* n (<= depth) cold READs at once: n MAPs, n READs in flight, n UNMAPs. */
static void cold_batch(struct cl *k, const uint64_t *blocks, unsigned n)
{
	struct brick_map m[QD];
	uint64_t pg[QD];
	struct ibv_wc wc[QD];
	unsigned done = 0;
	uint64_t t0;

	for (unsigned j = 0; j < n; j++) {
		req_check(k, brick_map(k->c, blocks[j] * BLK, BRICK_RO, &m[j]), "MAP RO",
			  blocks[j]);
		pg[j] = t_below(&k->rng, PAGES);
		data_check(post(k, &m[j], OP_READ, pg[j] * PAGE, PAGE, j), -1, "post");
	}
	for (t0 = bench_now_ns(); done < n;) {
		done += (unsigned)reap(k, wc, QD, 1000);
		if (done < n && bench_now_ns() - t0 > STALL_NS)
			cl_die("cold READs: %u of %u completed in 5 s", done, n);
	}
	for (unsigned j = 0; j < n; j++) {
		tag_check(slot(k, j), blocks[j], pg[j]);
		req_check(k, brick_unmap(k->c, blocks[j] * BLK), "UNMAP", blocks[j]);
	}
}

static void cold_qd1(struct cl *k, const uint64_t *blocks, unsigned n)
{
	static const char *const names[STEPS] = { "file.cold_map", "file.cold_read",
		"file.cold_unmap", "file.cold_read2" };
	uint64_t *tot = samples(n), *step[STEPS], t[STEPS];
	uint64_t t0 = bench_now_ns(), end = t0 + 120 * SEC, spent = 0;
	unsigned got = 0;

	for (int s = 0; s < STEPS; s++)
		step[s] = samples(n);
	for (; got < n && bench_now_ns() < end; got++) {
		cold_one(k, blocks[got], t);
		tot[got] = t[STEP_MAP] + t[STEP_READ] + t[STEP_UNMAP];
		spent += tot[got];
		for (int s = 0; s < STEPS; s++)
			step[s][got] = t[s];
	}
	put_lat("file.cold_qd1", tot, got);
	fig("file.cold_qd1", "iops", spent ? got * 1e9 / (double)spent : 0);
	for (int s = 0; s < STEPS; s++) {
		put_lat(names[s], step[s], got);
		free(step[s]);
	}
	free(tot);
}

static void cold_qd32(struct cl *k, const uint64_t *blocks, unsigned n)
{
	uint64_t t0 = bench_now_ns(), end = t0 + 120 * SEC;
	unsigned done = 0;

	while (done < n && bench_now_ns() < end) {
		unsigned b = n - done < k->depth ? n - done : k->depth;

		cold_batch(k, blocks + done, b);
		done += b;
	}
	fig("file.cold_qd32", "iops", done * 1e9 / (double)(bench_now_ns() - t0));
	fig("file.cold_qd32", "n", done);
}

static void file_tier(struct cl *k)
{
	unsigned slots = (unsigned)brick_conn_info(k->c)->slots, filled = fill_file(k, slots);
	double budget = stat_value(k, "mem_budget");
	unsigned resident = budget > 0 ? (unsigned)(budget / BLK) : 0;
	unsigned warm = resident + 2, n1 = cfg.quick ? 100 : 200, n32 = cfg.quick ? 128 : 192;
	/* blocks released longest ago: evicted first, so these are on file */
	unsigned cold = filled > resident + 8 ? filled - resident - 8 : 0;
	uint64_t *order = shuffled(&k->rng, cold);
	uint64_t t[STEPS];

	if (!resident)
		cl_die("the file-tier brick has no memory budget (--mem)");
	stat_figs(k, "file.before");
	if (cold < warm + n1 + n32) {
		n1 = cold > warm ? (cold - warm) / 2 : 0;
		n32 = cold > warm + n1 ? cold - warm - n1 : 0;
		printf("note: only %u cold blocks: %u at QD 1, %u at QD 32\n", cold, n1, n32);
	}
	/* The first accesses evict the blocks the fill left dirty (a 2 MiB write-back each):
	 * not counted. After them every eviction drops a clean block. */
	for (unsigned i = 0; i < warm && i < cold; i++)
		cold_one(k, order[i], t);
	fig("file", "warm", warm < cold ? warm : cold);
	cold_qd1(k, order + warm, n1);
	cold_qd32(k, order + warm + n1, n32);
	stat_figs(k, "file.after");
	free(order);
}

/* brick-bench-client ADDR PORT mem|file [--quick] [--seed N] (brick_run's br_client). */
int main(int argc, char **argv)
{
	struct brick_connect_opts o = { .depth = QD };
	struct cl k = { .rng.s = 1 };
	const char *tier = argc > 3 ? argv[3] : "";
	size_t len = BLK + QD * PAGE;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4)
		cl_die("usage: brick-bench-client ADDR PORT mem|file [--quick] [--seed N] "
		       "(brick-bench runs it)");
	for (int i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			cfg.quick = true;
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			k.rng.s = strtoull(argv[++i], NULL, 0);
	}
	if ((rc = brick_connect(argv[1], argv[2], &o, &k.c)))
		cl_die("connect to %s:%s: %s", argv[1], argv[2], strerror(-rc));
	k.depth = brick_conn_depth(k.c) < QD ? brick_conn_depth(k.c) : QD;
	k.buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (k.buf == MAP_FAILED)
		cl_die("mmap of %zu bytes: %s", len, strerror(errno));
	memset(k.buf, 0x5a, len);
	if (!(k.mr = brick_reg(k.c, k.buf, len)))
		cl_die("registering %zu bytes: %s", len, strerror(errno));
	if (!strcmp(tier, "mem"))
		mem_tier(&k);
	else if (!strcmp(tier, "file"))
		file_tier(&k);
	else
		cl_die("no tier '%s' (mem or file)", tier);
	ibv_dereg_mr(k.mr);
	brick_close(k.c);
	munmap(k.buf, len);
	return 0;
}

#else /* the harness side: brick-bench */

/* ==== the figures, from the client and the anchors ==== */

static struct figure {
	char key[48];
	double v;
} figs[160];
static unsigned nfigs;

static void fig_set(const char *key, double v)
{
	for (unsigned i = 0; i < nfigs; i++)
		if (!strcmp(figs[i].key, key)) {
			figs[i].v = v;
			return;
		}
	if (nfigs < T_ARRAY_SIZE(figs)) {
		snprintf(figs[nfigs].key, sizeof(figs[0].key), "%s", key);
		figs[nfigs++].v = v;
	}
}

static double fig_get(const char *key)
{
	for (unsigned i = 0; i < nfigs; i++)
		if (!strcmp(figs[i].key, key))
			return figs[i].v;
	return NAN;
}

/* Take the client's "fig" lines; print the rest (notes, errors). */
static void take_output(const char *out)
{
	const char *line = out;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char key[48];
		double v;

		if (len > 4 && !strncmp(line, "fig ", 4) && sscanf(line, "fig %47s %lf", key, &v) == 2)
			fig_set(key, v);
		else if (len)
			printf("  %.*s\n", (int)len, line);
		line = nl ? nl + 1 : NULL;
	}
}

/* ==== the anchors (here, on the brick's host filesystem) ==== */

static void lat_figs(const char *key, uint64_t *ns, unsigned n)
{
	char k[48];

	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	snprintf(k, sizeof(k), "%s.med_us", key);
	fig_set(k, ns[n / 2] / 1e3);
	snprintf(k, sizeof(k), "%s.p99_us", key);
	fig_set(k, ns[(uint64_t)n * 99 / 100] / 1e3);
}

static void io_check(ssize_t got, size_t want, const char *what)
{
	if (got != (ssize_t)want) {
		fprintf(stderr, "brick-bench: local %s: %s\n", what,
			got < 0 ? strerror(errno) : "short");
		exit(1);
	}
}

/* QD 1: n timed pread or pwrite of 4 KiB at the offsets (after n/10 untimed). */
static void local_qd1(int fd, const uint64_t *off, unsigned n, enum op op, unsigned warm,
		      const char *key)
{
	uint8_t *buf = aligned_alloc(PAGE, PAGE);
	uint64_t *ns = samples(n), end = bench_now_ns() + 30 * SEC;
	unsigned got = 0;

	memset(buf, 0x5a, PAGE);
	for (unsigned i = 0; i < warm + n && bench_now_ns() < end; i++) {
		uint64_t t0 = bench_now_ns();

		io_check(op == OP_READ ? pread(fd, buf, PAGE, (off_t)off[i % n])
				       : pwrite(fd, buf, PAGE, (off_t)off[i % n]), PAGE,
			 op == OP_READ ? "pread" : "pwrite");
		if (i >= warm)
			ns[got++] = bench_now_ns() - t0;
	}
	lat_figs(key, ns, got);
	free(ns);
	free(buf);
}

/* QD 32 as fio's psync engine with numjobs=32: 32 threads, each one 4 KiB pread or pwrite
 * at a time, taking the next offset. */
struct jobs {
	int fd;
	enum op op;
	const uint64_t *off;
	unsigned n;
	uint64_t end;
	atomic_uint next, done;
};

static void *job(void *arg)
{
	struct jobs *j = arg;
	uint8_t *buf = aligned_alloc(PAGE, PAGE);
	unsigned i;

	memset(buf, 0x5a, PAGE);
	while ((i = atomic_fetch_add(&j->next, 1)) < j->n && bench_now_ns() < j->end) {
		ssize_t r = j->op == OP_READ ? pread(j->fd, buf, PAGE, (off_t)j->off[i])
					     : pwrite(j->fd, buf, PAGE, (off_t)j->off[i]);

		if (r == PAGE)
			atomic_fetch_add(&j->done, 1);
	}
	free(buf);
	return NULL;
}

static void local_qd32(int fd, const uint64_t *off, unsigned n, enum op op, const char *key)
{
	struct jobs j = { .fd = fd, .op = op, .off = off, .n = n };
	pthread_t th[QD];
	unsigned started = 0;
	uint64_t t0 = bench_now_ns();
	char k[48];

	j.end = t0 + 30 * SEC;
	for (; started < QD; started++)
		if (pthread_create(&th[started], NULL, job, &j))
			break;
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	snprintf(k, sizeof(k), "%s.iops", key);
	fig_set(k, atomic_load(&j.done) * 1e9 / (double)(bench_now_ns() - t0));
	if (atomic_load(&j.done) < n)
		printf("  (local %s: %u of %u operations done: errors or time)\n", key,
		       atomic_load(&j.done), n);
}

/* fdatasync after a pwrite of len bytes (the pwrite untimed), as the brick's FLUSH. */
static void local_sync(int fd, struct t_rng *rng, uint64_t size, size_t len, const char *key)
{
	unsigned n = cfg.quick ? 20 : 50, got = 0;
	uint8_t *buf = aligned_alloc(PAGE, len);
	uint64_t *ns = samples(n);

	memset(buf, 0x6b, len);
	(void)fdatasync(fd);
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = len == BLK ? t_below(rng, size / BLK) * BLK
					  : t_below(rng, size / PAGE) * PAGE, t0;

		io_check(pwrite(fd, buf, len, (off_t)off), len, "pwrite");
		t0 = bench_now_ns();
		if (fdatasync(fd)) {
			fprintf(stderr, "brick-bench: local fdatasync: %s\n", strerror(errno));
			exit(1);
		}
		ns[got++] = bench_now_ns() - t0;
	}
	lat_figs(key, ns, got);
	free(ns);
	free(buf);
}

static uint64_t *random_pages(struct t_rng *rng, uint64_t size, unsigned n)
{
	uint64_t *off = samples(n);

	for (unsigned i = 0; i < n; i++)
		off[i] = t_below(rng, size / PAGE) * PAGE;
	return off;
}

static int open_file(const char *path, uint64_t *size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	off_t end = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);

	if (fd < 0 || end <= 0) {
		printf("  (no local anchor: %s: %s)\n", path, fd < 0 ? strerror(errno) : "empty");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*size = (uint64_t)end;
	return fd;
}

/* The memory tier's anchor: the 64 MiB file in the page cache (read whole first). */
static void local_mem(struct t_rng *rng, const char *path)
{
	unsigned n = cfg.quick ? 2000 : 10000, n32 = cfg.quick ? 5000 : 20000;
	uint64_t size, *off, *off32;
	uint8_t *buf;
	int fd = open_file(path, &size);

	if (fd < 0)
		return;
	buf = aligned_alloc(PAGE, BLK);
	for (uint64_t o = 0; o < size; o += BLK)
		io_check(pread(fd, buf, BLK, (off_t)o), BLK, "pread (warming)");
	free(buf);
	off = random_pages(rng, size, n);
	off32 = random_pages(rng, size, n32);
	local_qd1(fd, off, n, OP_READ, n / 10, "local.read4k");
	local_qd1(fd, off, n, OP_WRITE, n / 10, "local.write4k");
	local_qd32(fd, off32, n32, OP_READ, "local.read4k_qd32");
	local_qd32(fd, off32, n32, OP_WRITE, "local.write4k_qd32");
	local_sync(fd, rng, size, PAGE, "local.sync4k");
	local_sync(fd, rng, size, BLK, "local.sync2m");
	free(off);
	free(off32);
	close(fd);
}

/* Pages of [0, size) of fd in the page cache, in KiB (mincore of a mapping of it). */
static uint64_t resident_kib(int fd, uint64_t size)
{
	uint8_t *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	unsigned char *vec = malloc(size / PAGE);
	uint64_t n = 0;

	if (p != MAP_FAILED && vec && !mincore(p, size, vec))
		for (uint64_t i = 0; i < size / PAGE; i++)
			n += vec[i] & 1;
	if (p != MAP_FAILED)
		munmap(p, size);
	free(vec);
	return n * PAGE / 1024;
}

/* The file out of the page cache: written back, then dropped. */
static void drop_cache(int fd, uint64_t size, const char *key)
{
	char k[48];

	(void)fdatasync(fd);
	(void)posix_fadvise(fd, 0, (off_t)size, POSIX_FADV_DONTNEED);
	snprintf(k, sizeof(k), "%s.resident_kib", key);
	fig_set(k, (double)resident_kib(fd, size));
}

/* Do the pages at off[0..n) start with the tags the brick's client wrote? Otherwise the
 * anchor reads something else than the brick did (holes, when the fill failed). */
static void tag_survey(int fd, const uint64_t *off, unsigned n)
{
	unsigned bad = 0;
	uint64_t got;

	for (unsigned i = 0; i < n; i++)
		if (pread(fd, &got, sizeof(got), (off_t)off[i]) != sizeof(got) ||
		    got != page_tag(off[i] / BLK, off[i] % BLK / PAGE))
			bad++;
	if (bad)
		printf("  (local: %u of %u pages read lack the tag the client wrote through the "
		       "brick)\n", bad, n);
}

/* The file tier's anchor: one 4 KiB pread at a random page of each of n distinct blocks
 * (the brick's pattern), every one from the disk; the pages read checked. */
static void local_file(struct t_rng *rng, const char *path)
{
	unsigned n1 = (unsigned)fig_get("file.cold_qd1.n"), n32 = (unsigned)fig_get("file.cold_qd32.n");
	uint64_t size, *blocks, *off;
	unsigned nb;
	int fd;

	if (!(fig_get("file.blocks") > 0)) {
		printf("  (no local cold anchor: the brick's client did not fill the file)\n");
		return;
	}
	if ((fd = open_file(path, &size)) < 0)
		return;
	/* the blocks the client filled: slots 0.. in order (the lowest free slot is taken) */
	nb = (unsigned)(size / BLK);
	nb = fig_get("file.blocks") < nb ? (unsigned)fig_get("file.blocks") : nb;
	n1 = n1 >= 16 && n1 <= nb ? n1 : (nb < 200 ? nb : 200);
	n32 = n32 >= 32 && n32 <= nb ? n32 : (nb < 192 ? nb : 192);
	(void)posix_fadvise(fd, 0, (off_t)size, POSIX_FADV_RANDOM);
	blocks = shuffled(rng, nb);
	off = samples(nb);
	for (unsigned i = 0; i < nb; i++)
		off[i] = blocks[i] * BLK + t_below(rng, PAGES) * PAGE;
	drop_cache(fd, size, "local.cold_qd1");
	local_qd1(fd, off, n1, OP_READ, 0, "local.cold_qd1");
	fig_set("local.cold_qd1.iops", 1e6 / fig_get("local.cold_qd1.med_us"));
	drop_cache(fd, size, "local.cold_qd32");
	local_qd32(fd, off, n32, OP_READ, "local.cold_qd32");
	tag_survey(fd, off, n32);
	free(blocks);
	free(off);
	close(fd);
}

/* ==== the run (harness) ==== */

static void unlink_brick(const char *path)
{
	char meta[PATH_MAX + 8];

	snprintf(meta, sizeof(meta), "%s.meta", path);
	unlink(path);
	unlink(meta);
}

/* A brick on host 1 with file/size/mem, brick-bench-client for `tier` on host 0; its
 * figures taken. */
static void run_tier(struct h_env *e, uint64_t seed, const char *tier, const char *path,
		     const char *size, const char *mem, int timeout_s)
{
	char seedtxt[32], *out = NULL;
	const char *args[] = { tier, "--seed", seedtxt, cfg.quick ? "--quick" : NULL, NULL };
	struct br_brick b;
	uint64_t t0 = bench_now_ns();
	int code;

	snprintf(seedtxt, sizeof(seedtxt), "%" PRIu64, seed);
	unlink_brick(path);
	printf("%s tier: odpemu-brick --file %s --size %s%s%s\n", tier, path, size,
	       mem ? " --mem " : "", mem ? mem : "");
	if (br_start(e, &b, path, size, mem)) {
		T_CHECK(0, "the %s-tier brick starts", tier);
		return;
	}
	code = br_client(e, &b, args, &out, timeout_s);
	take_output(out);
	BR_EQ(code, 0, "the %s-tier client ran", tier);
	BR_EQ(br_stop(&b, SIGTERM), 0, "the %s-tier brick ends cleanly on SIGTERM", tier);
	printf("  (%.0f s)\n", (bench_now_ns() - t0) / 1e9);
	free(out);
}

/* ---- the report ---- */

static void row(const char *figure, const char *brick_key, const char *local_key,
		const char *unit)
{
	double b = fig_get(brick_key), l = local_key ? fig_get(local_key) : NAN;
	char lt[16] = "-", rt[16] = "-";

	if (!isnan(l))
		snprintf(lt, sizeof(lt), "%.1f", l);
	if (!isnan(l) && !isnan(b) && l > 0)
		snprintf(rt, sizeof(rt), "%.3g", b / l);
	printf("%-44s %10.1f %10s %-6s %7s\n", figure, b, lt, unit, rt);
}

/* A figure of the brick's own (STAT) or derived, no anchor. */
static void row_value(const char *figure, double v, const char *unit)
{
	printf("%-44s %10.1f %10s %-6s %7s\n", figure, v, "-", unit, "-");
}

/* Counter `name` of STAT over the cold accesses, per access. */
static double per_cold_access(const char *name)
{
	char a[48], b[48];
	double n = fig_get("file.warm") + fig_get("file.cold_qd1.n") + fig_get("file.cold_qd32.n");

	snprintf(a, sizeof(a), "file.after.%s", name);
	snprintf(b, sizeof(b), "file.before.%s", name);
	return (fig_get(a) - fig_get(b)) / n;
}

static void goal(const char *what, double num, double den, double want, bool higher_better)
{
	double r = num / den;
	bool have = !isnan(r) && den > 0;

	printf("goal: %-58s %s: %.3g (%s)\n", what, have ? "ratio" : "no figure", have ? r : 0,
	       !have ? "-" : (higher_better ? r >= want : r <= want) ? "met" : "NOT MET");
}

static void report(void)
{
	printf("\n%-44s %10s %10s %-6s %7s\n", "figure", "brick", "local", "unit", "ratio");
	printf("memory tier (64 MiB: 32 blocks mapped RW); local: the same file, page cache\n");
	row("  4 KiB READ QD1 median (sync)", "mem.read4k.med_us", "local.read4k.med_us", "us");
	row("  4 KiB READ QD1 p99 (sync)", "mem.read4k.p99_us", "local.read4k.p99_us", "us");
	row("  4 KiB READ QD1 median (polled)", "mem.read4k_poll.med_us", "local.read4k.med_us",
	    "us");
	row("  8 B READ QD1 median (sync)", "mem.read8.med_us", NULL, "us");
	row("  8 B READ QD1 p99 (sync)", "mem.read8.p99_us", NULL, "us");
	row("  8 B READ QD1 median (polled)", "mem.read8_poll.med_us", NULL, "us");
	row("  4 KiB WRITE QD1 median (sync)", "mem.write4k.med_us", "local.write4k.med_us",
	    "us");
	row("  4 KiB WRITE QD1 p99 (sync)", "mem.write4k.p99_us", "local.write4k.p99_us", "us");
	row("  4 KiB READ QD32", "mem.read4k_qd32.iops", "local.read4k_qd32.iops", "IOPS");
	row("  4 KiB WRITE QD32", "mem.write4k_qd32.iops", "local.write4k_qd32.iops", "IOPS");
	row("  FLUSH persistent 4 KiB median / fdatasync", "mem.flush4k.med_us",
	    "local.sync4k.med_us", "us");
	row("  FLUSH persistent 4 KiB p99 / fdatasync", "mem.flush4k.p99_us",
	    "local.sync4k.p99_us", "us");
	row("  FLUSH persistent 2 MiB median / fdatasync", "mem.flush2m.med_us",
	    "local.sync2m.med_us", "us");
	row("  FLUSH persistent 2 MiB p99 / fdatasync", "mem.flush2m.p99_us",
	    "local.sync2m.p99_us", "us");
	row_value("  the device's own persistent FLUSH, mean", fig_get("mem.stat.flush_ns_total") /
		  fig_get("mem.stat.flushes") / 1e3, "us");
	printf("file tier (1 GiB, --mem 64M, every access cold); local: the same file, dropped\n");
	row("  fill: ALLOC+MAP+2 MiB WRITE+UNMAP", "file.fill_mbps", NULL, "MB/s");
	row("  blocks on file before the accesses", "file.before.blocks_on_file", NULL, "");
	row("  cold 4 KiB READ QD1 median (MAP..UNMAP)", "file.cold_qd1.med_us",
	    "local.cold_qd1.med_us", "us");
	row("  cold 4 KiB READ QD1 p99 (MAP..UNMAP)", "file.cold_qd1.p99_us",
	    "local.cold_qd1.p99_us", "us");
	row("    of which MAP RO (fault-in) median", "file.cold_map.med_us", NULL, "us");
	row("    of which READ median", "file.cold_read.med_us", NULL, "us");
	row("    of which UNMAP median", "file.cold_unmap.med_us", NULL, "us");
	row("    (a second READ before UNMAP, median)", "file.cold_read2.med_us", NULL, "us");
	row("  cold 4 KiB READ QD32 (batches of 32)", "file.cold_qd32.iops",
	    "local.cold_qd32.iops", "IOPS");
	row("  local: file pages resident before (QD32)", "local.cold_qd32.resident_kib", NULL,
	    "KiB");
	row_value("  brick: ODP page faults per cold access", per_cold_access("page_faults"), "");
	row_value("  brick: invalidations per cold access", per_cold_access("invalidations"), "");
	row_value("  brick: evictions per cold access", per_cold_access("evictions"), "");
	printf("\n");
	goal("memory-tier 4 KiB READ median <= 1.5 x 8 B READ median (sync)",
	     fig_get("mem.read4k.med_us"), fig_get("mem.read8.med_us"), 1.5, false);
	goal("  the same, polled (informational)", fig_get("mem.read4k_poll.med_us"),
	     fig_get("mem.read8_poll.med_us"), 1.5, false);
	goal("file-tier cold 4 KiB READ IOPS >= 0.5 x local cold pread (QD32)",
	     fig_get("file.cold_qd32.iops"), fig_get("local.cold_qd32.iops"), 0.5, true);
	goal("  the same at QD1 (informational)", fig_get("file.cold_qd1.iops"),
	     fig_get("local.cold_qd1.iops"), 0.5, true);
}

static void body(struct h_env *e)
{
	uint64_t seed = e->rng.s;
	char mem_path[PATH_MAX], file_path[PATH_MAX];

	snprintf(mem_path, sizeof(mem_path), "%s/brick-bench-mem.img", cfg.dir);
	snprintf(file_path, sizeof(file_path), "%s/brick-bench-file.img", cfg.dir);
	printf("hosts: %s %s and %s; %s run\n", e->netns ? "network namespaces" : "loopback",
	       e->host[0].addr, e->host[1].addr, cfg.quick ? "quick" : "full");
	printf("load average (1 min) at start: %.2f (other work on the machine skews all "
	       "figures)\n", bench_load_avg());
	run_tier(e, seed, "mem", mem_path, "64M", NULL, 400);
	local_mem(&e->rng, mem_path);
	unlink_brick(mem_path);
	run_tier(e, seed, "file", file_path, "1G", "64M", 900);
	local_file(&e->rng, file_path);
	unlink_brick(file_path);
	printf("load average (1 min) at end: %.2f\n", bench_load_avg());
	report();
}

/* ---- paths ---- */

static char self_dir[PATH_MAX];

/* name unset: self_dir/rel, which must exist. */
static void default_path(const char *name, const char *rel, const char *must)
{
	char path[PATH_MAX + 64], check[PATH_MAX + 128];

	if (getenv(name) && *getenv(name))
		return;
	snprintf(path, sizeof(path), "%s/%s", self_dir, rel);
	snprintf(check, sizeof(check), "%s%s", path, must);
	if (access(check, F_OK)) {
		fprintf(stderr, "brick-bench: no %s: build the tree (ninja -C <build>) or set "
			"%s\n", check, name);
		exit(1);
	}
	setenv(name, path, 1);
}

static void usage(void)
{
	fprintf(stderr, "usage: brick-bench [--quick] [--seed N] [--dir DIR]\n"
		"  --quick  fewer operations (either way filling the 1 GiB brick dominates)\n"
		"  --seed   the random offsets (printed; repeat a run with it)\n"
		"  --dir    where the brick's files go (default: this binary's directory;\n"
		"           1.1 GiB, removed at the end)\n"
		"ODPEMUD, ODPEMU_COMPAT_DIR, ODPEMU_BRICK, ODPEMU_BRICK_CLIENT default to this\n"
		"build tree (ninja -C <build> tests/bench/brick-bench-client too). As root the\n"
		"hosts are network namespaces joined by veth, else 127.0.0.1/127.0.0.2.\n");
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	ssize_t n = readlink("/proc/self/exe", self_dir, sizeof(self_dir) - 1);

	if (n <= 0) {
		fprintf(stderr, "brick-bench: /proc/self/exe: %s\n", strerror(errno));
		exit(1);
	}
	self_dir[n] = 0;
	*strrchr(self_dir, '/') = 0;
	cfg.dir = self_dir;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			cfg.quick = true;
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			i++;	/* t_seed (h_main) reads it */
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			cfg.dir = argv[++i];
		else
			usage();
	}
}

int main(int argc, char **argv)
{
	struct h_test t = { .name = "brick-bench", .seed = 1, .body = body };

	parse_args(argc, argv);
	default_path("ODPEMUD", "../../emu/odpemud", "");
	default_path("ODPEMU_COMPAT_DIR", "../../compat", "/libibverbs.so.1");
	default_path("ODPEMU_BRICK", "../../brick/odpemu-brick", "");
	default_path("ODPEMU_BRICK_CLIENT", "brick-bench-client", "");
	setvbuf(stdout, NULL, _IOLBF, 0);
	t.watchdog_s = cfg.quick ? 1200 : 2400;
	return h_main(argc, argv, &t);
}
#endif
