/* SPDX-License-Identifier: MIT */
/*
 * MR leases end to end (docs/regcache.md, include/odpemu/odpemu.h "MR leases"): a pinned
 * MR on host 0 registered with ODPEMU_ACCESS_LEASE, a peer on host 1.
 *  - ack: munmap of the leased buffer raises MR_DECOHERENCE and returns only after the
 *    event is acknowledged (an event thread waits 150 ms first: the munmap takes longer,
 *    and returns after the acknowledgement's time; a restore before it is EBUSY); while broken, neither the peer's READ
 *    nor the owner's own SEND from the MR completes (nothing reaches the old pages or the
 *    new ones); restore keeps the keys, and both then complete with the new bytes;
 *  - in flight: a memfd mapped shared under a lease takes 2,000 RDMA WRITE_WITH_IMMs of
 *    the peer while the owner re-maps it (MAP_FIXED over itself) and restores, 10 times:
 *    every message lands once (one receive completion per immediate, each slot written);
 *  - timeout: nobody acknowledges; munmap returns after the daemon's lease timeout
 *    (--lease-timeout-ms 300 here), the MR is revoked (counter lease_revocations), the
 *    peer's WRITE gets REM_ACCESS_ERR, the owner's SEND LOC_PROT_ERR, restore EACCES;
 *  - death: a process killed while its munmap waits on a lease leaves nothing behind
 *    (the daemon frees its MR, nothing is revoked, the next client is served);
 *  - daemon death: the daemon SIGKILLed while it holds a munmap for a lease: the call
 *    returns (the library's fallback lets go of the ids the daemon recorded);
 *  - misuse: a lease on an ODP MR is EINVAL, restore of a coherent lease EINVAL.
 * The seccomp filter a lease installs stays on its process: everything runs in a child.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "ops.h"
#include "t.h"

#define LEN (4u * 4096u)
#define TIMEOUT_MS 300
#define IMM_MSGS 2000u
#define IMM_BATCH 100u

static const char *const owner_args[] = { "--lease-timeout-ms", "300", NULL };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the event thread: the lease holder ---- */

struct holder {
	struct odpemu_context *ctx;
	int delay_ms;			/* before acknowledging; < 0: never (until stop) */
	_Atomic bool stop;
	_Atomic unsigned events;	/* MR_DECOHERENCE seen */
	_Atomic uint64_t acked_ns;	/* when the last acknowledgement was sent */
	struct odpemu_mr *_Atomic last_mr;
	_Atomic int early_restore;	/* odpemu_restore_mr before acknowledging */
	pthread_t t;
};

static void *hold_loop(void *arg)
{
	struct holder *h = arg;

	while (!atomic_load(&h->stop)) {
		struct odpemu_async_event ev;
		fd_set rd;
		struct timeval tv = { 0, 20000 };

		FD_ZERO(&rd);
		FD_SET(h->ctx->async_fd, &rd);
		if (select(h->ctx->async_fd + 1, &rd, NULL, NULL, &tv) != 1)
			continue;
		if (odpemu_get_async_event(h->ctx, &ev))
			continue;
		if (ev.event_type == ODPEMU_EVENT_MR_DECOHERENCE) {
			atomic_store(&h->last_mr, ev.element.mr);
			atomic_fetch_add(&h->events, 1);
			atomic_store(&h->early_restore, odpemu_restore_mr(ev.element.mr));
			if (h->delay_ms < 0)
				while (!atomic_load(&h->stop))
					usleep(5000);
			else if (h->delay_ms)
				usleep((useconds_t)h->delay_ms * 1000);
		}
		atomic_store(&h->acked_ns, now_ns());
		odpemu_ack_async_event(&ev);
	}
	return NULL;
}

static bool holder_start(struct holder *h, struct odpemu_context *ctx, int delay_ms)
{
	memset(h, 0, sizeof(*h));
	h->ctx = ctx;
	h->delay_ms = delay_ms;
	return pthread_create(&h->t, NULL, hold_loop, h) == 0;
}

static void holder_stop(struct holder *h)
{
	atomic_store(&h->stop, true);
	pthread_join(h->t, NULL);
}

