/* SPDX-License-Identifier: MIT */
/*
 * scale — one daemon at the size of a large host: 10,000 RC QPs and 100,000 MRs (half ODP,
 * half pinned small buffers) from 16 client processes, on host 0 of the e2e harness.
 *
 * What it asserts: every object is created, connected and destroyed; WRITEs (4 KiB and
 * 8 B) round-robin over 1,000 QPs at once land byte for byte; `odpemu-ctl stat qp` at
 * 10,000 QPs lists them all in bounded time, and its --pid/--limit filter gives exactly
 * what it asks; the daemon is back to zero objects at the end; a client out of file
 * descriptors gets EMFILE with a message that names RLIMIT_NOFILE; the daemon keeps
 * within 16 KiB per QP (its rings aside) and 1 KiB per idle ODP MR; the median create
 * and destroy latency at the largest size is within 10 times the one at the smallest
 * (O(n) would be 100 to 1,000 times).
 * What it prints (the figures of docs/testing.md "Scale"): create and destroy latency
 * p50/p99 of QPs at 100, 1,000 and 10,000 QPs and of MRs at 100, 1,000, 10,000 and
 * 100,000 MRs (one client alone, creating and destroying one object at a time at that
 * size), and the daemon's resident memory per QP and per idle ODP MR.
 *
 * QPs are connected in loopback on the one daemon: QP k of worker w to QP k of worker
 * w^1. $ODPEMU_SCALE_DIV=N divides every count by N (a quick run while debugging).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "t.h"
#include "tools_run.h"

#define WORKERS		16
#define QPS_MAX		(10000 / WORKERS)	/* per worker, at full size */
#define ODP_MAX		(50000 / WORKERS)
#define PIN_MAX		(50000 / WORKERS)
#define SAMPLES		200			/* create/destroy pairs per measurement */
#define ACTIVE		1000			/* QPs that carry traffic at once */
#define ROUNDS		8			/* traffic rounds */
#define SLOT		8192			/* per traffic QP: 4 KiB WRITE, 8 B WRITE */
#define ACT_MAX		((ACTIVE + WORKERS - 1) / WORKERS)
#define PAGE		4096ul
#define POOL_PAGES	(PIN_MAX + 4 * SAMPLES + 64)	/* pinned buffers, then measurement */
#define ODP_PAGES	(ODP_MAX + 4 * SAMPLES + 64)
#define RW		(ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | \
			 ODPEMU_ACCESS_REMOTE_READ)

/* A sanitizer's allocator pads every block: the memory goals are the real allocator's. */
#if defined(__SANITIZE_ADDRESS__)
#define MEM_CHECKED false
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEM_CHECKED false
#endif
#endif
#ifndef MEM_CHECKED
#define MEM_CHECKED true
#endif

enum op { OP_SETUP = 1, OP_QP_GROW, OP_QP_MEASURE, OP_CONNECT, OP_TRAFFIC, OP_VERIFY,
	OP_MR_GROW, OP_MR_MEASURE, OP_DESTROY_MRS, OP_DESTROY_QPS, OP_NOFILE, OP_EXIT };
enum kind { K_ODP = 0, K_PIN = 1 };

struct cmd {
	uint32_t op, a, b;
};

/* What a worker shares with the test process (one MAP_SHARED page set, made before fork). */
struct wshm {
	int rc;
	char err[256];
	union odpemu_gid gid;
	uint64_t dst_addr;		/* traffic: where the partner writes */
	uint32_t dst_rkey;
	uint32_t nact;			/* traffic QPs of this worker */
	uint32_t qpn[QPS_MAX];
	uint32_t lat[2][2][SAMPLES];	/* [kind][create, destroy] ns */
	uint64_t grow_ns;		/* the last GROW's / DESTROY's wall time */
	int pid;
};

struct shm {
	unsigned div;
	struct wshm w[WORKERS];
};

static struct shm *sh;
static unsigned n_qps, n_odp, n_pin, n_samples;	/* per worker, after $ODPEMU_SCALE_DIV */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- a worker: one client process ---- */

struct worker {
	int idx;
	struct wshm *me;
	struct odpemu_context *ctx;
	struct odpemu_pd *pd;
	struct odpemu_cq *cq;
	struct odpemu_qp **qps;
	unsigned nqps;
	struct odpemu_mr **mrs[2];
	unsigned nmrs[2];
	uint8_t *pool[2];		/* ODP pages, pinned pages: one buffer per MR */
	unsigned next_page[2];
	uint8_t *src, *dst;
	struct odpemu_mr *src_mr, *dst_mr;
};

