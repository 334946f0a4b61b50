/* SPDX-License-Identifier: MIT */
/*
 * iopt_translate: the data-path lookup. Lock-free: it walks tables with acquire loads (a
 * table is published with a release store after it is initialised) and sets A/D bits with a
 * CAS only when they are not set yet, as a hardware walker does. Tables cannot be freed under
 * it while the caller is inside a DMA bracket (fence.c).
 *
 * Each thread keeps a walk cache (the paging-structure caches of an x86 MMU or an IOMMU):
 * the leaf table of the last 2 MiB and the level-1 table of the last 1 GiB it walked. It
 * caches table pointers only, never entries, so fills and invalidations of entries are seen
 * at once; it is void when the domain's walk_gen moved (tables were unlinked, table.c). The
 * generation is read after dma_begin and before the walk that fills the cache, so a cache
 * entry is never newer than the tables it names.
 */
#include "iopt_int.h"

struct walk_cache {
	const struct iopt *d;
	uint64_t id, gen;
	uint64_t l0_base, l1_base;		/* UINT64_MAX: empty */
	struct iopt_table *l0, *l1;
};

/* initial-exec: one fs-relative load, even if the library ends up in a shared object. */
static _Thread_local struct walk_cache wc
	__attribute__((tls_model("initial-exec"))) = { .l0_base = UINT64_MAX,
						       .l1_base = UINT64_MAX };

struct xl {
	uint64_t need, want;		/* entry bits required / required + A/D to set */
	uint64_t ehost, elen;		/* the open extent, kept in registers until it ends */
	struct iopt_xlate *x;
};

/* Slow path of an entry check: set missing A/D bits. false: the entry is insufficient. */
static bool mark(_Atomic uint64_t *slot, uint64_t e, const struct xl *c)
{
	for (;;) {
		if ((e & c->need) != c->need)
			return false;
		if ((e & c->want) == c->want)
			return true;
		if (atomic_compare_exchange_weak_explicit(slot, &e, e | c->want,
			memory_order_acquire, memory_order_acquire))
			return true;
	}
}

static inline bool entry_ok(_Atomic uint64_t *slot, uint64_t e, const struct xl *c)
{
	return (e & c->want) == c->want || mark(slot, e, c);
}

/* Close an extent into x; false when x is full (the last slot is kept for close_extent). */
static inline bool push_extent(struct iopt_xlate *x, uint64_t host, uint64_t len)
{
	if (x->n == IOPT_XLATE_MAX - 1)
		return false;
	x->ext[x->n].host = host;
	x->ext[x->n++].len = len;
	return true;
}

/* Append [host, host+len): grow the open extent when contiguous, else close it into x
 * (false when that would make more than IOPT_XLATE_MAX extents). */
static inline bool emit(struct xl *c, uint64_t host, uint64_t len)
{
	if (c->ehost + c->elen == host) {
		c->elen += len;
		return true;
	}
	if (c->elen && !push_extent(c->x, c->ehost, c->elen))
		return false;
	c->ehost = host;
	c->elen = len;
	return true;
}

static inline void close_extent(struct xl *c)
{
	if (c->elen) {
		c->x->ext[c->x->n].host = c->ehost;
		c->x->ext[c->x->n++].len = c->elen;
	}
}

static int miss(struct iopt_xlate *x, uint64_t cur, uint64_t e)
{
	x->miss = cur & ~IOPT_PAGE_MASK;
	x->miss_present = iopt_pte_present(e);
	return -EFAULT;
}

static inline uint64_t entry_host(uint64_t e)
{
	return e & ~IOPT_PTE_FLAGS;	/* frame << 12 */
}

/* The level-1 table of va by a walk from the root, or NULL if an upper level is empty. */
static struct iopt_table *walk_to_l1(const struct iopt *d, uint64_t va)
{
	struct iopt_table *root = atomic_load_explicit(&d->root, memory_order_acquire);
	uint64_t e;

	if (!root)
		return NULL;
	e = atomic_load_explicit(&root->e[iopt_index(va, 3)], memory_order_acquire);
	if (!iopt_pte_table(e))
		return NULL;
	e = atomic_load_explicit(&iopt_pte_ptr(e)->e[iopt_index(va, 2)], memory_order_acquire);
	return iopt_pte_table(e) ? iopt_pte_ptr(e) : NULL;
}

