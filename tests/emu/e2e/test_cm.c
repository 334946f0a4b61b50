/* SPDX-License-Identifier: MIT */
/*
 * Connections through the daemons' connection managers (emu/cm/), with libodpemu's CM
 * calls (include/odpemu/cm.h), as librdmacm will drive them:
 *  - listen (port chosen by the daemon), connect with private data; CONNECT_REQUEST shows
 *    the initiator's QP, PSN, addresses and data; accept; CONNECT_RESPONSE shows the
 *    acceptor's; RTU; ESTABLISHED. The QPs are brought up with exactly what the CM
 *    carried (QPNs, starting PSNs) and an RDMA WRITE and a SEND cross;
 *  - disconnect: both sides DISCONNECTED, then TIMEWAIT_EXIT;
 *  - reject with private data: REJECTED, reason CONSUMER_DEFINED (28), the data;
 *  - no listener: REJECTED, reason INVALID_SERVICE_ID (8), in one round trip;
 *  - an address where no CM answers: UNREACHABLE (-ETIMEDOUT) after the retries;
 *  - a second listener on a taken port: EADDRNOTAVAIL (both for any address);
 *  - the accepting process killed while connected: the initiator gets DISCONNECTED.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "odpemu/cm.h"
#include "t.h"

#define LEN 4096u
#define WAIT_MS 5000

static struct h_env *env;

struct end {
	struct h_side s;
	struct odpemu_cm_channel *ch;
	struct odpemu_mr *mr;
	uint8_t *buf;
	uint32_t psn;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The next event on ch within WAIT_MS, of type want; false (and a failed check) if not. */
static bool expect(struct odpemu_cm_channel *ch, enum odpemu_cm_event_type want,
		   struct odpemu_cm_event *ev, const char *when)
{
	struct pollfd p = { ch->fd, POLLIN, 0 };

	if (poll(&p, 1, WAIT_MS) != 1) {
		T_CHECK(0, "%s: no event within %d ms (wanted %s)", when, WAIT_MS,
			odpemu_cm_event_str(want));
		return false;
	}
	T_EQ(odpemu_cm_get_event(ch, ev), 0, "odpemu_cm_get_event");
	T_CHECK(ev->type == want, "%s: got %s (status %d), wanted %s", when,
		odpemu_cm_event_str(ev->type), ev->status, odpemu_cm_event_str(want));
	return ev->type == want;
}

static void end_up(struct end *e, int host, uint32_t psn)
{
	struct h_qp_opts o;

	h_qp_opts_default(&o);
	e->s.ctx = env->ctx[host];
	T_EQ(h_side_up(&e->s, &o), 0, "QP up");
	e->ch = odpemu_cm_create_channel(e->s.ctx);
	T_CHECK(e->ch != NULL, "CM channel: %s", strerror(errno));
	/* its own pages: a pinned MR moves whole pages into shared memory, which a fork child
	 * (acceptor_killed) would then share with us (lib/pin.c) */
	e->buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_CHECK(e->buf != MAP_FAILED, "mmap: %s", strerror(errno));
	e->mr = odpemu_reg_mr(e->s.pd, e->buf, LEN, ODPEMU_ACCESS_LOCAL_WRITE |
			      ODPEMU_ACCESS_REMOTE_WRITE);
	T_CHECK(e->mr != NULL, "reg_mr: %s", strerror(errno));
	e->psn = psn;
}

static void end_down(struct end *e)
{
	odpemu_dereg_mr(e->mr);
	munmap(e->buf, LEN);
	T_EQ(odpemu_cm_destroy_channel(e->ch), 0, "destroy the CM channel");
	h_pair_down(&(struct h_pair){ .s = { e->s } });
}

static struct odpemu_cm_qp cm_qp(const struct end *e)
{
	return (struct odpemu_cm_qp){ .qpn = e->s.qp->qp_num, .psn = e->psn,
		.qp_type = ODPEMU_QPT_RC, .responder_resources = 4, .initiator_depth = 4,
		.retry_count = 7, .rnr_retry_count = 7, .mtu = ODPEMU_MTU_4096 };
}

static struct odpemu_cm_addr addr_of(const struct end *e, uint16_t port)
{
	return (struct odpemu_cm_addr){ .gid = e->s.gid, .port = port };
}