static int wfail(struct worker *w, const char *what)
{
	int e = errno;

	snprintf(w->me->err, sizeof(w->me->err), "worker %d: %s: %s (%s)", w->idx, what,
		 strerror(e), w->ctx ? odpemu_last_error(w->ctx) : "");
	return e ? e : EIO;
}

static struct odpemu_qp *new_qp(struct worker *w)
{
	struct odpemu_qp_init_attr init = {
		.send_cq = w->cq, .recv_cq = w->cq, .qp_type = ODPEMU_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return odpemu_create_qp(w->pd, &init);
}

static struct odpemu_mr *new_mr(struct worker *w, enum kind k)
{
	uint8_t *p = w->pool[k] + (size_t)w->next_page[k]++ * PAGE;

	if (k == K_ODP)
		return odpemu_reg_mr(w->pd, p, PAGE, RW | ODPEMU_ACCESS_ON_DEMAND);
	return odpemu_reg_mr(w->pd, p, 256, RW);	/* a small buffer, pinned */
}

static int setup(struct worker *w)
{
	struct odpemu_device **list = odpemu_get_device_list(NULL);
	char name[16];

	snprintf(name, sizeof(name), "odpa");
	for (int k = 0; list && list[k] && !w->ctx; k++)
		if (!strcmp(odpemu_get_device_name(list[k]), name))
			w->ctx = odpemu_open_device(list[k]);
	if (list)
		odpemu_free_device_list(list);
	if (!w->ctx)
		return wfail(w, "open odpa");
	w->qps = calloc(n_qps + 1, sizeof(*w->qps));
	w->mrs[K_ODP] = calloc(n_odp + 1, sizeof(void *));
	w->mrs[K_PIN] = calloc(n_pin + 1, sizeof(void *));
	w->pool[K_ODP] = mmap(NULL, ODP_PAGES * PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	w->pool[K_PIN] = mmap(NULL, POOL_PAGES * PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	w->src = h_cold(ACT_MAX * SLOT);
	w->dst = h_cold(ACT_MAX * SLOT);
	if (!w->qps || !w->mrs[0] || !w->mrs[1] || w->pool[0] == MAP_FAILED ||
	    w->pool[1] == MAP_FAILED)
		return wfail(w, "memory");
	if (!(w->pd = odpemu_alloc_pd(w->ctx)))
		return wfail(w, "alloc_pd");
	if (!(w->cq = odpemu_create_cq(w->ctx, 1024, NULL, NULL, 0)))
		return wfail(w, "create_cq");
	if (!(w->src_mr = odpemu_reg_mr(w->pd, w->src, ACT_MAX * SLOT, RW)))
		return wfail(w, "reg_mr src (pinned)");
	if (!(w->dst_mr = odpemu_reg_mr(w->pd, w->dst, ACT_MAX * SLOT,
					RW | ODPEMU_ACCESS_ON_DEMAND)))
		return wfail(w, "reg_mr dst (ODP)");
	if (odpemu_query_gid(w->ctx, 1, 0, &w->me->gid))
		return wfail(w, "query_gid");
	w->me->dst_addr = (uint64_t)(uintptr_t)w->dst;
	w->me->dst_rkey = w->dst_mr->rkey;
	return 0;
}

static int qp_grow(struct worker *w, unsigned target)
{
	uint64_t t0 = now_ns();

	for (; w->nqps < target; w->nqps++) {
		if (!(w->qps[w->nqps] = new_qp(w)))
			return wfail(w, "create_qp");
		w->me->qpn[w->nqps] = w->qps[w->nqps]->qp_num;
	}
	w->me->grow_ns = now_ns() - t0;
	return 0;
}

static int qp_measure(struct worker *w)
{
	for (unsigned i = 0; i < n_samples; i++) {
		uint64_t t0 = now_ns(), t1;
		struct odpemu_qp *qp = new_qp(w);

		t1 = now_ns();
		if (!qp)
			return wfail(w, "create_qp (measured)");
		w->me->lat[0][0][i] = (uint32_t)(t1 - t0);
		if (odpemu_destroy_qp(qp))
			return wfail(w, "destroy_qp (measured)");
		w->me->lat[0][1][i] = (uint32_t)(now_ns() - t1);
	}
	return 0;
}

static int connect_qp(struct worker *w, struct odpemu_qp *qp, uint32_t peer)
{
	struct odpemu_qp_attr a = { .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
		.qp_access_flags = ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ };

	if (odpemu_modify_qp(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT |
			     ODPEMU_QP_ACCESS_FLAGS))
		return wfail(w, "modify INIT");
	a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_RTR, .path_mtu = ODPEMU_MTU_4096,
		.dest_qp_num = peer, .rq_psn = 7, .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = w->me->gid, .hop_limit = 64 } } };
	if (odpemu_modify_qp(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU |
			     ODPEMU_QP_DEST_QPN | ODPEMU_QP_RQ_PSN | ODPEMU_QP_MAX_DEST_RD_ATOMIC |
			     ODPEMU_QP_MIN_RNR_TIMER))
		return wfail(w, "modify RTR");
	a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_RTS, .sq_psn = 7, .timeout = 18,
		.retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	if (odpemu_modify_qp(qp, &a, ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN | ODPEMU_QP_TIMEOUT |
			     ODPEMU_QP_RETRY_CNT | ODPEMU_QP_RNR_RETRY | ODPEMU_QP_MAX_QP_RD_ATOMIC))
		return wfail(w, "modify RTS");
	return 0;
}

