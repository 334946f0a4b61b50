/* SPDX-License-Identifier: MIT */
/*
 * wire — the brick's request/reply protocol (docs/brick.md "Wire protocol"), carried in
 * RDMA SENDs on each initiator's RC QP: one request per SEND, one reply per request.
 *
 * Every message starts with a 16-byte header, all fields big-endian (network order, as
 * IBA's own headers):
 *
 *   0  magic    u32  BRICK_WIRE_MAGIC ("BRK1")
 *   4  version  u16  BRICK_WIRE_VERSION; a request of another version is answered
 *                    BRICK_EVERSION (in a version-1 reply) and nothing else is done
 *   6  op       u16  enum brick_op; a reply sets BRICK_OP_REPLY on the request's op
 *   8  tag      u32  chosen by the initiator, echoed in the reply
 *  12  length   u32  bytes of the body that follows (the SEND's length is 16 + length)
 *
 * A reply's body starts with its status (u32, enum brick_status) and a u32 of zeros;
 * the op's fields follow only when the status is BRICK_OK. Layouts of the bodies are in
 * wire.c beside their codecs. A message is at most BRICK_MSG_MAX bytes. Decoding is
 * strict: a short or long body, a non-zero reserved field, an unknown op or flag is an
 * error, never a guess.
 */
#ifndef ODPEMU_BRICK_WIRE_H
#define ODPEMU_BRICK_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define BRICK_WIRE_MAGIC 0x42524b31u	/* "BRK1" */
#define BRICK_WIRE_VERSION 1
#define BRICK_MSG_MAX 4096u
#define BRICK_HDR_LEN 16u
#define BRICK_OP_REPLY 0x8000u
/* The extents one LIST reply carries at most: (4096 - 16 - 8 - 16) / 16. */
#define BRICK_LIST_MAX 253u

enum brick_op {
	BRICK_OP_HELLO = 1,	/* version and capacity */
	BRICK_OP_ALLOC = 2,	/* addr */
	BRICK_OP_FREE = 3,	/* addr */
	BRICK_OP_MAP = 4,	/* addr, flags -> handle */
	BRICK_OP_UNMAP = 5,	/* addr */
	BRICK_OP_LIST = 6,	/* from, max -> extents, next */
	BRICK_OP_STAT = 7,	/* -> counters */
};

/* Status codes: the wire's own numbers (not errno, whose values differ between systems). */
#define BRICK_STATUS_TABLE(X) \
	X(BRICK_OK, 0, "success") \
	X(BRICK_EEXIST, 1, "block already allocated") \
	X(BRICK_ENOSPC, 2, "backing store full") \
	X(BRICK_EALIGN, 3, "block id not 2 MiB-aligned") \
	X(BRICK_ENOENT, 4, "block not allocated") \
	X(BRICK_ENOTMAPPED, 5, "block not mapped by this initiator") \
	X(BRICK_EBUSY, 6, "block mapped elsewhere without SHARED, or mapped here already") \
	X(BRICK_EVERSION, 7, "protocol version not supported") \
	X(BRICK_EPROTO, 8, "malformed message") \
	X(BRICK_EBADOP, 9, "unknown operation") \
	X(BRICK_EINVAL, 10, "invalid argument") \
	X(BRICK_EIO, 11, "brick storage error") \
	X(BRICK_ENOMEM, 12, "brick out of resources")

enum brick_status {
#define BRICK_STATUS_ENUM(name, value, text) name = value,
	BRICK_STATUS_TABLE(BRICK_STATUS_ENUM)
#undef BRICK_STATUS_ENUM
};

/* MAP flags. RO and RW are exclusive and one is required; SHARED lets several
 * initiators hold RW maps of the block at once (docs/brick.md "Sharing"). */
#define BRICK_MAP_RO 0x1u
#define BRICK_MAP_RW 0x2u
#define BRICK_MAP_SHARED 0x4u

/* STAT's counters, in wire order (each a u64). One table: the codec, the brick, the
 * CLI's names and the docs come from it. */
#define BRICK_STAT_TABLE(X) \
	X(slots, "blocks the backing file holds") \
	X(blocks_allocated, "blocks allocated") \
	X(blocks_mapped, "blocks mapped by at least one initiator") \
	X(blocks_in_memory, "blocks with pages resident in memory") \
	X(blocks_on_file, "allocated blocks with no page in memory") \
	X(resident_bytes, "bytes of the mapping in memory") \
	X(mem_budget, "the memory budget (0: none)") \
	X(evictions, "blocks written back and dropped") \
	X(written_back_bytes, "resident bytes the evictions wrote back and dropped") \
	X(page_faults, "the device's ODP page faults") \
	X(invalidations, "the device's ODP invalidations") \
	X(prefetches, "the device's ODP prefetches (MAP brings its block in)") \
	X(flushes, "persistent FLUSHes the device served") \
	X(flush_ns_total, "their summed latency, ns") \
	X(initiators, "initiators connected") \
	X(requests, "requests served") \
	X(bad_requests, "requests answered with a protocol error")

