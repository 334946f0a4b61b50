/* SPDX-License-Identifier: MIT */
/*
 * wire — the brick's message codec (see wire.h for the header and the API).
 *
 * One table, ops[], holds each op's facts: its name, the lengths of its bodies and the
 * codecs of its fields. Encode, decode and dispatch read the table and never list ops.
 * The generic code checks a body's length against the table before an op's codec runs,
 * so a codec reads and writes fixed offsets without bounds checks of its own.
 *
 * Fields are big-endian and go through memcpy: a RECV buffer promises no alignment, and
 * a cast to uint32_t * of an odd address is undefined (UBSan says so).
 *
 * Body offsets below count from the first byte after the 16-byte header. A reply's body
 * is always
 *
 *   0  status    u32  enum brick_status
 *   4  reserved  u32
 *
 * and an error reply (status != BRICK_OK) is exactly those 8 bytes.
 */
#include "wire.h"

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Body lengths: requests, then OK replies (their status word and its reserved word
 * included). */
#define STATUS_LEN 8u
#define HELLO_REQ_LEN 8u
#define BLOCK_REQ_LEN 8u
#define MAP_REQ_LEN 16u
#define LIST_REQ_LEN 16u
#define HELLO_REPLY_LEN (STATUS_LEN + 32u)
#define MAP_REPLY_LEN (STATUS_LEN + 24u)
#define LIST_REPLY_LEN (STATUS_LEN + 16u)	/* then count extents */
#define EXTENT_LEN 16u
#define STAT_REPLY_LEN (STATUS_LEN + 8u + 8u * BRICK_STAT_COUNT)

static_assert(BRICK_HDR_LEN + LIST_REPLY_LEN + BRICK_LIST_MAX * EXTENT_LEN <= BRICK_MSG_MAX,
	      "a full LIST reply fits one message");
static_assert(BRICK_HDR_LEN + LIST_REPLY_LEN + (BRICK_LIST_MAX + 1) * EXTENT_LEN > BRICK_MSG_MAX,
	      "BRICK_LIST_MAX is the most extents that fit");
static_assert(BRICK_HDR_LEN + STAT_REPLY_LEN <= BRICK_MSG_MAX, "a STAT reply fits");
static_assert(BRICK_MSG_MAX <= UINT32_MAX, "a length fits the header's u32");

/* Big-endian fields at a cursor that moves past them. */
static void put16(uint8_t **p, uint16_t v)
{
	v = htobe16(v);
	memcpy(*p, &v, sizeof(v));
	*p += sizeof(v);
}

static void put32(uint8_t **p, uint32_t v)
{
	v = htobe32(v);
	memcpy(*p, &v, sizeof(v));
	*p += sizeof(v);
}

static void put64(uint8_t **p, uint64_t v)
{
	v = htobe64(v);
	memcpy(*p, &v, sizeof(v));
	*p += sizeof(v);
}

static uint16_t get16(const uint8_t **p)
{
	uint16_t v;

	memcpy(&v, *p, sizeof(v));
	*p += sizeof(v);
	return be16toh(v);
}

static uint32_t get32(const uint8_t **p)
{
	uint32_t v;

	memcpy(&v, *p, sizeof(v));
	*p += sizeof(v);
	return be32toh(v);
}

static uint64_t get64(const uint8_t **p)
{
	uint64_t v;

	memcpy(&v, *p, sizeof(v));
	*p += sizeof(v);
	return be64toh(v);
}

/* The header (wire.h): magic u32, version u16, op u16, tag u32, length u32. */
struct hdr {
	uint16_t version, op;
	uint32_t tag, length;
};

static uint8_t *put_hdr(uint8_t *p, uint16_t op, uint32_t tag, uint32_t length)
{
	put32(&p, BRICK_WIRE_MAGIC);
	put16(&p, BRICK_WIRE_VERSION);
	put16(&p, op);
	put32(&p, tag);
	put32(&p, length);
	return p;
}

