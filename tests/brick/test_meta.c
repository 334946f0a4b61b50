/* SPDX-License-Identifier: MIT */
/*
 * The brick's allocation map (brick/meta.h), on logs in a directory made in the
 * test's working directory (the build tree) and removed at the end:
 *  - create and reopen; alloc, free, lookup and each error; the lowest free slot;
 *  - extents: runs merged and split, pagination, `from` inside a run, ids 0 and the top;
 *  - a reopen gives the same map; 200,000 records in random id order replay fast;
 *  - the torn tail: every length the last record can be cut to and every bit of it
 *    flipped: open drops that change alone and says how many bytes it cut;
 *  - corruption before the last record, and records that pass their crc but say
 *    something impossible: -EBADMSG with the log unchanged; another slot count -EINVAL;
 *  - compaction on free and on open keeps the map; a write that fails is -EIO and
 *    changes nothing (RLIMIT_FSIZE makes it fail, partway or at once);
 *  - kill -9: 50 seeded children do seeded allocs and frees and report each answer; the
 *    reopened map is exactly the answered sequence, or that plus the op in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "meta.h"
#include "t.h"

#define MiB (1ull << 20)
#define BLK (2 * MiB)
#define TOP 0xFFFFFFFFFFE00000ull	/* the highest block id */
#define REC 32
#define REC_ALLOC 2
#define REC_FREE 3

/* ---- helpers ---------------------------------------------------------------------- */

static long file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) ? -1 : (long)sb.st_size;
}

/* The whole file into a new buffer (*len its size), or NULL. */
static uint8_t *slurp(const char *path, size_t *len)
{
	long n = file_size(path);
	uint8_t *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
	int fd = open(path, O_RDONLY);

	if (!buf || fd < 0 || read(fd, buf, (size_t)n) != n) {
		free(buf);
		buf = NULL;
	}
	if (fd >= 0)
		close(fd);
	*len = n > 0 ? (size_t)n : 0;
	return buf;
}

static void spill(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	T_CHECK(fd >= 0 && write(fd, buf, len) == (ssize_t)len, "write %s", path);
	if (fd >= 0)
		close(fd);
}

static bool same_file(const char *path, const uint8_t *want, size_t len)
{
	size_t n;
	uint8_t *got = slurp(path, &n);
	bool same = got && n == len && memcmp(got, want, len) == 0;

	free(got);
	return same;
}

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* One record as meta.h lays it out, written here independently of meta.c. */
static void enc(uint8_t *p, uint16_t type, uint64_t addr, uint64_t slot, uint32_t seq,
		uint16_t rsvd)
{
	put_le(p, BRICK_META_MAGIC, 4);
	put_le(p + 4, type, 2);
	put_le(p + 6, rsvd, 2);
	put_le(p + 8, addr, 8);
	put_le(p + 16, slot, 8);
	put_le(p + 24, seq, 4);
	put_le(p + 28, crc32(0L, p, 28), 4);
}

static bool has(const struct brick_meta *m, uint64_t addr, uint64_t slot)
{
	uint64_t s = UINT64_MAX;

	return brick_meta_lookup(m, addr, &s) == 0 && s == slot;
}

static bool absent(const struct brick_meta *m, uint64_t addr)
{
	return brick_meta_lookup(m, addr, NULL) == -ENOENT;
}

struct pair {
	uint64_t addr, slot;
};

/* The whole map through extents (3 per call) and lookups, in id order: its size. */
static uint64_t dump(const struct brick_meta *m, struct pair *out, uint64_t cap)
{
	struct brick_extent ext[3];
	uint64_t from = 0, n = 0;
	uint32_t k;

	for (unsigned calls = 0; calls < 1000000; calls++) {
		k = brick_meta_extents(m, from, ext, 3, &from);
		for (uint32_t e = 0; e < k; e++)
			for (uint64_t off = 0; off < ext[e].length && n < cap; off += BLK, n++) {
				out[n].addr = ext[e].addr + off;
				T_EQ(brick_meta_lookup(m, out[n].addr, &out[n].slot), 0,
				     "dump lookup");
			}
		if (!from)
			break;
	}
	T_EQ(n, brick_meta_count(m), "dump holds every block");
	return n;
}

/* ---- create, reopen, the operations ------------------------------------------------- */

static void create_reopen(const char *path)
{
	struct brick_meta *m = NULL;
	struct brick_meta_report rep;

	T_EQ(brick_meta_open(path, 16, &m, &rep), 0, "create");
	if (!m)
		return;
	T_CHECK(rep.created && !rep.compacted, "created");
	T_EQ(rep.records, 0, "nothing replayed");
	T_EQ(rep.torn_bytes, 0, "nothing torn");
	T_EQ(brick_meta_slots(m), 16, "slots");
	T_EQ(brick_meta_count(m), 0, "empty");
	brick_meta_close(m);
	T_EQ(file_size(path), REC, "a new log is its header");
	T_EQ(brick_meta_open(path, 16, &m, &rep), 0, "reopen");
	T_CHECK(!rep.created && !rep.compacted, "not created again");
	T_EQ(rep.records, 1, "the header replayed");
	brick_meta_close(m);
	T_EQ(brick_meta_open(path, 0, &m, NULL), -EINVAL, "0 slots");
	T_EQ(brick_meta_open(path, (1ull << 29) + 1, &m, NULL), -EINVAL, "over 2^29 slots");
	unlink(path);
}

