/* SPDX-License-Identifier: MIT */
/* Completion queues: the daemon produces struct ipc_cqe into a shared ring, poll_cq
 * consumes them without a system call. Notification requests are two counters in the
 * ring header; fired notifications arrive on the completion channel's pipe. */
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lib_int.h"

#define LIVE_CHECK_POLLS	1024		/* empty polls between clock reads */
#define SPIN_POLLS		16		/* empty polls in a row before yielding */
#define LIVE_CHECK_NS		20000000ull	/* 20 ms between socket probes */

int lib_cq_attach(struct lib_cq *cq, void *map, size_t map_len)
{
	int rc = lib_ring_attach(&cq->ring, map, map_len, 0, 0, ipc_cq_slot());

	if (rc)
		return rc;
	cq->ring.head = atomic_load_explicit(&cq->ring.hdr->cons, memory_order_relaxed);
	cq->map = map;
	cq->map_len = map_len;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	lib_evc_init(&cq->evc);
	return 0;
}

void lib_cq_free(struct lib_cq *cq)
{
	if (cq->map) {
		pthread_spin_destroy(&cq->lock);
		lib_evc_fini(&cq->evc);
		munmap(cq->map, cq->map_len);
	}
	free(cq);
}

/* Acknowledge events and mirror the counts into the public fields, as libibverbs. */
void lib_cq_ack(struct lib_cq *cq, bool comp, uint32_t n)
{
	lib_evc_ack(&cq->evc, comp, n);
	pthread_mutex_lock(&cq->evc.lock);
	cq->pub.comp_events_completed = cq->evc.comp_acked;
	cq->pub.async_events_completed = cq->evc.async_acked;
	pthread_mutex_unlock(&cq->evc.lock);
}

static int create(struct lib_context *c, int cqe, struct odpemu_comp_channel *ch,
		  unsigned flags, struct ipc_create_cq_rep *rep, void **map)
{
	struct ipc_create_cq_req req = { .cqe = (uint32_t)cqe, .channel = ch ? ch->handle : 0,
		.flags = flags & ODPEMU_CQ_IGNORE_OVERRUN ? IPC_CQ_IGNORE_OVERRUN : 0 };

	return lib_call_ring(c, IPC_CREATE_CQ, IPC_DESTROY_CQ, &req, sizeof(req), rep,
			     sizeof(*rep), &rep->handle, &rep->map_len, map);
}

static struct lib_cq *cq_new(struct lib_context *c, const struct ipc_create_cq_rep *rep,
			     void *map, int *err)
{
	struct lib_cq *cq = calloc(1, sizeof(*cq));

	if (!cq) {
		munmap(map, rep->map_len);
		*err = -ENOMEM;
		return NULL;
	}
	*err = lib_cq_attach(cq, map, rep->map_len);
	if (!*err && cq->ring.size < rep->cqe)
		*err = -EPROTO;
	if (!*err)
		return cq;
	lib_set_error(c, "create_cq: the daemon's ring layout differs from the library's");
	if (cq->map) {
		lib_cq_free(cq);
	} else {
		free(cq);
		munmap(map, rep->map_len);
	}
	return NULL;
}

ODPEMU_EXPORT struct odpemu_cq *odpemu_create_cq(struct odpemu_context *context, int cqe,
						 void *cq_context,
						 struct odpemu_comp_channel *channel,
						 int comp_vector)
{
	return odpemu_create_cq_flags(context, cqe, cq_context, channel, comp_vector, 0);
}

