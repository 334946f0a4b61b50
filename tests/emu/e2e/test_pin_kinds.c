/* SPDX-License-Identifier: MIT */
/*
 * Pinned MRs on every kind of memory a real NIC can pin, between two daemons; each gets
 * WRITE, READ, SEND and the immediates from side 0 with every byte checked:
 *  - private: malloc, the data segment (a file's private mapping), the stack;
 *  - shared: anonymous MAP_SHARED, a memfd the process keeps open, a /dev/shm file:
 *    the daemon maps the object itself (device counter mrs_pinned_shared);
 *  - hugetlb, when the machine has huge pages: registered by address (device counter
 *    mrs_pinned_by_address), the weaker guarantee;
 *  - a shared file the process shrinks under the MR: the next WRITE into the missing page
 *    fails at the peer (REM_ACCESS_ERR) and the daemon keeps serving (no SIGBUS).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "ops.h"
#include "t.h"

#define LEN		16384u
#define PIN_ACCESS	(ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | \
			 ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC)

/* Initialised, so it lives in .data: a private mapping of the executable. */
static uint8_t data_seg[LEN] __attribute__((aligned(4096))) = { 1 };

static struct h_pair pair;
static struct h_mem src;
static struct t_rng *rng;	/* h_main's */

static unsigned long long dev_counter(int side, const char *name)
{
	return h_counter(pair.s[side].ctx, ODPEMU_COUNTERS_DEVICE, 0, name);
}

/* Register buf pinned on side 1 and run the data ops into it. */
static void exchange(uint8_t *buf, const char *kind)
{
	struct h_mem dst = { .buf = buf };

	dst.mr = odpemu_reg_mr(pair.s[1].pd, buf, LEN, PIN_ACCESS);
	T_CHECK(dst.mr != NULL, "%s: reg_mr: %m (%s)", kind, odpemu_last_error(pair.s[1].ctx));
	if (!dst.mr)
		return;
	h_data_ops(&pair, &src, &dst, LEN, kind, rng);
	T_EQ(odpemu_dereg_mr(dst.mr), 0, "dereg_mr");
}

static void on_stack(void)
{
	uint8_t buf[LEN + 4096];
	uint8_t *aligned = (uint8_t *)(((uintptr_t)buf + 4095) & ~(uintptr_t)4095);

	memset(buf, 0, sizeof(buf));
	exchange(aligned, "stack");
}

static uint8_t *map_shared(int fd, const char *what)
{
	uint8_t *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, fd < 0 ? MAP_SHARED | MAP_ANONYMOUS :
			  MAP_SHARED, fd, 0);

	if (p == MAP_FAILED) {
		T_CHECK(0, "%s: mmap: %m", what);
		return NULL;
	}
	return p;
}

/* Can this process open its mapping at p by /proc/self/map_files, as lib/pin.c does for
 * shared anonymous memory (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE: the map_files row of
 * odpemud --check; not root as such: a container's root lacks both)? */
static bool map_files_opens(const uint8_t *p)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)(uintptr_t)p,
		 (unsigned long)(uintptr_t)(p + LEN));
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return false;
	close(fd);
	return true;
}

static void shared_kinds(void)
{
	unsigned long long before = dev_counter(1, "mrs_pinned_shared");
	bool by_map_files = false;
	char shm[64];
	uint8_t *p;
	int fd;

	if ((p = map_shared(-1, "shared anon"))) {
		if ((by_map_files = map_files_opens(p)))
			exchange(p, "shared anonymous");
		munmap(p, LEN);
	}
	fd = memfd_create("odpemu-test", MFD_CLOEXEC);
	if (fd >= 0 && !ftruncate(fd, LEN) && (p = map_shared(fd, "memfd"))) {
		exchange(p, "memfd kept open");
		munmap(p, LEN);
	}
	if (fd >= 0)
		close(fd);
	snprintf(shm, sizeof(shm), "/dev/shm/odpemu-test-%d", (int)getpid());
	fd = open(shm, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0 && !ftruncate(fd, LEN) && (p = map_shared(fd, "/dev/shm"))) {
		close(fd);
		fd = -1;
		exchange(p, "/dev/shm file, by name");
		munmap(p, LEN);
	}
	if (fd >= 0)
		close(fd);
	unlink(shm);
	T_CHECK(dev_counter(1, "mrs_pinned_shared") >= before + 2 + by_map_files,
		"mrs_pinned_shared counted each shared object");
}

