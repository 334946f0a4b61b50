/* SPDX-License-Identifier: MIT */
/*
 * serve — odpemu-brick's connections and event loop. One thread polls the rdma_cm event
 * channel, every initiator's completion channel, a timer (the memory budget) and a
 * signalfd (SIGINT/SIGTERM end the brick cleanly).
 *
 * An initiator is an rdma_cm connection with an RC QP of its own PD: BRICK_CREDITS
 * receive buffers hold requests, each answered from a free send slot (ops.c). Its end
 * (DISCONNECTED, a completion in error, its device gone) revokes its maps and frees
 * everything it had.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "odpemu/verbs_ext.h"
#include "server.h"

#define WR_SEND 0x100u		/* send slot k's wr_id is WR_SEND + k; a receive's is its slot */
#define ENFORCE_MS 100		/* how often the budget is checked between requests */
#define MAX_POLL (3 + 256)	/* signal, events, timer, initiators */

static uint8_t *recv_buf(struct brick_initiator *in, unsigned slot)
{
	return in->buf + (size_t)slot * BRICK_MSG_MAX;
}

static uint8_t *send_buf(struct brick_initiator *in, unsigned slot)
{
	return in->buf + (size_t)(BRICK_CREDITS + slot) * BRICK_MSG_MAX;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ? -errno : 0;
}

/* ---- one initiator ---- */

static void query_caps(struct ibv_context *ctx, struct brick_devcaps *c)
{
	const uint32_t rc_need = IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_WRITE;
	struct ibv_device_attr_ex a;

	memset(c, 0, sizeof(*c));
	if (ibv_query_device_ex(ctx, NULL, &a))
		return;
	c->odp = (a.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
		 (a.odp_caps.per_transport_caps.rc_odp_caps & rc_need) == rc_need;
	c->flush = (a.device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_PERSISTENT) &&
		   (a.device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_GLOBAL) &&
		   (!c->odp || (a.odp_caps.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_FLUSH));
	c->max_rd_atom = a.orig_attr.max_qp_rd_atom > 255 ? 255 :
		(uint8_t)a.orig_attr.max_qp_rd_atom;
}

static int post_recv(struct brick_initiator *in, unsigned slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)recv_buf(in, slot), .length = BRICK_MSG_MAX,
		.lkey = in->buf_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(in->id->qp, &wr, &bad);
}

static int post_reply(struct brick_initiator *in, unsigned slot, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)send_buf(in, slot), .length = len,
		.lkey = in->buf_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_SEND + slot, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	return ibv_post_send(in->id->qp, &wr, &bad);
}

/* The device behind ctx, set up at its first initiator: 0 or -1 (errno). */
static struct brick_device *device_of(struct brick_server *s, struct ibv_context *ctx,
				      const struct brick_devcaps *caps)
{
	struct brick_device *d;

	for (d = s->devices; d; d = d->next)
		if (d->ctx == ctx)
			return d;
	if (!(d = calloc(1, sizeof(*d))))
		return NULL;
	d->ctx = ctx;
	if (!(d->pd = ibv_alloc_pd(ctx)) ||
	    (caps->odp && !(d->store_mr = ibv_reg_mr(d->pd, brick_store_base(s->store),
			brick_store_slots(s->store) * BRICK_BLOCK,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND)))) {
		if (d->pd)
			ibv_dealloc_pd(d->pd);
		free(d);
		return NULL;
	}
	d->next = s->devices;
	s->devices = d;
	brick_log(s, "serving on %s: the file is ODP MR lkey 0x%x", ibv_get_device_name(ctx->device),
		  d->store_mr ? d->store_mr->lkey : 0);
	return d;
}

static void devices_free(struct brick_server *s)
{
	while (s->devices) {
		struct brick_device *d = s->devices;

		s->devices = d->next;
		if (d->store_mr)
			ibv_dereg_mr(d->store_mr);
		ibv_dealloc_pd(d->pd);
		free(d);
	}
}

