/* SPDX-License-Identifier: MIT */
/*
 * client — libodpemu-brick, the initiator's side of odpemu-brick (include/odpemu/brick.h,
 * docs/brick.md): an rdma_cm connection with one RC QP, synchronous requests in
 * SEND/RECV, data operations (RDMA READ, WRITE, FLUSH) posted through ibv_qp_ex.
 *
 * Waiting. Both CQs share one completion channel. A wait reaps both CQs, re-arms any CQ
 * whose event it consumed, reaps again (a completion may have landed before the arm),
 * then sleeps in poll() on the channel's fd and the rdma_cm event channel's fd (both
 * O_NONBLOCK) until its deadline: never a busy loop. DISCONNECTED and DEVICE_REMOVAL seen
 * there kill the connection.
 *
 * The send queue holds the caller's depth data operations, the request's SEND and one
 * synchronous operation (brick_read/write/flush): max_send_wr = depth + 2. The library's
 * two carry reserved wr_ids (WRID_*); the caller's may not use them. A caller's
 * operation counts as in flight until brick_poll returns it; its completion, when the
 * library reaps it while waiting for its own, waits in a FIFO of depth entries, which so
 * cannot overflow.
 *
 * Death: an error completion (RC leaves the QP in error on any), DISCONNECTED or
 * DEVICE_REMOVAL, a request or synchronous operation unanswered within the timeout, a
 * reply that answers another request. The QP is then moved to error, so every posted
 * operation completes (flushed) and brick_poll can still return each; requests and new
 * posts get -ECONNRESET.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "odpemu/brick.h"
#include "odpemu/verbs_ext.h"
#include "wire.h"

static_assert(BRICK_RO == BRICK_MAP_RO && BRICK_RW == BRICK_MAP_RW &&
	      BRICK_SHARED == BRICK_MAP_SHARED, "brick.h's MAP flags are the wire's");
static_assert(BRICK_FLUSH_PERSISTENT == IBV_FLUSH_PERSISTENT &&
	      BRICK_FLUSH_GLOBAL == IBV_FLUSH_GLOBAL, "brick.h's FLUSH types are the verb's");

/* wr_ids from WRID_RESERVED up are the library's (brick.h). */
#define WRID_RESERVED	(UINT64_MAX - 255)
#define WRID_REQ	UINT64_MAX		/* a request's SEND */
#define WRID_SYNC	(UINT64_MAX - 1)	/* brick_read, brick_write, brick_flush */
#define WRID_RECV	UINT64_MAX		/* a reply's RECV (the recv CQ is ours alone) */

#define DEFAULT_TIMEOUT_MS 5000
#define DEFAULT_DEPTH 32u
#define MAX_DEPTH 4096u
#define RD_ATOMIC 16		/* responder_resources and initiator_depth asked for */
#define CM_RETRY 7		/* transport retries */
#define CM_RNR_RETRY 7		/* 7: no limit; the request's timeout bounds a silent brick */
#define CLOSE_WAIT_MS 1000	/* close waits this long at most for DISCONNECTED */

struct brick_conn {
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch;	/* both CQs' */
	struct ibv_cq *send_cq, *recv_cq;
	struct ibv_qp *qp;			/* id->qp, through rdma_create_qp_ex */
	struct ibv_qp_ex *qpx;
	uint8_t *msg;				/* the send buffer, then the receive buffer */
	struct ibv_mr *msg_mr;

	int timeout_ms;
	uint32_t depth;
	uint32_t flush_types;			/* IBV_FLUSH_* the device offers */
	uint8_t rd_init, rd_resp;		/* RD_ATOMIC within the device's limits */

	bool connected;				/* ESTABLISHED was seen */
	bool peer_gone;				/* DISCONNECTED or DEVICE_REMOVAL was seen */
	bool dead;
	bool comp_broken, cm_broken;		/* the channel's fd failed: nothing comes */
	bool send_armed, recv_armed;

	/* the request in progress */
	bool sent, replied;
	uint32_t reply_len;
	/* the synchronous operation in progress */
	bool sync_done;
	struct ibv_wc sync_wc;

	/* the caller's operations */
	uint32_t inflight;			/* posted, not yet returned by brick_poll */
	uint32_t fifo_head, fifo_n;
	struct ibv_wc *fifo;			/* depth entries */

	uint16_t version;
	uint32_t tag;
	uint32_t status;			/* of the last reply */
	struct brick_info info;
	struct brick_extent ext[BRICK_LIST_MAX];
};

/* ---- small helpers ---- */