enum brick_stat_id {
#define BRICK_STAT_ENUM(name, text) BRICK_STAT_##name,
	BRICK_STAT_TABLE(BRICK_STAT_ENUM)
#undef BRICK_STAT_ENUM
	BRICK_STAT_COUNT
};

struct brick_extent {
	uint64_t addr;		/* first block id */
	uint64_t length;	/* bytes, a multiple of 2 MiB */
};

struct brick_handle {
	uint64_t addr;		/* remote VA of the block in the brick */
	uint32_t rkey;
	uint64_t length;	/* 2 MiB */
};

/* A request, decoded. */
struct brick_req {
	uint16_t version;	/* decode: the header's; encode writes BRICK_WIRE_VERSION */
	uint16_t op;
	uint32_t tag;
	union {
		struct { uint16_t min_version, max_version; } hello;	/* min <= max */
		struct { uint64_t addr; } block;		/* ALLOC, FREE, UNMAP */
		struct { uint64_t addr; uint32_t flags; } map;
		struct { uint64_t from; uint32_t max; } list;	/* max 1..BRICK_LIST_MAX */
	} u;
};

/* A reply, decoded. LIST's extents live in the caller's array. */
struct brick_reply {
	uint16_t op;		/* the request's op, without BRICK_OP_REPLY */
	uint32_t tag;
	uint32_t status;	/* enum brick_status; the fields below only for BRICK_OK */
	union {
		struct {
			uint16_t version;
			uint32_t max_msg;	/* BRICK_MSG_MAX */
			uint32_t credits;	/* requests the initiator may have in flight */
			uint64_t block_size;	/* 2 MiB */
			uint64_t slots;		/* capacity in blocks */
		} hello;
		struct brick_handle map;
		struct {
			uint32_t count;
			uint64_t next;		/* where the next LIST starts; 0: no more */
			struct brick_extent *ext;
		} list;
		uint64_t stat[BRICK_STAT_COUNT];
	} u;
};

/* Encode into buf (len bytes): the message's length, or -ENOSPC (buf too small) or
 * -EINVAL (a field out of range: unknown op, HELLO min_version over max_version, MAP
 * flags, LIST max 0 or over BRICK_LIST_MAX, more than BRICK_LIST_MAX extents or none
 * given, an unknown status). A reply's op gets BRICK_OP_REPLY whether or not r->op has
 * it; an error reply (status not BRICK_OK) may carry any op, so that a request decoded
 * as BRICK_EBADOP or BRICK_EPROTO can be answered with its own op and tag. */
int brick_wire_encode_req(const struct brick_req *r, void *buf, size_t len);
int brick_wire_encode_reply(const struct brick_reply *r, void *buf, size_t len);

/* Decode a request: BRICK_OK, or the status to answer it with (BRICK_EPROTO: bad magic,
 * short, length mismatch, over BRICK_MSG_MAX, the REPLY bit, reserved bits;
 * BRICK_EVERSION; BRICK_EBADOP; BRICK_EINVAL: a field out of range). The checks run in
 * that order: magic, length, version, REPLY bit, op, body. Whatever the status, r->op
 * (as sent), r->tag and r->version are filled when the header could be read (16 bytes
 * starting with the magic; 0 otherwise), so the error reply can name the request. */
enum brick_status brick_wire_decode_req(const void *buf, size_t len, struct brick_req *r);

/* Decode a reply; LIST's extents go to ext (room for max_ext). 0, or -EPROTO (malformed:
 * also a version other than BRICK_WIRE_VERSION, no REPLY bit, an unknown status, an OK
 * reply to an unknown op, a STAT count other than BRICK_STAT_COUNT, or more extents than
 * max_ext). An error reply decodes to its op (0 when the brick could not read the
 * request's header), tag and status. */
int brick_wire_decode_reply(const void *buf, size_t len, struct brick_reply *r,
			    struct brick_extent *ext, uint32_t max_ext);

/* The status's text ("unknown status" for others); the op's name, REPLY bit or not
 * ("unknown op" for others); a counter's name and text (NULL from BRICK_STAT_COUNT on). */
const char *brick_status_str(uint32_t status);
const char *brick_op_str(uint32_t op);
const char *brick_stat_name(unsigned id);
const char *brick_stat_text(unsigned id);

#endif
