/* SPDX-License-Identifier: MIT */
/* Read-only visit of the present translations of a range (caller holds the domain lock, so
 * no table it reaches can be unlinked meanwhile). */
#include "iopt_int.h"

static int walk_table(struct iopt_table *t, int level, uint64_t va, uint64_t end,
	iopt_visit_fn fn, void *arg)
{
	uint64_t size = iopt_level_size(level);

	while (va < end) {
		_Atomic uint64_t *slot = &t->e[iopt_index(va, level)];
		uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);
		uint64_t base = va & ~(size - 1), next = iopt_min(base + size, end);
		int rc = 0;

		if (iopt_pte_table(e))
			rc = walk_table(iopt_pte_ptr(e), level - 1, va, next, fn, arg);
		else if (iopt_pte_present(e))
			rc = fn(arg, va, (next - va) >> IOPT_PAGE_SHIFT, slot, e,
				(va - base) >> IOPT_PAGE_SHIFT);
		if (rc)
			return rc;
		va = next;
	}
	return 0;
}

int iopt_walk_present(struct iopt *d, uint64_t va, uint64_t end, iopt_visit_fn fn, void *arg)
{
	return d->root ? walk_table(d->root, IOPT_TOP, va, end, fn, arg) : 0;
}
