/* SPDX-License-Identifier: MIT */
/*
 * ibv_import_device / ibv_import_pd / ibv_import_mr through the drop-in (ibv_import_*(3);
 * emu/import.c): one device session shared by contexts in one process and in another.
 *  - a dup of a context's cmd_fd imports it: the PD and MR are the same daemon objects
 *    (keys and length as the original's, addr NULL), and a QP made on the imported context
 *    with the imported PD takes RDMA WRITEs into the original's MR and sends from it;
 *  - closing the original context first leaves its objects working through the import;
 *  - a child given the cmd_fd over SCM_RIGHTS imports it, sends from the parent's ODP MR
 *    (the parent's memory) and from an MR of its own on the imported PD (its memory);
 *    killed, its session goes from the daemon's client list;
 *  - bad handles (ENOENT) and fds that are no cmd_fd (EINVAL, ENODEV) fail cleanly.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "harness.h"
#include "verbs_t.h"
#include "odpemu/odpemu.h"
#include "t.h"

#define LEN	4096u
#define ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define GID_IDX	RC_CONNECT_GID_IDX

static struct h_env env;

struct end {			/* a CQ and an RC QP */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
};

static int make_end(struct ibv_context *c, struct ibv_pd *pd, struct end *e)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 } };
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	if (!(e->cq = ibv_create_cq(c, 32, NULL, NULL, 0)))
		return -1;
	a.send_cq = a.recv_cq = e->cq;
	if (!(e->qp = ibv_create_qp(pd, &a)) || ibv_query_gid(c, 1, GID_IDX, &e->gid))
		return -1;
	return ibv_modify_qp(e->qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS);
}

static void free_end(struct end *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->cq)
		ibv_destroy_cq(e->cq);
}

/* The tests' RC connection (verbs_t.h), with 1 READ/atomic in flight. */
static int connect_qp(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid)
{
	return rc_connect(qp, dqpn, dgid, 1);
}

/* An RDMA WRITE of len bytes from [addr, lkey] to [raddr, rkey] on qp, waited for (20 s):
 * the completion status, or -1. */
static int write_wait(struct end *e, uint64_t addr, uint32_t lkey, uint64_t raddr,
		      uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey } }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(e->qp, &wr, &bad))
		return -1;
	for (int i = 0; i < 200000; i++) {
		int n = ibv_poll_cq(e->cq, 1, &wc);

		if (n)
			return n < 0 ? -1 : (int)wc.status;
		usleep(100);
	}
	return -1;
}

/* ---- the peer on host 1: a PD, an MR and one end per test ---- */
static struct ibv_context *peer_ctx;
static struct ibv_pd *peer_pd;
static struct ibv_mr *peer_mr;
static uint8_t *peer_buf;

static bool pair(struct end *a, struct end *peer)
{
	return !make_end(peer_ctx, peer_pd, peer) && !connect_qp(a->qp, peer->qp->qp_num, &peer->gid) &&
	       !connect_qp(peer->qp, a->qp->qp_num, &a->gid);
}

/* Imported through a dup in this process: the same objects, traffic both ways, and the
 * original closed first. */
