/* SPDX-License-Identifier: MIT */
/*
 * emu-bench: odpemu end to end on this machine — two real odpemud daemons started by the
 * e2e harness (tests/emu/e2e/harness.h: two network namespaces joined by veth MTU 9000 as
 * root, else 127.0.0.1/127.0.0.2), driven through libodpemu — against the plain UDP path
 * between the same two addresses, measured in the same run. Prints, never fails on a
 * figure (it exits 1 only when something does not work at all).
 *
 *   1. 64 KiB RDMA WRITE goodput: OUTSTANDING WRs in flight, posted in lists of
 *      SIGNAL_EVERY under one doorbell with the last signaled (ib_write_bw --post_list /
 *      cq_mod), pinned MRs, warm; bytes of completed WRITEs per second.
 *   2. 8 B RDMA WRITE message rate (ib_write_bw -s 8 -t 128 --post_list 16), and 8 B RDMA
 *      WRITE latency as ib_write_lat: a WRITEs 8 bytes into b's buffer, b's last
 *      byte is watched until it changes, b WRITEs back into a's, a's last byte is watched;
 *      half of each round trip. One thread drives both sides (see lat_pingpong()). Then
 *      the same ping-pong with 64 KiB WRITEs (fi_pingpong -S 65536's shape).
 *   3. ODP first touch: 64 KiB WRITEs into a never-touched mmap registered ON_DEMAND on the
 *      responder, each to a new 64 KiB (every one faults), then the same region warm; with
 *      the default fault policy (rnr) and with stall.
 *   4. Raw UDP between the same addresses, in the hosts' namespaces (fork + setns): bulk
 *      4128-byte datagrams (what a 4 KiB WRITE packet is: BTH 12 + RETH 16 + 4096 + ICRC 4)
 *      by sendmmsg/recvmmsg of 32 datagram by datagram (and with GSO), bulk 40-byte
 *      datagrams (an 8 B WRITE_ONLY: 12 + 16 + 8 + 4; the per-packet rate), and ping-pong
 *      of 40-byte datagrams, blocking and busy-polling.
 *   5. Kernel TCP between the same addresses: a stream of 64 KiB writes (iperf3 -l 64K) and
 *      ping-pongs of 8 B and 64 KiB (tcp_raw.c); the zero-work relay of odpemu's shape, the
 *      latency floor of a daemon design here (relay_anchor.c); libfabric's tcp provider,
 *      fi_pingpong -p tcp -e msg at 8 B and 64 KiB, when libfabric-bin is installed
 *      (fi_anchor.c).
 *   6. 1 and 2 again with the daemons restarted with --poll-us 1000, then --poll-us 0.
 * The client waits (for completions and watched bytes) with sched_yield() between looks by
 * default: on two vCPUs a pure spinner takes the core a daemon needs (--wait to change).
 * Usage: emu-bench [--quick] [--help for the knobs]. ODPEMUD defaults to ../../emu/odpemud
 * beside this binary.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "fi_anchor.h"
#include "first_touch.h"
#include "harness.h"
#include "relay_anchor.h"
#include "tcp_raw.h"
#include "udp_raw.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define BIG (64 * KiB)			/* the goodput message */
#define TARGET (16 * BIG)		/* pinned goodput target: 16 rotating 64 KiB slots */
#define QP_DEPTH 256u
#define NROUNDS 4			/* --poll-us adaptive (default), 50, 1000, 0 */
#define OUTSTANDING 64u			/* WRs in flight */
#define SIGNAL_EVERY 16u		/* divides OUTSTANDING */
#define RATE_DEPTH 128u			/* 8 B message rate: WRs in flight (divisible too) */
#define PP_BIG (64 * KiB)		/* the large ping-pong message */
#define LAT_BYTES 8u
#define WIRE_4K (12 + 16 + 4096 + 4)	/* UDP payload of one full WRITE packet */
#define WIRE_LAT (12 + 16 + LAT_BYTES + 4)	/* UDP payload of the 8 B WRITE_ONLY */
#define STALL_NS (5 * UINT64_C(1000000000))	/* no completion this long: broken */
#define RW (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE)

enum wait_mode { WAIT_SPIN, WAIT_YIELD, WAIT_SLEEP };

static struct {
	bool quick;
	enum wait_mode wait;
	double bulk_s;		/* goodput runs */
	unsigned lat_n;		/* recorded ping-pongs */
	unsigned lat_warm;
	uint64_t odp_bytes;	/* cold ODP region */
	bool pin;		/* daemon of host i on CPU i (all its threads) */
	const char *poll_us;	/* --poll-us of the first daemons (NULL: theirs, adaptive) */
	const char *profile;	/* --profile goodput|latency: only that, for profile_s */
	double profile_s;
} cfg = { .wait = WAIT_YIELD };

static struct h_env env;
static const char *running = "";	/* the figure being measured, for error messages */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "emu-bench: %s: ", running);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	h_show_log(&env, 0);
	h_show_log(&env, 1);
	exit(1);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Nothing to do until the daemons move: how the application waits (--wait). On two vCPUs
 * a spinning client takes a core from the two daemons; yield gives it back when they are
 * runnable on this core; sleep leaves it (and pays a timer wake). */
static void idle(void)
{
	static const struct timespec ts = { 0, 2000 };

	if (cfg.wait == WAIT_YIELD)
		sched_yield();
	else if (cfg.wait == WAIT_SLEEP)
		nanosleep(&ts, NULL);
	else
		cpu_relax();
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct pct {
	double median_us, p99_us;
};

static struct pct percentiles(uint64_t *ns, unsigned n)
{
	qsort(ns, n, sizeof(*ns), cmp_u64);
	return (struct pct){ ns[n / 2] / 1e3, ns[(uint64_t)n * 99 / 100] / 1e3 };
}

/* Buffers to register are mappings of their own, not heap: pinning moves their pages
 * into shared memory (docs/emu.md), which a forked child (the raw UDP runs) would then
 * share, malloc's arena included. Unmapped before the children are forked. */
static void *buffer(size_t len)
{
	void *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (b == MAP_FAILED)
		die("mmap %zu bytes: %s", len, strerror(errno));
	memset(b, 0x5a, len);	/* touched: pinned registration and no host fault timed */
	return b;
}

static struct odpemu_mr *reg(struct odpemu_pd *pd, void *addr, size_t len, int access)
{
	struct odpemu_mr *mr = odpemu_reg_mr(pd, addr, len, access);

	if (!mr)
		die("reg_mr(%zu bytes, access %#x): %s (%s)", len, access, strerror(errno),
		    odpemu_last_error(pd->context));
	return mr;
}

static unsigned long long counter(struct odpemu_context *ctx, const char *name)
{
	return h_counter(ctx, ODPEMU_COUNTERS_DEVICE, 0, name);
}

/* ---- the machine ---- */

static void print_machine(void)
{
	char line[256], model[160] = "?";
	struct utsname u;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
			snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
			model[strcspn(model, "\n")] = 0;
			break;
		}
	if (f)
		fclose(f);
	uname(&u);
	printf("machine: %ld CPUs online, %s, Linux %s\n", sysconf(_SC_NPROCESSORS_ONLN), model,
	       u.release);
}

/* ODPEMUD unset: the daemon of this build tree, ../../emu/odpemud from this binary. */
static void default_daemon(void)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n;

	if (getenv("ODPEMUD") && *getenv("ODPEMUD"))
		return;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(path, sizeof(path), "%s/../../emu/odpemud", self);
	if (access(path, X_OK)) {
		fprintf(stderr, "emu-bench: no odpemud at %s: set ODPEMUD=<path of odpemud>\n",
			path);
		exit(1);
	}
	setenv("ODPEMUD", path, 1);
}

/* ---- WRITE streams ---- */