static void operations(const char *path)
{
	struct brick_meta *m = NULL;
	uint64_t s = 99;
	long size;

	T_EQ(brick_meta_open(path, 5, &m, NULL), 0, "open 5 slots");
	if (!m)
		return;
	for (uint64_t i = 0; i < 5; i++) {
		T_EQ(brick_meta_alloc(m, (10 + i) * BLK, &s), 0, "alloc");
		T_EQ(s, i, "slots in order");
	}
	size = file_size(path);
	T_EQ(brick_meta_alloc(m, 20 * BLK, &s), -ENOSPC, "all slots used");
	T_EQ(brick_meta_alloc(m, 10 * BLK, &s), -EEXIST, "allocated already");
	T_EQ(brick_meta_alloc(m, 4096, &s), -EINVAL, "alloc of an unaligned id");
	T_EQ(brick_meta_alloc(m, BLK + 1, &s), -EINVAL, "alloc of an unaligned id (+1)");
	T_EQ(brick_meta_free(m, 20 * BLK, &s), -ENOENT, "free of a free id");
	T_EQ(brick_meta_free(m, MiB, &s), -EINVAL, "free of an unaligned id");
	T_EQ(brick_meta_lookup(m, 20 * BLK, &s), -ENOENT, "lookup of a free id");
	T_EQ(brick_meta_lookup(m, 3 * MiB, &s), -EINVAL, "lookup of an unaligned id");
	T_EQ(file_size(path), size, "refused calls write nothing");
	T_CHECK(has(m, 12 * BLK, 2), "lookup");
	T_CHECK(brick_meta_slot_used(m, 4) && !brick_meta_slot_used(m, 5), "slot_used");
	T_EQ(brick_meta_free(m, 13 * BLK, &s), 0, "free");
	T_EQ(s, 3, "the slot it had");
	T_EQ(brick_meta_free(m, 11 * BLK, &s), 0, "free");
	T_CHECK(!brick_meta_slot_used(m, 1) && !brick_meta_slot_used(m, 3), "slots freed");
	T_EQ(brick_meta_free(m, 11 * BLK, &s), -ENOENT, "freed twice");
	T_EQ(brick_meta_alloc(m, 30 * BLK, &s), 0, "realloc");
	T_EQ(s, 1, "the lowest free slot");
	T_EQ(brick_meta_alloc(m, 13 * BLK, &s), 0, "realloc");
	T_EQ(s, 3, "the next free slot");
	T_EQ(brick_meta_alloc(m, 31 * BLK, &s), -ENOSPC, "full again");
	T_EQ(brick_meta_count(m), 5, "count");
	T_EQ(file_size(path), (1 + 5 + 2 + 2) * REC, "one record per change");
	brick_meta_close(m);
	unlink(path);
}

/* ---- extents ------------------------------------------------------------------------ */

static void expect_extents(const struct brick_meta *m, uint64_t from, uint32_t max,
			   const struct brick_extent *want, uint32_t nwant, uint64_t want_next,
			   const char *what)
{
	struct brick_extent got[8];
	uint64_t next = 12345;
	uint32_t n = brick_meta_extents(m, from, got, max, &next);

	T_CHECK(n == nwant, "%s: %u extents, want %u", what, n, nwant);
	for (uint32_t i = 0; i < n && i < nwant; i++)
		T_CHECK(got[i].addr == want[i].addr && got[i].length == want[i].length,
			"%s: extent %u is %llx+%llx, want %llx+%llx", what, i,
			(unsigned long long)got[i].addr, (unsigned long long)got[i].length,
			(unsigned long long)want[i].addr, (unsigned long long)want[i].length);
	T_CHECK(next == want_next, "%s: next %llx, want %llx", what, (unsigned long long)next,
		(unsigned long long)want_next);
}

