/* SPDX-License-Identifier: MIT */
/*
 * regcache — the reference registration cache (include/odpemu/regcache.h).
 *
 * An entry is in up to three structures, all under cache->lock:
 *  - the index (interval tree of ranges) while lookups may find it ("indexed"); a stale
 *    entry is out of it and waits for its last put;
 *  - the LRU list while it is indexed and unreferenced: only these can be evicted;
 *  - the handle table from registration to deregistration (odpemu_regcache_decoherent
 *    finds entries by handle to mark them broken; lookup restores them).
 * So: indexed && refs == 0 <=> on the LRU list; !indexed implies refs > 0 (an unindexed
 * entry without references is released at once).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "interval.h"
#include "lib_int.h"
#include "odpemu/regcache.h"

struct rc_link {
	struct rc_link *prev, *next;
};

struct rc_entry {
	struct odpemu_regcache_entry pub;	/* first: the user's pointer is ours */
	struct odpemu_regcache *cache;
	struct interval_node node;		/* in cache->index while indexed */
	struct rc_link lru;			/* in cache->lru: indexed, unreferenced */
	struct rc_entry *hnext;			/* the handle table's chain */
	uint64_t z;				/* NOTIFY: written by the notifier, any time */
	void *watch;				/* NOTIFY: ops.watch's token */
	size_t refs;
	bool indexed;
	bool broken;				/* LEASE: decoherent marked it; the next
						 * lookup that finds it restores it */
};

struct odpemu_regcache {
	pthread_mutex_t lock;			/* everything below, and every callback */
	enum odpemu_regcache_backend backend;
	struct odpemu_regcache_ops ops;
	void *ctx;
	size_t max_entries, max_bytes;		/* SIZE_MAX: no limit */
	uintptr_t page_mask;
	struct interval_tree index;
	struct rc_link lru;			/* head: next to evict; tail: last put */
	struct rc_entry **table;		/* by handle: every registered entry */
	size_t table_size;			/* a power of two */
	unsigned table_shift;			/* 64 - log2(table_size) */
	size_t in_use;				/* entries with refs > 0 */
	struct odpemu_regcache_stats st;	/* entries, bytes: kept here too */
};

#define RC_TABLE_MIN_SHIFT 6

static struct rc_entry *entry_of(struct odpemu_regcache_entry *pub)
{
	return (struct rc_entry *)pub;
}

static struct rc_entry *entry_of_node(struct interval_node *n)
{
	return (struct rc_entry *)((char *)n - offsetof(struct rc_entry, node));
}

static struct rc_entry *entry_of_lru(struct rc_link *l)
{
	return (struct rc_entry *)((char *)l - offsetof(struct rc_entry, lru));
}

/* Callbacks may answer -errno or errno. */
static int op_err(int rc)
{
	return rc < 0 ? -rc : rc;
}

/* ---- LRU list ---- */

static void lru_append(struct odpemu_regcache *c, struct rc_entry *e)
{
	e->lru.prev = c->lru.prev;
	e->lru.next = &c->lru;
	c->lru.prev->next = &e->lru;
	c->lru.prev = &e->lru;
}

static void lru_del(struct rc_entry *e)
{
	e->lru.prev->next = e->lru.next;
	e->lru.next->prev = e->lru.prev;
	e->lru.prev = e->lru.next = NULL;
}

/* ---- handle table: chained, grows at load 1 (a failed growth only lengthens chains) ---- */

static size_t slot_of(const struct odpemu_regcache *c, const void *handle)
{
	return (size_t)(((uint64_t)(uintptr_t)handle * 0x9e3779b97f4a7c15ull) >> c->table_shift);
}

