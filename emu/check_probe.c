/* SPDX-License-Identifier: MIT */
/*
 * check_probe — one probe per row of check.c. Each tries what odpemud or libodpemu does,
 * the way they do it (the same flags, the same fallbacks), on throw-away objects: a ring,
 * a socket, a page, a child process. Whatever might change this process for good (a
 * seccomp filter, a tracer, a network namespace) is done in a child.
 */
#include "check.h"
#include "check_int.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <netlink/route/link/veth.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc.h"
#include "procmap.h"
#include "say.h"

#define NR_CACHESTAT 451	/* Linux 6.5, x86-64; Debian 12's headers predate it */
#define UDP_BUF_ASKED (8u << 20)	/* what emu/io/udp.c (BUF_DEFAULT) asks each way */

/* ---- helpers ---- */

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "an unknown errno";
}

/* An integer from a /proc file, or -1 when there is none (no such sysctl here). */
static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/* A field of /proc/self/status ("Seccomp", "CapEff") in base, or -1. */
static long long status_field(const char *key, int base)
{
	size_t klen = strlen(key);
	long long v = -1;
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtoll(line + klen + 1, NULL, base);
			break;
		}
	fclose(f);
	return v;
}

static bool has_cap(int cap)
{
	long long eff = status_field("CapEff", 16);

	return eff > 0 && (eff >> cap & 1);
}

/* The exit status of child pid, or -1 when it did not exit within timeout_ms (then it
 * is killed) or was killed. Children of probes report an errno or 0 as their status. */
static int reap(pid_t pid, int timeout_ms)
{
	struct timespec ms = { 0, 1000000 };
	int status;

	for (int waited = 0; waited <= timeout_ms; waited++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		if (r < 0)
			return -1;
		nanosleep(&ms, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* Run fn(arg) in a child: its return value (0..255) as the child's exit status, or -1. */
static int in_child(int (*fn)(void *), void *arg, int timeout_ms)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn(arg));
	return reap(pid, timeout_ms);
}

/* ---- the UDP socket ---- */

static int udp_socket(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);

	if (fd < 0 && errno == EAFNOSUPPORT)
		fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
	return fd;
}

bool emu_check_probe_udp_socket(char *d, size_t len)
{
	int fd = udp_socket();

	if (fd < 0) {
		emu_say(d, len, "socket(AF_INET and AF_INET6, SOCK_DGRAM): %s", ename(errno));
		return false;
	}
	close(fd);
	emu_say(d, len, "a UDP socket opens");
	return true;
}

/* A UDP option as udp.c/udp_tx.c set it (UDP_SEGMENT 0 is a no-op where it exists). */
static bool udp_opt(int opt, int v, const char *what, char *d, size_t len)
{
	int fd = udp_socket(), rc;

	if (fd < 0) {
		emu_say(d, len, "no UDP socket: %s", ename(errno));
		return false;
	}
	rc = setsockopt(fd, SOL_UDP, opt, &v, sizeof(v)) ? errno : 0;
	close(fd);
	emu_say(d, len, "setsockopt %s: %s", what, rc ? ename(rc) : "taken");
	return !rc;
}

bool emu_check_probe_udp_gso(char *d, size_t len)
{
	return udp_opt(UDP_SEGMENT, 0, "UDP_SEGMENT", d, len);
}

bool emu_check_probe_udp_gro(char *d, size_t len)
{
	return udp_opt(UDP_GRO, 1, "UDP_GRO", d, len);
}

/* As udp.c's set_buf: the FORCE variant (CAP_NET_ADMIN passes rmem_max), else the plain
 * one, which the kernel caps at rmem_max/wmem_max. What it grants, socket(7) doubles. */
static unsigned buf_granted(int fd, int force_opt, int opt)
{
	int v = (int)UDP_BUF_ASKED, got = 0;
	socklen_t l = sizeof(got);

	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
	if (getsockopt(fd, SOL_SOCKET, opt, &got, &l) || got < 0)
		return 0;
	return (unsigned)got / 2;
}

