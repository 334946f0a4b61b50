/* SPDX-License-Identifier: MIT */
/*
 * nic-bench: figures of the NIC model on one core, NIC a -> NIC b over the in-memory wire of
 * tests/nic/pair.h (every packet is built, ICRC-sealed, copied onto the wire, verified,
 * parsed and executed: the whole software path, no sockets). Prints, never fails.
 *   - message rate of 64 B RDMA WRITE (PMTU 1024, the pair's default);
 *   - goodput of 64 KiB RDMA WRITE and READ, one 64 KiB buffer on each side (PMTU 4096),
 *     against memcpy of 64 KiB between two buffers (hot, like the NIC's);
 *   - 64 KiB WRITEs over a 16 MiB ON_DEMAND MR: warm, then cold with fault-around off
 *     (4 KiB) and on (64 KiB, the default), against warm.
 * How: WRs are posted until the send queue is full (SQ_DEPTH), in lists of SIGNAL_EVERY
 * under one doorbell with the last signaled (a completion frees SIGNAL_EVERY slots, as
 * ib_write_bw's --post_list and cq_mod), then the wire runs until
 * quiet and the CQ is polled, until n WRs completed; a run is the wall time
 * (CLOCK_MONOTONIC) of that loop. Cold: nic_host_invalidate() drops the whole 16 MiB
 * before each run (not timed), and a run writes every 64 KiB of it once. The pair's fault
 * handler answers at once (latency 0): before the next packet is delivered (eager_faults),
 * or, in the last ODP line, only once the wire is empty.
 * Runs are short (a few ms) and interleaved round by round, every figure once per round, so
 * a busy neighbour on this shared 2-vCPU machine weighs on all figures alike and the ratios
 * hold; each figure is the median of `reps` rounds.
 * Usage: nic-bench [reps [rate|big|odp]] (default 31 rounds; the group runs alone, for perf).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pair.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define SQ_DEPTH 256u
#define SIGNAL_EVERY 16u	/* divides SQ_DEPTH and every message count below */
#define BIG (64 * KiB)
#define ODP_REGION (16 * MiB)
#define LOCAL_RW (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | \
		  ODPEMU_ACCESS_REMOTE_READ)
#define MAX_REPS 64

static unsigned reps = 31;
static const char *running = "";	/* the figure being measured, for error messages */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return v[n / 2];
}

static void *buffer(uint64_t len)
{
	void *b = aligned_alloc(BIG, len);	/* a 64 KiB WRITE fills one fault-around window */

	if (!b) {
		fprintf(stderr, "nic-bench: out of memory (%" PRIu64 " bytes)\n", len);
		exit(1);
	}
	memset(b, 0x5a, len);	/* touch every page: no host page fault is timed */
	return b;
}

/* ---- the rig: a pair, a 64 KiB source MR on a and a target MR on b ---- */

struct rig {
	struct pair *p;
	uint8_t *src, *dst;
	uint64_t dst_len;
	struct nic_mr *msrc, *mdst;
};

static struct rig *rig_new(enum odpemu_mtu mtu, uint64_t fault_around, uint64_t dst_len,
			   unsigned dst_access, bool eager_faults)
{
	struct pair_qp_opts o = { .policy = NIC_FAULT_STALL, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .min_rnr_timer = 1, .access = ODPEMU_ACCESS_REMOTE_WRITE |
		ODPEMU_ACCESS_REMOTE_READ, .mtu = mtu, .max_send_wr = SQ_DEPTH,
		.fault_around = fault_around };
	struct rig *r = calloc(1, sizeof(*r));

	if (!r)
		exit(1);
	r->p = pair_new(&o);
	r->p->eager_faults = eager_faults;
	r->src = buffer(BIG);
	r->dst = buffer(dst_len);
	r->dst_len = dst_len;
	r->msrc = pair_mr(r->p, 0, r->src, BIG, LOCAL_RW);
	r->mdst = pair_mr(r->p, 1, r->dst, dst_len, dst_access);
	return r;
}

static void rig_free(struct rig *r)
{
	nic_mr_dereg(r->msrc);
	nic_mr_dereg(r->mdst);
	pair_free(r->p);
	free(r->src);
	free(r->dst);
	free(r);
}

