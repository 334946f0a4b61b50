/* SPDX-License-Identifier: MIT */
/* mem — see mem.h. */
#include "mem.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096ull
/* How long the events thread sleeps in poll before it looks at its stop flag. */
#define EVENTS_POLL_MS 50

/* The counters an MR contributes to the device's sums (gauges left out). */
static const char *const mr_counts[] = { "page_faults", "page_fault_pages",
	"page_invalidations", "page_invalidated_pages", "page_prefetch", "fault_merged",
	"fault_races", "fault_failed" };

static uint64_t page_up(uint64_t v)
{
	return (v + PAGE - 1) & ~(PAGE - 1);
}

/* A fresh private mapping with a PROT_NONE page after it: the guard keeps the kernel
 * from merging it with a neighbour, so each area is a VMA the notifier watches alone. */
static uint8_t *map_fresh(size_t len)
{
	uint8_t *p = mmap(NULL, len + PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + len, PAGE, PROT_NONE)) {
		munmap(p, len + PAGE);
		return NULL;
	}
	return p;
}

static struct odpemu_mr *reg(struct perf_dev *d, enum perf_odp odp, void *p, size_t len)
{
	struct odpemu_mr *mr = odpemu_reg_mr(d->pd, p, len, dev_mr_access(d) |
					     (odp == PERF_ODP_EXPLICIT ? ODPEMU_ACCESS_ON_DEMAND : 0));
	const char *why;

	if (mr)
		return mr;
	why = odpemu_last_error(d->ctx);
	perf_err("reg_mr of %zu bytes (%s) on %s: %s%s%s", len, odp == PERF_ODP_OFF ? "pinned" :
		 "ODP", d->name, strerror(errno), *why ? ": " : "", why);
	return NULL;
}

static int slot_alloc(struct perf_area *a, struct perf_dev *d, unsigned j, bool touch)
{
	if (!(a->sbase[j] = map_fresh(a->slot_len))) {
		perf_err("cannot map a %zu-byte buffer: %s", a->slot_len, strerror(errno));
		return -1;
	}
	if (touch)
		memset(a->sbase[j], 0, a->slot_len);
	if (a->odp == PERF_ODP_IMPLICIT)
		return 0;
	return (a->smr[j] = reg(d, a->odp, a->sbase[j], a->slot_len)) ? 0 : -1;
}

static int make_churned(struct perf_area *a, struct perf_dev *d, bool touch)
{
	a->slot_len = page_up(a->stride);
	a->sbase = calloc(a->nslots, sizeof(*a->sbase));
	a->smr = a->odp == PERF_ODP_IMPLICIT ? NULL : calloc(a->nslots, sizeof(*a->smr));
	if (!a->sbase || (a->odp != PERF_ODP_IMPLICIT && !a->smr))
		return perf_err("out of memory"), -1;
	for (unsigned j = 0; j < a->nslots; j++)
		if (slot_alloc(a, d, j, touch))
			return -1;
	return 0;
}

int area_make(struct perf_area *a, struct perf_dev *d, enum perf_odp odp, unsigned nslots,
	      uint64_t stride, bool churn, bool touch)
{
	*a = (struct perf_area){ .stride = stride, .nslots = nslots, .odp = odp };
	if (!nslots)
		return 0;
	if (odp == PERF_ODP_IMPLICIT)
		a->lkey = d->implicit->lkey, a->rkey = d->implicit->rkey;
	if (churn)
		return make_churned(a, d, touch);
	a->len = page_up(stride * nslots);
	if (!(a->base = map_fresh(a->len))) {
		perf_err("cannot map %zu bytes of buffers: %s (use a smaller -s or --tx-depth)",
			 a->len, strerror(errno));
		return -1;
	}
	if (touch)
		memset(a->base, 0, a->len);
	if (odp == PERF_ODP_IMPLICIT)
		return 0;
	if (!(a->mr = reg(d, odp, a->base, a->len)))
		return -1;
	a->lkey = a->mr->lkey;
	a->rkey = a->mr->rkey;
	return 0;
}