bool emu_check_probe_udp_buffers(char *d, size_t len)
{
	int fd = udp_socket();
	unsigned rx, tx;

	if (fd < 0) {
		emu_say(d, len, "no UDP socket: %s", ename(errno));
		return false;
	}
	rx = buf_granted(fd, SO_RCVBUFFORCE, SO_RCVBUF);
	tx = buf_granted(fd, SO_SNDBUFFORCE, SO_SNDBUF);
	close(fd);
	emu_say(d, len, "asked %g MiB each way, got %g MiB in and %g MiB out (rmem_max %g MiB, "
		"wmem_max %g MiB; CAP_NET_ADMIN %s)", UDP_BUF_ASKED / 1048576.0, rx / 1048576.0, tx / 1048576.0,
		read_long("/proc/sys/net/core/rmem_max") / 1048576.0,
		read_long("/proc/sys/net/core/wmem_max") / 1048576.0,
		has_cap(CAP_NET_ADMIN) ? "yes" : "no");
	return rx >= UDP_BUF_ASKED && tx >= UDP_BUF_ASKED;
}

/* ---- io_uring ---- */

/* Why io_uring_setup failed with -rc: the cause and its remedy. */
static void io_uring_cause(int rc, const char **cause, const char **remedy)
{
	long disabled = read_long("/proc/sys/kernel/io_uring_disabled");
	bool filtered = status_field("Seccomp", 10) == 2;

	*remedy = "Linux 5.13 or later, with io_uring allowed";
	if (rc == -EPERM && disabled == 2) {
		*cause = "kernel.io_uring_disabled=2 turns it off for everyone (Linux 6.6+; RHEL "
			 "9's default)";
		*remedy = "sysctl -w kernel.io_uring_disabled=0";
	} else if (rc == -EPERM && disabled == 1) {
		*cause = "kernel.io_uring_disabled=1 lets only CAP_SYS_ADMIN and the group of "
			 "kernel.io_uring_group in";
		*remedy = "sysctl -w kernel.io_uring_disabled=0, or run odpemud in the group "
			  "whose gid kernel.io_uring_group holds";
	} else if ((rc == -EPERM || rc == -ENOSYS) && filtered) {
		*cause = "this process runs under a seccomp filter that refuses it (Docker 25+ "
			 "and containerd's default profiles do)";
		*remedy = "docker run --security-opt seccomp=unconfined, or a seccomp profile "
			  "that allows io_uring_setup, io_uring_enter and io_uring_register";
	} else if (rc == -EPERM) {
		*cause = "refused by a security module or sandbox (no io_uring_disabled sysctl "
			 "or seccomp filter says no)";
		*remedy = "allow io_uring for odpemud in the host's security policy";
	} else if (rc == -ENOSYS) {
		*cause = "this kernel has no io_uring (built without CONFIG_IO_URING, or before "
			 "Linux 5.1)";
	} else if (rc == -ENOMEM) {
		*cause = "no room to lock the ring's memory (kernels before 5.12 charge it to "
			 "RLIMIT_MEMLOCK)";
		*remedy = "ulimit -l unlimited (LimitMEMLOCK=infinity in a unit, docker run "
			  "--ulimit memlock=-1)";
	} else if (rc == -EINVAL) {
		*cause = "the kernel refuses IORING_SETUP_CQSIZE (before Linux 5.5)";
	} else {
		*cause = strerror(-rc);
	}
}

void emu_check_io_uring_reason(int rc, char *buf, size_t len)
{
	const char *cause, *remedy;

	io_uring_cause(rc, &cause, &remedy);
	emu_say(buf, len, "io_uring: refused (%s): %s; remedy: %s", ename(-rc), cause, remedy);
}

/* A small ring as the loop sets one up (emu_loop_init: CQSIZE), with flags added. */
static int ring_setup(struct io_uring *ring, unsigned flags)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE | flags;
	p.cq_entries = 16;
	return io_uring_queue_init_params(8, ring, &p);
}

/* Submit, then the first completion within a second: 0 or -errno (-ETIME). */
static int submit_wait(struct io_uring *ring, struct io_uring_cqe **cqe)
{
	struct __kernel_timespec ts = { .tv_sec = 1 };
	int rc = io_uring_submit(ring);

	return rc < 0 ? rc : io_uring_wait_cqe_timeout(ring, cqe, &ts);
}

