/* SPDX-License-Identifier: MIT */
/* The control protocol against a scripted stand-in for odpemud (a thread on a socket in
 * a temporary run directory): HELLO and its fds, replies, error lines, a reply to the
 * wrong request, paged counters, object creation with ring memfds, a pinned MR whose
 * memfd the "daemon" reads, and the daemon vanishing mid-session. Not a daemon: each op
 * answers one canned way. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "t_lib.h"

static char dir[] = "/tmp/odpemu-ctl-XXXXXX";

struct fake {
	int lsock, conn;
	int async_w;			/* write end of the session's event pipe */
	bool uffd_is_uffd;		/* HELLO carried a real userfaultfd and a relay socket */
	uint8_t mr_bytes[64];		/* what the pinned MR's memfd held at REG_MR */
	uint32_t mr_nsegs;
	pthread_t thread;
};

static bool is_uffd(int fd)
{
	char link[64], want[] = "anon_inode:[userfaultfd]";
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	return n == (ssize_t)strlen(want) && !memcmp(link, want, (size_t)n);
}

static bool is_seqpacket(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	return !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) && type == SOCK_SEQPACKET;
}

static void reply(struct fake *f, const struct ipc_hdr *req, int32_t status, const void *body,
		  size_t len, const int *fds, unsigned nfds, uint32_t seq_skew)
{
	char buf[IPC_MAX_MSG];
	struct ipc_hdr *h = (struct ipc_hdr *)buf;
	struct iovec iov = { buf, sizeof(*h) + len };
	union { char b[CMSG_SPACE(sizeof(int) * 4)]; struct cmsghdr a; } cb;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	*h = *req;
	h->len = (uint32_t)(sizeof(*h) + len);
	h->status = status;
	h->seq += seq_skew;
	if (len)
		memcpy(buf + sizeof(*h), body, len);
	if (nfds) {
		struct cmsghdr *cm;

		m.msg_control = cb.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	if (sendmsg(f->conn, &m, MSG_NOSIGNAL) < 0)
		perror("fake sendmsg");
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
}

static void fail(struct fake *f, const struct ipc_hdr *h, int err, const char *msg)
{
	struct ipc_err_body b;

	memset(&b, 0, sizeof(b));
	snprintf(b.msg, sizeof(b.msg), "%s", msg);
	reply(f, h, -err, &b, sizeof(b), NULL, 0, 0);
}

static void do_hello(struct fake *f, const struct ipc_hdr *h, const int *fds, unsigned nfds)
{
	const struct ipc_hello_req *req = (const void *)(h + 1);
	struct ipc_hello_rep rep = { .session = 1, .daemon_pid = (uint32_t)getpid(),
				     .notifier = 1 };
	int p[2], out[4];
	struct ipc_status_page *sp;

	/* the userfaultfd, its relay socket, and our end of the connection (the cmd_fd) */
	f->uffd_is_uffd = nfds == 3 && (req->flags & IPC_HELLO_HAS_UFFD) &&
			  (req->flags & IPC_HELLO_HAS_CMD_FD) && is_uffd(fds[0]) &&
			  is_seqpacket(fds[1]) && is_seqpacket(fds[2]);
	if (pipe2(p, O_CLOEXEC))
		abort();
	f->async_w = p[1];
	out[0] = p[0];
	out[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	out[2] = memfd_create("status", MFD_CLOEXEC);
	if (ftruncate(out[2], sizeof(*sp)))
		abort();
	sp = mmap(NULL, sizeof(*sp), PROT_READ | PROT_WRITE, MAP_SHARED, out[2], 0);
	sp->magic = IPC_STATUS_MAGIC;
	sp->version = IPC_VERSION;
	munmap(sp, sizeof(*sp));
	out[3] = memfd_create("doorbells", MFD_CLOEXEC);
	if (ftruncate(out[3], sizeof(struct ipc_db_page)))
		abort();
	snprintf(rep.name, sizeof(rep.name), "fake0");
	reply(f, h, 0, &rep, sizeof(rep), out, 4, 0);
}

static void do_counters(struct fake *f, const struct ipc_hdr *h)
{
	const struct ipc_counters_req *req = (const void *)(h + 1);
	struct { struct ipc_counters_rep r; struct ipc_counter c[2]; } rep;
	uint32_t n = req->start == 0 ? 2 : 1;

	memset(&rep, 0, sizeof(rep));
	rep.r.n = n;
	rep.r.more = req->start == 0;
	for (uint32_t i = 0; i < n; i++) {
		snprintf(rep.c[i].name, sizeof(rep.c[i].name), "ctr%u", req->start + i);
		rep.c[i].value = 100 + req->start + i + req->id * 1000;
	}
	reply(f, h, 0, &rep, sizeof(rep.r) + n * sizeof(rep.c[0]), NULL, 0, 0);
}

static void do_create_cq(struct fake *f, const struct ipc_hdr *h)
{
	const struct ipc_create_cq_req *req = (const void *)(h + 1);
	uint32_t size = ipc_pow2(req->cqe);
	struct ipc_create_cq_rep rep = { .handle = 5, .cqe = size,
					 .map_len = ipc_ring_bytes(size, ipc_cq_slot()) };
	int fd = memfd_create("cq", MFD_CLOEXEC);
	void *m;

	if (ftruncate(fd, rep.map_len))
		abort();
	m = mmap(NULL, rep.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ipc_ring_init(m, 0, size, ipc_cq_slot());
	munmap(m, rep.map_len);
	reply(f, h, 0, &rep, sizeof(rep), &fd, 1, 0);
}

static void do_reg_mr(struct fake *f, const struct ipc_hdr *h, const int *fds, unsigned nfds)
{
	const struct ipc_reg_mr_req *req = (const void *)(h + 1);
	struct ipc_reg_mr_rep rep = { .handle = 9, .lkey = 0x100, .rkey = 0x200 };
	uint64_t page = t_page();

	f->mr_nsegs = req->nsegs;
	if (req->nsegs == 1 && nfds == 1) {
		off_t at = (off_t)(req->segs[0].fd_offset + (req->va & (page - 1)));

		if (pread(fds[0], f->mr_bytes, sizeof(f->mr_bytes), at) != sizeof(f->mr_bytes))
			memset(f->mr_bytes, 0, sizeof(f->mr_bytes));
	}
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	reply(f, h, 0, &rep, sizeof(rep), NULL, 0, 0);
}

/* One request; false when the session should end (the "daemon dies"). */
static bool serve(struct fake *f, const struct ipc_hdr *h, int *fds, unsigned nfds)
{
	struct ipc_device_rep dev;
	struct ipc_port_rep port;

	switch (h->op) {
	case IPC_HELLO:
		do_hello(f, h, fds, nfds);
		return true;
	case IPC_QUERY_DEVICE:
		memset(&dev, 0, sizeof(dev));
		dev.max_qp = 77;
		dev.odp_general_caps = ODPEMU_ODP_SUPPORT;
		snprintf(dev.fw_ver, sizeof(dev.fw_ver), "fake 1.0");
		reply(f, h, 0, &dev, sizeof(dev), NULL, 0, 0);
		return true;
	case IPC_QUERY_PORT:
		memset(&port, 0, sizeof(port));
		reply(f, h, 0, &port, sizeof(port), NULL, 0, 1);	/* wrong seq */
		return true;
	case IPC_ALLOC_PD:
		fail(f, h, ENOSPC, "no PD left: raise --max-pd");
		return true;
	case IPC_COUNTERS:
		do_counters(f, h);
		return true;
	case IPC_CREATE_CQ:
		do_create_cq(f, h);
		return true;
	case IPC_REG_MR:
		do_reg_mr(f, h, fds, nfds);
		return true;
	case IPC_INJECT:
		reply(f, h, 0, NULL, 0, NULL, 0, 0);
		return true;
	case IPC_CLIENT_INFO: {	/* what the library reports after HELLO: heard */
		struct ipc_client_info_rep ok = { 0 };

		reply(f, h, 0, &ok, sizeof(ok), NULL, 0, 0);
		return true;
	}
	case IPC_DESTROY_CHANNEL:	/* the test's way to make the daemon die */
		return false;
	default:
		fail(f, h, EOPNOTSUPP, "not in the script");
		return true;
	}
}

static bool serve_one(struct fake *f)
{
	char buf[IPC_MAX_MSG];
	union { char b[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)]; struct cmsghdr a; } cb;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.b,
			    .msg_controllen = sizeof(cb.b) };
	int fds[IPC_MAX_FDS];
	unsigned nfds = 0;
	ssize_t n = recvmsg(f->conn, &m, MSG_CMSG_CLOEXEC);

	if (n < (ssize_t)sizeof(struct ipc_hdr))
		return false;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		nfds = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(cm), nfds * sizeof(int));
	}
	if (((struct ipc_hdr *)buf)->len != (uint32_t)n)
		abort();
	return serve(f, (struct ipc_hdr *)buf, fds, nfds);
}

