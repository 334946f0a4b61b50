/* SPDX-License-Identifier: MIT */
/*
 * store — the brick's blocks and their memory tier (docs/brick.md "Tiering").
 *
 * The backing file holds `slots` blocks of BRICK_BLOCK bytes, mapped MAP_SHARED once:
 * slot i lives at base + i * BRICK_BLOCK, and the brick registers that mapping with ODP,
 * so capacity is bounded by the file, not by memory. A block is in the memory tier when
 * its pages are resident (mincore), on file otherwise. The brick keeps its resident
 * memory within a budget by writing cold blocks back and dropping their pages (msync,
 * then MADV_DONTNEED): the NIC sees an invalidation, and the next remote access faults
 * the block in from the file again. Cold means: not mapped by any initiator (a mapped
 * block is pinned in memory: BRICK.md's map locks the block), oldest release first. The
 * brick never sees remote accesses (the NIC does them), so release time is all the
 * recency it has.
 */
#ifndef ODPEMU_BRICK_STORE_H
#define ODPEMU_BRICK_STORE_H

#include <stdbool.h>
#include <stdint.h>

#define BRICK_BLOCK (2ull << 20)

struct brick_store;

struct brick_store_stats {
	uint64_t slots;			/* blocks the file holds */
	uint64_t resident_bytes;	/* pages of the mapping in memory now (mincore) */
	uint64_t resident_blocks;	/* blocks with at least one page in memory */
	uint64_t pinned_blocks;		/* mapped by an initiator: never evicted */
	uint64_t evictions;		/* blocks written back and dropped, ever */
	uint64_t written_back_bytes;	/* resident bytes of the evicted blocks, ever */
};

/* Map path (created with `bytes` when missing or shorter; bytes 0: the file's size,
 * which must then be a non-zero multiple of BRICK_BLOCK). mem_budget 0: no limit.
 * 0 or -errno (-EINVAL: a size that is not a whole number of blocks). */
int brick_store_open(const char *path, uint64_t bytes, uint64_t mem_budget,
		     struct brick_store **out);
void brick_store_close(struct brick_store *s);
uint64_t brick_store_slots(const struct brick_store *s);
/* The mapping: the whole file, and one block of it. */
void *brick_store_base(const struct brick_store *s);
void *brick_store_block(const struct brick_store *s, uint64_t slot);
/* A block mapped by an initiator (pinned), or released: releases order evictions. Pins
 * nest (several initiators may share a block). */
void brick_store_pin(struct brick_store *s, uint64_t slot);
void brick_store_release(struct brick_store *s, uint64_t slot);
/* Evict unpinned resident blocks, least recently released first, until the resident
 * bytes fit the budget less `reserve` (room for a block about to be mapped and faulted
 * in): msync (write-back) then MADV_DONTNEED. Returns the blocks evicted, or -errno
 * (msync failed: that block stays). */
int brick_store_enforce(struct brick_store *s, uint64_t reserve);
/* Write one block back (msync MS_SYNC): 0 or -errno. */
int brick_store_sync(struct brick_store *s, uint64_t slot);
/* Drop one block's contents (a FREE): its pages punched out of the file, so the next
 * ALLOC of the slot starts from zeros and the file's space is given back. */
int brick_store_discard(struct brick_store *s, uint64_t slot);
/* The counters, the memory ones from a scan of the whole file (which also marks the
 * blocks found empty as cold). */
void brick_store_stats(struct brick_store *s, struct brick_store_stats *st);

#endif