bool emu_check_probe_io_uring(char *d, size_t len)
{
	long disabled = read_long("/proc/sys/kernel/io_uring_disabled");
	const char *cause, *remedy;
	struct io_uring ring;
	int rc = ring_setup(&ring, 0);

	if (rc) {
		io_uring_cause(rc, &cause, &remedy);
		emu_say(d, len, "refused (%s): %s", ename(-rc), cause);
		return false;
	}
	io_uring_queue_exit(&ring);
	if (disabled < 0)
		emu_say(d, len, "a ring sets up (no kernel.io_uring_disabled: before Linux 6.6)");
	else
		emu_say(d, len, "a ring sets up (kernel.io_uring_disabled=%ld)", disabled);
	return true;
}

bool emu_check_probe_coop_taskrun(char *d, size_t len)
{
	struct io_uring ring;
	int rc = ring_setup(&ring, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);

	if (!rc)
		io_uring_queue_exit(&ring);
	emu_say(d, len, "a ring with both flags: %s", rc ? ename(-rc) : "sets up");
	return !rc;
}

/* A multishot poll on a pipe (emu_loop_poll_in): its first completion must say MORE. */
bool emu_check_probe_poll_multishot(char *d, size_t len)
{
	struct io_uring_cqe *cqe = NULL;
	struct io_uring ring;
	int p[2], rc;
	bool ok;

	if ((rc = ring_setup(&ring, 0)) || pipe2(p, O_CLOEXEC)) {
		emu_say(d, len, "no ring or pipe: %s", ename(rc ? -rc : errno));
		if (!rc)
			io_uring_queue_exit(&ring);
		return false;
	}
	io_uring_prep_poll_multishot(io_uring_get_sqe(&ring), p[0], POLLIN);
	(void)!write(p[1], "x", 1);
	rc = submit_wait(&ring, &cqe);
	ok = !rc && cqe->res > 0 && (cqe->flags & IORING_CQE_F_MORE);
	if (!rc && cqe->res < 0)
		rc = cqe->res;
	io_uring_queue_exit(&ring);
	close(p[0]);
	close(p[1]);
	emu_say(d, len, "a multishot poll: %s", ok ? "stays armed" : rc ? ename(-rc)
							      : "ended after one event");
	return ok;
}

/* Register a provided-buffer ring of 2 entries at br (a page): 0 or -errno. */
static int buf_ring(struct io_uring *ring, void *br)
{
	struct io_uring_buf_reg reg;

	memset(&reg, 0, sizeof(reg));
	reg.ring_addr = (uint64_t)(uintptr_t)br;
	reg.ring_entries = 2;
	reg.bgid = 0;
	return io_uring_register_buf_ring(ring, &reg, 0);
}

bool emu_check_probe_buf_ring(char *d, size_t len)
{
	void *br = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct io_uring ring;
	int rc = br == MAP_FAILED ? -ENOMEM : ring_setup(&ring, 0);

	if (!rc) {
		if (!(rc = buf_ring(&ring, br)))
			io_uring_unregister_buf_ring(&ring, 0);
		io_uring_queue_exit(&ring);
	}
	if (br != MAP_FAILED)
		munmap(br, 4096);
	emu_say(d, len, "IORING_REGISTER_PBUF_RING: %s", rc ? ename(-rc) : "taken");
	return !rc;
}

/* A multishot recvmsg on a datagram socket pair, as udp.c arms it (buffer select): one
 * datagram must come back with MORE. The only sender is ours, and it sends once, so
 * nothing lands in the buffers after the ring is gone. */
static int recv_once(struct io_uring *ring, uint8_t *mem, int sp[2])
{
	struct io_uring_buf_ring *br = (struct io_uring_buf_ring *)mem;
	struct io_uring_cqe *cqe = NULL;
	struct io_uring_sqe *sqe;
	struct msghdr msg;
	int rc = buf_ring(ring, br);

	if (rc)
		return rc;
	io_uring_buf_ring_init(br);
	for (int bid = 0; bid < 2; bid++)
		io_uring_buf_ring_add(br, mem + 4096 + bid * 1024, 1024, (unsigned short)bid,
				      io_uring_buf_ring_mask(2), bid);
	io_uring_buf_ring_advance(br, 2);
	memset(&msg, 0, sizeof(msg));
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_recvmsg_multishot(sqe, sp[0], &msg, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 0;
	if (send(sp[1], "odpemu", 6, 0) != 6)
		return -errno;
	if ((rc = submit_wait(ring, &cqe)))
		return rc;
	if (cqe->res < 0)
		return cqe->res;
	return cqe->flags & IORING_CQE_F_MORE ? 0 : -ECANCELED;
}

bool emu_check_probe_recvmsg_multishot(char *d, size_t len)
{
	uint8_t *mem = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	struct io_uring ring;
	int sp[2] = { -1, -1 }, rc;

	if (mem == MAP_FAILED || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp)) {
		rc = -errno;
	} else if (!(rc = ring_setup(&ring, 0))) {
		rc = recv_once(&ring, mem, sp);
		io_uring_queue_exit(&ring);
	}
	for (int i = 0; i < 2; i++)
		if (sp[i] >= 0)
			close(sp[i]);
	if (mem != MAP_FAILED)
		munmap(mem, 8192);
	emu_say(d, len, "a multishot recvmsg: %s", !rc ? "stays armed" : rc == -ECANCELED ?
		"ended after one datagram" : ename(-rc));
	return !rc;
}

