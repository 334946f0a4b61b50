/* SPDX-License-Identifier: MIT */
/*
 * A persistent FLUSH is durable when it completes (emu/host/persist.h): host 1's memory takes
 * RDMA WRITEs from host 0, then a FLUSH with placement type persistence.
 *  - a file mapped MAP_SHARED (on the build machine's disk, not tmpfs) under an ODP MR
 *    and under a pinned MR: after the WRITEs the file has dirty pages in the page cache;
 *    after the FLUSH's completion it has none (cachestat(2): nothing dirty, nothing under
 *    writeback; where the host report has no cachestat, before Linux 6.5 or masked, the
 *    mapping's dirty pages in /proc/self/smaps, which writeback cleans too), the daemon
 *    counted one fdatasync (flush_persist_syncs), and the file's bytes (pread) are the
 *    written ones;
 *  - anonymous memory: the FLUSH completes at once, counted as volatile;
 *  - the older idiom, a 1-byte RDMA READ after the WRITEs: it completes with the data
 *    visible (pread sees it) but the file stays dirty: visibility, not durability.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "mask.h"
#include "ops.h"
#include "t.h"

#define LEN (256u * 1024u)
#define NR_CACHESTAT 451	/* Linux 6.5, x86-64; Debian 12's headers predate it */

struct cstat_range {
	uint64_t off, len;
};
struct cstat {
	uint64_t cache, dirty, writeback, evicted, recently_evicted;
};

static bool has_cachestat;	/* the host report says so (ODPEMU_MASK included) */

/* Pages of fd's [0, LEN) dirty or under writeback, or -1 (cachestat failed). */
static long cachestat_unclean(int fd)
{
	struct cstat_range r = { 0, LEN };
	struct cstat cs;

	if (syscall(NR_CACHESTAT, fd, &r, &cs, 0))
		return -1;
	return (long)(cs.dirty + cs.writeback);
}

/* Dirty pages of our mapping at addr, from /proc/self/smaps (Shared_Dirty + Private_Dirty:
 * a page is dirty there when its page-table entry or the page itself is; writeback cleans
 * both). Every page is read first, so pages only the daemon's own mapping wrote (a pinned
 * MR) are in our page tables too. -1 if the VMA is not found. */
static long smaps_unclean(const uint8_t *addr)
{
	char line[256], head[32];
	unsigned long kb, dirty = 0;
	bool in = false, found = false;
	FILE *f;

	for (size_t off = 0; off < LEN; off += 4096)
		(void)*(const volatile uint8_t *)(addr + off);
	if (!(f = fopen("/proc/self/smaps", "r")))
		return -1;
	snprintf(head, sizeof(head), "%lx-", (unsigned long)(uintptr_t)addr);
	while (fgets(line, sizeof(line), f)) {
		if (isdigit((unsigned char)line[0]) || (line[0] >= 'a' && line[0] <= 'f'))
			in = !strncmp(line, head, strlen(head));	/* a VMA's first line */
		else if (in && (sscanf(line, "Shared_Dirty: %lu kB", &kb) == 1 ||
				sscanf(line, "Private_Dirty: %lu kB", &kb) == 1))
			dirty += kb;
		found |= in;
	}
	fclose(f);
	return found ? (long)(dirty / 4) : -1;
}

static long unclean_pages(int fd, const uint8_t *addr)
{
	return has_cachestat ? cachestat_unclean(fd) : smaps_unclean(addr);
}

static unsigned long long ctr(struct odpemu_context *ctx, const char *name)
{
	return h_counter(ctx, ODPEMU_COUNTERS_DEVICE, 0, name);
}

/* A file of LEN bytes in the current directory: the build tree's filesystem (tmpfs has no
 * write-back), or tools/ci/as-user's scratch directory beside it. */
static int make_file(char *path, size_t cap)
{
	int fd;

	snprintf(path, cap, "odpemu-persist-XXXXXX");
	fd = mkstemp(path);
	if (fd >= 0 && ftruncate(fd, LEN)) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0)
		fsync(fd);
	return fd;
}

static bool flush(struct h_pair *p, struct h_mem *b, uint64_t off, uint32_t len,
		  const char *what)
{
	struct odpemu_send_wr wr = { .opcode = ODPEMU_WR_FLUSH };

	wr.wr.flush.remote_addr = (uintptr_t)b->buf + off;
	wr.wr.flush.rkey = b->mr->rkey;
	wr.wr.flush.len = len;
	wr.wr.flush.type = 2;	/* persistence */
	return h_run_wr(p, &wr, what);
}

static bool write_all(struct h_pair *p, struct h_mem *a, struct h_mem *b, int fill)
{
	struct odpemu_sge sge = { (uintptr_t)a->buf, LEN, a->mr->lkey };
	struct odpemu_send_wr wr = { .opcode = ODPEMU_WR_RDMA_WRITE, .num_sge = 1,
				     .sg_list = &sge };

	memset(a->buf, fill, LEN);
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf;
	wr.wr.rdma.rkey = b->mr->rkey;
	return h_run_wr(p, &wr, "WRITE");
}

static bool file_holds(int fd, int fill)
{
	uint8_t *got = malloc(LEN);
	bool ok = got && pread(fd, got, LEN, 0) == LEN;

	for (size_t i = 0; ok && i < LEN; i++)
		ok = got[i] == (uint8_t)fill;
	free(got);
	return ok;
}