static int neg_errno(void)
{
	return errno ? -errno : -EIO;
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A deadline ms from now; -1 (ms < 0): none. */
static int64_t deadline_after(int ms)
{
	return ms < 0 ? -1 : now_ns() + (int64_t)ms * 1000000;
}

/* poll()'s timeout up to the deadline, rounded up: -1 (none) or 0 (passed) too. */
static int ms_left(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ns();
	if (left <= 0)
		return 0;
	left = (left + 999999) / 1000000;
	return left > INT_MAX ? INT_MAX : (int)left;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}

/* A wire status as brick.h's errno (0 for BRICK_OK). */
static int status_errno(uint32_t status)
{
	static const int errno_of[] = {
		[BRICK_EEXIST] = EEXIST, [BRICK_ENOSPC] = ENOSPC, [BRICK_EALIGN] = EINVAL,
		[BRICK_ENOENT] = ENOENT, [BRICK_ENOTMAPPED] = ENXIO, [BRICK_EBUSY] = EBUSY,
		[BRICK_EVERSION] = EPROTONOSUPPORT, [BRICK_EPROTO] = EPROTO,
		[BRICK_EBADOP] = EOPNOTSUPP, [BRICK_EINVAL] = EINVAL, [BRICK_EIO] = EIO,
		[BRICK_ENOMEM] = ENOMEM,
	};

	if (status == BRICK_OK)
		return 0;
	if (status < sizeof(errno_of) / sizeof(errno_of[0]) && errno_of[status])
		return -errno_of[status];
	return -EIO;		/* a status newer than this library */
}

/* ---- death, completions, events ---- */

/* Mark the connection dead and move the QP to error: whatever is posted completes
 * flushed, so every wr_id comes back. */
static void conn_kill(struct brick_conn *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (c->dead)
		return;
	c->dead = true;
	if (c->qp)
		ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
}

static void take_send_wc(struct brick_conn *c, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS)
		conn_kill(c);	/* RC: an error completion leaves the QP in error */
	if (wc->wr_id == WRID_REQ) {
		c->sent = true;
		return;
	}
	if (wc->wr_id == WRID_SYNC) {
		c->sync_wc = *wc;
		c->sync_done = true;
		return;
	}
	assert(c->fifo_n < c->depth);	/* one of at most depth operations in flight */
	c->fifo[(c->fifo_head + c->fifo_n++) % c->depth] = *wc;
}

static void take_recv_wc(struct brick_conn *c, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS) {
		conn_kill(c);
		return;
	}
	c->reply_len = wc->byte_len;
	c->replied = true;
}

/* Reap every completion both CQs hold. */
static void reap(struct brick_conn *c)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(c->send_cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++)
			take_send_wc(c, &wc[i]);
	if (n < 0)
		conn_kill(c);
	while ((n = ibv_poll_cq(c->recv_cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++)
			take_recv_wc(c, &wc[i]);
	if (n < 0)
		conn_kill(c);
}

/* Consume the channel's events: each CQ named must be armed again. */
static void take_cq_events(struct brick_conn *c)
{
	struct ibv_cq *cq;
	void *ctx;

	while (!ibv_get_cq_event(c->comp_ch, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		if (cq == c->send_cq)
			c->send_armed = false;
		else
			c->recv_armed = false;
	}
	if (errno != EAGAIN && errno != EINTR) {	/* the device is gone */
		c->comp_broken = true;
		conn_kill(c);
	}
}

/* rdma_cm events once connected: only the end matters. */
static void take_cm_events(struct brick_conn *c)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(c->cm_ch, &ev)) {
		enum rdma_cm_event_type type = ev->event;

		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			c->peer_gone = true;
			conn_kill(c);
		}
	}
	if (errno != EAGAIN && errno != EINTR) {
		c->cm_broken = true;
		conn_kill(c);
	}
}

static void arm(struct brick_conn *c)
{
	if (!c->send_armed && !ibv_req_notify_cq(c->send_cq, 0))
		c->send_armed = true;
	if (!c->recv_armed && !ibv_req_notify_cq(c->recv_cq, 0))
		c->recv_armed = true;
	if (!c->send_armed || !c->recv_armed) {	/* no event will come */
		c->comp_broken = true;
		conn_kill(c);
	}
}

typedef bool conn_cond(const struct brick_conn *c);

/* Reap and sleep until done(c) or the deadline (-1: none): 0, -ETIMEDOUT, -ECONNRESET
 * (nothing can come any more), or poll's errno. */
