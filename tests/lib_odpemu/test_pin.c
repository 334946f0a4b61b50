/* SPDX-License-Identifier: MIT */
/* Pinned MR memory moves (lib/pin.c): content survives the move, the range becomes our
 * memfd, later registrations reuse it, other memory is refused, stale entries go. */
#include <fcntl.h>
#include <alloca.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t_lib.h"

#define PIN_PATH "/memfd:" LIB_PIN_NAME " (deleted)"

static void pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed + (i >> 12));
}

static bool pattern_ok(const uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(i * 131 + seed + (i >> 12)))
			return false;
	return true;
}

static ino_t ino_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

static void close_segs(struct lib_pin_seg *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(s[i].fd);
}

/* malloc'd 1 MiB: moved, identical, maps shows our memfd, writes reach the memfd. */
static void test_malloc_move(void)
{
	size_t len = 1 << 20, page = t_page();
	uint8_t *buf = malloc(len), probe;
	struct lib_pin_seg s[4], s2[4];
	unsigned n = 0, n2 = 0;
	const char *why;
	struct lib_vma v;
	size_t before = lib_pin_entries();
	uintptr_t base = (uintptr_t)buf & ~(page - 1);

	pattern(buf, len, 7);
	T_EQ(lib_pin_range((uintptr_t)buf, len, false, s, 4, &n, &why), 0, "pin malloc");
	T_EQ(n, 1, "one segment");
	T_EQ(s[0].fd_offset, 0, "fresh memfd from 0");
	T_EQ(s[0].len, (((uintptr_t)buf + len + page - 1) & ~(page - 1)) - base, "rounded len");
	T_CHECK(pattern_ok(buf, len, 7), "content survives the move");
	T_CHECK(t_vma_at((uintptr_t)buf + len / 2, &v) && !strcmp(v.path, PIN_PATH) && v.shared,
		"maps shows the memfd: %s", v.path);
	T_EQ(v.ino, ino_of(s[0].fd), "the segment's fd is that memfd");
	T_EQ(lib_pin_entries(), before + 1, "one registry entry");

	/* A write through the process's mapping is in the memfd (the daemon's view). */
	buf[12345] = 0x5a;
	T_CHECK(pread(s[0].fd, &probe, 1, (off_t)((uintptr_t)buf + 12345 - base)) == 1 &&
		probe == 0x5a, "shared with the memfd");

	/* A sub-range registers again without moving: same memfd, offset inside it. */
	T_EQ(lib_pin_range((uintptr_t)buf + 3 * page + 100, 5000, false, s2, 4, &n2, &why), 0, "sub");
	T_EQ(n2, 1, "sub: one segment");
	T_EQ(ino_of(s2[0].fd), ino_of(s[0].fd), "sub reuses the memfd");
	T_EQ(s2[0].fd_offset, (((uintptr_t)buf + 3 * page + 100) & ~(page - 1)) - base, "sub offset");
	T_EQ(s2[0].len, 2 * page, "sub: 5000 bytes from offset 100 span two pages");
	T_EQ(lib_pin_entries(), before + 1, "no new entry");
	buf[12345] = (uint8_t)(12345 * 131 + 7 + (12345 >> 12));
	T_CHECK(pattern_ok(buf, len, 7), "content after the second registration");
	close_segs(s, n);
	close_segs(s2, n2);
	free(buf);
}

/* Moved pages in the middle of fresh ones: new, then reused and grown (the fresh page
 * after the middle one continues its memfd); protections kept. */
