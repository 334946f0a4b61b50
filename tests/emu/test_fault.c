/* SPDX-License-Identifier: MIT */
/*
 * emu/fault: page requests resolved against this process and against a forked child, through
 * the handler thread with PROCMAP_QUERY and with the text of /proc/PID/maps (both must give
 * the same answers): holes, read-only and PROT_NONE VMAs, clipping and merging, NO_FAULT
 * with pagemap, the EMU_FAULT_MAX_MAPS policy, maps lines longer than the reader's buffer,
 * the names of special VMAs (the maps reader: tests/ipc/test_maps.c), injected failures and
 * delays, the queues and stop, inline resolution and the VMAs it shares, the polling
 * loop's looks, the files kept per client, and the userfaultfd registration (the child's
 * munmap and MADV_DONTNEED reach us as events). Every wait is bounded; the
 * child dies with us (PR_SET_PDEATHSIG) and is killed on the way out.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "host/fault.h"
#include "t.h"

#define P 4096ull
#define WAIT_MS 5000
#define ALT_PAGES 200	/* alternating r--/rw- pages for the max-maps policy */
#define DEEP_LEVELS 48	/* directories of 200 characters: a maps line of ~10 KB */

/* The layout both processes share (made before fork). Pages of `base`:
 * [0,4) rw  [4,6) r  [6] none  [7] hole  [8,12) rw  [12,14) r  [14,16) rw. */
static uint64_t base, nofault, alt, gone, filemap, deepmap;
static pid_t child = -1;
static int csock = -1;		/* our end of the socketpair to the child */
static int child_uffd = -1;
static struct emu_fault *F[2];	/* [0] PROCMAP_QUERY, [1] text */
static char deep_root[64];

static bool hole_intact(void);

struct target {
	pid_t pid;
	int maps_fd;
	const char *name;
};

struct tjob {
	struct emu_fault_job job;
	struct iopt_req req;
};

