/* SPDX-License-Identifier: MIT */
/*
 * Malformed control requests: random bytes, truncated headers, lengths that lie, wrong
 * versions, unknown ops, bodies of the wrong size, fds nobody asked for, requests before
 * HELLO, and another session's handles. Each must get an error reply (or, for a datagram
 * too short to carry a header, at least not harm anyone), and a well-behaved client of the
 * same daemon must keep working throughout. Every fd a refused request carried is closed
 * by the daemon, even those of an empty datagram (which ends the session).
 * A CLIENT_INFO that lies about its probe word (another value: -EIO; an address not
 * mapped: -EFAULT) is recorded as a client whose memory the daemon cannot read, listed so
 * by odpemu_query_clients and logged with the remedy; the good client's own record says
 * readable, with its notifier and userfaultfd features.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"
#include "ipc.h"
#include "t.h"

static int raw_connect(struct h_env *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	char path[300];

	snprintf(path, sizeof(path), "%s/%s.sock", e->rundir, e->host[0].name);
	if (strlen(path) >= sizeof(sa.sun_path))
		exit(1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("connect");
		exit(1);
	}
	return fd;
}

/* Send len bytes (with nfds copies of /dev/null attached); wait up to 2 s for a reply. */
static int exchange(int fd, const void *buf, size_t len, unsigned nfds, struct ipc_hdr *rep)
{
	union {
		char c[CMSG_SPACE(sizeof(int) * 16)];
		struct cmsghdr a;
	} cm;
	struct iovec iov = { (void *)buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char in[IPC_MAX_MSG];
	int fds[16];

	if (nfds) {
		struct cmsghdr *c;

		for (unsigned i = 0; i < nfds; i++)
			fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		msg.msg_control = cm.c;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	if (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0)
		return -errno;
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	if (poll(&pfd, 1, 2000) != 1)
		return -ETIMEDOUT;
	if (recv(fd, in, sizeof(in), 0) < (ssize_t)sizeof(*rep))
		return -EPIPE;
	memcpy(rep, in, sizeof(*rep));
	return 0;
}

static void request(int fd, uint16_t version, uint16_t op, uint32_t handle, const void *body,
		    size_t blen, int32_t len_delta, unsigned nfds, int want, const char *what)
{
	char buf[IPC_MAX_MSG];
	struct ipc_hdr h = { .version = version, .op = op, .seq = 7, .handle = handle,
		.len = (uint32_t)((int64_t)(sizeof(h) + blen) + len_delta) }, rep;
	int rc;

	memcpy(buf, &h, sizeof(h));
	if (blen)
		memcpy(buf + sizeof(h), body, blen);
	rc = exchange(fd, buf, sizeof(h) + blen, nfds, &rep);
	T_CHECK(rc == 0, "%s: no reply (%d)", what, rc);
	if (!rc)
		T_CHECK(rep.status == want, "%s: status %d, want %d", what, rep.status, want);
}

static void hello(int fd)
{
	struct ipc_hello_req q = { IPC_VERSION, 0 };

	request(fd, IPC_VERSION, IPC_HELLO, 0, &q, sizeof(q), 0, 0, 0, "HELLO");
}

/* A well-behaved client: allocates a PD and a CQ; fails the test if the daemon stopped
 * serving. */
static void still_serving(struct odpemu_context *ctx, const char *after)
{
	struct odpemu_pd *pd = odpemu_alloc_pd(ctx);
	struct odpemu_cq *cq = odpemu_create_cq(ctx, 8, NULL, NULL, 0);

	T_CHECK(pd && cq, "good client failed after %s: %m", after);
	if (cq)
		odpemu_destroy_cq(cq);
	if (pd)
		odpemu_dealloc_pd(pd);
}

static void structured(struct h_env *e, struct odpemu_context *good)
{
	int fd = raw_connect(e);
	struct ipc_handle_rep dummy = { 0 };
	struct ipc_create_cq_req cq = { .cqe = 1u << 30 };

	request(fd, IPC_VERSION, IPC_ALLOC_PD, 0, NULL, 0, 0, 0, -EPROTO, "before HELLO");
	request(fd, 99, IPC_HELLO, 0, NULL, 0, 0, 0, -EPROTO, "wrong version");
	request(fd, IPC_VERSION, IPC_HELLO, 0, NULL, 0, 0, 0, -EBADMSG, "HELLO without body");
	hello(fd);
	request(fd, IPC_VERSION, IPC_HELLO, 0, NULL, 0, 0, 0, -EPROTO, "HELLO twice");
	request(fd, IPC_VERSION, 999, 0, NULL, 0, 0, 0, -EOPNOTSUPP, "unknown op");
	request(fd, IPC_VERSION, IPC_ALLOC_PD, 0, NULL, 0, 1000000, 0, -EBADMSG, "huge length");
	request(fd, IPC_VERSION, IPC_ALLOC_PD, 0, NULL, 0, -4, 0, -EBADMSG, "short length");
	request(fd, IPC_VERSION, IPC_ALLOC_PD, 0, &dummy, sizeof(dummy), 0, 0, -EBADMSG,
		"body where none belongs");
	request(fd, IPC_VERSION, IPC_DEALLOC_PD, 12345, NULL, 0, 0, 0, -ENOENT, "unknown handle");
	request(fd, IPC_VERSION, IPC_CREATE_CQ, 0, &cq, sizeof(cq), 0, 0, -EINVAL, "huge CQ");
	request(fd, IPC_VERSION, IPC_DEALLOC_PD, 1, NULL, 0, 0, 16, -ENOENT, "16 stray fds");
	/* another session's handle: the good client's PD is handle 1 of its session */
	{
		struct odpemu_pd *pd = odpemu_alloc_pd(good);

		request(fd, IPC_VERSION, IPC_DEALLOC_PD, pd ? pd->handle : 1, NULL, 0, 0, 0,
			-ENOENT, "another session's PD");
		T_CHECK(pd && odpemu_dealloc_pd(pd) == 0, "the owner can still free its PD");
	}
	{
		/* a pinned MR whose segment is not a regular file (/dev/null): refused, never
		 * mapped */
		struct {
			struct ipc_reg_mr_req q;
			struct ipc_mr_seg seg;
		} mr = { .q = { .va = 0x10000000, .len = 4096, .access = 1, .pd = 1, .nsegs = 1 },
			 .seg = { .len = 4096 } };

		request(fd, IPC_VERSION, IPC_ALLOC_PD, 0, NULL, 0, 0, 0, 0, "alloc_pd");
		request(fd, IPC_VERSION, IPC_REG_MR, 0, &mr, sizeof(mr), 0, 1, -EBADF,
			"pinned MR backed by a device file");
	}
	{
		/* RESIZE_CQ: handle 2 is the CQ (1 the PD); a resize names a CQ of this
		 * session and a size in 1..max_cqe */
		struct ipc_create_cq_req c = { .cqe = 8 };
		struct ipc_resize_cq_req rz = { .cqe = 8 };

		request(fd, IPC_VERSION, IPC_CREATE_CQ, 0, &c, sizeof(c), 0, 0, 0, "create_cq");
		request(fd, IPC_VERSION, IPC_RESIZE_CQ, 12345, &rz, sizeof(rz), 0, 0, -ENOENT,
			"resize an unknown CQ");
		request(fd, IPC_VERSION, IPC_RESIZE_CQ, 1, &rz, sizeof(rz), 0, 0, -ENOENT,
			"resize a PD");
		request(fd, IPC_VERSION, IPC_RESIZE_CQ, 2, &rz, sizeof(rz) - 4, 0, 0, -EBADMSG,
			"resize with a short body");
		rz.cqe = 0;
		request(fd, IPC_VERSION, IPC_RESIZE_CQ, 2, &rz, sizeof(rz), 0, 0, -EINVAL,
			"resize to 0");
		rz.cqe = 1u << 30;
		request(fd, IPC_VERSION, IPC_RESIZE_CQ, 2, &rz, sizeof(rz), 0, 0, -EINVAL,
			"resize beyond max_cqe");
		rz.cqe = 64;
		request(fd, IPC_VERSION, IPC_RESIZE_CQ, 2, &rz, sizeof(rz), 0, 0, 0, "resize");
		request(fd, IPC_VERSION, IPC_RESIZE_CQ, 2, &rz, sizeof(rz), 0, 2, 0,
			"resize with stray fds");
	}
	close(fd);
	still_serving(good, "structured bad requests");
}

static void random_bytes(struct h_env *e, struct odpemu_context *good, struct t_rng *rng)
{
	for (int round = 0; round < 200; round++) {
		int fd = raw_connect(e);
		char buf[IPC_MAX_MSG + 64];
		size_t len = 1 + t_below(rng, sizeof(buf) - 1);
		struct ipc_hdr rep;

		if (round & 1)
			hello(fd);
		t_fill(rng, buf, len);
		if (round % 4 == 3) {	/* a plausible header over random content */
			struct ipc_hdr *h = (struct ipc_hdr *)(void *)buf;

			h->version = IPC_VERSION;
			h->op = (uint16_t)t_below(rng, IPC_OP_MAX + 2);
			h->len = (uint32_t)len;
		}
		(void)exchange(fd, buf, len, (unsigned)t_below(rng, 3), &rep);
		close(fd);
	}
	still_serving(good, "random requests");
}

/* ---- fds the daemon was sent ---- */

#define PROBE "odpemu-ctl-fuzz-probe"	/* the name of the memfds sent */

/* How many fds host 0's daemon holds on a probe memfd (-1: /proc says nothing). */
static int daemon_probes(struct h_env *e)
{
	char dir[64], path[320], link[256];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)e->host[0].pid);
	if (!(d = opendir(dir)))
		return -1;
	while ((de = readdir(d))) {
		ssize_t len;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if ((len = readlink(path, link, sizeof(link) - 1)) > 0) {
			link[len] = 0;
			n += strstr(link, PROBE) != NULL;
		}
	}
	closedir(d);
	return n;
}

