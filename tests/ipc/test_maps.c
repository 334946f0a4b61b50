/* SPDX-License-Identifier: MIT */
/*
 * ipc/maps: the /proc/PID/maps reader the library and the daemon share.
 *  - the line parser on crafted lines: names with spaces, " (deleted)", [heap], [stack],
 *    [vdso], [anon:...], anonymous with and without the trailing space, malformed lines;
 *  - the text path on crafted files (a memfd): a walk keeps to [lo, hi), stops after the
 *    VMA that reaches hi, cuts a line longer than its buffer and goes on, takes a last
 *    line without '\n', and says -EPROTO for a line it cannot parse;
 *  - the fallback: on a file without PROCMAP_QUERY (a memfd answers ENOTTY, as
 *    /proc/PID/maps before Linux 6.11) a query walk turns to the text by itself and stays;
 *  - both paths on a real process (a forked child that holds still): the same VMAs, field
 *    for field, including a file whose name has spaces, a deleted file, [stack], [heap],
 *    anonymous and PROT_NONE memory, and the VMAs of a range; a gone process ends walks;
 *    a text walk of the whole space hands over one VMA per line (emu/limits.c counts so);
 *  - the test switch: ODPEMU_MASK naming procmap_query (a whole word of the list) makes a
 *    query walk of the process's own maps read the text from its first VMA on; a word
 *    that only starts so does not (each case in a child of a process that has not walked
 *    yet: the look is once per process, and a fork child inherits it).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "maps.h"
#include "mask.h"
#include "t.h"

#define P 4096ull
#define NAME_CAP 512		/* a recorded VMA's name (the crafted long line: its start) */
#define MAX_VMAS 8192

/* A VMA with its name copied out of the reader. */
struct rec {
	struct ipc_vma v;
	char name[NAME_CAP];
};

static struct ipc_maps *M;	/* 12 KiB: not on the stack */

static bool name_is(const struct ipc_vma *v, const char *name)
{
	return v->name_len == strlen(name) && !memcmp(v->name, name, v->name_len);
}

/* ---- the parser ---- */

static void line_ok(const char *line, uint64_t start, uint64_t end, unsigned prot,
	uint64_t off, uint32_t major, uint32_t minor, uint64_t ino, const char *name)
{
	struct ipc_vma v;
	int rc = ipc_maps_parse_line(line, strlen(line), &v);

	T_CHECK(!rc && v.start == start && v.end == end && v.prot == prot && v.offset == off &&
		v.dev_major == major && v.dev_minor == minor && v.inode == ino &&
		name_is(&v, name), "line '%s' (rc %d, name '%.*s')", line, rc,
		rc ? 0 : (int)v.name_len, rc ? "" : v.name);
}