static void extents(const char *path)
{
	static const uint64_t ids[] = { 0, 1, 2, 5, 10, 11, 12, 13 };	/* in blocks */
	struct brick_meta *m = NULL;

	T_EQ(brick_meta_open(path, 64, &m, NULL), 0, "open");
	if (!m)
		return;
	expect_extents(m, 0, 8, NULL, 0, 0, "empty map");
	for (unsigned i = 0; i < T_ARRAY_SIZE(ids); i++)
		T_EQ(brick_meta_alloc(m, ids[i] * BLK, NULL), 0, "alloc");
	T_EQ(brick_meta_alloc(m, TOP - BLK, NULL), 0, "alloc top - 2 MiB");
	T_EQ(brick_meta_alloc(m, TOP, NULL), 0, "alloc the top id");

	const struct brick_extent all[] = { { 0, 3 * BLK }, { 5 * BLK, BLK },
					    { 10 * BLK, 4 * BLK }, { TOP - BLK, 2 * BLK } };
	expect_extents(m, 0, 8, all, 4, 0, "all runs, merged");
	expect_extents(m, 0, 1, all, 1, 3 * BLK, "page 1 of 1-extent pages");
	expect_extents(m, 3 * BLK, 1, all + 1, 1, 6 * BLK, "page 2");
	expect_extents(m, 6 * BLK, 1, all + 2, 1, 14 * BLK, "page 3");
	expect_extents(m, 14 * BLK, 1, all + 3, 1, 0, "page 4, the last: next 0");
	expect_extents(m, 0, 2, all, 2, 6 * BLK, "2-extent page 1");
	expect_extents(m, 6 * BLK, 2, all + 2, 2, 0, "2-extent page 2");
	expect_extents(m, 11 * BLK, 8, (struct brick_extent[]){ { 11 * BLK, 3 * BLK },
		       { TOP - BLK, 2 * BLK } }, 2, 0, "from inside a run");
	expect_extents(m, BLK + 4096, 1, (struct brick_extent[]){ { 2 * BLK, BLK } }, 1,
		       3 * BLK, "from unaligned, inside a run");
	expect_extents(m, 3 * BLK, 8, all + 1, 3, 0, "from a hole");
	expect_extents(m, TOP, 8, (struct brick_extent[]){ { TOP, BLK } }, 1, 0,
		       "from the top");
	expect_extents(m, TOP + 1, 8, NULL, 0, 0, "past the top");
	expect_extents(m, 0, 0, NULL, 0, 0, "max 0: next = from");

	/* a free splits a run, allocs bridge two runs into one */
	T_EQ(brick_meta_free(m, BLK, NULL), 0, "free 2 MiB");
	T_EQ(brick_meta_alloc(m, 6 * BLK, NULL), 0, "alloc 12 MiB");
	T_EQ(brick_meta_alloc(m, 7 * BLK, NULL), 0, "alloc 14 MiB");
	T_EQ(brick_meta_alloc(m, 8 * BLK, NULL), 0, "alloc 16 MiB");
	T_EQ(brick_meta_alloc(m, 9 * BLK, NULL), 0, "alloc 18 MiB");
	T_EQ(brick_meta_free(m, TOP - BLK, NULL), 0, "free top - 2 MiB");
	const struct brick_extent after[] = { { 0, BLK }, { 2 * BLK, BLK },
					      { 5 * BLK, 9 * BLK }, { TOP, BLK } };
	expect_extents(m, 0, 8, after, 4, 0, "split and merged");
	expect_extents(m, 0, 3, after, 3, 14 * BLK, "3-extent page 1");
	expect_extents(m, 0, 4, after, 4, 0, "exactly all: next 0");
	brick_meta_close(m);
	unlink(path);
}

/* ---- reopen, and a big log --------------------------------------------------------- */

static void reopen_same(const char *path, struct t_rng *rng)
{
	enum { SLOTS = 300, OPS = 1500 };
	struct pair *a = calloc(SLOTS, sizeof(*a)), *b = calloc(SLOTS, sizeof(*b));
	struct brick_meta *m = NULL;
	uint64_t na, nb;

	T_EQ(brick_meta_open(path, SLOTS, &m, NULL), 0, "open");
	if (!m || !a || !b)
		goto out;
	for (unsigned i = 0; i < OPS; i++) {
		uint64_t id = t_below(rng, 400) * BLK;

		if (brick_meta_lookup(m, id, NULL) == 0)
			T_EQ(brick_meta_free(m, id, NULL), 0, "free");
		else
			T_CHECK(brick_meta_alloc(m, id, NULL) == 0 ||
				brick_meta_count(m) == SLOTS, "alloc");
	}
	na = dump(m, a, SLOTS);
	brick_meta_close(m);
	T_EQ(brick_meta_open(path, SLOTS, &m, NULL), 0, "reopen");
	if (!m)
		goto out;
	nb = dump(m, b, SLOTS);
	T_CHECK(na == nb && memcmp(a, b, na * sizeof(*a)) == 0, "the same map after reopen");
	for (uint64_t i = 0; i < SLOTS; i++) {
		uint64_t holders = 0;

		for (uint64_t k = 0; k < nb; k++)
			holders += b[k].slot == i;
		T_EQ(brick_meta_slot_used(m, i), holders, "slot_used agrees with the map");
	}
	brick_meta_close(m);
out:
	free(a);
	free(b);
	unlink(path);
}

/* Block i of the big log: an odd multiplier is a bijection on u32, so the ids are
 * distinct and scattered. */
static uint64_t scattered(uint32_t i)
{
	return (uint64_t)(uint32_t)(i * 2654435761u) * BLK;
}

/* A log of 200,000 allocs in scattered id order (and every 7th freed), written here:
 * replay must not be quadratic. */
