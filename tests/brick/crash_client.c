/* SPDX-License-Identifier: MIT */
/*
 * brick-crash's initiator (tests/brick/test_crash.c runs it on host 0):
 *   brick-crash-client ADDR PORT run SEED PAUSE   seeded ALLOCs, FREEs and flushed
 *       64 KiB WRITEs, each printed before it is sent ("? ...") and once answered;
 *       PAUSE "a" / "w": wait for the kill right after the first answered ALLOC / FLUSH;
 *   brick-crash-client ADDR PORT verify MODEL     LIST and every flushed range checked
 *       against the model ("A k": must be listed, "M k": may be, "D k pos seed": must
 *       read back); prints "L k" for each listed id.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crash.h"
#include "odpemu/brick.h"
#include "t.h"

static uint64_t id_of(unsigned k) { return (uint64_t)k * 2 * BRICK_BLOCK_SIZE; }

static void pattern(uint8_t *p, uint32_t seed)
{
	for (uint32_t i = 0; i < RANGE; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

struct client {
	struct brick_conn *c;
	uint8_t *buf;
	struct ibv_mr *mr;
	bool alloc[IDS];
};

static int client_open(struct client *cl, const char *addr, const char *port)
{
	struct brick_range r[64];
	uint32_t n;
	uint64_t next;

	if (brick_connect(addr, port, NULL, &cl->c))
		return -1;
	cl->buf = malloc(RANGE);
	cl->mr = cl->buf ? brick_reg(cl->c, cl->buf, RANGE) : NULL;
	if (!cl->mr || brick_list(cl->c, 0, r, 64, &n, &next))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		for (uint64_t a = r[i].id; a < r[i].id + r[i].length; a += BRICK_BLOCK_SIZE)
			if (a % (2 * BRICK_BLOCK_SIZE) == 0 && a / (2 * BRICK_BLOCK_SIZE) < IDS)
				cl->alloc[a / (2 * BRICK_BLOCK_SIZE)] = true;
	return 0;
}

/* A 64 KiB range written and flushed persistent: 0 or the failing call's error. */
static int write_range(struct client *cl, unsigned k, unsigned pos, uint32_t seed)
{
	struct brick_map m;
	int rc, st;

	if ((rc = brick_map(cl->c, id_of(k), BRICK_RW, &m)))
		return rc;
	pattern(cl->buf, seed);
	rc = brick_write(cl->c, &m, (uint64_t)pos * RANGE, cl->buf, RANGE, cl->mr, &st);
	if (!rc)
		rc = brick_flush(cl->c, &m, (uint64_t)pos * RANGE, RANGE, BRICK_FLUSH_PERSISTENT,
				 &st);
	if (!rc)
		rc = brick_unmap(cl->c, id_of(k));
	return rc;
}

/* Pick a call: ALLOC of a free id, FREE or WRITE of an allocated one. */
static unsigned pick(struct t_rng *rng, const bool *alloc, bool want)
{
	unsigned k = (unsigned)(t_rand(rng) % IDS);

	for (unsigned i = 0; i < IDS && alloc[k] != want; i++)
		k = (k + 1) % IDS;
	return k;
}

/* One call, printed before it is sent and once answered. pause: wait here for the kill
 * right after this answer. -1 when the call failed unexpectedly. */
