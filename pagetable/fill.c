/* SPDX-License-Identifier: MIT */
/*
 * Fill: install host runs, under the domain lock, only if no overlapping invalidation began
 * since the caller's read_begin snapshot (mmu_interval_read_begin / mmu_interval_read_retry:
 * the handler resolves without the lock, then checks the sequence under it before
 * installing, so a translation resolved before an unmap is never installed after it).
 */
#include "iopt_int.h"

/* Snapshot = 2 * invalidations begun, plus 1 while one is in progress (odd = unusable, as
 * the kernel's odd invalidate_seq). */
uint64_t iopt_read_begin(struct iopt *d)
{
	uint64_t s;

	pthread_mutex_lock(&d->lock);
	s = 2 * d->seq + (d->inval_active ? 1 : 0);
	pthread_mutex_unlock(&d->lock);
	return s;
}

/* read_retry for [va, end): true if an invalidation is in progress, the snapshot was taken
 * during one, or one begun after it overlaps the range (or has left the log). */
bool iopt_seq_stale_locked(const struct iopt *d, uint64_t va, uint64_t end, uint64_t seq)
{
	uint64_t begun = seq / 2;

	if (seq == IOPT_SEQ_NONE)
		return false;
	if (d->inval_active || (seq & 1) || begun > d->seq)
		return true;
	if (d->seq - begun > IOPT_INVAL_LOG || begun < d->unlogged_seq)
		return true;
	for (uint64_t s = begun + 1; s <= d->seq; s++) {
		const struct iopt_inval_rec *r = &d->log[s % IOPT_INVAL_LOG];

		if (r->va < end && va < r->end)
			return true;
	}
	return false;
}

static int check_map(const struct iopt *d, const struct iopt_map *m)
{
	if (((m->va | m->len | m->host) & IOPT_PAGE_MASK) || m->len == 0 ||
	    m->va + m->len < m->va || m->host + m->len < m->host ||
	    !(m->perm & IOPT_READ) || (m->perm & ~(unsigned)(IOPT_READ | IOPT_WRITE)))
		return -EINVAL;
	if (m->va < d->start || m->va + m->len > d->end)
		return -ERANGE;
	return 0;
}

/* A present page whose frame differs from the run's: the host changed the mapping
 * without telling us (or the caller resolved stale data without a snapshot). */
static int conflict_visit(void *arg, uint64_t va, uint64_t pages, _Atomic uint64_t *slot,
	uint64_t e, uint64_t sub)
{
	const struct iopt_map *m = arg;
	uint64_t want = (m->host + (va - m->va)) >> IOPT_PAGE_SHIFT;

	(void)pages;
	(void)slot;
	return iopt_pte_frame(e) + sub != want ? -EEXIST : 0;
}

