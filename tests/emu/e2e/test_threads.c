/* SPDX-License-Identifier: MIT */
/*
 * libodpemu is thread-safe as libibverbs is: four threads share the two contexts, each
 * drives its own QP pair (WRITE and READ with every byte checked) while also registering
 * and deregistering MRs and allocating PDs, so control requests, ring posts and polls of
 * different threads interleave. Run under ThreadSanitizer in CI.
 */
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "t.h"

#define THREADS 4
#define ROUNDS 100
#define LEN (256u << 10)
#define ALL_ACCESS (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | \
		    ODPEMU_ACCESS_REMOTE_READ)

static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

struct worker {
	struct h_env *e;	/* both devices open (e->ctx), shared by every worker */
	int id;
	unsigned long errors;
	char why[160];
};

static bool op(struct h_pair *p, enum odpemu_wr_opcode opc, struct odpemu_mr *lmr, void *l,
	       struct odpemu_mr *rmr, void *r, uint32_t len)
{
	struct odpemu_sge sge = { (uintptr_t)l, len, lmr->lkey };
	struct odpemu_send_wr wr = { .opcode = opc, .sg_list = &sge, .num_sge = 1,
		.send_flags = ODPEMU_SEND_SIGNALED, .wr.rdma = { (uintptr_t)r, rmr->rkey } }, *bad;
	struct odpemu_wc wc;

	return !odpemu_post_send(p->s[0].qp, &wr, &bad) && h_poll(p->s[0].cq, &wc, 1, 20000) == 1 &&
	       wc.status == ODPEMU_WC_SUCCESS;
}

static void fail(struct worker *w, const char *why)
{
	if (!w->errors++)
		snprintf(w->why, sizeof(w->why), "%s", why);
}

/* Control requests interleaved with the other threads' traffic. */
static void churn(struct worker *w, struct h_pair *p, void *buf)
{
	struct odpemu_context *ctx = w->e->ctx[w->id & 1];
	struct odpemu_pd *pd = odpemu_alloc_pd(ctx);
	struct odpemu_mr *mr = odpemu_reg_mr(p->s[1].pd, buf, 4096,
					     ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);

	if (!pd || !mr) {
		char msg[150];

		snprintf(msg, sizeof(msg), "%s under concurrency: %s (%.80s)", !pd ? "alloc_pd" :
			 "reg_mr", strerror(errno), odpemu_last_error(ctx));
		fail(w, msg);
	}
	if (mr && odpemu_dereg_mr(mr))
		fail(w, "dereg_mr under concurrency");
	if (pd && odpemu_dealloc_pd(pd))
		fail(w, "dealloc_pd under concurrency");
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct h_pair p = { .s = { { .ctx = w->e->ctx[0] }, { .ctx = w->e->ctx[1] } } };
	struct h_qp_opts o;
	uint8_t *l = mmap(NULL, 2 * LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *r = l + LEN;
	struct odpemu_mr *lmr, *rmr;
	struct t_rng rng = { (uint64_t)w->id + 1 };

	h_qp_opts_default(&o);
	pthread_mutex_lock(&setup_lock);	/* h_pair_up's h_open is not for threads */
	if (h_pair_up(w->e, &p, &o))
		fail(w, "pair up");
	pthread_mutex_unlock(&setup_lock);
	lmr = odpemu_reg_mr(p.s[0].pd, l, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	rmr = odpemu_reg_mr(p.s[1].pd, r, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	if (w->errors || !lmr || !rmr) {
		fail(w, "reg_mr");
		return NULL;
	}
	for (int i = 0; i < ROUNDS && !w->errors; i++) {
		uint32_t len = 1 + (uint32_t)t_below(&rng, 65536), off = (uint32_t)t_below(&rng, LEN - len);

		t_fill(&rng, l + off, len);
		if (!op(&p, ODPEMU_WR_RDMA_WRITE, lmr, l + off, rmr, r + off, len) ||
		    memcmp(l + off, r + off, len))
			fail(w, "WRITE lost or wrong");
		t_fill(&rng, r + off, len);
		if (!op(&p, ODPEMU_WR_RDMA_READ, lmr, l + off, rmr, r + off, len) ||
		    memcmp(l + off, r + off, len))
			fail(w, "READ lost or wrong");
		if (i % 10 == 0)
			churn(w, &p, r);
	}
	odpemu_dereg_mr(lmr);
	odpemu_dereg_mr(rmr);
	h_pair_down(&p);
	munmap(l, 2 * LEN);
	return NULL;
}

static void threads(struct h_env *e)
{
	struct worker w[THREADS];
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .e = e, .id = i };
		T_CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0, "pthread_create");
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		T_CHECK(w[i].errors == 0, "thread %d: %lu errors, first: %s", i, w[i].errors, w[i].why);
	}
	T_EQ(h_counter(e->ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "qps"), 0, "QPs left");
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "emu-threads", .watchdog_s = 300,
		.open = H_OPEN_BOTH, .body = threads };

	return h_main(argc, argv, &t);
}