/* The level-1 entry of va: through this thread's cache, else by a walk that refills it.
 * *leaf gets the leaf table when the entry is one (from the cache without touching the
 * level-1 table). Returns 0 for an empty upper level. */
static inline uint64_t l1_entry(const struct iopt *d, uint64_t va, _Atomic uint64_t **slot,
	struct iopt_table **leaf)
{
	uint64_t b0 = va & ~(IOPT_BLOCK_SIZE - 1), b1 = va & ~(iopt_level_size(2) - 1);
	struct iopt_table *l1;
	uint64_t e;

	if (b0 == wc.l0_base) {
		*leaf = wc.l0;
		return IOPT_PTE_TABLE;
	}
	l1 = b1 == wc.l1_base ? wc.l1 : walk_to_l1(d, va);
	*leaf = NULL;
	*slot = NULL;
	if (!l1)
		return 0;
	wc.l1 = l1;
	wc.l1_base = b1;
	*slot = &l1->e[iopt_index(va, 1)];
	e = atomic_load_explicit(*slot, memory_order_acquire);
	if (iopt_pte_table(e)) {
		*leaf = iopt_pte_ptr(e);
		wc.l0 = *leaf;
		wc.l0_base = b0;
	}
	return e;
}

/* Whole pages from cur (page aligned) whose A/D bits need no update: a load, a test and an
 * add each while the host pages stay contiguous, the common case of a DMA into a present
 * buffer. Returns how many of the next n pages it consumed (fewer at a page it leaves to
 * the general step: a miss, A/D to set, or a new extent when x is full). */
static inline uint64_t leaves_fast(struct iopt_table *t, uint64_t cur, uint64_t n, struct xl *c)
{
	_Atomic uint64_t *slot = &t->e[iopt_index(cur, 0)];
	uint64_t ehost = c->ehost, tail = c->ehost + c->elen, i;

	for (i = 0; i < n; i++) {
		/* acquire: pairs with fill's release, so the host page the frame names is
		 * seen as prepared by whoever resolved it. */
		uint64_t e = atomic_load_explicit(&slot[i], memory_order_acquire);

		if ((e & c->want) != c->want)
			break;
		if (entry_host(e) != tail) {
			if (tail != ehost && !push_extent(c->x, ehost, tail - ehost))
				break;
			ehost = tail = entry_host(e);
		}
		tail += IOPT_PAGE_SIZE;
	}
	c->ehost = ehost;
	c->elen = tail - ehost;
	return i;
}

/* Bytes of one leaf table from cur up to end (at most the table's 2 MiB). Returns the new
 * cursor; *rc set on a miss or full extents. Pages the fast loop declines (the first of an
 * extent, a partial page, A/D bits to set, a miss) take one general step each. */
static inline uint64_t leaves(struct iopt_table *t, uint64_t cur, uint64_t end,
	struct xl *c, int *rc)
{
	uint64_t stop = iopt_min((cur | (IOPT_BLOCK_SIZE - 1)) + 1, end);

	while (cur < stop) {
		_Atomic uint64_t *slot;
		uint64_t e, next;

		if (!(cur & IOPT_PAGE_MASK)) {
			cur += leaves_fast(t, cur, (stop - cur) >> IOPT_PAGE_SHIFT, c)
				<< IOPT_PAGE_SHIFT;
			if (cur == stop)
				break;
		}
		slot = &t->e[iopt_index(cur, 0)];
		e = atomic_load_explicit(slot, memory_order_acquire);
		next = iopt_min((cur | IOPT_PAGE_MASK) + 1, stop);
		if (!entry_ok(slot, e, c)) {
			*rc = miss(c->x, cur, e);
			return cur;
		}
		if (!emit(c, entry_host(e) + (cur & IOPT_PAGE_MASK), next - cur)) {
			*rc = -E2BIG;
			return cur;
		}
		cur = next;
	}
	return cur;
}