/* ---- verbs helpers ---- */

static bool post_send(struct odpemu_qp *qp, enum odpemu_wr_opcode op, struct odpemu_sge *sge,
		      uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t id)
{
	struct odpemu_send_wr wr = { .wr_id = id, .opcode = op, .num_sge = sge ? 1 : 0,
				     .sg_list = sge, .send_flags = ODPEMU_SEND_SIGNALED,
				     .imm_data = imm }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return odpemu_post_send(qp, &wr, &bad) == 0;
}

static bool post_recv(struct odpemu_qp *qp, struct odpemu_sge *sge, uint64_t id)
{
	struct odpemu_recv_wr wr = { .wr_id = id, .sg_list = sge, .num_sge = sge ? 1 : 0 },
			      *bad;

	return odpemu_post_recv(qp, &wr, &bad) == 0;
}

static struct odpemu_mr *reg_lease(struct odpemu_pd *pd, void *buf, size_t len)
{
	return odpemu_reg_mr(pd, buf, len, ODPEMU_ACCESS_LEASE | ODPEMU_ACCESS_LOCAL_WRITE |
			     ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ);
}

static uint8_t *map_fresh(uint8_t *at, int fill)
{
	void *p = mmap(at, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, fill, LEN);
	return p;
}

static unsigned long long ctr(struct odpemu_context *ctx, const char *name)
{
	return h_counter(ctx, ODPEMU_COUNTERS_DEVICE, 0, name);
}

/* ---- the cases ---- */

static void case_ack(struct h_pair *p, struct h_mem *peer)
{
	struct odpemu_context *ctx = p->s[0].ctx;
	uint8_t *buf = map_fresh(NULL, 'A');
	struct odpemu_mr *mr = buf ? reg_lease(p->s[0].pd, buf, LEN) : NULL;
	struct odpemu_sge rsge = { (uintptr_t)peer->buf, LEN, peer->mr->lkey };
	struct odpemu_sge osge;
	struct odpemu_wc wc;
	struct holder h;
	uint32_t lkey, rkey;
	uint64_t t0, t1;

	T_CHECK(mr != NULL, "reg_mr with a lease: %m (%s)", odpemu_last_error(ctx));
	if (!mr || !holder_start(&h, ctx, 150))
		return;
	lkey = mr->lkey;
	rkey = mr->rkey;
	t0 = now_ns();
	T_EQ(munmap(buf, LEN), 0, "munmap of the leased buffer");
	t1 = now_ns();
	T_EQ(atomic_load(&h.events), 1, "one MR_DECOHERENCE");
	T_CHECK(atomic_load(&h.last_mr) == mr, "the event names the MR");
	T_EQ(atomic_load(&h.early_restore), EBUSY, "restore while the change waits");
	T_CHECK(t1 - t0 >= 150000000ull, "munmap waited for the ack (%.1f ms)", (t1 - t0) / 1e6);
	T_CHECK(atomic_load(&h.acked_ns) && t1 >= atomic_load(&h.acked_ns),
		"munmap returned after the acknowledgement");
	printf("ack: munmap took %.1f ms with a 150 ms holder\n", (t1 - t0) / 1e6);
	T_EQ(ctr(ctx, "lease_breaks"), 1, "lease_breaks");
	T_EQ(ctr(ctx, "lease_acks"), 1, "lease_acks");

	/* broken: the peer's READ of it and our SEND from it wait */
	memset(peer->buf, '?', LEN);
	T_CHECK(post_send(p->s[1].qp, ODPEMU_WR_RDMA_READ, &rsge, (uintptr_t)buf, rkey, 0, 7),
		"peer READ posted");
	T_CHECK(post_recv(p->s[1].qp, &rsge, 8), "peer receive posted");
	osge = (struct odpemu_sge){ (uintptr_t)buf, LEN, lkey };
	T_CHECK(post_send(p->s[0].qp, ODPEMU_WR_SEND, &osge, 0, 0, 0, 9), "our SEND posted");
	T_EQ(h_poll(p->s[1].cq, &wc, 1, 300), 0, "no completion at the peer while broken");
	T_EQ(h_poll(p->s[0].cq, &wc, 1, 10), 0, "our SEND waits while broken");
	T_CHECK(memchr(peer->buf, 'A', LEN) == NULL, "nothing of the old pages arrived");

	/* the new pages, restored in place */
	T_CHECK(map_fresh(buf, 'B') == buf, "the buffer mapped again at its address");
	T_CHECK(odpemu_restore_mr(mr) == 0, "restore_mr: %m (%s)", odpemu_last_error(ctx));
	T_CHECK(mr->lkey == lkey && mr->rkey == rkey, "restore keeps lkey and rkey");
	T_EQ(ctr(ctx, "lease_restores"), 1, "lease_restores");
	T_EQ(h_poll(p->s[0].cq, &wc, 1, 5000), 1, "our SEND completes after the restore");
	T_CHECK(wc.status == ODPEMU_WC_SUCCESS, "our SEND: %s", odpemu_wc_status_str(wc.status));
	for (int n = 0; n < 2; n++) {
		T_CHECK(h_poll(p->s[1].cq, &wc, 1, 5000) == 1, "the peer's completion %d", n);
		T_CHECK(wc.status == ODPEMU_WC_SUCCESS, "peer %s: %s",
		     wc.wr_id == 7 ? "READ" : "receive", odpemu_wc_status_str(wc.status));
	}
	for (size_t i = 0; i < LEN; i++)
		if (peer->buf[i] != 'B') {
			T_CHECK(0, "byte %zu at the peer is '%c', not the new pages' 'B'", i,
				peer->buf[i]);
			break;
		}
	T_EQ(odpemu_restore_mr(mr), EINVAL, "restore of a coherent lease");
	holder_stop(&h);
	T_EQ(odpemu_dereg_mr(mr), 0, "dereg");
	munmap(buf, LEN);
}