static int conn_wait(struct brick_conn *c, conn_cond *done, int64_t deadline)
{
	for (;;) {
		struct pollfd fds[2] = {
			{ .fd = c->comp_broken ? -1 : c->comp_ch->fd, .events = POLLIN },
			{ .fd = c->cm_broken ? -1 : c->cm_ch->fd, .events = POLLIN },
		};
		int ms;

		reap(c);
		if (done(c))
			return 0;
		if (c->comp_broken)
			return -ECONNRESET;
		if (!c->send_armed || !c->recv_armed) {
			arm(c);
			continue;	/* reap again: a completion may precede the arm */
		}
		if (!(ms = ms_left(deadline)))
			return -ETIMEDOUT;
		if (poll(fds, 2, ms) < 0 && errno != EINTR) {
			int err = errno;

			conn_kill(c);
			return -err;
		}
		if (fds[0].revents)
			take_cq_events(c);
		if (fds[1].revents)
			take_cm_events(c);
	}
}

static bool reply_in(const struct brick_conn *c)
{
	return (c->sent && c->replied) || c->dead;
}

static bool sync_in(const struct brick_conn *c)
{
	return c->sync_done;
}

static bool poll_ready(const struct brick_conn *c)
{
	return c->fifo_n || (c->dead && !c->inflight);
}

/* ---- requests ---- */

/* SEND the len bytes of the send buffer and wait for the reply in the receive buffer
 * (c->reply_len): 0, or -ECONNRESET or -ETIMEDOUT, the connection dead. */
static int exchange(struct brick_conn *c, uint32_t len)
{
	struct ibv_sge rsge = { .addr = (uintptr_t)(c->msg + BRICK_MSG_MAX),
				.length = BRICK_MSG_MAX, .lkey = c->msg_mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = WRID_RECV, .sg_list = &rsge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int rc;

	c->sent = c->replied = false;
	if (ibv_post_recv(c->qp, &rwr, &bad)) {	/* the reply's RECV before the request */
		conn_kill(c);
		return -ECONNRESET;
	}
	ibv_wr_start(c->qpx);
	c->qpx->wr_id = WRID_REQ;
	c->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(c->qpx);
	if (len)
		ibv_wr_set_sge(c->qpx, c->msg_mr->lkey, (uintptr_t)c->msg, len);
	else
		ibv_wr_set_sge_list(c->qpx, 0, NULL);
	if (ibv_wr_complete(c->qpx)) {
		conn_kill(c);
		return -ECONNRESET;
	}
	rc = conn_wait(c, reply_in, deadline_after(c->timeout_ms));
	if (!rc && !c->dead)
		return 0;
	conn_kill(c);
	return rc ? rc : -ECONNRESET;
}

/* One request and its reply (LIST's extents in c->ext): 0 or the reply's status as an
 * errno (brick_status() has it), or a transport failure. */
static int request(struct brick_conn *c, struct brick_req *rq, struct brick_reply *rp)
{
	int n, rc;

	if (c->dead)
		return -ECONNRESET;
	c->status = BRICK_OK;
	rq->version = c->version;
	rq->tag = ++c->tag;
	if ((n = brick_wire_encode_req(rq, c->msg, BRICK_MSG_MAX)) < 0)
		return n;
	if ((rc = exchange(c, (uint32_t)n)))
		return rc;
	if (brick_wire_decode_reply(c->msg + BRICK_MSG_MAX, c->reply_len, rp, c->ext,
				    BRICK_LIST_MAX))
		return -EPROTO;		/* malformed: still one reply for one request */
	if (rp->tag != rq->tag || rp->op != rq->op) {
		conn_kill(c);		/* not ours: the exchange is out of step for good */
		return -EPROTO;
	}
	c->status = rp->status;
	return status_errno(rp->status);
}

/* ---- connecting ---- */

/* rdma_getaddrinfo's failure as an errno: its EAI_* code, or -1 and errno. */
static int gai_errno(int rc)
{
	if (rc == -1 || rc == EAI_SYSTEM)
		return neg_errno();
	if (rc == EAI_MEMORY)
		return -ENOMEM;
	if (rc == EAI_SERVICE)
		return -EINVAL;
	return -EHOSTUNREACH;	/* no such host, or no address of it */
}

/* An address of port 1's GID table of ctx of the given family (RoCE: an IPv4-mapped GID,
 * or a global IPv6 one), as a source address that makes rdma_cm use that device. */
static int gid_addr(struct ibv_context *ctx, int family, struct sockaddr_storage *out)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return -ENODEV;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;
		bool v4;

		if (ibv_query_gid(ctx, 1, i, &g))
			continue;
		v4 = !memcmp(g.raw, v4mapped, sizeof(v4mapped));
		memset(out, 0, sizeof(*out));
		if (family == AF_INET && v4) {
			struct sockaddr_in *s = (struct sockaddr_in *)out;

			s->sin_family = AF_INET;
			memcpy(&s->sin_addr, g.raw + 12, 4);
			return 0;
		}
		if (family == AF_INET6 && !v4 && g.global.subnet_prefix &&
		    !(g.raw[0] == 0xfe && (g.raw[1] & 0xc0) == 0x80)) {	/* not link-local */
			struct sockaddr_in6 *s = (struct sockaddr_in6 *)out;

			s->sin6_family = AF_INET6;
			memcpy(&s->sin6_addr, g.raw, 16);
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}

/* The source address that selects the verbs device named name: -ENODEV when there is
 * no such device, -EADDRNOTAVAIL when it has no address of that family. */
static int device_addr(const char *name, int family, struct sockaddr_storage *out)
{
	int n = 0, rc = -ENODEV;
	struct ibv_context **devs = rdma_get_devices(&n);

	if (!devs)
		return -ENODEV;
	for (int i = 0; i < n && rc == -ENODEV; i++)
		if (!strcmp(ibv_get_device_name(devs[i]->device), name))
			rc = gid_addr(devs[i], family, out);
	rdma_free_devices(devs);
	return rc;
}

static int cm_event_errno(enum rdma_cm_event_type type, int status)
{
	switch (type) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		return status < 0 ? status : -EHOSTUNREACH;
	case RDMA_CM_EVENT_REJECTED:
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return -ENODEV;
	case RDMA_CM_EVENT_DISCONNECTED:
		return -ECONNRESET;
	default:
		return -EPROTO;
	}
}