/* INIT, RTR, RTS with what the CM carried: the peer's QPN and starting PSN, ours. */
static void qp_from_cm(struct end *e, const struct odpemu_cm_qp *peer,
		       const union odpemu_gid *peer_gid)
{
	struct odpemu_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
		.qp_access_flags = ODPEMU_ACCESS_REMOTE_WRITE };

	T_EQ(odpemu_modify_qp(e->s.qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX |
			      ODPEMU_QP_PORT | ODPEMU_QP_ACCESS_FLAGS), 0, "INIT");
	a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_RTR, .path_mtu = peer->mtu,
		.dest_qp_num = peer->qpn, .rq_psn = peer->psn, .max_dest_rd_atomic = 4,
		.min_rnr_timer = 1, .ah_attr = { .is_global = 1, .port_num = 1,
			.grh = { .dgid = *peer_gid, .hop_limit = 64 } } };
	T_EQ(odpemu_modify_qp(e->s.qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU |
			      ODPEMU_QP_DEST_QPN | ODPEMU_QP_RQ_PSN |
			      ODPEMU_QP_MAX_DEST_RD_ATOMIC | ODPEMU_QP_MIN_RNR_TIMER), 0, "RTR");
	a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_RTS, .sq_psn = e->psn, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 4 };
	T_EQ(odpemu_modify_qp(e->s.qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN | ODPEMU_QP_TIMEOUT |
			      ODPEMU_QP_RETRY_CNT | ODPEMU_QP_RNR_RETRY |
			      ODPEMU_QP_MAX_QP_RD_ATOMIC), 0, "RTS");
}

/* The whole handshake; returns the initiator's and acceptor's connection handles. */
static bool handshake(struct end *a, struct end *b, uint16_t port, uint32_t *ca, uint32_t *cb)
{
	static const char hello[] = "hello from a", welcome[] = "welcome, a";
	struct odpemu_cm_addr src = addr_of(a, 40000), dst = addr_of(b, port);
	struct odpemu_cm_qp qa = cm_qp(a), qb = cm_qp(b);
	struct odpemu_cm_event ev;

	T_EQ(odpemu_cm_connect(a->ch, ODPEMU_CM_PS_TCP, &src, &dst, &qa, hello, sizeof(hello),
			       0xa11ce, ca), 0, "connect");
	if (!expect(b->ch, ODPEMU_CM_EVENT_CONNECT_REQUEST, &ev, "b, after the REQ"))
		return false;
	T_EQ(ev.user, 0xb0b, "CONNECT_REQUEST carries the listener's user value");
	T_EQ(ev.peer.qpn, qa.qpn, "the initiator's QPN");
	T_EQ(ev.peer.psn, qa.psn, "the initiator's starting PSN");
	T_EQ(ev.peer.responder_resources, 4, "responder resources offered");
	T_CHECK(!memcmp(&ev.src.gid, &a->s.gid, 16) && ev.src.port == 40000,
		"the initiator's address and port (port %u)", ev.src.port);
	T_CHECK(!memcmp(&ev.dst.gid, &b->s.gid, 16) && ev.dst.port == port,
		"our address and the listened port (port %u)", ev.dst.port);
	T_CHECK(ev.private_len >= sizeof(hello) && !memcmp(ev.private_data, hello, sizeof(hello)),
		"the REQ's private data");
	*cb = ev.conn;
	qp_from_cm(b, &ev.peer, &a->s.gid);
	T_EQ(odpemu_cm_accept(b->s.ctx, *cb, NULL, &qb, welcome, sizeof(welcome), 0xacce97), 0,
	     "accept");
	if (!expect(a->ch, ODPEMU_CM_EVENT_CONNECT_RESPONSE, &ev, "a, after the REP"))
		return false;
	T_EQ(ev.conn, *ca, "CONNECT_RESPONSE names the connection");
	T_EQ(ev.user, 0xa11ce, "and its user value");
	T_EQ(ev.peer.qpn, qb.qpn, "the acceptor's QPN");
	T_EQ(ev.peer.psn, qb.psn, "the acceptor's starting PSN");
	T_CHECK(!memcmp(ev.private_data, welcome, sizeof(welcome)), "the REP's private data");
	qp_from_cm(a, &ev.peer, &b->s.gid);
	T_EQ(odpemu_cm_establish(a->s.ctx, *ca, NULL, 0), 0, "establish (RTU)");
	if (!expect(b->ch, ODPEMU_CM_EVENT_ESTABLISHED, &ev, "b, after the RTU"))
		return false;
	T_EQ(ev.conn, *cb, "ESTABLISHED names b's connection");
	T_EQ(ev.user, 0xacce97, "with the user value given at accept");
	return true;
}

