/* SPDX-License-Identifier: MIT */
/*
 * Pinned MR memory: a real HCA pins pages, so after the process unmaps and remaps the
 * range, DMA still reaches the old pages. We get the same by moving the page-rounded
 * range into memfds the daemon maps too: each run of private anonymous memory is copied
 * into a fresh memfd which is then mapped MAP_SHARED|MAP_FIXED over the same addresses
 * with the same protection. The process sees the same bytes at the same addresses; the
 * daemon holds the pages whatever the process later does with its mapping.
 *
 * A registry remembers the memfds we created (fd, inode), so a later registration that
 * overlaps moved memory reuses them instead of moving again (it could not: the memory
 * is no longer private anonymous). An entry whose memfd no longer appears in
 * /proc/self/maps is stale (the process unmapped it all) and is dropped.
 *
 * Caveats (docs/emu.md, odpemu.h): the move copies then remaps, so a write another
 * thread makes to any byte of the page-rounded range between the copy and the remap is
 * lost (malloc'd buffers share pages with their neighbours: pin page-aligned buffers in
 * threaded programs); fork children share the moved pages (MAP_SHARED) instead of
 * getting copies. One global lock serialises moves.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib_int.h"

#define PIN_PATH "/memfd:" LIB_PIN_NAME " (deleted)"

struct pin_entry {
	uintptr_t start;		/* where it was first mapped (for debugging) */
	size_t len;
	int fd;
	dev_t dev;
	ino_t ino;
};

static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pin_entry *pin_ents;
static size_t pin_n, pin_cap;

/* ---- classifying mappings ---- */

static bool is_pin_vma(const struct lib_vma *v)
{
	return v->shared && !strcmp(v->path, PIN_PATH);
}

static bool is_private_anon(const struct lib_vma *v)
{
	return !v->shared && !v->ino && (!v->path[0] || !strcmp(v->path, "[heap]") ||
		!strcmp(v->path, "[stack]") || !strncmp(v->path, "[anon:", 6));
}

static struct pin_entry *entry_of(const struct lib_vma *v)
{
	for (size_t i = 0; i < pin_n; i++)
		if (pin_ents[i].ino == v->ino && pin_ents[i].dev == v->dev)
			return &pin_ents[i];
	return NULL;
}

static bool mapped_anywhere(const struct pin_entry *e, const struct lib_vma *vmas, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (is_pin_vma(&vmas[i]) && vmas[i].ino == e->ino && vmas[i].dev == e->dev)
			return true;
	return false;
}

static void drop_stale(const struct lib_vma *vmas, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < pin_n; i++) {
		if (mapped_anywhere(&pin_ents[i], vmas, n))
			pin_ents[k++] = pin_ents[i];
		else
			close(pin_ents[i].fd);
	}
	pin_n = k;
}