struct stream {
	struct h_pair *p;
	struct odpemu_mr *src;		/* on side 0 */
	uint64_t dst;			/* on side 1 */
	uint32_t rkey;
	uint64_t dst_len;		/* the k-th WRITE goes to dst + (k * len) % dst_len */
	uint32_t len;
	uint64_t max_wrs;		/* 0: until seconds pass */
	double seconds;			/* 0: until max_wrs */
	unsigned outstanding;		/* WRs in flight (0: OUTSTANDING) */
};

struct stream_result {
	uint64_t bytes, ns;
};

static void post_list(const struct stream *s, uint64_t k)
{
	struct odpemu_sge sge = { (uint64_t)(uintptr_t)s->src->addr, s->len, s->src->lkey };
	struct odpemu_send_wr wr[SIGNAL_EVERY], *bad;
	int rc;

	for (unsigned i = 0; i < SIGNAL_EVERY; i++)
		wr[i] = (struct odpemu_send_wr){ .wr_id = k + i, .next = &wr[i + 1],
			.sg_list = &sge, .num_sge = 1, .opcode = ODPEMU_WR_RDMA_WRITE,
			.wr.rdma = { s->dst + ((k + i) * s->len) % s->dst_len, s->rkey } };
	wr[SIGNAL_EVERY - 1].next = NULL;
	wr[SIGNAL_EVERY - 1].send_flags = ODPEMU_SEND_SIGNALED;
	rc = odpemu_post_send(s->p->s[0].qp, wr, &bad);
	if (rc)
		die("post_send of WR %" PRIu64 ": %s", bad->wr_id, strerror(rc));
}

/* Completed WRs: SIGNAL_EVERY per (signaled) completion. */
static unsigned reap(struct odpemu_cq *cq)
{
	struct odpemu_wc wc[8];
	unsigned done = 0;
	int n;

	while ((n = odpemu_poll_cq(cq, 8, wc)) > 0)
		for (int i = 0; i < n; i++) {
			if (wc[i].status != ODPEMU_WC_SUCCESS)
				die("WR %" PRIu64 " completed with %s (%s)", wc[i].wr_id,
				    odpemu_wc_status_str(wc[i].status),
				    odpemu_vendor_err_str(wc[i].vendor_err));
			done += SIGNAL_EVERY;
		}
	if (n < 0)
		die("poll_cq: the device is gone");
	return done;
}

static struct stream_result run_stream(const struct stream *s)
{
	uint64_t posted = 0, done = 0, t0 = bench_now_ns(), last = t0, now = t0;
	uint64_t end = t0 + (uint64_t)(s->seconds * 1e9);
	unsigned window = s->outstanding ? s->outstanding : OUTSTANDING;

	for (;;) {
		bool stop = (s->max_wrs && posted >= s->max_wrs) || (s->seconds && now >= end);
		unsigned got;

		for (; !stop && posted - done < window; posted += SIGNAL_EVERY)
			post_list(s, posted);
		if (stop && done == posted)
			break;
		got = reap(s->p->s[0].cq);
		now = bench_now_ns();
		if (got) {
			done += got;
			last = now;
		} else if (now - last > STALL_NS) {
			die("stuck: %" PRIu64 " WRs posted, %" PRIu64 " completed, nothing for 5 s",
			    posted, done);
		} else {
			idle();
		}
	}
	return (struct stream_result){ done * s->len, bench_now_ns() - t0 };
}

static double gbps(struct stream_result r)
{
	return r.ns ? (double)r.bytes / (double)r.ns : 0;	/* bytes/ns = GB/s */
}

/* Pinned 64 KiB WRITE goodput, warm (a short unmeasured run first). */
static double write_goodput(struct h_pair *p, double seconds)
{
	void *src = buffer(BIG), *dst = buffer(TARGET);
	struct odpemu_mr *msrc = reg(p->s[0].pd, src, BIG, RW);
	struct odpemu_mr *mdst = reg(p->s[1].pd, dst, TARGET, RW);
	struct stream s = { .p = p, .src = msrc, .dst = (uintptr_t)dst, .rkey = mdst->rkey,
		.dst_len = TARGET, .len = BIG, .seconds = 0.2 };
	unsigned long long rt0 = counter(p->s[0].ctx, "retransmits");
	struct stream_result r;

	running = "64 KiB WRITE goodput";
	(void)run_stream(&s);
	s.seconds = seconds;
	r = run_stream(&s);
	rt0 = counter(p->s[0].ctx, "retransmits") - rt0;
	if (rt0)
		printf("  (goodput: requester retransmits +%llu: a loss or NAK)\n", rt0);
	odpemu_dereg_mr(msrc);
	odpemu_dereg_mr(mdst);
	munmap(src, BIG);
	munmap(dst, TARGET);
	return gbps(r);
}

/* 8 B WRITE message rate, ib_write_bw -s 8 -t 128 --post_list 16 shape: RATE_DEPTH WRs in
 * flight, lists of SIGNAL_EVERY, warm; completed WRs per second (M/s). */
static double write_rate(struct h_pair *p, double seconds)
{
	void *src = buffer(4096), *dst = buffer(1 * MiB);
	struct odpemu_mr *msrc = reg(p->s[0].pd, src, 4096, RW);
	struct odpemu_mr *mdst = reg(p->s[1].pd, dst, 1 * MiB, RW);
	struct stream s = { .p = p, .src = msrc, .dst = (uintptr_t)dst, .rkey = mdst->rkey,
		.dst_len = 1 * MiB, .len = LAT_BYTES, .seconds = 0.2, .outstanding = RATE_DEPTH };
	struct stream_result r;

	running = "8 B WRITE message rate";
	(void)run_stream(&s);
	s.seconds = seconds;
	r = run_stream(&s);
	odpemu_dereg_mr(msrc);
	odpemu_dereg_mr(mdst);
	munmap(src, 4096);
	munmap(dst, 1 * MiB);
	return r.ns ? (double)(r.bytes / LAT_BYTES) / (double)r.ns * 1e3 : 0;	/* M/s */
}

/* ---- latency ---- */

/* Wait until *b == v (the peer's WRITE landed). */
static void watch(volatile uint8_t *b, uint8_t v, unsigned it)
{
	uint64_t start = 0;

	for (unsigned spins = 0; *b != v; spins++) {
		idle();
		if ((spins & 0xff) == 0xff) {
			uint64_t now = bench_now_ns();

			if (!start)
				start = now;
			else if (now - start > STALL_NS)
				die("ping-pong %u: the WRITE did not land in 5 s", it);
		}
	}
}

static void write8(struct odpemu_qp *qp, uint8_t *src, uint64_t raddr, uint32_t rkey,
		   bool signaled)
{
	struct odpemu_sge sge = { (uint64_t)(uintptr_t)src, LAT_BYTES, 0 };
	struct odpemu_send_wr wr = { .sg_list = &sge, .num_sge = 1,
		.opcode = ODPEMU_WR_RDMA_WRITE, .wr.rdma = { raddr, rkey },
		.send_flags = ODPEMU_SEND_INLINE | (signaled ? ODPEMU_SEND_SIGNALED : 0) }, *bad;
	int rc = odpemu_post_send(qp, &wr, &bad);

	if (rc)
		die("post_send (8 B WRITE): %s", strerror(rc));
}

/*
 * ib_write_lat with both sides in this one thread: post a's WRITE, watch b's buffer,
 * post b's WRITE, watch a's buffer; the round trip is two one-way WRITEs, each seen by
 * its target the way ib_write_lat's peer sees it (polling the last byte of a pinned
 * buffer). Only the half that is not watching would differ with two processes — and on
 * two vCPUs a second spinning process would take the daemons' core. WRITEs are inline,
 * one in SIGNAL_EVERY signaled (CQs drained outside the timed part). Stops early after
 * max_s seconds (*done: the samples taken).
 */