/* QP k to the partner's QP k, on the same daemon (the partner connects its k to ours). */
static int connect_all(struct worker *w)
{
	const struct wshm *peer = &sh->w[w->idx ^ 1];

	for (unsigned k = 0; k < w->nqps; k++)
		if (connect_qp(w, w->qps[k], peer->qpn[k]))
			return EIO;
	return 0;
}

/* The bytes QP k of worker `from` writes in round r. */
static void pattern(uint8_t *p, size_t len, unsigned r, unsigned from, unsigned k)
{
	struct t_rng rng = { ((uint64_t)r << 40) ^ ((uint64_t)from << 20) ^ k ^ 0x5ca1e };

	t_fill(&rng, p, len);
}

/* One round: a 4 KiB and an 8 B WRITE on each traffic QP in turn, into the partner's
 * slot k, then every completion. */
static int traffic(struct worker *w, unsigned r)
{
	const struct wshm *peer = &sh->w[w->idx ^ 1];
	struct odpemu_wc wc[64];
	unsigned want = 2 * w->me->nact;
	int got = 0;

	for (unsigned k = 0; k < w->me->nact; k++) {
		uint8_t *s = w->src + (size_t)k * SLOT;
		uint64_t d = peer->dst_addr + (uint64_t)k * SLOT;
		struct odpemu_sge sg[2] = { { (uint64_t)(uintptr_t)s, 4096, w->src_mr->lkey },
			{ (uint64_t)(uintptr_t)s + 4096, 8, w->src_mr->lkey } };
		struct odpemu_send_wr wr[2], *bad;

		pattern(s, 4096 + 8, r, (unsigned)w->idx, k);
		for (int i = 0; i < 2; i++)
			wr[i] = (struct odpemu_send_wr){ .wr_id = k * 2 + i, .sg_list = &sg[i],
				.num_sge = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
				.send_flags = ODPEMU_SEND_SIGNALED, .next = i ? NULL : &wr[1],
				.wr.rdma = { d + 4096 * (uint64_t)i, peer->dst_rkey } };
		if (odpemu_post_send(w->qps[k], wr, &bad))
			return wfail(w, "post_send");
	}
	for (uint64_t end = now_ns() + 60000000000ull; got < (int)want && now_ns() < end; ) {
		int n = h_poll(w->cq, wc, want - got < 64 ? (int)(want - got) : 64, 100);

		for (int i = 0; i < n; i++)
			if (wc[i].status != ODPEMU_WC_SUCCESS) {
				snprintf(w->me->err, sizeof(w->me->err), "worker %d round %u: WR "
					 "%" PRIu64 " on QP %#x: %s", w->idx, r, wc[i].wr_id,
					 wc[i].qp_num, odpemu_wc_status_str(wc[i].status));
				return EIO;
			}
		got += n;
	}
	if (got < (int)want) {
		snprintf(w->me->err, sizeof(w->me->err), "worker %d round %u: %d of %u "
			 "completions in 60 s", w->idx, r, got, want);
		return ETIMEDOUT;
	}
	return 0;
}