static void case_in_flight(struct h_pair *p, struct h_mem *peer)
{
	struct odpemu_context *ctx = p->s[0].ctx;
	size_t len = IMM_MSGS * 8;
	int fd = memfd_create("lease-in-flight", 0);
	uint8_t *buf;
	struct odpemu_mr *mr;
	struct holder h;
	unsigned *seen = calloc(IMM_MSGS, sizeof(*seen)), posted = 0, done = 0, recvd = 0;
	unsigned restores = 0, bad = 0, next_break = 200, idle = 0;
	uint64_t *src = (uint64_t *)peer->buf;

	len = (len + 4095) & ~(size_t)4095;
	if (fd < 0 || ftruncate(fd, (off_t)len) || !seen) {
		T_CHECK(0, "memfd: %m");
		return;
	}
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	mr = buf != MAP_FAILED ? reg_lease(p->s[0].pd, buf, len) : NULL;
	T_CHECK(mr != NULL, "leased memfd MR: %m");
	if (!mr || !holder_start(&h, ctx, 0))
		return;
	for (unsigned k = 0; k < IMM_MSGS; k++)
		src[k] = k + 1;		/* the peer's source words (LEN bytes hold 2,048) */
	while ((done < IMM_MSGS || recvd < done) && bad < 10) {
		struct odpemu_wc wc[64];
		int n;

		/* keep a window of messages in flight, with their receives */
		while (posted < IMM_MSGS && posted - done < IMM_BATCH && posted - recvd < IMM_BATCH) {
			struct odpemu_sge s = { (uintptr_t)&src[posted], 8, peer->mr->lkey };

			if (!post_recv(p->s[0].qp, NULL, posted) ||
			    !post_send(p->s[1].qp, ODPEMU_WR_RDMA_WRITE_WITH_IMM, &s,
				       (uintptr_t)buf + posted * 8ull, mr->rkey, posted, posted)) {
				bad++;
				break;
			}
			posted++;
		}
		/* every 200 messages, the mapping changes under the traffic and comes back */
		if (posted >= next_break && posted < IMM_MSGS) {
			void *again = mmap(buf, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
					   fd, 0);

			T_CHECK(again == buf, "re-map over the leased range: %m");
			T_CHECK(odpemu_restore_mr(mr) == 0, "restore %u: %m (%s)", restores,
				odpemu_last_error(ctx));
			restores++;
			next_break += 200;
		}
		n = h_poll(p->s[1].cq, wc, 64, done < posted ? 5000 : 0);
		if (n < 0 || (n == 0 && done < posted)) {
			T_CHECK(0, "the peer's completions stopped at %u of %u", done, posted);
			break;
		}
		for (int i = 0; i < n; i++, done++) {
			if (wc[i].status != ODPEMU_WC_SUCCESS) {
				T_CHECK(0, "WRITE_WITH_IMM %llu: %s", (unsigned long long)wc[i].wr_id,
					odpemu_wc_status_str(wc[i].status));
				bad++;
			}
		}
		n = h_poll(p->s[0].cq, wc, 64, 0);
		for (int i = 0; i < n; i++, recvd++) {
			if (wc[i].status != ODPEMU_WC_SUCCESS ||
			    wc[i].opcode != ODPEMU_WC_RECV_RDMA_WITH_IMM ||
			    wc[i].imm_data >= IMM_MSGS) {
				T_CHECK(0, "receive %u: %s", recvd, odpemu_wc_status_str(wc[i].status));
				bad++;
				continue;
			}
			seen[wc[i].imm_data]++;
		}
		if (done == IMM_MSGS && recvd < done && !n && ++idle > 500)
			break;	/* 500 empty polls after the last WRITE: receives lost */
		if (n)
			idle = 0;
	}
	T_EQ(recvd, IMM_MSGS, "one receive completion per message");
	for (unsigned k = 0; k < IMM_MSGS; k++) {
		if (seen[k] != 1 || ((uint64_t *)buf)[k] != k + 1) {
			T_CHECK(0, "message %u: %u receive completions, slot holds %llu", k, seen[k],
				(unsigned long long)((uint64_t *)buf)[k]);
			break;
		}
	}
	T_EQ(restores, IMM_MSGS / 200 - 1, "restores under traffic");
	printf("in flight: %u WRITE_WITH_IMM, %u breaks and restores, every message once\n",
	       IMM_MSGS, restores);
	holder_stop(&h);
	odpemu_dereg_mr(mr);
	munmap(buf, len);
	close(fd);
	free(seen);
}

