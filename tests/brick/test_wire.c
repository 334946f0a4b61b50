/* SPDX-License-Identifier: MIT */
/*
 * The brick's wire codec (brick/wire.h):
 *  - every op's request and OK reply, and error replies, round-trip (LIST with 0, 1 and
 *    BRICK_LIST_MAX extents: the largest message, which fits BRICK_MSG_MAX), decoded
 *    from an odd address (the codec must not assume alignment: UBSan);
 *  - golden bytes: the header and a MAP request, a HELLO reply, a LIST reply, the error
 *    reply to an unreadable header;
 *  - every decode error: each truncation of each message (with the header's length as
 *    sent and as patched to match), one byte too many, bad magic, other versions (EVERSION
 *    with op and tag filled), unknown ops, the REPLY bit on a request, each reserved byte,
 *    MAP's flags, LIST's max, a reply's count, status and op;
 *  - encoding into too small a buffer is -ENOSPC and writes nothing;
 *  - seeded random bytes never decode; random bodies behind a valid header decode or not,
 *    and whatever decodes encodes back to the same bytes;
 *  - the names of statuses, ops and counters.
 * `test-brick-wire --corpus DIR` writes each valid message to a file in DIR: the fuzzer's
 * seed corpus (tests/fuzz/corpus/brick).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "wire.h"

#define MiB (1ull << 20)
/* Bits from..to-1: the reserved bytes of a body, by offset. */
#define BYTES(from, to) ((~0ull << (from)) & ~(~0ull << (to)))