static void same_process(void)
{
	struct ibv_context *ctx = open_dev(env.host[0].name), *imp;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL, *ipd;
	uint8_t *buf = h_cold(LEN);
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, LEN, ACCESS) : NULL, *imr;
	struct end e = { 0 }, peer = { 0 };
	int fd;

	T_CHECK(mr && ctx->cmd_fd >= 0, "context with a cmd_fd, PD, MR: %m");
	if (!mr)
		return;
	fd = dup(ctx->cmd_fd);
	imp = ibv_import_device(fd);
	T_CHECK(imp && imp->cmd_fd == fd, "ibv_import_device(dup(cmd_fd)): %m");
	if (!imp)
		return;
	ipd = ibv_import_pd(imp, pd->handle);
	imr = ipd ? ibv_import_mr(ipd, mr->handle) : NULL;
	T_CHECK(ipd && imr, "import PD and MR: %m");
	if (!imr)
		return;
	T_CHECK(ipd->handle == pd->handle && ipd->context == imp, "the PD: same handle");
	T_CHECK(imr->lkey == mr->lkey && imr->rkey == mr->rkey && imr->length == mr->length &&
		imr->handle == mr->handle && !imr->addr && imr->pd == ipd,
		"the MR: same keys and length, addr NULL");
	errno = 0;
	T_CHECK(!ibv_import_pd(imp, 4000) && errno == ENOENT, "no PD 4000: ENOENT (%m)");
	errno = 0;
	T_CHECK(!ibv_import_mr(ipd, 4000) && errno == ENOENT, "no MR 4000: ENOENT (%m)");
	errno = 0;
	T_CHECK(!ibv_import_mr(ipd, pd->handle) && errno == ENOENT, "a PD's handle is no MR");

	T_CHECK(!make_end(imp, ipd, &e) && pair(&e, &peer), "a QP on the imported PD: %m");
	memset(buf, 0x5a, LEN);
	T_EQ(write_wait(&e, (uintptr_t)buf, imr->lkey, (uintptr_t)peer_buf, peer_mr->rkey, LEN),
	     IBV_WC_SUCCESS, "WRITE from the imported MR");
	T_CHECK(peer_buf[0] == 0x5a && peer_buf[LEN - 1] == 0x5a, "it carried the original's bytes");
	memset(peer_buf, 0xa5, LEN);
	T_EQ(write_wait(&peer, (uintptr_t)peer_buf, peer_mr->lkey, (uintptr_t)buf, imr->rkey, LEN),
	     IBV_WC_SUCCESS, "WRITE into the imported MR's rkey");
	T_CHECK(buf[0] == 0xa5 && buf[LEN - 1] == 0xa5, "it landed in the original's buffer");

	/* an unimport frees only the struct: a second import, let go, leaves the MR working */
	{
		struct ibv_mr *again = ibv_import_mr(ipd, mr->handle);

		T_CHECK(again && again->lkey == mr->lkey, "the MR imported twice");
		ibv_unimport_mr(again);
	}
	/* the original goes first, letting go of its structs (ibv_unimport_* as the man
	 * pages allow): the import holds the session (and the objects) */
	ibv_unimport_mr(mr);
	ibv_unimport_pd(pd);
	T_EQ(ibv_close_device(ctx), 0, "close the original context");
	memset(peer_buf, 0x11, LEN);
	T_EQ(write_wait(&peer, (uintptr_t)peer_buf, peer_mr->lkey, (uintptr_t)buf, imr->rkey, LEN),
	     IBV_WC_SUCCESS, "WRITE into the MR after its context closed");
	T_CHECK(buf[7] == 0x11, "landed");
	T_EQ(write_wait(&e, (uintptr_t)buf, imr->lkey, (uintptr_t)peer_buf, peer_mr->rkey, 64),
	     IBV_WC_SUCCESS, "WRITE from it too");
	free_end(&e);
	free_end(&peer);
	T_EQ(ibv_dereg_mr(imr), 0, "dereg through the import destroys the MR");
	T_EQ(ibv_dealloc_pd(ipd), 0, "and dealloc the PD");
	T_EQ(ibv_close_device(imp), 0, "close the import: the last context of the session");
	munmap(buf, LEN + 4096);	/* h_cold's guard page too */
}

/* fds that are no cmd_fd: EINVAL as libibverbs gives for one that is no character device,
 * ENODEV for a connection to the daemon that no context owns; none is closed. */
static void bad_fds(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int p[2], sp[2], c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	errno = 0;
	T_CHECK(!ibv_import_device(-1) && errno == EINVAL, "fd -1: EINVAL (%m)");
	T_CHECK(!pipe(p), "pipe");
	errno = 0;
	T_CHECK(!ibv_import_device(p[0]) && errno == EINVAL, "a pipe: EINVAL (%m)");
	T_CHECK(fcntl(p[0], F_GETFD) >= 0, "and it is still open");
	T_CHECK(!socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp), "socketpair");
	errno = 0;
	T_CHECK(!ibv_import_device(sp[0]) && errno == EINVAL, "a socketpair: EINVAL (%m)");
	h_sock_path(&env, 0, sa.sun_path, sizeof(sa.sun_path));
	T_CHECK(!connect(c, (struct sockaddr *)&sa, sizeof(sa)), "connect to the daemon: %m");
	errno = 0;
	T_CHECK(!ibv_import_device(c) && errno == ENODEV, "a connection of no context: ENODEV "
		"(%m)");
	close(c);
	close(p[0]);
	close(p[1]);
	close(sp[0]);
	close(sp[1]);
}

