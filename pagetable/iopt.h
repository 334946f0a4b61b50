/* SPDX-License-Identifier: MIT */
/*
 * iopt — the NIC's IO page table: a sparse radix translation cache filled on demand through
 * page requests and invalidated by the host's MMU notifier. Pure library: no I/O, no threads,
 * no clock (callers pass `now` in nanoseconds of their own clock).
 *
 * ADDRESS SPACE. 47-bit (x86-64 / arm64 4-level user space): a domain (struct iopt, one per
 * MR, or one for an implicit-ODP MR) covers a page-aligned window of [0, 2^47). The table has
 * four levels of 9/9/9/8 index bits: level 0 holds 4 KiB leaves, level 1 holds 2 MiB blocks
 * or leaf tables. An empty domain costs one root table (~4 KiB) plus the struct (<16 KiB).
 * Entry format: iopt_pte.h. Tables cost 4160 bytes per 512 entries (<9 bytes per 4 KiB page);
 * a 2 MiB-aligned, fully covered, host-contiguous, same-permission fill is one block entry.
 *
 * OPERATIONS. All return 0 (or a count) on success and -errno on failure, never errno.
 * Ranges are [va, va+len), byte granular for translate/fault, page aligned for fill.
 * Arguments are checked at the boundary: -EINVAL (bad flags, unaligned, len 0), -ERANGE
 * (outside the domain). Partial progress is reported separately from the error code.
 *
 * THREADING. Three kinds of callers may run at the same time on one domain:
 *  - data path (any number of threads): iopt_dma_begin/end, iopt_translate, iopt_fault,
 *    iopt_prefetch. Lock-free except for a short fault-queue mutex on a miss.
 *  - fault handler (any thread): iopt_fq_pop, iopt_req_complete/fail/requeue, iopt_fill.
 *  - notifier (any thread): iopt_invalidate[_begin/_end].
 * Writers (fill, invalidate, snapshot, dirty walk) serialise on a per-domain mutex; readers
 * never take it. iopt_translate keeps a per-thread walk cache (the last leaf table and
 * level-1 table it walked through, never an entry); writers void it by bumping a domain
 * generation whenever they unlink a table, so it is invisible to callers. iopt_create/destroy must not race with anything else on that domain.
 *
 * FENCE (MMU-notifier semantics). A DMA translates inside iopt_dma_begin()/iopt_dma_end() and
 * uses the host extents only until iopt_dma_end(). iopt_invalidate() clears the entries,
 * then waits until every DMA bracket of the domain that was open when the entries were
 * cleared has ended (a two-counter epoch scheme, like SRCU), so on return no DMA still uses
 * the old translations and every DMA that begins afterwards misses and faults. Interior tables
 * unlinked by invalidate/fill are freed only after such a grace period. The handler side
 * follows mmu_interval_notifier's read_begin/read_retry: iopt_fq_pop() records a sequence
 * snapshot in each request (iopt_read_begin()); iopt_req_complete() installs under the
 * domain lock only if no overlapping invalidation started since, else it returns -EAGAIN and
 * refreshes the snapshot (resolve again, requeue, or fail: the handler bounds the retries).
 * Single-threaded rule: invalidate from a thread that has a DMA bracket open on the same domain
 * would wait for itself; it is detected and returns -EDEADLK without changing anything (end
 * the DMA first, then invalidate). Nothing else in the library ever waits.
 *
 * FAULT QUEUE. A miss is turned into a page request by iopt_fault(): the need (the missing
 * page to the end of the DMA, capped) is widened to the aligned fault-around window (default
 * 64 KiB) clipped to the domain, merged with a live request of the same access that covers or
 * touches it, and queued on the domain's struct iopt_fq. Waiters are (callback, cookie) or
 * polled (iopt_waiter.status). The handler pops batches (iopt_fq_pop, non-blocking), resolves
 * each request against the host and answers it exactly once: iopt_req_complete() with the
 * host runs found (must cover the need with the needed permission; the rest of the window is
 * best effort) or iopt_req_fail(). Either wakes every waiter once, from the answering thread,
 * with no library lock held. A woken waiter retries its translate (success means "try
 * again", the page may have been invalidated meanwhile). Driving it single-threaded:
 * translate -> on -EFAULT iopt_fault(..., now, &waiter) -> (event loop) iopt_fq_pop ->
 * host fault port -> iopt_req_complete/fail(..., now) -> waiter callback resumes the QP.
 * Threaded users may use iopt_fq_pop_wait() and iopt_waiter_wait() (fq_wait.c).
 */