static void tjob_init(struct tjob *t, const struct target *tg, uint64_t va, uint64_t len,
	uint64_t need_va, uint64_t need_len, unsigned access, unsigned flags)
{
	memset(t, 0, sizeof(*t));
	t->req = (struct iopt_req){ .va = va, .len = len, .need_va = need_va,
		.need_len = need_len, .access = access, .flags = flags };
	t->job.req = &t->req;
	t->job.pid = tg->pid;
	t->job.maps_fd = tg->maps_fd;
	t->job.pagemap_fd = -1;
	t->job.uffd = -1;
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Submit and wait for the answer (bounded). */
static int run(struct emu_fault *f, struct tjob *t)
{
	struct emu_fault_job *got = NULL;

	emu_fault_submit(f, &t->job);
	if (!readable(emu_fault_eventfd(f), WAIT_MS) || emu_fault_take(f, &got, 1) != 1 ||
	    got != &t->job) {
		T_CHECK(0, "no answer within %d ms", WAIT_MS);
		exit(t_done("emu-fault"));	/* the job is still the thread's: cannot go on */
	}
	return t->job.err;
}

/* The answer is well formed: ascending, page aligned, inside the window, host == va, and
 * it covers the need with the access's permission. */
static void check_shape(const struct tjob *t, const char *what)
{
	const struct iopt_req *r = &t->req;
	unsigned want = r->access & IOPT_WRITE ? IOPT_WRITE : IOPT_READ;
	uint64_t prev = r->va, cur = r->need_va, need_end = r->need_va + r->need_len;

	T_CHECK(t->job.nmaps <= EMU_FAULT_MAX_MAPS, "%s: %u maps", what, t->job.nmaps);
	for (unsigned i = 0; i < t->job.nmaps && i < EMU_FAULT_MAX_MAPS; i++) {
		const struct iopt_map *m = &t->job.maps[i];

		T_CHECK(m->va >= prev && m->len && !(m->va % P) && !(m->len % P) &&
			m->va + m->len <= r->va + r->len && m->host == m->va &&
			(m->perm == IOPT_READ || m->perm == (IOPT_READ | IOPT_WRITE)),
			"%s: map %u %llx+%llx perm %u", what, i, (unsigned long long)m->va,
			(unsigned long long)m->len, m->perm);
		if (m->va <= cur && cur < m->va + m->len && (m->perm & want))
			cur = m->va + m->len;
		prev = m->va + m->len;
	}
	if (!t->job.err)
		T_CHECK(cur >= need_end, "%s: need not covered (to %llx)", what,
			(unsigned long long)cur);
}

struct want {
	uint64_t first, pages;	/* pages of `base` */
	unsigned perm;
};

static void check_maps(const struct tjob *t, uint64_t at, const struct want *w, unsigned n,
	const char *what)
{
	check_shape(t, what);
	T_EQ(t->job.nmaps, n, what);
	for (unsigned i = 0; i < n && i < t->job.nmaps; i++) {
		const struct iopt_map *m = &t->job.maps[i];

		T_CHECK(m->va == at + w[i].first * P && m->len == w[i].pages * P &&
			m->perm == w[i].perm, "%s: map %u is %llx+%llx/%u, want page %llu+%llu/%u",
			what, i, (unsigned long long)m->va, (unsigned long long)m->len, m->perm,
			(unsigned long long)w[i].first, (unsigned long long)w[i].pages, w[i].perm);
	}
}

#define R IOPT_READ
#define RW (IOPT_READ | IOPT_WRITE)
#define PF IOPT_REQ_PREFETCH

/* Resolve (window pages, need pages) of `base` and check the error. */
static struct tjob *req(struct emu_fault *f, const struct target *tg, uint64_t w0,
	uint64_t wn, uint64_t n0, uint64_t nn, unsigned access, unsigned flags, int err,
	const char *what)
{
	static struct tjob t;
	char msg[128];

	tjob_init(&t, tg, base + w0 * P, wn * P, base + n0 * P, nn * P, access, flags);
	snprintf(msg, sizeof(msg), "%s (%s)", what, tg->name);
	T_EQ(run(f, &t), (uint64_t)(int64_t)err, msg);
	if (!t.job.err)
		check_shape(&t, msg);
	else
		T_EQ(t.job.nmaps, 0, msg);
	return &t;
}

static void test_layout(struct emu_fault *f, const struct target *tg)
{
	static const struct want all[] = {
		{ 0, 4, RW }, { 4, 2, R }, { 8, 4, RW }, { 12, 2, R }, { 14, 2, RW } };
	static const struct want mid[] = { { 2, 2, RW }, { 4, 2, R }, { 8, 2, RW } };
	static const struct want rw8[] = { { 8, 4, RW } };
	struct tjob *t;

	T_CHECK(hole_intact(), "something was mapped into the layout's hole");
	t = req(f, tg, 0, 16, 1, 1, R, 0, 0, "read need in rw");
	check_maps(t, base, all, 5, "whole window");
	t = req(f, tg, 0, 16, 0, 0, R, PF, 0, "prefetch");
	check_maps(t, base, all, 5, "prefetch window");
	t = req(f, tg, 2, 8, 3, 1, IOPT_WRITE, 0, 0, "write need, clipped window");
	check_maps(t, base, mid, 3, "clipped window");
	t = req(f, tg, 8, 4, 8, 4, IOPT_WRITE, 0, 0, "write need = window");
	check_maps(t, base, rw8, 1, "exact window");
	req(f, tg, 0, 16, 4, 2, IOPT_WRITE, 0, -EACCES, "write on read-only");
	req(f, tg, 0, 16, 4, 2, IOPT_ATOMIC, 0, -EACCES, "atomic on read-only");
	req(f, tg, 0, 16, 4, 2, R, 0, 0, "read on read-only");
	req(f, tg, 0, 16, 6, 1, R, 0, -EACCES, "read on PROT_NONE");
	req(f, tg, 0, 16, 7, 1, R, 0, -EFAULT, "read on hole");
	req(f, tg, 0, 16, 5, 4, R, 0, -EACCES, "need r, none, hole: first problem");
	req(f, tg, 0, 16, 7, 2, R, 0, -EFAULT, "need hole, rw: first problem");
	req(f, tg, 0, 16, 3, 2, IOPT_WRITE, 0, -EACCES, "write need rw then r");
	req(f, tg, 6, 2, 0, 0, R, PF, -EFAULT, "prefetch of PROT_NONE + hole");
	req(f, tg, 7, 1, 0, 0, R, PF, -EFAULT, "prefetch of a hole");
	req(f, tg, 0, 16, 15, 2, R, 0, -EINVAL, "need past the window");
	req(f, tg, 0, 0, 0, 0, R, PF, -EINVAL, "empty window");
	req(f, tg, 0, 16, 1, 1, 0, 0, -EINVAL, "no access");
	{
		struct tjob u;

		tjob_init(&u, tg, base + 100, P, base + 100, 1, R, 0);
		T_EQ(run(f, &u), (uint64_t)-EINVAL, "unaligned window");
	}
}

/* This process touched pages 0 and 7 of `nofault` after fork, the child 1, 2 and 5. */
static void test_nofault(struct emu_fault *f, const struct target *tg, bool self)
{
	static const struct want mine[] = { { 0, 1, RW }, { 7, 1, RW } };
	static const struct want its[] = { { 1, 2, RW }, { 5, 1, RW } };
	struct tjob t;

	tjob_init(&t, tg, nofault, 8 * P, 0, 0, R, PF | IOPT_REQ_NO_FAULT);
	T_EQ(run(f, &t), 0, "no-fault");
	check_maps(&t, nofault, self ? mine : its, 2, tg->name);
	/* Mapped, nothing present: success with nothing mapped. */
	tjob_init(&t, tg, nofault + 3 * P, 2 * P, 0, 0, R, PF | IOPT_REQ_NO_FAULT);
	T_EQ(run(f, &t), 0, "no-fault, absent");
	T_EQ(t.job.nmaps, 0, "no-fault, absent: no maps");
	/* Nothing mapped: -EFAULT. */
	tjob_init(&t, tg, base + 7 * P, P, 0, 0, R, PF | IOPT_REQ_NO_FAULT);
	T_EQ(run(f, &t), (uint64_t)-EFAULT, "no-fault, hole");
}

/* ALT_PAGES pages alternating rw (even) and r (odd): one run per page. */
static void test_max_maps(struct emu_fault *f, const struct target *tg)
{
	struct tjob t;

	tjob_init(&t, tg, alt, ALT_PAGES * P, 0, 0, R, PF);
	T_EQ(run(f, &t), 0, "alt prefetch");
	check_shape(&t, "alt prefetch");
	T_EQ(t.job.nmaps, EMU_FAULT_MAX_MAPS, "alt prefetch: full");
	T_EQ(t.job.maps[0].va, alt, "alt prefetch: lowest first");
	T_EQ(t.job.maps[EMU_FAULT_MAX_MAPS - 1].va, alt + (EMU_FAULT_MAX_MAPS - 1) * P,
		"alt prefetch: contiguous");

	/* A write need in the middle: kept, then what follows. */
	tjob_init(&t, tg, alt, ALT_PAGES * P, alt + 100 * P, P, IOPT_WRITE, 0);
	T_EQ(run(f, &t), 0, "alt write");
	check_shape(&t, "alt write");
	T_EQ(t.job.nmaps, EMU_FAULT_MAX_MAPS, "alt write: full");
	T_EQ(t.job.maps[0].va, alt + 100 * P, "alt write: from the need on");

	/* A write need near the end: the array is filled backwards. */
	tjob_init(&t, tg, alt, ALT_PAGES * P, alt + 190 * P, P, IOPT_WRITE, 0);
	T_EQ(run(f, &t), 0, "alt write at end");
	check_shape(&t, "alt write at end");
	T_EQ(t.job.nmaps, EMU_FAULT_MAX_MAPS, "alt write at end: full");
	T_EQ(t.job.maps[0].va, alt + (ALT_PAGES - EMU_FAULT_MAX_MAPS) * P, "alt end: backwards");

	/* NO_FAULT: the even (rw) pages were written before fork, the odd ones never touched:
	 * 100 one-page runs, the lowest 64 kept. */
	tjob_init(&t, tg, alt, ALT_PAGES * P, 0, 0, R, PF | IOPT_REQ_NO_FAULT);
	T_EQ(run(f, &t), 0, "alt no-fault");
	check_shape(&t, "alt no-fault");
	T_EQ(t.job.nmaps, EMU_FAULT_MAX_MAPS, "alt no-fault: full");
	T_CHECK(t.job.maps[0].va == alt && t.job.maps[0].len == P &&
		t.job.maps[EMU_FAULT_MAX_MAPS - 1].va == alt + 2 * (EMU_FAULT_MAX_MAPS - 1) * P,
		"alt no-fault: every other page, lowest first");

	/* A read need of 100 runs: one read-only run for the need. */
	tjob_init(&t, tg, alt, ALT_PAGES * P, alt + 50 * P, 100 * P, R, 0);
	T_EQ(run(f, &t), 0, "alt long read");
	check_shape(&t, "alt long read");
	T_EQ(t.job.nmaps, EMU_FAULT_MAX_MAPS, "alt long read: full");
	{
		bool found = false;

		for (unsigned i = 0; i < t.job.nmaps; i++)
			found |= t.job.maps[i].va == alt + 50 * P &&
				t.job.maps[i].len == 100 * P && t.job.maps[i].perm == R;
		T_CHECK(found, "alt long read: the need as one read run");
	}
}

/* The longest line of /proc/PID/maps, to be sure the deep mapping's line is longer than the
 * text reader's 8 KiB buffer (MAPS_BUF in emu/host/fault.c). */
static size_t longest_line(pid_t pid)
{
	char path[64], buf[4096];
	size_t cur = 0, best = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++, cur++)
			if (buf[i] == '\n') {
				best = cur > best ? cur : best;
				cur = (size_t)-1;
			}
	if (fd >= 0)
		close(fd);
	return best;
}