static struct pct lat_pingpong(struct h_pair *p, unsigned n, unsigned warm, double max_s,
				unsigned *done)
{
	uint8_t *buf[2], src[2][LAT_BYTES];
	struct odpemu_mr *mr[2];
	uint64_t *half = calloc(n, sizeof(*half));

	running = "8 B WRITE latency";
	if (!half)
		die("out of memory");
	for (int i = 0; i < 2; i++) {
		buf[i] = buffer(4096);
		memset(buf[i], 0, 4096);
		mr[i] = reg(p->s[i].pd, buf[i], 4096, RW);
		memset(src[i], 0, LAT_BYTES);
	}
	uint64_t end = bench_now_ns() + (uint64_t)(max_s * 1e9);
	unsigned it;

	for (it = 0; it < warm + n; it++) {
		uint8_t v = (uint8_t)(it % 255 + 1);	/* never the previous value */
		bool sig = it % SIGNAL_EVERY == SIGNAL_EVERY - 1;
		uint64_t t0, t1;

		src[0][LAT_BYTES - 1] = src[1][LAT_BYTES - 1] = v;
		t0 = bench_now_ns();
		write8(p->s[0].qp, src[0], (uintptr_t)buf[1], mr[1]->rkey, sig);
		watch(&buf[1][LAT_BYTES - 1], v, it);
		write8(p->s[1].qp, src[1], (uintptr_t)buf[0], mr[0]->rkey, sig);
		watch(&buf[0][LAT_BYTES - 1], v, it);
		t1 = bench_now_ns();
		if (it >= warm)
			half[it - warm] = (t1 - t0) / 2;
		if (sig) {
			for (int i = 0; i < 2; i++)
				(void)reap(p->s[i].cq);
			if (it > warm + 100 && t1 > end)
				break;	/* pathologically slow: enough samples */
		}
	}
	*done = it < warm + n ? it + 1 - warm : n;
	for (int i = 0; i < 2; i++) {
		odpemu_dereg_mr(mr[i]);
		munmap(buf[i], 4096);
	}
	struct pct r = percentiles(half, *done);

	free(half);
	return r;
}

/* The 64 KiB ping-pong (fi_pingpong -S 65536's shape): a WRITEs 64 KiB into b, b watches
 * the last byte, WRITEs 64 KiB back, a watches; each transfer is half a round trip. The
 * payload is registered (no inline), every WR signaled, the CQs reaped per round. */
static struct pct big_pingpong(struct h_pair *p, unsigned n, unsigned warm, double max_s,
			       unsigned *done)
{
	uint8_t *buf[2], *src[2];
	struct odpemu_mr *mr[2], *smr[2];
	uint64_t *half = calloc(n, sizeof(*half));
	uint64_t end = bench_now_ns() + (uint64_t)(max_s * 1e9);
	unsigned it;

	running = "64 KiB WRITE ping-pong";
	if (!half)
		die("out of memory");
	for (int i = 0; i < 2; i++) {
		buf[i] = buffer(PP_BIG);
		src[i] = buffer(PP_BIG);
		memset(buf[i], 0, PP_BIG);
		memset(src[i], 0x5a, PP_BIG);
		mr[i] = reg(p->s[i].pd, buf[i], PP_BIG, RW);
		smr[i] = reg(p->s[i].pd, src[i], PP_BIG, RW);
	}
	for (it = 0; it < warm + n; it++) {
		uint8_t v = (uint8_t)(it % 255 + 1);
		uint64_t t0 = bench_now_ns(), t1;

		for (int i = 0; i < 2; i++) {
			struct odpemu_sge sge = { (uint64_t)(uintptr_t)src[i], PP_BIG, smr[i]->lkey };
			struct odpemu_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				.opcode = ODPEMU_WR_RDMA_WRITE, .send_flags = ODPEMU_SEND_SIGNALED,
				.wr.rdma = { (uintptr_t)buf[!i], mr[!i]->rkey } }, *bad;
			int rc;

			src[i][PP_BIG - 1] = v;
			rc = odpemu_post_send(p->s[i].qp, &wr, &bad);
			if (rc)
				die("post_send (64 KiB WRITE): %s", strerror(rc));
			watch(&buf[!i][PP_BIG - 1], v, it);
		}
		t1 = bench_now_ns();
		for (int i = 0; i < 2; i++)
			while (!odpemu_poll_cq(p->s[i].cq, 1, &(struct odpemu_wc){ 0 }))
				idle();
		if (it >= warm)
			half[it - warm] = (t1 - t0) / 2;
		if (it > warm + 20 && t1 > end)
			break;
	}
	*done = it < warm + n ? it + 1 - warm : n;
	for (int i = 0; i < 2; i++) {
		odpemu_dereg_mr(mr[i]);
		odpemu_dereg_mr(smr[i]);
		munmap(buf[i], PP_BIG);
		munmap(src[i], PP_BIG);
	}
	struct pct r = percentiles(half, *done);

	free(half);
	return r;
}

/* ---- ODP first touch ---- */

struct odp_result {
	double cold, warm;			/* GB/s */
	unsigned long long faults, fault_pages;	/* responder deltas over the cold run */
	unsigned long long rnr_naks;		/* responder RNR NAKs sent, cold run */
	unsigned long long retransmits;		/* requester packets resent, cold run */
	unsigned long long warm_faults;
	uint64_t lat_p50_ns, lat_p99_ns;	/* the daemon's fault latency, cold run */
	double resolve_us, wait_us;		/* the fault handler per request: work, queue */
};

/* 64 KiB WRITEs into a fresh mmap registered ON_DEMAND on side 1, each to the next
 * 64 KiB (one fault each with the default 64 KiB fault-around), then again warm. */
/* The daemon's log-linear fault-latency histogram (fault_latency_ns_lt_N counters): the
 * buckets' upper bounds N and their counts, in the daemon's order (ascending N). */
#define LAT_PREFIX "fault_latency_ns_lt_"
struct lat_hist {
	unsigned n;
	uint64_t bound[128], count[128];
};

static void lat_snapshot(struct odpemu_context *ctx, struct lat_hist *h)
{
	static struct odpemu_counter c[1024];
	int n = odpemu_query_counters(ctx, ODPEMU_COUNTERS_DEVICE, 0, c, 1024);

	h->n = 0;
	for (int i = 0; i < n && h->n < 128; i++)
		if (!strncmp(c[i].name, LAT_PREFIX, strlen(LAT_PREFIX))) {
			h->bound[h->n] = strtoull(c[i].name + strlen(LAT_PREFIX), NULL, 10);
			h->count[h->n++] = c[i].value;
		}
}

/* The bucket bound (ns) under which pct % of the faults between before and after fall. */
static uint64_t lat_pct(const struct lat_hist *before, const struct lat_hist *after, double pct)
{
	uint64_t delta[128], total = 0, seen = 0;

	for (unsigned i = 0; i < after->n; i++) {
		delta[i] = after->count[i];
		for (unsigned k = 0; k < before->n; k++)
			if (before->bound[k] == after->bound[i])
				delta[i] -= before->count[k];
		total += delta[i];
	}
	for (unsigned i = 0; i < after->n; i++) {
		seen += delta[i];
		if (total && (double)seen >= pct / 100.0 * (double)total)
			return after->bound[i];
	}
	return 0;
}

static struct odp_result odp_first_touch(struct h_pair *p, uint64_t bytes, double warm_s)
{
	struct odpemu_context *rctx = p->s[1].ctx, *qctx = p->s[0].ctx;
	void *src = buffer(BIG);
	uint8_t *region = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	struct odpemu_mr *msrc, *mdst;
	struct odp_result o;
	struct stream s;
	unsigned long long f0, p0, r0, t0, j0, n0, w0;
	struct lat_hist h0, h1;

