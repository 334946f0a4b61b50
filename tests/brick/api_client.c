/* SPDX-License-Identifier: MIT */
/*
 * brick-api's initiator (tests/brick/test_api.c runs it on host 0): every call and error
 * of docs/brick.md through libodpemu-brick, as an ordinary program linking only that
 * library (and libibverbs and librdmacm under it). usage: brick-api-client ADDR PORT;
 * with "hold ID" it maps block ID RW and waits to be killed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "brick_check.h"
#include "odpemu/brick.h"
#include "t.h"
#include "wire.h"

#define MiB (1ull << 20)
#define BLK BRICK_BLOCK_SIZE
#define TOP_ID 0xFFFFFFFFFFE00000ull

static const char *addr, *port;

static struct brick_conn *conn(void)
{
	struct brick_conn *c = NULL;
	int rc = brick_connect(addr, port, NULL, &c);

	BR_EQ(rc, 0, "connect to %s:%s", addr, port);
	return rc ? NULL : c;
}

static void hello_and_version(void)
{
	struct brick_connect_opts o = { .version = 2 };
	struct brick_conn *c = conn(), *bad = NULL;
	const struct brick_info *i;

	if (!c)
		return;
	i = brick_conn_info(c);
	BR_EQ(i->version, 1, "HELLO: version 1");
	BR_EQ(i->block_size, BLK, "HELLO: 2 MiB blocks");
	BR_EQ(i->slots, 32, "HELLO: 32 blocks in 64 MiB");
	T_CHECK(i->credits >= 1, "HELLO: credits %u", i->credits);
	brick_close(c);
	BR_EQ(brick_connect(addr, port, &o, &bad), -EPROTONOSUPPORT, "HELLO for version 2");
	T_CHECK(!bad, "no connection for a refused version");
}

static void alloc_errors(struct brick_conn *c)
{
	struct brick_map m;

	BR_EQ(brick_alloc(c, 0), 0, "ALLOC 0");
	BR_EQ(brick_alloc(c, 0), -EEXIST, "ALLOC 0 again");
	BR_EQ(brick_status(c), BRICK_EEXIST, "  wire status EEXIST");
	BR_EQ(brick_alloc(c, BLK + 4096), -EINVAL, "ALLOC of an unaligned id");
	BR_EQ(brick_status(c), BRICK_EALIGN, "  wire status EALIGN");
	BR_EQ(brick_alloc(c, TOP_ID), 0, "ALLOC of the top id");
	BR_EQ(brick_free(c, 7 * BLK), -ENOENT, "FREE of an id never allocated");
	BR_EQ(brick_free(c, 3), -EINVAL, "FREE of an unaligned id");
	BR_EQ(brick_unmap(c, 0), -ENXIO, "UNMAP of a block not mapped");
	BR_EQ(brick_map(c, 9 * BLK, BRICK_RW, &m), -ENOENT, "MAP of a block not allocated");
	BR_EQ(brick_map(c, 0, BRICK_RO | BRICK_RW, &m), -EINVAL, "MAP with RO and RW");
	BR_EQ(brick_map(c, 0, 0, &m), -EINVAL, "MAP with neither RO nor RW");
	/* 30 more fill the 32 slots */
	for (uint64_t i = 1; i <= 30; i++)
		BR_EQ(brick_alloc(c, 0x100000000ull + i * 2 * BLK), 0, "ALLOC %llu", (unsigned long long)i);
	BR_EQ(brick_alloc(c, 64 * BLK), -ENOSPC, "ALLOC of a 33rd block");
	BR_EQ(brick_free(c, 0x100000000ull + 2 * BLK), 0, "FREE one");
	BR_EQ(brick_alloc(c, 64 * BLK), 0, "ALLOC after the FREE");
}