static void test_parse(void)
{
	static const char *const bad[] = {
		"", "zz-10 rw-p 0 00:00 0", "10-20 rwzp 0 00:00 0", "20-10 rw-p 0 00:00 0",
		"10-10 rw-p 0 00:00 0", "10-20 rw-p", "10-20 rw-p 0 00:00", "10-20 rw-p 0",
		"10000000000000000-20000000000000000 rw-p 0 00:00 0", "10 20 rw-p 0 00:00 0",
		"10-20  rw-p 0 00:00 0", "10-20 rw-x 0 00:00 0", "10-20 rw-p0 00:00 0",
		"-20 rw-p 0 00:00 0", "10- rw-p 0 00:00 0", "10-20 RW-P 0 00:00 0",
		"10-20 rw-p 0 0000 0", "10-20 rw-p 0 00: 0", "10-20 rw-p 0 00:00 x",
		"10-20 rw-p 0 00:00 12x /a", "10-20 rw-p 0 100000000:00 0",
		"10-20 rw-p 0 00:00 99999999999999999999",
	};
	const uint32_t RW = IPC_VMA_R | IPC_VMA_W;
	struct ipc_vma v;

	line_ok("55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          "
		"[heap]", 0x55d0c0a00000, 0x55d0c0a21000, RW, 0, 0, 0, 0, "[heap]");
	line_ok("7ffd1b7d6000-7ffd1b7f7000 rw-p 00000000 00:00 0                          "
		"[stack]", 0x7ffd1b7d6000, 0x7ffd1b7f7000, RW, 0, 0, 0, 0, "[stack]");
	line_ok("7ffd1b7f8000-7ffd1b7fa000 r-xp 00000000 00:00 0    [vdso]",
		0x7ffd1b7f8000, 0x7ffd1b7fa000, IPC_VMA_R | IPC_VMA_X, 0, 0, 0, 0, "[vdso]");
	line_ok("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  "
		"[vsyscall]", 0xffffffffff600000, 0xffffffffff601000, IPC_VMA_X, 0, 0, 0, 0,
		"[vsyscall]");
	/* Anonymous: the kernel ends the fields with a space and pads only before a name. */
	line_ok("7f0000000000-7f0000004000 rw-p 00000000 00:00 0 ", 0x7f0000000000,
		0x7f0000004000, RW, 0, 0, 0, 0, "");
	line_ok("7f00-7f01 ---p 00000000 00:00 0", 0x7f00, 0x7f01, 0, 0, 0, 0, 0, "");
	line_ok("7f0000000000-7f0000001000 rw-s 00000000 00:01 1234                       "
		"/memfd:odpemu-pin (deleted)", 0x7f0000000000, 0x7f0000001000,
		RW | IPC_VMA_SHARED, 0, 0, 1, 1234, "/memfd:odpemu-pin (deleted)");
	line_ok("00400000-00401000 r-xp 0000a000 103:02 131 /usr/bin/a b  c (deleted)",
		0x400000, 0x401000, IPC_VMA_R | IPC_VMA_X, 0xa000, 0x103, 2, 131,
		"/usr/bin/a b  c (deleted)");
	line_ok("7f1000-7f2000 r--s 7fffffff000 fd:1f 18446744073709551615 [anon:my name]",
		0x7f1000, 0x7f2000, IPC_VMA_R | IPC_VMA_SHARED, 0x7fffffff000, 0xfd, 0x1f,
		UINT64_MAX, "[anon:my name]");
	line_ok("7f00-7f01 r--p 00000000 08:01 131 /a\\012b", 0x7f00, 0x7f01, IPC_VMA_R, 0,
		8, 1, 131, "/a\\012b");	/* a newline in a path, as the text escapes it */
	for (size_t i = 0; i < T_ARRAY_SIZE(bad); i++)
		T_CHECK(ipc_maps_parse_line(bad[i], strlen(bad[i]), &v) == -EINVAL,
			"bad line '%s' parsed", bad[i]);
	/* A line cut short inside its name, as the reader hands over a 10 KB line. */
	T_CHECK(!ipc_maps_parse_line("10-20 r--p 0 00:00 0 /ab", 22, &v) && name_is(&v, "/"),
		"cut line");
}

/* ---- the text path and the fallback, on crafted files ---- */

/* A memfd holding text: ioctl on it answers ENOTTY, as /proc/PID/maps before 6.11. */
static int crafted(const char *text)
{
	int fd = memfd_create("odpemu-maps-test", MFD_CLOEXEC);
	size_t len = strlen(text);

	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		T_CHECK(0, "memfd: %s", strerror(errno));
		exit(t_done("ipc-maps"));
	}
	return fd;
}

/* Walk [lo, hi) into out (at most max); the count, or -errno. text: 1 read the text, 0
 * ask PROCMAP_QUERY first, -1 as the last walk left it. */
static int walk(int fd, int text, uint64_t lo, uint64_t hi, struct rec *out, int max)
{
	struct ipc_vma v;
	int n = 0, rc;

	if (text >= 0)
		M->text = text;
	ipc_maps_begin(M, fd, lo, hi);
	while ((rc = ipc_maps_next(M, &v)) > 0 && n < max) {
		size_t len = v.name_len < NAME_CAP ? v.name_len : NAME_CAP - 1;

		out[n].v = v;
		memcpy(out[n].name, v.name, len);
		out[n].name[len] = '\0';
		out[n].v.name = out[n].name;
		out[n].v.name_len = v.name_len;
		n++;
	}
	return rc < 0 ? rc : n;
}