/* Wait for the rdma_cm event want: 0, the failure its place took as an errno, or
 * -ETIMEDOUT. */
static int cm_expect(struct brick_conn *c, enum rdma_cm_event_type want, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = c->cm_ch->fd, .events = POLLIN };
		struct rdma_cm_event *ev;
		enum rdma_cm_event_type type;
		int status, ms;

		if (!rdma_get_cm_event(c->cm_ch, &ev)) {
			type = ev->event;
			status = ev->status;
			rdma_ack_cm_event(ev);
			if (type == want)
				return status < 0 ? status : 0;
			if (type == RDMA_CM_EVENT_ADDR_CHANGE)
				continue;
			return cm_event_errno(type, status);
		}
		if (errno != EAGAIN && errno != EINTR)
			return neg_errno();
		if (!(ms = ms_left(deadline)))
			return -ETIMEDOUT;
		if (poll(&p, 1, ms) < 0 && errno != EINTR)
			return neg_errno();
	}
}

/* Resolve host:port (through device, when named) to an address and a route. */
static int conn_resolve(struct brick_conn *c, const char *host, const char *port,
			const char *device, int64_t deadline)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP, .ai_qp_type = IBV_QPT_RC };
	struct rdma_addrinfo *res = NULL;
	struct sockaddr_storage src;
	struct sockaddr *srcp;
	int rc;

	if ((rc = rdma_getaddrinfo(host, port, &hints, &res)))
		return gai_errno(rc);
	srcp = res->ai_src_addr;
	if (!res->ai_dst_addr)
		rc = -EHOSTUNREACH;
	else if (!(c->cm_ch = rdma_create_event_channel()) || set_nonblock(c->cm_ch->fd) ||
		 rdma_create_id(c->cm_ch, &c->id, c, RDMA_PS_TCP))
		rc = neg_errno();
	else if (device && !(rc = device_addr(device, res->ai_dst_addr->sa_family, &src)))
		srcp = (struct sockaddr *)&src;
	if (!rc && rdma_resolve_addr(c->id, srcp, res->ai_dst_addr, ms_left(deadline)))
		rc = neg_errno();
	rdma_freeaddrinfo(res);
	if (rc || (rc = cm_expect(c, RDMA_CM_EVENT_ADDR_RESOLVED, deadline)))
		return rc;
	if (device && strcmp(ibv_get_device_name(c->id->verbs->device), device))
		return -ENODEV;		/* routing chose another device for that address */
	if (rdma_resolve_route(c->id, ms_left(deadline)))
		return neg_errno();
	return cm_expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline);
}

/* What the device offers: FLUSH types, and how many RDMA READs in flight. 0 or -errno. */
static int conn_caps(struct brick_conn *c, struct ibv_context *ctx)
{
	struct ibv_device_attr_ex a;
	int rc;

	memset(&a, 0, sizeof(a));
	c->rd_init = c->rd_resp = RD_ATOMIC;
	if ((rc = ibv_query_device_ex(ctx, NULL, &a)))
		return -rc;
	if (a.device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_GLOBAL)
		c->flush_types |= IBV_FLUSH_GLOBAL;
	if (a.device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_PERSISTENT)
		c->flush_types |= IBV_FLUSH_PERSISTENT;
	if (a.orig_attr.max_qp_init_rd_atom < RD_ATOMIC)
		c->rd_init = (uint8_t)a.orig_attr.max_qp_init_rd_atom;
	if (a.orig_attr.max_qp_rd_atom < RD_ATOMIC)
		c->rd_resp = (uint8_t)a.orig_attr.max_qp_rd_atom;
	return 0;
}