ODPEMU_EXPORT struct odpemu_cq *odpemu_create_cq_flags(struct odpemu_context *context, int cqe,
						       void *cq_context,
						       struct odpemu_comp_channel *channel,
						       int comp_vector, unsigned flags)
{
	struct ipc_create_cq_rep rep;
	struct lib_context *c;
	struct lib_cq *cq;
	void *map;
	int rc;

	if (!context || cqe < 1 || comp_vector < 0 || comp_vector >= context->num_comp_vectors ||
	    (channel && channel->context != context) || (flags & ~(unsigned)ODPEMU_CQ_IGNORE_OVERRUN)) {
		errno = EINVAL;
		return NULL;
	}
	c = lib_ctx(context);
	rc = create(c, cqe, channel, flags, &rep, &map);
	if (rc || !(cq = cq_new(c, &rep, map, &rc))) {
		if (!rc)
			lib_call_destroy(c, IPC_DESTROY_CQ, rep.handle);
		errno = -rc;
		return NULL;
	}
	cq->pub.context = context;
	cq->pub.channel = channel;
	cq->pub.cq_context = cq_context;
	cq->pub.cqe = (int)rep.cqe;
	cq->pub.handle = rep.handle;
	cq->pub.priv = cq;
	pthread_mutex_lock(&c->tab_lock);
	rc = lib_table_add(&c->cqs, rep.handle, cq);
	if (!rc && channel)
		channel->refcnt++;
	pthread_mutex_unlock(&c->tab_lock);
	if (rc) {
		lib_call_destroy(c, IPC_DESTROY_CQ, rep.handle);
		lib_cq_free(cq);
		errno = -rc;
		return NULL;
	}
	return &cq->pub;
}

ODPEMU_EXPORT int odpemu_destroy_cq(struct odpemu_cq *pub)
{
	struct lib_cq *cq = (struct lib_cq *)pub;
	struct lib_context *c;
	int rc;

	if (!pub)
		return lib_fail(EINVAL);
	c = lib_ctx(pub->context);
	rc = lib_destroy_tracked(c, IPC_DESTROY_CQ, &c->cqs, pub->handle, &cq->evc);
	if (rc)
		return lib_fail(-rc);
	if (pub->channel) {
		pthread_mutex_lock(&c->tab_lock);
		pub->channel->refcnt--;
		pthread_mutex_unlock(&c->tab_lock);
	}
	lib_cq_free(cq);
	return 0;
}

/* ---- resize ---- */

/* The daemon's new ring, checked and attached to r with the consumer head carried over
 * (the daemon kept every waiting completion at its index). 0 or -errno; map is unmapped
 * on failure. */
static int attach_resized(struct lib_cq *cq, struct lib_ring *r, void *map,
			  const struct ipc_create_cq_rep *rep)
{
	int rc = lib_ring_attach(r, map, rep->map_len, 0, 0, ipc_cq_slot());

	if (!rc && r->size < rep->cqe)
		rc = -EPROTO;
	if (rc) {
		munmap(map, rep->map_len);
		return rc;
	}
	r->head = cq->ring.head;
	return 0;
}

/* Called with cq->lock held: no poller reads the old ring after the daemon stopped
 * producing into it, none reads the new one before it is attached. The old mapping goes
 * to *old_map, *old_len for the caller to unmap after unlocking. */
static int resize_locked(struct lib_context *c, struct lib_cq *cq, int cqe, void **old_map,
			 size_t *old_len)
{
	struct ipc_resize_cq_req req = { .cqe = (uint32_t)cqe };
	struct ipc_create_cq_rep rep;
	struct lib_ring r;
	void *map;
	int fd, rc;
	struct lib_call call = {
		.op = IPC_RESIZE_CQ, .handle = cq->pub.handle, .req = &req, .req_len = sizeof(req),
		.rep = &rep, .rep_min = sizeof(rep), .rep_cap = sizeof(rep), .rfds = &fd, .nrfds = 1,
	};

	if ((rc = lib_call(c, &call)))
		return rc;	/* nothing changed: the old ring is still the CQ's */
	map = lib_map_fd(fd, rep.map_len, &rc);
	if (!rc)
		rc = attach_resized(cq, &r, map, &rep);
	if (rc) {	/* the daemon already moved on to the ring we cannot use */
		lib_set_error(c, "resize_cq: the new ring of CQ %u cannot be used (%s); it "
			      "receives no more completions: destroy it", cq->pub.handle,
			      strerror(-rc));
		return rc;
	}
	*old_map = cq->map;
	*old_len = cq->map_len;
	cq->ring = r;
	cq->map = map;
	cq->map_len = rep.map_len;
	cq->pub.cqe = (int)rep.cqe;
	return 0;
}

/* A resize is rare and short (one request): pollers of this CQ spin on its lock meanwhile,
 * as they would behind a poll of another thread. */