#ifndef ODPEMU_IOPT_H
#define ODPEMU_IOPT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "iopt_pte.h"

#define IOPT_VA_BITS		47
#define IOPT_VA_END		(1ull << IOPT_VA_BITS)
#define IOPT_PAGE_SHIFT		12
#define IOPT_PAGE_SIZE		(1ull << IOPT_PAGE_SHIFT)
#define IOPT_BLOCK_SHIFT	21
#define IOPT_BLOCK_SIZE		(1ull << IOPT_BLOCK_SHIFT)
#define IOPT_FAULT_AROUND_DEFAULT (64ull << 10)
#define IOPT_MAX_NEED_DEFAULT	(2ull << 20)

struct iopt;
struct iopt_fq;

/* Access of a DMA (translate, fault) and permission of a fill. */
enum iopt_access {
	IOPT_READ = 1,		/* needs PRESENT; sets ACCESSED */
	IOPT_WRITE = 2,		/* needs PRESENT|WRITE; sets ACCESSED|DIRTY */
	IOPT_ATOMIC = 4,	/* like WRITE (read-modify-write) */
};

/* ---- domains ---- */

struct iopt_config {
	uint64_t va, len;	/* the domain's window; len 0: implicit, all of [0, 2^47) */
	uint64_t fault_around;	/* power of two >= 4 KiB; 0: IOPT_FAULT_AROUND_DEFAULT */
	uint64_t max_need;	/* cap of one fault's need, bytes; 0: IOPT_MAX_NEED_DEFAULT */
	struct iopt_fq *fq;	/* where misses are queued; NULL: iopt_fault gives -ENOTSUP */
	void *owner;		/* opaque, returned by iopt_owner() (e.g. the MR) */
};

/* Create a domain (window rounded out to pages). -EINVAL, -ERANGE, -ENOMEM. */
int iopt_create(const struct iopt_config *cfg, struct iopt **out);
/* Destroy: cancels queued requests (waiters get -ECANCELED). -EBUSY, changing nothing, if a
 * handler holds one of its requests or a DMA bracket is open on it. */
int iopt_destroy(struct iopt *d);
void *iopt_owner(const struct iopt *d);

/* ---- the fence ---- */

/* A DMA bracket, on the caller's stack; fields are private. */
struct iopt_dma {
	struct iopt *dom;
	unsigned idx;
	struct iopt_dma *next;
};
void iopt_dma_begin(struct iopt *d, struct iopt_dma *dma);
void iopt_dma_end(struct iopt_dma *dma);

/* ---- translate: the fast path ---- */

#define IOPT_XLATE_MAX 16
struct iopt_extent {
	uint64_t host;		/* (frame << 12) + page offset */
	uint64_t len;
};
struct iopt_xlate {
	unsigned n;		/* extents in ext[], covering [va, va + done) in order */
	uint64_t done;		/* bytes translated from va */
	uint64_t miss;		/* -EFAULT: page address of the first missing/insufficient page */
	int miss_present;	/* -EFAULT: 1 if that page is present but read-only */
	struct iopt_extent ext[IOPT_XLATE_MAX];
};
/* Translate [va, va+len) for `access` (one IOPT_* value), merging host-contiguous pages into
 * extents and setting ACCESSED/DIRTY. 0: all translated. -EFAULT: x->miss is the first page
 * lacking a translation or the write permission; x->done bytes before it are valid.
 * -E2BIG: more than IOPT_XLATE_MAX extents; continue at va + x->done. -EINVAL, -ERANGE.
 * Call inside a DMA bracket whenever another thread may invalidate. */
int iopt_translate(struct iopt *d, uint64_t va, uint64_t len, unsigned access,
	struct iopt_xlate *x);

/* ---- fill, invalidate, inspect ---- */

#define IOPT_SEQ_NONE UINT64_MAX	/* fill without read_retry check (pinned MRs, tests) */

/* One run of host pages found by the fault handler. */
struct iopt_map {
	uint64_t va, len;	/* page aligned, inside the domain */
	uint64_t host;		/* page aligned: frame of va is host >> 12, then consecutive */
	unsigned perm;		/* IOPT_READ, or IOPT_READ|IOPT_WRITE */
};
/* Snapshot for read_retry: an odd value means an invalidation is in progress (any fill with
 * it fails). */
