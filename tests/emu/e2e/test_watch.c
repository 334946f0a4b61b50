/* SPDX-License-Identifier: MIT */
/*
 * The mapping-change notifier (emu/host/watch.c, lib/watch.c; docs/regcache.md): "if any
 * mapping in X..Y changes, write 1 to Z", with Z checked by the thread that made the
 * change right after its call returns:
 *  - munmap, madvise(MADV_DONTNEED / MADV_FREE), mremap (moved away), mmap(MAP_FIXED) over
 *    the range, and a munmap of one page of a watched two: Z set;
 *  - mprotect, a change next to the range, a fork child's munmap of its copy: Z stays 0;
 *  - brk: a shrink over watched heap pages sets Z, a growth and brk(0) do not, nor does
 *    the shrink beside; memory malloc frees and trims (sbrk(negative)) sets Z;
 *  - madvise(MADV_DONTNEED_LOCKED): Z set;
 *  - System V shared memory: shmdt of a segment mprotect split in three sets the Z of its
 *    last piece, not those beside it; shmat(SHM_REMAP) over a watched mapping sets Z;
 *  - calls that change no mapping (mprotect, madvise(MADV_WILLNEED), mmap without
 *    MAP_FIXED, shmat without SHM_REMAP, brk(0), getpid) are not even held;
 *  - four threads, each watching and unmapping pages of its own, 200 times;
 *  - 10,000 watches, one page unmapped: exactly its Z set; a client asking for a million
 *    watches gets 32,768, then ENOSPC, and the daemon's RSS grows by less than 64 MiB;
 *  - bad arguments: EINVAL;
 *  - the supervising context closed: munmap, mmap(MAP_FIXED) and madvise still run (the
 *    library answers them), a later watch is ENODEV;
 *  - the daemon SIGKILLed while a process watches: its munmap and madvise still run (the
 *    library answers them), not ENOSYS.
 * The filter stays on the process that installs it, and its held calls fail once the
 * daemon is gone, so the checks run in a child that ends before the harness stops the
 * daemons. No MR anywhere: the notifier does not need one.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "t.h"

#define PAGE 4096u
#define THREADS 4
#define ROUNDS 200
#define MANY 10000

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1	/* the runtime's malloc maps its own memory, not glibc's heap */
#else
#define SANITIZED 0
#endif

static struct odpemu_context *ctx;

static uint64_t z_of(const uint64_t *z)
{
	return __atomic_load_n(z, __ATOMIC_ACQUIRE);
}

static char *pages(size_t n)
{
	void *p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	T_CHECK(p != MAP_FAILED, "mmap: %m");
	return p == MAP_FAILED ? NULL : p;
}

static struct odpemu_watch *watch(void *addr, size_t len, uint64_t *z)
{
	struct odpemu_watch *w = NULL;

	*z = 0;
	T_CHECK(odpemu_watch_create(ctx, addr, len, z, &w) == 0, "watch_create: %s",
		odpemu_last_error(ctx));
	return w;
}