/* Round r's bytes from the partner, in each of its traffic slots. */
static int verify(struct worker *w, unsigned r)
{
	unsigned from = (unsigned)w->idx ^ 1;
	uint8_t want[4096 + 8];

	for (unsigned k = 0; k < sh->w[from].nact; k++) {
		pattern(want, sizeof(want), r, from, k);
		if (memcmp(w->dst + (size_t)k * SLOT, want, sizeof(want))) {
			snprintf(w->me->err, sizeof(w->me->err), "worker %d round %u: slot %u "
				 "from worker %u holds other bytes", w->idx, r, k, from);
			return EIO;
		}
	}
	return 0;
}

static int mr_grow(struct worker *w, enum kind k, unsigned target)
{
	uint64_t t0 = now_ns();

	for (; w->nmrs[k] < target; w->nmrs[k]++)
		if (!(w->mrs[k][w->nmrs[k]] = new_mr(w, k)))
			return wfail(w, k == K_ODP ? "reg_mr (ODP)" : "reg_mr (pinned)");
	w->me->grow_ns = now_ns() - t0;
	return 0;
}

static int mr_measure(struct worker *w)
{
	for (unsigned i = 0; i < n_samples; i++)
		for (int k = 0; k < 2; k++) {
			uint64_t t0 = now_ns(), t1;
			struct odpemu_mr *mr = new_mr(w, (enum kind)k);

			t1 = now_ns();
			if (!mr)
				return wfail(w, "reg_mr (measured)");
			w->me->lat[k][0][i] = (uint32_t)(t1 - t0);
			if (odpemu_dereg_mr(mr))
				return wfail(w, "dereg_mr (measured)");
			w->me->lat[k][1][i] = (uint32_t)(now_ns() - t1);
		}
	return 0;
}

static int destroy_mrs(struct worker *w)
{
	uint64_t t0 = now_ns();

	for (int k = 0; k < 2; k++)
		while (w->nmrs[k])
			if (odpemu_dereg_mr(w->mrs[k][--w->nmrs[k]]))
				return wfail(w, "dereg_mr");
	w->me->grow_ns = now_ns() - t0;
	return 0;
}

static int destroy_qps(struct worker *w)
{
	uint64_t t0 = now_ns();

	while (w->nqps)
		if (odpemu_destroy_qp(w->qps[--w->nqps]))
			return wfail(w, "destroy_qp");
	w->me->grow_ns = now_ns() - t0;
	return 0;
}

/* Out of descriptors: a pinned registration of private memory needs a memfd, and the
 * error must say which limit. Run last (the limit stays low). */