static void retire(struct perf_dev *d, struct odpemu_mr *mr, struct ctrs *retired)
{
	static struct ctrs c;

	if (!retired || ctrs_query(d->ctx, ODPEMU_COUNTERS_MR, mr->handle, &c))
		return;
	for (size_t i = 0; i < sizeof(mr_counts) / sizeof(mr_counts[0]); i++)
		ctrs_add(retired, mr_counts[i], ctrs_get(&c, mr_counts[i]));
}

int area_churn(struct perf_area *a, struct perf_dev *d, unsigned j, struct ctrs *retired)
{
	if (a->smr && a->smr[j]) {
		if (a->odp == PERF_ODP_EXPLICIT)
			retire(d, a->smr[j], retired);
		odpemu_dereg_mr(a->smr[j]);
		a->smr[j] = NULL;
	}
	munmap(a->sbase[j], a->slot_len + PAGE);
	return slot_alloc(a, d, j, false);
}

/* ---- --regcache ---- */

/* The registration of a churned slot: pinned (none, notify), pinned with a lease, ODP. */
static int rc_access(enum perf_regcache mode)
{
	int access = ODPEMU_ACCESS_LOCAL_WRITE;

	if (mode == PERF_RC_LEASE)
		access |= ODPEMU_ACCESS_LEASE;
	else if (mode == PERF_RC_ODP)
		access |= ODPEMU_ACCESS_ON_DEMAND;
	return access;
}

/* The cache's callbacks (odpemu/regcache.h), ctx the area's struct perf_rc. */
static int rc_reg(void *ctx, void *addr, size_t len, void **handle)
{
	struct perf_rc *rc = ctx;
	struct odpemu_mr *mr = odpemu_reg_mr(rc->dev->pd, addr, len, rc_access(rc->mode));

	*handle = mr;
	return mr ? 0 : errno;
}

static void rc_dereg(void *ctx, void *handle)
{
	(void)ctx;
	odpemu_dereg_mr(handle);
}

static int rc_watch(void *ctx, void *addr, size_t len, uint64_t *z, void **watch)
{
	struct perf_rc *rc = ctx;

	return odpemu_watch_create(rc->dev->ctx, addr, len, z, (struct odpemu_watch **)watch);
}

static void rc_unwatch(void *ctx, void *watch)
{
	(void)ctx;
	odpemu_watch_destroy(watch);
}

static int rc_restore(void *ctx, void *handle)
{
	(void)ctx;
	return odpemu_restore_mr(handle);
}

/* The events thread: every async event acknowledged; a leased MR's MR_DECOHERENCE marked
 * in the cache first (odpemu.h, MR leases: the munmap that broke the lease waits for the
 * acknowledgement, so once it returns the next get sees the mark and restores). Pinned
 * MRs of none and notify raise the event too, without waiting: only counted. */
static void *rc_events(void *arg)
{
	struct perf_rc *rc = arg;
	struct pollfd pfd = { .fd = rc->dev->ctx->async_fd, .events = POLLIN };

	while (!__atomic_load_n(&rc->stop, __ATOMIC_ACQUIRE)) {
		struct odpemu_async_event ev;
		int err;

		if (poll(&pfd, 1, EVENTS_POLL_MS) <= 0)
			continue;
		err = odpemu_get_async_event(rc->dev->ctx, &ev);
		if (err == EINTR || err == EAGAIN)
			continue;
		if (err || ev.event_type == ODPEMU_EVENT_DEVICE_FATAL)
			break;		/* the daemon is gone: the run fails on its own */
		if (ev.event_type == ODPEMU_EVENT_MR_DECOHERENCE) {
			if (rc->mode == PERF_RC_LEASE)
				odpemu_regcache_decoherent(rc->cache, ev.element.mr);
			__atomic_add_fetch(&rc->decoherence, 1, __ATOMIC_RELAXED);
		}
		odpemu_ack_async_event(&ev);
	}
	return NULL;
}