/* One change per watched range; each Z read right after the call returns. */
static void each_change(void)
{
	static uint64_t z[8] __attribute__((aligned(8)));
	char *r = pages(16), *elsewhere = pages(2);
	struct odpemu_watch *w[8];

	if (!r || !elsewhere)
		return;
	for (int i = 0; i < 8; i++)
		w[i] = watch(r + 2 * i * PAGE, 2 * PAGE, &z[i]);
	T_EQ(munmap(r, 2 * PAGE), 0, "munmap");
	T_EQ(z_of(&z[0]), 1, "munmap: Z set before it returned");
	T_EQ(madvise(r + 2 * PAGE, 2 * PAGE, MADV_DONTNEED), 0, "madvise DONTNEED");
	T_EQ(z_of(&z[1]), 1, "madvise(MADV_DONTNEED): Z set");
	T_EQ(madvise(r + 4 * PAGE, 2 * PAGE, MADV_FREE), 0, "madvise FREE");
	T_EQ(z_of(&z[2]), 1, "madvise(MADV_FREE): Z set");
	T_CHECK(mremap(r + 6 * PAGE, 2 * PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		       elsewhere) == elsewhere, "mremap: %m");
	T_EQ(z_of(&z[3]), 1, "mremap away: Z set");
	T_CHECK(mmap(r + 8 * PAGE, 2 * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == r + 8 * PAGE, "mmap: %m");
	T_EQ(z_of(&z[4]), 1, "mmap(MAP_FIXED) over it: Z set");
	T_EQ(munmap(r + 11 * PAGE, PAGE), 0, "munmap of one page of two");
	T_EQ(z_of(&z[5]), 1, "a partial munmap: Z set");
	T_EQ(mprotect(r + 12 * PAGE, 2 * PAGE, PROT_READ), 0, "mprotect");
	T_EQ(z_of(&z[6]), 0, "mprotect: not a mapping change, Z stays 0");
	T_EQ(munmap(r + 16 * PAGE - PAGE, PAGE), 0, "munmap next to a watch");
	T_EQ(z_of(&z[6]), 0, "a change beside the range: Z stays 0");
	for (int i = 0; i < 8; i++)
		T_EQ(odpemu_watch_destroy(w[i]), 0, "watch_destroy");
	munmap(r, 16 * PAGE);
	munmap(elsewhere, 2 * PAGE);
}

/* A fork child's unmap of its own copy changes nothing of ours. */
static void fork_child_change(void)
{
	static uint64_t z __attribute__((aligned(8)));
	char *r = pages(2);
	struct odpemu_watch *w;
	int status = -1;
	pid_t pid;

	if (!r)
		return;
	w = watch(r, 2 * PAGE, &z);
	if ((pid = fork()) == 0)
		_exit(munmap(r, 2 * PAGE) == 0 ? 0 : 1);	/* held, then let run */
	T_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0, "the child's munmap ran (status %#x)", status);
	T_EQ(z_of(&z), 0, "a child's change of its copy: our Z stays 0");
	odpemu_watch_destroy(w);
	munmap(r, 2 * PAGE);
}

