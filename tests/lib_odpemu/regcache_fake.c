/* SPDX-License-Identifier: MIT */
/* The fake registrations the regcache tests run the cache over (regcache_fake.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "regcache_fake.h"
#include "t.h"

size_t pgsz;

bool overlaps(uintptr_t s1, size_t l1, uintptr_t s2, size_t l2)
{
	return s1 < s2 + l2 && s2 < s1 + l1;
}

void fake_init(struct fake *f, size_t pages, size_t max_ids)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->pages = pages;
	f->gen = calloc(pages, sizeof(*f->gen));
	f->max_ids = max_ids;
	f->live = calloc(max_ids + 1, 1);
	if (!f->gen || !f->live)
		abort();
	f->mrs.prev = f->mrs.next = &f->mrs;
	f->watches.prev = f->watches.next = &f->watches;
}

void fake_fini(struct fake *f)
{
	T_EQ(f->live_mrs, 0, "every registration deregistered");
	T_EQ(f->live_watches, 0, "every watch removed");
	free(f->gen);
	free(f->live);
	pthread_mutex_destroy(&f->lock);
}

/* The page index of addr in the fake space, or f->pages if outside. */
static size_t page_of(const struct fake *f, uintptr_t addr)
{
	size_t p = addr >= FAKE_BASE ? (addr - FAKE_BASE) / pgsz : f->pages;

	return p < f->pages ? p : f->pages;
}

static void snapshot(struct fake *f, struct fake_mr *mr)
{
	size_t first = page_of(f, mr->addr);

	for (size_t i = 0; i < mr->len / pgsz; i++)
		mr->gen[i] = first + i < f->pages ? f->gen[first + i] : 0;
}

/* Data sent from [addr, addr+len) through mr: the pages it holds are the ones mapped. */
bool fresh(struct fake *f, const struct odpemu_regcache_entry *e, const void *addr,
	   size_t len)
{
	struct fake_mr *mr = e->handle;
	uintptr_t a = (uintptr_t)addr;
	bool ok = true;

	pthread_mutex_lock(&f->lock);
	for (uintptr_t p = a & ~(pgsz - 1); p < a + len; p += pgsz) {
		size_t i = page_of(f, p);

		if (i < f->pages && mr->gen[(p - mr->addr) / pgsz] != f->gen[i])
			ok = false;
	}
	pthread_mutex_unlock(&f->lock);
	return ok;
}

static int take_failure(int *fail)
{
	int rc = *fail;

	*fail = 0;
	return rc;
}