/* One level-1 span (at most 2 MiB) from cur: a leaf table, a block, or a miss. */
static inline uint64_t span(const struct iopt *d, uint64_t cur, uint64_t end, struct xl *c,
	int *rc)
{
	_Atomic uint64_t *slot = NULL;
	struct iopt_table *leaf;
	uint64_t e = l1_entry(d, cur, &slot, &leaf), next, sub;

	if (leaf)
		return leaves(leaf, cur, end, c, rc);
	if (!slot || !entry_ok(slot, e, c)) {	/* empty, or an insufficient block */
		*rc = miss(c->x, cur, e);
		return cur;
	}
	next = iopt_min((cur | (IOPT_BLOCK_SIZE - 1)) + 1, end);
	sub = cur & (IOPT_BLOCK_SIZE - 1);
	if (!emit(c, entry_host(e) + sub, next - cur)) {
		*rc = -E2BIG;
		return cur;
	}
	return next;
}

static uint64_t need_bits(unsigned access)
{
	return access == IOPT_READ ? IOPT_PTE_PRESENT : IOPT_PTE_PRESENT | IOPT_PTE_WRITE;
}

static uint64_t set_bits(unsigned access)
{
	return access == IOPT_READ ? IOPT_PTE_ACCESSED : IOPT_PTE_ACCESSED | IOPT_PTE_DIRTY;
}

/* Make this thread's walk cache usable for d: keep it if it is d's and current. */
static inline void walk_cache_enter(const struct iopt *d)
{
	uint64_t gen = atomic_load_explicit(&d->walk_gen, memory_order_acquire);

	if (wc.d == d && wc.id == d->id && wc.gen == gen)
		return;
	wc = (struct walk_cache){ d, d->id, gen, UINT64_MAX, UINT64_MAX, NULL, NULL };
}

/* The TLB-hit case: [va, va+len) inside one page of the cached leaf table, or inside one
 * block of the cached level-1 table, A/D already set. false: take the general path (which
 * handles these cases too, only slower). */
static inline bool cached_hit(uint64_t va, uint64_t len, uint64_t want, struct iopt_xlate *x)
{
	uint64_t in_page = va & IOPT_PAGE_MASK, in_block = va & (IOPT_BLOCK_SIZE - 1), e, host;

	if (len <= IOPT_PAGE_SIZE - in_page && va - in_block == wc.l0_base) {
		e = atomic_load_explicit(&wc.l0->e[iopt_index(va, 0)], memory_order_acquire);
		host = entry_host(e) + in_page;
	} else if (len <= IOPT_BLOCK_SIZE - in_block &&
		   (va & ~(iopt_level_size(2) - 1)) == wc.l1_base) {
		e = atomic_load_explicit(&wc.l1->e[iopt_index(va, 1)], memory_order_acquire);
		if (!iopt_pte_block(e))
			return false;
		host = entry_host(e) + in_block;
	} else {
		return false;
	}
	if ((e & want) != want)
		return false;
	x->ext[0].host = host;
	x->ext[0].len = len;
	x->n = 1;
	x->done = len;
	return true;
}

static inline int check_args(const struct iopt *d, uint64_t va, uint64_t len, unsigned access)
{
	if (len == 0 || va + len < va || (access != IOPT_READ && access != IOPT_WRITE &&
	    access != IOPT_ATOMIC))
		return -EINVAL;
	if (va < d->start || va + len > d->end)
		return -ERANGE;
	return 0;
}

/* The general path: span by span (2 MiB each) through the walk cache or a walk. Kept out of
 * line so the cached hit in iopt_translate saves no registers. */
static __attribute__((noinline)) int translate_walk(struct iopt *d, uint64_t va, uint64_t len,
	uint64_t need, uint64_t want, struct iopt_xlate *x)
{
	struct xl c = { need, want, 0, 0, x };
	uint64_t cur = va, end = va + len;
	int rc = 0;

	x->n = 0;
	while (cur < end && !rc)
		cur = span(d, cur, end, &c, &rc);
	close_extent(&c);
	x->done = cur - va;
	return rc;
}

int iopt_translate(struct iopt *d, uint64_t va, uint64_t len, unsigned access,
	struct iopt_xlate *x)
{
	uint64_t need = need_bits(access), want = need | set_bits(access);

	int rc = check_args(d, va, len, access);

	if (rc) {
		x->n = 0;
		x->done = 0;
		return rc;
	}
	walk_cache_enter(d);
	if (cached_hit(va, len, want, x))
		return 0;
	return translate_walk(d, va, len, need, want, x);
}