uint64_t iopt_read_begin(struct iopt *d);
/* Install the runs, all or nothing for -EEXIST (a present page with another frame: the host
 * mapping changed without an invalidation) and -EAGAIN (an invalidation overlapping a run
 * started after `seq`, or is in progress). A page already present with the same frame keeps
 * its A/D bits and gains WRITE if asked (never loses it). -ENOMEM: a prefix may be installed.
 * Returns the number of pages that became present (>= 0). */
long iopt_fill(struct iopt *d, const struct iopt_map *maps, unsigned n, uint64_t seq);

/* Remove the translations of [va, va+len) (rounded out to pages), then wait for the DMAs that
 * may use them (the fence). Returns the pages removed (>= 0), -EDEADLK (this thread has a
 * bracket open on d; nothing done), -EINVAL, -ERANGE. A partially covered block is split;
 * if that allocation fails the whole block is removed (a cache may always drop more). */
long iopt_invalidate(struct iopt *d, uint64_t va, uint64_t len);
/* The same in two halves, for notifiers whose host change happens between them
 * (invalidate_range_start/end): until _end, fills and completions on d return -EAGAIN. */
long iopt_invalidate_begin(struct iopt *d, uint64_t va, uint64_t len);
void iopt_invalidate_end(struct iopt *d);

/* Present pages of [va, va+len) (rounded out to pages) as bitmaps, bit i = page i; either
 * may be NULL; the library writes every bit of ceil(pages / 64) words. Returns the count of
 * present pages, -EINVAL, -ERANGE. */
long iopt_snapshot(struct iopt *d, uint64_t va, uint64_t len, uint64_t *present,
	uint64_t *writable);

/* Call fn for each maximal run of dirty pages in [va, va+len); with IOPT_DIRTY_CLEAR also
 * clear DIRTY (a block only partly inside the range stays dirty: it will be reported again)
 * and, before returning, wait for the DMAs that may be writing without having set it (the
 * fence; -EDEADLK from inside a bracket on d): write back after the call returns. fn runs
 * under the domain lock and must not call into d. A non-zero return from fn stops the walk
 * and is returned. Returns dirty pages seen. Dirty tracking is conservative (a superset). */
#define IOPT_DIRTY_CLEAR 1u
typedef int (*iopt_dirty_fn)(void *arg, uint64_t va, uint64_t len);
long iopt_dirty_walk(struct iopt *d, uint64_t va, uint64_t len, unsigned flags,
	iopt_dirty_fn fn, void *arg);

/* Free tables unlinked by fill (block merges) after a grace period. -EDEADLK as invalidate. */
int iopt_reclaim(struct iopt *d);

/* ---- fault queue ---- */

struct iopt_fq_config {
	/* Called (no lock held, from the faulting thread) when the queue goes from empty to
	 * non-empty, e.g. to write an eventfd; may be NULL. */
	void (*notify)(void *arg);
	void *notify_arg;
};
int iopt_fq_create(const struct iopt_fq_config *cfg, struct iopt_fq **out);
/* Every domain using it must be destroyed first (-EBUSY otherwise). */
int iopt_fq_destroy(struct iopt_fq *fq);

typedef void (*iopt_wake_fn)(void *cookie, int status);
#define IOPT_WAIT_PENDING 1
/* A waiter, owned by the caller (embed it in the QP). Set fn (may be NULL: poll status) and
 * cookie before iopt_fault(). status is IOPT_WAIT_PENDING until woken, then 0 or -errno;
 * the library does not touch w after storing status and calling fn. */
struct iopt_waiter {
	iopt_wake_fn fn;
	void *cookie;
	_Atomic int status;
	struct iopt_waiter *next;	/* private */
	void *req;			/* private */
};

/* Queue a page request for the page of va, needing [va, va+len) (capped at max_need) with
 * `access`; register w (may be NULL: fire and forget, e.g. after an RNR NAK).
 * 0 queued or merged; -ENOTSUP (no fq), -EINVAL, -ERANGE, -ENOMEM. */
int iopt_fault(struct iopt *d, uint64_t va, uint64_t len, unsigned access, uint64_t now,
	struct iopt_waiter *w);
/* Remove w from its request on d: 0, or -EALREADY if it has been (or is being) woken. */
int iopt_waiter_cancel(struct iopt *d, struct iopt_waiter *w);