/* WRITEs into a shared file mapping, then a persistent FLUSH: clean and counted. */
static void file_case(struct h_pair *p, struct h_mem *a, bool odp)
{
	const char *kind = odp ? "ODP" : "pinned";
	char path[64];
	int fd = make_file(path, sizeof(path));
	struct h_mem b = { 0 };
	unsigned long long syncs = ctr(p->s[1].ctx, "flush_persist_syncs");
	int fill = odp ? 'o' : 'p';

	T_CHECK(fd >= 0, "a file for the %s case: %m", kind);
	if (fd < 0)
		return;
	b.buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	b.mr = b.buf == MAP_FAILED ? NULL : odpemu_reg_mr(p->s[1].pd, b.buf, LEN,
		ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
		ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_FLUSH_PERSISTENT |
		(odp ? ODPEMU_ACCESS_ON_DEMAND : 0));
	T_CHECK(b.mr != NULL, "%s MR over a shared file mapping: %m", kind);
	if (b.mr && write_all(p, a, &b, fill)) {
		long before = unclean_pages(fd, b.buf), after;

		T_CHECK(before > 0, "%s: the WRITEs left dirty pages (%ld)", kind, before);
		T_CHECK(flush(p, &b, 0, LEN, "FLUSH persistent"), "%s: FLUSH persistent", kind);
		after = unclean_pages(fd, b.buf);
		printf("%s: %ld unclean pages after the WRITEs, %ld after the FLUSH (%s)\n", kind,
		       before, after, has_cachestat ? "cachestat" : "/proc/self/smaps");
		T_EQ(after, 0, "no dirty page once the FLUSH completed");
		T_EQ(ctr(p->s[1].ctx, "flush_persist_syncs"), syncs + 1, "one fdatasync");
		T_CHECK(file_holds(fd, fill), "%s: the file holds the written bytes", kind);
	}
	if (b.mr)
		odpemu_dereg_mr(b.mr);
	if (b.buf != MAP_FAILED)
		munmap(b.buf, LEN);
	close(fd);
	unlink(path);
}

/* The 1-byte READ idiom: the data is visible, the file still dirty. */
static void read_idiom(struct h_pair *p, struct h_mem *a)
{
	char path[64];
	int fd = make_file(path, sizeof(path));
	struct h_mem b = { 0 };
	struct odpemu_sge sge;
	struct odpemu_send_wr wr = { .opcode = ODPEMU_WR_RDMA_READ, .num_sge = 1 };

	if (fd < 0)
		return;
	b.buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	b.mr = b.buf == MAP_FAILED ? NULL : odpemu_reg_mr(p->s[1].pd, b.buf, LEN,
		ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
		ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_ON_DEMAND);
	if (b.mr && write_all(p, a, &b, 'r')) {
		sge = (struct odpemu_sge){ (uintptr_t)a->buf, 1, a->mr->lkey };
		wr.sg_list = &sge;
		wr.wr.rdma.remote_addr = (uintptr_t)b.buf + LEN - 1;
		wr.wr.rdma.rkey = b.mr->rkey;
		T_CHECK(h_run_wr(p, &wr, "1-byte READ"), "the 1-byte READ");
		T_CHECK(file_holds(fd, 'r'), "READ idiom: the written bytes are visible");
		T_CHECK(unclean_pages(fd, b.buf) > 0, "READ idiom: the file is still dirty (not durable)");
	}
	if (b.mr)
		odpemu_dereg_mr(b.mr);
	if (b.buf != MAP_FAILED)
		munmap(b.buf, LEN);
	close(fd);
	unlink(path);
}

static void anon_case(struct h_pair *p)
{
	struct h_mem b = { 0 };
	unsigned long long vol = ctr(p->s[1].ctx, "flush_persist_volatile");
	unsigned long long syncs = ctr(p->s[1].ctx, "flush_persist_syncs");

	b.buf = aligned_alloc(4096, LEN);
	b.mr = b.buf ? odpemu_reg_mr(p->s[1].pd, b.buf, LEN, ODPEMU_ACCESS_LOCAL_WRITE |
		ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_FLUSH_PERSISTENT |
		ODPEMU_ACCESS_ON_DEMAND) : NULL;
	T_CHECK(b.mr != NULL, "anonymous ODP MR: %m");
	if (b.mr) {
		T_CHECK(flush(p, &b, 0, LEN, "FLUSH persistent, anonymous"), "anonymous FLUSH");
		T_EQ(ctr(p->s[1].ctx, "flush_persist_volatile"), vol + 1, "counted volatile");
		T_EQ(ctr(p->s[1].ctx, "flush_persist_syncs"), syncs, "nothing synced");
		odpemu_dereg_mr(b.mr);
	}
	free(b.buf);
}

static void body(struct h_env *e)
{
	struct h_pair p = { .s = { { .ctx = e->ctx[0] }, { .ctx = e->ctx[1] } } };
	struct h_mem a = { 0 };
	struct h_qp_opts o;

	h_qp_opts_default(&o);
	if (h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	/* the tests' row of odpemud --check: the kernel's call, unless the mask names it */
	has_cachestat = !ipc_mask_has(getenv("ODPEMU_MASK"), "cachestat") &&
			syscall(NR_CACHESTAT, -1, NULL, NULL, 0) < 0 && errno != ENOSYS;
	a.buf = aligned_alloc(4096, LEN);
	a.mr = a.buf ? odpemu_reg_mr(p.s[0].pd, a.buf, LEN, ODPEMU_ACCESS_LOCAL_WRITE) : NULL;
	T_CHECK(a.mr != NULL, "the writer's MR: %m");
	if (!a.mr)
		return;
	file_case(&p, &a, true);
	file_case(&p, &a, false);
	read_idiom(&p, &a);
	anon_case(&p);
	odpemu_dereg_mr(a.mr);
	free(a.buf);
	h_pair_down(&p);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "e2e-persist", .watchdog_s = 120,
		.open = H_OPEN_BOTH, .body = body };

	return h_main(argc, argv, &t);
}