static void list_all(struct brick_conn *c)
{
	struct brick_range r[5];
	uint64_t from = 0, next = 0, blocks = 0;
	uint32_t n, calls = 0, ranges = 0;
	bool top = false, zero = false;

	do {
		BR_EQ(brick_list(c, from, r, 5, &n, &next), 0, "LIST from 0x%llx",
		     (unsigned long long)from);
		for (uint32_t i = 0; i < n; i++) {
			blocks += r[i].length / BLK;
			zero |= r[i].id == 0;
			top |= r[i].id == TOP_ID;
		}
		ranges += n;
		from = next;
	} while (next && ++calls < 20);
	BR_EQ(blocks, 32, "LIST: 32 blocks allocated");
	BR_EQ(ranges, 32, "LIST: 32 extents (none adjacent)");
	T_CHECK(zero && top, "LIST has id 0 and the top id");
	T_CHECK(calls >= 6, "LIST paginated (%u calls of 5)", calls + 1);
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 12));
}

static void data_path(struct brick_conn *c)
{
	size_t len = 1 * MiB;
	uint8_t *w = malloc(len), *r = calloc(1, len);
	struct ibv_mr *wm = brick_reg(c, w, len), *rm = brick_reg(c, r, len);
	struct brick_map m, ro;
	int st = -1;

	T_CHECK(wm && rm, "registering local buffers");
	BR_EQ(brick_map(c, 64 * BLK, BRICK_RW, &m), 0, "MAP RW");
	BR_EQ(m.length, BLK, "the handle covers the block");
	BR_EQ(brick_map(c, 64 * BLK, BRICK_RO, &ro), -EBUSY, "MAP of a block this connection maps");
	BR_EQ(brick_read(c, &m, BLK - 4096, r, 4096, rm, &st), 0, "READ of a fresh block");
	T_CHECK(r[0] == 0 && r[4095] == 0, "a fresh block reads zeros");
	fill(w, len, 11);
	BR_EQ(brick_write(c, &m, 512 * 1024, w, (uint32_t)len, wm, &st), 0, "WRITE 1 MiB");
	BR_EQ(brick_flush(c, &m, 512 * 1024, len, BRICK_FLUSH_PERSISTENT, &st), 0,
	     "FLUSH persistent (completion %s)", ibv_wc_status_str((enum ibv_wc_status)st));
	BR_EQ(brick_read(c, &m, 512 * 1024, r, (uint32_t)len, rm, &st), 0, "READ 1 MiB");
	T_CHECK(!memcmp(w, r, len), "READ returns what WRITE wrote");
	BR_EQ(brick_read(c, &m, BLK - 8, r, 16, rm, &st), -EINVAL, "READ past the block");
	BR_EQ(brick_unmap(c, 64 * BLK), 0, "UNMAP");
	BR_EQ(brick_map(c, 64 * BLK, BRICK_RO, &ro), 0, "MAP RO");
	memset(r, 0, len);
	BR_EQ(brick_read(c, &ro, 512 * 1024, r, (uint32_t)len, rm, &st), 0, "READ through RO");
	T_CHECK(!memcmp(w, r, len), "the data survived UNMAP and MAP");
	BR_EQ(brick_unmap(c, 64 * BLK), 0, "UNMAP RO");
	ibv_dereg_mr(wm);
	ibv_dereg_mr(rm);
	free(w);
	free(r);
}

/* An access that must fail with REM_ACCESS_ERR; the connection is dead after it (its QP
 * in the error state), so each case has its own. */
static void expect_revoked(struct brick_conn *c, const struct brick_map *m, bool write,
			   const char *what)
{
	uint8_t buf[64] = { 1 };
	struct ibv_mr *mr = brick_reg(c, buf, sizeof(buf));
	int st = -1, rc = write ? brick_write(c, m, 0, buf, 64, mr, &st) :
		brick_read(c, m, 0, buf, 64, mr, &st);

	BR_EQ(rc, -EIO, "%s: the access fails", what);
	BR_EQ(st, IBV_WC_REM_ACCESS_ERR, "%s: REM_ACCESS_ERR (got %s)", what,
	     ibv_wc_status_str((enum ibv_wc_status)st));
	ibv_dereg_mr(mr);
}