static void big_log(const char *path)
{
	enum { SLOTS = 1 << 18, LIVE = 200000 };
	size_t cap = (1 + LIVE + LIVE / 7 + 1) * REC, len = 0;
	uint8_t *log = malloc(cap);
	struct brick_meta *m = NULL;
	struct brick_meta_report rep;
	struct brick_extent ext[256];
	struct timespec t0, t1;
	uint64_t from = 0, blocks = 0, s;
	uint32_t seq = 0;

	if (!log)
		return;
	enc(log, 1, SLOTS, 1, seq++, 0);
	len = REC;
	for (uint32_t i = 0; i < LIVE; i++, len += REC)
		enc(log + len, REC_ALLOC, scattered(i), i, seq++, 0);
	for (uint32_t i = 0; i < LIVE; i += 7, len += REC)
		enc(log + len, REC_FREE, scattered(i), i, seq++, 0);
	spill(path, log, len);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	T_EQ(brick_meta_open(path, SLOTS, &m, &rep), 0, "open a 230,000-record log");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("replayed %llu records in %.0f ms\n", (unsigned long long)rep.records,
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	T_CHECK(t1.tv_sec - t0.tv_sec < 20, "replay is not quadratic");
	if (!m)
		goto out;
	T_EQ(rep.records, seq, "every record replayed");
	T_EQ(brick_meta_count(m), LIVE - (LIVE + 6) / 7, "live blocks");
	for (uint32_t i = 0; i < LIVE; i += 997)
		T_CHECK(i % 7 ? has(m, scattered(i), i) : absent(m, scattered(i)), "block %u", i);
	for (unsigned calls = 0; calls < 1000000; calls++) {
		uint32_t n = brick_meta_extents(m, from, ext, 256, &from);

		for (uint32_t e = 0; e < n; e++)
			blocks += ext[e].length / BLK;
		if (!from)
			break;
	}
	T_EQ(blocks, brick_meta_count(m), "the extents cover every block");
	T_EQ(brick_meta_alloc(m, TOP, &s), 0, "alloc");
	T_EQ(s, 0, "slot 0 (freed) is the lowest free");
	T_EQ(brick_meta_alloc(m, TOP - BLK, &s), 0, "alloc");
	T_EQ(s, 7, "then slot 7");
	brick_meta_close(m);
out:
	free(log);
	unlink(path);
}

/* ---- the torn tail ------------------------------------------------------------------ */

/* Header, alloc A B C (slots 0 1 2), free B, then alloc D (slot 1) or free C: 6 records. */
static bool write_six(const char *path, bool last_free)
{
	struct brick_meta *m = NULL;

	unlink(path);
	if (brick_meta_open(path, 8, &m, NULL))
		return false;
	T_EQ(brick_meta_alloc(m, 0, NULL), 0, "A");
	T_EQ(brick_meta_alloc(m, BLK, NULL), 0, "B");
	T_EQ(brick_meta_alloc(m, TOP, NULL), 0, "C");
	T_EQ(brick_meta_free(m, BLK, NULL), 0, "free B");
	if (last_free)
		T_EQ(brick_meta_free(m, TOP, NULL), 0, "free C");
	else
		T_EQ(brick_meta_alloc(m, 4 * BLK, NULL), 0, "D");
	brick_meta_close(m);
	return file_size(path) == 6 * REC;
}

/* Open a log whose last record was damaged (torn bytes cut): the map before it. */
static void expect_torn(const char *path, bool last_free, uint64_t torn, const char *what)
{
	struct brick_meta *m = NULL;
	struct brick_meta_report rep;

	T_EQ(brick_meta_open(path, 8, &m, &rep), 0, what);
	if (!m)
		return;
	T_CHECK(rep.torn_bytes == torn && rep.records == 5 && !rep.created,
		"%s: torn %llu (want %llu), records %llu", what,
		(unsigned long long)rep.torn_bytes, (unsigned long long)torn,
		(unsigned long long)rep.records);
	T_CHECK(has(m, 0, 0) && absent(m, BLK), "%s: A kept, B freed", what);
	if (last_free)
		T_CHECK(has(m, TOP, 2), "%s: the free of C is gone", what);
	else
		T_CHECK(has(m, TOP, 2) && absent(m, 4 * BLK) && !brick_meta_slot_used(m, 1),
			"%s: the alloc of D is gone", what);
	T_EQ(brick_meta_count(m), 2, what);
	brick_meta_close(m);
	T_EQ(file_size(path), 5 * REC, "the tail is cut from the file");
}

static void torn_tail(const char *path, bool last_free)
{
	uint8_t *full, *copy = malloc(6 * REC);
	struct brick_meta *m = NULL;
	struct brick_meta_report rep;
	char what[96];
	size_t len;

	if (!write_six(path, last_free) || !(full = slurp(path, &len)) || !copy) {
		T_CHECK(0, "a six-record log");
		free(copy);
		return;
	}
	/* keep 0: cut at the record's start, the record gone whole */
	for (size_t keep = 0; keep < REC; keep++) {
		spill(path, full, 5 * REC + keep);
		snprintf(what, sizeof(what), "last %s cut to %zu bytes",
			 last_free ? "free" : "alloc", keep);
		expect_torn(path, last_free, keep, what);
	}
	for (unsigned bit = 0; bit < REC * 8; bit++) {
		memcpy(copy, full, 6 * REC);
		copy[5 * REC + bit / 8] ^= (uint8_t)(1u << (bit % 8));
		spill(path, copy, 6 * REC);
		snprintf(what, sizeof(what), "last %s, bit %u flipped",
			 last_free ? "free" : "alloc", bit);
		expect_torn(path, last_free, REC, what);
	}
	/* the log goes on after a cut: the next record's seq follows the kept ones */
	T_EQ(brick_meta_open(path, 8, &m, NULL), 0, "open after the cut");
	if (m) {
		T_EQ(brick_meta_alloc(m, 9 * BLK, NULL), 0, "alloc after the cut");
		brick_meta_close(m);
	}
	T_EQ(brick_meta_open(path, 8, &m, &rep), 0, "reopen");
	if (m) {
		T_CHECK(rep.records == 6 && rep.torn_bytes == 0 && has(m, 9 * BLK, 1),
			"the alloc after the cut is kept");
		brick_meta_close(m);
	}
	free(full);
	free(copy);
	unlink(path);
}

/* A log that is only a header, torn: nothing was answered, so a new log is written. */
static void torn_header(const char *path)
{
	uint8_t hdr[REC];
	struct brick_meta *m = NULL;
	struct brick_meta_report rep;

	enc(hdr, 1, 8, 1, 0, 0);
	for (size_t keep = 0; keep <= REC; keep++) {
		if (keep == REC)
			hdr[3] ^= 0x10;		/* the whole header, but bad */
		spill(path, hdr, keep);
		T_EQ(brick_meta_open(path, 8, &m, &rep), 0, "open a torn header");
		T_CHECK(rep.created && rep.records == 0 && rep.torn_bytes == keep,
			"header cut to %zu: created, torn %llu", keep,
			(unsigned long long)rep.torn_bytes);
		brick_meta_close(m);
		m = NULL;
		T_EQ(file_size(path), REC, "a new header");
	}
	unlink(path);
}

/* ---- corruption --------------------------------------------------------------------- */

static void expect_corrupt(const char *path, const uint8_t *log, size_t len, uint64_t good,
			   const char *what)
{
	struct brick_meta *m = NULL;
	struct brick_meta_report rep;
	int rc;

	spill(path, log, len);
	rc = brick_meta_open(path, 8, &m, &rep);
	T_CHECK(rc == -EBADMSG && !m, "%s: open %d, want -EBADMSG", what, rc);
	T_CHECK(rep.records == good && rep.torn_bytes == 0,
		"%s: replay stopped after %llu records, want %llu", what,
		(unsigned long long)rep.records, (unsigned long long)good);
	T_CHECK(same_file(path, log, len), "%s: the log is left as it was", what);
}

/* A bit flipped in a record before the last: -EBADMSG, never a tear. */
static void corrupt_middle(const char *path, struct t_rng *rng)
{
	uint8_t *full, copy[6 * REC + 7];
	char what[80];
	size_t len;

	if (!write_six(path, false) || !(full = slurp(path, &len)))
		return;
	for (unsigned rec = 0; rec < 5; rec++)
		for (unsigned trial = 0; trial < 8; trial++) {
			unsigned bit = (unsigned)t_below(rng, REC * 8);

			memcpy(copy, full, len);
			copy[rec * REC + bit / 8] ^= (uint8_t)(1u << (bit % 8));
			snprintf(what, sizeof(what), "record %u bit %u flipped", rec, bit);
			expect_corrupt(path, copy, len, rec, what);
		}
	/* a tear is one record: a bad record then a partial one, or two bad ones, is not */
	memcpy(copy, full, len);
	copy[5 * REC + 9] ^= 4;
	memset(copy + len, 0xAB, 7);
	expect_corrupt(path, copy, len + 7, 5, "a bad last record, then 7 bytes");
	copy[4 * REC + 9] ^= 4;
	expect_corrupt(path, copy, len, 4, "the last two records bad");
	free(full);
	unlink(path);
}

/* A crafted record: seq is the record's index plus seq_off. */
struct crafted {
	uint16_t type;
	uint64_t addr, slot;
	uint32_t seq_off;
	uint16_t rsvd;
};

#define H { 1, 8, 1, 0, 0 }
#define A(id, s) { REC_ALLOC, (id) * BLK, s, 0, 0 }
#define F(id, s) { REC_FREE, (id) * BLK, s, 0, 0 }

static size_t craft(uint8_t *log, const struct crafted *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		enc(log + i * REC, r[i].type, r[i].addr, r[i].slot, i + r[i].seq_off,
		    r[i].rsvd);
	return n * REC;
}

/* Records whose crc is right but that say something impossible: corruption wherever they
 * are (a tear cannot make a good crc), reported at the first impossible one. */
static void corrupt_semantic(const char *path)
{
	static const struct {
		const char *what;
		struct crafted r[5];
		unsigned n, good;
	} cases[] = {
		{ "an id allocated twice", { H, A(0, 0), A(0, 1) }, 3, 2 },
		{ "a slot allocated twice", { H, A(0, 0), A(1, 0) }, 3, 2 },
		{ "a free of a free id", { H, F(0, 0) }, 2, 1 },
		{ "a free naming the wrong slot", { H, A(0, 0), F(0, 1), A(2, 1) }, 4, 2 },
		{ "an id in two slots for a while",
		  { H, A(0, 0), A(0, 1), F(0, 0), A(3, 2) }, 5, 2 },
		{ "a free of a slot another id holds", { H, A(0, 0), A(1, 1), F(1, 0) }, 4, 3 },
		{ "a second header", { H, A(0, 0), H, A(1, 1) }, 4, 2 },
		{ "no header first", { A(0, 0), A(1, 1) }, 2, 0 },
		{ "seq out of order", { H, A(0, 0), { REC_ALLOC, 0, 1, 1, 0 } }, 3, 2 },
		{ "an unaligned id", { H, A(0, 0), { REC_ALLOC, 4096, 1, 0, 0 } }, 3, 2 },
		{ "a slot past the end", { H, A(0, 8) }, 2, 1 },
		{ "reserved bits set", { H, A(0, 0), { REC_ALLOC, BLK, 1, 0, 1 } }, 3, 2 },
		{ "an unknown type", { H, { 4, 0, 0, 0, 0 } }, 2, 1 },
	};
	static const struct crafted fine[] = { H, A(0, 0), A(1, 1), F(0, 0), A(2, 0) };
	struct brick_meta *m = NULL;
	struct brick_meta_report rep;
	uint8_t log[5 * REC];

	for (unsigned i = 0; i < T_ARRAY_SIZE(cases); i++)
		expect_corrupt(path, log, craft(log, cases[i].r, cases[i].n), cases[i].good,
			       cases[i].what);
	/* the same encoder makes a log that opens */
	spill(path, log, craft(log, fine, 5));
	T_EQ(brick_meta_open(path, 8, &m, &rep), 0, "a crafted good log");
	if (m) {
		T_CHECK(rep.records == 5 && has(m, BLK, 1) && has(m, 2 * BLK, 0) &&
			absent(m, 0), "its map");
		brick_meta_close(m);
	}
	unlink(path);
}

static void wrong_header(const char *path)
{
	struct brick_meta *m = NULL;
	uint8_t *full, hdr[REC];
	size_t len;

	if (!write_six(path, false) || !(full = slurp(path, &len)))
		return;
	T_EQ(brick_meta_open(path, 16, &m, NULL), -EINVAL, "a log for 8 slots opened for 16");
	T_CHECK(!m && same_file(path, full, len), "left as it was");
	enc(hdr, 1, 8, 2, 0, 0);
	spill(path, hdr, REC);
	T_EQ(brick_meta_open(path, 8, &m, NULL), -EPROTONOSUPPORT, "format version 2");
	free(full);
	unlink(path);
}

/* ---- compaction and write failures --------------------------------------------------- */

static void compaction(const char *path, const char *tmp)
{
	enum { LIVE = 10 };
	struct pair before[LIVE + 1], after[LIVE + 1];
	struct brick_meta *m = NULL;
	struct brick_meta_report rep;
	uint8_t *log = malloc(1300 * REC);
	long prev = 0, size = 0;
	unsigned pairs;

	T_EQ(brick_meta_open(path, 64, &m, NULL), 0, "open");
	if (!m || !log)
		goto out;
	for (uint64_t i = 0; i < LIVE; i++)
		T_EQ(brick_meta_alloc(m, (3 * i + 1) * BLK, NULL), 0, "alloc");
	dump(m, before, LIVE);
	/* each pair adds two records: the log passes 1024 records (> 4 per live block) */
	for (pairs = 0; pairs < 1000; pairs++, prev = size) {
		T_EQ(brick_meta_alloc(m, 0, NULL), 0, "alloc 0");
		T_EQ(brick_meta_free(m, 0, NULL), 0, "free 0");
		if ((size = file_size(path)) < prev)
			break;
	}
	printf("compacted on free after %u alloc/free pairs: %ld -> %ld bytes\n", pairs, prev,
	       size);
	T_EQ(prev, 1023 * REC, "1023 records before the pair that made 1025");
	T_EQ(size, (LIVE + 1) * REC, "then only the live map");
	T_CHECK(file_size(tmp) < 0, "no copy left behind");
	T_EQ(dump(m, after, LIVE), LIVE, "the map");
	T_CHECK(memcmp(before, after, sizeof(before[0]) * LIVE) == 0, "kept by compaction");
	T_EQ(brick_meta_alloc(m, 0, NULL), 0, "the compacted log takes appends");
	brick_meta_close(m);
	T_EQ(brick_meta_open(path, 64, &m, &rep), 0, "reopen");
	if (!m)
		goto out;
	T_CHECK(rep.records == LIVE + 2 && !rep.compacted && !rep.torn_bytes,
		"reopen: %llu records", (unsigned long long)rep.records);
	T_CHECK(has(m, 0, 10) && has(m, BLK, 0) && has(m, 28 * BLK, 9), "reopen: the map");
	brick_meta_close(m);

	/* a log over the limit (written here) is compacted on open */
	enc(log, 1, 64, 1, 0, 0);
	for (uint32_t i = 1; i < 1201; i++)
		enc(log + i * REC, i % 2 ? REC_ALLOC : REC_FREE, 5 * BLK, 3, i, 0);
	enc(log + 1201 * REC, REC_ALLOC, TOP, 0, 1201, 0);
	enc(log + 1202 * REC, REC_ALLOC, 7 * BLK, 1, 1202, 0);
	spill(path, log, 1203 * REC);
	T_EQ(brick_meta_open(path, 64, &m, &rep), 0, "open a long log");
	if (!m)
		goto out;
	T_CHECK(rep.compacted && rep.records == 1203, "compacted on open");
	T_EQ(file_size(path), 3 * REC, "to the header and two allocs");
	T_CHECK(has(m, TOP, 0) && has(m, 7 * BLK, 1) && absent(m, 5 * BLK), "the map");
	brick_meta_close(m);
	T_EQ(brick_meta_open(path, 64, &m, &rep), 0, "reopen");
	T_CHECK(m && !rep.compacted && rep.records == 3 && has(m, TOP, 0) && has(m, 7 * BLK, 1),
		"reopen the compacted log");
	brick_meta_close(m);
out:
	free(log);
	unlink(path);
}

/* RLIMIT_FSIZE at `extra` bytes past the log's end: a write stops there (partway when
 * extra is inside a record), as a full disk would stop it. */
static bool limit_file(const char *path, long extra)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_FSIZE, &rl))
		return false;
	rl.rlim_cur = extra < 0 ? rl.rlim_max : (rlim_t)(file_size(path) + extra);
	return setrlimit(RLIMIT_FSIZE, &rl) == 0;
}