static int f_reg(void *ctx, void *addr, size_t len, void **handle)
{
	struct fake *f = ctx;
	struct fake_mr *mr;
	int rc;

	T_CHECK(!((uintptr_t)addr & (pgsz - 1)) && len && !(len & (pgsz - 1)), "reg page-aligned");
	pthread_mutex_lock(&f->lock);
	if ((rc = take_failure(&f->fail_reg)))
		goto out;
	if (f->expect_watched) {
		struct fake_watch *w = f->watches.prev;

		T_CHECK(w != &f->watches && w->addr == (uintptr_t)addr && w->len == len,
			"the range is watched before it is registered");
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr || !(mr->gen = calloc(len / pgsz, sizeof(*mr->gen))))
		abort();
	mr->magic = MR_MAGIC;
	mr->id = ++f->regs;
	mr->addr = (uintptr_t)addr;
	mr->len = len;
	if (f->reg_moves) {	/* as lib/pin.c's first move: the notifier sees it */
		f->reg_moves = false;
		for (struct fake_watch *w = f->watches.next; w != &f->watches; w = w->next)
			if (overlaps(w->addr, w->len, (uintptr_t)addr, len))
				__atomic_store_n(w->z, 1, __ATOMIC_RELEASE);
	}
	snapshot(f, mr);
	mr->prev = f->mrs.prev;
	mr->next = &f->mrs;
	f->mrs.prev->next = mr;
	f->mrs.prev = mr;
	f->live_mrs++;
	if (mr->id <= f->max_ids)
		f->live[mr->id] = 1;
	*handle = mr;
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static void f_dereg(void *ctx, void *handle)
{
	struct fake *f = ctx;
	struct fake_mr *mr = handle;

	pthread_mutex_lock(&f->lock);
	T_CHECK(mr->magic == MR_MAGIC, "dereg of a live registration");
	mr->magic = 0;
	mr->prev->next = mr->next;
	mr->next->prev = mr->prev;
	f->live_mrs--;
	if (mr->id <= f->max_ids)
		f->live[mr->id] = 0;
	pthread_mutex_unlock(&f->lock);
	free(mr->gen);
	free(mr);
}

static int f_watch(void *ctx, void *addr, size_t len, uint64_t *z, void **watch)
{
	struct fake *f = ctx;
	struct fake_watch *w;
	int rc;

	T_CHECK(!((uintptr_t)z & 7) && *z == 0, "Z word aligned and clear");
	pthread_mutex_lock(&f->lock);
	if ((rc = take_failure(&f->fail_watch)))
		goto out;
	if (!(w = calloc(1, sizeof(*w))))
		abort();
	w->addr = (uintptr_t)addr;
	w->len = len;
	w->z = z;
	w->prev = f->watches.prev;
	w->next = &f->watches;
	f->watches.prev->next = w;
	f->watches.prev = w;
	f->live_watches++;
	*watch = w;
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static void f_unwatch(void *ctx, void *watch)
{
	struct fake *f = ctx;
	struct fake_watch *w = watch;

	pthread_mutex_lock(&f->lock);
	w->prev->next = w->next;
	w->next->prev = w->prev;
	f->live_watches--;
	pthread_mutex_unlock(&f->lock);
	free(w);
}

static int f_restore(void *ctx, void *handle)
{
	struct fake *f = ctx;
	struct fake_mr *mr = handle;
	int rc;

	pthread_mutex_lock(&f->lock);
	T_CHECK(mr->magic == MR_MAGIC, "restore of a live registration");
	if (!(rc = take_failure(&f->fail_restore)))
		snapshot(f, mr);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

const struct odpemu_regcache_ops fake_ops = {
	.reg = f_reg, .dereg = f_dereg, .watch = f_watch, .unwatch = f_unwatch,
	.restore = f_restore,
};

/* The pages of [addr, addr+len) change under the process: new generations, and the
 * notifier writes the Z word of every watch over them (as the daemon would). */
void fake_remap(struct fake *f, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;

	pthread_mutex_lock(&f->lock);
	for (uintptr_t p = a & ~(pgsz - 1); p < a + len; p += pgsz)
		if (page_of(f, p) < f->pages)
			f->gen[page_of(f, p)]++;
	for (struct fake_watch *w = f->watches.next; w != &f->watches; w = w->next)
		if (overlaps(w->addr, w->len, a, len))
			__atomic_store_n(w->z, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&f->lock);
}

/* LEASE: the owner's MR_DECOHERENCE handler for every leased registration the change
 * broke (the fake collects them as the daemon would). Returns how many failed. */
unsigned lease_break(struct fake *f, struct odpemu_regcache *c, const void *addr,
		     size_t len)
{
	struct fake_mr *broken[64];
	unsigned n = 0, failed = 0;

	pthread_mutex_lock(&f->lock);
	for (struct fake_mr *mr = f->mrs.next; mr != &f->mrs && n < 64; mr = mr->next)
		if (overlaps(mr->addr, mr->len, (uintptr_t)addr, len))
			broken[n++] = mr;
	pthread_mutex_unlock(&f->lock);
	for (unsigned i = 0; i < n; i++)
		failed += odpemu_regcache_decoherent(c, broken[i]) != 0;
	return failed;
}

/* ---- helpers ---- */

unsigned id_of(const struct odpemu_regcache_entry *e)
{
	return e ? ((struct fake_mr *)e->handle)->id : 0;
}

struct odpemu_regcache *cache_new(enum odpemu_regcache_backend b, struct fake *f,
				  size_t max_entries, size_t max_bytes)
{
	struct odpemu_regcache *c = odpemu_regcache_create(b, &fake_ops, f, max_entries, max_bytes);

	if (!c)
		abort();
	f->expect_watched = b == ODPEMU_REGCACHE_NOTIFY;
	return c;
}

struct odpemu_regcache_entry *get(struct odpemu_regcache *c, const void *addr, size_t len)
{
	struct odpemu_regcache_entry *e = NULL;
	int rc = odpemu_regcache_get(c, addr, len, &e);

	T_EQ(rc, 0, "get");
	if (!rc)
		T_CHECK(e && (uintptr_t)e->addr <= (uintptr_t)addr &&
			(uintptr_t)e->addr + e->length >= (uintptr_t)addr + len, "entry covers");
	return rc ? NULL : e;
}

void put(struct odpemu_regcache *c, struct odpemu_regcache_entry *e)
{
	T_EQ(odpemu_regcache_put(c, e), 0, "put");
}

/* get and put at once: the id of the entry that answered */
unsigned touch(struct odpemu_regcache *c, const void *addr, size_t len)
{
	struct odpemu_regcache_entry *e = get(c, addr, len);
	unsigned id = id_of(e);

	if (e)
		put(c, e);
	return id;
}

struct odpemu_regcache_stats stats(struct odpemu_regcache *c)
{
	struct odpemu_regcache_stats s;

	T_EQ(odpemu_regcache_stats(c, &s), 0, "stats");
	return s;
}

void destroy(struct odpemu_regcache *c)
{
	T_EQ(odpemu_regcache_destroy(c), 0, "destroy");
}

/* Whether data sent through the registration `handle` is fresh, without an entry: for
 * an entry that is cached but not held. */
bool handle_fresh(struct fake *f, void *handle, const void *addr, size_t len)
{
	struct odpemu_regcache_entry view = { .handle = handle };

	return fresh(f, &view, addr, len);
}