/* The initiator's verbs resources and its posted receives: 0 or -1 (errno). */
static int initiator_setup(struct brick_initiator *in)
{
	struct ibv_context *ctx = in->id->verbs;
	size_t len = (size_t)(BRICK_CREDITS + BRICK_SEND_SLOTS) * BRICK_MSG_MAX;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = BRICK_SEND_SLOTS, .max_recv_wr = BRICK_CREDITS,
			 .max_send_sge = 1, .max_recv_sge = 1 } };

	query_caps(ctx, &in->caps);
	brick_log(in->srv, "initiator %p on %s: ODP %s, FLUSH %s, %u READs in flight", (void *)in,
		  ibv_get_device_name(ctx->device), in->caps.odp ? "yes" : "no",
		  in->caps.flush ? "yes" : "no", in->caps.max_rd_atom);
	if (!(in->dev = device_of(in->srv, ctx, &in->caps)) ||
	    !(in->pd = ibv_alloc_pd(ctx)) || !(in->channel = ibv_create_comp_channel(ctx)) ||
	    set_nonblock(in->channel->fd) ||
	    !(in->cq = ibv_create_cq(ctx, BRICK_CREDITS + BRICK_SEND_SLOTS, in, in->channel, 0)) ||
	    ibv_req_notify_cq(in->cq, 0))
		return -1;
	qa.send_cq = qa.recv_cq = in->cq;
	if (rdma_create_qp(in->id, in->pd, &qa) ||
	    !(in->buf = aligned_alloc(4096, len)) ||
	    !(in->buf_mr = ibv_reg_mr(in->pd, in->buf, len, IBV_ACCESS_LOCAL_WRITE)))
		return -1;
	for (unsigned i = 0; i < BRICK_CREDITS; i++)
		if (post_recv(in, i))
			return -1;
	return 0;
}

static void initiator_unlink(struct brick_initiator *in)
{
	struct brick_server *s = in->srv;

	for (struct brick_initiator **p = &s->initiators; *p; p = &(*p)->next)
		if (*p == in) {
			*p = in->next;
			s->ninitiators--;
			return;
		}
}

/* Everything the initiator had, its maps first (revoked before its PD goes). */
static void initiator_free(struct brick_initiator *in)
{
	initiator_unlink(in);
	brick_unmap_all(in);
	if (in->id->qp)
		rdma_destroy_qp(in->id);
	if (in->buf_mr)
		ibv_dereg_mr(in->buf_mr);
	free(in->buf);
	if (in->cq)
		ibv_destroy_cq(in->cq);
	if (in->channel)
		ibv_destroy_comp_channel(in->channel);
	if (in->pd)
		ibv_dealloc_pd(in->pd);
	rdma_destroy_id(in->id);
	brick_log(in->srv, "initiator %p gone", (void *)in);
	free(in);
}

/* A connect request: the initiator's resources, then accept (or reject when the brick
 * has all it takes, or the resources fail). */
static void on_connect_request(struct brick_server *s, struct rdma_cm_id *id,
			       const struct rdma_conn_param *asked)
{
	struct brick_initiator *in = calloc(1, sizeof(*in));
	struct rdma_conn_param p = { .rnr_retry_count = 7, .retry_count = 7 };

	if (!in || s->ninitiators >= s->opt.max_initiators) {
		brick_log(s, "connect request refused: %s", in ? "too many initiators" :
			  "out of memory");
		free(in);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	in->srv = s;
	in->id = id;
	id->context = in;
	in->next = s->initiators;
	s->initiators = in;
	s->ninitiators++;
	if (initiator_setup(in))
		goto refuse;
	/* the initiator's READs are served from our responder resources */
	p.responder_resources = asked->initiator_depth < in->caps.max_rd_atom ?
		asked->initiator_depth : in->caps.max_rd_atom;
	if (rdma_accept(id, &p)) {
refuse:
		brick_log(s, "accepting an initiator failed: %s", strerror(errno));
		rdma_reject(id, NULL, 0);
		initiator_free(in);
	}
}

/* ---- requests ---- */

static int free_send_slot(const struct brick_initiator *in)
{
	for (unsigned k = 0; k < BRICK_SEND_SLOTS; k++)
		if (!in->send_busy[k])
			return (int)k;
	return -1;
}

/* A request in receive slot `slot`: answered from a free send slot, the receive posted
 * again first (the initiator may send its next request as soon as it has the reply).
 * 0, or -1 when the connection is no longer usable. */
static int on_request(struct brick_initiator *in, unsigned slot, uint32_t len)
{
	int k = free_send_slot(in), n;

	if (k < 0) {		/* more requests in flight than HELLO's credits */
		in->srv->bad_requests++;
		brick_log(in->srv, "initiator %p exceeded its credits", (void *)in);
		return -1;
	}
	n = brick_answer(in, recv_buf(in, slot), len, send_buf(in, (unsigned)k));
	if (n < 0 || post_recv(in, slot) || post_reply(in, (unsigned)k, (uint32_t)n))
		return -1;
	in->send_busy[k] = true;
	return 0;
}

/* One completion: 0, or -1 when the initiator must go (an error completion: its QP is
 * in the error state, or it broke the protocol). */
static int on_completion(struct brick_initiator *in, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			brick_log(in->srv, "initiator %p: %s on wr %llu", (void *)in,
				  ibv_wc_status_str(wc->status), (unsigned long long)wc->wr_id);
		return -1;
	}
	if (wc->wr_id >= WR_SEND && wc->wr_id < WR_SEND + BRICK_SEND_SLOTS) {
		in->send_busy[wc->wr_id - WR_SEND] = false;
		return 0;
	}
	if (wc->opcode == IBV_WC_RECV && wc->wr_id < BRICK_CREDITS)
		return on_request(in, (unsigned)wc->wr_id, wc->byte_len);
	return -1;
}