static void write_failure(const char *path)
{
	struct brick_meta *m = NULL;
	struct brick_meta_report rep;
	long size;

	signal(SIGXFSZ, SIG_IGN);	/* a write past the limit fails with EFBIG instead */
	T_EQ(brick_meta_open(path, 8, &m, NULL), 0, "open");
	if (!m)
		return;
	T_EQ(brick_meta_alloc(m, 0, NULL), 0, "alloc");
	size = file_size(path);
	for (long extra = 0; extra < REC; extra += 16) {
		if (!limit_file(path, extra)) {
			printf("write failure: cannot set RLIMIT_FSIZE, skipped\n");
			break;
		}
		T_EQ(brick_meta_alloc(m, BLK, NULL), -EIO, "alloc when the write fails");
		T_EQ(brick_meta_free(m, 0, NULL), -EIO, "free when the write fails");
		limit_file(path, -1);
		T_EQ(file_size(path), size, "the log cut back");
		T_CHECK(absent(m, BLK) && has(m, 0, 0) && brick_meta_count(m) == 1,
			"nothing changed in memory");
	}
	T_EQ(brick_meta_alloc(m, BLK, NULL), 0, "alloc once the write can succeed");
	brick_meta_close(m);
	T_EQ(brick_meta_open(path, 8, &m, &rep), 0, "reopen");
	T_CHECK(m && rep.records == 3 && !rep.torn_bytes && has(m, 0, 0) && has(m, BLK, 1),
		"only the answered changes");
	brick_meta_close(m);
	signal(SIGXFSZ, SIG_DFL);
	unlink(path);
}

