/* SPDX-License-Identifier: MIT */
/*
 * The registration-cache bug of COHERENCE.md, end to end, with the reference cache
 * (include/odpemu/regcache.h) over real MRs between two daemons: a buffer is found in (or
 * added to) the cache, message i goes through it — RDMA WRITE or SEND of its bytes to
 * the peer, or an RDMA READ of the peer's into it — and it is then freed (munmap) and
 * allocated again at the same address: 10,000 messages per back-end (4,000 WRITEs, 3,000
 * SENDs, 3,000 READs); every message is checked byte for byte where it lands.
 *  - back-end none over pinned MRs: the classic bug — the peer receives an older
 *    message's bytes (asserted: most rounds are stale);
 *  - back-end notify over pinned MRs (the mapping-change notifier's Z words): never stale;
 *  - back-end lease over leased pinned MRs (an event thread marks the entry broken and
 *    acknowledges; the next get restores it in place): never stale, one registration;
 *  - back-end none over ODP MRs: never stale, no invalidation needed.
 * The notifier's seccomp filter stays on the process that installs it, so the rounds run
 * in a child that ends before the harness stops the daemons.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "odpemu/regcache.h"
#include "ops.h"
#include "t.h"

#define LEN (16u * 4096u)

struct sender {
	struct odpemu_pd *pd;
	struct odpemu_context *ctx;
	unsigned access;
	struct odpemu_regcache *cache;		/* lease: the event thread's */
	_Atomic bool stop;
};

static int reg(void *ctx, void *addr, size_t len, void **handle)
{
	struct sender *s = ctx;
	struct odpemu_mr *mr = odpemu_reg_mr(s->pd, addr, len, s->access);

	*handle = mr;
	return mr ? 0 : errno;
}

static void dereg(void *ctx, void *handle)
{
	(void)ctx;
	odpemu_dereg_mr(handle);
}

static int watch(void *ctx, void *addr, size_t len, uint64_t *z, void **w)
{
	struct sender *s = ctx;

	return odpemu_watch_create(s->ctx, addr, len, z, (struct odpemu_watch **)w);
}

static void unwatch(void *ctx, void *w)
{
	(void)ctx;
	odpemu_watch_destroy(w);
}

static int restore(void *ctx, void *handle)
{
	(void)ctx;
	return odpemu_restore_mr(handle) ? errno : 0;
}

/* The lease holder: each MR_DECOHERENCE marks the cache's entry, then is acknowledged
 * (regcache.h's order), which lets the munmap that broke the lease run. */
static void *holder(void *arg)
{
	struct sender *s = arg;

	while (!atomic_load(&s->stop)) {
		struct pollfd pf = { .fd = s->ctx->async_fd, .events = POLLIN };
		struct odpemu_async_event ev;

		if (poll(&pf, 1, 20) != 1 || odpemu_get_async_event(s->ctx, &ev))
			continue;
		if (ev.event_type == ODPEMU_EVENT_MR_DECOHERENCE)
			odpemu_regcache_decoherent(s->cache, ev.element.mr);
		odpemu_ack_async_event(&ev);
	}
	return NULL;
}

/* A fresh mapping at `at` (NULL: anywhere): what free() and the next malloc() of the same
 * size do to a large buffer. */