static void revocation(void)
{
	struct brick_conn *a = conn(), *b = conn();
	struct brick_map m, mb;

	if (!a || !b)
		goto out;
	BR_EQ(brick_map(a, 64 * BLK, BRICK_RW, &m), 0, "MAP RW (a)");
	BR_EQ(brick_unmap(a, 64 * BLK), 0, "UNMAP (a)");
	expect_revoked(a, &m, true, "WRITE after UNMAP");
	brick_close(a);

	a = conn();
	BR_EQ(brick_map(a, 64 * BLK, BRICK_RO, &m), 0, "MAP RO (a)");
	expect_revoked(a, &m, true, "WRITE through an RO handle");
	brick_close(a);

	a = conn();
	BR_EQ(brick_map(a, 64 * BLK, BRICK_RW, &m), 0, "MAP RW (a) for b to borrow");
	expect_revoked(b, &m, false, "another connection's handle");
	brick_close(b);
	b = conn();

	BR_EQ(brick_map(a, 0, BRICK_RW | BRICK_SHARED, &mb), 0, "MAP RW SHARED (a) of block 0");
	BR_EQ(brick_free(b, 0), 0, "FREE by b of a block a maps");
	expect_revoked(a, &mb, false, "a handle whose block was FREEd");
out:
	brick_close(a);
	brick_close(b);
}

static void sharing(void)
{
	struct brick_conn *a = conn(), *b = conn();
	struct brick_map m;

	if (!a || !b)
		goto out;
	BR_EQ(brick_map(a, 64 * BLK, BRICK_RW, &m), 0, "MAP RW (a)");
	BR_EQ(brick_map(b, 64 * BLK, BRICK_RW, &m), -EBUSY, "MAP RW (b) of a's RW block");
	BR_EQ(brick_map(b, 64 * BLK, BRICK_RO, &m), -EBUSY, "MAP RO (b) of a's RW block");
	BR_EQ(brick_unmap(a, 64 * BLK), 0, "UNMAP (a)");
	BR_EQ(brick_map(a, 64 * BLK, BRICK_RW | BRICK_SHARED, &m), 0, "MAP RW SHARED (a)");
	BR_EQ(brick_map(b, 64 * BLK, BRICK_RW, &m), -EBUSY, "MAP RW (b) without SHARED");
	BR_EQ(brick_map(b, 64 * BLK, BRICK_RW | BRICK_SHARED, &m), 0, "MAP RW SHARED (b)");
	BR_EQ(brick_unmap(a, 64 * BLK), 0, "UNMAP (a)");
	BR_EQ(brick_unmap(b, 64 * BLK), 0, "UNMAP (b)");
	BR_EQ(brick_map(a, 64 * BLK, BRICK_RO, &m), 0, "MAP RO (a)");
	BR_EQ(brick_map(b, 64 * BLK, BRICK_RO, &m), 0, "MAP RO (b): RO maps share");
	BR_EQ(brick_unmap(b, 64 * BLK), 0, "UNMAP (b)");
	BR_EQ(brick_unmap(a, 64 * BLK), 0, "UNMAP (a)");
	BR_EQ(brick_map(a, 64 * BLK, BRICK_RW, &m), 0, "MAP RW (a), then a closes");
	brick_close(a);
	a = NULL;
	BR_EQ(brick_map(b, 64 * BLK, BRICK_RW, &m), 0, "MAP RW (b) after a closed");
out:
	brick_close(a);
	brick_close(b);
}

/* A raw request: the reply's status, op and tag checked. */
static void raw_case(struct brick_conn *c, const void *req, size_t len, uint32_t want,
		     uint16_t op, uint32_t tag, const char *what)
{
	uint8_t reply[BRICK_MSG_MAX];
	struct brick_reply r;
	int n = brick_raw(c, req, len, reply, sizeof(reply));

	T_CHECK(n > 0, "%s: a reply (%d)", what, n);
	if (n <= 0)
		return;
	BR_EQ(brick_wire_decode_reply(reply, (size_t)n, &r, NULL, 0), 0, "%s: it decodes", what);
	BR_EQ(r.status, want, "%s: status %s (got %s)", what, brick_status_str(want),
	     brick_status_str(r.status));
	BR_EQ(r.op, op, "%s: names op %u", what, op);
	BR_EQ(r.tag, tag, "%s: names tag %u", what, tag);
}