/* ---- kill -9 ------------------------------------------------------------------------ */

enum { POOL = 32, CRASH_SLOTS = 24, KILLS = 50, CHILD_OPS = 20000 };

/* The ids the crash test uses: a run from 0, scattered ones, and the top two. */
static uint64_t pool_id(unsigned k)
{
	if (k < 16)
		return k * BLK;
	return k < 30 ? (1000 + 3 * k) * BLK : TOP - (31 - k) * BLK;
}

struct answer {
	int32_t rc;
	uint16_t k;
	uint8_t op;		/* REC_ALLOC or REC_FREE */
	uint64_t slot;
};

struct model {
	bool live[POOL];
	uint64_t slot[POOL];
	bool used[CRASH_SLOTS];
};

/* What op on pool id k does to the model, and the answer it must get. */
static struct answer model_step(struct model *md, unsigned k)
{
	struct answer a = { .k = (uint16_t)k, .op = md->live[k] ? REC_FREE : REC_ALLOC };
	unsigned s = 0;

	if (md->live[k]) {
		a.slot = md->slot[k];
		md->used[a.slot] = md->live[k] = false;
		return a;
	}
	while (s < CRASH_SLOTS && md->used[s])
		s++;
	if (s == CRASH_SLOTS) {
		a.rc = -ENOSPC;
		return a;
	}
	md->used[s] = md->live[k] = true;
	md->slot[k] = a.slot = s;
	return a;
}