/* ---- one run: n messages of len bytes, the k-th at dst + (k * stride) % dst_len ---- */

struct stream {
	enum odpemu_wr_opcode op;
	uint32_t len;
	uint64_t stride;	/* 0: every message at the same target */
	unsigned n;		/* a multiple of SIGNAL_EVERY */
};

/* WRs k .. k+SIGNAL_EVERY-1 under one doorbell (as ib_write_bw --post_list), the last
 * signaled: the list's messages share one AckReq, so one ACK answers the list. */
static void post_list(struct rig *r, const struct stream *s, unsigned k)
{
	struct nic_sge sge = { (uint64_t)(uintptr_t)r->src, s->len, nic_mr_lkey(r->msrc) };
	struct nic_send_wr wr[SIGNAL_EVERY];
	unsigned posted;
	int rc;

	for (unsigned i = 0; i < SIGNAL_EVERY; i++)
		wr[i] = (struct nic_send_wr){ .wr_id = k + i, .opcode = s->op, .sg_list = &sge,
			.num_sge = 1, .rkey = nic_mr_rkey(r->mdst),
			.remote_addr = (uint64_t)(uintptr_t)r->dst +
				       ((k + i) * s->stride) % r->dst_len };
	wr[SIGNAL_EVERY - 1].send_flags = ODPEMU_SEND_SIGNALED;
	rc = pair_post_send_list(r->p, 0, wr, SIGNAL_EVERY, &posted);
	if (rc) {
		fprintf(stderr, "nic-bench: %s: post_send of WR %u failed: %d\n", running,
			k + posted, rc);
		exit(1);
	}
}

/* WRs known complete: SIGNAL_EVERY per signaled completion (the ones before it retired
 * in order). An error completion ends the bench: the figure would mean nothing. */
static unsigned reap(struct rig *r)
{
	struct nic_wc wc;
	unsigned done = 0;

	while (pair_poll(r->p, 0, true, &wc)) {
		if (wc.status != ODPEMU_WC_SUCCESS) {
			fprintf(stderr, "nic-bench: %s: WR %" PRIu64 " completed with status %d "
				"(%s)\n", running, wc.wr_id, (int)wc.status,
				nic_vendor_err_str(wc.vendor_err));
			exit(1);
		}
		done += SIGNAL_EVERY;
	}
	return done;
}

/* Nothing completed after the wire went quiet: let virtual time jump to the next timer (a
 * lost packet waits for the ACK timeout). If no timer is armed and nothing moves, the NIC
 * holds WRs it will never send or complete: say so rather than spin. */
static void unstick(struct rig *r, unsigned posted, unsigned done)
{
	uint64_t delivered = r->p->delivered, vt = r->p->now;

	pair_run(r->p, UINT64_C(1) << 40);
	if (r->p->delivered == delivered && r->p->now == vt) {
		fprintf(stderr, "nic-bench: %s: stuck: %u WRs posted, %u completed, the wire is "
			"quiet and no timer is armed\n", running, posted, done);
		exit(1);
	}
}

/* Wall ns of one run. */
static uint64_t run_stream(struct rig *r, const struct stream *s)
{
	unsigned posted = 0, done = 0;
	uint64_t t0 = now_ns();

	while (done < s->n) {
		unsigned got;

		for (; posted < s->n && posted - done < SQ_DEPTH; posted += SIGNAL_EVERY)
			post_list(r, s, posted);
		pair_run(r->p, 0);
		got = reap(r);
		if (!got)
			unstick(r, posted, done);
		done += got;
	}
	return now_ns() - t0;
}