static int nofile(struct worker *w)
{
	struct rlimit rl = { 0, 0 };
	int fd = open("/dev/null", O_RDONLY), rc = 0;
	struct odpemu_mr *mr;

	if (fd < 0 || getrlimit(RLIMIT_NOFILE, &rl))
		return wfail(w, "open/getrlimit");
	close(fd);
	rl.rlim_cur = (rlim_t)fd;	/* the lowest free descriptor is the last one allowed */
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return wfail(w, "setrlimit");
	/* a page away from every earlier registration: it needs a memfd of its own */
	mr = odpemu_reg_mr(w->pd, w->pool[K_PIN] + (POOL_PAGES - 2) * PAGE, 64, RW);
	if (mr) {
		snprintf(w->me->err, sizeof(w->me->err), "reg_mr with no descriptor left worked");
		odpemu_dereg_mr(mr);
		rc = EINVAL;
	} else if (errno != EMFILE || !strstr(odpemu_last_error(w->ctx), "RLIMIT_NOFILE")) {
		snprintf(w->me->err, sizeof(w->me->err), "reg_mr with no descriptor left: errno "
			 "%d (%s), want EMFILE naming RLIMIT_NOFILE: '%s'", errno,
			 strerror(errno), odpemu_last_error(w->ctx));
		rc = EINVAL;
	} else {
		snprintf(w->me->err, sizeof(w->me->err), "%s", odpemu_last_error(w->ctx));
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	return rc;
}

static int run_cmd(struct worker *w, const struct cmd *c)
{
	switch (c->op) {
	case OP_SETUP: return setup(w);
	case OP_QP_GROW: return qp_grow(w, c->a);
	case OP_QP_MEASURE: return qp_measure(w);
	case OP_CONNECT: return connect_all(w);
	case OP_TRAFFIC: return traffic(w, c->a);
	case OP_VERIFY: return verify(w, c->a);
	case OP_MR_GROW: return mr_grow(w, (enum kind)c->a, c->b);
	case OP_MR_MEASURE: return mr_measure(w);
	case OP_DESTROY_MRS: return destroy_mrs(w);
	case OP_DESTROY_QPS: return destroy_qps(w);
	case OP_NOFILE: return nofile(w);
	default: return EINVAL;
	}
}

static void __attribute__((noreturn)) worker_main(int idx, int cmd_fd, int rep_fd)
{
	struct worker w = { .idx = idx, .me = &sh->w[idx] };
	struct cmd c;

	signal(SIGTERM, SIG_DFL);	/* the harness's handlers tear the hosts down */
	signal(SIGINT, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	w.me->pid = (int)getpid();
	while (read(cmd_fd, &c, sizeof(c)) == sizeof(c) && c.op != OP_EXIT) {
		int rc;

		w.me->err[0] = 0;
		rc = run_cmd(&w, &c);
		if (write(rep_fd, &rc, sizeof(rc)) != sizeof(rc))
			break;
	}
	if (w.ctx)
		odpemu_close_device(w.ctx);
	_exit(0);	/* not exit: the harness's atexit handler would tear the hosts down */
}

/* ---- the test process ---- */

static struct {
	pid_t pid;
	int cmd, rep;
} wk[WORKERS];
static struct h_env *env;

/* Send c to workers [first, last) and wait for each answer (bounded); 0 or the first
 * worker's error (printed). */
static int each(unsigned first, unsigned last, struct cmd c, int timeout_s)
{
	int bad = 0;

	for (unsigned i = first; i < last; i++)
		if (write(wk[i].cmd, &c, sizeof(c)) != sizeof(c))
			bad = EPIPE;
	for (unsigned i = first; i < last; i++) {
		struct pollfd p = { .fd = wk[i].rep, .events = POLLIN };
		int rc = ETIMEDOUT;

		if (poll(&p, 1, timeout_s * 1000) != 1 || read(wk[i].rep, &rc, sizeof(rc)) !=
		    sizeof(rc))
			snprintf(sh->w[i].err, sizeof(sh->w[i].err), "worker %u: no answer to op %u "
				 "in %d s", i, c.op, timeout_s);
		if (rc && !bad) {
			bad = rc;
			fprintf(stderr, "op %u: %s\n", c.op, sh->w[i].err);
		}
	}
	return bad;
}

static int all(struct cmd c, int timeout_s)
{
	return each(0, WORKERS, c, timeout_s);
}

/* The share of worker i of total objects. */
static unsigned share(unsigned total, unsigned i)
{
	return total / WORKERS + (i < total % WORKERS);
}

/* Every worker grows to its share of total (OP_QP_GROW, or OP_MR_GROW of a kind). */
static int grow_to(uint32_t op, uint32_t kind, unsigned total, int timeout_s)
{
	uint64_t t0 = now_ns();
	int bad = 0;

	for (unsigned i = 0; i < WORKERS && !bad; i++) {
		struct cmd c = { op, op == OP_QP_GROW ? share(total, i) : kind, share(total, i) };

		if (write(wk[i].cmd, &c, sizeof(c)) != sizeof(c))
			bad = EPIPE;
	}
	for (unsigned i = 0; i < WORKERS; i++) {
		struct pollfd p = { .fd = wk[i].rep, .events = POLLIN };
		int rc = ETIMEDOUT;

		if (poll(&p, 1, timeout_s * 1000) != 1 ||
		    read(wk[i].rep, &rc, sizeof(rc)) != sizeof(rc))
			rc = ETIMEDOUT;
		if (rc && !bad) {
			bad = rc;
			fprintf(stderr, "grow to %u: %s\n", total, sh->w[i].err);
		}
	}
	printf("  grew to %u in %.2f s (16 clients)\n", total, (double)(now_ns() - t0) / 1e9);
	return bad;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* p50 and p99 in µs of n samples (sorted in place). */
static void pct(uint32_t *s, unsigned n, double *p50, double *p99)
{
	qsort(s, n, sizeof(*s), cmp_u32);
	*p50 = s[n / 2] / 1e3;
	*p99 = s[(n * 99) / 100] / 1e3;
}

/* Figures for the summary table. */
struct row {
	char what[24];
	unsigned size;
	double c50, c99, d50, d99;
};
static struct row rows[16];
static unsigned nrows;

static void record(const char *what, unsigned size, uint32_t *create, uint32_t *destroy)
{
	struct row *r = &rows[nrows < T_ARRAY_SIZE(rows) ? nrows++ : nrows - 1];

	snprintf(r->what, sizeof(r->what), "%s", what);
	r->size = size;
	pct(create, n_samples, &r->c50, &r->c99);
	pct(destroy, n_samples, &r->d50, &r->d99);
	printf("  %-12s at %6u: create p50 %7.1f us p99 %7.1f us, destroy p50 %7.1f us "
	       "p99 %7.1f us\n", what, size, r->c50, r->c99, r->d50, r->d99);
}

static int measure_qps(unsigned size)
{
	int rc = each(0, 1, (struct cmd){ OP_QP_MEASURE, 0, 0 }, 300);

	if (!rc)
		record("QP", size, sh->w[0].lat[0][0], sh->w[0].lat[0][1]);
	return rc;
}

static int measure_mrs(unsigned size)
{
	int rc = each(0, 1, (struct cmd){ OP_MR_MEASURE, 0, 0 }, 300);

	if (!rc) {
		record("MR ODP", size, sh->w[0].lat[K_ODP][0], sh->w[0].lat[K_ODP][1]);
		record("MR pinned", size, sh->w[0].lat[K_PIN][0], sh->w[0].lat[K_PIN][1]);
	}
	return rc;
}

/* The daemon's resident memory: anonymous (its heap) and shared (rings, pinned pages). */
static void rss(struct h_env *e, uint64_t *anon_kb, uint64_t *shmem_kb)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)e->host[0].pid);
	*anon_kb = *shmem_kb = 0;
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "RssAnon: %" SCNu64, anon_kb);
		sscanf(line, "RssShmem: %" SCNu64, shmem_kb);
	}
	fclose(f);
}