/* Another connected RC QP pair on p's PDs and CQs. */
static bool second_pair(struct h_pair *p, struct h_side *a, struct h_side *b)
{
	struct odpemu_qp_init_attr init = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = ODPEMU_QPT_RC,
	};
	struct h_qp_opts o;

	h_qp_opts_default(&o);
	*a = p->s[0];
	*b = p->s[1];
	init.send_cq = init.recv_cq = a->cq;
	a->qp = odpemu_create_qp(a->pd, &init);
	init.send_cq = init.recv_cq = b->cq;
	b->qp = odpemu_create_qp(b->pd, &init);
	return a->qp && b->qp && !h_side_connect(a, b->qp->qp_num, &b->gid, &o) &&
	       !h_side_connect(b, a->qp->qp_num, &a->gid, &o);
}

/* The completion of wr_id on cq, past the flushes of other QPs. */
static bool wc_of(struct odpemu_cq *cq, uint64_t wr_id, struct odpemu_wc *wc)
{
	for (int n = 0; n < 1000; n++) {
		if (h_poll(cq, wc, 1, 5000) != 1)
			return false;
		if (wc->wr_id == wr_id)
			return true;
	}
	return false;
}

static void case_timeout(struct h_pair *p, struct h_mem *peer)
{
	struct odpemu_context *ctx = p->s[0].ctx;
	uint8_t *buf = map_fresh(NULL, 'C');
	struct odpemu_mr *mr = buf ? reg_lease(p->s[0].pd, buf, LEN) : NULL;
	unsigned long long revoked = ctr(ctx, "lease_revocations");
	struct h_side a, b;
	struct odpemu_sge s;
	struct odpemu_wc wc;
	struct holder h;
	uint64_t t0, t1;

	T_CHECK(mr != NULL, "reg_mr with a lease: %m");
	if (!mr || !holder_start(&h, ctx, -1))
		return;
	t0 = now_ns();
	T_EQ(munmap(buf, LEN), 0, "munmap of the leased buffer");
	t1 = now_ns();
	printf("timeout: munmap took %.1f ms (lease timeout %d ms)\n", (t1 - t0) / 1e6,
	       TIMEOUT_MS);
	T_CHECK(t1 - t0 >= (TIMEOUT_MS - 20) * 1000000ull, "munmap waited out the timeout "
		"(%.1f ms)", (t1 - t0) / 1e6);
	T_EQ(ctr(ctx, "lease_revocations"), revoked + 1, "lease_revocations");
	T_CHECK(map_fresh(buf, 'D') == buf, "mapped again");
	T_EQ(odpemu_restore_mr(mr), EACCES, "restore of a revoked MR");
	s = (struct odpemu_sge){ (uintptr_t)peer->buf, 64, peer->mr->lkey };
	T_CHECK(post_send(p->s[1].qp, ODPEMU_WR_RDMA_WRITE, &s, (uintptr_t)buf, mr->rkey, 0, 2),
		"peer WRITE posted");
	T_EQ(h_poll(p->s[1].cq, &wc, 1, 5000), 1, "peer WRITE completes");
	T_CHECK(wc.status == ODPEMU_WC_REM_ACCESS_ERR, "WRITE to a revoked MR: %s",
		odpemu_wc_status_str(wc.status));
	/* the NAK put both QPs in error: a new pair on the same PDs and CQs */
	s = (struct odpemu_sge){ (uintptr_t)buf, 64, mr->lkey };
	T_CHECK(second_pair(p, &a, &b), "a second QP pair");
	T_CHECK(post_send(a.qp, ODPEMU_WR_SEND, &s, 0, 0, 0, 1), "SEND posted");
	T_CHECK(wc_of(a.cq, 1, &wc), "SEND completes");
	T_CHECK(wc.status == ODPEMU_WC_LOC_PROT_ERR, "SEND from a revoked MR: %s",
		odpemu_wc_status_str(wc.status));
	odpemu_destroy_qp(a.qp);
	odpemu_destroy_qp(b.qp);
	holder_stop(&h);	/* acknowledges the event it kept */
	T_EQ(odpemu_dereg_mr(mr), 0, "dereg of a revoked MR");
	munmap(buf, LEN);
}

