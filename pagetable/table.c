/* SPDX-License-Identifier: MIT */
/* Table memory: allocation, retirement (unlinked, awaiting a grace period) and freeing. */
#include <stdlib.h>
#include <string.h>

#include "iopt_int.h"

/* 64-byte alignment keeps bits 0..5 of a table entry free for IOPT_PTE_* flags. */
#define TABLE_ALIGN 64
#define TABLE_BYTES ((sizeof(struct iopt_table) + TABLE_ALIGN - 1) & ~(size_t)(TABLE_ALIGN - 1))

struct iopt_table *iopt_table_alloc(struct iopt *d, int level)
{
	struct iopt_table *t = aligned_alloc(TABLE_ALIGN, TABLE_BYTES);

	if (!t)
		return NULL;
	/* Zero entries are empty; the table becomes visible to readers only through a
	 * release store of its pointer, after this. */
	memset(t, 0, sizeof(*t));
	t->level = (uint8_t)level;
	iopt_ctr_add(&d->ctr.table_bytes, TABLE_BYTES);
	return t;
}

void iopt_table_retire(struct iopt *d, struct iopt_table *t)
{
	t->retired_next = d->retired;
	d->retired = t;
}

/* Called under the lock after the stores that unlinked tables (never before them: a walker
 * that sees the new generation must also see the unlinks). Void every per-thread walk cache
 * of d; the tables are freed only after a later grace period, whose RMW orders this bump
 * before every bracket it does not wait for. */
void iopt_walk_gen_bump(struct iopt *d)
{
	atomic_fetch_add_explicit(&d->walk_gen, 1, memory_order_release);
}

/* Free t and every table below it. Readers may still hold pointers into a table that was
 * unlinked; callers free only after a grace period (fence.c) or at destroy. */
void iopt_table_free_tree(struct iopt *d, struct iopt_table *t)
{
	if (t->level > 0)
		for (unsigned i = 0; i < IOPT_ENTRIES; i++) {
			uint64_t e = atomic_load_explicit(&t->e[i], memory_order_relaxed);

			if (iopt_pte_table(e))
				iopt_table_free_tree(d, iopt_pte_ptr(e));
		}
	iopt_ctr_add(&d->ctr.table_bytes, -(uint64_t)TABLE_BYTES);
	free(t);
}

/* A leaf table holding the 512 pages of block entry `block`, each inheriting its
 * permission and A/D bits (the block's dirty bit covered all of them). */
struct iopt_table *iopt_table_split_block(struct iopt *d, uint64_t block)
{
	struct iopt_table *t = iopt_table_alloc(d, 0);
	uint64_t flags = block & IOPT_PTE_FLAGS & ~IOPT_PTE_BLOCK;

	if (!t)
		return NULL;
	for (unsigned i = 0; i < IOPT_ENTRIES; i++)
		atomic_store_explicit(&t->e[i], iopt_pte_make(iopt_pte_frame(block) + i, flags),
			memory_order_relaxed);
	t->live = IOPT_ENTRIES;
	t->pages = IOPT_ENTRIES;
	return t;
}
