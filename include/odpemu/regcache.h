/* SPDX-License-Identifier: MIT */
/*
 * odpemu regcache — the reference registration cache (docs/regcache.md, issue 16).
 *
 * What MPI libraries carry: (addr, len) -> a registered memory region, so repeated sends
 * from one buffer register once. The cache is generic over what a registration is: its
 * creator passes callbacks (struct odpemu_regcache_ops), so it sits on libodpemu MRs
 * (odpemu_reg_mr, odpemu_watch_create) and, unchanged, on ibv_mr through the libibverbs
 * drop-in. It never touches the memory it caches.
 *
 * The classic bug it exists to show and cure (COHERENCE.md): a cached registration keeps
 * the physical pages it was made on; after free/munmap and a new allocation at the same
 * address, a cache that is never told hands out the old registration and the NIC sends
 * the old pages' data. The back-end chosen at creation says how the cache learns that a
 * mapping changed:
 *
 *  NONE    never told: the classic bug, on purpose (for the tests and the comparison).
 *          Only odpemu_regcache_invalidate drops entries (what malloc/munmap hooks do).
 *  NOTIFY  the mapping-change notifier ("if any mapping in X..Y changes, write non-zero
 *          to Z"): each entry owns a 64-bit Z word, watched over the entry's range
 *          (ops.watch) before it is registered. A lookup that finds an entry whose word is
 *          set drops it (ops.dereg, ops.unwatch) and registers the range anew; a set word
 *          is also noticed when the entry's last reference is put. Watching before
 *          registering means no change is missed, not even one racing the get; the price:
 *          a registration that itself changes the mapping (odpemu's first pinned
 *          registration of private memory moves its pages into shared memory) sets its
 *          own word, so that entry serves the get that made it and is replaced at the next
 *          lookup — one extra registration per new buffer, none after.
 *  LEASE   MR leases: ops.reg registers with a lease. A change under a lease breaks it;
 *          the daemon raises MR_DECOHERENCE and holds the change until the event is
 *          acknowledged. The owner's event thread calls odpemu_regcache_decoherent, which
 *          only marks the entry broken, then acknowledges: every get made after the change
 *          sees the mark. No restore there: the change has not run (a restore would pin
 *          the old pages, then the change would go unseen), and the new pages exist only
 *          once the application has mapped its buffer again. The next get that finds a
 *          broken entry restores it (ops.restore: same handle, same keys, still cached)
 *          and returns it; if the restore fails (nothing mapped there now) the entry is
 *          dropped as a NOTIFY one with its Z word set, and the search goes on. Only a get
 *          restores: not put, and a broken entry evicted or invalidated is just
 *          deregistered. DMA through a broken lease stalls until the restore (odpemu: the
 *          responder answers RNR NAK, a local SGE holds its send queue), so a holder must
 *          not wait for work posted through an entry before its next get on that range:
 *          that get is what resumes it (a stale entry is never restored; its work ends
 *          with its deregistration). Limit: a get racing the change itself (another
 *          thread, through an entry that also covers the changing pages) may restore onto
 *          the old pages before the change runs; the cache cannot see when it has run.
 *
 * ODP MRs need no cache invalidation at all (the NIC follows the page table); a cache
 * over them can use NONE safely.
 *
 * ENTRIES. A miss registers the page-aligned range of the request (system page size)
 * and nothing more: no merging with or extending of neighbouring entries. Merging, as
 * some MPI caches do, saves registrations for growing buffers but turns one lookup into
 * deregistering entries other threads may hold; this reference cache keeps the simplest
 * behaviour that is correct. Entries may therefore overlap. A lookup returns an entry
 * whose range covers the whole request; of several, the one with the lowest start, then
 * the lowest end (deterministic, so tests can predict it). Search is O(log n) (an
 * augmented balanced tree of the entries' ranges).
 *
 * REFERENCES. odpemu_regcache_get takes a reference on the entry it returns; the caller
 * holds it while the NIC may use the registration (until the completion) and gives it back
 * with odpemu_regcache_put. A referenced entry is never evicted and never deregistered
 * under its holder: when it must go (a lookup sees its Z word set or fails to restore it,
 * it is invalidated) it is marked stale — taken out of lookups at once, so no new user gets
 * it — and deregistered at its last put. Its handle stays valid until then.
 *
 * LIMITS. max_entries and max_bytes (0: no limit) bound what the cache keeps registered
 * (bytes: the sum of the entries' lengths; a page under two overlapping entries counts
 * twice, as it is registered twice).
 * Unreferenced entries are kept in LRU order (least recently put first) and evicted —
 * deregistered — while the cache is over a limit: before a miss registers (to make room
 * for it) and after a put. Referenced entries count towards the limits but cannot be
 * evicted, so the cache may stay over a limit while references hold it there; a get
 * never fails because of a limit (the registration is needed now). An entry larger than
 * max_bytes is registered, handed out, and evicted at its last put.
 *
 * An entry whose memory changed and that nobody looks up again (NOTIFY: its Z word set;
 * LEASE: broken) stays registered, on the old pages or none, until it is evicted,
 * invalidated or the cache is destroyed; it is never handed out as it is.
 *
 * THREADS. Every call is thread-safe: one mutex per cache, held for the whole call,
 * including the callbacks. Registrations are therefore serialised per cache (a slow
 * registration delays other threads' lookups), as in MPI libraries' caches; the callbacks
 * must not call back into the same cache, nor change a mapping under a coherent lease
 * (decoherent would wait for the mutex, the change for decoherent: until the lease
 * timeout; odpemu's pin moves only private pages, and a coherent lease's are shared). The
 * Z words are written by another agent (the notifier, the daemon) at any time, without
 * the mutex: the cache reads them with acquire loads and never writes them after the
 * watch is created.
 *
 * RETURNS as odpemu.h: odpemu_regcache_create returns the cache or NULL with errno; the
 * others return 0 or an errno value (positive) and set errno. Bad input (NULL pointers,
 * len 0, addr + len beyond the address space, a back-end without the callbacks it needs)
 * is EINVAL and changes nothing.
 */