/* Send len bytes of buf on fd with nfds probe memfds attached (ours closed after). */
static int send_probes(int fd, const void *buf, size_t len, unsigned nfds)
{
	union {
		char c[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr a;
	} cm;
	struct iovec iov = { (void *)buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.c,
		.msg_controllen = CMSG_SPACE(sizeof(int) * nfds) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	int fds[4], rc = 0;

	for (unsigned i = 0; i < nfds; i++)
		fds[i] = memfd_create(PROBE, MFD_CLOEXEC);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	if (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0)
		rc = -errno;
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	return rc;
}

/* Wait (2 s at most) until the daemon holds no probe; how many it still holds. */
static int probes_gone(struct h_env *e)
{
	int n = daemon_probes(e);

	for (int i = 0; i < 200 && n > 0; i++) {
		usleep(10000);
		n = daemon_probes(e);
	}
	return n;
}

/* Regression (tests/fuzz/crashes-ctl/empty-datagram-with-fd-leaks): a refused request's
 * fds are closed, and so are an empty datagram's, which the daemon takes for the end of
 * the session (it returned before closing them). */
static void stray_fds(struct h_env *e)
{
	struct ipc_hdr h = { .version = IPC_VERSION, .op = 999, .seq = 7,
		.len = sizeof(h) }, rep;
	struct pollfd pfd;
	int fd = raw_connect(e);
	char in[IPC_MAX_MSG];

	T_EQ(daemon_probes(e), 0, "probe fds in the daemon at the start");
	T_EQ(send_probes(fd, &h, sizeof(h), 4), 0, "unknown op with 4 fds: sent");
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	T_CHECK(poll(&pfd, 1, 2000) == 1 && recv(fd, &rep, sizeof(rep), 0) == sizeof(rep) &&
		rep.status == -EPROTO, "request before HELLO with 4 fds: refused");
	T_EQ(probes_gone(e), 0, "fds of a refused request left open in the daemon");
	T_EQ(send_probes(fd, NULL, 0, 4), 0, "empty datagram with 4 fds: sent");
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	T_CHECK(poll(&pfd, 1, 2000) == 1 && recv(fd, in, sizeof(in), 0) == 0,
		"empty datagram: the daemon ends the session");
	T_EQ(probes_gone(e), 0, "fds of an empty datagram left open in the daemon");
	close(fd);
}

/* Our records among the device's clients: the one whose process_vm_err is err. */
static const struct odpemu_client_info *record_with(const struct odpemu_client_info *c,
						    int n, int32_t err)
{
	for (int i = 0; i < n; i++)
		if (c[i].pid == (uint32_t)getpid() && (c[i].flags & ODPEMU_CLIENT_REPORTED) &&
		    c[i].process_vm_err == err)
			return &c[i];
	return NULL;
}

static bool log_has(struct h_env *e, const char *text)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "grep -qF '%s' %s", text, e->host[0].log);
	return system(cmd) == 0;
}