static bool model_is(const struct brick_meta *m, const struct model *md)
{
	uint64_t live = 0;

	for (unsigned k = 0; k < POOL; k++) {
		live += md->live[k];
		if (md->live[k] ? !has(m, pool_id(k), md->slot[k]) : !absent(m, pool_id(k)))
			return false;
	}
	return brick_meta_count(m) == live;
}

/* The child: seeded ops on seeded pool ids, each answer written to the pipe once the
 * call returns, with a seeded spin before each op so the kill lands anywhere. */
static void crash_child(const char *path, uint64_t seed, int out)
{
	struct t_rng pick = { seed }, spin = { seed ^ 0x5bd1e995ull };
	struct brick_meta *m = NULL;

	if (brick_meta_open(path, CRASH_SLOTS, &m, NULL))
		_exit(3);
	for (unsigned i = 0; i < CHILD_OPS; i++) {
		unsigned k = (unsigned)t_below(&pick, POOL);
		struct answer a = { .k = (uint16_t)k };

		for (volatile uint64_t n = t_below(&spin, 20000); n; n--)
			;
		a.op = brick_meta_lookup(m, pool_id(k), NULL) ? REC_ALLOC : REC_FREE;
		a.rc = a.op == REC_ALLOC ? brick_meta_alloc(m, pool_id(k), &a.slot)
					 : brick_meta_free(m, pool_id(k), &a.slot);
		if (write(out, &a, sizeof(a)) != sizeof(a))
			_exit(4);
	}
	brick_meta_close(m);
	_exit(0);
}