#ifndef ODPEMU_REGCACHE_H
#define ODPEMU_REGCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "odpemu/verbs_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the cache learns that memory under an entry changed (see above). */
#define ODPEMU_REGCACHE_BACKENDS(X) \
	X(ODPEMU_REGCACHE_, NONE, 0) X(ODPEMU_REGCACHE_, NOTIFY, 1) X(ODPEMU_REGCACHE_, LEASE, 2)
enum odpemu_regcache_backend { ODPEMU_REGCACHE_BACKENDS(ODPEMU_ENUM_VALUE_) };

/*
 * What a registration is. ctx is the creator's pointer, passed back unchanged (a PD, for
 * instance). Every callback returns 0 or an errno value (positive, as odpemu's verbs; a
 * negative value is read as its negation), and is called with the cache's mutex held.
 *
 *  reg      register [addr, addr+len) (page-aligned) and store what identifies it in
 *           *handle (an odpemu_mr *, an ibv_mr *). Required. LEASE: register with a lease.
 *           Handles must differ among live registrations for odpemu_regcache_decoherent.
 *  dereg    undo reg. Required. Cannot fail (a failure has nowhere to go: the cache
 *           forgets the entry either way).
 *  watch    NOTIFY only: arrange that a change of any mapping in [addr, addr+len) writes a
 *           non-zero value to *z (8-byte aligned, zeroed by the cache) and store a token in
 *           *watch. Called before reg, so a change racing the registration is seen.
 *           libodpemu: a two-line wrapper around odpemu_watch_create.
 *  unwatch  NOTIFY only: undo watch. When it returns, nothing writes *z any more (the
 *           word is freed with the entry).
 *  restore  LEASE only: re-point the registration at the pages now mapped at its range,
 *           keeping the handle (odpemu_restore_mr). Called by the get that finds the entry
 *           broken, after the change (see LEASE). A failure (odpemu: EFAULT nothing mapped,
 *           EACCES revoked) drops the entry.
 */
struct odpemu_regcache_ops {
	int (*reg)(void *ctx, void *addr, size_t len, void **handle);
	void (*dereg)(void *ctx, void *handle);
	int (*watch)(void *ctx, void *addr, size_t len, uint64_t *z, void **watch);
	void (*unwatch)(void *ctx, void *watch);
	int (*restore)(void *ctx, void *handle);
};

/* An entry as the user sees it: read only, valid while the user holds a reference. The
 * handle is fixed for the entry's life (a restore keeps it). */
