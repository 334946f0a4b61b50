/* SPDX-License-Identifier: MIT */
/* Table memory: an empty implicit domain, 1 million scattered pages (exact table count),
 * dense 4 KiB fills (<= 9 bytes per page), 2 MiB blocks (one entry each, no leaf tables),
 * and everything returned by invalidation. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "iopt.h"
#include "t.h"
#include "t_pt.h"

#define TABLE 4160u	/* 512 entries + header, 64-byte aligned */

static struct iopt_counters ctr(struct iopt *d)
{
	struct iopt_counters c;

	iopt_counters_get(d, &c);
	return c;
}

/* Distinct values of v[i] >> shift (v ascending). */
static uint64_t distinct(const uint64_t *v, uint64_t n, unsigned shift)
{
	uint64_t k = 0;

	for (uint64_t i = 0; i < n; i++)
		k += i == 0 || (v[i] >> shift) != (v[i - 1] >> shift);
	return k;
}

static void test_empty(struct iopt *d)
{
	struct iopt_counters c = ctr(d);

	printf("empty implicit domain: %" PRIu64 " bytes (tables %" PRIu64 ")\n",
		c.memory_bytes, c.table_bytes);
	T_CHECK(c.memory_bytes <= 1 * KiB, "empty implicit domain %" PRIu64 " > 1 KiB",
		c.memory_bytes);
	T_EQ(c.table_bytes, 0, "no table until the first fill");
}

static void test_scattered(struct iopt *d, struct t_rng *rng)
{
	uint64_t n = t_pt_ops(1000000, 4), *va = malloc(n * sizeof(*va)), tables;
	struct iopt_counters c;
	double t0 = t_pt_seconds();

	/* n distinct pages scattered over 64 GiB of the implicit space (a big sparse heap):
	 * one random page in each of n equal slices. */
	for (uint64_t i = 0, slice = 64 * GiB / PG / n; i < n; i++)
		va[i] = 0x7f0000000000ull + (i * slice + t_below(rng, slice)) * PG;
	for (uint64_t i = 0; i < n; i++) {
		struct iopt_map m = { va[i], PG, va[i] - 0x7f0000000000ull, IOPT_READ };
		long rc = iopt_fill(d, &m, 1, IOPT_SEQ_NONE);

		T_EQ(rc, 1, "fill one page");
	}
	c = ctr(d);
	tables = 1 + distinct(va, n, 39) + distinct(va, n, 30) + distinct(va, n, 21);
	printf("%" PRIu64 " scattered pages (%" PRIu64 " present) over 64 GiB: %" PRIu64
		" table bytes = %.1f bytes/page, %" PRIu64 " tables, filled in %.2f s\n", n,
		c.present_pages, c.table_bytes, (double)c.table_bytes / (double)c.present_pages,
		tables, t_pt_seconds() - t0);
	T_EQ(c.present_pages, n, "present pages");
	T_EQ(c.table_bytes, tables * TABLE, "exactly one table per used 2 MiB, 1 GiB, 512 GiB");
	T_EQ(iopt_invalidate(d, 0, IOPT_VA_END), c.present_pages, "invalidate all");
	T_EQ(ctr(d).table_bytes, TABLE, "back to the root");
	free(va);
}

static void test_dense(struct iopt *d)
{
	uint64_t base = 0x40000000, pages = GiB / PG;
	struct iopt_counters c;
	double per_page;

	/* 1 MiB runs never cover a whole 2 MiB slot: 4 KiB leaves throughout. */
	for (uint64_t off = 0; off < GiB; off += MiB) {
		struct iopt_map m = { base + off, MiB, 0x1000000000ull + 3 * off, IOPT_READ };

		T_EQ(iopt_fill(d, &m, 1, IOPT_SEQ_NONE), MiB / PG, "fill 1 MiB");
	}
	c = ctr(d);
	per_page = (double)(c.table_bytes - TABLE) / (double)pages;
	printf("dense 1 GiB of 4 KiB pages: %" PRIu64 " table bytes = %.3f bytes/page\n",
		c.table_bytes, per_page);
	T_CHECK(per_page <= 9.0, "dense: %.3f bytes per 4 KiB page > 9", per_page);
	T_EQ(iopt_invalidate(d, base, GiB), pages, "invalidate");

	/* Host-contiguous 2 MiB runs: blocks, one level-1 entry each. */
	{
		struct iopt_map m = { base, GiB, 0x2000000000ull, IOPT_READ | IOPT_WRITE };

		T_EQ(iopt_fill(d, &m, 1, IOPT_SEQ_NONE), pages, "fill 1 GiB");
	}
	c = ctr(d);
	printf("1 GiB of 2 MiB blocks: %" PRIu64 " table bytes (%" PRIu64 " blocks)\n",
		c.table_bytes, (uint64_t)(GiB / IOPT_BLOCK_SIZE));
	T_EQ(c.table_bytes, 3 * TABLE, "root + level 2 + one level-1 table of 512 blocks");
	T_EQ(iopt_invalidate(d, base, GiB), pages, "invalidate");
	T_EQ(ctr(d).table_bytes, TABLE, "back to the root");
}

int main(int argc, char **argv)
{
	struct t_rng rng = { t_seed(argc, argv, 1) };
	struct iopt_config cfg = { 0 };
	struct iopt *d;

	T_EQ(iopt_create(&cfg, &d), 0, "implicit domain");
	test_empty(d);
	test_scattered(d, &rng);
	test_dense(d);
	T_EQ(iopt_destroy(d), 0, "destroy");
	return t_done("pagetable-memory");
}