/* PD, channel, CQs, the message buffers' MR, the QP. */
static int conn_verbs(struct brick_conn *c)
{
	struct ibv_context *ctx = c->id->verbs;
	uint32_t sq = c->depth + 2;	/* the caller's, a request's SEND, a synchronous op */
	struct ibv_qp_init_attr_ex qa;
	int rc;

	if ((rc = conn_caps(c, ctx)))
		return rc;
	/* Durability is a persistent FLUSH (docs/brick.md): the protocol has no other way to
	 * make a write durable, so a device without it (mlx5) cannot be an initiator. */
	if (!(c->flush_types & IBV_FLUSH_PERSISTENT))
		return -EOPNOTSUPP;
	if (!(c->pd = ibv_alloc_pd(ctx)) || !(c->comp_ch = ibv_create_comp_channel(ctx)) ||
	    set_nonblock(c->comp_ch->fd) ||
	    !(c->send_cq = ibv_create_cq(ctx, (int)sq, c, c->comp_ch, 0)) ||
	    !(c->recv_cq = ibv_create_cq(ctx, 2, c, c->comp_ch, 0)) ||
	    !(c->msg_mr = ibv_reg_mr(c->pd, c->msg, 2 * BRICK_MSG_MAX, IBV_ACCESS_LOCAL_WRITE)))
		return neg_errno();
	qa = (struct ibv_qp_init_attr_ex){
		.qp_type = IBV_QPT_RC, .send_cq = c->send_cq, .recv_cq = c->recv_cq,
		.cap = { .max_send_wr = sq, .max_recv_wr = 2, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = c->pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_FLUSH,
	};
	if (rdma_create_qp_ex(c->id, &qa))
		return neg_errno();
	c->qp = c->id->qp;
	if (!(c->qpx = ibv_qp_to_qp_ex(c->qp)))
		return -EOPNOTSUPP;
	return 0;
}

static int conn_establish(struct brick_conn *c, int64_t deadline)
{
	struct rdma_conn_param p = { .responder_resources = c->rd_resp,
		.initiator_depth = c->rd_init, .retry_count = CM_RETRY,
		.rnr_retry_count = CM_RNR_RETRY };
	int rc;

	if (rdma_connect(c->id, &p))
		return neg_errno();
	if ((rc = cm_expect(c, RDMA_CM_EVENT_ESTABLISHED, deadline)))
		return rc;
	c->connected = true;
	return 0;
}

static int conn_hello(struct brick_conn *c, uint16_t version)
{
	struct brick_req rq = { .op = BRICK_OP_HELLO,
				.u.hello = { .min_version = version, .max_version = version } };
	struct brick_reply rp;
	int rc;

	c->version = version;
	if ((rc = request(c, &rq, &rp)))
		return rc;
	if (rp.u.hello.version != version || rp.u.hello.block_size != BRICK_BLOCK_SIZE)
		return -EPROTO;
	c->info = (struct brick_info){ .version = rp.u.hello.version,
		.block_size = rp.u.hello.block_size, .slots = rp.u.hello.slots,
		.credits = rp.u.hello.credits };
	return 0;
}

static int conn_new(const struct brick_connect_opts *opts, struct brick_conn **out)
{
	int timeout = opts && opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
	uint32_t depth = opts && opts->depth ? opts->depth : DEFAULT_DEPTH;
	struct brick_conn *c;

	if (timeout < 0 || depth > MAX_DEPTH)
		return -EINVAL;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->timeout_ms = timeout;
	c->depth = depth;
	c->fifo = calloc(depth, sizeof(*c->fifo));
	c->msg = aligned_alloc(4096, 2 * BRICK_MSG_MAX);
	*out = c;
	return c->fifo && c->msg ? 0 : -ENOMEM;
}

int brick_connect(const char *host, const char *port, const struct brick_connect_opts *opts,
		  struct brick_conn **out)
{
	uint16_t version = opts && opts->version ? opts->version : BRICK_WIRE_VERSION;
	struct brick_conn *c = NULL;
	int64_t deadline;
	int rc;

	if (!host || !out)
		return -EINVAL;
	*out = NULL;
	if ((rc = conn_new(opts, &c))) {
		brick_close(c);
		return rc;
	}
	deadline = deadline_after(c->timeout_ms);
	if (!(rc = conn_resolve(c, host, port ? port : BRICK_DEFAULT_PORT,
				opts ? opts->device : NULL, deadline)) &&
	    !(rc = conn_verbs(c)) && !(rc = conn_establish(c, deadline)) &&
	    !(rc = conn_hello(c, version))) {
		*out = c;
		return 0;
	}
	brick_close(c);
	return rc;
}

/* Wait a little for the brick's answer to our DREQ, so that it has seen us go. */
static void conn_disconnect(struct brick_conn *c)
{
	int64_t deadline = deadline_after(c->timeout_ms < CLOSE_WAIT_MS ? c->timeout_ms
					  : CLOSE_WAIT_MS);

	if (rdma_disconnect(c->id))
		return;
	while (!c->peer_gone && !c->cm_broken && ms_left(deadline)) {
		struct pollfd p = { .fd = c->cm_ch->fd, .events = POLLIN };

		if (poll(&p, 1, ms_left(deadline)) < 0 && errno != EINTR)
			return;
		take_cm_events(c);
	}
}

void brick_close(struct brick_conn *c)
{
	if (!c)
		return;
	if (c->connected && !c->peer_gone)
		conn_disconnect(c);
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->send_cq)
		ibv_destroy_cq(c->send_cq);
	if (c->recv_cq)
		ibv_destroy_cq(c->recv_cq);
	if (c->comp_ch)
		ibv_destroy_comp_channel(c->comp_ch);
	if (c->msg_mr)
		ibv_dereg_mr(c->msg_mr);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->cm_ch)
		rdma_destroy_event_channel(c->cm_ch);
	free(c->msg);
	free(c->fifo);
	free(c);
}