struct odpemu_regcache_entry {
	void *addr;		/* the registered range: page-aligned, covers the request */
	size_t length;
	void *handle;		/* what ops.reg stored */
};

/* Counters since creation (monotonic) and the state now. */
struct odpemu_regcache_stats {
	uint64_t hits;			/* gets answered from the cache */
	uint64_t misses;		/* gets that had to register (whether or not that worked) */
	uint64_t registrations;		/* successful ops.reg calls */
	uint64_t deregistrations;	/* ops.dereg calls */
	uint64_t evictions;		/* entries evicted for the limits */
	uint64_t stale_drops;		/* entries dropped because their memory changed: Z word
					 * seen set (NOTIFY), or restore at a get failed (LEASE) */
	uint64_t restores;		/* successful ops.restore calls (LEASE, at gets) */
	uint64_t invalidations;		/* entries dropped by odpemu_regcache_invalidate */
	uint64_t entries, bytes;	/* now: registered entries (stale ones included), bytes */
	uint64_t in_use;		/* now: entries with at least one reference */
};

struct odpemu_regcache;
/* A cache. ops is copied; ctx is passed to every callback. max_entries, max_bytes: the
 * limits (0: none). NULL with errno: EINVAL (no ops, no reg or dereg, NOTIFY without watch
 * and unwatch, LEASE without restore, an unknown back-end), ENOMEM. */
struct odpemu_regcache *odpemu_regcache_create(enum odpemu_regcache_backend backend,
					       const struct odpemu_regcache_ops *ops, void *ctx,
					       size_t max_entries, size_t max_bytes);
/* Deregister every entry and free the cache. EBUSY while any entry is referenced (stale
 * ones too): nothing is done, the cache stays usable — put the references first, since
 * freeing an entry a NIC may still use is what the references exist to prevent. EINVAL:
 * cache NULL. */
int odpemu_regcache_destroy(struct odpemu_regcache *cache);
/* An entry covering [addr, addr+len), with a reference taken: a cached one (hit) or one
 * registered now (miss). LEASE: a broken entry found is restored first (a hit), or
 * dropped if that fails. *entry is set only on success. Errors: EINVAL (cache, addr or
 * entry NULL, len 0, the page-rounded range past the end of the address space), ENOMEM,
 * or what ops.watch / ops.reg returned (nothing is cached then). */
int odpemu_regcache_get(struct odpemu_regcache *cache, const void *addr, size_t len,
			struct odpemu_regcache_entry **entry);
/* Give back one reference taken by get; the entry must not be used afterwards. The last
 * put of a stale entry deregisters it; otherwise the entry becomes the most recently used
 * and the cache evicts down to its limits. EINVAL: NULL, an entry of another cache, or
 * one with no reference left (a detectable double put). */
int odpemu_regcache_put(struct odpemu_regcache *cache, struct odpemu_regcache_entry *entry);
/* Drop every entry overlapping [addr, addr+len) (any back-end): unreferenced ones are
 * deregistered now, referenced ones marked stale. For callers that learn of changes
 * themselves (free hooks, a munmap wrapper). EINVAL: cache NULL, len 0, overflow. */
int odpemu_regcache_invalidate(struct odpemu_regcache *cache, const void *addr, size_t len);
/* LEASE: handle's lease was broken (an MR_DECOHERENCE event named it): mark every entry
 * registered with it broken, referenced or not; the next get finding one restores it
 * (see LEASE above). Calls no callback and waits only for the cache's mutex. Order: call
 * this, then acknowledge the event — the change runs after the acknowledgement, so any
 * get made after it sees the mark. From a thread other than the one making the change
 * (that one is held inside it). Marking twice is one mark: one restore. ENOENT: no entry
 * has this handle (not this cache's, or already deregistered); EINVAL: cache NULL or not
 * LEASE. */
int odpemu_regcache_decoherent(struct odpemu_regcache *cache, void *handle);
/* A consistent snapshot of the counters. EINVAL: NULL. */
int odpemu_regcache_stats(struct odpemu_regcache *cache, struct odpemu_regcache_stats *stats);
/* "NONE", "NOTIFY", "LEASE"; "UNKNOWN" for another value. */
const char *odpemu_regcache_backend_str(enum odpemu_regcache_backend backend);

#ifdef __cplusplus
}
#endif

#endif
