/* SPDX-License-Identifier: MIT */
/*
 * Pinned MR memory: a real HCA pins pages, so after the process unmaps and remaps the
 * range, DMA still reaches the old pages. We get the same by handing the daemon files
 * that hold those very pages, which it maps:
 *  - private memory (anonymous, the heap, stacks, a file's private mapping such as the
 *    data segment): each run is copied into a fresh memfd which is then mapped
 *    MAP_SHARED|MAP_FIXED over the same addresses with the same protection. The process
 *    sees the same bytes at the same addresses; the daemon holds the pages whatever the
 *    process later does with its mapping. The memfds are sealed against shrinking, so
 *    the daemon may touch them with a plain memcpy;
 *  - shared memory (MAP_SHARED files, shmem, memfds, shared anonymous memory): the
 *    object itself, opened by its name, through a descriptor the process has open on it,
 *    or through /proc/self/map_files (which needs CAP_SYS_ADMIN or
 *    CAP_CHECKPOINT_RESTORE). Its pages are the process's pages, as a hardware pin's are;
 *  - hugetlb and special mappings ([vdso], ...) and shared objects we cannot reach are
 *    refused (EOPNOTSUPP) with nothing moved: the caller registers them by address
 *    (pd_mr.c), the weaker guarantee docs/emu.md describes.
 *
 * A registry remembers the memfds we created (fd, inode), so a later registration that
 * overlaps moved memory reuses them instead of moving again (it could not: the memory
 * is no longer private anonymous). An entry whose memfd no longer appears in
 * /proc/self/maps is stale (the process unmapped it all) and is dropped, at the next look
 * at every VMA, made when the registry has doubled since the last one; a registration
 * itself reads only the VMAs of its range (PROCMAP_QUERY), so it costs the same with ten
 * mappings or ten thousand.
 *
 * Many small registrations side by side (buffers of one pool, one page each) would each
 * hold a memfd of their own: a descriptor each (RLIMIT_NOFILE) and a mapping each. So a
 * run that starts where one of our memfds' mappings ends, at the end of that file, grows
 * that file instead and is mapped right after it: the kernel merges the two mappings, and
 * the pool stays one descriptor and one mapping. Pages the process unmaps stay in the
 * file until no mapping of it is left, as with one registration of the whole pool.
 *
 * Caveats (docs/emu.md, odpemu.h): the move copies then remaps, so a write another
 * thread makes to any byte of the page-rounded range between the copy and the remap is
 * lost (malloc'd buffers share pages with their neighbours: pin page-aligned buffers in
 * threaded programs); a fork child gets private copies of the moved pages (pin_fork.c).
 * One global lock serialises moves.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
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

/* What a VMA is to the pin. */
enum vma_kind {
	VMA_MOVABLE,		/* private: copied into a memfd of ours */
	VMA_SHARED,		/* a shared object: the daemon maps it */
	VMA_UNPINNABLE,		/* hugetlb, special: registered by address instead */
};

static bool is_hugetlb_anon(const struct lib_vma *v)
{
	return !strncmp(v->path, "/anon_hugepage", 14);
}

static bool is_special(const struct lib_vma *v)
{
	return !strcmp(v->path, "[vvar]") || !strcmp(v->path, "[vdso]") ||
	       !strcmp(v->path, "[vsyscall]") || !strncmp(v->path, "[vvar_", 6);
}

static enum vma_kind kind_of(const struct lib_vma *v)
{
	if (is_special(v) || is_hugetlb_anon(v))
		return VMA_UNPINNABLE;
	return v->shared ? VMA_SHARED : VMA_MOVABLE;
}

static struct pin_entry *entry_of(const struct lib_vma *v)
{
	for (size_t i = 0; i < pin_n; i++)
		if (pin_ents[i].ino == v->ino && pin_ents[i].dev == v->dev)
			return &pin_ents[i];
	return NULL;
}

struct file_id {
	dev_t dev;
	ino_t ino;
};