static int one_call(struct client *cl, struct t_rng *rng, bool pause_after_alloc,
		    bool pause_after_write)
{
	unsigned r = (unsigned)(t_rand(rng) % 10), k;
	bool any = false;
	int rc;

	for (unsigned i = 0; i < IDS; i++)
		any |= cl->alloc[i];
	if (r < 4 || !any) {
		k = pick(rng, cl->alloc, false);
		printf("? A %u\n", k);
		rc = brick_alloc(cl->c, id_of(k));
		if (rc == -ENOSPC) {
			printf("N %u\n", k);
			return 0;
		}
		if (rc)
			return printf("E alloc %u: %s\n", k, strerror(-rc)), -1;
		cl->alloc[k] = true;
		printf("A %u\n", k);
		if (pause_after_alloc)
			return printf("PAUSED\n"), fflush(stdout), pause(), 0;
	} else if (r < 6) {
		k = pick(rng, cl->alloc, true);
		printf("? F %u\n", k);
		if ((rc = brick_free(cl->c, id_of(k))))
			return printf("E free %u: %s\n", k, strerror(-rc)), -1;
		cl->alloc[k] = false;
		printf("F %u\n", k);
	} else {
		unsigned pos = (unsigned)(t_rand(rng) % POS);
		uint32_t seed = (uint32_t)t_rand(rng) | 1;

		k = pick(rng, cl->alloc, true);
		printf("? W %u %u\n", k, pos);
		if ((rc = write_range(cl, k, pos, seed)))
			return printf("E write %u: %s\n", k, strerror(-rc)), -1;
		printf("W %u %u %u\n", k, pos, seed);
		if (pause_after_write)
			return printf("PAUSED\n"), fflush(stdout), pause(), 0;
	}
	return 0;
}

/* run SEED PAUSE: calls until killed (or OPS of them); PAUSE "a" / "w": wait for the
 * kill after the first answered ALLOC / FLUSH, "-": never. */
static int run_mode(const char *addr, const char *port, const char *seed, const char *pause)
{
	struct client cl = { 0 };
	struct t_rng rng;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rng.s = strtoull(seed, NULL, 0);
	if (client_open(&cl, addr, port))
		return printf("E connect\n"), 1;
	printf("READY\n");
	for (unsigned i = 0; i < OPS; i++)
		if (one_call(&cl, &rng, pause[0] == 'a', pause[0] == 'w'))
			return 1;
	printf("DONE\n");
	brick_close(cl.c);
	return 0;
}

/* verify MODEL: lines "A k" (must be listed), "M k" (may be), "D k pos seed" (must read
 * back). Prints "L k" for every listed id. */
static int verify_mode(const char *addr, const char *port, const char *model)
{
	struct client cl = { 0 };
	bool must[IDS] = { 0 }, may[IDS] = { 0 };
	uint8_t *want = malloc(RANGE);
	char kind;
	unsigned k, pos, seed, ranges = 0;
	FILE *f = fopen(model, "r");

	if (!f || !want || client_open(&cl, addr, port))
		return printf("E verify setup\n"), 1;
	for (k = 0; k < IDS; k++)
		if (cl.alloc[k])
			printf("L %u\n", k);
	while (fscanf(f, " %c %u", &kind, &k) == 2 && k < IDS) {
		if (kind == 'A')
			must[k] = true;
		else if (kind == 'M')
			may[k] = true;
		else if (kind == 'D' && fscanf(f, "%u %u", &pos, &seed) == 2) {
			struct brick_map m;
			int st;

			T_CHECK(cl.alloc[k], "block %u with flushed data is listed", k);
			if (!cl.alloc[k] || brick_map(cl.c, id_of(k), BRICK_RO, &m) ||
			    brick_read(cl.c, &m, (uint64_t)pos * RANGE, cl.buf, RANGE, cl.mr, &st)) {
				T_CHECK(0, "block %u range %u could not be read", k, pos);
				continue;
			}
			pattern(want, seed);
			T_CHECK(!memcmp(want, cl.buf, RANGE), "block %u range %u reads back what "
				"was flushed (seed %u)", k, pos, seed);
			ranges++;
			brick_unmap(cl.c, id_of(k));
		}
	}
	fclose(f);
	printf("verified %u ranges\n", ranges);
	for (k = 0; k < IDS; k++) {
		T_CHECK(!must[k] || cl.alloc[k], "answered ALLOC of %u is listed", k);
		T_CHECK(!cl.alloc[k] || must[k] || may[k], "listed %u was allocated", k);
	}
	brick_close(cl.c);
	free(want);
	return t_done("brick-crash verifier");
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[3], "run"))
		return run_mode(argv[1], argv[2], argv[4], argv[5]);
	if (argc == 5 && !strcmp(argv[3], "verify"))
		return verify_mode(argv[1], argv[2], argv[4]);
	fprintf(stderr, "usage: brick-crash-client ADDR PORT run SEED a|w|- | verify MODEL\n");
	return 2;
}