/* A process that dies while its munmap waits on its lease. */
static void case_death(struct h_env *e)
{
	struct odpemu_context *ctx = h_open(e, 0);
	unsigned long long revoked = ctx ? ctr(ctx, "lease_revocations") : 0;
	unsigned long long breaks = ctx ? ctr(ctx, "lease_breaks") : 0;
	int status = 0;
	pid_t pid;

	if (!ctx)
		return;
	pid = fork();
	if (pid == 0) {
		struct odpemu_context *c = h_open(e, 0);
		struct odpemu_pd *pd = c ? odpemu_alloc_pd(c) : NULL;
		uint8_t *b = map_fresh(NULL, 'E');

		if (!pd || !b || !reg_lease(pd, b, LEN)) {
			fprintf(stderr, "death child: set-up: %m (%s)\n",
				c ? odpemu_last_error(c) : "no device");
			_exit(3);
		}
		munmap(b, LEN);		/* waits: nobody acknowledges */
		_exit(4);
	}
	for (int i = 0; i < 200 && ctr(ctx, "lease_breaks") == breaks; i++)
		usleep(5000);
	T_EQ(ctr(ctx, "lease_breaks"), breaks + 1, "the child's lease broke");
	kill(pid, SIGKILL);
	T_CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status), "the child was killed "
		"while its munmap waited (status %#x)", status);
	usleep(2 * TIMEOUT_MS * 1000);
	T_EQ(ctr(ctx, "lease_revocations"), revoked, "nothing revoked: the session went first");
	T_EQ(ctr(ctx, "mrs"), 0, "the dead process's MR is gone");
	odpemu_close_device(ctx);
}