static void client_records(struct h_env *e, struct odpemu_context *good)
{
	static const uint64_t word = 0x1234;
	struct ipc_client_info_req lie = { .probe_addr = (uint64_t)(uintptr_t)&word,
					   .probe_value = word + 1 };
	struct odpemu_client_info c[16];
	const struct odpemu_client_info *mine;
	static char buf[4096] __attribute__((aligned(4096)));
	/* an MR: without a userfaultfd, the seccomp route starts at the first one */
	struct odpemu_pd *pd = odpemu_alloc_pd(good);
	struct odpemu_mr *mr = pd ? odpemu_reg_mr(pd, buf, sizeof(buf), ODPEMU_ACCESS_LOCAL_WRITE |
						 ODPEMU_ACCESS_ON_DEMAND) : NULL;
	int fd = raw_connect(e), n;

	T_CHECK(mr != NULL, "an ODP MR on the good client: %m");
	hello(fd);
	request(fd, IPC_VERSION, IPC_CLIENT_INFO, 0, &lie, sizeof(lie), 0, 0, 0,
		"CLIENT_INFO, another value");
	n = odpemu_query_clients(good, c, 16);
	T_CHECK(n >= 2 && record_with(c, n, -EIO), "a record says -EIO (%d records)", n);
	lie.probe_addr = 8;
	request(fd, IPC_VERSION, IPC_CLIENT_INFO, 0, &lie, sizeof(lie), 0, 0, 0,
		"CLIENT_INFO, an address not mapped");
	n = odpemu_query_clients(good, c, 16);
	T_CHECK(n >= 2 && record_with(c, n, -EFAULT), "a record says -EFAULT");
	T_CHECK(log_has(e, "memory cannot be read (Bad address): its ODP MRs"),
		"the daemon logged the unreadable client with the consequence");
	mine = record_with(c, n, 0);
	/* the notifier as the host report promises it: the userfaultfd, else the seccomp
	 * route (docs/emu.md, "MMU notifier") */
	if (h_host_verdict(good, "userfaultfd") == ODPEMU_HOST_AVAILABLE)
		T_CHECK(mine && (mine->flags & ODPEMU_CLIENT_NOTIFIER) && mine->uffd_features,
			"the good client: readable, notifier on, userfaultfd features %#llx",
			mine ? (unsigned long long)mine->uffd_features : 0ull);
	else
		T_CHECK(mine && !(mine->flags & ODPEMU_CLIENT_NOTIFIER) && !mine->uffd_features &&
			(mine->flags & ODPEMU_CLIENT_NOTIFIER_SECCOMP) &&
			(mine->flags & ODPEMU_CLIENT_SUPERVISED),
			"the good client without a userfaultfd: readable, notified by the seccomp "
			"route (flags %#x)", mine ? mine->flags : 0u);
	T_CHECK(mine && !strcmp(mine->comm, "test-e2e-ctl-fu"), "its command name: %s",
		mine ? mine->comm : "-");
	request(fd, IPC_VERSION, IPC_CLIENT_INFO, 0, &lie, sizeof(lie) - 1, 0, 0, -EBADMSG,
		"CLIENT_INFO, a short body");
	close(fd);
	odpemu_dereg_mr(mr);
	odpemu_dealloc_pd(pd);
}

static void fuzz(struct h_env *e)
{
	struct odpemu_context *good = e->ctx[0];

	stray_fds(e);
	client_records(e, good);
	structured(e, good);
	random_bytes(e, good, &e->rng);
	for (int i = 0; i < 200 && h_counter(good, ODPEMU_COUNTERS_DEVICE, 0, "sessions") != 1; i++)
		usleep(10000);	/* the daemon sees the closes asynchronously */
	T_EQ(h_counter(good, ODPEMU_COUNTERS_DEVICE, 0, "sessions"), 1, "sessions after fuzzing");
	T_EQ(h_counter(good, ODPEMU_COUNTERS_DEVICE, 0, "pds"), 0, "PDs after fuzzing");
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "emu-ctl-fuzz", .seed = 11, .watchdog_s = 300,
		.open = H_OPEN_A, .body = fuzz };

	return h_main(argc, argv, &t);
}