static unsigned count_lines(const char *out, const char *prefix)
{
	unsigned n = 0;
	size_t len = strlen(prefix);

	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		n += !strncmp(p, prefix, len);
	return n;
}

/* odpemu-ctl stat qp at 10,000 QPs: all of them, in bounded time; then one client's
 * first few with --pid and --limit. */
static void stat_qp(struct h_env *e, unsigned total)
{
	char pid[16], *out = NULL;
	const char *argv_all[] = { tr_ctl(), "stat", "-d", "odpa", "qp", NULL };
	const char *argv_few[] = { tr_ctl(), "stat", "-d", "odpa", "qp", "--pid", pid,
		"--limit", "10", NULL };
	uint64_t t0 = now_ns();
	int rc = tr_run(e, 0, argv_all, NULL, &out, 300);
	double s = (double)(now_ns() - t0) / 1e9;
	unsigned n = count_lines(out, "  qp ");

	printf("  odpemu-ctl stat qp at %u QPs: %.2f s, %zu bytes, %u QPs listed\n", total, s,
	       strlen(out), n);
	T_EQ(rc, 0, "odpemu-ctl stat qp: exit code");
	T_EQ(n, total, "odpemu-ctl stat qp: QPs listed");
	T_CHECK(s < 60, "odpemu-ctl stat qp at %u QPs took %.1f s", total, s);
	free(out);
	snprintf(pid, sizeof(pid), "%d", sh->w[3].pid);
	t0 = now_ns();
	rc = tr_run(e, 0, argv_few, NULL, &out, 60);
	s = (double)(now_ns() - t0) / 1e9;
	n = count_lines(out, "  qp ");
	printf("  odpemu-ctl stat qp --pid %s --limit 10: %.3f s, %u QPs listed\n", pid, s, n);
	T_EQ(rc, 0, "odpemu-ctl stat qp --pid --limit: exit code");
	T_EQ(n, 10, "odpemu-ctl stat qp --pid --limit 10: QPs listed");
	T_CHECK(strstr(out, "more") != NULL, "stat qp --limit: no line saying more QPs exist:\n%s",
		out);
	free(out);
}

static int spawn(void)
{
	for (int i = 0; i < WORKERS; i++) {
		int c[2], r[2];

		if (pipe(c) || pipe(r) || (wk[i].pid = fork()) < 0)
			return -1;
		if (wk[i].pid == 0) {
			close(c[1]);
			close(r[0]);
			worker_main(i, c[0], r[1]);
		}
		close(c[0]);
		close(r[1]);
		wk[i].cmd = c[1];
		wk[i].rep = r[0];
	}
	return 0;
}