/* ---- another process ---- */

static int send_fd(int sock, int fd)
{
	union { char c[CMSG_SPACE(sizeof(int))]; struct cmsghdr a; } cm;
	char one = 1;
	struct iovec iov = { &one, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.c,
			    .msg_controllen = sizeof(cm.c) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);

	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	union { char c[CMSG_SPACE(sizeof(int))]; struct cmsghdr a; } cm;
	char one;
	struct iovec iov = { &one, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.c,
			    .msg_controllen = sizeof(cm.c) };
	struct cmsghdr *h;
	int fd = -1;

	if (recvmsg(sock, &m, 0) != 1 || !(h = CMSG_FIRSTHDR(&m)) || h->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(h), sizeof(int));
	return fd;
}

/* What parent and child tell each other. */
struct msg {
	uint32_t pd, mr, odp_mr;	/* parent: handles */
	uint64_t odp_addr;
	uint32_t qpn;			/* both: their QP */
	union ibv_gid gid;
	int32_t status[2];		/* child: the WRITEs' completions */
};

/* The child: import, a QP on the imported PD, WRITEs from the parent's ODP MR and from an
 * MR of its own; then it waits to be killed. */
static void child(int sock)
{
	int fd = recv_fd(sock);
	struct msg m;
	struct ibv_context *imp;
	struct ibv_pd *ipd;
	struct ibv_mr *imr, *own;
	struct end e = { 0 };
	uint8_t *mine = h_cold(LEN);

	if (fd < 0 || read(sock, &m, sizeof(m)) != sizeof(m) || !(imp = ibv_import_device(fd)) ||
	    !(ipd = ibv_import_pd(imp, m.pd)) || !(imr = ibv_import_mr(ipd, m.odp_mr)) ||
	    !(own = ibv_reg_mr(ipd, mine, LEN, ACCESS | IBV_ACCESS_ON_DEMAND)) ||
	    make_end(imp, ipd, &e))
		_exit(2);
	{
		struct msg r = { .qpn = e.qp->qp_num, .gid = e.gid };

		if (write(sock, &r, sizeof(r)) != sizeof(r) ||
		    read(sock, &r, sizeof(r)) != sizeof(r) || connect_qp(e.qp, r.qpn, &r.gid))
			_exit(3);
		m.qpn = r.qpn;
	}
	memset(mine, 0x77, LEN);
	m.status[0] = write_wait(&e, m.odp_addr, imr->lkey, (uintptr_t)peer_buf, peer_mr->rkey, LEN / 2);
	m.status[1] = write_wait(&e, (uintptr_t)mine, own->lkey, (uintptr_t)peer_buf + LEN / 2,
				 peer_mr->rkey, LEN / 2);
	if (write(sock, &m, sizeof(m)) != sizeof(m))
		_exit(4);
	pause();
	_exit(0);
}

static bool client_listed(struct odpemu_context *odp, pid_t pid)
{
	struct odpemu_client_info r[64];
	int n = odpemu_query_clients(odp, r, 64);

	for (int i = 0; i < n; i++)
		if (r[i].pid == (uint32_t)pid)
			return true;
	return false;
}