/* A readable header: 16 bytes that start with the magic. The body, or NULL. */
static const uint8_t *get_hdr(const void *buf, size_t len, struct hdr *h)
{
	const uint8_t *p = buf;

	if (len < BRICK_HDR_LEN || get32(&p) != BRICK_WIRE_MAGIC)
		return NULL;
	h->version = get16(&p);
	h->op = get16(&p);
	h->tag = get32(&p);
	h->length = get32(&p);
	return p;
}

/* The header's length is the body's, and the message is no longer than the maximum. */
static bool length_ok(const struct hdr *h, size_t len)
{
	return len <= BRICK_MSG_MAX && h->length == len - BRICK_HDR_LEN;
}

/*
 * HELLO request (8 bytes):
 *   0  min_version  u16
 *   2  max_version  u16  at least min_version (else BRICK_EINVAL)
 *   4  reserved     u32
 * OK reply (40 bytes):
 *   8  version      u16  the version the brick chose
 *  10  reserved     u16
 *  12  max_msg      u32
 *  16  credits      u32
 *  20  reserved     u32
 *  24  block_size   u64
 *  32  slots        u64
 */
static bool hello_req_ok(const struct brick_req *r)
{
	return r->u.hello.min_version <= r->u.hello.max_version;
}

static void hello_req_put(const struct brick_req *r, uint8_t *p)
{
	put16(&p, r->u.hello.min_version);
	put16(&p, r->u.hello.max_version);
	put32(&p, 0);
}

static bool hello_req_get(const uint8_t *p, struct brick_req *r)
{
	r->u.hello.min_version = get16(&p);
	r->u.hello.max_version = get16(&p);
	return get32(&p) == 0;
}

static void hello_reply_put(const struct brick_reply *r, uint8_t *p)
{
	put16(&p, r->u.hello.version);
	put16(&p, 0);
	put32(&p, r->u.hello.max_msg);
	put32(&p, r->u.hello.credits);
	put32(&p, 0);
	put64(&p, r->u.hello.block_size);
	put64(&p, r->u.hello.slots);
}

static bool hello_reply_get(const uint8_t *p, struct brick_reply *r)
{
	uint32_t reserved;

	r->u.hello.version = get16(&p);
	reserved = get16(&p);
	r->u.hello.max_msg = get32(&p);
	r->u.hello.credits = get32(&p);
	reserved |= get32(&p);
	r->u.hello.block_size = get64(&p);
	r->u.hello.slots = get64(&p);
	return reserved == 0;
}

/*
 * ALLOC, FREE and UNMAP request (8 bytes):
 *   0  addr  u64  the block's id
 * OK reply (8 bytes): the status alone.
 */
static void block_req_put(const struct brick_req *r, uint8_t *p)
{
	put64(&p, r->u.block.addr);
}

static bool block_req_get(const uint8_t *p, struct brick_req *r)
{
	r->u.block.addr = get64(&p);
	return true;
}

/*
 * MAP request (16 bytes):
 *   0  addr      u64
 *   8  flags     u32  exactly one of BRICK_MAP_RO and BRICK_MAP_RW, BRICK_MAP_SHARED
 *                     optional, no other bit (else BRICK_EINVAL)
 *  12  reserved  u32
 * OK reply (32 bytes):
 *   8  addr      u64  the block's address in the brick
 *  16  rkey      u32
 *  20  reserved  u32
 *  24  length    u64
 */
static bool map_req_ok(const struct brick_req *r)
{
	uint32_t f = r->u.map.flags;

	return !(f & ~(BRICK_MAP_RO | BRICK_MAP_RW | BRICK_MAP_SHARED)) &&
	       !(f & BRICK_MAP_RO) != !(f & BRICK_MAP_RW);
}

static void map_req_put(const struct brick_req *r, uint8_t *p)
{
	put64(&p, r->u.map.addr);
	put32(&p, r->u.map.flags);
	put32(&p, 0);
}