/* ---- the connection's properties ---- */

const struct brick_info *brick_conn_info(const struct brick_conn *c)
{
	return c ? &c->info : NULL;
}

uint32_t brick_conn_depth(const struct brick_conn *c)
{
	return c ? c->depth : 0;
}

uint32_t brick_status(const struct brick_conn *c)
{
	return c ? c->status : BRICK_OK;
}

const char *brick_status_text(uint32_t status)
{
	return brick_status_str(status);
}

unsigned brick_stat_count(void)
{
	return BRICK_STAT_COUNT;
}

const char *brick_stat_label(unsigned i)
{
	return i < BRICK_STAT_COUNT ? brick_stat_name(i) : NULL;
}

struct ibv_mr *brick_reg(struct brick_conn *c, void *buf, size_t len)
{
	if (!c || !buf || !len) {
		errno = EINVAL;
		return NULL;
	}
	return ibv_reg_mr(c->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
}

struct ibv_pd *brick_pd(const struct brick_conn *c)
{
	return c ? c->pd : NULL;
}

/* ---- the five calls, LIST and STAT ---- */

static int block_request(struct brick_conn *c, uint16_t op, uint64_t id)
{
	struct brick_req rq = { .op = op, .u.block.addr = id };
	struct brick_reply rp;

	if (!c)
		return -EINVAL;
	return request(c, &rq, &rp);
}

int brick_alloc(struct brick_conn *c, uint64_t id)
{
	return block_request(c, BRICK_OP_ALLOC, id);
}

int brick_free(struct brick_conn *c, uint64_t id)
{
	return block_request(c, BRICK_OP_FREE, id);
}

int brick_unmap(struct brick_conn *c, uint64_t id)
{
	return block_request(c, BRICK_OP_UNMAP, id);
}

int brick_map(struct brick_conn *c, uint64_t id, uint32_t flags, struct brick_map *out)
{
	struct brick_req rq = { .op = BRICK_OP_MAP, .u.map = { .addr = id, .flags = flags } };
	struct brick_reply rp;
	int rc;

	if (!c || !out)
		return -EINVAL;
	if ((rc = request(c, &rq, &rp)))
		return rc;
	*out = (struct brick_map){ .id = id, .remote_addr = rp.u.map.addr,
		.rkey = rp.u.map.rkey, .length = rp.u.map.length, .flags = flags };
	return 0;
}

int brick_list(struct brick_conn *c, uint64_t from, struct brick_range *r, uint32_t max,
	       uint32_t *count, uint64_t *next)
{
	struct brick_req rq = { .op = BRICK_OP_LIST,
		.u.list = { .from = from, .max = max < BRICK_LIST_MAX ? max : BRICK_LIST_MAX } };
	struct brick_reply rp;
	int rc;

	if (!c || !r || !max || !count || !next)
		return -EINVAL;
	if ((rc = request(c, &rq, &rp)))
		return rc;
	if (rp.u.list.count > rq.u.list.max)
		return -EPROTO;		/* more than asked for */
	for (uint32_t i = 0; i < rp.u.list.count; i++)
		r[i] = (struct brick_range){ .id = c->ext[i].addr, .length = c->ext[i].length };
	*count = rp.u.list.count;
	*next = rp.u.list.next;
	return 0;
}

int brick_stat(struct brick_conn *c, uint64_t *values, unsigned max, unsigned *count)
{
	struct brick_req rq = { .op = BRICK_OP_STAT };
	struct brick_reply rp;
	unsigned n = max < BRICK_STAT_COUNT ? max : BRICK_STAT_COUNT;
	int rc;

	if (!c || (max && !values))
		return -EINVAL;
	if ((rc = request(c, &rq, &rp)))
		return rc;
	if (n)
		memcpy(values, rp.u.stat, n * sizeof(*values));
	if (count)
		*count = n;
	return 0;
}

int brick_raw(struct brick_conn *c, const void *req, size_t len, void *reply, size_t max)
{
	struct brick_reply rp;
	int rc;

	if (!c || (len && !req) || (max && !reply))
		return -EINVAL;
	if (len > BRICK_MSG_MAX)
		return -EMSGSIZE;
	if (c->dead)
		return -ECONNRESET;
	c->status = BRICK_OK;
	if (len)
		memcpy(c->msg, req, len);
	if ((rc = exchange(c, (uint32_t)len)))
		return rc;
	if (max)
		memcpy(reply, c->msg + BRICK_MSG_MAX, c->reply_len < max ? c->reply_len : max);
	if (!brick_wire_decode_reply(c->msg + BRICK_MSG_MAX, c->reply_len, &rp, c->ext,
				     BRICK_LIST_MAX))
		c->status = rp.status;
	return (int)c->reply_len;
}

/* ---- data operations ---- */

enum data_op { DATA_READ, DATA_WRITE, DATA_FLUSH };

/* One data operation, checked: what post_data turns into a work request. */
struct data_wr {
	enum data_op op;
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t len;
	uint32_t lkey;		/* READ and WRITE */
	uint64_t local_addr;
	uint8_t flush_type;	/* FLUSH */
};

/* [off, off + len) inside the map's block, len > 0. */
static int check_map(const struct brick_conn *c, const struct brick_map *m, uint64_t off,
		     uint64_t len)
{
	if (!c || !m)
		return -EINVAL;
	if (c->dead)
		return -ECONNRESET;
	if (!len || off > m->length || len > m->length - off)
		return -EINVAL;
	return 0;
}

static int rw_wr(const struct brick_conn *c, enum data_op op, const struct brick_map *m,
		 uint64_t off, const void *buf, uint32_t len, const struct ibv_mr *mr,
		 struct data_wr *w)
{
	uintptr_t a = (uintptr_t)buf, base;
	int rc;