static void other_process(void)
{
	struct ibv_context *ctx = open_dev(env.host[0].name);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	uint8_t *obuf = h_cold(LEN);
	struct ibv_mr *omr = pd ? ibv_reg_mr(pd, obuf, LEN, ACCESS | IBV_ACCESS_ON_DEMAND) : NULL;
	struct odpemu_context *odp = h_open(&env, 0);
	struct end peer = { 0 };
	struct msg m = { 0 }, r;
	int sv[2], st = 0;
	pid_t pid;

	T_CHECK(omr && !socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "parent's PD, ODP MR: %m");
	if (!omr)
		return;
	memset(obuf, 0x3c, LEN);
	T_CHECK(!make_end(peer_ctx, peer_pd, &peer), "peer QP");
	if ((pid = fork()) == 0) {
		close(sv[0]);
		child(sv[1]);
	}
	close(sv[1]);
	m = (struct msg){ .pd = pd->handle, .odp_mr = omr->handle,
			  .odp_addr = (uintptr_t)obuf };
	T_CHECK(pid > 0 && !send_fd(sv[0], ctx->cmd_fd) && write(sv[0], &m, sizeof(m)) == sizeof(m),
		"cmd_fd to the child over SCM_RIGHTS");
	T_CHECK(read(sv[0], &r, sizeof(r)) == sizeof(r), "the child's QP");
	T_CHECK(!connect_qp(peer.qp, r.qpn, &r.gid), "peer connected");
	r = (struct msg){ .qpn = peer.qp->qp_num, .gid = peer.gid };
	T_CHECK(write(sv[0], &r, sizeof(r)) == sizeof(r), "peer QP to the child");
	T_CHECK(read(sv[0], &r, sizeof(r)) == sizeof(r), "the child's WRITEs");
	T_EQ(r.status[0], IBV_WC_SUCCESS, "child: WRITE from the parent's ODP MR");
	T_EQ(r.status[1], IBV_WC_SUCCESS, "child: WRITE from its own MR on the imported PD");
	T_CHECK(peer_buf[0] == 0x3c && peer_buf[LEN / 2 - 1] == 0x3c,
		"the parent's memory went out (the MR's owner's)");
	T_CHECK(peer_buf[LEN / 2] == 0x77 && peer_buf[LEN - 1] == 0x77,
		"the child's memory went out (its own MR's)");
	T_CHECK(client_listed(odp, pid), "the child's session is listed");
	kill(pid, SIGKILL);
	T_CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st), "child killed");
	for (int i = 0; i < 500 && client_listed(odp, pid); i++)
		usleep(10000);
	T_CHECK(!client_listed(odp, pid), "the daemon dropped the killed importer's session");
	/* the objects it made through the import stay the session's until it ends; ours
	 * still work */
	memset(peer_buf, 0, LEN);
	{
		struct end e = { 0 }, p2 = { 0 };

		T_CHECK(!make_end(ctx, pd, &e) && pair(&e, &p2), "a new QP of the parent");
		T_EQ(write_wait(&e, (uintptr_t)obuf, omr->lkey, (uintptr_t)peer_buf, peer_mr->rkey,
				LEN), IBV_WC_SUCCESS, "the parent's MR after the importer died");
		free_end(&e);
		free_end(&p2);
	}
	close(sv[0]);
	free_end(&peer);
	T_EQ(ibv_dereg_mr(omr), 0, "dereg");
	/* the killed child's QP and MR on the PD are the session's until it ends, as in a
	 * ucontext: the PD is busy; our struct goes, the objects with the session */
	T_EQ(ibv_dealloc_pd(pd), EBUSY, "the PD still has the killed importer's QP and MR");
	ibv_unimport_pd(pd);
	T_EQ(ibv_close_device(ctx), 0, "close: the session ends with its objects");
	odpemu_close_device(odp);
}

int main(void)
{
	h_up(&env, NULL, NULL, 120);
	peer_ctx = open_dev(env.host[1].name);
	peer_pd = peer_ctx ? ibv_alloc_pd(peer_ctx) : NULL;
	peer_buf = h_cold(LEN);
	peer_mr = peer_pd ? ibv_reg_mr(peer_pd, peer_buf, LEN, ACCESS) : NULL;
	T_CHECK(peer_mr, "peer: %m");
	if (peer_mr) {
		bad_fds();
		same_process();
		other_process();
		ibv_dereg_mr(peer_mr);
		ibv_dealloc_pd(peer_pd);
		ibv_close_device(peer_ctx);
	}
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	T_EQ(h_down(&env), 0, "daemons exit cleanly");
	return t_done("compat-import");
}