static bool map_req_get(const uint8_t *p, struct brick_req *r)
{
	r->u.map.addr = get64(&p);
	r->u.map.flags = get32(&p);
	return get32(&p) == 0;
}

static void map_reply_put(const struct brick_reply *r, uint8_t *p)
{
	put64(&p, r->u.map.addr);
	put32(&p, r->u.map.rkey);
	put32(&p, 0);
	put64(&p, r->u.map.length);
}

static bool map_reply_get(const uint8_t *p, struct brick_reply *r)
{
	r->u.map.addr = get64(&p);
	r->u.map.rkey = get32(&p);
	if (get32(&p))
		return false;
	r->u.map.length = get64(&p);
	return true;
}

/*
 * LIST request (16 bytes):
 *   0  from      u64  the first block id to report
 *   8  max       u32  1..BRICK_LIST_MAX extents (else BRICK_EINVAL)
 *  12  reserved  u32
 * OK reply (24 + 16 x count bytes):
 *   8  count     u32  the extents that follow (0..BRICK_LIST_MAX)
 *  12  reserved  u32
 *  16  next      u64  where the next LIST starts; 0: no more
 *  24  count x { addr u64, length u64 }
 * The extents are the generic code's (the table's reply_extents), checked against the
 * body's length there.
 */
static bool list_req_ok(const struct brick_req *r)
{
	return r->u.list.max >= 1 && r->u.list.max <= BRICK_LIST_MAX;
}

static void list_req_put(const struct brick_req *r, uint8_t *p)
{
	put64(&p, r->u.list.from);
	put32(&p, r->u.list.max);
	put32(&p, 0);
}

static bool list_req_get(const uint8_t *p, struct brick_req *r)
{
	r->u.list.from = get64(&p);
	r->u.list.max = get32(&p);
	return get32(&p) == 0;
}

static void list_reply_put(const struct brick_reply *r, uint8_t *p)
{
	put32(&p, r->u.list.count);
	put32(&p, 0);
	put64(&p, r->u.list.next);
	for (uint32_t i = 0; i < r->u.list.count; i++) {
		put64(&p, r->u.list.ext[i].addr);
		put64(&p, r->u.list.ext[i].length);
	}
}

static bool list_reply_get(const uint8_t *p, struct brick_reply *r)
{
	r->u.list.count = get32(&p);
	if (get32(&p))
		return false;
	r->u.list.next = get64(&p);
	for (uint32_t i = 0; i < r->u.list.count; i++) {
		r->u.list.ext[i].addr = get64(&p);
		r->u.list.ext[i].length = get64(&p);
	}
	return true;
}

/*
 * STAT request: an empty body.
 * OK reply (16 + 8 x BRICK_STAT_COUNT bytes):
 *   8  count     u32  BRICK_STAT_COUNT: version 1 has exactly these counters, so another
 *                     count is malformed (a new counter needs a new version)
 *  12  reserved  u32
 *  16  count x u64, in BRICK_STAT_TABLE order
 */
static void stat_reply_put(const struct brick_reply *r, uint8_t *p)
{
	put32(&p, BRICK_STAT_COUNT);
	put32(&p, 0);
	for (unsigned i = 0; i < BRICK_STAT_COUNT; i++)
		put64(&p, r->u.stat[i]);
}

static bool stat_reply_get(const uint8_t *p, struct brick_reply *r)
{
	if (get32(&p) != BRICK_STAT_COUNT || get32(&p))
		return false;
	for (unsigned i = 0; i < BRICK_STAT_COUNT; i++)
		r->u.stat[i] = get64(&p);
	return true;
}

/* What the codec knows of an op. A NULL function: nothing to check, or no fields. */
struct op_info {
	const char *name;
	uint32_t req_len;	/* the request's body */
	uint32_t reply_len;	/* an OK reply's body (LIST's: without its extents) */
	bool reply_extents;	/* an OK reply ends in u.list.count extents */
	bool (*req_ok)(const struct brick_req *r);	/* fields in range */
	void (*req_put)(const struct brick_req *r, uint8_t *body);
	bool (*req_get)(const uint8_t *body, struct brick_req *r);	/* reserved zero */
	void (*reply_put)(const struct brick_reply *r, uint8_t *after_status);
	bool (*reply_get)(const uint8_t *after_status, struct brick_reply *r);
};