static void table_grow(struct odpemu_regcache *c)
{
	size_t old_size = c->table_size;
	struct rc_entry **old = c->table, **nu = calloc(old_size * 2, sizeof(*nu));

	if (!nu)
		return;
	c->table = nu;
	c->table_size = old_size * 2;
	c->table_shift--;
	for (size_t i = 0; i < old_size; i++) {
		struct rc_entry *e = old[i], *next;

		for (; e; e = next) {
			size_t s = slot_of(c, e->pub.handle);

			next = e->hnext;
			e->hnext = nu[s];
			nu[s] = e;
		}
	}
	free(old);
}

static void table_add(struct odpemu_regcache *c, struct rc_entry *e)
{
	size_t s;

	if (c->st.entries > c->table_size && c->table_shift > 1)
		table_grow(c);
	s = slot_of(c, e->pub.handle);
	e->hnext = c->table[s];
	c->table[s] = e;
}

static void table_del(struct odpemu_regcache *c, struct rc_entry *e)
{
	struct rc_entry **p = &c->table[slot_of(c, e->pub.handle)];

	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
}

/* ---- entries ---- */

static bool z_set(const struct odpemu_regcache *c, struct rc_entry *e)
{
	/* an atomic load: another agent (the daemon through process_vm_writev, a test
	 * thread) writes the word at any time, without our lock; acquire, so that nothing
	 * read after seeing it set can be older than the write (free on x86) */
	return c->backend == ODPEMU_REGCACHE_NOTIFY && __atomic_load_n(&e->z, __ATOMIC_ACQUIRE);
}

/* Deregister and free an entry that is neither indexed nor referenced. */
static void release(struct odpemu_regcache *c, struct rc_entry *e)
{
	c->ops.dereg(c->ctx, e->pub.handle);
	if (c->backend == ODPEMU_REGCACHE_NOTIFY)
		c->ops.unwatch(c->ctx, e->watch);
	table_del(c, e);
	c->st.deregistrations++;
	c->st.entries--;
	c->st.bytes -= e->pub.length;
	free(e);
}

/* Out of lookups: released now if unreferenced, else stale until its last put. */
static void drop(struct odpemu_regcache *c, struct rc_entry *e)
{
	interval_remove(&c->index, &e->node);
	e->indexed = false;
	if (!e->refs) {
		lru_del(e);
		release(c, e);
	}
}

static bool over_limits(const struct odpemu_regcache *c, size_t more_entries, size_t more_bytes)
{
	return c->st.entries + more_entries > c->max_entries ||
	       more_bytes > c->max_bytes || c->st.bytes > c->max_bytes - more_bytes;
}

/* Evict least recently used entries until more_entries and more_bytes fit, or nothing
 * unreferenced is left. */
static void evict(struct odpemu_regcache *c, size_t more_entries, size_t more_bytes)
{
	while (c->lru.next != &c->lru && over_limits(c, more_entries, more_bytes)) {
		c->st.evictions++;
		drop(c, entry_of_lru(c->lru.next));
	}
}

/* Whether a found entry may be handed out: not if its Z word is set (NOTIFY), or if it
 * is broken (LEASE) and cannot be restored. Restoring here, not in decoherent: a get
 * that sees the mark comes after the change (regcache.h, LEASE), so the new pages exist. */
static bool usable(struct odpemu_regcache *c, struct rc_entry *e)
{
	if (z_set(c, e))
		return false;
	if (!e->broken)
		return true;
	if (op_err(c->ops.restore(c->ctx, e->pub.handle)))
		return false;
	e->broken = false;
	c->st.restores++;
	return true;
}

/* The indexed entry that covers [start, end) (regcache.h's choice), entries found
 * unusable dropped on the way (each leaves the index: bounded by n). */
static struct rc_entry *lookup(struct odpemu_regcache *c, uintptr_t start, uintptr_t end)
{
	struct interval_node *n;

	while ((n = interval_find_covering(&c->index, start, end))) {
		struct rc_entry *e = entry_of_node(n);

		if (usable(c, e))
			return e;
		c->st.stale_drops++;
		drop(c, e);
	}
	return NULL;
}