/* Data over the QPs the CM set up: a WRITE from a to b, a SEND from b to a. */
static void traffic(struct end *a, struct end *b)
{
	struct odpemu_sge sa = { (uintptr_t)a->buf, 64, a->mr->lkey };
	struct odpemu_sge sb = { (uintptr_t)b->buf + 1024, 32, b->mr->lkey };
	struct odpemu_sge ra = { (uintptr_t)a->buf + 2048, 64, a->mr->lkey };
	struct odpemu_recv_wr rwr = { .wr_id = 7, .sg_list = &ra, .num_sge = 1 }, *rbad;
	struct odpemu_send_wr w = { .opcode = ODPEMU_WR_RDMA_WRITE, .sg_list = &sa, .num_sge = 1,
		.send_flags = ODPEMU_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)b->buf, b->mr->rkey } }, *bad;
	struct odpemu_wc wc;

	memset(a->buf, 0x5a, 64);
	memset(b->buf + 1024, 0xc3, 32);
	T_EQ(odpemu_post_send(a->s.qp, &w, &bad), 0, "post WRITE");
	T_EQ(h_poll(a->s.cq, &wc, 1, WAIT_MS), 1, "WRITE completes");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "WRITE status");
	T_CHECK(b->buf[0] == 0x5a && b->buf[63] == 0x5a, "the WRITE landed at b");
	T_EQ(odpemu_post_recv(a->s.qp, &rwr, &rbad), 0, "post RECV");
	w = (struct odpemu_send_wr){ .opcode = ODPEMU_WR_SEND, .sg_list = &sb, .num_sge = 1,
		.send_flags = ODPEMU_SEND_SIGNALED };
	T_EQ(odpemu_post_send(b->s.qp, &w, &bad), 0, "post SEND");
	T_EQ(h_poll(b->s.cq, &wc, 1, WAIT_MS), 1, "SEND completes");
	T_EQ(wc.status, ODPEMU_WC_SUCCESS, "SEND status");
	T_EQ(h_poll(a->s.cq, &wc, 1, WAIT_MS), 1, "RECV completes");
	T_CHECK(a->buf[2048] == 0xc3 && a->buf[2048 + 31] == 0xc3, "the SEND landed at a");
}

static void connect_disconnect(struct end *a, struct end *b, uint16_t port)
{
	struct odpemu_cm_event ev;
	uint32_t ca = 0, cb = 0;

	if (!handshake(a, b, port, &ca, &cb))
		return;
	traffic(a, b);
	T_EQ(odpemu_cm_disconnect(a->s.ctx, ca, NULL, 0), 0, "a disconnects (DREQ)");
	if (expect(b->ch, ODPEMU_CM_EVENT_DISCONNECTED, &ev, "b, after the DREQ"))
		T_EQ(odpemu_cm_disconnect(b->s.ctx, cb, NULL, 0), 0, "b answers (DREP)");
	expect(a->ch, ODPEMU_CM_EVENT_DISCONNECTED, &ev, "a, after the DREP");
	expect(a->ch, ODPEMU_CM_EVENT_TIMEWAIT_EXIT, &ev, "a, time-wait over");
	expect(b->ch, ODPEMU_CM_EVENT_TIMEWAIT_EXIT, &ev, "b, time-wait over");
	T_EQ(odpemu_cm_destroy(a->s.ctx, ca), 0, "destroy a's connection");
	T_EQ(odpemu_cm_destroy(b->s.ctx, cb), 0, "destroy b's connection");
}