/* Cancelling what nothing matches: ENOENT where the kernel has the call, EINVAL before. */
bool emu_check_probe_sync_cancel(char *d, size_t len)
{
	struct io_uring_sync_cancel_reg reg;
	struct io_uring ring;
	int rc = ring_setup(&ring, 0);

	if (!rc) {
		memset(&reg, 0, sizeof(reg));
		reg.addr = 1;
		reg.fd = -1;
		reg.timeout.tv_sec = 1;
		rc = io_uring_register_sync_cancel(&ring, &reg);
		io_uring_queue_exit(&ring);
	}
	emu_say(d, len, "IORING_REGISTER_SYNC_CANCEL: %s", rc == -ENOENT || !rc ? "taken"
									: ename(-rc));
	return rc == -ENOENT || !rc;
}

/* ---- host memory ---- */

bool emu_check_probe_procmap_query(char *d, size_t len)
{
	struct odpemu_procmap_query q;
	uint64_t at = (uint64_t)(uintptr_t)&q;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0) {
		emu_say(d, len, "/proc/self/maps: %s", ename(errno));
		return false;
	}
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_addr = at;
	rc = ioctl(fd, ODPEMU_PROCMAP_QUERY, &q) ? errno : 0;
	close(fd);
	if (!rc && !(q.vma_start <= at && at < q.vma_end))
		rc = EPROTO;
	emu_say(d, len, "the ioctl on /proc/self/maps: %s", !rc ? "finds the stack's VMA" :
		rc == ENOTTY ? "ENOTTY (a kernel before 6.11)" : ename(rc));
	return !rc;
}

/* In a child A: its child B reads A's memory (A is not B's descendant, as a client is
 * not its daemon's), after A named B its tracer when *declare (as libodpemu names its
 * daemon: lib/open.c). A's status: 0, or B's errno; 254 wrong bytes, 255 no test. */
static int read_parent(void *declare)
{
	static volatile uint64_t magic = 0x6f6470656d75ull;
	int go[2], st;
	char c;
	pid_t b;

	if (pipe(go) || (b = fork()) < 0)
		return 255;
	if (b == 0) {
		uint64_t got = 0;
		struct iovec l = { &got, sizeof(got) }, r = { (void *)&magic, sizeof(magic) };

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(255);
		if (process_vm_readv(getppid(), &l, 1, &r, 1, 0) != (ssize_t)sizeof(got))
			_exit(errno);
		_exit(got == magic ? 0 : 254);
	}
	close(go[0]);
	if (*(const bool *)declare)	/* EINVAL: no Yama, nothing to declare */
		(void)prctl(PR_SET_PTRACER, (unsigned long)b, 0, 0, 0);
	(void)!write(go[1], "g", 1);
	close(go[1]);
	st = reap(b, 2000);
	return st < 0 ? 255 : st;
}

static const char *read_parent_result(int st)
{
	return st == 0 ? "readable" : st == 254 ? "wrong bytes read" : st < 0 || st == 255 ?
		"the test could not run" : ename(st);
}

bool emu_check_probe_process_vm(char *d, size_t len)
{
	bool declare = true;
	int st = in_child(read_parent, &declare, 3000);

	emu_say(d, len, "process_vm_readv of a same-uid process that named us its tracer: %s",
		read_parent_result(st));
	return st == 0;
}