static int add_entry(uintptr_t start, size_t len, int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (pin_n == pin_cap) {
		size_t cap = pin_cap ? pin_cap * 2 : 16;
		struct pin_entry *p = realloc(pin_ents, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		pin_ents = p;
		pin_cap = cap;
	}
	pin_ents[pin_n++] = (struct pin_entry){ start, len, fd, st.st_dev, st.st_ino };
	return 0;
}

/* ---- the move ---- */

/* The current bytes of [start, start+len) into the memfd. The kernel does the copy
 * (pwrite from our own memory) as a direct system call: the page-rounded range holds
 * neighbours' bytes too, which a sanitizer's memcpy or write() interceptor would
 * rightly call an overflow, but which must move with the page. */
static int fill_memfd(int fd, uintptr_t start, size_t len)
{
	size_t done = 0;

	while (done < len) {
		long n = syscall(SYS_pwrite64, fd, (const void *)(start + done), len - done,
				 (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* Copy [start, end) — covered by vmas[first..] without holes, all private anonymous and
 * readable — into a new memfd and map it over itself, VMA by VMA (their protections may
 * differ). The registry owns the fd from before the first mmap, so pages already
 * switched stay known even if a later mmap fails. */
static int move_run(const struct lib_vma *vmas, size_t n, size_t first, uintptr_t start,
		    uintptr_t end)
{
	size_t len = end - start;
	int fd = memfd_create(LIB_PIN_NAME, MFD_CLOEXEC);
	int rc;

	if (fd < 0)
		return -errno;
	rc = ftruncate(fd, (off_t)len) ? -errno : fill_memfd(fd, start, len);
	if (!rc)
		rc = add_entry(start, len, fd);
	if (rc) {
		close(fd);
		return rc;
	}
	/* From the copy to the last mmap, writes to the range by anyone else are lost. */
	for (size_t i = first; i < n && vmas[i].start < end; i++) {
		uintptr_t a = vmas[i].start > start ? vmas[i].start : start;
		uintptr_t b = vmas[i].end < end ? vmas[i].end : end;

		if (mmap((void *)a, b - a, vmas[i].prot, MAP_SHARED | MAP_FIXED, fd,
			 (off_t)(a - start)) == MAP_FAILED)
			return -errno;
	}
	return 0;
}

/* ---- walking the range ---- */

struct pin_walk {
	uintptr_t start, end;		/* page-rounded range */
	const struct lib_vma *vmas;
	size_t n;
	bool move;			/* false: only check and count */
	struct lib_pin_seg *segs;
	unsigned max, nsegs;
	const char *why;
};

/* Append a segment, merging with the previous one when it continues it in the same fd. */
static int add_seg(struct pin_walk *w, int fd, uint64_t off, uint64_t len)
{
	struct lib_pin_seg *last = w->nsegs ? &w->segs[w->nsegs - 1] : NULL;

	if (last && last->fd == fd && last->fd_offset + last->len == off) {
		last->len += len;
		return 0;
	}
	if (w->nsegs == w->max) {
		w->why = "the range spans too many mappings";
		return -E2BIG;
	}
	w->segs[w->nsegs++] = (struct lib_pin_seg){ .len = len, .fd_offset = off, .fd = fd };
	return 0;
}

/* The end of the run of contiguous private anonymous readable VMAs from vmas[*i] on,
 * clipped to the range; *i is left at the run's last VMA. */
static uintptr_t anon_run_end(const struct pin_walk *w, size_t *i)
{
	while (*i + 1 < w->n && w->vmas[*i].end < w->end &&
	       w->vmas[*i + 1].start == w->vmas[*i].end && is_private_anon(&w->vmas[*i + 1]) &&
	       (w->vmas[*i + 1].prot & PROT_READ))
		(*i)++;
	return w->vmas[*i].end < w->end ? w->vmas[*i].end : w->end;
}

/* One step at address cur in vmas[*i]: returns the address after what it covered or 0
 * with *rc set. */
static uintptr_t step(struct pin_walk *w, size_t *i, uintptr_t cur, int *rc)
{
	const struct lib_vma *v = &w->vmas[*i];
	uintptr_t stop = v->end < w->end ? v->end : w->end;
	struct pin_entry *e;
	size_t first = *i;

	*rc = 0;
	if (!(v->prot & PROT_READ)) {
		w->why = "part of the range is not readable";
		*rc = -EFAULT;
		return 0;
	}
	if (is_pin_vma(v) && (e = entry_of(v))) {
		*rc = add_seg(w, e->fd, v->offset + (cur - v->start), stop - cur);
		return *rc ? 0 : stop;
	}
	if (!is_private_anon(v)) {
		w->why = is_pin_vma(v) ? "the range was pinned by another copy of libodpemu" :
			 v->shared ? "the range is shared memory, not private anonymous memory" :
			 "the range is file-backed, not private anonymous memory";
		*rc = -EOPNOTSUPP;
		return 0;
	}
	stop = anon_run_end(w, i);
	if (w->move) {
		*rc = move_run(w->vmas, w->n, first, cur, stop);
		if (*rc) {
			w->why = "moving the range into shared memory failed";
			return 0;
		}
		e = &pin_ents[pin_n - 1];
		*rc = add_seg(w, e->fd, 0, stop - cur);
	} else {
		*rc = add_seg(w, -1 - (int)first, 0, stop - cur);	/* a distinct fake fd */
	}
	return *rc ? 0 : stop;
}

static int walk(struct pin_walk *w)
{
	uintptr_t cur = w->start;
	size_t i = 0;
	int rc = 0;

	w->nsegs = 0;
	while (i < w->n && w->vmas[i].end <= cur)
		i++;
	while (cur < w->end) {
		if (i >= w->n || w->vmas[i].start > cur) {
			w->why = "part of the range is not mapped";
			return -EFAULT;
		}
		cur = step(w, &i, cur, &rc);
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

/* ---- the calling thread's own stack ---- */

/* If the range holds this thread's stack, our own frames live in it: a write to them
 * between copy and remap (a return address) would be lost. Then a helper thread moves
 * while this one waits with all signals blocked, touching nothing. */
static bool on_my_stack(uintptr_t start, uintptr_t end)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	bool hit = false;

	if (pthread_getattr_np(pthread_self(), &attr))
		return true;		/* unknown: take the safe road */
	if (!pthread_attr_getstack(&attr, &addr, &size))
		hit = start < (uintptr_t)addr + size && (uintptr_t)addr < end;
	pthread_attr_destroy(&attr);
	return hit;
}

struct pin_job {
	struct pin_walk *w;
	int rc;
};

static void *walk_thread(void *arg)
{
	struct pin_job *job = arg;

	job->rc = walk(job->w);
	return NULL;
}

static int walk_elsewhere(struct pin_walk *w)
{
	struct pin_job job = { .w = w };
	sigset_t all, old;
	pthread_t t;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, NULL, walk_thread, &job);
	if (!rc)
		pthread_join(t, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc ? -rc : job.rc;
}

/* ---- entry points ---- */

static int dup_fds(struct lib_pin_seg *segs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		segs[i].fd = fcntl(segs[i].fd, F_DUPFD_CLOEXEC, 0);
		if (segs[i].fd < 0) {
			int rc = -errno;

			while (i--)
				close(segs[i].fd);
			return rc;
		}
	}
	return 0;
}

static int pin_locked(struct pin_walk *w)
{
	struct lib_vma *vmas;
	size_t n;
	int rc = lib_maps_read(&vmas, &n);

	if (rc) {
		w->why = "/proc/self/maps could not be read";
		return rc;
	}
	drop_stale(vmas, n);
	w->vmas = vmas;
	w->n = n;
	w->move = false;
	rc = walk(w);			/* check everything before moving anything */
	if (!rc) {
		w->move = true;
		rc = on_my_stack(w->start, w->end) ? walk_elsewhere(w) : walk(w);
	}
	if (!rc)
		rc = dup_fds(w->segs, w->nsegs);
	free(vmas);
	return rc;
}

int lib_pin_range(uintptr_t addr, size_t len, struct lib_pin_seg *segs, unsigned max,
		  unsigned *nsegs, const char **why)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct pin_walk w = { .segs = segs, .max = max, .why = "" };
	int rc;

	*nsegs = 0;
	if (!len || addr + len < addr || addr + len + page - 1 < addr + len) {
		*why = "the range wraps around the address space";
		return -EFAULT;
	}
	w.start = addr & ~(page - 1);
	w.end = (addr + len + page - 1) & ~(page - 1);
	pthread_mutex_lock(&pin_lock);
	rc = pin_locked(&w);
	pthread_mutex_unlock(&pin_lock);
	*why = w.why;
	if (!rc)
		*nsegs = w.nsegs;
	return rc;
}

size_t lib_pin_entries(void)
{
	struct lib_vma *vmas;
	size_t n, k;

	pthread_mutex_lock(&pin_lock);
	if (!lib_maps_read(&vmas, &n)) {
		drop_stale(vmas, n);
		free(vmas);
	}
	k = pin_n;
	pthread_mutex_unlock(&pin_lock);
	return k;
}