/* The whole address space as a prefetch, with both readers: the same answer. Also a job
 * with maps_fd -1 (the thread opens the maps itself, and keeps it). */
static void test_readers_agree(const struct target *tg)
{
	struct tjob a, b;
	size_t longest = longest_line(tg->pid);

	T_CHECK(longest > 8192, "%s: longest maps line %zu bytes", tg->name, longest);
	/* This process's own allocator (a sanitizer's above all) may map memory between the
	 * two readings; the child's space holds still. A few tries, then a verdict. */
	for (int tries = 0; tries < 5; tries++) {
		tjob_init(&a, tg, 0, IOPT_VA_END, 0, 0, R, PF);
		a.job.maps_fd = -1;
		b = a;
		b.job.req = &b.req;
		/* The long-lived threads' resolvers: no allocation per job to move this
		 * process's heap between the two readings. */
		run(F[0], &a);
		run(F[1], &b);
		if (a.job.nmaps == b.job.nmaps &&
		    !memcmp(a.job.maps, b.job.maps, a.job.nmaps * sizeof(a.job.maps[0])))
			break;
	}
	T_EQ(a.job.err, 0, "whole space, query");
	T_EQ(b.job.err, 0, "whole space, text");
	T_EQ(a.job.nmaps, b.job.nmaps, "readers: map count");
	T_CHECK(!memcmp(a.job.maps, b.job.maps, a.job.nmaps * sizeof(a.job.maps[0])),
		"readers disagree (%s)", tg->name);
	check_shape(&a, "whole space");
	/* The ~10 KB line (cut by the text reader) and the name PROCMAP_QUERY cannot return. */
	for (int text = 0; text < 2; text++) {
		tjob_init(&a, tg, deepmap, P, deepmap, P, R, 0);
		emu_fault_resolve(NULL, text, &a.job, NULL);
		T_CHECK(a.job.err == 0 && a.job.nmaps == 1 && a.job.maps[0].perm == R,
			"long path mapping (%s, text %d): err %d", tg->name, text, a.job.err);
	}
}