#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"

/* The machine's huge page reserve: read it, or set it (root); -1 when not possible. */
static long hugepages(long set)
{
	FILE *f = fopen(NR_HUGEPAGES, set < 0 ? "r" : "w");
	long n = -1;

	if (!f)
		return -1;
	if (set < 0 ? fscanf(f, "%ld", &n) != 1 : fprintf(f, "%ld\n", set) < 0)
		n = -1;
	else if (set >= 0)
		n = set;
	return fclose(f) ? -1 : n;
}

/* Huge pages exist only when reserved: borrow a few (root) and give them back, else say
 * the case was not run. */
static void hugetlb(void)
{
	unsigned long long before = dev_counter(1, "mrs_pinned_by_address");
	long had = hugepages(-1);
	uint8_t *p;

	if (had >= 0 && had < 2)
		hugepages(2);
	p = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
		 -1, 0);
	if (p == MAP_FAILED) {
		printf("hugetlb: no huge pages on this machine, not run\n");
	} else {
		exchange(p, "hugetlb, by address");
		T_EQ(dev_counter(1, "mrs_pinned_by_address"), before + 1, "mrs_pinned_by_address");
		munmap(p, 2u << 20);
	}
	if (had >= 0 && had < 2)
		hugepages(had);
}

/* The client shrinks the file under its pinned MR: the daemon must not die of SIGBUS. */
static void shrunk(void)
{
	int fd = memfd_create("odpemu-shrink", MFD_CLOEXEC);
	struct odpemu_mr *mr;
	uint8_t *p;

	if (fd < 0 || ftruncate(fd, LEN) || !(p = map_shared(fd, "shrink"))) {
		T_CHECK(0, "shrink setup: %m");
		return;
	}
	mr = odpemu_reg_mr(pair.s[1].pd, p, LEN, PIN_ACCESS);
	T_CHECK(mr != NULL, "shrink: reg_mr: %m");
	if (mr && !ftruncate(fd, 0)) {
		struct odpemu_sge sge = { (uintptr_t)src.buf, 64, src.mr->lkey };
		struct odpemu_send_wr wr = { .opcode = ODPEMU_WR_RDMA_WRITE, .sg_list = &sge,
			.num_sge = 1, .wr.rdma = { (uintptr_t)p + 4096, mr->rkey } }, *bad;
		struct odpemu_wc wc = { 0 };

		wr.send_flags = ODPEMU_SEND_SIGNALED;
		T_EQ(odpemu_post_send(pair.s[0].qp, &wr, &bad), 0, "post WRITE into the gone page");
		T_EQ(h_poll(pair.s[0].cq, &wc, 1, 20000), 1, "its completion");
		T_EQ(wc.status, ODPEMU_WC_REM_ACCESS_ERR, "REM_ACCESS_ERR, as a failed DMA");
		T_CHECK(dev_counter(1, "mem_write_errors") > 0, "counted as a write error");
	}
	if (mr)
		odpemu_dereg_mr(mr);
	munmap(p, LEN);
	close(fd);
}

static void every_kind(struct h_env *e)
{
	struct h_qp_opts o;
	uint8_t *heap;

	rng = &e->rng;
	h_qp_opts_default(&o);
	if (h_pair_up(e, &pair, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	src.buf = h_cold(4 * LEN);
	src.mr = odpemu_reg_mr(pair.s[0].pd, src.buf, 4 * LEN, PIN_ACCESS);
	T_CHECK(src.mr != NULL, "source MR: %m");
	heap = aligned_alloc(4096, LEN);
	exchange(heap, "malloc");
	exchange(data_seg, "data segment");
	on_stack();
	shared_kinds();
	hugetlb();
	shrunk();	/* last: its QP ends in the error state */
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "e2e-pin-kinds", .seed = 11, .watchdog_s = 300,
		.open = H_OPEN_NONE, .body = every_kind };

	return h_main(argc, argv, &t);
}