/* Byte-wise big-endian, independent of the codec's helpers. */
static void set_be(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static void set_hdr(uint8_t *p, uint32_t magic, uint16_t version, uint16_t op, uint32_t tag,
		    uint32_t length)
{
	set_be(p, magic, 4);
	set_be(p + 4, version, 2);
	set_be(p + 6, op, 2);
	set_be(p + 8, tag, 4);
	set_be(p + 12, length, 4);
}

struct req_case {
	const char *name;
	struct brick_req r;
	size_t len;		/* the message's */
	uint64_t reserved;	/* bit i: body byte i is reserved */
};

static const struct req_case reqs[] = {
	{ "hello", { .op = BRICK_OP_HELLO, .tag = 1, .u.hello = { 1, 3 } }, 24, BYTES(4, 8) },
	{ "alloc", { .op = BRICK_OP_ALLOC, .tag = 2, .u.block = { 6 * MiB } }, 24, 0 },
	{ "free", { .op = BRICK_OP_FREE, .tag = 0xfffffffe,
		    .u.block = { UINT64_MAX - 2 * MiB + 1 } }, 24, 0 },
	{ "map", { .op = BRICK_OP_MAP, .tag = 4,
		   .u.map = { 1ull << 63, BRICK_MAP_RW | BRICK_MAP_SHARED } }, 32, BYTES(12, 16) },
	{ "unmap", { .op = BRICK_OP_UNMAP, .tag = 5, .u.block = { 0 } }, 24, 0 },
	{ "list", { .op = BRICK_OP_LIST, .tag = 6, .u.list = { 2 * MiB, BRICK_LIST_MAX } }, 32,
	  BYTES(12, 16) },
	{ "stat", { .op = BRICK_OP_STAT, .tag = 7 }, 16, 0 },
};

struct reply_case {
	const char *name;
	struct brick_reply r;
	size_t len;
	uint64_t reserved;
};

static struct brick_extent extents[BRICK_LIST_MAX];
static struct reply_case replies[13];
static unsigned n_replies;

static void add_reply(const char *name, struct brick_reply r, size_t len, uint64_t reserved)
{
	replies[n_replies++] = (struct reply_case){ name, r, len, reserved };
}

static void make_replies(void)
{
	struct brick_reply stat = { .op = BRICK_OP_STAT, .tag = 15 };

	for (unsigned i = 0; i < BRICK_LIST_MAX; i++)
		extents[i] = (struct brick_extent){ (i + 1) * 4 * MiB, (i % 3 + 1) * 2 * MiB };
	for (unsigned i = 0; i < BRICK_STAT_COUNT; i++)
		stat.u.stat[i] = 0x0101010101010101ull * (i + 1);
	add_reply("hello", (struct brick_reply){ .op = BRICK_OP_HELLO, .tag = 8,
		  .u.hello = { 1, BRICK_MSG_MAX, 16, 2 * MiB, 1024 } }, 56,
		  BYTES(4, 8) | BYTES(10, 12) | BYTES(20, 24));
	add_reply("alloc", (struct brick_reply){ .op = BRICK_OP_ALLOC, .tag = 9 }, 24, BYTES(4, 8));
	add_reply("free", (struct brick_reply){ .op = BRICK_OP_FREE, .tag = 10 }, 24, BYTES(4, 8));
	add_reply("map", (struct brick_reply){ .op = BRICK_OP_MAP, .tag = 11,
		  .u.map = { 0x7f0012200000, 0xdeadbeef, 2 * MiB } }, 48,
		  BYTES(4, 8) | BYTES(20, 24));
	add_reply("unmap", (struct brick_reply){ .op = BRICK_OP_UNMAP, .tag = 12 }, 24, BYTES(4, 8));
	add_reply("list-0", (struct brick_reply){ .op = BRICK_OP_LIST, .tag = 13,
		  .u.list = { 0, 0, NULL } }, 40, BYTES(4, 8) | BYTES(12, 16));
	add_reply("list-1", (struct brick_reply){ .op = BRICK_OP_LIST, .tag = 14,
		  .u.list = { 1, 8 * MiB, extents } }, 56, BYTES(4, 8) | BYTES(12, 16));
	add_reply("list-max", (struct brick_reply){ .op = BRICK_OP_LIST, .tag = 14,
		  .u.list = { BRICK_LIST_MAX, 1ull << 40, extents } }, 16 + 24 + 16 * BRICK_LIST_MAX,
		  BYTES(4, 8) | BYTES(12, 16));
	add_reply("stat", stat, 16 + 16 + 8 * BRICK_STAT_COUNT, BYTES(4, 8) | BYTES(12, 16));
	add_reply("map-busy", (struct brick_reply){ .op = BRICK_OP_MAP, .tag = 16,
		  .status = BRICK_EBUSY }, 24, BYTES(4, 8));
	add_reply("hello-eversion", (struct brick_reply){ .op = BRICK_OP_HELLO, .tag = 17,
		  .status = BRICK_EVERSION }, 24, BYTES(4, 8));
	add_reply("unknown-op-ebadop", (struct brick_reply){ .op = 0x7fff, .tag = 18,
		  .status = BRICK_EBADOP }, 24, BYTES(4, 8));
	add_reply("no-header-eproto", (struct brick_reply){ .op = 0, .tag = 0,
		  .status = BRICK_EPROTO }, 24, BYTES(4, 8));
}

static bool req_eq(const struct brick_req *a, const struct brick_req *b)
{
	if (a->op != b->op || a->tag != b->tag)
		return false;
	switch (a->op) {
	case BRICK_OP_HELLO:
		return a->u.hello.min_version == b->u.hello.min_version &&
		       a->u.hello.max_version == b->u.hello.max_version;
	case BRICK_OP_ALLOC:
	case BRICK_OP_FREE:
	case BRICK_OP_UNMAP:
		return a->u.block.addr == b->u.block.addr;
	case BRICK_OP_MAP:
		return a->u.map.addr == b->u.map.addr && a->u.map.flags == b->u.map.flags;
	case BRICK_OP_LIST:
		return a->u.list.from == b->u.list.from && a->u.list.max == b->u.list.max;
	default:
		return true;
	}
}

static bool reply_eq(const struct brick_reply *a, const struct brick_reply *b)
{
	if (a->op != b->op || a->tag != b->tag || a->status != b->status)
		return false;
	if (a->status != BRICK_OK)
		return true;
	switch (a->op) {
	case BRICK_OP_HELLO:
		return a->u.hello.version == b->u.hello.version &&
		       a->u.hello.max_msg == b->u.hello.max_msg &&
		       a->u.hello.credits == b->u.hello.credits &&
		       a->u.hello.block_size == b->u.hello.block_size &&
		       a->u.hello.slots == b->u.hello.slots;
	case BRICK_OP_MAP:
		return a->u.map.addr == b->u.map.addr && a->u.map.rkey == b->u.map.rkey &&
		       a->u.map.length == b->u.map.length;
	case BRICK_OP_LIST:
		if (a->u.list.count != b->u.list.count || a->u.list.next != b->u.list.next)
			return false;
		for (uint32_t i = 0; i < a->u.list.count; i++)
			if (a->u.list.ext[i].addr != b->u.list.ext[i].addr ||
			    a->u.list.ext[i].length != b->u.list.ext[i].length)
				return false;
		return true;
	case BRICK_OP_STAT:
		return !memcmp(a->u.stat, b->u.stat, sizeof(a->u.stat));
	default:
		return true;
	}
}

/* A buffer one byte past an aligned one: every decode below reads unaligned fields. */
static uint8_t odd_buf[BRICK_MSG_MAX + 64 + 1];
#define ODD (odd_buf + 1)

static void round_trips(void)
{
	uint8_t again[BRICK_MSG_MAX];
	struct brick_extent ext[BRICK_LIST_MAX];

	for (size_t i = 0; i < T_ARRAY_SIZE(reqs); i++) {
		const struct req_case *c = &reqs[i];
		struct brick_req d;
		int n = brick_wire_encode_req(&c->r, ODD, BRICK_MSG_MAX);

		T_EQ(n, c->len, c->name);
		if (n <= 0)
			continue;
		T_EQ(brick_wire_decode_req(ODD, (size_t)n, &d), BRICK_OK, c->name);
		T_CHECK(req_eq(&c->r, &d), "request %s: decoded fields differ", c->name);
		T_EQ(d.version, BRICK_WIRE_VERSION, "version");
		T_EQ(brick_wire_encode_req(&d, again, sizeof(again)), n, c->name);
		T_CHECK(!memcmp(ODD, again, (size_t)n), "request %s: re-encodes the same", c->name);
	}
	for (unsigned i = 0; i < n_replies; i++) {
		const struct reply_case *c = &replies[i];
		struct brick_reply d;
		int n = brick_wire_encode_reply(&c->r, ODD, BRICK_MSG_MAX);

		T_EQ(n, c->len, c->name);
		T_CHECK(n <= (int)BRICK_MSG_MAX, "reply %s fits BRICK_MSG_MAX", c->name);
		if (n <= 0)
			continue;
		T_EQ(brick_wire_decode_reply(ODD, (size_t)n, &d, ext, BRICK_LIST_MAX), 0, c->name);
		T_CHECK(reply_eq(&c->r, &d), "reply %s: decoded fields differ", c->name);
		T_EQ(brick_wire_encode_reply(&d, again, sizeof(again)), n, c->name);
		T_CHECK(!memcmp(ODD, again, (size_t)n), "reply %s: re-encodes the same", c->name);
	}
}

/* What the encoders refuse: -EINVAL, and a request's REPLY bit is its own business. */
static void encode_errors(void)
{
	uint8_t buf[BRICK_MSG_MAX];
	struct brick_req q = { .op = BRICK_OP_LIST, .u.list = { 0, BRICK_LIST_MAX + 1 } };
	struct brick_reply p = { .op = BRICK_OP_LIST, .u.list = { BRICK_LIST_MAX + 1, 0, extents } };
	struct brick_extent *ext = extents;

	T_EQ(brick_wire_encode_req(&q, buf, sizeof(buf)), -EINVAL, "LIST max over the most");
	q.u.list.max = 0;
	T_EQ(brick_wire_encode_req(&q, buf, sizeof(buf)), -EINVAL, "LIST max 0");
	q = (struct brick_req){ .op = BRICK_OP_MAP, .u.map = { 0, BRICK_MAP_RO | BRICK_MAP_RW } };
	T_EQ(brick_wire_encode_req(&q, buf, sizeof(buf)), -EINVAL, "MAP RO|RW");
	q = (struct brick_req){ .op = BRICK_OP_HELLO, .u.hello = { 2, 1 } };
	T_EQ(brick_wire_encode_req(&q, buf, sizeof(buf)), -EINVAL, "HELLO min over max");
	for (unsigned op = 0; op < 0x10000; op += op < 16 ? 1 : 0x3ff)
		if (op < BRICK_OP_HELLO || op > BRICK_OP_STAT) {
			q = (struct brick_req){ .op = (uint16_t)op };
			T_EQ(brick_wire_encode_req(&q, buf, sizeof(buf)), -EINVAL, "unknown op");
		}
	q = (struct brick_req){ .op = BRICK_OP_STAT | BRICK_OP_REPLY };
	T_EQ(brick_wire_encode_req(&q, buf, sizeof(buf)), -EINVAL, "a request with REPLY");

	T_EQ(brick_wire_encode_reply(&p, buf, sizeof(buf)), -EINVAL, "LIST reply over the most");
	p.u.list.count = 1;
	p.u.list.ext = NULL;
	T_EQ(brick_wire_encode_reply(&p, buf, sizeof(buf)), -EINVAL, "LIST reply without extents");
	p = (struct brick_reply){ .op = 0 };
	T_EQ(brick_wire_encode_reply(&p, buf, sizeof(buf)), -EINVAL, "OK reply to op 0");
	p = (struct brick_reply){ .op = 8 };
	T_EQ(brick_wire_encode_reply(&p, buf, sizeof(buf)), -EINVAL, "OK reply to op 8");
	p = (struct brick_reply){ .op = BRICK_OP_ALLOC, .status = BRICK_ENOMEM + 1 };
	T_EQ(brick_wire_encode_reply(&p, buf, sizeof(buf)), -EINVAL, "unknown status");
	/* the REPLY bit on a reply's op changes nothing */
	p = (struct brick_reply){ .op = BRICK_OP_LIST | BRICK_OP_REPLY, .tag = 14,
				  .u.list = { 1, 8 * MiB, ext } };
	T_EQ(brick_wire_encode_reply(&p, buf, sizeof(buf)), 56, "reply op with REPLY");
	T_CHECK(buf[6] == 0x80 && buf[7] == BRICK_OP_LIST, "op 0x8006");
}

static void check_golden(const char *what, const uint8_t *want, size_t want_len, int n,
			 const uint8_t *got)
{
	char a[2 * 64 + 1], b[2 * 64 + 1];

	T_EQ(n, want_len, what);
	if (n != (int)want_len || want_len > 64)
		return;
	t_hex(got, want_len, a);
	t_hex(want, want_len, b);
	T_CHECK(!memcmp(got, want, want_len), "%s: got %s, want %s", what, a, b);
}

static void golden(void)
{
	static const uint8_t map_req[] = {
		0x42, 0x52, 0x4b, 0x31,			/*  0 magic "BRK1" */
		0x00, 0x01,				/*  4 version */
		0x00, 0x04,				/*  6 op MAP */
		0xa1, 0xb2, 0xc3, 0xd4,			/*  8 tag */
		0x00, 0x00, 0x00, 0x10,			/* 12 length 16 */
		0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,	/* 16 addr */
		0x00, 0x00, 0x00, 0x06,			/* 24 flags RW|SHARED */
		0x00, 0x00, 0x00, 0x00,			/* 28 reserved */
	};
	static const uint8_t hello_reply[] = {
		0x42, 0x52, 0x4b, 0x31, 0x00, 0x01, 0x80, 0x01,	/* HELLO | REPLY */
		0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x28,	/* tag 42, length 40 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* status OK, reserved */
		0x00, 0x01, 0x00, 0x00,			/* version 1, reserved */
		0x00, 0x00, 0x10, 0x00,			/* max_msg 4096 */
		0x00, 0x00, 0x00, 0x10,			/* credits 16 */
		0x00, 0x00, 0x00, 0x00,			/* reserved */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00,	/* block_size 2 MiB */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,	/* slots 1024 */
	};
	static const uint8_t list_reply[] = {
		0x42, 0x52, 0x4b, 0x31, 0x00, 0x01, 0x80, 0x06,	/* LIST | REPLY */
		0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x28,	/* tag, length 40 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* status OK, reserved */
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,	/* count 1, reserved */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00,	/* next 4 MiB */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00,	/* addr 2 MiB */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00,	/* length 2 MiB */
	};
	static const uint8_t eproto_reply[] = {
		0x42, 0x52, 0x4b, 0x31, 0x00, 0x01, 0x80, 0x00,	/* op 0 | REPLY */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08,	/* tag 0, length 8 */
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,	/* BRICK_EPROTO */
	};
	struct brick_extent one = { 2 * MiB, 2 * MiB }, ext[1];
	struct brick_req q = { .op = BRICK_OP_MAP, .tag = 0xa1b2c3d4,
			       .u.map = { 0x0123456789abcdefull, BRICK_MAP_RW | BRICK_MAP_SHARED } };
	struct brick_reply p = { .op = BRICK_OP_HELLO, .tag = 42,
				 .u.hello = { 1, 4096, 16, 2 * MiB, 1024 } };
	struct brick_reply d, list;
	struct brick_req dq;
	uint8_t buf[BRICK_MSG_MAX];

	check_golden("MAP request", map_req, sizeof(map_req),
		     brick_wire_encode_req(&q, buf, sizeof(buf)), buf);
	check_golden("HELLO reply", hello_reply, sizeof(hello_reply),
		     brick_wire_encode_reply(&p, buf, sizeof(buf)), buf);
	list = (struct brick_reply){ .op = BRICK_OP_LIST, .tag = 0x01020304,
				     .u.list = { 1, 4 * MiB, &one } };
	check_golden("LIST reply", list_reply, sizeof(list_reply),
		     brick_wire_encode_reply(&list, buf, sizeof(buf)), buf);
	p = (struct brick_reply){ .status = BRICK_EPROTO };
	check_golden("EPROTO reply", eproto_reply, sizeof(eproto_reply),
		     brick_wire_encode_reply(&p, buf, sizeof(buf)), buf);

	/* and the other way */
	T_EQ(brick_wire_decode_req(map_req, sizeof(map_req), &dq), BRICK_OK, "golden MAP");
	T_CHECK(req_eq(&q, &dq), "golden MAP decodes");
	T_EQ(brick_wire_decode_reply(list_reply, sizeof(list_reply), &d, ext, 1), 0, "golden LIST");
	T_CHECK(reply_eq(&list, &d), "golden LIST decodes");
	T_EQ(brick_wire_decode_reply(eproto_reply, sizeof(eproto_reply), &d, NULL, 0), 0,
	     "golden EPROTO");
	T_CHECK(d.op == 0 && d.tag == 0 && d.status == BRICK_EPROTO, "op 0, tag 0, EPROTO");
}

/* Each shorter prefix, as sent and with the header's length patched to match; the whole
 * message and one byte more, likewise. */
static void lengths(void)
{
	struct brick_extent ext[BRICK_LIST_MAX + 1];
	struct brick_reply d;
	struct brick_req q;
	enum brick_status st;

	for (size_t i = 0; i < T_ARRAY_SIZE(reqs); i++) {
		const struct req_case *c = &reqs[i];
		size_t n = (size_t)brick_wire_encode_req(&c->r, ODD, BRICK_MSG_MAX);

		ODD[n] = 0;
		for (size_t k = 0; k <= n + 1; k++) {
			if (k == n)
				continue;
			st = brick_wire_decode_req(ODD, k, &q);
			T_CHECK(st == BRICK_EPROTO, "request %s, %zu of %zu bytes: status %u", c->name,
				k, n, st);
			T_CHECK(k < BRICK_HDR_LEN ? q.op == 0 && q.tag == 0 :
				q.op == c->r.op && q.tag == c->r.tag,
				"request %s, %zu bytes: op and tag", c->name, k);
			if (k < BRICK_HDR_LEN)
				continue;
			set_be(ODD + 12, k - BRICK_HDR_LEN, 4);
			st = brick_wire_decode_req(ODD, k, &q);
			T_CHECK(st == BRICK_EPROTO, "request %s, %zu bytes, length matching: status %u",
				c->name, k, st);
			set_be(ODD + 12, n - BRICK_HDR_LEN, 4);
		}
	}
	for (unsigned i = 0; i < n_replies; i++) {
		const struct reply_case *c = &replies[i];
		size_t n = (size_t)brick_wire_encode_reply(&c->r, ODD, BRICK_MSG_MAX);

		ODD[n] = 0;
		for (size_t k = 0; k <= n + 1; k++) {
			if (k == n)
				continue;
			T_CHECK(brick_wire_decode_reply(ODD, k, &d, ext, BRICK_LIST_MAX) == -EPROTO,
				"reply %s, %zu of %zu bytes", c->name, k, n);
			if (k < BRICK_HDR_LEN)
				continue;
			set_be(ODD + 12, k - BRICK_HDR_LEN, 4);
			T_CHECK(brick_wire_decode_reply(ODD, k, &d, ext, BRICK_LIST_MAX) == -EPROTO,
				"reply %s, %zu bytes, length matching", c->name, k);
			set_be(ODD + 12, n - BRICK_HDR_LEN, 4);
		}
	}
	/* over BRICK_MSG_MAX, even with the length matching: a LIST reply of 254 extents,
	 * with room for them */
	T_EQ(brick_wire_encode_reply(&replies[7].r, ODD, BRICK_MSG_MAX), BRICK_MSG_MAX - 8,
	     "list-max");
	set_be(ODD + 16 + 8, BRICK_LIST_MAX + 1, 4);
	set_be(ODD + 12, BRICK_MSG_MAX - 8 + 16 - BRICK_HDR_LEN, 4);
	memset(ODD + BRICK_MSG_MAX - 8, 0, 16);
	T_EQ(brick_wire_decode_reply(ODD, BRICK_MSG_MAX + 8, &d, ext, BRICK_LIST_MAX + 1),
	     -EPROTO, "254 extents: over BRICK_MSG_MAX");
	set_hdr(ODD, BRICK_WIRE_MAGIC, 1, BRICK_OP_ALLOC, 1, BRICK_MSG_MAX + 1 - BRICK_HDR_LEN);
	T_EQ(brick_wire_decode_req(ODD, BRICK_MSG_MAX + 1, &q), BRICK_EPROTO,
	     "request over BRICK_MSG_MAX");
}

/* Magic, version, op and the REPLY bit, on every request and reply. */
static void headers(void)
{
	static const uint16_t versions[] = { 0, 2, 0x100, 0xffff };
	static const uint16_t bad_ops[] = { 0, BRICK_OP_STAT + 1, 0x100, 0x7fff };
	struct brick_extent ext[BRICK_LIST_MAX];
	struct brick_reply d;
	struct brick_req q;
	uint8_t save;

	for (size_t i = 0; i < T_ARRAY_SIZE(reqs); i++) {
		const struct req_case *c = &reqs[i];
		size_t n = (size_t)brick_wire_encode_req(&c->r, ODD, BRICK_MSG_MAX);

		for (unsigned b = 0; b < 4; b++) {
			ODD[b] ^= 0x20;
			T_EQ(brick_wire_decode_req(ODD, n, &q), BRICK_EPROTO, "bad magic");
			T_CHECK(q.op == 0 && q.tag == 0, "bad magic: no op, no tag");
			ODD[b] ^= 0x20;
		}
		for (size_t v = 0; v < T_ARRAY_SIZE(versions); v++) {
			set_be(ODD + 4, versions[v], 2);
			T_EQ(brick_wire_decode_req(ODD, n, &q), BRICK_EVERSION, c->name);
			T_CHECK(q.op == c->r.op && q.tag == c->r.tag && q.version == versions[v],
				"EVERSION %s: op, tag and version filled", c->name);
			/* another version may have other bodies: the version decides first */
			set_be(ODD + 12, n + 8 - BRICK_HDR_LEN, 4);
			T_EQ(brick_wire_decode_req(ODD, n + 8, &q), BRICK_EVERSION, "longer body");
			set_be(ODD + 12, n - BRICK_HDR_LEN, 4);
		}
		set_be(ODD + 4, BRICK_WIRE_VERSION, 2);
		for (size_t o = 0; o < T_ARRAY_SIZE(bad_ops); o++) {
			set_be(ODD + 6, bad_ops[o], 2);
			T_EQ(brick_wire_decode_req(ODD, n, &q), BRICK_EBADOP, c->name);
			T_CHECK(q.op == bad_ops[o] && q.tag == c->r.tag, "EBADOP: op and tag filled");
		}
		set_be(ODD + 6, c->r.op | BRICK_OP_REPLY, 2);
		T_EQ(brick_wire_decode_req(ODD, n, &q), BRICK_EPROTO, "a reply as a request");
		T_CHECK(q.tag == c->r.tag, "REPLY bit: tag filled");
	}
	for (unsigned i = 0; i < n_replies; i++) {
		const struct reply_case *c = &replies[i];
		size_t n = (size_t)brick_wire_encode_reply(&c->r, ODD, BRICK_MSG_MAX);

		for (unsigned b = 0; b < 4; b++) {
			ODD[b] ^= 0x01;
			T_EQ(brick_wire_decode_reply(ODD, n, &d, ext, BRICK_LIST_MAX), -EPROTO,
			     "reply: bad magic");
			ODD[b] ^= 0x01;
		}
		for (size_t v = 0; v < T_ARRAY_SIZE(versions); v++) {
			set_be(ODD + 4, versions[v], 2);
			T_EQ(brick_wire_decode_reply(ODD, n, &d, ext, BRICK_LIST_MAX), -EPROTO,
			     "reply: other version");
		}
		set_be(ODD + 4, BRICK_WIRE_VERSION, 2);
		ODD[6] ^= 0x80;
		T_EQ(brick_wire_decode_reply(ODD, n, &d, ext, BRICK_LIST_MAX), -EPROTO,
		     "reply without the REPLY bit");
		ODD[6] ^= 0x80;
		if (c->r.status != BRICK_OK)
			continue;
		save = ODD[7];
		for (size_t o = 0; o < T_ARRAY_SIZE(bad_ops); o++) {
			set_be(ODD + 6, bad_ops[o] | BRICK_OP_REPLY, 2);
			T_EQ(brick_wire_decode_reply(ODD, n, &d, ext, BRICK_LIST_MAX), -EPROTO,
			     "OK reply to an unknown op");
		}
		ODD[6] = 0x80;
		ODD[7] = save;
	}
}

/* Each reserved byte set makes the message malformed; a request's other bytes never do. */
static void reserved(void)
{
	struct brick_extent ext[BRICK_LIST_MAX];
	struct brick_reply d;
	struct brick_req q;
	enum brick_status st;

	for (size_t i = 0; i < T_ARRAY_SIZE(reqs); i++) {
		const struct req_case *c = &reqs[i];
		size_t n = (size_t)brick_wire_encode_req(&c->r, ODD, BRICK_MSG_MAX);

		for (size_t b = 0; b + BRICK_HDR_LEN < n; b++) {
			bool rsv = c->reserved >> b & 1;

			T_CHECK(!rsv || ODD[BRICK_HDR_LEN + b] == 0, "reserved bytes are zero");
			for (unsigned bit = 0; bit < 8; bit++) {
				ODD[BRICK_HDR_LEN + b] ^= (uint8_t)(1u << bit);
				st = brick_wire_decode_req(ODD, n, &q);
				T_CHECK(rsv ? st == BRICK_EPROTO : st != BRICK_EPROTO,
					"request %s, body byte %zu bit %u: status %u", c->name, b,
					bit, st);
				ODD[BRICK_HDR_LEN + b] ^= (uint8_t)(1u << bit);
			}
		}
	}
	for (unsigned i = 0; i < n_replies; i++) {
		const struct reply_case *c = &replies[i];
		size_t n = (size_t)brick_wire_encode_reply(&c->r, ODD, BRICK_MSG_MAX);

		for (size_t b = 0; b < 64 && b + BRICK_HDR_LEN < n; b++) {
			if (!(c->reserved >> b & 1))
				continue;
			T_CHECK(ODD[BRICK_HDR_LEN + b] == 0, "reserved bytes are zero");
			ODD[BRICK_HDR_LEN + b] ^= 0xff;
			T_EQ(brick_wire_decode_reply(ODD, n, &d, ext, BRICK_LIST_MAX), -EPROTO,
			     c->name);
			ODD[BRICK_HDR_LEN + b] ^= 0xff;
		}
	}
}

/* MAP's flags, LIST's max, HELLO's versions: fields out of range are EINVAL. */
static void fields(void)
{
	static const struct { uint32_t max; enum brick_status st; } maxes[] = {
		{ 0, BRICK_EINVAL }, { 1, BRICK_OK }, { BRICK_LIST_MAX, BRICK_OK },
		{ BRICK_LIST_MAX + 1, BRICK_EINVAL }, { UINT32_MAX, BRICK_EINVAL },
	};
	const uint32_t ro = BRICK_MAP_RO, rw = BRICK_MAP_RW;
	struct brick_req q = { .op = BRICK_OP_MAP, .tag = 3, .u.map = { 2 * MiB, rw } };
	uint8_t buf[64];
	int n = brick_wire_encode_req(&q, buf, sizeof(buf));

	for (uint32_t f = 0; f < 8; f++) {
		bool ok = (f & (ro | rw)) == ro || (f & (ro | rw)) == rw;

		set_be(buf + BRICK_HDR_LEN + 8, f, 4);
		T_EQ(brick_wire_decode_req(buf, (size_t)n, &q), ok ? BRICK_OK : BRICK_EINVAL,
		     "MAP flags");
		if (ok)
			T_EQ(q.u.map.flags, f, "flags decoded");
	}
	for (unsigned bit = 3; bit < 32; bit++) {
		set_be(buf + BRICK_HDR_LEN + 8, rw | 1u << bit, 4);
		T_EQ(brick_wire_decode_req(buf, (size_t)n, &q), BRICK_EINVAL, "MAP unknown flag");
		q = (struct brick_req){ .op = BRICK_OP_MAP, .u.map = { 0, rw | 1u << bit } };
		T_EQ(brick_wire_encode_req(&q, buf + 32, 32), -EINVAL, "encode unknown flag");
	}

	q = (struct brick_req){ .op = BRICK_OP_LIST, .tag = 6, .u.list = { 0, 1 } };
	n = brick_wire_encode_req(&q, buf, sizeof(buf));
	for (size_t i = 0; i < T_ARRAY_SIZE(maxes); i++) {
		set_be(buf + BRICK_HDR_LEN + 8, maxes[i].max, 4);
		T_EQ(brick_wire_decode_req(buf, (size_t)n, &q), maxes[i].st, "LIST max");
		T_CHECK(q.op == BRICK_OP_LIST && q.tag == 6, "EINVAL: op and tag filled");
	}

	q = (struct brick_req){ .op = BRICK_OP_HELLO, .u.hello = { 1, 1 } };
	n = brick_wire_encode_req(&q, buf, sizeof(buf));
	T_EQ(brick_wire_decode_req(buf, (size_t)n, &q), BRICK_OK, "HELLO 1..1");
	set_be(buf + BRICK_HDR_LEN, 2, 2);
	T_EQ(brick_wire_decode_req(buf, (size_t)n, &q), BRICK_EINVAL, "HELLO 2..1");
}

/* A reply's own checks: extents against count and room, STAT's count, the status. */
static void reply_fields(void)
{
	struct brick_extent ext[BRICK_LIST_MAX];
	struct brick_reply d;
	int n;

	n = brick_wire_encode_reply(&replies[7].r, ODD, BRICK_MSG_MAX);	/* list-max */
	T_EQ(brick_wire_decode_reply(ODD, (size_t)n, &d, ext, BRICK_LIST_MAX - 1), -EPROTO,
	     "more extents than room");
	set_be(ODD + BRICK_HDR_LEN + 8, BRICK_LIST_MAX - 1, 4);
	T_EQ(brick_wire_decode_reply(ODD, (size_t)n, &d, ext, BRICK_LIST_MAX), -EPROTO,
	     "count one short of the extents");
	n = brick_wire_encode_reply(&replies[6].r, ODD, BRICK_MSG_MAX);	/* list-1 */
	T_EQ(brick_wire_decode_reply(ODD, (size_t)n, &d, NULL, 0), -EPROTO, "no room at all");
	n = brick_wire_encode_reply(&replies[5].r, ODD, BRICK_MSG_MAX);	/* list-0 */
	T_EQ(brick_wire_decode_reply(ODD, (size_t)n, &d, NULL, 0), 0, "0 extents, no room");
	set_be(ODD + BRICK_HDR_LEN + 8, 1, 4);
	T_EQ(brick_wire_decode_reply(ODD, (size_t)n, &d, ext, 1), -EPROTO, "count 1, no extent");

	n = brick_wire_encode_reply(&replies[8].r, ODD, BRICK_MSG_MAX);	/* stat */
	for (uint32_t count = 0; count <= BRICK_STAT_COUNT + 1; count++) {
		set_be(ODD + BRICK_HDR_LEN + 8, count, 4);
		T_EQ(brick_wire_decode_reply(ODD, (size_t)n, &d, NULL, 0),
		     count == BRICK_STAT_COUNT ? 0 : -EPROTO, "STAT count");
	}

	n = brick_wire_encode_reply(&replies[9].r, ODD, BRICK_MSG_MAX);	/* map-busy */
	for (uint32_t status = 0; status <= BRICK_ENOMEM + 2; status++) {
		set_be(ODD + BRICK_HDR_LEN, status, 4);
		T_EQ(brick_wire_decode_reply(ODD, (size_t)n, &d, NULL, 0),
		     status && status <= BRICK_ENOMEM ? 0 : -EPROTO, "error statuses");
	}
	set_be(ODD + BRICK_HDR_LEN, UINT32_MAX, 4);
	T_EQ(brick_wire_decode_reply(ODD, (size_t)n, &d, NULL, 0), -EPROTO, "status ~0");
	/* an error reply carries nothing more: the OK reply's fields after it are malformed */
	n = brick_wire_encode_reply(&replies[3].r, ODD, BRICK_MSG_MAX);	/* map */
	set_be(ODD + BRICK_HDR_LEN, BRICK_EBUSY, 4);
	T_EQ(brick_wire_decode_reply(ODD, (size_t)n, &d, NULL, 0), -EPROTO,
	     "error reply with fields");
}

/* Too small a buffer: -ENOSPC, and not a byte written. */
static void no_space(void)
{
	uint8_t buf[BRICK_MSG_MAX];
	bool untouched = true;

	for (size_t i = 0; i < T_ARRAY_SIZE(reqs); i++)
		for (size_t len = 0; len < reqs[i].len; len++) {
			memset(buf, 0xa5, sizeof(buf));
			T_EQ(brick_wire_encode_req(&reqs[i].r, buf, len), -ENOSPC, reqs[i].name);
			for (size_t b = 0; b < sizeof(buf); b++)
				untouched &= buf[b] == 0xa5;
		}
	for (unsigned i = 0; i < n_replies; i++)
		for (size_t len = 0; len < replies[i].len; len += len < 64 ? 1 : 97) {
			memset(buf, 0xa5, sizeof(buf));
			T_EQ(brick_wire_encode_reply(&replies[i].r, buf, len), -ENOSPC,
			     replies[i].name);
			for (size_t b = 0; b < sizeof(buf); b++)
				untouched &= buf[b] == 0xa5;
		}
	T_EQ(brick_wire_encode_reply(&replies[7].r, buf, replies[7].len - 1), -ENOSPC,
	     "list-max, one byte short");
	T_CHECK(untouched, "-ENOSPC writes nothing");
}

/* Random bytes: never a crash; pure noise never decodes; noise behind a plausible header
 * (a known length, bodies mostly zero: 1 byte in 8 random) sometimes does, and then encodes back the same. */
static void random_bytes(struct t_rng *rng)
{
	static const uint32_t body_lens[] = { 0, 8, 16, 24, 32, 40, 56, 144, 4072 };
	struct brick_extent ext[BRICK_LIST_MAX];
	uint8_t again[BRICK_MSG_MAX];
	unsigned ok_req = 0, ok_reply = 0;
	struct brick_reply d;
	struct brick_req q;

	for (int i = 0; i < 4000; i++) {
		size_t len = (size_t)t_below(rng, i % 8 ? 64 : BRICK_MSG_MAX + 64);

		t_fill(rng, ODD, len);
		T_CHECK(brick_wire_decode_req(ODD, len, &q) != BRICK_OK, "noise request decoded");
		T_CHECK(brick_wire_decode_reply(ODD, len, &d, ext, BRICK_LIST_MAX) == -EPROTO,
			"noise reply decoded");
	}
	for (int i = 0; i < 8000; i++) {
		uint32_t body = t_below(rng, 5) ? body_lens[t_below(rng, T_ARRAY_SIZE(body_lens))] :
			(uint32_t)t_below(rng, 200);
		uint16_t op = (uint16_t)(t_below(rng, 9) | (i & 1 ? BRICK_OP_REPLY : 0));
		uint32_t length = t_below(rng, 10) ? body : (uint32_t)t_rand(rng);
		size_t len = BRICK_HDR_LEN + body;
		int n;

		set_hdr(ODD, BRICK_WIRE_MAGIC, t_below(rng, 10) ? 1 : (uint16_t)t_rand(rng), op,
			(uint32_t)t_rand(rng), length);
		for (uint32_t b = 0; b < body; b++)
			ODD[BRICK_HDR_LEN + b] = t_below(rng, 8) ? 0 : (uint8_t)t_rand(rng);
		if (op == (BRICK_OP_LIST | BRICK_OP_REPLY) && body >= 24 && t_below(rng, 2))
			set_be(ODD + BRICK_HDR_LEN + 8, (body - 24) / 16, 4);	/* a count to match */
		if ((op & BRICK_OP_REPLY) && body >= 8 && t_below(rng, 2)) {
			set_be(ODD + BRICK_HDR_LEN, t_below(rng, 16), 4);	/* a status, */
			set_be(ODD + BRICK_HDR_LEN + 4, 0, 4);			/* reserved */
		}
		if (brick_wire_decode_req(ODD, len, &q) == BRICK_OK) {
			ok_req++;
			n = brick_wire_encode_req(&q, again, sizeof(again));
			T_CHECK(n == (int)len && !memcmp(again, ODD, len), "request re-encodes");
		}
		if (brick_wire_decode_reply(ODD, len, &d, ext, BRICK_LIST_MAX) == 0) {
			ok_reply++;
			n = brick_wire_encode_reply(&d, again, sizeof(again));
			T_CHECK(n == (int)len && !memcmp(again, ODD, len), "reply re-encodes");
		}
	}
	printf("random: %u requests and %u replies of 8000 decoded, each re-encoded\n", ok_req,
	       ok_reply);
	T_CHECK(ok_req > 20 && ok_reply > 20, "some random messages decode");
}

static void names(void)
{
#define CHECK_STATUS(name, value, text) \
	T_CHECK(!strcmp(brick_status_str(value), text), "brick_status_str(%s)", #name);
	BRICK_STATUS_TABLE(CHECK_STATUS)
#undef CHECK_STATUS
	T_CHECK(!strcmp(brick_status_str(BRICK_ENOMEM + 1), "unknown status"), "status 13");
	T_CHECK(!strcmp(brick_status_str(UINT32_MAX), "unknown status"), "status ~0");

	T_CHECK(!strcmp(brick_op_str(BRICK_OP_HELLO), "HELLO"), "HELLO");
	T_CHECK(!strcmp(brick_op_str(BRICK_OP_MAP | BRICK_OP_REPLY), "MAP"), "MAP reply");
	T_CHECK(!strcmp(brick_op_str(BRICK_OP_STAT), "STAT"), "STAT");
	T_CHECK(!strcmp(brick_op_str(0), "unknown op"), "op 0");
	T_CHECK(!strcmp(brick_op_str(BRICK_OP_STAT + 1), "unknown op"), "op 8");

#define CHECK_STAT(name, text) \
	T_CHECK(!strcmp(brick_stat_name(BRICK_STAT_##name), #name) && \
		!strcmp(brick_stat_text(BRICK_STAT_##name), text), "stat %s", #name);
	BRICK_STAT_TABLE(CHECK_STAT)
#undef CHECK_STAT
	T_CHECK(!brick_stat_name(BRICK_STAT_COUNT) && !brick_stat_text(BRICK_STAT_COUNT),
		"no counter past the table");
}

/* The fuzzer's seed corpus: one valid message per file. */
static int write_corpus(const char *dir)
{
	uint8_t buf[BRICK_MSG_MAX];
	char path[4096];
	int n, rc = 0;

	for (size_t i = 0; i < T_ARRAY_SIZE(reqs) + n_replies; i++) {
		bool req = i < T_ARRAY_SIZE(reqs);
		const char *name = req ? reqs[i].name : replies[i - T_ARRAY_SIZE(reqs)].name;
		FILE *f;

		n = req ? brick_wire_encode_req(&reqs[i].r, buf, sizeof(buf)) :
			brick_wire_encode_reply(&replies[i - T_ARRAY_SIZE(reqs)].r, buf, sizeof(buf));
		snprintf(path, sizeof(path), "%s/%s-%s", dir, req ? "req" : "reply", name);
		if (n <= 0 || !(f = fopen(path, "wb"))) {
			perror(path);
			return 1;
		}
		if (fwrite(buf, 1, (size_t)n, f) != (size_t)n)
			rc = 1;
		if (fclose(f))
			rc = 1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct t_rng rng;

	make_replies();
	if (argc == 3 && !strcmp(argv[1], "--corpus"))
		return write_corpus(argv[2]);
	rng.s = t_seed(argc, argv, 0x62726b31);
	round_trips();
	encode_errors();
	golden();
	lengths();
	headers();
	reserved();
	fields();
	reply_fields();
	no_space();
	random_bytes(&rng);
	names();
	return t_done("brick-wire");
}