static void test_gone(struct emu_fault *f, const struct target *tg, bool self)
{
	struct tjob t;

	tjob_init(&t, tg, gone, P, gone, P, IOPT_WRITE, 0);
	T_EQ(run(f, &t), self ? (uint64_t)-EFAULT : 0, "unmapped here, mapped there");
}

static void test_targets(const struct target *self, const struct target *kid)
{
	for (int m = 0; m < 2; m++) {
		test_layout(F[m], self);
		test_layout(F[m], kid);
		test_nofault(F[m], self, true);
		test_nofault(F[m], kid, false);
		test_max_maps(F[m], self);
		test_max_maps(F[m], kid);
		test_gone(F[m], self, true);
		test_gone(F[m], kid, false);
	}
	test_readers_agree(self);
	test_readers_agree(kid);
}

/* ---- special VMAs (the maps reader itself: test_maps.c) ---- */

static void special_is(const char *name, bool special)
{
	T_CHECK(emu_fault_special_vma(name, strlen(name)) == special,
		"name '%s': want special %d", name, special);
}

static void test_special_names(void)
{
	special_is("[vvar]", true);
	special_is("[vvar_vclock]", true);
	special_is("[vsyscall]", true);
	special_is("[heap]", false);
	special_is("[stack]", false);
	special_is("[vdso]", false);		/* real pages: the code of the vDSO */
	special_is("", false);			/* anonymous */
	special_is("/memfd:x (deleted)", false);
	special_is("/usr/bin/a b [vvar]", false);
	special_is("[vvar]x", false);
	special_is("[vvar", false);
	/* A name cut short by its length, as the reader hands over: only the length counts. */
	T_CHECK(emu_fault_special_vma("[vvar]x", 6), "name '[vvar]' within '[vvar]x'");
}

/* ---- injection ---- */

static void test_inject(const struct target *tg)
{
	struct emu_delay fixed = { EMU_DELAY_FIXED, 500, 0 };
	struct emu_fault_stats st;
	struct emu_inject inj;
	struct emu_fault *f;
	struct tjob t;

	emu_inject_init(&inj, 7);
	T_EQ(emu_fault_start(&inj, &f), 0, "start");
	emu_inject_set_fail_rate(&inj, 1.0);
	for (int i = 0; i < 20; i++) {
		tjob_init(&t, tg, base, 16 * P, base, P, R, 0);
		T_EQ(run(f, &t), (uint64_t)-EIO, "fail rate 1");
		T_EQ(t.job.nmaps, 0, "fail rate 1: no maps");
	}
	emu_inject_set_fail_rate(&inj, 0);
	emu_inject_set_delay(&inj, &fixed);
	for (int i = 0; i < 20; i++) {
		tjob_init(&t, tg, base, 16 * P, base, P, R, 0);
		T_EQ(run(f, &t), 0, "delay 500");
		T_EQ(t.job.due_ns - t.job.resolved_ns, 500000, "due = resolved + 500 us");
		T_CHECK(t.job.enqueued_ns && t.job.resolved_ns >= t.job.enqueued_ns,
			"enqueued %llu resolved %llu", (unsigned long long)t.job.enqueued_ns,
			(unsigned long long)t.job.resolved_ns);
	}
	emu_fault_stats_get(f, &st);
	T_EQ(st.jobs, 40, "stats: jobs");
	T_EQ(st.injected_fail, 20, "stats: injected");
	emu_fault_destroy(f);
	emu_inject_fini(&inj);
}

/* ---- the queues ---- */

/* ---- inline resolution, the loop's looks, the kept files ---- */