	if (region == MAP_FAILED)
		die("mmap %" PRIu64 " bytes: %s", bytes, strerror(errno));
	msrc = reg(p->s[0].pd, src, BIG, RW);
	mdst = reg(p->s[1].pd, region, bytes, RW | ODPEMU_ACCESS_ON_DEMAND);
	s = (struct stream){ .p = p, .src = msrc, .dst = (uintptr_t)region, .rkey = mdst->rkey,
		.dst_len = bytes, .len = BIG, .max_wrs = bytes / BIG };
	f0 = counter(rctx, "page_faults");
	p0 = counter(rctx, "page_fault_pages");
	r0 = counter(rctx, "rnr_naks_sent");
	t0 = counter(qctx, "retransmits");
	lat_snapshot(rctx, &h0);
	j0 = counter(rctx, "fault_jobs");
	n0 = counter(rctx, "fault_resolve_ns");
	w0 = counter(rctx, "fault_queue_wait_ns");
	o.cold = gbps(run_stream(&s));
	lat_snapshot(rctx, &h1);
	j0 = counter(rctx, "fault_jobs") - j0;
	o.resolve_us = j0 ? (double)(counter(rctx, "fault_resolve_ns") - n0) / (double)j0 / 1e3 : 0;
	o.wait_us = j0 ? (double)(counter(rctx, "fault_queue_wait_ns") - w0) / (double)j0 / 1e3 : 0;
	o.lat_p50_ns = lat_pct(&h0, &h1, 50);
	o.lat_p99_ns = lat_pct(&h0, &h1, 99);
	o.faults = counter(rctx, "page_faults") - f0;
	o.fault_pages = counter(rctx, "page_fault_pages") - p0;
	o.rnr_naks = counter(rctx, "rnr_naks_sent") - r0;
	o.retransmits = counter(qctx, "retransmits") - t0;
	s.max_wrs = 0;
	s.seconds = warm_s;
	f0 = counter(rctx, "page_faults");
	o.warm = gbps(run_stream(&s));
	o.warm_faults = counter(rctx, "page_faults") - f0;
	odpemu_dereg_mr(msrc);
	odpemu_dereg_mr(mdst);
	munmap(region, bytes);
	munmap(src, BIG);
	return o;
}

static void print_odp(const char *policy, const struct odp_result *o)
{
	printf("odpemu  ODP 64 KiB WRITE, %" PRIu64 " MiB, fault policy %s: cold %.3f GB/s, "
	       "warm %.3f GB/s (%.2f); responder page_faults +%llu (%llu pages), RNR NAKs "
	       "+%llu; requester retransmits +%llu; faults while warm +%llu; fault latency in "
	       "the daemon (submit to answer) p50 < %.2f us, p99 < %.2f us; per request the fault "
	       "handler worked %.1f us after %.1f us queued (0 when resolved inline)\n",
	       cfg.odp_bytes / MiB, policy, o->cold, o->warm, o->warm ? o->cold / o->warm : 0,
	       o->faults, o->fault_pages, o->rnr_naks, o->retransmits, o->warm_faults,
	       (double)o->lat_p50_ns / 1e3, (double)o->lat_p99_ns / 1e3, o->resolve_us,
	       o->wait_us);
}

/* ---- raw UDP in the hosts' namespaces ---- */

/* What the children hand back, in memory shared across fork. */
struct raw_shared {
	struct udp_bulk_rx rx;
	struct tcp_stream_rx trx;
	uint64_t sent;
	unsigned lost;
	int rc[2];
	uint64_t half[];
};

struct raw_job {
	enum { JOB_BULK_RX, JOB_BULK_TX, JOB_ECHO, JOB_PING, JOB_TCP_RX, JOB_TCP_TX,
		JOB_TCP_ECHO, JOB_TCP_PING } kind;
	bool gso, busy;
	double seconds;
	unsigned n, warm;
	unsigned dgram;		/* bulk: datagram size (0: WIRE_4K) */
	int ready_fd;
};

static unsigned raw_port(void)
{
	return env.port + 1;	/* beside the daemons' port, on the same addresses */
}

static int job_run(const struct raw_job *j, struct raw_shared *sh)
{
	const char *a = env.host[0].addr, *b = env.host[1].addr;

	switch (j->kind) {
	case JOB_BULK_RX:
		return sh->rc[1] = udp_bulk_recv(b, raw_port(), j->dgram ? j->dgram : WIRE_4K,
						 j->ready_fd, 5000, 300, &sh->rx);
	case JOB_BULK_TX:
		return sh->rc[0] = udp_bulk_send(a, b, raw_port(), j->dgram ? j->dgram : WIRE_4K,
						 j->seconds, j->gso, &sh->sent);
	case JOB_ECHO:
		return sh->rc[1] = udp_echo(b, raw_port(), j->busy, j->ready_fd, 2000);
	case JOB_PING:
		return sh->rc[0] = udp_ping(a, b, raw_port(), WIRE_LAT, j->busy, j->warm, j->n,
					    sh->half, &sh->lost);
	case JOB_TCP_RX:
		return sh->rc[1] = tcp_stream_recv(b, raw_port(), j->ready_fd, 5000, 500, &sh->trx);
	case JOB_TCP_TX:
		return sh->rc[0] = tcp_stream_send(a, b, raw_port(), j->seconds, &sh->sent);
	case JOB_TCP_ECHO:
		return sh->rc[1] = tcp_echo(b, raw_port(), j->dgram, j->ready_fd, 2000);
	case JOB_TCP_PING:
		return sh->rc[0] = tcp_ping(a, b, raw_port(), j->dgram, j->warm, j->n, sh->half);
	}
	return -EINVAL;
}

/* Run j in a child inside host's namespace (as the daemon of that host runs). */
static pid_t spawn(int host, const struct raw_job *j, struct raw_shared *sh)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid)
		return pid;
	bench_child_detach();
	if (env.netns) {
		char path[96];
		int fd;

		snprintf(path, sizeof(path), "/var/run/netns/%s", env.host[host].ns);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET)) {
			fprintf(stderr, "emu-bench: enter netns %s: %s\n", path, strerror(errno));
			_exit(2);
		}
		close(fd);
	}
	_exit(job_run(j, sh) ? 1 : 0);
}

static void wait_ready(int fd)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	char c;

	if (poll(&pfd, 1, 5000) != 1 || read(fd, &c, 1) != 1)
		die("the raw UDP receiver did not start");
}

static void reap_child(pid_t pid, const char *who)
{
	int st = 0;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1)	/* 1: its error is in the result */
		die("the raw UDP %s died (status %#x)", who, st);
}

/* A receiver in b's namespace, then a sender in a's; both run to their end. */
static void raw_pair(struct raw_job rx, struct raw_job tx, struct raw_shared *sh)
{
	int rd[2];
	pid_t r, t;

	if (pipe(rd))
		die("pipe: %s", strerror(errno));
	rx.ready_fd = rd[1];
	r = spawn(1, &rx, sh);
	wait_ready(rd[0]);
	t = spawn(0, &tx, sh);
	reap_child(t, "sender");
	reap_child(r, "receiver");
	close(rd[0]);
	close(rd[1]);
}

struct raw_bulk {
	double gbps;		/* payload (4096 of each 4128-byte datagram) per second */
	double loss;		/* fraction of sent datagrams not received */
	double mpps;
};