static void test_mixed_runs(void)
{
	size_t page = t_page();
	uint8_t *p = t_anon(4);
	struct lib_pin_seg s[4], m[4];
	unsigned n = 0, k = 0;
	const char *why;
	struct lib_vma v;

	pattern(p, 4 * page, 3);
	T_EQ(lib_pin_range((uintptr_t)p + page, 2 * page, false, m, 4, &k, &why), 0, "pin middle");
	T_EQ(lib_pin_range((uintptr_t)p, 4 * page, false, s, 4, &n, &why), 0, "pin all");
	T_EQ(n, 2, "new + reused and grown");
	T_EQ(ino_of(s[1].fd), ino_of(m[0].fd), "middle reused");
	T_EQ(s[1].fd_offset, 0, "middle offset");
	T_EQ(s[1].len, 3 * page, "middle and the page after it, grown into its memfd");
	T_CHECK(ino_of(s[0].fd) != ino_of(s[1].fd), "a fresh memfd before");
	T_CHECK(pattern_ok(p, 4 * page, 3), "content");
	close_segs(s, n);
	close_segs(m, k);

	/* VMAs of different protections: one memfd, each keeps its protection. */
	munmap(p, 4 * page);
	p = t_anon(3);
	pattern(p, 3 * page, 4);
	mprotect(p + page, page, PROT_READ);
	T_EQ(lib_pin_range((uintptr_t)p, 3 * page, false, s, 4, &n, &why), 0, "pin split prot");
	T_EQ(n, 1, "one memfd for a run of VMAs");
	T_CHECK(t_vma_at((uintptr_t)p + page, &v) && v.prot == PROT_READ && v.shared,
		"read-only page stays read-only");
	T_CHECK(t_vma_at((uintptr_t)p, &v) && v.prot == (PROT_READ | PROT_WRITE), "rw stays rw");
	T_CHECK(pattern_ok(p, 3 * page, 4), "content");
	close_segs(s, n);
	munmap(p, 3 * page);
}

/* The segment maps the same object as the process: a byte written through one is read
 * through the other. */
static bool same_pages(const struct lib_pin_seg *seg, volatile uint8_t *mine)
{
	uint8_t *theirs = mmap(NULL, t_page(), PROT_READ | PROT_WRITE, MAP_SHARED, seg->fd,
			       (off_t)seg->fd_offset);
	bool same;

	if (theirs == MAP_FAILED)
		return false;
	theirs[7] = 0x5a;
	same = mine[7] == 0x5a;
	munmap(theirs, t_page());
	return same;
}

/* Does /proc/self/map_files open the mapping at p, as lib/pin.c tries? */
static bool map_files_opens(const void *p, size_t len)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)(uintptr_t)p,
		 (unsigned long)((uintptr_t)p + len));
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return false;
	close(fd);
	return true;
}

static void test_other_memory(void)
{
	size_t page = t_page();
	char path[] = "/tmp/odpemu-t-XXXXXX";
	int fd = mkstemp(path);
	struct lib_pin_seg s[4];
	unsigned n = 0;
	const char *why;
	struct lib_vma v;
	uint8_t *f, *sh, *ro, *huge;
	int rc;

	unlink(path);
	T_CHECK(fd >= 0 && !ftruncate(fd, (off_t)(2 * page)), "tmp file");
	/* a private file mapping (the data segment's kind) moves like anonymous memory */
	f = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	f[5] = 42;
	T_EQ(lib_pin_range((uintptr_t)f, 100, true, s, 4, &n, &why), 0, "private file mapping");
	T_CHECK(t_vma_at((uintptr_t)f, &v) && v.shared && strstr(v.path, LIB_PIN_NAME),
		"moved into a pin memfd");
	T_EQ(f[5], 42, "content kept");
	close_segs(s, n);
	munmap(f, page);

	/* a shared file mapping whose file is deleted but open: the object itself */
	f = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_EQ(lib_pin_range((uintptr_t)f + page, 100, true, s, 4, &n, &why), 0, "shared file");
	T_CHECK(n == 1 && s[0].fd_offset == page && s[0].len == page, "its offset in the file");
	T_CHECK(n == 1 && same_pages(&s[0], f + page), "the same pages as the process");
	T_CHECK(t_vma_at((uintptr_t)f, &v) && !strstr(v.path, LIB_PIN_NAME), "not moved");
	close_segs(s, n);
	munmap(f, 2 * page);
	close(fd);

	/* shared anonymous memory: reachable through /proc/self/map_files with privilege
	 * (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE, which a container's root lacks: the
	 * map_files row), else refused */
	sh = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	rc = lib_pin_range((uintptr_t)sh, 100, true, s, 4, &n, &why);
	T_EQ(rc, map_files_opens(sh, page) ? 0 : -EOPNOTSUPP, "shared anon");
	if (!rc) {
		T_CHECK(n == 1 && same_pages(&s[0], sh), "shared anon: the same pages");
		close_segs(s, n);
	}
	munmap(sh, page);

	/* read-only memory cannot be pinned for the NIC to write, as with hardware */
	ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_EQ(lib_pin_range((uintptr_t)ro, 100, true, s, 4, &n, &why), -EFAULT, "read-only, write");
	T_CHECK(strstr(why, "read-only"), "why: %s", why);
	T_EQ(lib_pin_range((uintptr_t)ro, 100, false, s, 4, &n, &why), 0, "read-only, no write");
	close_segs(s, n);
	munmap(ro, page);

	/* hugetlb memory (when the machine has huge pages): refused, nothing moved */
	huge = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (huge != MAP_FAILED) {
		huge[0] = 1;
		T_EQ(lib_pin_range((uintptr_t)huge, 100, true, s, 4, &n, &why), -EOPNOTSUPP,
		     "hugetlb");
		munmap(huge, 2u << 20);
	}
}