/* Sessions one after the other (the device list's probe is one); the second real one
 * (after the probe and HELLO's) ends the script. */
static void *fake_main(void *arg)
{
	struct fake *f = arg;

	for (;;) {
		bool hello = false;

		f->conn = accept4(f->lsock, NULL, NULL, SOCK_CLOEXEC);
		if (f->conn < 0)
			return NULL;
		while (serve_one(f))
			hello = true;
		close(f->conn);
		if (hello) {
			close(f->async_w);	/* the daemon is gone */
			return NULL;
		}
	}
}

static void fake_start(struct fake *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/fake0.sock", dir);
	f->lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (bind(f->lsock, (struct sockaddr *)&sa, sizeof(sa)) || listen(f->lsock, 4))
		abort();
	pthread_create(&f->thread, NULL, fake_main, f);
}

static int count_uffds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += is_uffd(fd);
	return n;
}

static void test_session(struct fake *f, struct odpemu_context *ctx)
{
	struct lib_context *c = lib_ctx(ctx);
	struct odpemu_device_attr da;
	struct odpemu_port_attr pa;
	struct odpemu_counter ctr[8];
	int probe = lib_uffd_open();	/* may this process have a userfaultfd at all? */

	if (probe >= 0) {
		close(probe);
		T_CHECK(f->uffd_is_uffd, "HELLO carried a userfaultfd and a relay socket");
		/* the relay's own, and the fake daemon's duplicate of it: one per process */
		T_EQ(count_uffds(), 2, "the library keeps one userfaultfd for the process");
	}
	T_CHECK(c->status && c->doorbell_fd >= 0 && ctx->async_fd >= 0, "HELLO's three fds");
	T_EQ(odpemu_query_device(ctx, &da), 0, "query_device");
	T_EQ(da.max_qp, 77, "max_qp");
	T_CHECK(!strcmp(da.fw_ver, "fake 1.0"), "fw_ver");
	T_EQ(da.odp_caps.general_caps, ODPEMU_ODP_SUPPORT, "odp caps");
	T_EQ(da.phys_port_cnt, 1, "one port");

	errno = 0;
	T_CHECK(!odpemu_alloc_pd(ctx), "alloc_pd refused");
	T_EQ(errno, ENOSPC, "errno from the reply status");
	T_CHECK(!strcmp(odpemu_last_error(ctx), "no PD left: raise --max-pd"), "last_error: %s",
		odpemu_last_error(ctx));
	T_EQ(odpemu_query_port(ctx, 1, &pa), EPROTO, "a reply to another request");
	T_EQ(odpemu_query_port(ctx, 2, &pa), EINVAL, "port 2");

	T_EQ(odpemu_query_counters(ctx, ODPEMU_COUNTERS_QP, 3, ctr, 8), 3, "two pages");
	T_CHECK(!strcmp(ctr[2].name, "ctr2") && ctr[2].value == 3102, "paged counter");
	T_EQ(odpemu_query_counters(ctx, ODPEMU_COUNTERS_DEVICE, 0, ctr, 1), 1, "max 1");
	T_EQ(odpemu_set_inject(ctx, "fault-delay-us", "100"), 0, "inject");
	T_EQ(odpemu_set_inject(ctx, "a-key-much-longer-than-thirty-one-bytes", "1"), EINVAL,
	     "key too long");
}