/* A miss: make room, then watch (NOTIFY) and register [start, end); the new entry is
 * indexed with one reference. 0 or an errno value. */
static int add(struct odpemu_regcache *c, uintptr_t start, uintptr_t end, struct rc_entry **out)
{
	size_t len = end - start;
	struct rc_entry *e;
	int rc;

	evict(c, 1, len);
	if (!(e = calloc(1, sizeof(*e))))
		return ENOMEM;
	e->cache = c;
	e->pub.addr = (void *)start;
	e->pub.length = len;
	/* the watch first: a change between it and the registration sets Z, and the entry is
	 * dropped at its next lookup; the other way round such a change would go unseen (and
	 * a registration that moves pages sets its own Z: regcache.h, NOTIFY) */
	if (c->backend == ODPEMU_REGCACHE_NOTIFY &&
	    (rc = op_err(c->ops.watch(c->ctx, e->pub.addr, len, &e->z, &e->watch)))) {
		free(e);
		return rc;
	}
	if ((rc = op_err(c->ops.reg(c->ctx, e->pub.addr, len, &e->pub.handle)))) {
		if (c->backend == ODPEMU_REGCACHE_NOTIFY)
			c->ops.unwatch(c->ctx, e->watch);
		free(e);
		return rc;
	}
	c->st.registrations++;
	c->st.entries++;
	c->st.bytes += len;
	table_add(c, e);
	e->node.start = start;
	e->node.end = end;
	interval_insert(&c->index, &e->node);
	e->indexed = true;
	e->refs = 1;
	c->in_use++;
	*out = e;
	return 0;
}

/* [addr, addr+len) rounded out to pages; false if empty or past the address space (a
 * range reaching into the last page, whose end is not representable, included). */
static bool page_range(const struct odpemu_regcache *c, const void *addr, size_t len,
		       uintptr_t *start, uintptr_t *end)
{
	uintptr_t a = (uintptr_t)addr, last;

	if (!len || len - 1 > UINTPTR_MAX - a)
		return false;
	last = a + (len - 1);
	if ((last | c->page_mask) == UINTPTR_MAX)
		return false;
	*start = a & ~c->page_mask;
	*end = (last | c->page_mask) + 1;
	return true;
}

/* ---- the API ---- */

ODPEMU_EXPORT struct odpemu_regcache *
odpemu_regcache_create(enum odpemu_regcache_backend backend,
		       const struct odpemu_regcache_ops *ops, void *ctx, size_t max_entries,
		       size_t max_bytes)
{
	struct odpemu_regcache *c;
	long page = sysconf(_SC_PAGESIZE);
	bool ok = ops && ops->reg && ops->dereg;

	if (ok && backend == ODPEMU_REGCACHE_NOTIFY)
		ok = ops->watch && ops->unwatch;
	else if (ok && backend == ODPEMU_REGCACHE_LEASE)
		ok = ops->restore;
	else if (backend != ODPEMU_REGCACHE_NONE)
		ok = false;
	if (!ok) {
		errno = EINVAL;
		return NULL;
	}
	if (!(c = calloc(1, sizeof(*c))) ||
	    !(c->table = calloc((size_t)1 << RC_TABLE_MIN_SHIFT, sizeof(*c->table)))) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->backend = backend;
	c->ops = *ops;
	c->ctx = ctx;
	c->max_entries = max_entries ? max_entries : SIZE_MAX;
	c->max_bytes = max_bytes ? max_bytes : SIZE_MAX;
	c->page_mask = (uintptr_t)(page > 0 ? page : 4096) - 1;
	c->lru.prev = c->lru.next = &c->lru;
	c->table_size = (size_t)1 << RC_TABLE_MIN_SHIFT;
	c->table_shift = 64 - RC_TABLE_MIN_SHIFT;
	return c;
}

