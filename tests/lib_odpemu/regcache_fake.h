/* SPDX-License-Identifier: MIT */
/* Fake registrations for the regcache tests (test_regcache*.c): a fake address space and
 * the back-end ops (odpemu_regcache_ops) the cache calls, which record what it registered
 * and watched and can fail on demand; and short helpers that check as they go. */
#ifndef ODPEMU_TESTS_REGCACHE_FAKE_H
#define ODPEMU_TESTS_REGCACHE_FAKE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "odpemu/regcache.h"

/* The fake address space is pages from FAKE_BASE, each with a generation that a "remap"
 * bumps (free, munmap, a new mmap at the same address: other physical pages). A
 * registration snapshots the generations of its pages, as a pin holds the pages it
 * found; data sent through it is fresh while they still match. No memory is touched: the
 * cache never dereferences the addresses it caches. */
#define FAKE_BASE ((uintptr_t)1 << 32)
#define MR_MAGIC 0x6d72u

/* The page size (each program sets it first) and page i of the fake space. */
extern size_t pgsz;
#define PG(i) ((void *)(FAKE_BASE + (uintptr_t)(i) * pgsz))

struct fake_mr {
	unsigned magic, id;
	uintptr_t addr;
	size_t len;
	uint64_t *gen;			/* per page, at reg or restore */
	struct fake_mr *prev, *next;
};

struct fake_watch {
	uintptr_t addr;
	size_t len;
	uint64_t *z;
	struct fake_watch *prev, *next;
};

struct fake {
	pthread_mutex_t lock;		/* the lists, gen[] (the threads test remaps) */
	size_t pages;
	uint64_t *gen;
	unsigned regs;			/* successful regs: the next id is regs + 1 */
	size_t live_mrs, live_watches, max_ids;
	uint8_t *live;			/* by id: registered and not deregistered */
	int fail_reg, fail_watch, fail_restore;	/* the next such call fails with this */
	bool expect_watched;		/* NOTIFY: a reg must find its watch made already */
	bool reg_moves;			/* the next reg changes the mapping itself (a pin move) */
	struct fake_mr mrs;		/* list heads */
	struct fake_watch watches;
};

/* The ops over a struct fake (the cache's ctx). */
extern const struct odpemu_regcache_ops fake_ops;

bool overlaps(uintptr_t s1, size_t l1, uintptr_t s2, size_t l2);
/* pages of fake space; ids up to max_ids tracked in live[]. */
void fake_init(struct fake *f, size_t pages, size_t max_ids);
/* Checks that everything was deregistered and unwatched, then frees. */
void fake_fini(struct fake *f);
/* Data sent from [addr, addr+len) through e: the pages it holds are the ones mapped. */
bool fresh(struct fake *f, const struct odpemu_regcache_entry *e, const void *addr,
	   size_t len);
/* The same for a registration that is cached but not held (no entry). */
bool handle_fresh(struct fake *f, void *handle, const void *addr, size_t len);
/* The pages of [addr, addr+len) change under the process: new generations, and the
 * notifier writes the Z word of every watch over them (as the daemon would). */
void fake_remap(struct fake *f, const void *addr, size_t len);
/* LEASE: the owner's MR_DECOHERENCE handler for every leased registration the change
 * broke. Returns how many failed. */
unsigned lease_break(struct fake *f, struct odpemu_regcache *c, const void *addr,
		     size_t len);

/* ---- helpers that check as they go ---- */
/* The fake registration's id behind an entry (0 for NULL). */
unsigned id_of(const struct odpemu_regcache_entry *e);
/* A cache of back-end b over f (aborts on failure). */
struct odpemu_regcache *cache_new(enum odpemu_regcache_backend b, struct fake *f,
				  size_t max_entries, size_t max_bytes);
/* odpemu_regcache_get, checked to succeed with an entry that covers the request. */
struct odpemu_regcache_entry *get(struct odpemu_regcache *c, const void *addr, size_t len);
void put(struct odpemu_regcache *c, struct odpemu_regcache_entry *e);
/* get and put at once: the id of the entry that answered. */
unsigned touch(struct odpemu_regcache *c, const void *addr, size_t len);
struct odpemu_regcache_stats stats(struct odpemu_regcache *c);
void destroy(struct odpemu_regcache *c);

#endif