static void test_objects(struct fake *f, struct odpemu_context *ctx)
{
	struct odpemu_pd pd = { .context = ctx, .handle = 2 };
	size_t page = t_page();
	uint8_t *buf = t_anon(2);
	struct odpemu_mr *mr;
	struct odpemu_cq *cq;
	struct odpemu_wc wc;

	cq = odpemu_create_cq(ctx, 5, NULL, NULL, 0);
	T_CHECK(cq && cq->cqe == 8 && cq->handle == 5, "create_cq");
	T_EQ(cq ? odpemu_poll_cq(cq, 1, &wc) : -2, 0, "poll the new CQ");

	for (int i = 0; i < 64; i++)
		buf[page - 16 + (size_t)i] = (uint8_t)(i + 1);
	mr = odpemu_reg_mr(&pd, buf + page - 16, 64, ODPEMU_ACCESS_LOCAL_WRITE);
	T_CHECK(mr && mr->lkey == 0x100 && mr->rkey == 0x200, "pinned reg_mr");
	T_EQ(f->mr_nsegs, 1, "one segment");
	for (int i = 0; i < 64; i++)
		T_EQ(f->mr_bytes[i], i + 1, "the daemon's memfd holds the MR's bytes");
	errno = 0;
	T_CHECK(!odpemu_reg_mr(&pd, buf, 64, ODPEMU_ACCESS_REMOTE_WRITE), "remote write alone");
	T_EQ(errno, EINVAL, "EINVAL");

	/* The daemon dies (the script ends on DESTROY_CHANNEL). */
	{
		struct odpemu_comp_channel *ch = calloc(1, sizeof(*ch));
		struct odpemu_async_event ev;

		*ch = (struct odpemu_comp_channel){ .context = ctx, .handle = 1, .fd = -1 };
		T_EQ(odpemu_destroy_comp_channel(ch), 0, "destroy after death counts as done");
		T_CHECK(lib_ctx_dead(lib_ctx(ctx)), "context dead");
		T_EQ(odpemu_query_device(ctx, &(struct odpemu_device_attr){ 0 }), ENODEV, "ENODEV");
		T_EQ(cq ? odpemu_poll_cq(cq, 1, &wc) : -1, -1, "poll fails");
		T_EQ(odpemu_get_async_event(ctx, &ev), 0, "an event");
		T_EQ(ev.event_type, ODPEMU_EVENT_DEVICE_FATAL, "DEVICE_FATAL");
		T_EQ(odpemu_get_async_event(ctx, &ev), EIO, "once");
	}
	T_EQ(mr ? odpemu_dereg_mr(mr) : 0, 0, "dereg after death");
	T_EQ(cq ? odpemu_destroy_cq(cq) : 0, 0, "destroy_cq after death");
	munmap(buf, 2 * page);
}

int main(void)
{
	struct odpemu_device **l;
	struct odpemu_context *ctx;
	struct fake f;
	int n = 0;

	if (!mkdtemp(dir))
		return 1;
	setenv("ODPEMU_RUNDIR", dir, 1);
	fake_start(&f);
	l = odpemu_get_device_list(&n);
	T_EQ(n, 1, "the fake is listed");
	ctx = n == 1 ? odpemu_open_device(l[0]) : NULL;
	T_CHECK(ctx, "open_device: %s", strerror(errno));
	odpemu_free_device_list(l);
	if (ctx) {
		T_CHECK(!strcmp(odpemu_get_device_name(ctx->device), "fake0"), "device name");
		test_session(&f, ctx);
		test_objects(&f, ctx);
		odpemu_close_device(ctx);
	}
	pthread_join(f.thread, NULL);
	close(f.lsock);
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/fake0.sock", dir);
		unlink(path);
		rmdir(dir);
	}
	return t_done("ctl");
}