static int by_file(const void *a, const void *b)
{
	const struct file_id *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* Close the memfds no VMA maps any more: the files our VMAs map, sorted, then one search
 * per entry (a process with thousands of VMAs and entries). */
static void drop_stale(const struct lib_vma *vmas, size_t n)
{
	struct file_id *ids = pin_n ? malloc((n ? n : 1) * sizeof(*ids)) : NULL;
	size_t k = 0, m = 0;

	if (!ids)
		return;		/* nothing to drop, or no memory to look: next time */
	for (size_t i = 0; i < n; i++)
		if (is_pin_vma(&vmas[i]))
			ids[m++] = (struct file_id){ vmas[i].dev, vmas[i].ino };
	qsort(ids, m, sizeof(*ids), by_file);
	for (size_t i = 0; i < pin_n; i++) {
		struct file_id id = { pin_ents[i].dev, pin_ents[i].ino };

		if (bsearch(&id, ids, m, sizeof(*ids), by_file))
			pin_ents[k++] = pin_ents[i];
		else
			close(pin_ents[i].fd);
	}
	pin_n = k;
	free(ids);
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
static int fill_memfd(int fd, uintptr_t start, size_t len, uint64_t at)
{
	size_t done = 0;

	while (done < len) {
		long n = syscall(SYS_pwrite64, fd, (const void *)(start + done), len - done,
				 (off_t)(at + done));

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
 * differ). The registry owns the fd from before the copy: its entry (and a realloc of
 * the registry, which is heap memory and may lie in the very pages being moved) is
 * written before the copy, since a write to the range between the copy and the remap is
 * lost — a lost entry left a stale fd number in the registry, and a lost realloc
 * corrupted the heap. Nothing but system calls runs between the copy and the last mmap. */
static int move_run(const struct lib_vma *vmas, size_t n, size_t first, uintptr_t start,
		    uintptr_t end, struct pin_entry *grow, uint64_t *base)
{
	size_t len = end - start;
	int fd = grow ? grow->fd : memfd_create(LIB_PIN_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int rc;

	if (fd < 0)
		return -errno;
	*base = grow ? grow->len : 0;
	if (grow) {		/* sealed against shrinking only: it may grow */
		rc = ftruncate(fd, (off_t)(*base + len)) ? -errno : 0;
		if (!rc && (rc = fill_memfd(fd, start, len, *base)))
			(void)ftruncate(fd, (off_t)*base);	/* nothing of the range moved */
		if (rc)
			return rc;
		grow->len += len;
	} else {
		/* Sealed against shrinking: the daemon's plain memcpy into it can never fault. */
		rc = ftruncate(fd, (off_t)len) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) ?
		     -errno : add_entry(start, len, fd);
		if (!rc && (rc = fill_memfd(fd, start, len, 0)))
			pin_n--;	/* the entry just added: nothing of the range moved */
		if (rc) {
			close(fd);
			return rc;
		}
	}
	/* From the copy to the last mmap, writes to the range by anyone else are lost. */
	for (size_t i = first; i < n && vmas[i].start < end; i++) {
		uintptr_t a = vmas[i].start > start ? vmas[i].start : start;
		uintptr_t b = vmas[i].end < end ? vmas[i].end : end;

		if (mmap((void *)a, b - a, vmas[i].prot, MAP_SHARED | MAP_FIXED, fd,
			 (off_t)(*base + (a - start))) == MAP_FAILED)
			return -errno;
	}
	return 0;
}

/* The memfd of ours whose mapping ends at start, at the end of its file, with the
 * protection of vmas[first]: the run can grow it (see the top). NULL if none. */
static struct pin_entry *grow_target(const struct lib_vma *vmas, size_t first, uintptr_t start)
{
	const struct lib_vma *prev = first ? &vmas[first - 1] : NULL;
	struct pin_entry *e;

	if (!prev || prev->end != start || !is_pin_vma(prev) || prev->prot != vmas[first].prot ||
	    !(e = entry_of(prev)) || prev->offset + (prev->end - prev->start) != e->len)
		return NULL;
	return e;
}

/* ---- walking the range ---- */

struct pin_walk {
	uintptr_t start, end;		/* page-rounded range */
	bool write;			/* the MR lets the NIC write */
	const struct lib_vma *vmas;
	size_t n;
	bool move;			/* false: only check and count */
	struct lib_pin_seg *segs;
	unsigned max, nsegs;
	int opened[IPC_MAX_MR_SEGS];	/* shared objects opened for segments */
	unsigned nopened;
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

static void close_opened(struct pin_walk *w)
{
	while (w->nopened)
		close(w->opened[--w->nopened]);
}

/* As a hardware pin: every page readable, and writable when the NIC may write. */
static int check_prot(struct pin_walk *w, const struct lib_vma *v)
{
	if (!(v->prot & PROT_READ)) {
		w->why = "part of the range is not readable";
		return -EFAULT;
	}
	if (w->write && !(v->prot & PROT_WRITE)) {
		w->why = "part of the range is read-only and the MR lets the NIC write to it";
		return -EFAULT;
	}
	return 0;
}

/* The end of the run of contiguous movable VMAs from vmas[*i] on, clipped to the range;
 * *i is left at the run's last VMA. */
static uintptr_t movable_run_end(const struct pin_walk *w, size_t *i)
{
	while (*i + 1 < w->n && w->vmas[*i].end < w->end) {
		const struct lib_vma *next = &w->vmas[*i + 1];

		if (next->start != w->vmas[*i].end || kind_of(next) != VMA_MOVABLE ||
		    is_pin_vma(next) || !(next->prot & PROT_READ) ||
		    (w->write && !(next->prot & PROT_WRITE)))
			break;
		(*i)++;
	}
	return w->vmas[*i].end < w->end ? w->vmas[*i].end : w->end;
}

static bool same_object(int fd, const struct lib_vma *v)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_dev == v->dev &&
	       st.st_ino == v->ino;
}

/* A descriptor this process has open on v's object, opened anew through /proc/self/fd
 * with the mode we need; -1 if none. */
static int reopen_open_fd(const struct lib_vma *v, int flags)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int found = -1;

	if (!d)
		return -1;
	while (found < 0 && (de = readdir(d))) {
		char path[64];
		int fd = atoi(de->d_name);

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if ((fd = open(path, flags)) < 0)
			continue;
		if (same_object(fd, v))
			found = fd;
		else
			close(fd);
	}
	closedir(d);
	return found;
}

/* A new descriptor on the object v maps, or -1: by its name, through a descriptor we
 * hold on it, or through map_files (privileged). The inode is checked each time. */
static int open_backing(const struct lib_vma *v, bool write)
{
	int flags = (write ? O_RDWR : O_RDONLY) | O_CLOEXEC, fd;
	char path[80];

	if (v->path[0] == '/' && (fd = open(v->path, flags)) >= 0) {
		if (same_object(fd, v))
			return fd;
		close(fd);
	}
	if ((fd = reopen_open_fd(v, flags)) >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)v->start,
		 (unsigned long)v->end);
	if ((fd = open(path, flags)) >= 0) {
		if (same_object(fd, v))
			return fd;
		close(fd);
	}
	return -1;
}

#define HUGETLBFS_MAGIC_ 0x958458f6	/* linux/magic.h */

/* A shared object: the daemon maps the object itself at the VMA's file offset. */
static uintptr_t shared_step(struct pin_walk *w, const struct lib_vma *v, uintptr_t cur,
			     uintptr_t stop, int *rc)
{
	struct statfs sf;
	int fd;

	if (w->nopened == IPC_MAX_MR_SEGS) {
		w->why = "the range spans too many mappings";
		*rc = -E2BIG;
		return 0;
	}
	if ((fd = open_backing(v, w->write)) < 0) {
		w->why = "shared memory whose object this process cannot open again (keep a "
			 "descriptor on it, or give it CAP_SYS_ADMIN for /proc/self/map_files)";
		*rc = -EOPNOTSUPP;
		return 0;
	}
	w->opened[w->nopened++] = fd;
	if (!fstatfs(fd, &sf) && (unsigned long)sf.f_type == HUGETLBFS_MAGIC_) {
		w->why = "hugetlb memory";
		*rc = -EOPNOTSUPP;
		return 0;
	}
	*rc = add_seg(w, fd, v->offset + (cur - v->start), stop - cur);
	return *rc ? 0 : stop;
}

/* Private memory: moved into a memfd of ours (or only counted, in the check pass). */
static uintptr_t move_step(struct pin_walk *w, size_t *i, uintptr_t cur, int *rc)
{
	size_t first = *i;
	uintptr_t stop = movable_run_end(w, i);
	struct pin_entry *grow = cur == w->vmas[first].start ? grow_target(w->vmas, first, cur)
							    : NULL;
	uint64_t base = 0;
	int fd;

	if (!w->move) {
		*rc = add_seg(w, -1 - (int)first, 0, stop - cur);	/* a distinct fake fd */
		return *rc ? 0 : stop;
	}
	if ((*rc = move_run(w->vmas, w->n, first, cur, stop, grow, &base))) {
		w->why = *rc == -EMFILE || *rc == -ENFILE ? "no file descriptor for the memfd "
			 "that holds the pinned pages" : "moving the range into shared memory failed";
		return 0;
	}
	fd = grow ? grow->fd : pin_ents[pin_n - 1].fd;
	*rc = add_seg(w, fd, base, stop - cur);
	return *rc ? 0 : stop;
}

/* One step at address cur in vmas[*i]: returns the address after what it covered or 0
 * with *rc set. */
static uintptr_t step(struct pin_walk *w, size_t *i, uintptr_t cur, int *rc)
{
	const struct lib_vma *v = &w->vmas[*i];
	uintptr_t stop = v->end < w->end ? v->end : w->end;
	struct pin_entry *e;

	if ((*rc = check_prot(w, v)))
		return 0;
	if (is_pin_vma(v) && (e = entry_of(v))) {
		*rc = add_seg(w, e->fd, v->offset + (cur - v->start), stop - cur);
		return *rc ? 0 : stop;
	}
	switch (kind_of(v)) {
	case VMA_MOVABLE:
		return move_step(w, i, cur, rc);
	case VMA_SHARED:
		return shared_step(w, v, cur, stop, rc);
	case VMA_UNPINNABLE:
	default:
		w->why = is_special(v) ? "a special mapping of the kernel" : "hugetlb memory";
		*rc = -EOPNOTSUPP;
		return 0;
	}
}

static int walk(struct pin_walk *w)
{
	uintptr_t cur = w->start;
	size_t i = 0;
	int rc = 0;

	close_opened(w);
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
 * while this one sleeps in the kernel (pin_park.c). The stack is the VMA
 * of our frame (the real one: a sanitizer may keep locals elsewhere), among the VMAs the
 * walk read for the range (pthread_getattr_np would read every VMA of the process for the
 * main thread's). A VMA the stack shares with a neighbour only makes this say yes more. */
static bool on_my_stack(const struct pin_walk *w)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);

	for (size_t i = 0; i < w->n; i++)
		if (w->vmas[i].start < w->end && w->start < w->vmas[i].end &&
		    w->vmas[i].start <= fp && fp < w->vmas[i].end)
			return true;
	return false;
}

static int walk_job(void *w)
{
	return walk(w);
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

/* Drop the stale entries when the registry has doubled since the last look: a look reads
 * every VMA of the process, so it is paid once per entry added, not per registration. */
static void drop_stale_sometimes(void)
{
	static size_t look_at = 16;
	struct lib_vma *vmas;
	size_t n;

	if (pin_n < look_at || lib_maps_read(&vmas, &n))
		return;
	drop_stale(vmas, n);
	free(vmas);
	look_at = 2 * pin_n + 16;
}

static int pin_locked(struct pin_walk *w)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct lib_vma *vmas;
	size_t n;
	int rc;

	drop_stale_sometimes();
	/* the VMAs of the range, and the one before it (a memfd the range may grow) */
	rc = lib_maps_range(w->start >= page ? w->start - page : 0, w->end, &vmas, &n);
	if (rc) {
		w->why = "/proc/self/maps could not be read";
		return rc;
	}
	w->vmas = vmas;
	w->n = n;
	w->move = false;
	rc = walk(w);			/* check everything before moving anything */
	if (!rc) {
		w->move = true;
		rc = on_my_stack(w) ? lib_run_parked(walk_job, w, &w->why) : walk(w);
	}
	if (!rc)
		rc = dup_fds(w->segs, w->nsegs);
	close_opened(w);
	free(vmas);
	return rc;
}

int lib_pin_range(uintptr_t addr, size_t len, bool write, struct lib_pin_seg *segs,
		  unsigned max, unsigned *nsegs, const char **why)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct pin_walk w = { .segs = segs, .max = max, .write = write, .why = "" };
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

const void *lib_pin_registry(void)
{
	return pin_ents;
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
