/* SPDX-License-Identifier: MIT */
/*
 * brick-tiering's initiator (tests/brick/test_tiering.c runs it on host 0): writes a seeded
 * pattern to all 512 blocks, reads them back in a random order twice, checks the brick's
 * STAT. usage: brick-tiering-client ADDR PORT SEED
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "brick_check.h"
#include "odpemu/brick.h"
#include "t.h"
#include "wire.h"

#include "tiering.h"

static void pattern(uint64_t *p, unsigned k, uint64_t seed)
{
	for (size_t i = 0; i < BLK / 8; i++)
		p[i] = (seed ^ ((uint64_t)k << 40)) + i * 0x9E3779B97F4A7C15ull;
}

static int put_block(struct brick_conn *c, unsigned k, uint64_t *buf, struct ibv_mr *mr,
		     uint64_t seed)
{
	struct brick_map m;
	int rc = brick_alloc(c, (uint64_t)k * BLK), st;

	if (rc && rc != -EEXIST)
		return rc;
	if ((rc = brick_map(c, (uint64_t)k * BLK, BRICK_RW, &m)))
		return rc;
	pattern(buf, k, seed);
	if (!(rc = brick_write(c, &m, 0, buf, BLK / 2, mr, &st)))
		rc = brick_write(c, &m, BLK / 2, (uint8_t *)buf + BLK / 2, BLK / 2, mr, &st);
	return rc ? rc : brick_unmap(c, (uint64_t)k * BLK);
}

static int check_block(struct brick_conn *c, unsigned k, uint64_t *buf, uint64_t *want,
		       struct ibv_mr *mr, uint64_t seed)
{
	struct brick_map m;
	int rc, st;

	if ((rc = brick_map(c, (uint64_t)k * BLK, BRICK_RO, &m)))
		return rc;
	memset(buf, 0, BLK);
	rc = brick_read(c, &m, 0, buf, BLK, mr, &st);
	if (!rc) {
		pattern(want, k, seed);
		T_CHECK(!memcmp(buf, want, BLK), "block %u reads back its pattern", k);
	}
	return rc ? rc : brick_unmap(c, (uint64_t)k * BLK);
}

static void shuffle(unsigned *order, struct t_rng *rng)
{
	for (unsigned i = 0; i < BLOCKS; i++)
		order[i] = i;
	for (unsigned i = BLOCKS - 1; i > 0; i--) {
		unsigned j = (unsigned)t_below(rng, i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

static void print_stat(struct brick_conn *c, uint64_t *v)
{
	unsigned n = 0;

	BR_EQ(brick_stat(c, v, BRICK_STAT_COUNT, &n), 0, "STAT");
	for (unsigned i = 0; i < n; i++)
		printf("  %-20s %llu\n", brick_stat_label(i), (unsigned long long)v[i]);
}

static int client(const char *addr, const char *port, uint64_t seed)
{
	struct brick_conn *c = NULL;
	uint64_t *buf = aligned_alloc(4096, BLK), *want = malloc(BLK), v[BRICK_STAT_COUNT] = { 0 };
	struct t_rng rng = { seed };
	unsigned order[BLOCKS], bad = 0;
	struct ibv_mr *mr;
	struct timespec t0, t1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!buf || !want || brick_connect(addr, port, NULL, &c) || !(mr = brick_reg(c, buf, BLK)))
		return printf("client: setup failed\n"), 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned k = 0; k < BLOCKS && !bad; k++)
		bad += put_block(c, k, buf, mr, seed) != 0;
	BR_EQ(bad, 0, "every block written");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("wrote %u blocks in %.1f s\n", BLOCKS, (double)(t1.tv_sec - t0.tv_sec) +
	       (t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (unsigned pass = 0; pass < 2 && !bad; pass++) {
		shuffle(order, &rng);
		for (unsigned i = 0; i < BLOCKS && !bad; i++)
			bad += check_block(c, order[i], buf, want, mr, seed) != 0;
		BR_EQ(bad, 0, "pass %u: every block read", pass + 1);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		printf("read pass %u done at %.1f s\n", pass + 1, (double)(t0.tv_sec - t1.tv_sec) +
		       (t0.tv_nsec - t1.tv_nsec) / 1e9);
	}
	print_stat(c, v);
	T_CHECK(v[BRICK_STAT_evictions] > 0, "blocks were evicted");
	T_CHECK(v[BRICK_STAT_blocks_on_file] > 0, "blocks are on file");
	T_CHECK(v[BRICK_STAT_page_faults] > 0, "the device took page faults");
	T_CHECK(v[BRICK_STAT_invalidations] > 0, "the device saw invalidations");
	T_CHECK(v[BRICK_STAT_resident_bytes] <= (uint64_t)BUDGET_MIB << 20,
		"resident %llu bytes within the budget",
		(unsigned long long)v[BRICK_STAT_resident_bytes]);
	ibv_dereg_mr(mr);
	brick_close(c);
	free(buf);
	free(want);
	return t_done("brick-tiering client");
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: brick-tiering-client ADDR PORT SEED\n");
		return 2;
	}
	return client(argv[1], argv[2], strtoull(argv[3], NULL, 0));
}