static void protocol(void)
{
	struct brick_conn *c = conn();
	struct brick_req q = { .version = BRICK_WIRE_VERSION, .op = BRICK_OP_ALLOC, .tag = 77,
		.u.block.addr = 80 * BLK };
	uint8_t m[BRICK_MSG_MAX], garbage[100];
	uint64_t v[64];
	unsigned n = 0;
	int len;

	if (!c)
		return;
	len = brick_wire_encode_req(&q, m, sizeof(m));
	T_CHECK(len > 0, "encode ALLOC");
	raw_case(c, m, 5, BRICK_EPROTO, 0, 0, "5 bytes");
	raw_case(c, m, (size_t)len - 1, BRICK_EPROTO, BRICK_OP_ALLOC, 77, "one byte short");
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)(i * 37 + 5);
	raw_case(c, garbage, sizeof(garbage), BRICK_EPROTO, 0, 0, "garbage");
	m[6] = 0x00, m[7] = 0x63;	/* op 99 */
	raw_case(c, m, (size_t)len, BRICK_EBADOP, 99, 77, "unknown op");
	m[7] = BRICK_OP_ALLOC, m[5] = 9;	/* version 9 */
	raw_case(c, m, (size_t)len, BRICK_EVERSION, BRICK_OP_ALLOC, 77, "version 9");
	m[5] = BRICK_WIRE_VERSION, m[0] ^= 0xff;
	raw_case(c, m, (size_t)len, BRICK_EPROTO, 0, 0, "bad magic");
	m[0] ^= 0xff;
	raw_case(c, m, (size_t)len, BRICK_OK, BRICK_OP_ALLOC, 77, "the same ALLOC, well formed");
	BR_EQ(brick_stat(c, v, 64, &n), 0, "STAT");
	BR_EQ(n, brick_stat_count(), "STAT: every counter");
	if (n == BRICK_STAT_COUNT) {
		T_CHECK(v[BRICK_STAT_bad_requests] >= 6, "STAT: %llu bad requests",
			(unsigned long long)v[BRICK_STAT_bad_requests]);
		BR_EQ(v[BRICK_STAT_blocks_allocated], 32, "STAT: 32 blocks allocated");
		BR_EQ(v[BRICK_STAT_slots], 32, "STAT: slots");
		T_CHECK(v[BRICK_STAT_flushes] >= 1, "STAT: the FLUSH was counted");
		T_CHECK(v[BRICK_STAT_prefetches] >= 1, "STAT: MAP's prefetches on the device");
		for (unsigned i = 0; i < n; i++)
			printf("  %-20s %llu\n", brick_stat_label(i), (unsigned long long)v[i]);
	}
	brick_close(c);
}

static int client(void)
{
	struct brick_conn *c;

	hello_and_version();
	if ((c = conn())) {
		alloc_errors(c);
		list_all(c);
		data_path(c);
		brick_close(c);
	}
	revocation();
	sharing();
	BR_EQ(brick_free(NULL, 0), -EINVAL, "a NULL connection");
	protocol();
	return t_done("brick-api client");
}

/* hold ID: map block ID RW, say HELD, wait to be killed (the test's dead initiator). */
static int hold(uint64_t id)
{
	struct brick_conn *c = conn();
	struct brick_map m;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!c || brick_map(c, id, BRICK_RW, &m))
		return printf("hold: could not map 0x%llx\n", (unsigned long long)id), 1;
	printf("HELD\n");
	for (int i = 0; i < 600; i++)	/* killed long before */
		sleep(1);
	brick_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 && !(argc == 5 && !strcmp(argv[3], "hold"))) {
		fprintf(stderr, "usage: brick-api-client ADDR PORT [hold ID]\n");
		return 2;
	}
	addr = argv[1];
	port = argv[2];
	return argc == 5 ? hold(strtoull(argv[4], NULL, 0)) : client();
}