static void test_refused(void)
{
	size_t page = t_page();
	struct lib_pin_seg s[4];
	unsigned n = 0;
	const char *why;
	struct lib_vma v;
	uint8_t *p;

	p = t_anon(3);
	munmap(p + page, page);
	T_EQ(lib_pin_range((uintptr_t)p, 3 * page, false, s, 4, &n, &why), -EFAULT, "hole");
	T_CHECK(strstr(why, "not mapped"), "why: %s", why);
	T_CHECK(t_vma_at((uintptr_t)p, &v) && !v.shared && !v.path[0],
		"nothing moved before the refusal");
	munmap(p, 3 * page);

	p = t_anon(2);
	mprotect(p + page, page, PROT_NONE);
	T_EQ(lib_pin_range((uintptr_t)p, 2 * page, false, s, 4, &n, &why), -EFAULT, "PROT_NONE");
	munmap(p, 2 * page);
	T_EQ(lib_pin_range(UINTPTR_MAX - 10, 100, false, s, 4, &n, &why), -EFAULT, "wraps");
}

/* munmap + mmap anew at the same address: the entry is stale, the new memory moves. */
static void test_stale(void)
{
	size_t page = t_page(), before;
	uint8_t *p = t_anon(2), *q;
	struct lib_pin_seg s[4];
	unsigned n = 0;
	const char *why;
	ino_t old;

	pattern(p, 2 * page, 9);
	before = lib_pin_entries();
	T_EQ(lib_pin_range((uintptr_t)p, 2 * page, false, s, 4, &n, &why), 0, "pin");
	old = ino_of(s[0].fd);
	close_segs(s, n);
	T_EQ(lib_pin_entries(), before + 1, "entry added");
	munmap(p, 2 * page);
	q = mmap(p, 2 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	T_CHECK(q == p, "remapped at the same address");
	T_EQ(lib_pin_entries(), before, "stale entry dropped");
	pattern(q, 2 * page, 10);
	T_EQ(lib_pin_range((uintptr_t)q, 2 * page, false, s, 4, &n, &why), 0, "pin again");
	T_CHECK(n == 1 && ino_of(s[0].fd) != old, "a new memfd");
	T_CHECK(pattern_ok(q, 2 * page, 10), "new content");
	close_segs(s, n);
	munmap(q, 2 * page);
	T_EQ(lib_pin_entries(), before, "unmapped: dropped");
}

/* The registry is heap memory, and a pinned range may hold it (a program registers its
 * messages, malloc'd beside the library's own allocations). Pinning the heap around it
 * writes the new entry into the very pages being moved: the entry must be written before
 * the copy, or the remap loses it and the registry keeps a stale descriptor (the pin then
 * hands the daemon descriptor 0, or one closed twice; a realloc lost the same way
 * corrupts the heap). In a child, so the registry is new: its second slot has never been
 * written, and a lost entry reads as descriptor 0. */
static int registry_child(void)
{
	size_t page = t_page();
	struct lib_pin_seg s[4];
	struct lib_vma v;
	uint8_t *anon = t_anon(1);
	uintptr_t reg, lo, hi, at;
	unsigned n = 0;
	const char *why;

	if (lib_pin_range((uintptr_t)anon, page, false, s, 4, &n, &why))
		return 2;	/* a first pin, off the heap: the registry exists */
	close_segs(s, n);
	reg = (uintptr_t)lib_pin_registry();
	/* the heap, or a sanitizer allocator's anonymous region: private, movable */
	if (!reg || !t_vma_at(reg, &v) || v.shared || (strcmp(v.path, "[heap]") && v.path[0]))
		return 3;
	at = reg & ~(page - 1);
	lo = at > v.start ? at - page : at;
	hi = at + 2 * page <= v.end ? at + 2 * page : at + page;
	if (lib_pin_range(lo, hi - lo, true, s, 4, &n, &why) || n != 1)
		return 4;
	if (!t_vma_at(reg, &v) || strcmp(v.path, PIN_PATH) || ino_of(s[0].fd) != v.ino)
		return 5;	/* the descriptor is not the memfd now at the registry */
	close_segs(s, n);
	for (int i = 0; i < 64; i++)	/* the heap is sound */
		free(malloc(32 + (size_t)i * 16));
	return 0;
}

static void test_registry_in_moved_pages(void)
{
	int st = -1;
	pid_t pid = fork();

	if (pid == 0)
		_exit(registry_child());
	T_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork and wait");
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pinning the heap pages that hold the "
		"registry: child exit status %#x (4 or 5: the new entry was lost with the move)", st);
}