static int check_maps_locked(struct iopt *d, const struct iopt_map *maps, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int rc = check_map(d, &maps[i]);

		for (unsigned j = 0; !rc && j < i; j++)
			if (maps[j].va < maps[i].va + maps[i].len &&
			    maps[i].va < maps[j].va + maps[j].len)
				rc = -EINVAL;
		if (!rc)
			rc = iopt_walk_present(d, maps[i].va, maps[i].va + maps[i].len,
				conflict_visit, (void *)&maps[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static long fill_leaves(struct iopt_table *t, uint64_t va, uint64_t end,
	const struct iopt_map *m, uint64_t flags);

/* Present entry e gains WRITE if asked; its A/D bits stay. CAS: translate sets A/D. */
static void upgrade(_Atomic uint64_t *slot, uint64_t flags)
{
	uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);

	if (!(flags & IOPT_PTE_WRITE) || iopt_pte_writable(e))
		return;
	while (!atomic_compare_exchange_weak_explicit(slot, &e, e | IOPT_PTE_WRITE,
		memory_order_release, memory_order_relaxed))
		;
}

/* A whole 2 MiB slot of level 1 becomes one block. A leaf table there (same frames: checked)
 * is replaced and retired; its dirty bits fold into the block's. */
static long fill_block(struct iopt *d, struct iopt_table *t, _Atomic uint64_t *slot,
	uint64_t base, const struct iopt_map *m, uint64_t flags)
{
	uint64_t frame = (m->host + (base - m->va)) >> IOPT_PAGE_SHIFT;
	uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);
	uint64_t bflags = flags | IOPT_PTE_BLOCK;
	long added = IOPT_ENTRIES;

	if (iopt_pte_present(e)) {
		upgrade(slot, flags);
		return 0;
	}
	if (iopt_pte_table(e)) {
		struct iopt_table *leaf = iopt_pte_ptr(e);
		uint64_t old = 0;

		for (unsigned i = 0; i < IOPT_ENTRIES; i++)
			old |= atomic_load_explicit(&leaf->e[i], memory_order_relaxed);
		/* A read-only block would take WRITE away from some pages: keep the leaves. */
		if ((old & IOPT_PTE_WRITE) && !(flags & IOPT_PTE_WRITE))
			return fill_leaves(leaf, base, base + IOPT_BLOCK_SIZE, m, flags);
		/* A DMA still in flight may set A/D in the old table after this read: count a
		 * writable leaf as dirty, a present one as accessed (dirty stays a superset). */
		bflags |= old & (IOPT_PTE_DIRTY | IOPT_PTE_ACCESSED);
		if (old & IOPT_PTE_WRITE)
			bflags |= IOPT_PTE_DIRTY;
		if (old & IOPT_PTE_PRESENT)
			bflags |= IOPT_PTE_ACCESSED;
		added -= (long)leaf->pages;
		iopt_table_retire(d, leaf);
	} else {
		t->live++;
	}
	/* release: a reader that sees the block needs nothing else, but keep stores ordered
	 * before the waiters' wake-up for those who read without a bracket. */
	atomic_store_explicit(slot, iopt_pte_make(frame, bflags), memory_order_release);
	return added;
}

/* The next-level table under slot, created (or split from a block) if needed. */
static struct iopt_table *child_for_fill(struct iopt *d, struct iopt_table *t,
	_Atomic uint64_t *slot, int level)
{
	uint64_t e = atomic_load_explicit(slot, memory_order_relaxed);
	struct iopt_table *c;

	if (iopt_pte_table(e))
		return iopt_pte_ptr(e);
	c = iopt_pte_block(e) ? iopt_table_split_block(d, e) : iopt_table_alloc(d, level - 1);
	if (!c)
		return NULL;
	if (!e)
		t->live++;
	/* release: the zeroed or split entries are visible before the pointer to them. */
	atomic_store_explicit(slot, iopt_pte_of_table(c), memory_order_release);
	return c;
}

static long fill_leaves(struct iopt_table *t, uint64_t va, uint64_t end,
	const struct iopt_map *m, uint64_t flags)
{
	long added = 0;

	for (; va < end; va += IOPT_PAGE_SIZE) {
		_Atomic uint64_t *slot = &t->e[iopt_index(va, 0)];
		uint64_t frame = (m->host + (va - m->va)) >> IOPT_PAGE_SHIFT;

		if (atomic_load_explicit(slot, memory_order_relaxed)) {
			upgrade(slot, flags);
			continue;
		}
		atomic_store_explicit(slot, iopt_pte_make(frame, flags), memory_order_release);
		t->live++;
		added++;
	}
	t->pages += (uint64_t)added;
	return added;
}

static long fill_table(struct iopt *d, struct iopt_table *t, uint64_t va, uint64_t end,
	const struct iopt_map *m, uint64_t flags)
{
	int level = t->level;
	uint64_t size = iopt_level_size(level);
	long added = 0;

	if (level == 0)
		return fill_leaves(t, va, end, m, flags);
	while (va < end) {
		_Atomic uint64_t *slot = &t->e[iopt_index(va, level)];
		uint64_t base = va & ~(size - 1), next = iopt_min(base + size, end);
		long n;

		if (level == 1 && va == base && next == base + size)
			n = fill_block(d, t, slot, base, m, flags);
		else {
			struct iopt_table *c = child_for_fill(d, t, slot, level);

			n = c ? fill_table(d, c, va, next, m, flags) : -ENOMEM;
		}
		if (n < 0) {
			t->pages += (uint64_t)added;
			return n;
		}
		added += n;
		va = next;
	}
	t->pages += (uint64_t)added;
	return added;
}

long iopt_fill_locked(struct iopt *d, const struct iopt_map *maps, unsigned n, uint64_t seq)
{
	struct iopt_table *retired = d->retired;
	long total = 0;
	int rc = check_maps_locked(d, maps, n);

	for (unsigned i = 0; !rc && i < n; i++)
		if (iopt_seq_stale_locked(d, maps[i].va, maps[i].va + maps[i].len, seq))
			rc = -EAGAIN;
	if (rc)
		return rc;
	if (n && !d->root) {
		struct iopt_table *root = iopt_table_alloc(d, IOPT_TOP);

		if (!root)
			return -ENOMEM;
		atomic_store_explicit(&d->root, root, memory_order_release);
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t flags = (maps[i].perm & IOPT_WRITE) ? IOPT_PTE_WRITE : 0;
		long added = fill_table(d, d->root, maps[i].va, maps[i].va + maps[i].len,
			&maps[i], flags);

		if (added < 0) {
			total = added;
			break;
		}
		total += added;
	}
	if (d->retired != retired)	/* leaf tables merged into blocks */
		iopt_walk_gen_bump(d);
	return total;
}

long iopt_fill(struct iopt *d, const struct iopt_map *maps, unsigned n, uint64_t seq)
{
	long rc;

	if (!n || !maps)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	rc = iopt_fill_locked(d, maps, n, seq);
	pthread_mutex_unlock(&d->lock);
	return rc;
}