/* The daemon dies while it holds a munmap for a lease: the library lets the call go. */
static void case_daemon_death(struct h_env *e)
{
	struct odpemu_context *ctx = h_open(e, 0);
	unsigned long long breaks = ctx ? ctr(ctx, "lease_breaks") : 0;
	int status = 0;
	pid_t pid;

	if (!ctx)
		return;
	pid = fork();
	if (pid == 0) {
		struct odpemu_context *c = h_open(e, 0);
		struct odpemu_pd *pd = c ? odpemu_alloc_pd(c) : NULL;
		uint8_t *b = map_fresh(NULL, 'G');

		if (!pd || !b || !reg_lease(pd, b, LEN))
			_exit(3);
		_exit(munmap(b, LEN) == 0 ? 0 : 5);	/* held until the daemon dies */
	}
	for (int i = 0; i < 200 && ctr(ctx, "lease_breaks") == breaks; i++)
		usleep(5000);
	T_EQ(ctr(ctx, "lease_breaks"), breaks + 1, "the child's lease broke");
	odpemu_close_device(ctx);
	h_daemon_stop(e, 0, SIGKILL);
	for (int i = 0; i < 400 && waitpid(pid, &status, WNOHANG) == 0; i++)
		usleep(5000);
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		T_CHECK(0, "the child's munmap still waits 2 s after its daemon died");
		return;
	}
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the held munmap returned 0 "
		"once the daemon died (child status %#x)", status);
}

static void case_misuse(struct h_pair *p)
{
	uint8_t *buf = map_fresh(NULL, 'F');

	errno = 0;
	T_CHECK(!odpemu_reg_mr(p->s[0].pd, buf, LEN, ODPEMU_ACCESS_LEASE | ODPEMU_ACCESS_ON_DEMAND |
			       ODPEMU_ACCESS_LOCAL_WRITE) && errno == EINVAL,
		"a lease on an ODP MR: EINVAL (%m)");
	T_EQ(odpemu_restore_mr(NULL), EINVAL, "restore NULL");
	munmap(buf, LEN);
}

/* One listener per process: a lease on a device whose daemon does not hold it is EXDEV. */
static void case_other_device(struct h_pair *p)
{
	uint8_t *buf = map_fresh(NULL, 'X');

	errno = 0;
	T_CHECK(!odpemu_reg_mr(p->s[1].pd, buf, LEN, ODPEMU_ACCESS_LEASE |
			       ODPEMU_ACCESS_LOCAL_WRITE) && errno == EXDEV,
		"a lease on the other device: EXDEV (%m)");
	munmap(buf, LEN);
}

static void cases(struct h_env *e)
{
	struct h_pair p = { .s = { { .ctx = h_open(e, 0) }, { .ctx = h_open(e, 1) } } };
	struct h_mem peer = { 0 };
	struct h_qp_opts o;

	h_qp_opts_default(&o);
	if (!p.s[0].ctx || !p.s[1].ctx || h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	/* First: device 0's daemon takes the process's one seccomp listener (its first lease,
	 * or, without a userfaultfd, its first MR: docs/emu.md "Without a userfaultfd"). */
	case_misuse(&p);
	case_other_device(&p);
	peer.buf = aligned_alloc(4096, LEN * 2);
	peer.mr = peer.buf ? odpemu_reg_mr(p.s[1].pd, peer.buf, LEN * 2,
					   ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
					   ODPEMU_ACCESS_REMOTE_READ) : NULL;
	T_CHECK(peer.mr != NULL, "the peer's MR: %m");
	if (!peer.mr)
		return;
	case_ack(&p, &peer);
	case_in_flight(&p, &peer);
	case_timeout(&p, &peer);	/* last: both QPs end in error */
	odpemu_dereg_mr(peer.mr);
	h_pair_down(&p);
}

static void body(struct h_env *e)
{
	h_checks_in_child(e, cases, "the lease cases");
	/* from here: a fork child of a watching process cannot have a listener of its own */
	case_death(e);
	case_daemon_death(e);	/* last: host 0's daemon is gone */
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "e2e-lease", .watchdog_s = 300,
		.daemon_args = { owner_args, NULL }, .open = H_OPEN_NONE, .body = body };

	return h_main(argc, argv, &t);
}