ODPEMU_EXPORT int odpemu_regcache_destroy(struct odpemu_regcache *c)
{
	if (!c)
		return lib_fail(EINVAL);
	pthread_mutex_lock(&c->lock);
	if (c->in_use) {
		pthread_mutex_unlock(&c->lock);
		return lib_fail(EBUSY);
	}
	/* nothing referenced: every entry is indexed and on the LRU list */
	while (c->lru.next != &c->lru)
		drop(c, entry_of_lru(c->lru.next));
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_destroy(&c->lock);
	free(c->table);
	free(c);
	return 0;
}

ODPEMU_EXPORT int odpemu_regcache_get(struct odpemu_regcache *c, const void *addr, size_t len,
				      struct odpemu_regcache_entry **out)
{
	uintptr_t start, end;
	struct rc_entry *e;
	int rc = 0;

	if (!c || !addr || !out || !page_range(c, addr, len, &start, &end))
		return lib_fail(EINVAL);
	pthread_mutex_lock(&c->lock);
	if ((e = lookup(c, start, end))) {
		c->st.hits++;
		if (!e->refs++) {
			lru_del(e);
			c->in_use++;
		}
	} else {
		c->st.misses++;
		rc = add(c, start, end, &e);
	}
	pthread_mutex_unlock(&c->lock);
	if (rc)
		return lib_fail(rc);
	*out = &e->pub;
	return 0;
}

ODPEMU_EXPORT int odpemu_regcache_put(struct odpemu_regcache *c, struct odpemu_regcache_entry *pub)
{
	struct rc_entry *e;

	if (!c || !pub)
		return lib_fail(EINVAL);
	e = entry_of(pub);
	pthread_mutex_lock(&c->lock);
	if (e->cache != c || !e->refs) {
		pthread_mutex_unlock(&c->lock);
		return lib_fail(EINVAL);
	}
	if (!--e->refs) {
		c->in_use--;
		if (!e->indexed) {
			release(c, e);		/* stale: the deferred deregistration */
		} else if (z_set(c, e)) {
			c->st.stale_drops++;	/* no need to wait for a lookup to see it */
			interval_remove(&c->index, &e->node);
			release(c, e);
		} else {
			lru_append(c, e);
			evict(c, 0, 0);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

ODPEMU_EXPORT int odpemu_regcache_invalidate(struct odpemu_regcache *c, const void *addr,
					     size_t len)
{
	uintptr_t start = (uintptr_t)addr;
	struct interval_node *n;

	if (!c || !len || len > UINTPTR_MAX - start)
		return lib_fail(EINVAL);
	pthread_mutex_lock(&c->lock);
	while ((n = interval_find_overlap(&c->index, start, start + len))) {
		c->st.invalidations++;
		drop(c, entry_of_node(n));
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Only a mark: the change that broke the lease has not run yet (regcache.h, LEASE). */
ODPEMU_EXPORT int odpemu_regcache_decoherent(struct odpemu_regcache *c, void *handle)
{
	bool found = false;

	if (!c || c->backend != ODPEMU_REGCACHE_LEASE)
		return lib_fail(EINVAL);
	pthread_mutex_lock(&c->lock);
	for (struct rc_entry *e = c->table[slot_of(c, handle)]; e; e = e->hnext) {
		if (e->pub.handle == handle) {
			e->broken = true;
			found = true;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return found ? 0 : lib_fail(ENOENT);
}

ODPEMU_EXPORT int odpemu_regcache_stats(struct odpemu_regcache *c,
				       struct odpemu_regcache_stats *stats)
{
	if (!c || !stats)
		return lib_fail(EINVAL);
	pthread_mutex_lock(&c->lock);
	*stats = c->st;
	stats->in_use = c->in_use;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

ODPEMU_EXPORT const char *odpemu_regcache_backend_str(enum odpemu_regcache_backend backend)
{
	switch (backend) {
	ODPEMU_REGCACHE_BACKENDS(ODPEMU_ENUM_CASE_)
	default: return "UNKNOWN";
	}
}
