/* SPDX-License-Identifier: MIT */
/* Private layout of a domain and its tables; shared by the pagetable/ sources only. */
#ifndef ODPEMU_IOPT_INT_H
#define ODPEMU_IOPT_INT_H

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>

#include "iopt.h"

#define IOPT_LEVELS	4
#define IOPT_TOP	(IOPT_LEVELS - 1)
#define IOPT_ENTRIES	512
#define IOPT_PAGE_MASK	(IOPT_PAGE_SIZE - 1)
#define IOPT_PTR_MASK	(~0x3full)	/* tables are 64-byte aligned */

static_assert(IOPT_PAGE_SHIFT + 9 * IOPT_TOP + 8 == IOPT_VA_BITS, "47-bit, 9/9/9/8 levels");

/* One table: 512 entries readers walk lock-free, then a header only writers touch (under the
 * domain lock). Freed only after a grace period once unlinked (fence.c). */
struct iopt_table {
	_Atomic uint64_t e[IOPT_ENTRIES];
	struct iopt_table *retired_next;
	uint64_t pages;		/* present pages below this table */
	uint16_t live;		/* non-zero entries */
	uint8_t level;
};

static inline unsigned iopt_level_shift(int level) { return IOPT_PAGE_SHIFT + 9u * (unsigned)level; }
static inline uint64_t iopt_level_size(int level) { return 1ull << iopt_level_shift(level); }
static inline unsigned iopt_index(uint64_t va, int level)
{
	return (unsigned)(va >> iopt_level_shift(level)) & (IOPT_ENTRIES - 1);
}
static inline struct iopt_table *iopt_pte_ptr(uint64_t e)
{
	return (struct iopt_table *)(uintptr_t)(e & IOPT_PTR_MASK);
}
static inline uint64_t iopt_pte_of_table(struct iopt_table *t)
{
	return (uint64_t)(uintptr_t)t | IOPT_PTE_TABLE;
}
static inline uint64_t iopt_min(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t iopt_max(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Completed invalidations remembered for read_retry (a range log instead of one sequence
 * number, so an unmap elsewhere in an implicit domain does not fail unrelated faults). */
#define IOPT_INVAL_LOG 16
struct iopt_inval_rec {
	uint64_t va, end, seq;
};

struct iopt_ctr {
	_Atomic uint64_t page_faults, page_fault_pages, page_invalidations,
		page_invalidated_pages, page_prefetch, fault_merged, fault_races, fault_failed;
	_Atomic uint64_t table_bytes;
	/* IOPT_LAT_BUCKETS, made at the first fault answer (iopt_lat_record): most domains
	 * of a large host never fault, and 320 bytes each add up */
	_Atomic uint64_t *_Atomic lat;
};

struct iopt_req_int;

struct iopt {
	/* Level 3; only 256 entries used. NULL until the first fill (an idle ODP MR holds no
	 * table): set once under the lock with a release store, read with acquire. */
	struct iopt_table *_Atomic root;
	/* Bumped (release, under lock) after tables were unlinked: per-thread walk caches
	 * holding an older value are void (translate.c). id tells domains apart when one is
	 * freed and another allocated at the same address. */
	_Atomic uint64_t walk_gen;
	uint64_t id;
	uint64_t start, end;		/* page-aligned window */
	uint64_t fault_around, max_need;
	struct iopt_fq *fq;
	void *owner;

	pthread_mutex_t lock;		/* writers: tables, seq, log, retired */
	uint64_t seq;			/* invalidations begun */
	unsigned inval_active;		/* begun, not ended */
	/* The last IOPT_INVAL_LOG invalidations, made at the first one; one that found no
	 * memory for it is unlogged: snapshots older than unlogged_seq are stale. */
	struct iopt_inval_rec *log;
	uint64_t unlogged_seq;
	struct iopt_table *retired;	/* unlinked, awaiting a grace period */

	struct iopt_req_int *reqs;	/* live requests of this domain, under fq->lock */
	unsigned reqs_inflight;		/* popped by a handler, under fq->lock */

	pthread_mutex_t fence_lock;	/* one grace period at a time */
	/* Relaxed atomics of the fault and invalidation paths: they share the lines of those
	 * writers' state, away from the line the DMA brackets touch. */
	struct iopt_ctr ctr;
	/* The fence (fence.c): a bracket reads epoch and adds to inflight[epoch], so the two
	 * share one line, the only one a DMA writes. A domain is 384 bytes. */
	alignas(64) _Atomic unsigned epoch;
	_Atomic unsigned long inflight[2];
};

/* table.c */
struct iopt_table *iopt_table_alloc(struct iopt *d, int level);
void iopt_table_retire(struct iopt *d, struct iopt_table *t);
void iopt_walk_gen_bump(struct iopt *d);
void iopt_table_free_tree(struct iopt *d, struct iopt_table *t);
struct iopt_table *iopt_table_split_block(struct iopt *d, uint64_t block);

/* walk.c: visit present translations of [va, end) under the domain lock. fn gets the first
 * page's va, the number of pages, the entry slot and its value, and the page index of va
 * inside the entry (non-zero only for blocks). */
typedef int (*iopt_visit_fn)(void *arg, uint64_t va, uint64_t pages, _Atomic uint64_t *slot,
	uint64_t e, uint64_t sub);
int iopt_walk_present(struct iopt *d, uint64_t va, uint64_t end, iopt_visit_fn fn, void *arg);

/* fence.c */
bool iopt_fence_held_here(const struct iopt *d);
void iopt_fence_wait(struct iopt *d);
void iopt_reclaim_list(struct iopt *d, struct iopt_table *list);

/* fill.c: the fenced fill used by iopt_fill and request completion. */
long iopt_fill_locked(struct iopt *d, const struct iopt_map *maps, unsigned n, uint64_t seq);
bool iopt_seq_stale_locked(const struct iopt *d, uint64_t va, uint64_t end, uint64_t seq);

/* range.c */
int iopt_check_range(const struct iopt *d, uint64_t va, uint64_t len, uint64_t *s, uint64_t *e);

/* counters.c */
void iopt_ctr_add(_Atomic uint64_t *c, uint64_t n);
void iopt_lat_record(struct iopt *d, uint64_t ns);

/* fault.c: attach a domain to its queue; cancel its queued requests (-EBUSY, cancelling
 * nothing, while a handler holds one of them). */
void iopt_fq_attach(struct iopt_fq *fq, int delta);
int iopt_fq_cancel_domain(struct iopt *d);

#endif