static const struct op_info ops[] = {
	[BRICK_OP_HELLO] = {
		.name = "HELLO", .req_len = HELLO_REQ_LEN, .reply_len = HELLO_REPLY_LEN,
		.req_ok = hello_req_ok, .req_put = hello_req_put, .req_get = hello_req_get,
		.reply_put = hello_reply_put, .reply_get = hello_reply_get,
	},
	[BRICK_OP_ALLOC] = {
		.name = "ALLOC", .req_len = BLOCK_REQ_LEN, .reply_len = STATUS_LEN,
		.req_put = block_req_put, .req_get = block_req_get,
	},
	[BRICK_OP_FREE] = {
		.name = "FREE", .req_len = BLOCK_REQ_LEN, .reply_len = STATUS_LEN,
		.req_put = block_req_put, .req_get = block_req_get,
	},
	[BRICK_OP_MAP] = {
		.name = "MAP", .req_len = MAP_REQ_LEN, .reply_len = MAP_REPLY_LEN,
		.req_ok = map_req_ok, .req_put = map_req_put, .req_get = map_req_get,
		.reply_put = map_reply_put, .reply_get = map_reply_get,
	},
	[BRICK_OP_UNMAP] = {
		.name = "UNMAP", .req_len = BLOCK_REQ_LEN, .reply_len = STATUS_LEN,
		.req_put = block_req_put, .req_get = block_req_get,
	},
	[BRICK_OP_LIST] = {
		.name = "LIST", .req_len = LIST_REQ_LEN, .reply_len = LIST_REPLY_LEN,
		.reply_extents = true,
		.req_ok = list_req_ok, .req_put = list_req_put, .req_get = list_req_get,
		.reply_put = list_reply_put, .reply_get = list_reply_get,
	},
	[BRICK_OP_STAT] = {
		.name = "STAT", .req_len = 0, .reply_len = STAT_REPLY_LEN,
		.reply_put = stat_reply_put, .reply_get = stat_reply_get,
	},
};

static const struct op_info *op_info(uint32_t op)
{
	return op < ARRAY_SIZE(ops) && ops[op].name ? &ops[op] : NULL;
}

static const char *const status_texts[] = {
#define BRICK_STATUS_TEXT(name, value, text) [name] = text,
	BRICK_STATUS_TABLE(BRICK_STATUS_TEXT)
#undef BRICK_STATUS_TEXT
};

static const char *status_text(uint32_t status)
{
	return status < ARRAY_SIZE(status_texts) ? status_texts[status] : NULL;
}

int brick_wire_encode_req(const struct brick_req *r, void *buf, size_t len)
{
	const struct op_info *o = op_info(r->op);
	uint8_t *body;

	if (!o || (o->req_ok && !o->req_ok(r)))
		return -EINVAL;
	if (len < BRICK_HDR_LEN + o->req_len)
		return -ENOSPC;
	body = put_hdr(buf, r->op, r->tag, o->req_len);
	if (o->req_put)
		o->req_put(r, body);
	return (int)(BRICK_HDR_LEN + o->req_len);
}

enum brick_status brick_wire_decode_req(const void *buf, size_t len, struct brick_req *r)
{
	const struct op_info *o;
	const uint8_t *body;
	struct hdr h;

	memset(r, 0, sizeof(*r));
	if (!(body = get_hdr(buf, len, &h)))
		return BRICK_EPROTO;
	r->version = h.version;
	r->op = h.op;
	r->tag = h.tag;
	if (!length_ok(&h, len))
		return BRICK_EPROTO;
	if (h.version != BRICK_WIRE_VERSION)
		return BRICK_EVERSION;
	if (h.op & BRICK_OP_REPLY)
		return BRICK_EPROTO;
	if (!(o = op_info(h.op)))
		return BRICK_EBADOP;
	if (h.length != o->req_len || (o->req_get && !o->req_get(body, r)))
		return BRICK_EPROTO;
	return !o->req_ok || o->req_ok(r) ? BRICK_OK : BRICK_EINVAL;
}