/* More segments than the request holds: refused before anything moves. */
static void test_too_many(void)
{
	size_t page = t_page(), before;
	uint8_t *p = t_anon(40);
	struct lib_pin_seg s[IPC_MAX_MR_SEGS];
	unsigned n = 0;
	const char *why;
	struct lib_vma v;

	for (int i = 0; i < 40; i += 2) {
		T_EQ(lib_pin_range((uintptr_t)p + (size_t)i * page, page, false, s, 1, &n, &why), 0, "pin");
		close_segs(s, n);
	}
	before = lib_pin_entries();
	T_EQ(lib_pin_range((uintptr_t)p, 40 * page, false, s, IPC_MAX_MR_SEGS, &n, &why), -E2BIG, "E2BIG");
	T_EQ(n, 0, "no segments");
	T_EQ(lib_pin_entries(), before, "nothing moved");
	T_CHECK(t_vma_at((uintptr_t)p + page, &v) && !v.shared, "odd pages still private");
	munmap(p, 40 * page);
}

/* A pool of small buffers pinned one page at a time, in address order: each page grows the
 * memfd of the one before, so the pool is one entry, one descriptor and one mapping, and
 * every page keeps its bytes; a page out of order, or after a hole, starts a memfd. */
static void test_pool(void)
{
	size_t page = t_page(), before = lib_pin_entries();
	uint8_t *p = t_anon(64);
	struct lib_pin_seg s[2];
	unsigned n = 0;
	const char *why;
	struct lib_vma v;
	ino_t ino = 0;

	pattern(p, 64 * page, 9);
	for (int i = 0; i < 32; i++) {
		T_EQ(lib_pin_range((uintptr_t)p + (size_t)i * page + 8, 64, true, s, 2, &n, &why), 0,
		     "pin one page of the pool");
		T_EQ(n, 1, "pool: one segment");
		T_EQ(s[0].fd_offset, (uint64_t)i * page, "pool: the page's place in the memfd");
		if (!i)
			ino = ino_of(s[0].fd);
		T_EQ(ino_of(s[0].fd), ino, "pool: the first page's memfd");
		close_segs(s, n);
	}
	T_EQ(lib_pin_entries(), before + 1, "pool: one entry");
	T_CHECK(t_vma_at((uintptr_t)p, &v) && v.shared && v.end - v.start >= 32 * page,
		"pool: one mapping of 32 pages, [%#lx, %#lx)", (unsigned long)v.start,
		(unsigned long)v.end);
	T_CHECK(pattern_ok(p, 64 * page, 9), "pool: content");
	/* after a hole: a memfd of its own */
	T_EQ(lib_pin_range((uintptr_t)p + 40 * page, 64, true, s, 2, &n, &why), 0, "pin after a hole");
	T_CHECK(n == 1 && ino_of(s[0].fd) != ino && s[0].fd_offset == 0, "after a hole: new memfd");
	close_segs(s, n);
	T_CHECK(pattern_ok(p, 64 * page, 9), "pool: content at the end");
	munmap(p, 64 * page);
}