static int rc_start(struct perf_rc *rc)
{
	static const enum odpemu_regcache_backend backend[] = {
		[PERF_RC_NONE] = ODPEMU_REGCACHE_NONE, [PERF_RC_NOTIFY] = ODPEMU_REGCACHE_NOTIFY,
		[PERF_RC_LEASE] = ODPEMU_REGCACHE_LEASE };
	struct odpemu_regcache_ops ops = { .reg = rc_reg, .dereg = rc_dereg, .watch = rc_watch,
					   .unwatch = rc_unwatch, .restore = rc_restore };
	int err;

	/* no limits: each slot's entry is looked up again at its next message */
	if (rc->mode != PERF_RC_ODP &&
	    !(rc->cache = odpemu_regcache_create(backend[rc->mode], &ops, rc, 0, 0))) {
		perf_err("--regcache %s: regcache_create: %s", perf_regcache_name(rc->mode),
			 strerror(errno));
		return -1;
	}
	if ((err = pthread_create(&rc->events, NULL, rc_events, rc))) {
		perf_err("--regcache: cannot start the async events thread: %s", strerror(err));
		return -1;
	}
	rc->events_on = true;
	return 0;
}

int area_make_rc(struct perf_area *a, struct perf_dev *d, enum perf_regcache mode,
		 unsigned nslots, uint64_t stride)
{
	struct perf_rc *rc;

	*a = (struct perf_area){ .stride = stride, .nslots = nslots, .odp = PERF_ODP_OFF,
				 .slot_len = page_up(stride) };
	if (!nslots)
		return 0;
	a->sbase = calloc(nslots, sizeof(*a->sbase));
	a->smr = calloc(nslots, sizeof(*a->smr));
	a->rc = rc = calloc(1, sizeof(*rc));
	if (!a->sbase || !a->smr || !rc || !(rc->held = calloc(nslots, sizeof(*rc->held))))
		return perf_err("out of memory"), -1;
	rc->mode = mode;
	rc->dev = d;
	for (unsigned j = 0; j < nslots; j++) {
		if (!(a->sbase[j] = map_fresh(a->slot_len))) {
			perf_err("cannot map a %zu-byte buffer: %s", a->slot_len,
				 strerror(errno));
			return -1;
		}
		if (mode == PERF_RC_ODP && !(a->smr[j] = reg(d, PERF_ODP_EXPLICIT, a->sbase[j],
							     a->slot_len)))
			return -1;
	}
	return rc_start(rc);
}