ODPEMU_EXPORT int odpemu_resize_cq(struct odpemu_cq *pub, int cqe)
{
	struct lib_cq *cq = (struct lib_cq *)pub;
	struct lib_context *c;
	void *old_map = NULL;
	size_t old_len = 0;
	int rc;

	if (!pub || cqe < 1)
		return lib_fail(EINVAL);
	c = lib_ctx(pub->context);
	if (lib_forked(c))	/* the CQ is the parent's (fork.c) */
		return lib_fail(ENODEV);
	pthread_spin_lock(&cq->lock);
	rc = resize_locked(c, cq, cqe, &old_map, &old_len);
	pthread_spin_unlock(&cq->lock);
	if (rc)
		return lib_fail(-rc);
	munmap(old_map, old_len);
	return 0;
}

/* ---- poll ---- */

static bool cleaned(const void *slot)
{
	uint32_t opcode;

	memcpy(&opcode, (const char *)slot + offsetof(struct ipc_cqe, opcode), sizeof(opcode));
	return opcode == LIB_CQE_CLEANED;
}

static void cqe_to_wc(const void *slot, struct odpemu_wc *wc)
{
	struct ipc_cqe e;

	memcpy(&e, slot, sizeof(e));
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = e.wr_id;
	wc->status = (enum odpemu_wc_status)e.status;
	wc->opcode = (enum odpemu_wc_opcode)e.opcode;
	wc->vendor_err = e.vendor_err;
	wc->byte_len = e.byte_len;
	if (e.wc_flags & ODPEMU_WC_WITH_INV)
		wc->invalidated_rkey = e.imm_data;	/* an rkey: host order */
	else if (e.wc_flags & ODPEMU_WC_WITH_IMM)
		wc->imm_data = htonl(e.imm_data);	/* ibv_wc: network order */
	wc->qp_num = e.qp_num;
	wc->src_qp = e.src_qp;
	wc->wc_flags = e.wc_flags;
}

static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A poller spinning on an empty CQ must learn that the daemon died: now and then, probe
 * the control socket for a hang-up (cheap, no request). */
static bool still_alive(struct lib_context *c)
{
	uint64_t now = coarse_ns();
	struct pollfd p = { .fd = c->sock };

	if (now - atomic_load_explicit(&c->live_check_ns, memory_order_relaxed) < LIVE_CHECK_NS)
		return true;
	atomic_store_explicit(&c->live_check_ns, now, memory_order_relaxed);
	if (c->sock >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR))) {
		lib_ctx_mark_dead(c);
		return false;
	}
	return true;
}

/* Up to num_entries completions into wc (and their daemon timestamps into ts, if not
 * NULL). */
static int poll_cq(struct odpemu_cq *pub, int num_entries, struct odpemu_wc *wc, uint64_t *ts)
{
	struct lib_cq *cq = (struct lib_cq *)pub;
	struct lib_context *c;
	bool probe = false, yield;
	uint32_t prod, start;
	int n = 0;

	if (!pub || num_entries < 0) {	/* API misuse */
		errno = EINVAL;
		return -1;
	}
	if (!wc)
		num_entries = 0;	/* nowhere to put completions: only the liveness check */
	c = lib_ctx(pub->context);
	if (lib_forked(c)) {	/* the ring is the parent's (fork.c) */
		errno = ENODEV;
		return -1;
	}
	/* A dead daemon's last completions (the flushes of its graceful stop) are still in
	 * the ring, which stays mapped: hand them out before reporting the death. */
	pthread_spin_lock(&cq->lock);
	/* acquire: the daemon wrote the slots before it published prod */
	prod = atomic_load_explicit(&cq->ring.hdr->prod, memory_order_acquire);
	start = cq->ring.head;
	while (n < num_entries && cq->ring.head != prod) {
		const void *slot = lib_ring_slot(&cq->ring, cq->ring.head);

		if (cleaned(slot)) {	/* its QP was reset: cq_clean.c */
			cq->ring.head++;
			continue;
		}
		cqe_to_wc(slot, &wc[n]);
		if (ts)
			memcpy(&ts[n], (const char *)slot + offsetof(struct ipc_cqe, ts_ns),
			       sizeof(ts[n]));
		n++;
		cq->ring.head++;
	}
	if (cq->ring.head != start)	/* release: our reads of the slots are done before the
					 * daemon reuses them */
		atomic_store_explicit(&cq->ring.hdr->cons, cq->ring.head, memory_order_release);
	else
		probe = ++cq->empty_polls % LIVE_CHECK_POLLS == 0;
	if (n)
		cq->empty_polls = 0;
	yield = !n && cq->empty_polls > SPIN_POLLS;
	pthread_spin_unlock(&cq->lock);
	/* A poller that spins on an empty CQ (perftest, rc_pingpong, UCX progress) competes
	 * for the cores the NIC itself runs on: the daemons. After a few empty polls, let a
	 * runnable daemon have the CPU; it costs one system call when nothing else runs. */
	if (yield)
		sched_yield();
	if (!n && (lib_ctx_dead(c) || (probe && !still_alive(c)))) {
		errno = ENODEV;
		return -1;
	}
	return n;
}