static char *page_up(char *p)
{
	return (char *)(((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1));
}

/* brk, straight through sbrk: the heap grows by four pages (Z of a watch over them stays
 * 0, and brk(0) changes nothing either), then shrinks by two (the top page's watch fires,
 * the page below the new break's does not). The watches are made first, on pages not
 * mapped yet: making one may allocate, and malloc must not move the break between our
 * sbrk calls (the shrink would take its memory). A few tries if it did. */
static void brk_changes(void)
{
	static uint64_t zg, zs, zb __attribute__((aligned(8)));
	struct odpemu_watch *wg = NULL, *ws = NULL, *wb = NULL;
	char *b = NULL;

	for (int try = 0; try < 4; try++) {
		b = sbrk(0);
		if (b != page_up(b))
			(void)sbrk(page_up(b) - b);	/* growth: page-align the break */
		b = sbrk(0);
		wg = watch(b, 4 * PAGE, &zg);
		ws = watch(b + 3 * PAGE, PAGE, &zs);
		wb = watch(b + PAGE, PAGE, &zb);
		if (sbrk(0) == b)
			break;
		odpemu_watch_destroy(wg), odpemu_watch_destroy(ws), odpemu_watch_destroy(wb);
		wg = ws = wb = NULL;
	}
	if (!wg) {
		T_CHECK(0, "the break kept moving while the watches were made");
		return;
	}
	T_CHECK(sbrk(4 * PAGE) == b, "sbrk(+4 pages): %m");
	T_EQ(z_of(&zg), 0, "brk growth: Z stays 0");
	T_CHECK(syscall(SYS_brk, 0) == (long)(b + 4 * PAGE), "brk(0)");
	T_EQ(z_of(&zg), 0, "brk(0): Z stays 0");
	b[4 * PAGE - 1] = 1;				/* the top page is there */
	T_CHECK(sbrk(-2 * (intptr_t)PAGE) == b + 4 * PAGE, "sbrk(-2 pages): %m");
	T_EQ(z_of(&zs), 1, "brk shrink over a watched page: Z set before it returned");
	T_EQ(z_of(&zb), 0, "brk shrink beside the range: Z stays 0");
	T_CHECK(sbrk(-2 * (intptr_t)PAGE) == b + 2 * PAGE && sbrk(0) == b, "sbrk back: %m");
	odpemu_watch_destroy(wg), odpemu_watch_destroy(ws), odpemu_watch_destroy(wb);
}

/* glibc's malloc gives the top of its heap back with sbrk(negative) once that exceeds
 * M_TRIM_THRESHOLD (0 here): a watch on a page of a freed block fires before free
 * returns. The block's place is learnt first (allocated, freed: trimmed), the watch is
 * made, then the same size is allocated again from the top and freed. Last of the
 * checks: the malloc settings stay. */
static void malloc_trims(void)
{
	enum { SIZE = 100 * 1024 };	/* under the mmap threshold (128 KiB): from the heap */
	static uint64_t z __attribute__((aligned(8)));
	struct odpemu_watch *w;
	uintptr_t at;
	char *p, *q, *in;

	if (SANITIZED) {
		printf("# malloc trim: skipped, the sanitizer's malloc does not use the heap\n");
		return;
	}
	T_CHECK(mallopt(M_TOP_PAD, 0) && mallopt(M_TRIM_THRESHOLD, 0), "mallopt");
	malloc_trim(0);
	if (!(p = malloc(SIZE)))
		return;
	at = (uintptr_t)p;
	free(p);
	in = page_up((char *)at) + PAGE;
	w = watch(in, PAGE, &z);
	if (!(q = malloc(SIZE)))
		return;
	T_CHECK(q <= in && q + SIZE >= in + PAGE, "the block again (%#lx then %p)",
		(unsigned long)at, q);
	memset(q, 1, SIZE);
	T_EQ(z_of(&z), 0, "malloc: Z stays 0");
	free(q);
	T_CHECK((char *)sbrk(0) <= in, "free trimmed the heap (break %p, page %p)", sbrk(0), in);
	T_EQ(z_of(&z), 1, "free with trim: Z set before it returned");
	odpemu_watch_destroy(w);
}

static void dontneed_locked(void)
{
	static uint64_t z[2] __attribute__((aligned(8)));
	struct odpemu_watch *w0, *w1;
	char *r = pages(3);

	if (!r)
		return;
	w0 = watch(r + PAGE, PAGE, &z[0]);
	w1 = watch(r + 2 * PAGE, PAGE, &z[1]);
	T_EQ(madvise(r, 2 * PAGE, MADV_DONTNEED_LOCKED), 0, "madvise DONTNEED_LOCKED");
	T_EQ(z_of(&z[0]), 1, "madvise(MADV_DONTNEED_LOCKED): Z set");
	T_EQ(z_of(&z[1]), 0, "beside it: Z stays 0");
	odpemu_watch_destroy(w0), odpemu_watch_destroy(w1);
	munmap(r, 3 * PAGE);
}

/* shmdt detaches every piece of the segment attached there (mprotect splits it in
 * three); shmat(SHM_REMAP) replaces what was mapped over the segment's size. */
static void shm_changes(void)
{
	static uint64_t z[5] __attribute__((aligned(8)));
	int id = shmget(IPC_PRIVATE, 4 * PAGE, IPC_CREAT | 0600);
	int id2 = shmget(IPC_PRIVATE, 2 * PAGE, IPC_CREAT | 0600);
	struct odpemu_watch *w[5];
	char *r = pages(6), *q = pages(4), *s;

	T_CHECK(id >= 0 && id2 >= 0, "shmget: %m");
	if (id < 0 || id2 < 0 || !r || !q)
		goto out;
	/* the segment between two pages of ours: r + 1..5 pages */
	T_EQ(munmap(r + PAGE, 4 * PAGE), 0, "munmap the middle");
	s = shmat(id, r + PAGE, 0);
	T_CHECK(s == r + PAGE, "shmat: %m");
	if (s != r + PAGE)
		goto out;
	T_EQ(mprotect(s + PAGE, PAGE, PROT_READ), 0, "mprotect: three pieces");
	s[3 * PAGE] = 1;
	w[0] = watch(s + 3 * PAGE, PAGE, &z[0]);
	w[1] = watch(r, PAGE, &z[1]);
	w[2] = watch(r + 5 * PAGE, PAGE, &z[2]);
	T_EQ(shmdt(s), 0, "shmdt");
	T_EQ(z_of(&z[0]), 1, "shmdt: the last piece's Z set before it returned");
	T_EQ(z_of(&z[1]) + z_of(&z[2]), 0, "shmdt: the pages beside, Z stays 0");
	/* SHM_REMAP of a two-page segment over the first two of four pages */
	w[3] = watch(q + PAGE, PAGE, &z[3]);
	w[4] = watch(q + 2 * PAGE, PAGE, &z[4]);
	T_CHECK(shmat(id2, q, SHM_REMAP) == q, "shmat(SHM_REMAP): %m");
	T_EQ(z_of(&z[3]), 1, "shmat(SHM_REMAP) over it: Z set");
	T_EQ(z_of(&z[4]), 0, "shmat(SHM_REMAP) beside: Z stays 0");
	T_EQ(shmdt(q), 0, "shmdt");
	for (int i = 0; i < 5; i++)
		odpemu_watch_destroy(w[i]);
out:
	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	if (id2 >= 0)
		shmctl(id2, IPC_RMID, NULL);
	if (r)
		munmap(r, 6 * PAGE);
	if (q)
		munmap(q, 4 * PAGE);
}

/* The filter holds only what it must: calls that change no mapping are not even held
 * (the daemon's watch_changes counts the held ones). */
static void not_held(void)
{
	static uint64_t z __attribute__((aligned(8)));
	unsigned long long before, after;
	int id = shmget(IPC_PRIVATE, PAGE, IPC_CREAT | 0600);
	char *r = pages(2), *m, *s;
	struct odpemu_watch *w;

	if (!r || id < 0)
		goto out;
	w = watch(r, 2 * PAGE, &z);	/* the process watches: the filter is there */
	before = h_counter(ctx, ODPEMU_COUNTERS_DEVICE, 0, "watch_changes");
	mprotect(r, PAGE, PROT_READ);
	madvise(r, 2 * PAGE, MADV_WILLNEED);
	madvise(r, 2 * PAGE, MADV_NORMAL);
	m = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	s = shmat(id, NULL, 0);
	(void)syscall(SYS_brk, 0);
	(void)getpid();
	after = h_counter(ctx, ODPEMU_COUNTERS_DEVICE, 0, "watch_changes");
	T_EQ(after - before, 0, "calls held among those that change no mapping");
	T_EQ(z_of(&z), 0, "and Z stays 0");
	if (m != MAP_FAILED)
		munmap(m, PAGE);
	if (s != (void *)-1)
		shmdt(s);
	odpemu_watch_destroy(w);
out:
	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	if (r)
		munmap(r, 2 * PAGE);
}

static void *churn(void *arg)
{
	uint64_t *z = arg;
	unsigned bad = 0;

	for (int i = 0; i < ROUNDS; i++) {
		void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		struct odpemu_watch *w = NULL;

		*z = 0;
		if (p == MAP_FAILED || odpemu_watch_create(ctx, p, PAGE, z, &w)) {
			bad++;
			break;
		}
		munmap(p, PAGE);
		bad += z_of(z) != 1;	/* this thread's own change, just returned */
		odpemu_watch_destroy(w);
	}
	return (void *)(uintptr_t)bad;
}

static void threads(void)
{
	static uint64_t z[THREADS][8] __attribute__((aligned(64)));
	pthread_t t[THREADS];
	void *bad;

	for (int i = 0; i < THREADS; i++)
		T_EQ(pthread_create(&t[i], NULL, churn, z[i]), 0, "pthread_create");
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], &bad);
		T_CHECK(!bad, "thread %d: %u rounds whose Z was not set at return", i,
			(unsigned)(uintptr_t)bad);
	}
}