static struct raw_bulk raw_bulk(struct raw_shared *sh, double seconds, bool gso,
			       unsigned dgram)
{
	struct raw_job rx = { .kind = JOB_BULK_RX, .dgram = dgram },
		tx = { .kind = JOB_BULK_TX, .gso = gso, .seconds = seconds, .dgram = dgram };
	struct raw_bulk b = { 0 };
	double ns;

	running = gso ? "raw UDP bulk (GSO)" : "raw UDP bulk";
	memset(sh, 0, sizeof(*sh));
	raw_pair(rx, tx, sh);
	if (sh->rc[0] || sh->rc[1])
		die("sender %s, receiver %s", strerror(-sh->rc[0]), strerror(-sh->rc[1]));
	ns = (double)(sh->rx.last_ns - sh->rx.first_ns);
	if (ns <= 0 || sh->rx.datagrams < 2)
		die("only %" PRIu64 " datagrams arrived", sh->rx.datagrams);
	b.gbps = (double)(sh->rx.datagrams - 1) * 4096 / ns;
	b.mpps = (double)(sh->rx.datagrams - 1) / ns * 1e3;
	b.loss = sh->sent ? 1.0 - (double)sh->rx.datagrams / (double)sh->sent : 0;
	return b;
}

static struct pct raw_pingpong(struct raw_shared *sh, bool busy)
{
	struct raw_job rx = { .kind = JOB_ECHO, .busy = busy },
		tx = { .kind = JOB_PING, .busy = busy, .n = cfg.lat_n, .warm = cfg.lat_warm };

	running = busy ? "raw UDP ping-pong (busy-poll)" : "raw UDP ping-pong (blocking)";
	memset(sh, 0, sizeof(*sh));
	raw_pair(rx, tx, sh);
	if (sh->rc[0] || sh->rc[1])
		die("pinger %s, echo %s", strerror(-sh->rc[0]), strerror(-sh->rc[1]));
	if (sh->lost)
		printf("  (%s: %u datagrams lost and resent)\n", running, sh->lost);
	return percentiles(sh->half, cfg.lat_n);
}

/* ---- daemons ---- */

static void pair_up(struct h_pair *p, enum odpemu_fault_policy policy)
{
	struct h_qp_opts o;

	h_qp_opts_default(&o);
	o.depth = QP_DEPTH;
	o.policy = policy;
	memset(p, 0, sizeof(*p));
	if (h_pair_up(&env, p, &o))
		die("cannot connect a QP pair");
}

static void pair_close(struct h_pair *p)
{
	h_pair_down(p);
	for (int i = 0; i < 2; i++)
		odpemu_close_device(p->s[i].ctx);
}

/* --pin: every thread of host i's daemon on CPU i % ncpu (the client stays free). */
static void pin_daemons(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	for (int i = 0; cfg.pin && i < 2; i++) {
		char dir[64];
		struct dirent *t;
		cpu_set_t set;
		DIR *d;

		CPU_ZERO(&set);
		CPU_SET(i % (ncpu > 0 ? ncpu : 1), &set);
		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)env.host[i].pid);
		if (!(d = opendir(dir)))
			die("%s: %s", dir, strerror(errno));
		while ((t = readdir(d)))
			if (t->d_name[0] != '.' &&
			    sched_setaffinity(atoi(t->d_name), sizeof(set), &set))
				die("pin %s/%s: %s", dir, t->d_name, strerror(errno));
		closedir(d);
	}
}

static void restart_daemons(const char *const *extra)
{
	for (int i = 0; i < 2; i++) {
		h_daemon_stop(&env, i, SIGTERM);
		if (h_daemon_start(&env, i, extra))
			die("daemon %d did not restart", i);
	}
	pin_daemons();
}

/* ---- report ---- */

static void row(const char *figure, const char *unit, double emu, double raw, bool higher_better,
		double goal, const char *goal_text)
{
	double ratio = raw > 0 ? emu / raw : 0;
	bool met = higher_better ? ratio >= goal : ratio <= goal;

	printf("%-36s %9.3f %9.3f %-5s %6.2f  %-24s %s\n", figure, emu, raw, unit, ratio,
	       goal_text, goal ? (met ? "met" : "NOT MET") : "-");
}

static void usage(void)
{
	fprintf(stderr, "usage: emu-bench [--quick] [--wait spin|yield|sleep] [--pin] "
		"[--poll-us N]\n"
		"                 [--profile goodput|latency|cold SECONDS]\n"
		"  --quick    about 7 s instead of about 20 s\n"
		"  --wait     how the client waits for a completion or a watched byte (default\n"
		"             yield: sched_yield between looks; spin: pause; sleep: 2 us naps)\n"
		"  --pin      daemon a on CPU 0, daemon b on CPU 1 (all their threads)\n"
		"  --poll-us  the first daemons' --poll-us (default theirs, adaptive)\n"
		"  --profile  only that odpemu figure, that long, with the first daemons (for perf;\n"
		"             cold: cold ODP WRITEs with the stall policy)\n"
		"needs ODPEMUD=<odpemud> (default: ../../emu/odpemud beside this binary); as root\n"
		"the hosts are network namespaces joined by veth, else 127.0.0.1/127.0.0.2\n");
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			cfg.quick = true;
		} else if (!strcmp(argv[i], "--pin")) {
			cfg.pin = true;
		} else if (!strcmp(argv[i], "--poll-us") && i + 1 < argc) {
			cfg.poll_us = argv[++i];
		} else if (!strcmp(argv[i], "--profile") && i + 2 < argc) {
			cfg.profile = argv[++i];
			cfg.profile_s = atof(argv[++i]);
			if ((strcmp(cfg.profile, "goodput") && strcmp(cfg.profile, "latency") &&
			     strcmp(cfg.profile, "cold")) ||
			    cfg.profile_s <= 0)
				usage();
		} else if (!strcmp(argv[i], "--wait") && i + 1 < argc) {
			const char *w = argv[++i];

			if (!strcmp(w, "spin"))
				cfg.wait = WAIT_SPIN;
			else if (!strcmp(w, "yield"))
				cfg.wait = WAIT_YIELD;
			else if (!strcmp(w, "sleep"))
				cfg.wait = WAIT_SLEEP;
			else
				usage();
		} else {
			usage();
		}
	}
	cfg.bulk_s = cfg.quick ? 0.5 : 2.0;
	cfg.lat_n = cfg.quick ? 2000 : 10000;
	cfg.lat_warm = cfg.quick ? 200 : 1000;
	cfg.odp_bytes = cfg.quick ? 16 * MiB : 64 * MiB;
}

/* odpemu's goodput and latency with the daemons as they run now. */
struct round {
	const char *poll_us;
	double good;
	double rate;			/* 8 B WRITE messages, M/s */
	struct pct lat;
	unsigned lat_n;
	struct pct big;			/* 64 KiB ping-pong, per transfer */
	unsigned big_n;
};

static void print_round_good(const struct round *r)
{
	printf("odpemu  64 KiB WRITE goodput (poll-us %s): %.3f GB/s\n", r->poll_us, r->good);
}

static void print_round_lat(const struct round *r)
{
	printf("odpemu  8 B WRITE half RTT (poll-us %s): median %.1f us, p99 %.1f us (%u round "
	       "trips)\n", r->poll_us, r->lat.median_us, r->lat.p99_us, r->lat_n);
}

/* What the daemons' data path did over the round, so a slow round can be told apart:
 * segmentation offload and GRO in use, losses recovered. */