static const char FILE_TEXT[] =
	"1000-2000 r--p 00000000 08:01 11 /bin/a b\n"
	"2000-4000 rw-p 00001000 08:01 11 /bin/a b\n"
	"4000-6000 rw-p 00000000 00:00 0 \n"
	"7000-8000 rw-s 00000000 00:05 99 /memfd:x (deleted)\n"
	"8000-9000 r-xp 00000000 00:00 0 [vdso]";	/* no '\n' at the end */

struct window {
	uint64_t lo, hi;
	int n;			/* VMAs meeting it */
	uint64_t first;		/* the start of the first */
};

/* Windows over FILE_TEXT, walked by the text and, from a query walk, by the fallback
 * (which the first window finds, and the later ones keep). */
static void test_windows(int fd, bool text)
{
	static const struct window w[] = {
		{ 0, UINT64_MAX, 5, 0x1000 }, { 0x3000, 0x5000, 2, 0x2000 },
		{ 0x1fff, 0x2001, 2, 0x1000 }, { 0x6000, 0x7000, 0, 0 },
		{ 0x6000, 0x7001, 1, 0x7000 }, { 0x8fff, 0x9000, 1, 0x8000 },
		{ 0x9000, UINT64_MAX, 0, 0 }, { 0x5000, 0x5000, 0, 0 }, { 0x5000, 0x4000, 0, 0 },
	};
	struct rec r[8];

	M->text = text;
	for (size_t i = 0; i < T_ARRAY_SIZE(w); i++) {
		int n = walk(fd, -1, w[i].lo, w[i].hi, r, 8);

		T_CHECK(n == w[i].n && (!n || r[0].v.start == w[i].first),
			"[%llx, %llx) text %d: %d VMAs from %llx", (unsigned long long)w[i].lo,
			(unsigned long long)w[i].hi, text, n, n > 0 ?
			(unsigned long long)r[0].v.start : 0ull);
		T_CHECK(M->text, "the walk reads the text");
	}
	T_EQ(walk(fd, text, 0, UINT64_MAX, r, 8), 5, "all");
	T_CHECK(name_is(&r[0].v, "/bin/a b") && r[1].v.offset == 0x1000 &&
		name_is(&r[2].v, "") && name_is(&r[3].v, "/memfd:x (deleted)") &&
		r[3].v.prot == (IPC_VMA_R | IPC_VMA_W | IPC_VMA_SHARED) &&
		r[3].v.inode == 99 && r[3].v.dev_minor == 5 && name_is(&r[4].v, "[vdso]"),
		"fields, text %d", text);
}

static void test_text_files(void)
{
	static const char fields[] = "1000-2000 r--p 00000000 08:01 11 /";
	int fd = crafted(FILE_TEXT), bad;
	char *longtext;
	size_t namelen = 10000;
	struct rec r[4];

	test_windows(fd, true);
	/* A query walk on a file without the ioctl turns to the text, and stays there. */
	test_windows(fd, false);
	close(fd);

	/* A line longer than the buffer is cut (its fields whole), the rest skipped. */
	longtext = malloc(strlen(fields) + namelen + 64);
	if (!longtext)
		exit(1);
	strcpy(longtext, fields);
	memset(longtext + strlen(fields), 'x', namelen);
	strcpy(longtext + strlen(fields) + namelen, "\n3000-4000 rw-p 00000000 00:00 0 [heap]\n");
	fd = crafted(longtext);
	free(longtext);
	T_EQ(walk(fd, true, 0, UINT64_MAX, r, 4), 2, "long line: both VMAs");
	/* The name starts at the '/' that ends the fields. */
	T_CHECK(r[0].v.end == 0x2000 &&
		r[0].v.name_len == IPC_MAPS_TEXT_BUF - (strlen(fields) - 1) &&
		r[0].name[0] == '/' && r[0].name[1] == 'x', "long line: cut at the buffer (%zu)",
		r[0].v.name_len);
	T_CHECK(r[1].v.start == 0x3000 && name_is(&r[1].v, "[heap]"), "the line after it");
	close(fd);

	/* A malformed line: -EPROTO, unless the walk stopped before it. */
	bad = crafted("1000-2000 r--p 00000000 00:00 0\n3000-4000 rw-p 0 00:00\n");
	T_EQ(walk(bad, true, 0, UINT64_MAX, r, 4), (uint64_t)-EPROTO, "malformed line");
	T_EQ(walk(bad, true, 0, 0x2000, r, 4), 1, "stopped before the malformed line");
	close(bad);

	bad = crafted("");
	T_EQ(walk(bad, false, 0, UINT64_MAX, r, 4), 0, "empty file");
	close(bad);
}