ODPEMU_EXPORT int odpemu_poll_cq(struct odpemu_cq *pub, int num_entries, struct odpemu_wc *wc)
{
	return poll_cq(pub, num_entries, wc, NULL);
}

ODPEMU_EXPORT int odpemu_poll_cq_ts(struct odpemu_cq *pub, int num_entries, struct odpemu_wc *wc,
				    uint64_t *ts_ns)
{
	return poll_cq(pub, num_entries, wc, ts_ns);
}

/* ---- notification ---- */

ODPEMU_EXPORT int odpemu_req_notify_cq(struct odpemu_cq *pub, int solicited_only)
{
	struct lib_cq *cq = (struct lib_cq *)pub;
	struct lib_context *c;

	if (!pub)
		return lib_fail(EINVAL);
	c = lib_ctx(pub->context);
	if (lib_ctx_dead(c))
		return lib_fail(ENODEV);
	pthread_spin_lock(&cq->lock);
	atomic_store_explicit(&cq->ring.hdr->arm_solicited, solicited_only ? 1 : 0,
			      memory_order_relaxed);
	/* release: the daemon that sees the new arm_seq sees arm_solicited too */
	atomic_fetch_add_explicit(&cq->ring.hdr->arm_seq, 1, memory_order_release);
	pthread_spin_unlock(&cq->lock);
	lib_doorbell_obj(c, pub->handle);
	return 0;
}

/* One record from the channel pipe: 0, or an errno (EAGAIN non-blocking, EINTR a signal
 * came, as libibverbs reports it; EIO daemon gone). */
static int read_cq_event(int fd, struct ipc_cq_event *ev)
{
	ssize_t n = read(fd, ev, sizeof(*ev));

	if (n < 0)
		return errno;
	return n == sizeof(*ev) ? 0 : EIO;	/* end of file: the daemon died */
}

ODPEMU_EXPORT int odpemu_get_cq_event(struct odpemu_comp_channel *channel, struct odpemu_cq **out,
				      void **cq_context)
{
	struct lib_context *c;

	if (!channel || !out || !cq_context)
		return lib_fail(EINVAL);
	c = lib_ctx(channel->context);
	for (;;) {
		struct ipc_cq_event ev;
		struct lib_cq *cq;
		int rc = read_cq_event(channel->fd, &ev);

		if (rc)
			return lib_fail(rc);
		pthread_mutex_lock(&c->tab_lock);
		cq = lib_table_find(&c->cqs, ev.cq);
		if (cq && cq->pub.channel == channel)
			lib_evc_got(&cq->evc, true);
		else
			cq = NULL;	/* the CQ was destroyed after the event was written */
		pthread_mutex_unlock(&c->tab_lock);
		if (cq) {
			*out = &cq->pub;
			*cq_context = cq->pub.cq_context;
			return 0;
		}
	}
}

ODPEMU_EXPORT void odpemu_ack_cq_events(struct odpemu_cq *pub, unsigned int nevents)
{
	if (pub && nevents)
		lib_cq_ack((struct lib_cq *)pub, true, nevents);
}