int area_rc_remap(struct perf_area *a, unsigned j)
{
	struct perf_rc *rc = a->rc;
	double t0 = perf_now(), t1;
	void *p;

	if (munmap(a->sbase[j], a->slot_len)) {
		perf_err("--regcache: munmap of a buffer: %s", strerror(errno));
		return -1;
	}
	t1 = perf_now();
	p = mmap(a->sbase[j], a->slot_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	rc->figs.mmap_secs += perf_now() - t1;
	rc->figs.munmap_secs += t1 - t0;
	rc->figs.remaps++;
	if (p == MAP_FAILED) {
		perf_err("--regcache: mmap(MAP_FIXED) of a buffer at %p: %s",
			 (void *)a->sbase[j], strerror(errno));
		a->sbase[j] = NULL;	/* nothing of it is mapped any more */
		return -1;
	}
	return 0;
}

int area_rc_get(struct perf_area *a, unsigned j)
{
	struct perf_rc *rc = a->rc;
	const char *why;
	double t0;
	int err;

	if (!rc->cache)
		return 0;
	t0 = perf_now();
	err = odpemu_regcache_get(rc->cache, a->sbase[j], a->slot_len, &rc->held[j]);
	rc->figs.get_secs += perf_now() - t0;
	rc->figs.gets++;
	if (!err) {
		a->smr[j] = rc->held[j]->handle;
		return 0;
	}
	why = odpemu_last_error(rc->dev->ctx);
	perf_err("--regcache %s: registering a %zu-byte buffer on %s: %s%s%s",
		 perf_regcache_name(rc->mode), a->slot_len, rc->dev->name, strerror(err),
		 *why ? ": " : "", why);
	return -1;
}

void area_rc_put(struct perf_area *a, unsigned j)
{
	struct perf_rc *rc = a->rc;

	if (!rc->held[j])
		return;
	odpemu_regcache_put(rc->cache, rc->held[j]);
	rc->held[j] = NULL;
	a->smr[j] = NULL;
}

void area_rc_figs(const struct perf_area *a, struct perf_rc_figs *f)
{
	struct odpemu_regcache_stats st = { 0 };

	*f = a->rc->figs;
	f->decoherence = __atomic_load_n(&a->rc->decoherence, __ATOMIC_RELAXED);
	if (!a->rc->cache || odpemu_regcache_stats(a->rc->cache, &st))
		return;
	f->registrations = st.registrations;
	f->hits = st.hits;
	f->misses = st.misses;
	f->restores = st.restores;
	f->stale_drops = st.stale_drops;
}

/* The thread first (it may be inside the cache), then the cache (it deregisters its MRs
 * while their pages are still mapped: no lease breaks, no event), then the slots. */
static void rc_free(struct perf_area *a)
{
	struct perf_rc *rc = a->rc;
	int err;

	if (rc->events_on) {
		__atomic_store_n(&rc->stop, 1, __ATOMIC_RELEASE);
		pthread_join(rc->events, NULL);
	}
	for (unsigned j = 0; rc->held && j < a->nslots; j++)
		area_rc_put(a, j);
	if (rc->cache && (err = odpemu_regcache_destroy(rc->cache)))
		perf_err("--regcache: regcache_destroy: %s", strerror(err));
	if (rc->cache)
		memset(a->smr, 0, a->nslots * sizeof(*a->smr));	/* the cache's, gone */
	free(rc->held);
	free(rc);
	a->rc = NULL;
}

void area_recycle(struct perf_area *a, unsigned first, unsigned n)
{
	uint64_t start = (uint64_t)first * a->stride, end = (uint64_t)(first + n) * a->stride;

	/* pinned pages live in the daemon's shared memory: nothing to drop, nothing faults */
	if (a->odp == PERF_ODP_OFF || !a->base || !n)
		return;
	start &= ~(PAGE - 1);
	end = page_up(end) < a->len ? page_up(end) : a->len;
	if (end > start)
		madvise(a->base + start, end - start, MADV_DONTNEED);
}

int area_prefetch(struct perf_area *a, struct perf_dev *d)
{
	const uint64_t chunk = 1u << 30;	/* an SGE length is 32 bits */

	for (unsigned j = 0; a->sbase && j < a->nslots; j++) {
		struct odpemu_sge sge = { (uintptr_t)a->sbase[j], (uint32_t)a->slot_len,
					  area_lkey(a, j) };

		if (odpemu_advise_mr(d->pd, ODPEMU_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				     ODPEMU_ADVISE_MR_FLAG_FLUSH, &sge, 1))
			goto fail;
	}
	for (uint64_t off = 0; a->base && off < a->len; off += chunk) {
		uint64_t n = a->len - off < chunk ? a->len - off : chunk;
		struct odpemu_sge sge = { (uintptr_t)(a->base + off), (uint32_t)n, a->lkey };

		if (odpemu_advise_mr(d->pd, ODPEMU_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				     ODPEMU_ADVISE_MR_FLAG_FLUSH, &sge, 1))
			goto fail;
	}
	return 0;
fail:
	perf_err("--prefetch: advise_mr on %s: %s (%s)", d->name, strerror(errno),
		 odpemu_last_error(d->ctx));
	return -1;
}

void area_free(struct perf_area *a)
{
	if (a->rc)
		rc_free(a);
	for (unsigned j = 0; a->sbase && j < a->nslots; j++) {
		if (a->smr && a->smr[j])
			odpemu_dereg_mr(a->smr[j]);
		if (a->sbase[j])
			munmap(a->sbase[j], a->slot_len + PAGE);
	}
	free(a->sbase);
	free(a->smr);
	if (a->mr)
		odpemu_dereg_mr(a->mr);
	if (a->base)
		munmap(a->base, a->len + PAGE);
	memset(a, 0, sizeof(*a));
}