/* ---- both paths on a real process ---- */

static uint64_t spaced, deleted, anon, none, triple;	/* made before fork */
static bool heap_made;
static struct stat spaced_st;
static char spaced_path[128], deleted_path[128];

static void *map_file(char *path, size_t pages, int prot, off_t off, struct stat *st)
{
	int fd = mkstemp(path);
	void *p = MAP_FAILED;

	if (fd >= 0 && !ftruncate(fd, (off_t)(pages * P) + off) && !fstat(fd, st))
		p = mmap(NULL, pages * P, prot, MAP_SHARED, fd, off);
	if (fd >= 0)
		close(fd);
	if (p == MAP_FAILED) {
		perror(path);
		exit(1);
	}
	return p;
}

static void build_layout(void)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	struct stat st;
	char *brk0 = sbrk(0);

	snprintf(spaced_path, sizeof(spaced_path), "%s/odpemu maps  test XXXXXX", tmp);
	snprintf(deleted_path, sizeof(deleted_path), "%s/odpemu-maps-gone-XXXXXX", tmp);
	spaced = (uintptr_t)map_file(spaced_path, 2, PROT_READ, (off_t)(3 * P), &spaced_st);
	deleted = (uintptr_t)map_file(deleted_path, 1, PROT_READ | PROT_WRITE, 0, &st);
	unlink(deleted_path);
	anon = (uintptr_t)mmap(NULL, 3 * P, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	none = (uintptr_t)mmap(NULL, P, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* Three VMAs in a row, rw, r, rw, between PROT_NONE guards that no neighbour
	 * merges with. */
	triple = (uintptr_t)mmap(NULL, 5 * P, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) + P;
	if (anon == (uintptr_t)MAP_FAILED || none == (uintptr_t)MAP_FAILED ||
	    triple == (uintptr_t)MAP_FAILED + P ||
	    mprotect((void *)(uintptr_t)triple, 3 * P, PROT_READ | PROT_WRITE) ||
	    mprotect((void *)(uintptr_t)(triple + P), P, PROT_READ)) {
		perror("mmap");
		exit(1);
	}
	/* A [heap] for sure (a sanitizer's allocator may never call brk). */
	heap_made = brk0 != (void *)-1 && !brk(brk0 + P);
}

/* A child with our layout that holds still until killed. */
static pid_t start_child(void)
{
	int ready[2];
	pid_t pid;
	char c = 0;

	if (pipe(ready))
		exit(1);
	pid = fork();
	if (pid < 0)
		exit(1);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ready[0]);
		(void)!write(ready[1], &c, 1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		exit(1);
	close(ready[0]);
	return pid;
}

static const struct rec *find(const struct rec *r, int n, uint64_t addr)
{
	for (int i = 0; i < n; i++)
		if (r[i].v.start <= addr && addr < r[i].v.end)
			return &r[i];
	return NULL;
}

static bool same_rec(const struct rec *a, const struct rec *b)
{
	return a->v.start == b->v.start && a->v.end == b->v.end && a->v.prot == b->v.prot &&
		a->v.offset == b->v.offset && a->v.dev_major == b->v.dev_major &&
		a->v.dev_minor == b->v.dev_minor && a->v.inode == b->v.inode &&
		a->v.name_len == b->v.name_len && !strcmp(a->name, b->name);
}

/* Does ODPEMU_MASK (this process's, as the reader saw it) name procmap_query? */
static bool query_masked(void)
{
	const char *m = getenv("ODPEMU_MASK");
	char words[512];

	snprintf(words, sizeof(words), ",%s,", m ? m : "");
	return strstr(words, ",procmap_query,") != NULL;
}

/* Linux 6.11 or later, which has PROCMAP_QUERY, and not masked (ipc/maps.h TEST SWITCH):
 * a query walk that falls back there hides a broken ioctl call. */
static bool kernel_has_query(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;

	if (query_masked() || uname(&u) || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 11);
}

/* The whole space read both ways: the same VMAs, field for field. */
static void test_agree(int fd, struct rec *q, struct rec *t)
{
	int nq = walk(fd, false, 0, UINT64_MAX, q, MAX_VMAS);
	bool query = !M->text;
	int nt = walk(fd, true, 0, UINT64_MAX, t, MAX_VMAS);

	if (kernel_has_query())
		T_CHECK(query, "a query walk fell back to the text on a kernel with the ioctl");
	else
		printf("# no PROCMAP_QUERY in this kernel, or masked: the query walk read the text\n");
	/* The vsyscall gate is no VMA of the mm: the text shows it (get_gate_vma), the
	 * ioctl's lookup cannot find it. */
	if (query && nt == nq + 1 && name_is(&t[nt - 1].v, "[vsyscall]"))
		nt--;
	T_CHECK(nq > 5 && nq == nt, "query %d VMAs, text %d", nq, nt);
	for (int i = 0; i < nq && i < nt; i++)
		T_CHECK(same_rec(&q[i], &t[i]), "VMA %d: %llx-%llx '%s' / %llx-%llx '%s'", i,
			(unsigned long long)q[i].v.start, (unsigned long long)q[i].v.end,
			q[i].name, (unsigned long long)t[i].v.start,
			(unsigned long long)t[i].v.end, t[i].name);
}

/* What we mapped, as each path reads it. */
static void test_layout(const struct rec *r, int n, const char *how)
{
	const struct rec *s = find(r, n, spaced), *d = find(r, n, deleted);
	const struct rec *a = find(r, n, anon), *z = find(r, n, none);
	char want[160];
	bool stack = false, heap = false;

	T_CHECK(s && name_is(&s->v, spaced_path) && s->v.prot == (IPC_VMA_R | IPC_VMA_SHARED) &&
		s->v.offset == 3 * P && s->v.inode == spaced_st.st_ino &&
		s->v.dev_major == major(spaced_st.st_dev) &&
		s->v.dev_minor == minor(spaced_st.st_dev), "%s: the file with spaces ('%s')",
		how, s ? s->name : "none");
	snprintf(want, sizeof(want), "%s (deleted)", deleted_path);
	T_CHECK(d && name_is(&d->v, want), "%s: the deleted file ('%s')", how,
		d ? d->name : "none");
	T_CHECK(a && a->v.name_len == 0 && a->v.inode == 0 && a->v.offset == 0 &&
		a->v.prot == (IPC_VMA_R | IPC_VMA_W), "%s: anonymous", how);
	T_CHECK(z && z->v.prot == 0, "%s: PROT_NONE", how);
	for (int i = 0; i < n; i++) {
		stack |= name_is(&r[i].v, "[stack]") && r[i].v.prot == (IPC_VMA_R | IPC_VMA_W);
		heap |= name_is(&r[i].v, "[heap]");
	}
	T_CHECK(stack, "%s: [stack]", how);
	T_CHECK(heap || !heap_made, "%s: [heap]", how);
}

/* The VMAs of a range, and of a hole, both ways. */
static void test_ranges(int fd)
{
	struct rec r[4];

	for (int text = 0; text < 2; text++) {
		T_EQ(walk(fd, text, triple + P, triple + 2 * P, r, 4), 1, "the middle VMA");
		T_CHECK(r[0].v.start == triple + P && r[0].v.prot == IPC_VMA_R, "middle (text %d)",
			text);
		T_EQ(walk(fd, text, triple + P - 1, triple + 2 * P + 1, r, 4), 3, "three VMAs");
		T_CHECK(r[0].v.start == triple && r[2].v.end == triple + 3 * P,
			"three VMAs (text %d)", text);
		T_EQ(walk(fd, text, UINT64_MAX - P, UINT64_MAX, r, 4), 0, "above everything");
	}
}

/* A text walk of the whole space: one VMA per line of the file, [vsyscall] included.
 * emu/limits.c counts the daemon's mappings so, for its vm.max_map_count message. */
static void test_lines(int fd, int nt)
{
	char buf[4096];
	off_t off = 0;
	ssize_t got;
	int lines = 0;

	while ((got = pread(fd, buf, sizeof(buf), off)) > 0) {
		for (ssize_t i = 0; i < got; i++)
			lines += buf[i] == '\n';
		off += got;
	}
	T_CHECK(got == 0 && lines == nt, "text walk: %d VMAs, the file %d lines", nt, lines);
}

static void test_process(void)
{
	struct rec *q = calloc(MAX_VMAS, sizeof(*q)), *t = calloc(MAX_VMAS, sizeof(*t));
	char path[64];
	pid_t pid;
	int fd, n;

	build_layout();
	pid = start_child();
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	T_CHECK(q && t && fd >= 0, "open %s", path);
	test_agree(fd, q, t);
	n = walk(fd, false, 0, UINT64_MAX, q, MAX_VMAS);
	test_layout(q, n, M->text ? "query (fallen back)" : "query");
	n = walk(fd, true, 0, UINT64_MAX, t, MAX_VMAS);
	test_layout(t, n, "text");
	test_lines(fd, n);
	test_ranges(fd);

	/* The process gone (its maps still open): walks end, no error. */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	T_EQ(walk(fd, false, 0, UINT64_MAX, q, MAX_VMAS), 0, "gone: query");
	T_EQ(walk(fd, true, 0, UINT64_MAX, q, MAX_VMAS), 0, "gone: text");
	close(fd);
	unlink(spaced_path);
	free(q);
	free(t);
}

/* In a child: set ODPEMU_MASK, walk our own maps asking for the ioctl; 1 if the walk read
 * the text, 0 if not, 2 if the walk failed. */
static int walks_text_under(const char *mask)
{
	pid_t pid = fork();
	int st = -1;

	if (pid == 0) {
		int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		struct rec r[4];

		setenv("ODPEMU_MASK", mask, 1);
		if (fd < 0 || walk(fd, 0, 0, UINT64_MAX, r, 4) != 4)
			_exit(2);
		_exit(M->text ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void test_mask(void)
{
	T_CHECK(ipc_mask_has("a,procmap_query,b", "procmap_query") &&
		ipc_mask_has("procmap_query", "procmap_query") &&
		!ipc_mask_has("procmap_query_x", "procmap_query") &&
		!ipc_mask_has("x_procmap_query", "procmap_query") &&
		!ipc_mask_has(",,", "procmap_query") && !ipc_mask_has(NULL, "procmap_query"),
		"ipc_mask_has: whole items only");
	T_EQ(walks_text_under("cachestat,procmap_query"), 1, "masked: the text");
	T_EQ(walks_text_under("procmap_query"), 1, "masked alone: the text");
	if (kernel_has_query()) {
		T_EQ(walks_text_under("procmap_query_x,cachestat"), 0, "a longer word: the ioctl");
		T_EQ(walks_text_under(""), 0, "nothing masked: the ioctl");
	}
}

int main(void)
{
	M = malloc(sizeof(*M));
	if (!M)
		return 1;
	test_mask();		/* first: a fork child inherits the parent's look at the switch */
	test_parse();
	test_text_files();
	test_process();
	free(M);
	return t_done("ipc-maps");
}