static bool same_answer(const struct answer *a, const struct answer *b)
{
	return a->rc == b->rc && a->k == b->k && a->op == b->op && a->slot == b->slot;
}

static bool read_answer(int fd, struct answer *a)
{
	/* a pipe write of a few bytes is atomic: whole answers or none */
	return read(fd, a, sizeof(*a)) == (ssize_t)sizeof(*a);
}

struct crash_stats {
	unsigned answered, in_flight, torn, compactions;
	uint64_t records;	/* in the log after the last reopen */
};

/* One kill point: run a child, kill it, check its answers against the model and the
 * reopened log against the answers. *md is the map before and after. */
static void kill_point(const char *path, uint64_t seed, struct t_rng *when, struct model *md,
		       struct crash_stats *st)
{
	struct t_rng pick = { seed };
	struct brick_meta *m = NULL;
	struct brick_meta_report rep;
	struct model inflight;
	struct answer a, want;
	unsigned n = 0, target = 0;
	int fds[2], status;
	pid_t pid;

	if (pipe(fds) || (pid = fork()) < 0) {
		T_CHECK(0, "pipe/fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		close(fds[0]);
		crash_child(path, seed, fds[1]);
	}
	close(fds[1]);
	if (t_below(when, 2))
		target = 1 + (unsigned)t_below(when, 600);	/* kill after answer N */
	else
		usleep((useconds_t)t_below(when, 40000));	/* kill after a delay */
	for (; target && n < target && read_answer(fds[0], &a); n++) {
		want = model_step(md, (unsigned)t_below(&pick, POOL));
		T_CHECK(same_answer(&a, &want), "seed %llu: answer %u is not the model's",
			(unsigned long long)seed, n);
	}
	kill(pid, SIGKILL);
	for (; read_answer(fds[0], &a); n++) {
		want = model_step(md, (unsigned)t_below(&pick, POOL));
		T_CHECK(same_answer(&a, &want), "seed %llu: answer %u is not the model's",
			(unsigned long long)seed, n);
	}
	close(fds[0]);
	waitpid(pid, &status, 0);
	T_CHECK(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
		"seed %llu: the child failed (status %d)", (unsigned long long)seed, status);
	inflight = *md;
	model_step(&inflight, (unsigned)t_below(&pick, POOL));

	T_EQ(brick_meta_open(path, CRASH_SLOTS, &m, &rep), 0, "reopen after kill -9");
	if (!m)
		return;
	if (model_is(m, &inflight) && !model_is(m, md)) {
		*md = inflight;		/* the op in flight was durable, its answer lost */
		st->in_flight++;
	}
	T_CHECK(model_is(m, md), "seed %llu: the map is the %u answered ops (or one more)",
		(unsigned long long)seed, n);
	st->answered += n;
	st->torn += rep.torn_bytes > 0;
	brick_meta_close(m);
	/* the log shrank although the child only appended: it compacted */
	st->compactions += (uint64_t)file_size(path) / REC < st->records;
	st->records = (uint64_t)file_size(path) / REC;
}

static void kill9(const char *path, uint64_t seed)
{
	struct t_rng when = { seed * 3 + 1 };
	struct model md = { 0 };
	struct crash_stats st = { .records = 1 };

	unlink(path);
	for (unsigned i = 0; i < KILLS; i++)
		kill_point(path, seed + i, &when, &md, &st);
	printf("kill -9: %u kill points, %u answered ops, %u with the op in flight durable, "
	       "%u torn tails, %u compactions seen\n", KILLS, st.answered, st.in_flight,
	       st.torn, st.compactions);
	T_CHECK(st.compactions > 0, "the children compacted the log");
	unlink(path);
}

int main(int argc, char **argv)
{
	uint64_t seed = t_seed(argc, argv, 1);
	struct t_rng rng = { seed };
	char dir[] = "brick-meta-XXXXXX", path[64], tmp[80];

	if (!mkdtemp(dir))
		return 99;
	snprintf(path, sizeof(path), "%s/map", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	create_reopen(path);
	operations(path);
	extents(path);
	reopen_same(path, &rng);
	big_log(path);
	torn_tail(path, false);
	torn_tail(path, true);
	torn_header(path);
	corrupt_middle(path, &rng);
	corrupt_semantic(path);
	wrong_header(path);
	compaction(path, tmp);
	write_failure(path);
	kill9(path, seed);
	unlink(path);
	unlink(tmp);
	T_CHECK(rmdir(dir) == 0, "no files left in %s", dir);
	return t_done("brick-meta");
}
