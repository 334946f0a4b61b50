/* SPDX-License-Identifier: MIT */
/*
 * meta — the brick's allocation map: block id (a 2 MiB-aligned 64-bit address) → slot of
 * the backing file, kept crash-consistent (docs/brick.md "Allocation map").
 *
 * The map lives in memory and in an append-only log file. Every change appends one
 * 32-byte record and fdatasyncs the log before the call returns, so an answered ALLOC or
 * FREE survives kill -9 (and power loss, as far as fdatasync does). A record:
 *
 *   0  magic  u32  BRICK_META_MAGIC
 *   4  type   u16  1 header, 2 alloc, 3 free
 *   6  rsvd   u16  0
 *   8  addr   u64  the block id (header: the slot count)
 *  16  slot   u64  its slot (header: the log's format version)
 *  24  seq    u32  records before this one in the log
 *  28  crc    u32  zlib crc32 of bytes 0..27
 *
 * (little-endian: the log never leaves the host). Opening replays the log. A record cut
 * short at the end (a kill during the write) or a bad last record is the torn tail: the
 * log is truncated to the last good record, and the change it held was never answered.
 * A bad record anywhere else (followed by good ones, or by more damage: a crash tears
 * one record at most), or a record whose crc is right but that contradicts the map, is
 * corruption, not a tear: open fails with -EBADMSG, and the log is left as it is for a
 * human. When the log holds more than 4 records per live block (and more than 1024),
 * open and free rewrite it as the live map: a new file, fdatasync, rename over the old
 * one, fsync of the directory.
 */
#ifndef ODPEMU_BRICK_META_H
#define ODPEMU_BRICK_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"	/* struct brick_extent */

#define BRICK_META_MAGIC 0x4154454du	/* "META" */

struct brick_meta;

/* What open found in the log. */
struct brick_meta_report {
	uint64_t records;	/* good records replayed (the header included) */
	uint64_t torn_bytes;	/* bytes cut from the end (0: the log was whole) */
	bool created;		/* no log (or no whole header) existed: one was written */
	bool compacted;		/* the log was rewritten as the live map */
};

/* Open (or create) the log at path for a backing store of `slots` blocks (1 to 2^29). A
 * log made for another slot count is refused (-EINVAL): slots are positions in the file.
 * 0 or -errno (-EBADMSG: corrupt, the report says how far replay got; -EPROTONOSUPPORT:
 * another format version). rep may be NULL. */
int brick_meta_open(const char *path, uint64_t slots, struct brick_meta **out,
		    struct brick_meta_report *rep);
void brick_meta_close(struct brick_meta *m);

/* Allocate block `addr` in the lowest free slot: 0 and *slot, or -EINVAL (addr not
 * 2 MiB-aligned), -EEXIST, -ENOSPC, -ENOMEM, -EIO (the log could not be written:
 * nothing changed). Durable when it returns 0. */
int brick_meta_alloc(struct brick_meta *m, uint64_t addr, uint64_t *slot);
/* Free block `addr`: 0 and the slot it had, or -EINVAL, -ENOENT, -EIO. Durable on 0. */
int brick_meta_free(struct brick_meta *m, uint64_t addr, uint64_t *slot);
/* The slot of an allocated block: 0, or -EINVAL / -ENOENT. */
int brick_meta_lookup(const struct brick_meta *m, uint64_t addr, uint64_t *slot);
/* Is the slot allocated (to any id)? */
bool brick_meta_slot_used(const struct brick_meta *m, uint64_t slot);
uint64_t brick_meta_count(const struct brick_meta *m);
uint64_t brick_meta_slots(const struct brick_meta *m);

/* The allocated ids as extents (runs of consecutive 2 MiB ids), in address order,
 * starting at the first allocated id >= from: at most max extents into ext. Returns the
 * count; *next is where the next call starts (the end of the last run returned), 0 when
 * none are left. (Each extent is a whole run, cut only where `from` falls inside one: a
 * run never continues into the next call's first extent.) */
uint32_t brick_meta_extents(const struct brick_meta *m, uint64_t from,
			    struct brick_extent *ext, uint32_t max, uint64_t *next);

#endif
