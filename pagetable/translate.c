/* SPDX-License-Identifier: MIT */
/*
 * iopt_translate: the data-path lookup. Lock-free: it walks tables with acquire loads (a
 * table is published with a release store after it is initialised) and sets A/D bits with a
 * CAS only when they are not set yet, as a hardware walker does. Tables cannot be freed under
 * it while the caller is inside a DMA bracket (fence.c).
 */
#include "iopt_int.h"

struct xl {
	uint64_t need, set;	/* entry bits required / to set */
	uint64_t ehost, elen;	/* the open extent, kept in registers until it ends */
	struct iopt_xlate *x;
};

/* Check e (loaded from slot) for the access and set its A/D bits. false: insufficient. */
static inline bool mark(_Atomic uint64_t *slot, uint64_t e, const struct xl *c)
{
	for (;;) {
		if ((e & c->need) != c->need)
			return false;
		if ((e & c->set) == c->set)
			return true;
		if (atomic_compare_exchange_weak_explicit(slot, &e, e | c->set,
			memory_order_acquire, memory_order_acquire))
			return true;
	}
}

/* Append [host, host+len): grow the open extent when contiguous, else close it into x
 * (false when that would make more than IOPT_XLATE_MAX extents). */
static inline bool emit(struct xl *c, uint64_t host, uint64_t len)
{
	if (c->ehost + c->elen == host) {
		c->elen += len;
		return true;
	}
	if (c->elen) {
		if (c->x->n == IOPT_XLATE_MAX - 1)
			return false;
		c->x->ext[c->x->n].host = c->ehost;
		c->x->ext[c->x->n++].len = c->elen;
	}
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

static inline uint64_t host_of(uint64_t e, uint64_t sub_pages, uint64_t va)
{
	return ((iopt_pte_frame(e) + sub_pages) << IOPT_PAGE_SHIFT) + (va & IOPT_PAGE_MASK);
}

static int miss(struct iopt_xlate *x, uint64_t va, uint64_t cur, uint64_t e)
{
	(void)va;
	x->miss = cur & ~IOPT_PAGE_MASK;
	x->miss_present = iopt_pte_present(e);
	return -EFAULT;
}

/* The level-1 slot of va, or NULL if an upper level is empty. */
static inline _Atomic uint64_t *walk_l1(const struct iopt *d, uint64_t va)
{
	uint64_t e = atomic_load_explicit(&d->root->e[iopt_index(va, 3)], memory_order_acquire);

	if (!iopt_pte_table(e))
		return NULL;
	e = atomic_load_explicit(&iopt_pte_ptr(e)->e[iopt_index(va, 2)], memory_order_acquire);
	if (!iopt_pte_table(e))
		return NULL;
	return &iopt_pte_ptr(e)->e[iopt_index(va, 1)];
}

/* Pages of one leaf table from cur up to end (at most the table's 2 MiB). Returns the new
 * cursor; *rc set on a miss or full extents. */
static inline uint64_t leaves(struct iopt_table *t, uint64_t va, uint64_t cur, uint64_t end,
	struct xl *c, int *rc)
{
	uint64_t stop = iopt_min((cur | (IOPT_BLOCK_SIZE - 1)) + 1, end);

	while (cur < stop) {
		_Atomic uint64_t *slot = &t->e[iopt_index(cur, 0)];
		/* acquire: pairs with fill's release, so the host page the frame names is
		 * seen as prepared by whoever resolved it. */
		uint64_t e = atomic_load_explicit(slot, memory_order_acquire);
		uint64_t next = iopt_min((cur | IOPT_PAGE_MASK) + 1, stop);

		if (!mark(slot, e, c)) {
			*rc = miss(c->x, va, cur, e);
			return cur;
		}
		if (!emit(c, host_of(e, 0, cur), next - cur)) {
			*rc = -E2BIG;
			return cur;
		}
		cur = next;
	}
	return cur;
}

static uint64_t need_bits(unsigned access)
{
	return access == IOPT_READ ? IOPT_PTE_PRESENT : IOPT_PTE_PRESENT | IOPT_PTE_WRITE;
}

static uint64_t set_bits(unsigned access)
{
	return access == IOPT_READ ? IOPT_PTE_ACCESSED : IOPT_PTE_ACCESSED | IOPT_PTE_DIRTY;
}

int iopt_translate(struct iopt *d, uint64_t va, uint64_t len, unsigned access,
	struct iopt_xlate *x)
{
	struct xl c = { need_bits(access), set_bits(access), 0, 0, x };
	uint64_t cur = va, end = va + len;
	int rc = 0;

	x->n = 0;
	x->done = 0;
	if (len == 0 || end < va || (access != IOPT_READ && access != IOPT_WRITE &&
	    access != IOPT_ATOMIC))
		return -EINVAL;
	if (va < d->start || end > d->end)
		return -ERANGE;
	while (cur < end && !rc) {
		_Atomic uint64_t *slot = walk_l1(d, cur);
		uint64_t e = slot ? atomic_load_explicit(slot, memory_order_acquire) : 0;

		if (iopt_pte_table(e)) {
			cur = leaves(iopt_pte_ptr(e), va, cur, end, &c, &rc);
		} else if (!mark(slot, e, &c)) {	/* empty or a block (level 1) */
			rc = miss(x, va, cur, e);
		} else {
			uint64_t next = iopt_min((cur | (IOPT_BLOCK_SIZE - 1)) + 1, end);
			uint64_t sub = (cur >> IOPT_PAGE_SHIFT) & (IOPT_ENTRIES - 1);

			if (!emit(&c, host_of(e, sub, cur), next - cur))
				rc = -E2BIG;
			else
				cur = next;
		}
	}
	close_extent(&c);
	x->done = cur - va;
	return rc;
}