/* The completion channel woke: drain the CQ (re-armed first, so nothing is missed). */
static void on_cq_event(struct brick_initiator *in)
{
	struct ibv_cq *cq;
	void *ctx;
	struct ibv_wc wc[16];
	int n;

	if (ibv_get_cq_event(in->channel, &cq, &ctx))
		return;
	ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(in->cq, 0))
		goto broken;
	while ((n = ibv_poll_cq(in->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++)
			if (on_completion(in, &wc[i]))
				goto broken;
	if (n == 0)
		return;
broken:
	/* the rest goes when rdma_cm says DISCONNECTED */
	in->established = false;
	rdma_disconnect(in->id);
}

/* ---- rdma_cm events ---- */

/* Once connected, two RTS-to-RTS changes to what rdma_cm set up:
 *  - FLUSH access: rdma_cm gives the QP remote READ, WRITE and ATOMIC access only (the
 *    kernel's cm_init_qp_init_attr); a FLUSH also needs the QP's FLUSH access (IBA 1.5
 *    Memory Placement Extensions; rxe checks qp_access_flags too). Without it the
 *    initiator's FLUSH gets REM_ACCESS_ERR.
 *  - the shortest RNR timer (0.01 ms): an ODP page fault on a handle is answered with an
 *    RNR NAK (ConnectX does; odpemu's default policy), and the initiator waits this long
 *    before it asks again; rdma_cm's default (0.64 ms) would make every first touch of a
 *    mapped block cost more than the fault itself. */
static void on_established(struct brick_initiator *in)
{
	struct ibv_qp_attr a = { .qp_access_flags = IBV_ACCESS_REMOTE_READ |
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_FLUSH_GLOBAL |
		IBV_ACCESS_FLUSH_PERSISTENT, .min_rnr_timer = 1 };

	in->established = true;
	if (in->caps.flush && ibv_modify_qp(in->id->qp, &a, IBV_QP_ACCESS_FLAGS))
		brick_log(in->srv, "initiator %p: FLUSH access refused: %s", (void *)in,
			  strerror(errno));
	if (ibv_modify_qp(in->id->qp, &a, IBV_QP_MIN_RNR_TIMER))
		brick_log(in->srv, "initiator %p: RNR timer not changed: %s", (void *)in,
			  strerror(errno));
}

/* One event: 0, or -ENODEV when the listener's device is gone (the brick ends). */
static int on_cm_event(struct brick_server *s)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct rdma_conn_param asked;
	enum rdma_cm_event_type type;

	if (rdma_get_cm_event(s->events, &ev))
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	/* copied out: the event is acknowledged before any id is destroyed */
	type = ev->event;
	id = ev->id;
	asked = ev->param.conn;
	rdma_ack_cm_event(ev);
	brick_log(s, "%s on %p", rdma_event_str(type), (void *)id);
	switch (type) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		on_connect_request(s, id, &asked);
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(id->context);
		return 0;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (id == s->listener)
			return -ENODEV;
		/* fall through */
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		if (id != s->listener && id->context)
			initiator_free(id->context);
		return 0;
	default:
		return 0;
	}
}

/* ---- the loop ---- */