static void many(void)
{
	uint64_t *z = calloc(MANY, sizeof(*z));
	struct odpemu_watch **w = calloc(MANY, sizeof(*w));
	char *r = pages(MANY);
	unsigned set = 0, made = 0;

	if (!z || !w || !r)
		goto out;
	for (; made < MANY; made++)
		if (odpemu_watch_create(ctx, r + (size_t)made * PAGE, PAGE, &z[made], &w[made]))
			break;
	T_CHECK(made == MANY, "watches made: %u (%s)", made, odpemu_last_error(ctx));
	T_EQ(munmap(r + (size_t)(MANY / 2) * PAGE, PAGE), 0, "munmap one page");
	for (unsigned i = 0; i < made; i++)
		set += z_of(&z[i]) != 0;
	T_CHECK(set == 1, "Z words set among %u watches: %u", made, set);
	T_EQ(z_of(&z[MANY / 2]), 1, "the unmapped page's");
	for (unsigned i = 0; i < made; i++)
		odpemu_watch_destroy(w[i]);
out:
	if (r)
		munmap(r, (size_t)MANY * PAGE);
	free(w);
	free(z);
}

/* The daemon's resident memory in KiB (VmRSS), or 0. */
static unsigned long rss_kib(pid_t pid)
{
	char path[64], line[128];
	unsigned long kib = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lu", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* A client that asks for a million watches, far more than the daemon keeps per process
 * (32,768): the rest answer ENOSPC, and the daemon's memory stays bounded. Under the
 * sanitizers, which check memory and races rather than scale, 10,000 past the cap. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FLOOD_TRY ((1u << 15) + 10000u)
#else
#define FLOOD_TRY 1000000u
#endif
static void flood(struct h_env *e)
{
	enum { CAP = 1 << 15, TRY = FLOOD_TRY };
	struct odpemu_watch **w = calloc(CAP, sizeof(*w)), *extra;
	static uint64_t z __attribute__((aligned(8)));
	unsigned long rss0 = rss_kib(e->host[0].pid), rss1;
	unsigned made = 0, refused = 0;
	int rc = 0;

	if (!w)
		return;
	while (made < CAP && !(rc = odpemu_watch_create(ctx, &z, 8, &z, &w[made])))
		made++;
	while (made + refused < TRY && odpemu_watch_create(ctx, &z, 8, &z, &extra) == ENOSPC)
		refused++;
	rss1 = rss_kib(e->host[0].pid);
	printf("flood: %u watches made, %u refused; the daemon's RSS %lu -> %lu KiB\n", made,
	       refused, rss0, rss1);
	T_CHECK(made == CAP && made + refused == TRY, "watches before the cap: %u (want %u), "
		"then %u ENOSPC of %u", made, (unsigned)CAP, refused, TRY - CAP);
	T_CHECK(rss1 < rss0 + 64 * 1024, "the daemon's memory grew by %lu KiB", rss1 - rss0);
	for (unsigned i = 0; i < made; i++)
		odpemu_watch_destroy(w[i]);
	T_CHECK(odpemu_watch_create(ctx, &z, 8, &z, &w[0]) == 0, "a watch again after");
	odpemu_watch_destroy(w[0]);
	free(w);
}

static void bad_args(void)
{
	static uint64_t z[2] __attribute__((aligned(8)));
	struct odpemu_watch *w;
	char x;

	T_EQ(odpemu_watch_create(ctx, &x, 0, z, &w), EINVAL, "len 0");
	T_EQ(odpemu_watch_create(ctx, &x, 1, NULL, &w), EINVAL, "no Z");
	T_EQ(odpemu_watch_create(ctx, &x, 1, (uint64_t *)((char *)z + 4), &w), EINVAL,
	     "a Z word not 8-byte aligned");
	T_EQ(odpemu_watch_create(ctx, (void *)-4096, 8192, z, &w), EINVAL, "a wrapping range");
	T_EQ(odpemu_watch_destroy(NULL), EINVAL, "destroy NULL");
}

/* The context whose daemon holds the listener closes: the library answers the held calls
 * from then on (before, a munmap after the close waited for ever), and later watches are
 * refused: the process's one listener is gone with that session. */
static void closed(struct h_env *e)
{
	static uint64_t z __attribute__((aligned(8)));
	struct odpemu_context *other;
	struct odpemu_watch *w;
	char *p;

	odpemu_close_device(ctx);
	p = pages(2);
	T_CHECK(p && munmap(p, PAGE) == 0 && mmap(p, PAGE, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p &&
		madvise(p, 2 * PAGE, MADV_DONTNEED) == 0 && munmap(p, 2 * PAGE) == 0,
		"munmap, mmap(MAP_FIXED), madvise after the supervising context closed: %m");
	if (!(other = h_open(e, 0)))
		return;
	T_EQ(odpemu_watch_create(other, &z, 8, &z, &w), ENODEV, "a watch after the close");
	odpemu_close_device(other);
}

static void checks(struct h_env *e)
{
	if (!(ctx = h_open(e, 0)))
		return;
	bad_args();
	each_change();
	fork_child_change();
	brk_changes();
	dontneed_locked();
	shm_changes();
	not_held();
	threads();
	many();
	malloc_trims();		/* before flood: it wants glibc's heap as a fresh process has it */
	flood(e);
	closed(e);
}

/* The daemon dies while a process has watches: its held calls are answered by the
 * library's fallback thread, so munmap still works (not ENOSYS), within a bound. */
static void daemon_dies(struct h_env *e)
{
	int go[2], ready[2], status = -1, st;
	pid_t pid;
	char c;

	if (pipe(go) || pipe(ready) || (pid = fork()) < 0) {
		T_CHECK(0, "pipe/fork: %m");
		return;
	}
	if (pid == 0) {
		static uint64_t z __attribute__((aligned(8)));
		struct odpemu_context *cx = h_open(e, 0);
		struct odpemu_watch *w = NULL;
		char *r = pages(4);
		int ok;

		ok = cx && r && odpemu_watch_create(cx, r, PAGE, &z, &w) == 0;
		(void)!write(ready[1], ok ? "y" : "n", 1);
		(void)!read(go[0], &c, 1);		/* the daemon is dead now */
		ok = ok && munmap(r, 4 * PAGE) == 0 && madvise(pages(1), PAGE, MADV_DONTNEED) == 0;
		_exit(ok ? 0 : 1);
	}
	T_CHECK(read(ready[0], &c, 1) == 1 && c == 'y', "the child watches");
	st = h_daemon_stop(e, 0, SIGKILL);
	T_CHECK(st != -1 && WIFSIGNALED(st), "daemon a killed (status %#x)", st);
	(void)!write(go[1], "g", 1);
	for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	if (!WIFEXITED(status))
		kill(pid, SIGKILL), waitpid(pid, &status, 0);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"after its daemon died, the child's munmap and madvise ran (status %#x)", status);
	T_EQ(h_daemon_start(e, 0, NULL), 0, "daemon a starts again");
}

static void body(struct h_env *e)
{
	h_checks_in_child(e, checks, "the watch checks");
	T_CHECK(h_counter(e->ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "watch_fired") >= 6 + THREADS * ROUNDS,
		"watch_fired %llu", h_counter(e->ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "watch_fired"));
	daemon_dies(e);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "e2e-watch", .watchdog_s = 240,
		.open = H_OPEN_A, .body = body };

	return h_main(argc, argv, &t);
}