static void reap(void)
{
	struct cmd c = { OP_EXIT, 0, 0 };

	for (int i = 0; i < WORKERS; i++)
		if (wk[i].pid > 0 && write(wk[i].cmd, &c, sizeof(c)) != sizeof(c))
			kill(wk[i].pid, SIGKILL);
	for (int i = 0; i < WORKERS; i++) {
		int st = -1;

		if (wk[i].pid <= 0)
			continue;
		for (int k = 0; k < 3000 && waitpid(wk[i].pid, &st, WNOHANG) == 0; k++)
			usleep(10000);	/* up to 30 s: a client with 7,000 objects closing */
		if (waitpid(wk[i].pid, &st, WNOHANG) == 0) {
			kill(wk[i].pid, SIGKILL);
			waitpid(wk[i].pid, &st, 0);
		}
		T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker %d: status %#x", i, st);
	}
}

/* O(1) or O(log n): the median at the largest size within 10 times the median at the
 * smallest, plus 200 us of a shared machine's noise (O(n) would be 100 to 1,000 times). */
static void check_flat(const char *what)
{
	const struct row *small = NULL, *large = NULL;

	for (unsigned i = 0; i < nrows; i++)
		if (!strcmp(rows[i].what, what)) {
			small = small ? small : &rows[i];
			large = &rows[i];
		}
	if (!small || small == large)
		return;
	T_CHECK(large->c50 <= 10 * small->c50 + 200, "%s create p50 %.0f us at %u, %.0f us at %u",
		what, large->c50, large->size, small->c50, small->size);
	T_CHECK(large->d50 <= 10 * small->d50 + 200, "%s destroy p50 %.0f us at %u, %.0f us at %u",
		what, large->d50, large->size, small->d50, small->size);
}

static void print_summary(uint64_t qp_b, uint64_t qp_ring_b, uint64_t odp_b, uint64_t pin_b)
{
	printf("\nscale summary (one client alone, one object at a time, at each size):\n");
	printf("| object | size | create p50 | create p99 | destroy p50 | destroy p99 |\n");
	printf("|---|---|---|---|---|---|\n");
	for (unsigned i = 0; i < nrows; i++)
		printf("| %s | %u | %.0f us | %.0f us | %.0f us | %.0f us |\n", rows[i].what,
		       rows[i].size, rows[i].c50, rows[i].c99, rows[i].d50, rows[i].d99);
	printf("daemon memory%s: %" PRIu64 " B per QP (goal <= 16384) + %" PRIu64 " B of rings "
	       "(shared); %" PRIu64 " B per idle ODP MR (goal <= 1024); %" PRIu64 " B per "
	       "pinned MR\n", MEM_CHECKED ? "" : " (sanitizer's allocator: not checked)", qp_b,
	       qp_ring_b, odp_b, pin_b);
}