static int listen_on(struct brick_server *s)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP },
		*ai = NULL;
	int rc;

	if (!(s->events = rdma_create_event_channel()) || set_nonblock(s->events->fd) ||
	    rdma_create_id(s->events, &s->listener, NULL, RDMA_PS_TCP))
		return -errno;
	if ((rc = rdma_getaddrinfo(s->opt.addr, s->opt.port, &hints, &ai))) {
		fprintf(stderr, "odpemu-brick: address %s port %s: %s\n",
			s->opt.addr ? s->opt.addr : "(any)", s->opt.port,
			rc == -1 ? strerror(errno) : gai_strerror(rc));
		return -EINVAL;
	}
	rc = rdma_bind_addr(s->listener, ai->ai_src_addr) || rdma_listen(s->listener, 16) ?
		-errno : 0;
	rdma_freeaddrinfo(ai);
	return rc;
}

static int open_fds(struct brick_server *s)
{
	struct itimerspec t = { .it_interval = { 0, ENFORCE_MS * 1000000L },
		.it_value = { 0, ENFORCE_MS * 1000000L } };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) ||
	    (s->signal_fd = signalfd(-1, &set, SFD_CLOEXEC)) < 0 ||
	    (s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC)) < 0 ||
	    timerfd_settime(s->timer_fd, 0, &t, NULL))
		return -errno;
	return 0;
}

static void close_all(struct brick_server *s)
{
	while (s->initiators) {
		rdma_disconnect(s->initiators->id);
		initiator_free(s->initiators);
	}
	devices_free(s);
	if (s->listener)
		rdma_destroy_id(s->listener);
	if (s->events)
		rdma_destroy_event_channel(s->events);
	if (s->signal_fd > 0)
		close(s->signal_fd);
	if (s->timer_fd > 0)
		close(s->timer_fd);
}

/* The fds to wait on: signal, events, timer, then one per initiator (in list order). */
static nfds_t fill_poll(struct brick_server *s, struct pollfd *p)
{
	nfds_t n = 0;

	p[n++] = (struct pollfd){ .fd = s->signal_fd, .events = POLLIN };
	p[n++] = (struct pollfd){ .fd = s->events->fd, .events = POLLIN };
	p[n++] = (struct pollfd){ .fd = s->timer_fd, .events = POLLIN };
	for (struct brick_initiator *in = s->initiators; in && n < MAX_POLL; in = in->next)
		p[n++] = (struct pollfd){ .fd = in->channel->fd, .events = POLLIN };
	return n;
}

/* Completion channels that woke, by their fd (the list may change as they are served). */
static void serve_cqs(struct brick_server *s, const struct pollfd *p, nfds_t n)
{
	for (nfds_t i = 3; i < n; i++) {
		if (!(p[i].revents & POLLIN))
			continue;
		for (struct brick_initiator *in = s->initiators; in; in = in->next)
			if (in->channel->fd == p[i].fd) {
				on_cq_event(in);
				break;
			}
	}
}

static void on_timer(struct brick_server *s)
{
	uint64_t ticks;

	if (read(s->timer_fd, &ticks, sizeof(ticks)) == sizeof(ticks) && s->opt.mem)
		(void)brick_store_enforce(s->store, 0);
}

int brick_serve(struct brick_server *s)
{
	struct pollfd p[MAX_POLL];
	int rc;

	s->signal_fd = s->timer_fd = -1;
	if ((rc = open_fds(s)) || (rc = listen_on(s))) {
		fprintf(stderr, "odpemu-brick: cannot listen: %s\n", strerror(-rc));
		close_all(s);
		return rc;
	}
	printf("odpemu-brick: listening on %s port %s: %llu blocks of 2 MiB, %llu allocated, "
	       "memory budget %llu bytes\n", s->opt.addr ? s->opt.addr : "*", s->opt.port,
	       (unsigned long long)brick_store_slots(s->store),
	       (unsigned long long)brick_meta_count(s->meta), (unsigned long long)s->opt.mem);
	fflush(stdout);
	for (rc = 0; !rc;) {
		nfds_t n = fill_poll(s, p);

		if (poll(p, n, -1) < 0) {
			rc = errno == EINTR ? 0 : -errno;
			continue;
		}
		if (p[0].revents & POLLIN)
			break;
		if (p[1].revents & POLLIN)
			rc = on_cm_event(s);
		if (p[2].revents & POLLIN)
			on_timer(s);
		serve_cqs(s, p, n);
	}
	if (rc == -ENODEV)
		fprintf(stderr, "odpemu-brick: the device went away (its daemon died?)\n");
	close_all(s);
	return rc;
}