static void print_path_counters(struct h_pair *p)
{
	static const char *const names[] = { "udp_tx_gso_sends", "udp_tx_gso_refused",
		"udp_rx_gro_bufs", "udp_tx_err_again", "retransmits", "timeouts",
		"rnr_naks_sent", "drop_stall_full", "loop_sleeps" };

	for (int i = 0; i < 2; i++) {
		printf("        daemon %c:", 'a' + i);
		for (unsigned k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			printf(" %s %llu", names[k], counter(p->s[i].ctx, names[k]));
		printf("\n");
	}
}

static void odpemu_round(struct round *r, double seconds)
{
	struct h_pair p;

	pair_up(&p, ODPEMU_FAULT_POLICY_DEFAULT);
	r->good = write_goodput(&p, seconds);
	print_round_good(r);
	r->rate = write_rate(&p, seconds / 2);
	printf("odpemu  8 B WRITE message rate (poll-us %s, %u in flight): %.3f M/s\n",
	       r->poll_us, RATE_DEPTH, r->rate);
	r->lat = lat_pingpong(&p, cfg.lat_n, cfg.lat_warm, cfg.quick ? 1.0 : 4.0, &r->lat_n);
	print_round_lat(r);
	r->big = big_pingpong(&p, cfg.lat_n / 4, cfg.lat_warm / 4, cfg.quick ? 1.0 : 4.0,
			      &r->big_n);
	printf("odpemu  64 KiB WRITE ping-pong (poll-us %s): median %.1f us per transfer, p99 "
	       "%.1f us (%u round trips)\n", r->poll_us, r->big.median_us, r->big.p99_us,
	       r->big_n);
	print_path_counters(&p);
	pair_close(&p);
}

/* --profile cold: cold ODP 64 KiB WRITEs with the stall policy, region after region. */
static void profile_cold(void)
{
	struct h_pair p;
	uint64_t end = bench_now_ns() + (uint64_t)(cfg.profile_s * 1e9);
	double cold = 0;
	unsigned n = 0;

	pair_up(&p, ODPEMU_FAULT_POLICY_STALL);
	while (bench_now_ns() < end && n < 100000) {
		cold += odp_first_touch(&p, cfg.odp_bytes, 0.01).cold;
		n++;
	}
	printf("odpemu  cold ODP 64 KiB WRITE, stall, %u regions of %" PRIu64 " MiB: %.3f GB/s "
	       "average\n", n, cfg.odp_bytes / MiB, n ? cold / n : 0);
	print_path_counters(&p);
	pair_close(&p);
}

/* --profile: one figure for profile_s seconds, nothing else (run it under perf). */
static void profile_only(struct round *r)
{
	struct h_pair p;

	if (!strcmp(cfg.profile, "cold")) {
		profile_cold();
		return;
	}
	pair_up(&p, ODPEMU_FAULT_POLICY_DEFAULT);
	if (!strcmp(cfg.profile, "goodput")) {
		r->good = write_goodput(&p, cfg.profile_s);
		print_round_good(r);
	} else {
		r->lat = lat_pingpong(&p, 10000000, cfg.lat_warm, cfg.profile_s, &r->lat_n);
		print_round_lat(r);
	}
	pair_close(&p);
}

static struct odp_result odp_round(enum odpemu_fault_policy policy)
{
	struct odp_result o;
	struct h_pair p;

	running = "ODP first touch";
	pair_up(&p, policy);
	o = odp_first_touch(&p, cfg.odp_bytes, cfg.bulk_s / 2);
	print_odp(policy == ODPEMU_FAULT_POLICY_STALL ? "stall" : "rnr (default)", &o);
	pair_close(&p);
	return o;
}

struct raw_figures {
	struct raw_bulk bulk, gso, small;
	struct pct blocking, busy;
	double tcp_gbps;		/* kernel TCP stream, 64 KiB writes */
	struct pct tcp8, tcp64k;	/* kernel TCP ping-pong, per transfer */
	double fi8, fi64k;		/* fi_pingpong -p tcp usec/xfer; < 0: not run */
	struct pct relay;		/* the zero-work relay of odpemu's shape, half RTT */
	struct first_touch touch;	/* process_vm_writev into fresh pages, then warm */
	int touch_rc;			/* first_touch_measure's */
};

/* Kernel TCP between the same two addresses: a 64 KiB-write stream (iperf3 -l 64K). */
static double tcp_stream(struct raw_shared *sh, double seconds)
{
	struct raw_job rx = { .kind = JOB_TCP_RX }, tx = { .kind = JOB_TCP_TX, .seconds = seconds };
	double ns;

	running = "kernel TCP stream";
	memset(sh, 0, sizeof(*sh));
	raw_pair(rx, tx, sh);
	if (sh->rc[0] || sh->rc[1])
		die("TCP sender %s, receiver %s", strerror(-sh->rc[0]), strerror(-sh->rc[1]));
	ns = (double)(sh->trx.last_ns - sh->trx.first_ns);
	return ns > 0 ? (double)sh->trx.bytes / ns : 0;
}

/* Kernel TCP ping-pong of msg bytes (TCP_NODELAY, blocking): half of each round trip. */
static struct pct tcp_pingpong(struct raw_shared *sh, unsigned msg, unsigned n)
{
	struct raw_job rx = { .kind = JOB_TCP_ECHO, .dgram = msg },
		tx = { .kind = JOB_TCP_PING, .dgram = msg, .n = n, .warm = n / 10 };

	running = "kernel TCP ping-pong";
	memset(sh, 0, sizeof(*sh));
	raw_pair(rx, tx, sh);
	if (sh->rc[0] || sh->rc[1])
		die("TCP pinger %s, echo %s", strerror(-sh->rc[0]), strerror(-sh->rc[1]));
	return percentiles(sh->half, n);
}

/* libfabric's tcp provider, if fi_pingpong is installed: usec per transfer, or -1. */
static double fi_anchor(unsigned msg, unsigned iters)
{
	double us = -1;
	int rc;

	if (!fi_pingpong_available())
		return -1;
	rc = fi_pingpong_run(env.netns ? env.host[1].ns : NULL, env.netns ? env.host[0].ns : NULL,
			     env.host[1].addr, msg, iters, &us);
	if (rc) {
		printf("fi_pingpong -S %u: %s (figure left out)\n", msg, strerror(-rc));
		return -1;
	}
	return us;
}

/* The floor of a daemon design on this machine: odpemu's 8 B WRITE ping-pong shape (app ->
 * shared memory -> relay process -> UDP -> relay -> shared memory -> app, and back, all
 * four spinning with sched_yield) with no NIC work at all (relay_anchor.c). */
static struct pct relay_floor(struct raw_shared *sh)
{
	int rc;

	running = "zero-work relay";
	memset(sh, 0, sizeof(*sh));
	rc = relay_pingpong(env.netns ? env.host[0].ns : NULL, env.netns ? env.host[1].ns : NULL,
			    env.host[0].addr, env.host[1].addr, raw_port(), cfg.lat_warm,
			    cfg.lat_n, sh->half);
	if (rc)
		die("zero-work relay: %s", strerror(-rc));
	return percentiles(sh->half, cfg.lat_n);
}

static void tcp_all(struct raw_figures *f, struct raw_shared *sh)
{
	f->tcp_gbps = tcp_stream(sh, cfg.bulk_s);
	printf("kernel TCP stream, 64 KiB writes: %.3f GB/s\n", f->tcp_gbps);
	f->tcp8 = tcp_pingpong(sh, LAT_BYTES, cfg.lat_n);
	printf("kernel TCP 8 B ping-pong half RTT: median %.1f us, p99 %.1f us\n",
	       f->tcp8.median_us, f->tcp8.p99_us);
	f->tcp64k = tcp_pingpong(sh, PP_BIG, cfg.lat_n / 4);
	printf("kernel TCP 64 KiB ping-pong per transfer: median %.1f us, p99 %.1f us\n",
	       f->tcp64k.median_us, f->tcp64k.p99_us);
	f->relay = relay_floor(sh);
	printf("zero-work relay (odpemu's shape, no NIC) half RTT: median %.1f us, p99 %.1f us\n",
	       f->relay.median_us, f->relay.p99_us);
	f->fi8 = fi_anchor(LAT_BYTES, cfg.quick ? 2000 : 10000);
	f->fi64k = fi_anchor(PP_BIG, cfg.quick ? 500 : 2000);
	if (f->fi8 >= 0)
		printf("fi_pingpong -p tcp -e msg: 8 B %.2f us, 64 KiB %.2f us per transfer\n",
		       f->fi8, f->fi64k);
	else
		printf("fi_pingpong (libfabric-bin) not installed: its anchor is left out\n");
}

static void raw_all(struct raw_figures *f)
{
	size_t len = sizeof(struct raw_shared) + cfg.lat_n * sizeof(uint64_t);
	struct raw_shared *sh = mmap(NULL, len, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (sh == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	f->bulk = raw_bulk(sh, cfg.bulk_s, false, WIRE_4K);
	printf("raw UDP %u-byte datagrams, sendmmsg/recvmmsg: %.3f GB/s payload (%.0f kpkt/s), "
	       "loss %.2f%%\n", WIRE_4K, f->bulk.gbps, f->bulk.mpps * 1e3, f->bulk.loss * 100);
	f->gso = raw_bulk(sh, cfg.bulk_s / 2, true, WIRE_4K);
	printf("raw UDP the same with GSO: %.3f GB/s, loss %.2f%%\n", f->gso.gbps,
	       f->gso.loss * 100);
	f->small = raw_bulk(sh, cfg.bulk_s / 2, false, WIRE_LAT);
	printf("raw UDP %u-byte datagrams (an 8 B WRITE), sendmmsg/recvmmsg: %.0f kpkt/s, loss "
	       "%.2f%%\n", WIRE_LAT, f->small.mpps * 1e3, f->small.loss * 100);
	f->blocking = raw_pingpong(sh, false);
	printf("raw UDP %u-byte ping-pong half RTT, blocking:  median %.1f us, p99 %.1f us\n",
	       WIRE_LAT, f->blocking.median_us, f->blocking.p99_us);
	f->busy = raw_pingpong(sh, true);
	printf("raw UDP %u-byte ping-pong half RTT, busy-poll: median %.1f us, p99 %.1f us\n",
	       WIRE_LAT, f->busy.median_us, f->busy.p99_us);
	tcp_all(f, sh);
	munmap(sh, len);
	/* per packet, as odpemud writes an ODP region (4 KiB RoCE MTU on this veth) */
	f->touch_rc = first_touch_measure(cfg.odp_bytes, 4096, &f->touch);
	if (f->touch_rc)
		printf("kernel first touch: not measured: %s\n", strerror(-f->touch_rc));
	else
		printf("kernel process_vm_writev, 4 KiB per call, %" PRIu64 " MiB: into fresh pages "
		       "%.3f GB/s (%.2f us a page), warm %.3f GB/s (%.2f us): first touch adds "
		       "%.2f us a page\n", cfg.odp_bytes / MiB, f->touch.cold_gbps,
		       f->touch.cold_ns_page / 1e3, f->touch.warm_gbps, f->touch.warm_ns_page / 1e3,
		       (f->touch.cold_ns_page - f->touch.warm_ns_page) / 1e3);
}

/* The cold/warm ratio the stall run would have if a cold page cost the daemon only what
 * the kernel's first touch adds to its warm time per page: the bound of a responder whose
 * one thread both populates and copies. */
static double touch_bound(const struct first_touch *t, double warm_gbps)
{
	double warm_page = 4096.0 / warm_gbps;	/* ns the daemon spends per page, warm */
	double extra = t->cold_ns_page - t->warm_ns_page;

	return warm_page / (warm_page + (extra > 0 ? extra : 0));
}

static void print_table(const struct round r[NROUNDS], const struct raw_figures *raw,
			const struct odp_result *odp, const struct odp_result *odp_stall)
{
	static const char *const goal_lat[NROUNDS] = { "<= 2.5 x raw blocking",
		"<= 2.5 x raw blocking", "<= 2.5 x raw busy-poll", "<= 2.5 x raw blocking" };
	const struct pct *lat_ref[NROUNDS] = { &raw->blocking, &raw->blocking, &raw->busy,
		&raw->blocking };
	char name[64];

	printf("\n%-36s %9s %9s %-5s %6s  %-24s %s\n", "figure", "odpemu", "anchor", "unit",
	       "ratio", "goal", "");
	for (int i = 0; i < NROUNDS; i++) {
		snprintf(name, sizeof(name), "64 KiB WRITE goodput, poll-us %s", r[i].poll_us);
		row(name, "GB/s", r[i].good, raw->bulk.gbps, true, 0.6, ">= 0.60 x raw");
	}
	for (int i = 0; i < NROUNDS; i++) {
		snprintf(name, sizeof(name), "64 KiB WRITE vs TCP, poll-us %s", r[i].poll_us);
		row(name, "GB/s", r[i].good, raw->tcp_gbps, true, 1.0, ">= 1.0 x TCP stream");
	}
	for (int i = 0; i < NROUNDS; i++) {
		snprintf(name, sizeof(name), "64 KiB ping-pong, poll-us %s", r[i].poll_us);
		row(name, "us", r[i].big.median_us, raw->tcp64k.median_us, false, 1.0,
		    "<= 1.0 x TCP ping-pong");
	}
	for (int i = 0; i < NROUNDS; i++) {
		snprintf(name, sizeof(name), "8 B half RTT vs relay, poll-us %s", r[i].poll_us);
		row(name, "us", r[i].lat.median_us, raw->relay.median_us, false, 1.2,
		    "<= 1.2 x zero-work relay");
	}
	row("8 B half RTT vs TCP (default)", "us", r[0].lat.median_us, raw->tcp8.median_us,
	    false, 0, "(TCP 8 B ping-pong)");
	if (raw->fi8 >= 0) {
		row("8 B half RTT vs fi_pingpong tcp", "us", r[0].lat.median_us, raw->fi8, false, 0,
		    "(libfabric tcp, msg)");
		row("64 KiB ping-pong vs fi_pingpong", "us", r[0].big.median_us, raw->fi64k, false,
		    0, "(libfabric tcp, msg)");
	}
	for (int i = 0; i < NROUNDS; i++) {
		snprintf(name, sizeof(name), "8 B WRITE rate, poll-us %s", r[i].poll_us);
		row(name, "M/s", r[i].rate, raw->small.mpps, true, 5.0,
		    r[i].rate >= 1.0 ? ">= 5 x raw, >= 1 M/s: yes" : ">= 5 x raw, >= 1 M/s: no");
	}
	for (int i = 0; i < NROUNDS; i++) {
		snprintf(name, sizeof(name), "8 B half RTT median, poll-us %s", r[i].poll_us);
		row(name, "us", r[i].lat.median_us, lat_ref[i]->median_us, false, 2.5,
		    goal_lat[i]);
		snprintf(name, sizeof(name), "8 B half RTT p99, poll-us %s", r[i].poll_us);
		row(name, "us", r[i].lat.p99_us, lat_ref[i]->p99_us, false, 0, "");
	}
	row("ODP cold 64 KiB WRITE, stall", "GB/s", odp_stall->cold, odp_stall->warm, true, 0.8,
	    ">= 0.8 x warm");
	row("ODP cold 64 KiB WRITE, rnr", "GB/s", odp->cold, odp->warm, true, 0.3,
	    ">= 0.3 x warm");
	if (!raw->touch_rc && odp_stall->warm > 0)
		printf("%-36s %9.2f %9s %-5s %6s  %-24s %s\n", "stall cold/warm if first touch",
		       touch_bound(&raw->touch, odp_stall->warm), "", "", "", "(bound, see below)",
		       "");
	printf("%-36s %9.2f %9s %-5s %6s  %-24s %s\n", "fault latency p50, stall (daemon)",
	       (double)odp_stall->lat_p50_ns / 1e3, "", "us", "", "<= 10 us",
	       odp_stall->lat_p50_ns <= 10000 ? "met" : "NOT MET");
	printf("%-36s %9.2f %9s %-5s %6s  %-24s %s\n", "fault latency p99, stall (daemon)",
	       (double)odp_stall->lat_p99_ns / 1e3, "", "us", "", "<= 100 us",
	       odp_stall->lat_p99_ns <= 100000 ? "met" : "NOT MET");
	printf("first touch: the kernel allocates, zeroes and maps a page the first time it is "
	       "written, inside the daemon's process_vm_writev (measured alone above); a "
	       "responder that populates on its own thread cannot beat the bound\n");
	printf("anchors: %s; raw UDP by sendmmsg/recvmmsg of %u without GSO; blocking ping-pong "
	       "is what an idle daemon does (sleeps in the kernel), busy-poll what a polling one "
	       "does; kernel TCP with TCP_NODELAY for ping-pongs\n", env.netns ?
	       "the same veth, sockets inside the two namespaces" : "loopback", UDP_RAW_BATCH);
}

/* ---- the same figures as an application pair sees them: odpemu-perf, two processes ---- */

/* odpemu-perf next to the daemon: ../tools/odpemu-perf from the daemon's directory. */
static const char *perf_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s", getenv("ODPEMUD"));
	*strrchr(buf, '/') = 0;
	strncat(buf, "/../tools/odpemu-perf", len - strlen(buf) - 1);
	return buf;
}

/* Run odpemu-perf in host `host`'s namespace with args; its stdout into out (client). */
static pid_t perf_spawn(int host, const char *const *args, int out_fd)
{
	const char *argv[24];
	char perf[PATH_MAX];
	int n = 0;
	pid_t pid = fork();

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Ours is 1 ns (main), and a fork's "default" slack is its parent's: give the tool
	 * the kernel's usual 50 us, which its naps rely on to leave room for the daemons. */
	prctl(PR_SET_TIMERSLACK, 50000ul);
	if (out_fd >= 0)
		dup2(out_fd, 1);
	else
		dup2(open("/dev/null", O_WRONLY), 1);
	if (env.netns) {
		argv[n++] = "ip";
		argv[n++] = "netns";
		argv[n++] = "exec";
		argv[n++] = env.host[host].ns;
	}
	argv[n++] = perf_path(perf, sizeof(perf));
	for (int i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	execvp(argv[0], (char *const *)argv);
	_exit(127);
}

/* One odpemu-perf client/server run; the value of `key` in the client's JSON, or -1. */
static double perf_figure(const char *mode, const char *iters, const char *key)
{
	const char *srv[] = { "write", mode, "-d", env.host[1].name, NULL };
	const char *cli[] = { "write", mode, "-n", iters, "--json", "-d", env.host[0].name,
		env.host[1].addr, NULL };
	char buf[16384], *at;
	int p[2], st;
	size_t got = 0;
	ssize_t k;
	pid_t s, c;

	if (pipe(p))
		return -1;
	s = perf_spawn(1, srv, -1);
	usleep(300000);		/* the server listening */
	c = perf_spawn(0, cli, p[1]);
	close(p[1]);
	while (got + 1 < sizeof(buf) && (k = read(p[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)k;
	buf[got] = 0;
	close(p[0]);
	waitpid(c, &st, 0);
	kill(s, SIGTERM);
	waitpid(s, NULL, 0);
	at = strstr(buf, key);
	if (at)
		at = strchr(at + strlen(key), ':');	/* "key":value, or "key" : value */
	return at && WIFEXITED(st) && !WEXITSTATUS(st) ? strtod(at + 1, NULL) : -1;
}

static void perf_figures(const struct round *r0, const struct raw_figures *raw)
{
	double bw = perf_figure("--bw", cfg.quick ? "2000" : "5000", "\"bw_avg_mbps\"");
	double lat = perf_figure("--lat", cfg.quick ? "500" : "2000", "\"t_median_us\"");

	printf("\nodpemu-perf (server and client: two processes, as applications run):\n");
	row("64 KiB WRITE goodput, odpemu-perf", "GB/s", bw / 1000, raw->bulk.gbps, true, 0.6,
	    ">= 0.60 x raw");
	row("2 B WRITE half RTT, odpemu-perf", "us", lat, raw->blocking.median_us, false, 2.5,
	    "<= 2.5 x raw blocking");
	printf("(one driver thread for both sides, above: %.3f GB/s, %.1f us)\n", r0->good,
	       r0->lat.median_us);
}

static void hosts_up(void)
{
	static const char *const wait_names[] = { "spin", "yield", "sleep" };
	const char *const first[] = { "--poll-us", cfg.poll_us, NULL };

	h_up(&env, cfg.poll_us ? first : NULL, cfg.poll_us ? first : NULL,
	     cfg.quick ? 120 : 300);
	pin_daemons();
	if (env.netns)
		printf("hosts: network namespaces %s (%s) and %s (%s), veth MTU 9000\n",
		       env.host[0].ns, env.host[0].addr, env.host[1].ns, env.host[1].addr);
	else
		printf("hosts: loopback %s and %s (not root: no namespaces)\n", env.host[0].addr,
		       env.host[1].addr);
	printf("daemon: %s%s; the client waits (completions, watched bytes) by %s; %s run\n",
	       getenv("ODPEMUD"), cfg.pin ? ", pinned a->CPU0 b->CPU1" : "",
	       wait_names[cfg.wait], cfg.quick ? "quick" : "full");
}

int main(int argc, char **argv)
{
	static const char *const poll50[] = { "--poll-us", "50", NULL };
	static const char *const poll1000[] = { "--poll-us", "1000", NULL };
	static const char *const poll0[] = { "--poll-us", "0", NULL };
	struct round r[NROUNDS] = { { .poll_us = "adaptive" }, { .poll_us = "50" },
		{ .poll_us = "1000" }, { .poll_us = "0" } };
	struct odp_result odp, odp_stall;
	struct raw_figures raw;

	parse_args(argc, argv);
	if (cfg.poll_us)
		r[0].poll_us = cfg.poll_us;
	default_daemon();
	setvbuf(stdout, NULL, _IOLBF, 0);
	prctl(PR_SET_TIMERSLACK, 1ul);	/* --wait sleep: 2 us naps, not 50 us of slack */
	print_machine();
	printf("load average (1 min) at start: %.2f (other work on the machine skews all "
	       "figures)\n", bench_load_avg());
	hosts_up();
	if (cfg.profile) {
		profile_only(&r[0]);
		return h_down(&env) ? 1 : 0;
	}

	/* odpemu, the daemons as started (default: adaptive polling). */
	odpemu_round(&r[0], cfg.bulk_s);
	odp = odp_round(ODPEMU_FAULT_POLICY_DEFAULT);
	odp_stall = odp_round(ODPEMU_FAULT_POLICY_STALL);
	/* The same path without odpemu (the daemons idle, asleep). */
	raw_all(&raw);
	/* odpemu again: daemons busy-polling a fixed 50 us (the default before adaptive
	 * polling), 1 ms before they sleep; then never polling. */
	running = "restart with --poll-us 50";
	restart_daemons(poll50);
	odpemu_round(&r[1], cfg.bulk_s / 2);
	running = "restart with --poll-us 1000";
	restart_daemons(poll1000);
	odpemu_round(&r[2], cfg.bulk_s / 2);
	running = "restart with --poll-us 0";
	restart_daemons(poll0);
	odpemu_round(&r[3], cfg.bulk_s / 2);

	running = "restart with the default --poll-us";
	restart_daemons(NULL);
	printf("load average (1 min) at end: %.2f\n", bench_load_avg());
	print_table(r, &raw, &odp, &odp_stall);
	perf_figures(&r[0], &raw);
	return h_down(&env) ? 1 : 0;
}