static void keep(const void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* GB/s of one batch of 64 KiB memcpys back and forth between a and b. */
static double memcpy_run(uint8_t *a, uint8_t *b)
{
	enum { N = 2000 };
	uint64_t t0 = now_ns();

	for (unsigned k = 0; k < N; k++) {
		memcpy(k & 1 ? a : b, k & 1 ? b : a, BIG);
		keep(a);
	}
	return (double)N * BIG / (double)(now_ns() - t0);
}

/* ---- figures ---- */

enum fig_kind { RATE, GOODPUT, MEMCPY };

/* The NIC pair and buffers a figure runs on. */
struct rig_spec {
	enum odpemu_mtu mtu;
	uint64_t fault_around;	/* 0: default (64 KiB) */
	uint64_t dst_len;
	unsigned dst_access;
	bool eager_faults;
};

struct fig {
	const char *group, *label, *goal;
	enum fig_kind kind;
	struct rig_spec spec;
	int share;		/* index of an earlier figure whose rig this one uses; -1 own */
	struct stream s;
	bool cold;		/* invalidate the target MR before each run */
	int ref;		/* index of the figure this one is a percentage of; -1 none */
	struct rig *r;		/* MEMCPY: src and dst are the two buffers */
	double v[MAX_REPS];
	struct nic_qp_counters q0, b0;	/* a's and b's QP counters after the warm-up */
	struct iopt_counters i0;	/* b's target MR */
};

#define ODP_ACC (LOCAL_RW | ODPEMU_ACCESS_ON_DEMAND)
#define RATE_RIG { ODPEMU_MTU_1024, 0, BIG, LOCAL_RW, true }
#define BIG_RIG { ODPEMU_MTU_4096, 0, BIG, LOCAL_RW, true }
#define ODP_RIG(acc, fa, eager) { ODPEMU_MTU_4096, fa, ODP_REGION, acc, eager }
#define ODP_STREAM { ODPEMU_WR_RDMA_WRITE, (uint32_t)BIG, BIG, (unsigned)(ODP_REGION / BIG) }

/* In print order; the indexes in share and ref point into this table. */
static struct fig figs[] = {
	{ "rate", "RDMA WRITE 64 B, PMTU 1024", "[>= 3 M/s]", RATE, RATE_RIG, -1,
	  { ODPEMU_WR_RDMA_WRITE, 64, 0, 8192 }, false, -1 },
	{ "big", "memcpy 64 KiB (hot)", "", MEMCPY, { 0 }, -1, { 0 }, false, -1 },
	{ "big", "RDMA WRITE 64 KiB, PMTU 4096", "[>= 50%]", GOODPUT, BIG_RIG, -1,
	  { ODPEMU_WR_RDMA_WRITE, (uint32_t)BIG, 0, 512 }, false, 1 },
	{ "big", "RDMA READ 64 KiB, PMTU 4096", "", GOODPUT, BIG_RIG, 2,
	  { ODPEMU_WR_RDMA_READ, (uint32_t)BIG, 0, 512 }, false, 1 },
	{ "odp", "RDMA WRITE 64 KiB, pinned, 16 MiB", "", GOODPUT, ODP_RIG(LOCAL_RW, 0, true),
	  -1, ODP_STREAM, false, -1 },
	{ "odp", "RDMA WRITE 64 KiB, ODP warm", "", GOODPUT, ODP_RIG(ODP_ACC, 0, true), -1,
	  ODP_STREAM, false, -1 },
	{ "odp", "RDMA WRITE 64 KiB, ODP cold, FA off", "", GOODPUT,
	  ODP_RIG(ODP_ACC, 4096, true), -1, ODP_STREAM, true, 5 },
	{ "odp", "RDMA WRITE 64 KiB, ODP cold, FA 64 KiB", "[>= 50% of warm]", GOODPUT,
	  ODP_RIG(ODP_ACC, 0, true), -1, ODP_STREAM, true, 5 },
	{ "odp", "  same, fault answered when wire empty", "", GOODPUT,
	  ODP_RIG(ODP_ACC, 0, false), -1, ODP_STREAM, true, 5 },
};
#define NFIGS (sizeof(figs) / sizeof(figs[0]))

static struct rig *memcpy_bufs(void)
{
	struct rig *r = calloc(1, sizeof(*r));

	if (!r)
		exit(1);
	r->src = buffer(BIG);
	r->dst = buffer(BIG);
	return r;
}

static void fig_setup(struct fig *f)
{
	const struct rig_spec *sp = &f->spec;

	if (f->kind == MEMCPY)
		f->r = memcpy_bufs();
	else if (f->share >= 0)
		f->r = figs[f->share].r;
	else
		f->r = rig_new(sp->mtu, sp->fault_around, sp->dst_len, sp->dst_access,
			       sp->eager_faults);
}

static void fig_teardown(struct fig *f)
{
	if (!f->r || f->share >= 0)
		return;
	if (f->kind == MEMCPY) {
		free(f->r->src);
		free(f->r->dst);
		free(f->r);
	} else {
		rig_free(f->r);
	}
}

static double fig_run(struct fig *f)
{
	struct rig *r = f->r;
	double ns;

	running = f->label;
	if (f->kind == MEMCPY)
		return memcpy_run(r->src, r->dst);
	if (f->cold)
		nic_host_invalidate(r->p->s[1].nic, 1, (uint64_t)(uintptr_t)r->dst, r->dst_len);
	ns = (double)run_stream(r, &f->s);
	return f->kind == RATE ? f->s.n * 1e3 / ns : f->s.n * (double)f->s.len / ns;
}

static void fig_warm_up(struct fig *f)
{
	(void)fig_run(f);
	if (f->kind == MEMCPY)
		return;
	nic_qp_counters(f->r->p->s[0].qp, &f->q0);
	nic_qp_counters(f->r->p->s[1].qp, &f->b0);
	iopt_counters_get(nic_mr_iopt(f->r->mdst), &f->i0);
}

/* Cold lines: faults, stall drops and go-back-N rewinds per run, since the warm-up. */
static void print_odp_counters(const struct fig *f)
{
	struct nic_qp_counters q, b;
	struct iopt_counters i;

	nic_qp_counters(f->r->p->s[0].qp, &q);
	nic_qp_counters(f->r->p->s[1].qp, &b);
	iopt_counters_get(nic_mr_iopt(f->r->mdst), &i);
	printf("%-40s faults %.0f, stall drops %.0f, go-back-N %.0f per run\n", "",
	       (double)(i.page_faults - f->i0.page_faults) / reps,
	       (double)(b.stall_drops - f->b0.stall_drops) / reps,
	       (double)(q.retransmits - f->q0.retransmits) / reps);
}

static void print_fig(const struct fig *f, double m, double ref)
{
	char ratio[32] = "";

	if (f->ref >= 0)
		snprintf(ratio, sizeof(ratio), "%3.0f%% of %s", 100 * m / ref,
			 figs[f->ref].kind == MEMCPY ? "memcpy" : "warm");
	printf("%-40s %7.2f %s", f->label, m, f->kind == RATE ? "M/s " : "GB/s");
	if (*f->goal)
		printf("  %-14s %s", ratio, f->goal);
	else if (*ratio)
		printf("  %s", ratio);
	printf("\n");
	if (f->cold)
		print_odp_counters(f);
}

int main(int argc, char **argv)
{
	const char *only = argc > 2 ? argv[2] : NULL;	/* one group alone, for perf */
	double med[NFIGS];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1)
		reps = (unsigned)atoi(argv[1]);
	if (reps < 1 || reps > MAX_REPS)
		reps = 31;
	for (unsigned i = 0; i < NFIGS; i++)
		if (!only || strcmp(only, figs[i].group) == 0) {
			fig_setup(&figs[i]);
			fig_warm_up(&figs[i]);	/* also makes every ODP page present once */
		}
	for (unsigned k = 0; k < reps; k++)
		for (unsigned i = 0; i < NFIGS; i++)
			if (figs[i].r)
				figs[i].v[k] = fig_run(&figs[i]);
	printf("nic-bench: medians of %u interleaved rounds, one core, a -> b on the in-memory "
	       "wire, SQ depth %u, 1 WR in %u signaled; ODP: 256 x 64 KiB over a 16 MiB MR per "
	       "run, cold = nic_host_invalidate of all of it first\n", reps, SQ_DEPTH,
	       SIGNAL_EVERY);
	for (unsigned i = 0; i < NFIGS; i++)
		med[i] = median(figs[i].v, reps);
	for (unsigned i = 0; i < NFIGS; i++)
		if (figs[i].r)
			print_fig(&figs[i], med[i], figs[i].ref >= 0 ? med[figs[i].ref] : 0);
	for (unsigned i = NFIGS; i-- > 0;)	/* sharers first */
		fig_teardown(&figs[i]);
	return 0;
}