static uint8_t *remap(uint8_t *at)
{
	void *p;

	if (at)
		munmap(at, LEN);
	p = mmap(at, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		 (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* A SEND's receive on the peer, posted first, and its completion after. */
static bool recv_posted(struct h_pair *p, struct h_mem *peer)
{
	struct odpemu_sge sge = { (uintptr_t)peer->buf, LEN, peer->mr->lkey };
	struct odpemu_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	return odpemu_post_recv(p->s[1].qp, &wr, &bad) == 0;
}

static bool recv_done(struct h_pair *p)
{
	struct odpemu_wc wc;

	return h_poll(p->s[1].cq, &wc, 1, 5000) == 1 && wc.status == ODPEMU_WC_SUCCESS;
}

/* One message of round i through the cached registration of buf: WRITE and SEND carry
 * buf's bytes to the peer; READ brings the peer's into buf. Whether it arrived stale. */
static bool message(struct h_pair *p, enum odpemu_wr_opcode op, uint8_t *buf,
		    struct odpemu_mr *mr, struct h_mem *peer, unsigned i)
{
	uint8_t *from = op == ODPEMU_WR_RDMA_READ ? peer->buf : buf;
	uint8_t *to = op == ODPEMU_WR_RDMA_READ ? buf : peer->buf;
	struct odpemu_sge sge = { (uintptr_t)buf, LEN, mr->lkey };
	struct odpemu_send_wr wr = { .opcode = op, .num_sge = 1, .sg_list = &sge };

	memset(from, 'a' + (int)(i % 26), LEN);
	memset(to, '?', LEN);
	wr.wr.rdma.remote_addr = (uintptr_t)peer->buf;
	wr.wr.rdma.rkey = peer->mr->rkey;
	if (op == ODPEMU_WR_SEND && !recv_posted(p, peer))
		return true;
	if (!h_run_wr(p, &wr, odpemu_wr_opcode_str(op)) ||
	    (op == ODPEMU_WR_SEND && !recv_done(p)))
		return true;
	return memcmp(to, from, LEN) != 0;
}

/* `rounds` churned messages through the cache; how many arrived stale. */
static unsigned churn(struct h_pair *p, struct odpemu_regcache *cache, struct h_mem *peer,
		      enum odpemu_wr_opcode op, unsigned rounds)
{
	uint8_t *buf = remap(NULL);
	unsigned stale = 0;

	for (unsigned i = 0; buf && i < rounds; i++) {
		struct odpemu_regcache_entry *e = NULL;

		if (odpemu_regcache_get(cache, buf, LEN, &e)) {
			T_CHECK(0, "round %u: regcache_get: %m", i);
			break;
		}
		stale += message(p, op, buf, e->handle, peer, i);
		odpemu_regcache_put(cache, e);
		if (!(buf = remap(buf)))
			T_CHECK(0, "round %u: the buffer's address was taken", i);
	}
	if (buf)
		munmap(buf, LEN);
	return stale;
}

/* Messages per verb: 10,000 per back-end in all, as the issue asks. */
static unsigned rounds_of(enum odpemu_wr_opcode op)
{
	return op == ODPEMU_WR_RDMA_WRITE ? 4000 : 3000;
}

static unsigned scenario(struct h_pair *p, struct h_mem *peer, enum odpemu_wr_opcode op,
			 enum odpemu_regcache_backend backend, bool odp)
{
	bool lease = backend == ODPEMU_REGCACHE_LEASE;
	struct sender s = { p->s[0].pd, p->s[0].ctx, ODPEMU_ACCESS_LOCAL_WRITE |
			    (odp ? ODPEMU_ACCESS_ON_DEMAND : 0) |
			    (lease ? ODPEMU_ACCESS_LEASE : 0) };
	struct odpemu_regcache_ops ops = { .reg = reg, .dereg = dereg, .watch = watch,
					   .unwatch = unwatch, .restore = restore };
	struct odpemu_regcache *cache = odpemu_regcache_create(backend, &ops, &s, 64, 0);
	struct odpemu_regcache_stats st;
	pthread_t t;
	unsigned stale;

	T_CHECK(cache != NULL, "regcache_create: %m");
	s.cache = cache;
	if (!cache || (lease && pthread_create(&t, NULL, holder, &s)))
		return rounds_of(op);
	stale = churn(p, cache, peer, op, rounds_of(op));
	odpemu_regcache_stats(cache, &st);
	printf("%s, back-end %s over %s MRs: %u of %u messages stale; %llu registrations, "
	       "%llu hits, %llu restores, %llu stale drops\n", odpemu_wr_opcode_str(op),
	       odpemu_regcache_backend_str(backend), odp ? "ODP" : lease ? "leased" : "pinned",
	       stale, rounds_of(op), (unsigned long long)st.registrations,
	       (unsigned long long)st.hits, (unsigned long long)st.restores,
	       (unsigned long long)st.stale_drops);
	if (lease)
		T_CHECK(st.registrations <= 2 && st.restores + 2 >= rounds_of(op),
			"lease: restored in place (%llu registrations, %llu restores)",
			(unsigned long long)st.registrations, (unsigned long long)st.restores);
	T_EQ(odpemu_regcache_destroy(cache), 0, "regcache_destroy");
	if (lease) {
		atomic_store(&s.stop, true);
		pthread_join(t, NULL);
	}
	return stale;
}

static void rounds(struct h_env *e)
{
	struct h_pair p = { .s = { { .ctx = h_open(e, 0) }, { .ctx = h_open(e, 1) } } };
	static const enum odpemu_wr_opcode ops[] = { ODPEMU_WR_RDMA_WRITE, ODPEMU_WR_SEND,
						     ODPEMU_WR_RDMA_READ };
	struct h_mem peer = { 0 };
	struct h_qp_opts o;

	h_qp_opts_default(&o);
	if (!p.s[0].ctx || !p.s[1].ctx || h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	peer.buf = aligned_alloc(4096, LEN);
	peer.mr = peer.buf ? odpemu_reg_mr(p.s[1].pd, peer.buf, LEN, ODPEMU_ACCESS_LOCAL_WRITE |
					   ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ) :
			     NULL;
	T_CHECK(peer.mr != NULL, "the peer's MR: %m");
	if (!peer.mr)
		return;
	for (unsigned k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		T_CHECK(scenario(&p, &peer, ops[k], ODPEMU_REGCACHE_NONE, false) >
			rounds_of(ops[k]) / 2,
			"%s, none over pinned MRs: the classic bug did not show",
			odpemu_wr_opcode_str(ops[k]));
		T_CHECK(scenario(&p, &peer, ops[k], ODPEMU_REGCACHE_NOTIFY, false) == 0,
			"%s, notify over pinned MRs: stale messages", odpemu_wr_opcode_str(ops[k]));
		T_CHECK(scenario(&p, &peer, ops[k], ODPEMU_REGCACHE_LEASE, false) == 0,
			"%s, lease over leased MRs: stale messages", odpemu_wr_opcode_str(ops[k]));
		T_CHECK(scenario(&p, &peer, ops[k], ODPEMU_REGCACHE_NONE, true) == 0,
			"%s, none over ODP MRs: stale messages", odpemu_wr_opcode_str(ops[k]));
	}
	odpemu_dereg_mr(peer.mr);
	h_pair_down(&p);
}

static void body(struct h_env *e)
{
	h_checks_in_child(e, rounds, "the rounds");
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "e2e-regcache", .watchdog_s = 600,
		.open = H_OPEN_NONE, .body = body };

	return h_main(argc, argv, &t);
}