bool emu_check_probe_ptrace_scope(char *d, size_t len)
{
	long scope = read_long("/proc/sys/kernel/yama/ptrace_scope");
	bool declare = false;
	int st = in_child(read_parent, &declare, 3000);
	char yama[48];

	if (scope < 0)
		emu_say(yama, sizeof(yama), "no Yama");
	else
		emu_say(yama, sizeof(yama), "kernel.yama.ptrace_scope=%ld", scope);
	emu_say(d, len, "%s, CAP_SYS_PTRACE %s: a same-uid process that did not name us: %s",
		yama, has_cap(CAP_SYS_PTRACE) ? "yes" : "no", read_parent_result(st));
	return st == 0;
}

/* A userfaultfd as libodpemu makes one (lib/uffd.c: user-mode-only first, which needs no
 * privilege, Linux 5.11; else a plain one) with `features`, and one page (a memfd's when
 * shmem) registered in write-protect mode as the notifier registers ranges. 0 or -errno,
 * *step the call that failed, *how the kind of fd. */
static int uffd_try(uint64_t features, bool shmem, const char **step, const char **how)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	long page = sysconf(_SC_PAGESIZE);
	int fd, mfd = -1, rc = 0;
	void *p = MAP_FAILED;

	*how = "user-mode-only";
	*step = "userfaultfd(2)";
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0 && errno == EINVAL) {
		*how = "plain (no UFFD_USER_MODE_ONLY: before Linux 5.11)";
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	}
	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api)) {
		*step = "UFFDIO_API";
		rc = -errno;
	} else if ((shmem && ((mfd = memfd_create("odpemu-check", MFD_CLOEXEC)) < 0 ||
			     ftruncate(mfd, page))) ||
		   (p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, shmem ? MAP_SHARED :
			     MAP_PRIVATE | MAP_ANONYMOUS, mfd, 0)) == MAP_FAILED) {
		*step = "a page to register";
		rc = -errno;
	} else {
		reg.range.start = (uint64_t)(uintptr_t)p;
		reg.range.len = (uint64_t)page;
		*step = "UFFDIO_REGISTER (write-protect)";
		rc = ioctl(fd, UFFDIO_REGISTER, &reg) ? -errno : 0;
	}
	/* The fd first: with UNMAP events asked, a munmap of a registered page would wait
	 * for a reader of the fd (userfaultfd_event_wait_completion), and there is none. */
	close(fd);
	if (p != MAP_FAILED)
		munmap(p, (size_t)page);
	if (mfd >= 0)
		close(mfd);
	return rc;
}

/* The lowest of libodpemu's tiers: the non-cooperative events, no shmem write-protect. */
#define UFFD_BASE (IPC_UFFD_FEATURES & ~(uint64_t)UFFD_FEATURE_WP_HUGETLBFS_SHMEM)

bool emu_check_probe_userfaultfd(char *d, size_t len)
{
	const char *step, *how;
	int rc = uffd_try(UFFD_BASE, false, &step, &how);
	bool dev = access("/dev/userfaultfd", R_OK | W_OK) == 0;

	if (rc && status_field("Seccomp", 10) == 2)
		emu_say(d, len, "%s: %s under a seccomp filter (Docker's default profile refuses "
			"userfaultfd)", step, ename(-rc));
	else if (rc)
		emu_say(d, len, "%s: %s (vm.unprivileged_userfaultfd=%ld; /dev/userfaultfd %s, "
			"which libodpemu does not use)", step, ename(-rc),
			read_long("/proc/sys/vm/unprivileged_userfaultfd"), dev ? "usable" : "not "
			"usable");
	else
		emu_say(d, len, "a %s fd with the unmap, remove and remap events; an anonymous "
			"page registers", how);
	return !rc;
}

bool emu_check_probe_uffd_wp_shmem(char *d, size_t len)
{
	const char *step, *how;
	int rc = uffd_try(UFFD_BASE | UFFD_FEATURE_WP_HUGETLBFS_SHMEM, true, &step, &how);

	emu_say(d, len, "%s", rc ? step : "a memfd page registers");
	if (rc)
		emu_say(d + strlen(d), len - strlen(d), ": %s", ename(-rc));
	return !rc;
}

bool emu_check_probe_uffd_wp_async(char *d, size_t len)
{
	const char *step, *how;
	int rc = uffd_try(IPC_UFFD_FEATURES | UFFD_FEATURE_WP_ASYNC, false, &step, &how);

	emu_say(d, len, "%s", rc ? step : "UFFDIO_API takes it");
	if (rc)
		emu_say(d + strlen(d), len - strlen(d), ": %s", ename(-rc));
	return !rc;
}