/* A buffer on the caller's own stack: the move must not lose our frames' writes. */
static __attribute__((noinline)) void test_stack(void)
{
	volatile uint8_t buf[256];
	struct lib_pin_seg s[4];
	unsigned n = 0;
	const char *why;
	struct lib_vma v;
	int rc;

#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer keeps shadow state for this thread's stack and crashes (SIGSEGV in
	 * its runtime, not in ours) when those pages are remapped under it; the default and
	 * ASan builds run this case. */
	(void)buf; (void)s; (void)n; (void)why; (void)v; (void)rc;
	printf("stack pinning: not run under ThreadSanitizer\n");
	return;
#endif
	for (int i = 0; i < 256; i++)
		buf[i] = (uint8_t)i;
	rc = lib_pin_range((uintptr_t)buf, sizeof(buf), false, s, 4, &n, &why);
	T_EQ(rc, 0, "pin stack");
	T_CHECK(t_vma_at((uintptr_t)buf, &v) && !strcmp(v.path, PIN_PATH), "stack page moved");
	for (int i = 0; i < 256; i++)
		T_EQ(buf[i], i, "stack content");
	close_segs(s, n);
}

/* The same, many times, each on a page of the stack not moved yet (alloca, deeper each
 * time): the caller's frames between starting the helper and sleeping must survive. A
 * lost return address ends this test with a SIGSEGV (pin_park.c). */
static __attribute__((noinline)) void stack_at_depth(unsigned pages, unsigned seed)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile uint8_t *gap = alloca((size_t)page * pages), buf[64];
	struct lib_pin_seg s[4];
	unsigned n = 0;
	const char *why;
	int rc;

	gap[0] = 1;	/* the gap is really there */
	for (int i = 0; i < 64; i++)
		buf[i] = (uint8_t)(i ^ seed);
	rc = lib_pin_range((uintptr_t)buf, sizeof(buf), false, s, 4, &n, &why);
	T_CHECK(!rc, "pin stack at depth %u: %s", pages, rc ? why : "");
	for (int i = 0; i < 64; i++)
		if (buf[i] != (uint8_t)(i ^ seed))
			T_CHECK(0, "stack content at depth %u, byte %d", pages, i);
	close_segs(s, n);
}

static void test_stack_many(void)
{
#ifdef __SANITIZE_THREAD__
	printf("stack pinning, repeated: not run under ThreadSanitizer\n");
	return;
#endif
	for (unsigned k = 0; k < 400; k++)
		stack_at_depth(2 + 2 * k, k);
	printf("stack pinning: 400 fresh stack pages moved\n");
}

int main(void)
{
	/* first: it forks, and a child shares the pages earlier tests moved (MAP_SHARED) */
	test_registry_in_moved_pages();
	test_malloc_move();
	test_mixed_runs();
	test_other_memory();
	test_refused();
	test_stale();
	test_too_many();
	test_pool();
	test_stack();
	test_stack_many();
	return t_done("pin");
}
