/* SPDX-License-Identifier: MIT */
/*
 * The 64-bit IO page table entry (part of the public API, see iopt.h).
 *
 *   63                                12 11    6  5     4     3     2     1     0
 *  +------------------------------------+-------+-----+-----+-----+-----+-----+-----+
 *  | frame (leaf, block)                | rsvd  |TABLE|BLOCK|DIRTY| ACC |WRITE|PRES |
 *  +------------------------------------+-------+-----+-----+-----+-----+-----+-----+
 *
 * - A leaf (level 0) maps one 4 KiB page; a block (level 1, BLOCK set) maps 2 MiB.
 * - frame: an owner-defined 52-bit page frame number. The library never dereferences it: the
 *   host address of byte `va` is (frame << 12) + (va & 4095); page i of a block uses frame + i.
 *   The daemon stores the client's virtual address (or a handle to orphaned pages) there.
 * - PRESENT: the translation is valid and readable. WRITE: writes and atomics are allowed.
 * - ACCESSED, DIRTY: set by iopt_translate() (read / write or atomic), like hardware A/D bits;
 *   software-only, never set by the filler. A block's A/D bits cover all its 512 pages.
 * - TABLE: an interior entry (levels 1..3) pointing to the next-level table (bits 6..63 hold
 *   the 64-byte aligned pointer); never seen by callers.
 * - Bits 6..11 of leaf/block entries are reserved and zero.
 */
#ifndef ODPEMU_IOPT_PTE_H
#define ODPEMU_IOPT_PTE_H

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t iopt_pte_t;

#define IOPT_PTE_PRESENT	(1ull << 0)
#define IOPT_PTE_WRITE		(1ull << 1)
#define IOPT_PTE_ACCESSED	(1ull << 2)	/* software: set by translate */
#define IOPT_PTE_DIRTY		(1ull << 3)	/* software: set by write/atomic translate */
#define IOPT_PTE_BLOCK		(1ull << 4)	/* 2 MiB block at level 1 */
#define IOPT_PTE_TABLE		(1ull << 5)	/* interior: next-level table pointer */
#define IOPT_PTE_FLAGS		0xfffull
#define IOPT_PTE_FRAME_SHIFT	12

static inline bool iopt_pte_present(iopt_pte_t e) { return e & IOPT_PTE_PRESENT; }
static inline bool iopt_pte_writable(iopt_pte_t e) { return e & IOPT_PTE_WRITE; }
static inline bool iopt_pte_accessed(iopt_pte_t e) { return e & IOPT_PTE_ACCESSED; }
static inline bool iopt_pte_dirty(iopt_pte_t e) { return e & IOPT_PTE_DIRTY; }
static inline bool iopt_pte_block(iopt_pte_t e) { return e & IOPT_PTE_BLOCK; }
static inline bool iopt_pte_table(iopt_pte_t e) { return e & IOPT_PTE_TABLE; }
static inline uint64_t iopt_pte_frame(iopt_pte_t e) { return e >> IOPT_PTE_FRAME_SHIFT; }

/* A present leaf or block entry for `frame` with the given IOPT_PTE_* flag bits. */
static inline iopt_pte_t iopt_pte_make(uint64_t frame, uint64_t flags)
{
	return (frame << IOPT_PTE_FRAME_SHIFT) | (flags & IOPT_PTE_FLAGS) | IOPT_PTE_PRESENT;
}

#endif