/* A new QP (and starting PSN) for the next connection: a QP is connected once. */
static void fresh_qp(struct end *e)
{
	struct odpemu_qp_init_attr init = { .send_cq = e->s.cq, .recv_cq = e->s.cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 }, .qp_type = ODPEMU_QPT_RC };

	odpemu_destroy_qp(e->s.qp);
	e->s.qp = odpemu_create_qp(e->s.pd, &init);
	T_CHECK(e->s.qp != NULL, "a fresh QP: %s", strerror(errno));
	e->psn += 0x1000;
}

static void reject_with_data(struct end *a, struct end *b, uint16_t port)
{
	static const char no[] = "not today";
	struct odpemu_cm_addr src = addr_of(a, 40001), dst = addr_of(b, port);
	struct odpemu_cm_qp qa = cm_qp(a);
	struct odpemu_cm_event ev;
	uint32_t ca = 0;

	T_EQ(odpemu_cm_connect(a->ch, ODPEMU_CM_PS_TCP, &src, &dst, &qa, NULL, 0, 1, &ca), 0,
	     "connect");
	if (!expect(b->ch, ODPEMU_CM_EVENT_CONNECT_REQUEST, &ev, "b"))
		return;
	T_EQ(odpemu_cm_reject(b->s.ctx, ev.conn, no, sizeof(no)), 0, "reject");
	T_EQ(odpemu_cm_destroy(b->s.ctx, ev.conn), 0, "destroy the rejected connection");
	if (expect(a->ch, ODPEMU_CM_EVENT_REJECTED, &ev, "a, after the REJ")) {
		T_EQ(ev.status, 28, "reason CONSUMER_DEFINED");
		T_CHECK(!memcmp(ev.private_data, no, sizeof(no)), "the REJ's private data");
	}
	T_EQ(odpemu_cm_destroy(a->s.ctx, ca), 0, "destroy");
}

static void no_listener(struct end *a, struct end *b)
{
	struct odpemu_cm_addr src = addr_of(a, 40002), dst = addr_of(b, 7);
	struct odpemu_cm_qp qa = cm_qp(a);
	struct odpemu_cm_event ev;
	uint64_t t0 = now_ms();
	uint32_t ca = 0;

	T_EQ(odpemu_cm_connect(a->ch, ODPEMU_CM_PS_TCP, &src, &dst, &qa, NULL, 0, 2, &ca), 0,
	     "connect to a port nobody listens on");
	if (expect(a->ch, ODPEMU_CM_EVENT_REJECTED, &ev, "a, no listener"))
		T_EQ(ev.status, 8, "reason INVALID_SERVICE_ID");
	T_CHECK(now_ms() - t0 < 400, "REJECTED within one round trip, not a retry (%llu ms)",
		(unsigned long long)(now_ms() - t0));
	T_EQ(odpemu_cm_destroy(a->s.ctx, ca), 0, "destroy");
}

static void unreachable(struct end *a)
{
	char addr[64];
	struct odpemu_cm_addr src = addr_of(a, 40003), dst = { .port = 7 };
	struct odpemu_cm_qp qa = cm_qp(a);
	struct odpemu_cm_event ev;
	uint32_t ca = 0;

	h_extra_addr(env, 1, addr, sizeof(addr));	/* on host b, where no daemon listens */
	T_EQ(h_gid_of(addr, &dst.gid), 0, "the GID of a silent address");
	T_EQ(odpemu_cm_connect(a->ch, ODPEMU_CM_PS_TCP, &src, &dst, &qa, NULL, 0, 3, &ca), 0,
	     "connect to a silent address");
	if (expect(a->ch, ODPEMU_CM_EVENT_UNREACHABLE, &ev, "a, nobody answers"))
		T_EQ(ev.status, -ETIMEDOUT, "status -ETIMEDOUT");
	T_EQ(odpemu_cm_destroy(a->s.ctx, ca), 0, "destroy");
}