/* ---- seccomp, pidfd, map_files ---- */

/* In a child: a filter with a listener and libodpemu's flags (lib/watch.c); it lets
 * every call run. 0 or errno. */
static int install_listener(void *unused)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { .len = 1, .filter = &allow };

	(void)unused;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return errno;
	if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER |
		    SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH, &prog) < 0)
		return errno;
	return 0;
}

bool emu_check_probe_seccomp_notify(char *d, size_t len)
{
	uint32_t action = SECCOMP_RET_USER_NOTIF;
	struct seccomp_notif_sizes sz;
	int st;

	if (syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) ||
	    syscall(__NR_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action)) {
		emu_say(d, len, "SECCOMP_RET_USER_NOTIF: %s (before Linux 5.0)", ename(errno));
		return false;
	}
	st = in_child(install_listener, NULL, 2000);
	emu_say(d, len, "a filter with a listener (NEW_LISTENER | TSYNC | TSYNC_ESRCH): %s",
		st == 0 ? "installs" : st < 0 ? "the test could not run" : ename(st));
	return st == 0;
}

bool emu_check_probe_pidfd_open(char *d, size_t len)
{
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	emu_say(d, len, "pidfd_open(2): %s", fd >= 0 ? "works" : ename(errno));
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

bool emu_check_probe_map_files(char *d, size_t len)
{
	int mfd = memfd_create("odpemu-check", MFD_CLOEXEC), fd = -1, e = 0;
	void *p = MAP_FAILED;
	char path[80];

	if (mfd >= 0 && !ftruncate(mfd, 4096))
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, mfd, 0);
	if (p != MAP_FAILED) {
		snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx",
			 (unsigned long)(uintptr_t)p, (unsigned long)(uintptr_t)p + 4096);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	e = errno;
	emu_say(d, len, "CAP_SYS_ADMIN %s, CAP_CHECKPOINT_RESTORE %s: a mapping's entry %s",
		has_cap(CAP_SYS_ADMIN) ? "yes" : "no",
		has_cap(CAP_CHECKPOINT_RESTORE) ? "yes" : "no", fd >= 0 ? "opens" : ename(e));
	if (fd >= 0)
		close(fd);
	if (p != MAP_FAILED)
		munmap(p, 4096);
	if (mfd >= 0)
		close(mfd);
	return fd >= 0;
}

/* ---- the tests' needs ---- */

bool emu_check_probe_cachestat(char *d, size_t len)
{
	struct { uint64_t off, len; } range = { 0, 4096 };
	uint64_t cs[5];	/* struct cachestat: cache, dirty, writeback, evicted, recent */
	int fd = memfd_create("odpemu-check", MFD_CLOEXEC), rc;

	rc = fd < 0 ? errno : syscall(NR_CACHESTAT, fd, &range, cs, 0) ? errno : 0;
	if (fd >= 0)
		close(fd);
	emu_say(d, len, "cachestat(2): %s", rc ? ename(rc) : "works");
	return !rc;
}

/* In a child: a network namespace of its own, and a veth pair in it (gone with it). 0,
 * the errno of unshare, or 200 + libnl's error. */
static int netns_child(void *unused)
{
	struct nl_sock *sk;
	int rc;

	(void)unused;
	if (unshare(CLONE_NEWNET))
		return errno < 200 ? errno : 199;
	if (!(sk = nl_socket_alloc()) || nl_connect(sk, NETLINK_ROUTE))
		return 200 + NLE_FAILURE;
	rc = rtnl_link_veth_add(sk, "odpchk0", "odpchk1", getpid());
	nl_socket_free(sk);
	return rc < 0 ? 200 + (-rc < 55 ? -rc : NLE_FAILURE) : 0;
}

bool emu_check_probe_netns(char *d, size_t len)
{
	int st = in_child(netns_child, NULL, 5000);

	if (st == 0)
		emu_say(d, len, "a network namespace and a veth pair in it: created");
	else if (st < 0)
		emu_say(d, len, "the test could not run");
	else if (st < 200)
		emu_say(d, len, "unshare(CLONE_NEWNET): %s", ename(st));
	else
		emu_say(d, len, "a veth pair: %s", nl_geterror(st - 200));
	return st == 0;
}