static void body(struct h_env *e)
{
	unsigned div = getenv("ODPEMU_SCALE_DIV") ? (unsigned)atoi(getenv("ODPEMU_SCALE_DIV")) : 1;
	unsigned qps, odp, pin;
	uint64_t a0, s0, a1, s1, a2, s2, a3, s3, per_qp, per_ring, per_odp, per_pin;
	int rc;

	env = e;
	if (!div)
		div = 1;
	n_qps = QPS_MAX / div;
	n_odp = ODP_MAX / div;
	n_pin = PIN_MAX / div;
	n_samples = SAMPLES / (div > 4 ? 4 : div);
	qps = n_qps * WORKERS;
	odp = n_odp * WORKERS;
	pin = n_pin * WORKERS;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_CHECK(sh != MAP_FAILED, "shared memory: %s", strerror(errno));
	if (sh == MAP_FAILED || spawn()) {
		T_CHECK(0, "cannot start the workers");
		return;
	}
	e->ctx[0] = h_open(e, 0);	/* after the forks: the workers inherit no context */
	for (unsigned i = 0; i < WORKERS; i++)
		sh->w[i].nact = share(ACTIVE / div, i);
	rc = all((struct cmd){ OP_SETUP, 0, 0 }, 60);
	T_EQ(rc, 0, "setup");
	if (rc)
		goto out;
	rss(e, &a0, &s0);

	printf("QPs: %u from %d clients\n", qps, WORKERS);
	for (unsigned size = 100; size <= qps && !rc; size *= 10) {
		if (!(rc = grow_to(OP_QP_GROW, 0, size, 600)))
			rc = measure_qps(size);
	}
	if (!rc && qps % 10)
		rc = grow_to(OP_QP_GROW, 0, qps, 600);
	T_EQ(rc, 0, "QPs created");
	if (rc)
		goto out;
	rss(e, &a1, &s1);
	per_qp = (a1 - a0) * 1024 / qps;
	per_ring = (s1 - s0) * 1024 / qps;
	printf("  daemon RSS: anon %" PRIu64 " -> %" PRIu64 " KiB, shmem %" PRIu64 " -> %" PRIu64
	       " KiB: %" PRIu64 " B per QP + %" PRIu64 " B of rings\n", a0, a1, s0, s1, per_qp,
	       per_ring);
	T_CHECK(!MEM_CHECKED || per_qp <= 16384, "daemon memory per QP %" PRIu64 " B > 16 KiB",
		per_qp);

	rc = all((struct cmd){ OP_CONNECT, 0, 0 }, 600);
	T_EQ(rc, 0, "QPs connected");
	for (unsigned r = 0; r < ROUNDS && !rc; r++) {
		uint64_t t0 = now_ns();

		if (!(rc = all((struct cmd){ OP_TRAFFIC, r, 0 }, 120)))
			rc = all((struct cmd){ OP_VERIFY, r, 0 }, 60);
		printf("  traffic round %u over %u QPs: %.3f s\n", r, ACTIVE / div,
		       (double)(now_ns() - t0) / 1e9);
	}
	T_EQ(rc, 0, "round-robin WRITEs over the traffic QPs, verified");
	stat_qp(e, qps);

	printf("MRs: %u ODP then %u pinned from %d clients\n", odp, pin, WORKERS);
	for (unsigned size = 100; size <= odp && !rc; size *= 10) {
		if (!(rc = grow_to(OP_MR_GROW, K_ODP, size, 600)))
			rc = measure_mrs(size);
	}
	if (!rc)
		rc = grow_to(OP_MR_GROW, K_ODP, odp, 600);
	rss(e, &a2, &s2);
	per_odp = (a2 - a1) * 1024 / (odp ? odp : 1);
	T_EQ(rc, 0, "ODP MRs registered");
	if (!rc)
		rc = grow_to(OP_MR_GROW, K_PIN, pin, 900);
	T_EQ(rc, 0, "pinned MRs registered");
	if (!rc)
		rc = measure_mrs(odp + pin);
	rss(e, &a3, &s3);
	per_pin = (a3 - a2) * 1024 / (pin ? pin : 1);
	printf("  daemon RSS: anon %" PRIu64 " -> %" PRIu64 " -> %" PRIu64 " KiB: %" PRIu64
	       " B per idle ODP MR, %" PRIu64 " B per pinned MR\n", a1, a2, a3, per_odp, per_pin);
	T_CHECK(!MEM_CHECKED || per_odp <= 1024, "daemon memory per idle ODP MR %" PRIu64
		" B > 1 KiB", per_odp);
	T_EQ(h_counter(e->ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "mrs"), odp + pin + 2 * WORKERS,
	     "MRs on the daemon");

	if (!rc) {
		uint64_t t0 = now_ns();

		rc = all((struct cmd){ OP_DESTROY_MRS, 0, 0 }, 600);
		printf("  %u MRs deregistered in %.2f s\n", odp + pin,
		       (double)(now_ns() - t0) / 1e9);
		t0 = now_ns();
		if (!rc)
			rc = all((struct cmd){ OP_DESTROY_QPS, 0, 0 }, 600);
		printf("  %u QPs destroyed in %.2f s\n", qps, (double)(now_ns() - t0) / 1e9);
		T_EQ(rc, 0, "everything destroyed");
	}
	rc = each(0, 1, (struct cmd){ OP_NOFILE, 0, 0 }, 60);
	T_EQ(rc, 0, "a pinned registration without a descriptor left");
	if (!rc)
		printf("  out of descriptors: %s\n", sh->w[0].err);
	check_flat("QP");
	check_flat("MR ODP");
	check_flat("MR pinned");
	print_summary(per_qp, per_ring, per_odp, per_pin);
out:
	reap();
	for (int k = 0; k < 500 && h_counter(e->ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "sessions") > 1;
	     k++)
		usleep(10000);
	T_EQ(h_counter(e->ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "qps"), 0, "QPs left");
	T_EQ(h_counter(e->ctx[0], ODPEMU_COUNTERS_DEVICE, 0, "mrs"), 0, "MRs left");
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "scale", .watchdog_s = 3000,
		.open = H_OPEN_NONE, .body = body };

	return h_main(argc, argv, &t);
}