/* Prefetch advice (ibv_advise_mr): request the missing pages of [va, va+len) as one best
 * effort request (need empty: the handler installs what it can). PREFETCH_WRITE requests
 * writable pages; NO_FAULT tells the handler to install only what the host has present.
 * Synchronous: pass w and wait for it; asynchronous: w NULL. Returns 0 queued, 1 nothing
 * missing (w untouched), -EINVAL, -ERANGE, -ENOTSUP, -ENOMEM. */
enum iopt_advice {
	IOPT_PREFETCH = 0,
	IOPT_PREFETCH_WRITE = 1,
	IOPT_PREFETCH_NO_FAULT = 2,
};
int iopt_prefetch(struct iopt *d, uint64_t va, uint64_t len, enum iopt_advice advice,
	uint64_t now, struct iopt_waiter *w);

/* A request as the handler sees it; read-only except handler_data. */
#define IOPT_REQ_PREFETCH 1u	/* from iopt_prefetch: need is empty */
#define IOPT_REQ_NO_FAULT 2u	/* resolve only pages the host has present */
struct iopt_req {
	struct iopt *dom;
	uint64_t va, len;		/* window to resolve (fault-around applied) */
	uint64_t need_va, need_len;	/* must be resolved with `access`, else fail */
	unsigned access;		/* IOPT_READ or IOPT_WRITE */
	unsigned flags;			/* IOPT_REQ_* */
	uint64_t seq;			/* read_begin snapshot, taken by pop / refreshed;
					 * the handler may retake it (iopt_read_begin)
					 * just before it starts resolving */
	void *handler_data;
};
/* Take up to max queued requests, oldest first; never blocks. Returns the count. */
unsigned iopt_fq_pop(struct iopt_fq *fq, struct iopt_req **out, unsigned max);
/* Answer with the host runs found. 0: installed, waiters woken, r freed. -EAGAIN: raced an
 * invalidation, nothing installed, r->seq refreshed, r still yours. -EINVAL: maps do not
 * cover the need with the needed permission; -EEXIST, -ENOMEM, -ERANGE from the fill: r still
 * yours (fail it). */
int iopt_req_complete(struct iopt_req *r, const struct iopt_map *maps, unsigned n, uint64_t now);
/* Answer with failure err (< 0, e.g. -EFAULT unmapped, -EACCES read-only): waiters get err. */
void iopt_req_fail(struct iopt_req *r, int err, uint64_t now);
/* Give r back to the queue tail (e.g. an invalidation is in progress). */
void iopt_req_requeue(struct iopt_req *r);

/* Blocking conveniences for threaded users (they read CLOCK_MONOTONIC and sleep). */
/* Pop, spinning spin_ns then sleeping up to timeout_ms (-1: forever) for a request. */
unsigned iopt_fq_pop_wait(struct iopt_fq *fq, struct iopt_req **out, unsigned max,
	uint64_t spin_ns, int timeout_ms);
/* Wake every iopt_fq_pop_wait sleeper (shutdown). */
void iopt_fq_kick(struct iopt_fq *fq);
/* Wait until w is woken (spin spin_ns, then sleep); returns its status. */
int iopt_waiter_wait(struct iopt_fq *fq, struct iopt_waiter *w, uint64_t spin_ns);

/* ---- counters (names as mlx5 names them) ---- */

#define IOPT_LAT_BUCKETS 40	/* bucket i: [2^i, 2^(i+1)) ns; 0 also holds 0 ns */
struct iopt_counters {
	uint64_t page_faults;		/* page requests created by iopt_fault */
	uint64_t page_fault_pages;	/* pages made present by completed fault requests */
	uint64_t page_invalidations;	/* invalidate calls that removed pages */
	uint64_t page_invalidated_pages;
	uint64_t page_prefetch;		/* pages made present by prefetch requests */
	uint64_t fault_merged;		/* misses merged into a live request */
	uint64_t fault_races;		/* completions that raced an invalidation (-EAGAIN) */
	uint64_t fault_failed;		/* requests answered with failure */
	uint64_t present_pages;		/* now */
	uint64_t table_bytes;		/* table memory now, including tables awaiting grace */
	uint64_t memory_bytes;		/* table_bytes + the domain itself */
	uint64_t fault_latency_ns[IOPT_LAT_BUCKETS];	/* fault -> answer, from callers' now */
};
void iopt_counters_get(struct iopt *d, struct iopt_counters *out);

#endif