int brick_wire_encode_reply(const struct brick_reply *r, void *buf, size_t len)
{
	const struct op_info *o = NULL;
	uint32_t body_len = STATUS_LEN;
	uint8_t *p;

	if (!status_text(r->status))
		return -EINVAL;
	if (r->status == BRICK_OK) {
		o = op_info(r->op & ~BRICK_OP_REPLY);
		if (!o || (o->reply_extents && (r->u.list.count > BRICK_LIST_MAX ||
						(r->u.list.count && !r->u.list.ext))))
			return -EINVAL;
		body_len = o->reply_len + (o->reply_extents ? r->u.list.count * EXTENT_LEN : 0);
	}
	if (len < BRICK_HDR_LEN + body_len)
		return -ENOSPC;
	p = put_hdr(buf, r->op | BRICK_OP_REPLY, r->tag, body_len);
	put32(&p, r->status);
	put32(&p, 0);
	if (o && o->reply_put)
		o->reply_put(r, p);
	return (int)(BRICK_HDR_LEN + body_len);
}

int brick_wire_decode_reply(const void *buf, size_t len, struct brick_reply *r,
			    struct brick_extent *ext, uint32_t max_ext)
{
	const struct op_info *o;
	const uint8_t *p;
	uint32_t extra;
	struct hdr h;

	memset(r, 0, sizeof(*r));
	if (!(p = get_hdr(buf, len, &h)) || !length_ok(&h, len) ||
	    h.version != BRICK_WIRE_VERSION || !(h.op & BRICK_OP_REPLY) || h.length < STATUS_LEN)
		return -EPROTO;
	r->op = h.op & ~BRICK_OP_REPLY;
	r->tag = h.tag;
	r->status = get32(&p);
	if (!status_text(r->status) || get32(&p))
		return -EPROTO;
	if (r->status != BRICK_OK)
		return h.length == STATUS_LEN ? 0 : -EPROTO;
	if (!(o = op_info(r->op)) || h.length < o->reply_len)
		return -EPROTO;
	/* LIST: the extents the body holds must be the count it states, and fit ext */
	extra = h.length - o->reply_len;
	if (!o->reply_extents) {
		if (extra)
			return -EPROTO;
	} else {
		const uint8_t *q = p;
		uint32_t count = get32(&q);

		if (extra % EXTENT_LEN || count != extra / EXTENT_LEN || count > max_ext)
			return -EPROTO;
		r->u.list.ext = ext;
	}
	return !o->reply_get || o->reply_get(p, r) ? 0 : -EPROTO;
}

const char *brick_status_str(uint32_t status)
{
	const char *text = status_text(status);

	return text ? text : "unknown status";
}

const char *brick_op_str(uint32_t op)
{
	const struct op_info *o = op_info(op & ~BRICK_OP_REPLY);

	return o ? o->name : "unknown op";
}

static const char *const stat_names[] = {
#define BRICK_STAT_NAME(name, text) [BRICK_STAT_##name] = #name,
	BRICK_STAT_TABLE(BRICK_STAT_NAME)
#undef BRICK_STAT_NAME
};

static const char *const stat_texts[] = {
#define BRICK_STAT_TEXT(name, text) [BRICK_STAT_##name] = text,
	BRICK_STAT_TABLE(BRICK_STAT_TEXT)
#undef BRICK_STAT_TEXT
};

const char *brick_stat_name(unsigned id)
{
	return id < BRICK_STAT_COUNT ? stat_names[id] : NULL;
}

const char *brick_stat_text(unsigned id)
{
	return id < BRICK_STAT_COUNT ? stat_texts[id] : NULL;
}