static unsigned open_fds(void)
{
	unsigned n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static uint64_t reused(struct emu_fault *f)
{
	struct emu_fault_stats st;

	emu_fault_stats_get(f, &st);
	return st.batch_reused;
}

static bool query_here;	/* query_available(), asked in main before any thread starts */

/* What the host report (emu/check.h, ODPEMU_MASK included) says of PROCMAP_QUERY: the
 * inline path is promised only where it is available. Its probes fork. */
static bool query_available(void)
{
	struct emu_check_report rep;
	char err[512];

	return emu_check_run(&rep, getenv("ODPEMU_MASK"), false, err, sizeof(err)) == 0 &&
	       emu_check_available(&rep, "procmap_query");
}

/* Without PROCMAP_QUERY (before Linux 6.11, or masked): the first job runs inline on the
 * text; later ones stay inline while the text walks are within the limit (set high here:
 * this process maps many VMAs), and go to the thread, with the same answers, once a walk
 * was longer than it (a limit of 0). */
static void test_inline_text(const struct target *tg)
{
	struct emu_fault *f;
	struct tjob a, b;

	printf("# procmap_query not available here: the text path's promise is checked\n");
	T_EQ(emu_fault_start(NULL, &f), 0, "start");
	T_EQ(emu_fault_text_inline_lines(f), 128, "the default limit");
	tjob_init(&a, tg, base, 16 * P, base + 8 * P, P, RW, 0);
	tjob_init(&b, tg, base, 16 * P, base + 8 * P, P, RW, 0);
	a.job.maps_fd = b.job.maps_fd = -1;
	T_CHECK(emu_fault_resolve_now(f, &a.job) && a.job.err == 0,
		"the first job inline, on the text");
	emu_fault_set_text_inline_lines(f, 1u << 20);
	emu_fault_forget_vmas(f);	/* a new round: the next job walks the text again */
	T_CHECK(emu_fault_resolve_now(f, &b.job) && b.job.err == 0,
		"a text within the limit: the next job inline too");
	emu_fault_set_text_inline_lines(f, 0);
	emu_fault_forget_vmas(f);
	tjob_init(&b, tg, base, 16 * P, base + 8 * P, P, RW, 0);
	b.job.maps_fd = -1;
	T_CHECK(!emu_fault_resolve_now(f, &b.job), "a walk over the limit: the thread's work");
	T_EQ(run(f, &b), 0, "the thread's answer");
	T_EQ(a.job.nmaps, b.job.nmaps, "inline and thread: same maps");
	emu_fault_destroy(f);
}

/* Inline answers are the thread's answers; VMAs settled inline serve later jobs until
 * emu_fault_forget_vmas, and not after (an unmapped region then fails as it should). */
static void test_inline(const struct target *tg)
{
	struct emu_fault *f;
	struct tjob a, b;
	uint64_t r0;
	void *x = mmap(NULL, 4 * P, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	T_CHECK(x != MAP_FAILED, "mmap");
	T_EQ(emu_fault_start(NULL, &f), 0, "start");
	tjob_init(&a, tg, base, 16 * P, base + 8 * P, P, RW, 0);
	tjob_init(&b, tg, base, 16 * P, base + 8 * P, P, RW, 0);
	a.job.maps_fd = b.job.maps_fd = -1;	/* the resolvers' own cached files */
	T_CHECK(emu_fault_resolve_now(f, &a.job), "inline where PROCMAP_QUERY works");
	T_EQ(run(f, &b), 0, "the thread's answer");
	T_EQ(a.job.err, 0, "inline answer");
	T_EQ(a.job.nmaps, b.job.nmaps, "inline and thread: same maps");
	for (unsigned i = 0; i < a.job.nmaps && i < b.job.nmaps; i++)
		T_CHECK(a.job.maps[i].va == b.job.maps[i].va && a.job.maps[i].len ==
			b.job.maps[i].len && a.job.maps[i].perm == b.job.maps[i].perm,
			"inline and thread: run %u the same", i);

	emu_fault_forget_vmas(f);
	r0 = reused(f);
	tjob_init(&a, tg, (uintptr_t)x, 4 * P, (uintptr_t)x, P, RW, 0);
	a.job.maps_fd = -1;
	T_CHECK(emu_fault_resolve_now(f, &a.job) && a.job.err == 0, "fresh region, inline");
	tjob_init(&a, tg, (uintptr_t)x, 4 * P, (uintptr_t)x + 3 * P, P, RW, 0);
	a.job.maps_fd = -1;
	T_CHECK(emu_fault_resolve_now(f, &a.job) && a.job.err == 0, "same VMA again");
	T_EQ(reused(f) - r0, 1, "the second job reused the settled VMA");
	munmap(x, 4 * P);
	emu_fault_forget_vmas(f);
	a.job.err = 0;
	T_CHECK(emu_fault_resolve_now(f, &a.job), "after the unmap, inline");
	T_EQ(a.job.err, (uint64_t)-EFAULT, "forgotten VMAs: the unmap is seen");
	T_EQ(reused(f) - r0, 1, "nothing reused after forget_vmas");

	emu_fault_set_inline(f, false);
	T_CHECK(!emu_fault_resolve_now(f, &a.job), "inline off: the thread's work");
	emu_fault_destroy(f);

	T_EQ(emu_fault_start(NULL, &f), 0, "start");
	emu_fault_set_text_maps(f, true);
	emu_fault_set_text_inline_lines(f, 0);
	T_CHECK(emu_fault_resolve_now(f, &a.job), "text maps: the first job inline");
	T_CHECK(!emu_fault_resolve_now(f, &a.job), "then, over a limit of 0, never inline");
	emu_fault_destroy(f);
}

/* A polling loop is told through answers_waiting and the eventfd stays quiet; a sleeping
 * one gets the eventfd. */
static void test_polling(const struct target *tg)
{
	struct emu_fault_job *got = NULL;
	struct emu_fault *f;
	struct tjob t;
	int spins = 0;

	T_EQ(emu_fault_start(NULL, &f), 0, "start");
	emu_fault_set_polling(f, true);
	tjob_init(&t, tg, base, 4 * P, base, P, R, 0);
	emu_fault_submit(f, &t.job);
	while (!emu_fault_answers_waiting(f) && spins++ < WAIT_MS * 10)
		usleep(100);
	T_CHECK(emu_fault_answers_waiting(f), "polling: answers_waiting");
	T_CHECK(!readable(emu_fault_eventfd(f), 0), "polling: no eventfd write");
	T_EQ(emu_fault_take(f, &got, 1), 1, "take");
	T_CHECK(!emu_fault_answers_waiting(f), "taken: nothing waits");
	emu_fault_set_polling(f, false);
	T_EQ(run(f, &t), 0, "sleeping: the eventfd wakes");
	T_CHECK(!readable(emu_fault_eventfd(f), 0), "eventfd quiet once taken");
	emu_fault_destroy(f);
}

/* The thread keeps a client's /proc files open across jobs, and closes them when told the
 * client is gone. */
static void test_kept_files(const struct target *tg)
{
	struct emu_fault *f;
	struct tjob t;
	unsigned before, kept;
	int spins = 0;

	T_EQ(emu_fault_start(NULL, &f), 0, "start");
	before = open_fds();
	for (int i = 0; i < 3; i++) {
		tjob_init(&t, tg, base, 4 * P, base, P, R, 0);
		t.job.maps_fd = -1;
		t.job.client = 7;
		T_EQ(run(f, &t), 0, "job with the thread's own maps fd");
	}
	kept = open_fds();
	T_EQ(kept, before + 1, "one maps fd kept for the client, not one per job");
	emu_fault_forget(f, 7);
	while (open_fds() != before && spins++ < WAIT_MS * 10)
		usleep(100);
	T_EQ(open_fds(), before, "forget closes it");
	emu_fault_destroy(f);
}

static void test_queue(const struct target *tg)
{
	enum { N = 100 };
	static struct tjob jobs[N], late;
	struct emu_fault_job *got[7];
	struct emu_fault_stats st;
	struct emu_fault *f;
	unsigned seen = 0;

	T_EQ(emu_fault_start(NULL, &f), 0, "start");
	for (int i = 0; i < N; i++) {
		tjob_init(&jobs[i], tg, base, 16 * P, base + (i % 16) * P, P, R, 0);
		jobs[i].job.owner = &jobs[i];
		emu_fault_submit(f, &jobs[i].job);
	}
	while (seen < N && readable(emu_fault_eventfd(f), WAIT_MS)) {
		unsigned n = emu_fault_take(f, got, 7);

		for (unsigned i = 0; i < n; i++, seen++) {
			int want = seen % 16 == 6 ? -EACCES : seen % 16 == 7 ? -EFAULT : 0;

			T_CHECK(got[i]->owner == &jobs[seen], "answer %u out of order", seen);
			T_EQ(got[i]->err, want, "queued job's answer");
		}
	}
	T_EQ(seen, N, "all answered");
	T_CHECK(!readable(emu_fault_eventfd(f), 0), "eventfd quiet when nothing waits");
	T_EQ(emu_fault_take(f, got, 7), 0, "nothing left");
	emu_fault_stats_get(f, &st);
	T_EQ(st.jobs, N, "stats: jobs");
	T_EQ(st.failed_access, N / 16 + (N % 16 > 6), "stats: PROT_NONE page");
	T_EQ(st.failed_unmapped, N / 16 + (N % 16 > 7), "stats: hole page");

	/* Stop with work queued: every job comes back, resolved or cancelled. */
	for (int i = 0; i < N; i++) {
		tjob_init(&jobs[i], tg, base, 16 * P, base, P, R, 0);
		emu_fault_submit(f, &jobs[i].job);
	}
	emu_fault_stop(f);
	emu_fault_stop(f);
	tjob_init(&late, tg, base, 16 * P, base, P, R, 0);
	emu_fault_submit(f, &late.job);
	seen = 0;
	{
		unsigned cancelled = 0, n;

		while ((n = emu_fault_take(f, got, 7)) > 0)
			for (unsigned i = 0; i < n; i++, seen++) {
				cancelled += got[i]->err == -ECANCELED;
				T_CHECK(!got[i]->err || got[i]->err == -ECANCELED, "after stop: %d",
					got[i]->err);
			}
		T_EQ(seen, N + 1, "stop: every job returned");
		T_CHECK(cancelled >= 1 && late.job.err == -ECANCELED, "submit after stop");
	}
	emu_fault_destroy(f);
}

/* ---- the child and its userfaultfd ---- */

struct cmd {
	char op;		/* 'u' munmap, 'd' MADV_DONTNEED, 'q' exit */
	uint64_t va, len;
};

static int send_fd(int sock, int fd)
{
	char byte = fd >= 0 ? 'f' : 'n';
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char byte, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
		.msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;
	int fd = -1;

	if (!readable(sock, WAIT_MS) || recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1)
		return -2;
	c = CMSG_FIRSTHDR(&mh);
	if (byte == 'f' && c && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* The client side: a userfaultfd with the notifier's events (docs/emu.md). */
static int make_uffd(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_UNMAP |
		UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_REMAP };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	if (fd >= 0 && ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void child_main(int sock)
{
	int uffd;
	struct cmd c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(0);
	((volatile char *)nofault)[1 * P] = 1;
	((volatile char *)nofault)[2 * P] = 1;
	((volatile char *)nofault)[5 * P] = 1;
	uffd = make_uffd();
	if (send_fd(sock, uffd))
		_exit(1);
	if (uffd >= 0)
		close(uffd);	/* the parent's copy keeps it alive */
	while (read(sock, &c, sizeof(c)) == sizeof(c)) {
		int rc = 0;

		if (c.op == 'q')
			break;
		if (c.op == 'u')
			rc = munmap((void *)(uintptr_t)c.va, c.len);
		if (c.op == 'd')
			rc = madvise((void *)(uintptr_t)c.va, c.len, MADV_DONTNEED);
		if (write(sock, &rc, sizeof(rc)) != sizeof(rc))
			break;
	}
	_exit(0);
}

/* Ask the child to do c; it blocks in the kernel until we read the event. */
static void expect_event(const struct cmd *c, uint8_t event, const char *what)
{
	struct uffd_msg msg;
	int rc = -1;

	T_CHECK(write(csock, c, sizeof(*c)) == sizeof(*c), "%s: command", what);
	if (!readable(child_uffd, WAIT_MS)) {
		T_CHECK(0, "%s: no event within %d ms", what, WAIT_MS);
		return;
	}
	T_CHECK(read(child_uffd, &msg, sizeof(msg)) == sizeof(msg), "%s: read event", what);
	T_EQ(msg.event, event, what);
	T_EQ(msg.arg.remove.start, c->va, what);
	T_EQ(msg.arg.remove.end, c->va + c->len, what);
	T_CHECK(readable(csock, WAIT_MS) && read(csock, &rc, sizeof(rc)) == sizeof(rc) && !rc,
		"%s: the child's call returned (%d)", what, rc);
}

static void test_uffd(const struct target *kid)
{
	struct emu_fault_stats st;
	struct tjob t;
	struct cmd c;

	if (child_uffd < 0) {
		printf("userfaultfd not available in the child: uffd test skipped\n");
		return;
	}
	/* Window [8,16): three VMAs (rw, r, rw) registered, need page 8. */
	tjob_init(&t, kid, base + 8 * P, 8 * P, base + 8 * P, P, IOPT_WRITE, 0);
	t.job.uffd = child_uffd;
	T_EQ(run(F[0], &t), 0, "uffd job");
	emu_fault_stats_get(F[0], &st);
	T_CHECK(st.uffd_registered >= 3 && st.uffd_refused == 0, "registered %llu refused %llu",
		(unsigned long long)st.uffd_registered, (unsigned long long)st.uffd_refused);

	/* A file-backed private mapping: the kernel refuses; the job succeeds anyway. */
	tjob_init(&t, kid, filemap, P, filemap, P, R, 0);
	t.job.uffd = child_uffd;
	T_EQ(run(F[0], &t), 0, "refused VMA still answered");
	emu_fault_stats_get(F[0], &st);
	T_CHECK(st.uffd_refused >= 1, "refused %llu", (unsigned long long)st.uffd_refused);

	c = (struct cmd){ 'u', base + 9 * P, P };
	expect_event(&c, UFFD_EVENT_UNMAP, "munmap page 9");
	c = (struct cmd){ 'd', base + 14 * P, P };
	expect_event(&c, UFFD_EVENT_REMOVE, "MADV_DONTNEED page 14");
	/* The unmapped page is a hole now. */
	tjob_init(&t, kid, base + 8 * P, 8 * P, base + 9 * P, P, R, 0);
	T_EQ(run(F[1], &t), (uint64_t)-EFAULT, "page 9 gone in the child");
}

/* ---- setup ---- */

static void *map_at(uint64_t va, uint64_t pages, int prot)
{
	void *p = mmap((void *)(uintptr_t)va, pages * P, prot,
		MAP_PRIVATE | MAP_ANONYMOUS | (va ? MAP_FIXED : 0), -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

/* A reservation of n pages with a PROT_NONE guard on each side; returns the inside. */
static uint64_t reserve(uint64_t n)
{
	uint64_t r = (uint64_t)(uintptr_t)map_at(0, n + 2, PROT_NONE);

	return r + P;
}

static void rm_deep(void);

/* A file mapped from a directory DEEP_LEVELS x 200 characters deep: its maps line is
 * longer than the text reader's buffer and its name longer than PROCMAP_QUERY's. */
static uint64_t map_deep(void)
{
	char name[201];
	int dir, fd;
	void *p;

	memset(name, 'd', 200);
	name[200] = '\0';
	strcpy(deep_root, "/tmp/odpemu-fault-XXXXXX");
	if (!mkdtemp(deep_root))
		return 0;
	/* Removed on every exit() path; the child leaves with _exit() and never runs it. */
	atexit(rm_deep);
	if ((dir = open(deep_root, O_RDONLY | O_DIRECTORY)) < 0)
		return 0;
	for (int i = 0; i < DEEP_LEVELS; i++) {
		int sub;

		if (mkdirat(dir, name, 0700) || (sub = openat(dir, name, O_RDONLY | O_DIRECTORY)) < 0)
			return 0;
		close(dir);
		dir = sub;
	}
	fd = openat(dir, "file", O_RDWR | O_CREAT, 0600);
	close(dir);
	if (fd < 0 || ftruncate(fd, (off_t)P))
		return 0;
	p = mmap(NULL, P, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? 0 : (uint64_t)(uintptr_t)p;
}

static void rm_deep(void)
{
	char name[201];
	int fds[DEEP_LEVELS + 1], n = 0;

	if (!deep_root[0])
		return;
	memset(name, 'd', 200);
	name[200] = '\0';
	fds[0] = open(deep_root, O_RDONLY | O_DIRECTORY);
	while (fds[n] >= 0 && n < DEEP_LEVELS) {
		fds[n + 1] = openat(fds[n], name, O_RDONLY | O_DIRECTORY);
		n++;
	}
	if (fds[n] >= 0)
		unlinkat(fds[n], "file", 0);
	for (int i = n; i >= 0; i--) {
		if (fds[i] < 0)
			continue;
		if (i > 0 && fds[i - 1] >= 0)
			unlinkat(fds[i - 1], name, AT_REMOVEDIR);
		close(fds[i]);
	}
	rmdir(deep_root);
	deep_root[0] = '\0';
}

static void build_layout(void)
{
	int fd;
	void *p;

	base = reserve(16);
	map_at(base, 4, PROT_READ | PROT_WRITE);
	map_at(base + 4 * P, 2, PROT_READ);
	map_at(base + 6 * P, 1, PROT_NONE);
	map_at(base + 8 * P, 4, PROT_READ | PROT_WRITE);
	map_at(base + 12 * P, 2, PROT_READ);
	map_at(base + 14 * P, 2, PROT_READ | PROT_WRITE);

	nofault = reserve(8);
	map_at(nofault, 8, PROT_READ | PROT_WRITE);
	madvise((void *)(uintptr_t)nofault, 8 * P, MADV_NOHUGEPAGE);

	alt = reserve(ALT_PAGES);
	map_at(alt, ALT_PAGES, PROT_READ | PROT_WRITE);
	madvise((void *)(uintptr_t)alt, ALT_PAGES * P, MADV_NOHUGEPAGE);
	for (int i = 0; i < ALT_PAGES; i += 2)
		((volatile char *)(uintptr_t)alt)[(uint64_t)i * P] = 1;
	for (int i = 1; i < ALT_PAGES; i += 2)
		mprotect((void *)(uintptr_t)(alt + (uint64_t)i * P), P, PROT_READ);

	gone = reserve(1);
	map_at(gone, 1, PROT_READ | PROT_WRITE);

	/* A private mapping of a file on a disk file system (/tmp may be tmpfs, which the
	 * kernel lets userfaultfd register): our own executable. */
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	p = fd < 0 ? MAP_FAILED : mmap(NULL, P, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		perror("map /proc/self/exe");
		exit(1);
	}
	filemap = (uint64_t)(uintptr_t)p;
	close(fd);

	deepmap = map_deep();
	if (!deepmap) {
		perror("deep directory");
		exit(1);
	}
	/* The hole last: the kernel puts a new mapping in the highest gap that fits, and a
	 * one-page gap fits any one-page mmap. */
	munmap((void *)(uintptr_t)(base + 7 * P), P);
}

/* Is page 7 of base still a hole here? (msync: ENOMEM on unmapped memory) */
static bool hole_intact(void)
{
	return msync((void *)(uintptr_t)(base + 7 * P), P, MS_ASYNC) && errno == ENOMEM;
}

static void start_child(void)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		exit(1);
	child = fork();
	if (child < 0)
		exit(1);
	if (!child) {
		close(sv[0]);
		child_main(sv[1]);
	}
	close(sv[1]);
	csock = sv[0];
	child_uffd = recv_fd(csock);
	if (child_uffd == -2) {
		fprintf(stderr, "the child did not start\n");
		kill(child, SIGKILL);
		exit(1);
	}
	/* After fork: this process's own touches and unmaps, so answers tell us apart. */
	((volatile char *)nofault)[0] = 1;
	((volatile char *)nofault)[7 * P] = 1;
	munmap((void *)(uintptr_t)gone, P);
}

static void stop_child(void)
{
	struct cmd c = { 'q', 0, 0 };

	if (child <= 0)
		return;
	if (write(csock, &c, sizeof(c)) == sizeof(c)) {
		for (int i = 0; i < 200 && waitpid(child, NULL, WNOHANG) == 0; i++)
			usleep(10000);
	}
	kill(child, SIGKILL);	/* no-op if it exited (still our zombie until waited) */
	waitpid(child, NULL, 0);
	child = -1;
}

int main(int argc, char **argv)
{
	struct target self = { getpid(), -1, "self" }, kid;
	int rc;

	t_seed(argc, argv, 1);
	query_here = query_available();	/* before any thread: the probes fork */
	build_layout();
	start_child();	/* before any thread: fork copies only the calling thread */
	kid = (struct target){ child, -1, "child" };
	self.maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	{
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/maps", (int)child);
		kid.maps_fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	T_CHECK(self.maps_fd >= 0 && kid.maps_fd >= 0, "open maps");
	T_EQ(emu_fault_start(NULL, &F[0]), 0, "start query");
	T_EQ(emu_fault_start(NULL, &F[1]), 0, "start text");
	emu_fault_set_text_maps(F[1], true);

	test_special_names();
	test_targets(&self, &kid);
	test_inject(&self);
	test_queue(&self);
	if (query_here)
		test_inline(&self);
	else
		test_inline_text(&self);
	test_polling(&self);
	test_kept_files(&kid);
	test_uffd(&kid);

	emu_fault_destroy(F[0]);
	emu_fault_destroy(F[1]);
	if (child_uffd >= 0)
		close(child_uffd);
	stop_child();
	close(self.maps_fd);
	close(kid.maps_fd);
	rc = t_done("emu-fault");
	return rc;
}