	if ((rc = check_map(c, m, off, len)))
		return rc;
	if (!buf || !mr || mr->pd != c->pd)
		return -EINVAL;
	base = (uintptr_t)mr->addr;
	if (a < base || a - base > mr->length || len > mr->length - (a - base))
		return -EINVAL;		/* buf is not inside mr */
	*w = (struct data_wr){ .op = op, .rkey = m->rkey, .remote_addr = m->remote_addr + off,
		.len = len, .lkey = mr->lkey, .local_addr = a };
	return 0;
}

static int flush_wr(const struct brick_conn *c, const struct brick_map *m, uint64_t off,
		    uint64_t len, uint32_t type, struct data_wr *w)
{
	int rc;

	if ((rc = check_map(c, m, off, len)))
		return rc;
	if (!type || (type & ~(uint32_t)(BRICK_FLUSH_PERSISTENT | BRICK_FLUSH_GLOBAL)))
		return -EINVAL;
	if ((type & c->flush_types) != type)
		return -EOPNOTSUPP;	/* the device does not offer that placement */
	*w = (struct data_wr){ .op = DATA_FLUSH, .rkey = m->rkey,
		.remote_addr = m->remote_addr + off, .len = len, .flush_type = (uint8_t)type };
	return 0;
}

static int post_data(struct brick_conn *c, const struct data_wr *w, uint64_t wr_id)
{
	struct ibv_qp_ex *q = c->qpx;

	ibv_wr_start(q);
	q->wr_id = wr_id;
	q->wr_flags = IBV_SEND_SIGNALED;
	switch (w->op) {
	case DATA_READ:
		ibv_wr_rdma_read(q, w->rkey, w->remote_addr);
		ibv_wr_set_sge(q, w->lkey, w->local_addr, (uint32_t)w->len);
		break;
	case DATA_WRITE:
		ibv_wr_rdma_write(q, w->rkey, w->remote_addr);
		ibv_wr_set_sge(q, w->lkey, w->local_addr, (uint32_t)w->len);
		break;
	case DATA_FLUSH:
		ibv_wr_flush(q, w->rkey, w->remote_addr, w->len, w->flush_type, IBV_FLUSH_RANGE);
		break;
	}
	return -ibv_wr_complete(q);
}

/* Post one of the caller's operations: it counts against depth until brick_poll. */
static int post_async(struct brick_conn *c, const struct data_wr *w, uint64_t wr_id)
{
	int rc;

	if (wr_id >= WRID_RESERVED)
		return -EINVAL;
	if (c->inflight >= c->depth)
		return -EAGAIN;
	if (!(rc = post_data(c, w, wr_id)))
		c->inflight++;
	return rc;
}

/* Run one operation in the send queue's own slot and wait for it. */
static int run_sync(struct brick_conn *c, const struct data_wr *w, int *wc_status)
{
	int rc;

	c->sync_done = false;
	if ((rc = post_data(c, w, WRID_SYNC)))
		return rc;
	if ((rc = conn_wait(c, sync_in, deadline_after(c->timeout_ms)))) {
		conn_kill(c);	/* the slot stays taken: the connection cannot go on */
		return rc;
	}
	if (wc_status)
		*wc_status = c->sync_wc.status;
	return c->sync_wc.status == IBV_WC_SUCCESS ? 0 : -EIO;
}

int brick_post_read(struct brick_conn *c, const struct brick_map *m, uint64_t off, void *buf,
		    uint32_t len, struct ibv_mr *mr, uint64_t wr_id)
{
	struct data_wr w;
	int rc = rw_wr(c, DATA_READ, m, off, buf, len, mr, &w);

	return rc ? rc : post_async(c, &w, wr_id);
}

int brick_post_write(struct brick_conn *c, const struct brick_map *m, uint64_t off,
		     const void *buf, uint32_t len, struct ibv_mr *mr, uint64_t wr_id)
{
	struct data_wr w;
	int rc = rw_wr(c, DATA_WRITE, m, off, buf, len, mr, &w);

	return rc ? rc : post_async(c, &w, wr_id);
}

int brick_post_flush(struct brick_conn *c, const struct brick_map *m, uint64_t off,
		     uint64_t len, uint32_t type, uint64_t wr_id)
{
	struct data_wr w;
	int rc = flush_wr(c, m, off, len, type, &w);

	return rc ? rc : post_async(c, &w, wr_id);
}

int brick_read(struct brick_conn *c, const struct brick_map *m, uint64_t off, void *buf,
	       uint32_t len, struct ibv_mr *mr, int *wc_status)
{
	struct data_wr w;
	int rc = rw_wr(c, DATA_READ, m, off, buf, len, mr, &w);

	return rc ? rc : run_sync(c, &w, wc_status);
}

int brick_write(struct brick_conn *c, const struct brick_map *m, uint64_t off,
		const void *buf, uint32_t len, struct ibv_mr *mr, int *wc_status)
{
	struct data_wr w;
	int rc = rw_wr(c, DATA_WRITE, m, off, buf, len, mr, &w);

	return rc ? rc : run_sync(c, &w, wc_status);
}

int brick_flush(struct brick_conn *c, const struct brick_map *m, uint64_t off, uint64_t len,
		uint32_t type, int *wc_status)
{
	struct data_wr w;
	int rc = flush_wr(c, m, off, len, type, &w);

	return rc ? rc : run_sync(c, &w, wc_status);
}

int brick_poll(struct brick_conn *c, struct ibv_wc *wc, int max, int timeout_ms)
{
	int n = 0;

	if (!c || !wc || max <= 0)
		return -EINVAL;
	reap(c);
	if (!c->fifo_n && c->inflight && timeout_ms) {
		/* dead: what is posted completes flushed soon, or never (bounded by the
		 * connection's timeout) */
		int ms = c->dead && (timeout_ms < 0 || timeout_ms > c->timeout_ms) ? c->timeout_ms
										 : timeout_ms;
		int rc = conn_wait(c, poll_ready, deadline_after(ms));

		if (rc && rc != -ETIMEDOUT && !c->fifo_n)
			return rc;
	}
	if (!c->fifo_n)
		return c->dead && !c->inflight ? -ECONNRESET : 0;
	for (; n < max && c->fifo_n; n++, c->fifo_n--) {
		wc[n] = c->fifo[c->fifo_head];
		c->fifo_head = (c->fifo_head + 1) % c->depth;
	}
	c->inflight -= (uint32_t)n;
	return n;
}