/* The acceptor is a child process with its own session; killing it must disconnect. */
static void acceptor_killed(struct end *a, uint16_t port)
{
	int ready[2];
	pid_t pid;
	struct odpemu_cm_event ev;
	uint32_t ca = 0;
	char c;

	T_EQ(pipe(ready), 0, "pipe");
	pid = fork();
	if (pid == 0) {
		struct end b = { 0 };
		uint32_t cb = 0, l = 0;

		close(ready[0]);
		env->ctx[1] = h_open(env, 1);
		end_up(&b, 1, 0x777);
		if (odpemu_cm_listen(b.ch, ODPEMU_CM_PS_TCP, &(struct odpemu_cm_addr){ .port = port },
				     4, 0xb0b, &l, NULL))
			_exit(2);
		(void)!write(ready[1], "r", 1);
		if (poll(&(struct pollfd){ b.ch->fd, POLLIN, 0 }, 1, WAIT_MS) != 1 ||
		    odpemu_cm_get_event(b.ch, &ev) || ev.type != ODPEMU_CM_EVENT_CONNECT_REQUEST)
			_exit(3);
		cb = ev.conn;
		qp_from_cm(&b, &ev.peer, &a->s.gid);
		if (odpemu_cm_accept(b.s.ctx, cb, NULL, &(struct odpemu_cm_qp){ .qpn =
				     b.s.qp->qp_num, .psn = b.psn, .mtu = ODPEMU_MTU_4096 },
				     NULL, 0, 0))
			_exit(4);
		pause();	/* until killed */
		_exit(0);
	}
	close(ready[1]);
	T_EQ(read(ready[0], &c, 1), 1, "the child listens");
	close(ready[0]);
	fresh_qp(a);
	{
		struct odpemu_cm_addr src = addr_of(a, 40004), dst = { .port = port };
		struct odpemu_cm_qp qa = cm_qp(a);

		T_EQ(odpemu_query_gid(env->ctx[1], 1, 0, &dst.gid), 0, "b's GID");
		T_EQ(odpemu_cm_connect(a->ch, ODPEMU_CM_PS_TCP, &src, &dst, &qa, NULL, 0, 4, &ca), 0,
		     "connect to the child");
	}
	if (expect(a->ch, ODPEMU_CM_EVENT_CONNECT_RESPONSE, &ev, "a, the child's REP"))
		T_EQ(odpemu_cm_establish(a->s.ctx, ca, NULL, 0), 0, "establish");
	usleep(100000);	/* the RTU reaches the child's daemon */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (expect(a->ch, ODPEMU_CM_EVENT_DISCONNECTED, &ev, "a, the acceptor was killed"))
		T_EQ(ev.conn, ca, "on the connection to the child");
	T_EQ(odpemu_cm_disconnect(a->s.ctx, ca, NULL, 0), 0, "a answers the DREQ");
	expect(a->ch, ODPEMU_CM_EVENT_TIMEWAIT_EXIT, &ev, "a, time-wait over");
	T_EQ(odpemu_cm_destroy(a->s.ctx, ca), 0, "destroy");
}

static void body(struct h_env *e)
{
	struct end a = { 0 }, b = { 0 };
	struct odpemu_cm_addr any = { .port = 0 };
	uint32_t l = 0, l2 = 0;
	uint16_t port = 0;

	env = e;
	end_up(&a, 0, 0x1234);
	end_up(&b, 1, 0xabcdef);
	T_EQ(odpemu_cm_listen(b.ch, ODPEMU_CM_PS_TCP, &any, 8, 0xb0b, &l, &port), 0, "listen");
	T_CHECK(port >= 49152, "the daemon picked an ephemeral port: %u", port);
	any.port = port;
	T_EQ(odpemu_cm_listen(b.ch, ODPEMU_CM_PS_TCP, &any, 8, 0, &l2, NULL), EADDRNOTAVAIL,
	     "a second listener for any address on that port (cma_check_port)");
	T_EQ(odpemu_cm_destroy_channel(b.ch), EBUSY, "a channel in use stays");
	connect_disconnect(&a, &b, port);
	fresh_qp(&a);
	fresh_qp(&b);
	reject_with_data(&a, &b, port);
	no_listener(&a, &b);
	unreachable(&a);
	T_EQ(odpemu_cm_destroy(b.s.ctx, l), 0, "stop listening");
	acceptor_killed(&a, port);
	T_CHECK(h_counter(e->ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "cm_established") >= 2,
		"cm_established on a");
	end_down(&a);
	end_down(&b);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "emu-cm", .open = H_OPEN_BOTH, .body = body,
					 .watchdog_s = 120 };

	return h_main(argc, argv, &t);
}
