/* SPDX-License-Identifier: MIT */
/*
 * Wire injection between two real daemons (emu/inject/wire.h), RC WRITEs of 64 KiB from host 0
 * to host 1, one at a time, every byte checked:
 *  - host 0 starts with --wire-loss 0.05 --seed 7: every WRITE completes, retransmits > 0,
 *    wire_dropped > 0 and exactly the drops the seeded decision function gives for the
 *    wire_matched packets; the daemon restarted with the same flags and the same traffic
 *    drops exactly as many packets of exactly as many;
 *  - wire-corrupt (set at run time), sent and received: the receiver's drop_icrc grows by
 *    exactly the wire_corrupted count;
 *  - wire-dup: the responder counts duplicate requests; wire-reorder: sequence NAKs;
 *    wire-delay-us: a WRITE takes at least the delay, a spread delay reorders;
 *  - rx: received packets lost; wire-match ack: only the responder's ACKs lost;
 *    wire-peer of another address: nothing touched;
 *  - odpemu-ctl inject sets and lists the knobs, odpemu-ctl stat shows wire_dropped;
 *  - bad flag values: one line naming the flag and the fix, exit status 2.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "headers.h"
#include "opcode.h"
#include "ops.h"
#include "t.h"
#include "inject/wire.h"

#define LEN (1u << 20)
#define MSG (64u << 10)		/* 16 packets at MTU 4096 */

static const char *const loss_flags[] = { "--wire-loss", "0.05", "--seed", "7", NULL };

struct rig {
	struct h_pair p;
	struct h_mem a, b;
};

static unsigned long long ctr(struct odpemu_context *c, const char *name)
{
	return h_counter(c, ODPEMU_COUNTERS_DEVICE, 0, name);
}

static unsigned long long qp_ctr(struct h_side *s, const char *name)
{
	return h_counter(s->ctx, ODPEMU_COUNTERS_QP, s->qp->handle, name);
}

static void knob(struct odpemu_context *c, const char *key, const char *value)
{
	int rc = odpemu_set_inject(c, key, value);

	T_CHECK(rc == 0, "set %s %s: %s (%s)", key, value, strerror(rc), odpemu_last_error(c));
}

/* A pair with pinned buffers (no page faults: the transport alone decides what is sent).
 * timeout: the QP's local ACK timeout exponent. */
static bool rig_up(struct h_env *e, struct rig *r, int timeout)
{
	struct h_qp_opts o;

	memset(r, 0, sizeof(*r));
	r->p.s[0].ctx = e->ctx[0];
	r->p.s[1].ctx = e->ctx[1];
	h_qp_opts_default(&o);
	o.timeout = timeout;
	if (h_pair_up(e, &r->p, &o)) {
		T_CHECK(0, "pair up");
		return false;
	}
	r->a.buf = h_cold(LEN);
	r->b.buf = h_cold(LEN);
	r->a.mr = odpemu_reg_mr(r->p.s[0].pd, r->a.buf, LEN, ODPEMU_ACCESS_LOCAL_WRITE);
	r->b.mr = odpemu_reg_mr(r->p.s[1].pd, r->b.buf, LEN, ODPEMU_ACCESS_LOCAL_WRITE |
				ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ);
	T_CHECK(r->a.mr && r->b.mr, "pinned MRs: %m");
	return r->a.mr && r->b.mr;
}

static void rig_down(struct rig *r)
{
	if (r->a.mr)
		odpemu_dereg_mr(r->a.mr);
	if (r->b.mr)
		odpemu_dereg_mr(r->b.mr);
	if (r->a.buf)
		munmap(r->a.buf, LEN + 4096);
	if (r->b.buf)
		munmap(r->b.buf, LEN + 4096);
	h_pair_down(&r->p);
}

/* n WRITEs of len bytes, one at a time, each checked byte for byte: how many landed. */
static unsigned writes(struct rig *r, unsigned n, uint32_t len, struct t_rng *rng,
		       const char *what)
{
	unsigned ok = 0;
	char tag[96];

	for (unsigned i = 0; i < n; i++) {
		size_t off = (size_t)i * len % LEN;
		struct odpemu_sge sge = { (uintptr_t)r->a.buf + off, len, r->a.mr->lkey };
		struct odpemu_send_wr wr = { .opcode = ODPEMU_WR_RDMA_WRITE, .num_sge = 1,
			.sg_list = &sge };

		t_fill(rng, r->a.buf + off, len);
		wr.wr.rdma.remote_addr = (uintptr_t)r->b.buf + off;
		wr.wr.rdma.rkey = r->b.mr->rkey;
		snprintf(tag, sizeof(tag), "%s: WRITE %u", what, i);
		if (!h_run_wr(&r->p, &wr, tag))
			break;
		if (memcmp(r->a.buf + off, r->b.buf + off, len)) {
			T_CHECK(0, "%s: bytes differ", tag);
			break;
		}
		ok++;
	}
	T_EQ(ok, n, what);
	return ok;
}

/* What the seeded decision drops of matched packets [from, to) of host 0's stream:
 * emu_wire_decide with the daemon's flags and seed, on packets of the same class. */
static unsigned long long expected_drops(const char *loss, uint64_t seed,
					 unsigned long long from, unsigned long long to)
{
	struct emu_wire_rules r;
	struct emu_wire_verdict v;
	struct nic_gid peer = nic_gid_from_v4(0x0a000002);
	uint8_t pkt[64] = { ROCE_OP_RC_RDMA_WRITE_MIDDLE };
	unsigned long long n = 0;

	emu_wire_rules_init(&r, seed);
	emu_wire_rules_set(&r, "wire-loss", loss, NULL, 0);
	for (unsigned long long i = 0; i < to; i++) {
		emu_wire_decide(&r, EMU_WIRE_TX, &peer, pkt, sizeof(pkt), 0, &v);
		n += i >= from && v.drop;
	}
	return n;
}

struct run {
	unsigned long long matched, dropped, retransmits;
};

/* The seeded run: host 0 loses 5 % of what it sends. timeout 16 (268 ms): a retransmit
 * only when a packet is really lost, even on a loaded machine, so both runs send the same
 * packets. */
static void seeded_run(struct h_env *e, struct run *out)
{
	struct rig r;
	struct odpemu_context *c = e->ctx[0];
	unsigned long long m0 = ctr(c, "wire_matched"), d0 = ctr(c, "wire_dropped");
	unsigned long long x0 = ctr(c, "retransmits"), g0 = ctr(c, "udp_tx_gso_sends");
	struct t_rng rng = { 11 };

	memset(out, 0, sizeof(*out));
	if (!rig_up(e, &r, 16))
		return;
	writes(&r, 100, MSG, &rng, "5 % loss");
	rig_down(&r);
	out->matched = ctr(c, "wire_matched") - m0;
	out->dropped = ctr(c, "wire_dropped") - d0;
	out->retransmits = ctr(c, "retransmits") - x0;
	T_CHECK(out->dropped > 0 && out->retransmits > 0, "loss: %llu dropped, %llu retransmits",
		out->dropped, out->retransmits);
	T_EQ(out->dropped, expected_drops("0.05", 7, m0, m0 + out->matched),
	     "wire_dropped is what the seeded stream drops of wire_matched");
	/* the survivors still leave in GSO sends, unless this kernel refuses them */
	T_CHECK(ctr(c, "udp_tx_gso_sends") > g0 || ctr(c, "udp_tx_gso_refused"),
		"no GSO send under loss");
	printf("seeded loss: %llu of %llu packets dropped, %llu retransmits\n", out->dropped,
	       out->matched, out->retransmits);
}

static void reproducible(struct h_env *e)
{
	struct run a, b;

	seeded_run(e, &a);
	odpemu_close_device(e->ctx[0]);
	e->ctx[0] = NULL;
	T_CHECK(h_daemon_stop(e, 0, SIGTERM) == 0, "host 0's daemon stopped cleanly");
	if (h_daemon_start(e, 0, loss_flags)) {
		T_CHECK(0, "host 0's daemon restarts");
		return;
	}
	e->ctx[0] = h_open(e, 0);
	seeded_run(e, &b);
	T_EQ(b.matched, a.matched, "the same seed and traffic: the same packets");
	T_EQ(b.dropped, a.dropped, "the same seed and traffic: the same drops");
	knob(e->ctx[0], "wire-loss", "0");
}

static void corrupt(struct h_env *e, struct t_rng *rng)
{
	struct rig r;
	struct odpemu_context *c0 = e->ctx[0], *c1 = e->ctx[1];
	unsigned long long k0 = ctr(c0, "wire_corrupted"), i1 = ctr(c1, "drop_icrc");
	unsigned long long k1;

	if (!rig_up(e, &r, 14))
		return;
	knob(c0, "wire-corrupt", "0.05");
	writes(&r, 40, MSG, rng, "corrupt sent");
	knob(c0, "wire-corrupt", "0");
	k0 = ctr(c0, "wire_corrupted") - k0;
	T_CHECK(k0 > 0, "corrupted on the way out: %llu", k0);
	T_EQ(ctr(c1, "drop_icrc") - i1, k0, "the receiver dropped each as a bad ICRC");
	/* the same on the way in: host 1 corrupts what it receives */
	k1 = ctr(c1, "wire_corrupted");
	i1 = ctr(c1, "drop_icrc");
	knob(c1, "wire-corrupt", "rx:0.05");
	writes(&r, 40, MSG, rng, "corrupt received");
	knob(c1, "wire-corrupt", "rx:0");
	k1 = ctr(c1, "wire_corrupted") - k1;
	T_CHECK(k1 > 0, "corrupted on the way in: %llu", k1);
	T_EQ(ctr(c1, "drop_icrc") - i1, k1, "dropped as a bad ICRC by nic/");
	printf("corrupt: %llu sent, %llu received, all dropped as bad ICRC\n", k0, k1);
	rig_down(&r);
}

static void dup_reorder_delay(struct h_env *e, struct t_rng *rng)
{
	struct rig r;
	struct odpemu_context *c = e->ctx[0];
	unsigned long long n, dups, naks;
	struct timespec t0, t1;
	double ms;

	if (!rig_up(e, &r, 14))
		return;
	n = ctr(c, "wire_duplicated");
	dups = qp_ctr(&r.p.s[1], "dup_requests");
	knob(c, "wire-dup", "0.05");
	writes(&r, 40, MSG, rng, "dup");
	knob(c, "wire-dup", "0");
	n = ctr(c, "wire_duplicated") - n;
	dups = qp_ctr(&r.p.s[1], "dup_requests") - dups;
	T_CHECK(n > 0 && dups > 0, "dup: %llu sent twice, the responder saw %llu duplicates", n,
		dups);
	printf("dup: %llu packets sent twice, %llu duplicate requests\n", n, dups);

	n = ctr(c, "wire_reordered");
	naks = qp_ctr(&r.p.s[1], "seq_naks_sent");
	knob(c, "wire-reorder", "0.05:2");
	writes(&r, 40, MSG, rng, "reorder");
	knob(c, "wire-reorder", "0");
	n = ctr(c, "wire_reordered") - n;
	naks = qp_ctr(&r.p.s[1], "seq_naks_sent") - naks;
	T_CHECK(n > 0 && naks > 0, "reorder: %llu held back, %llu sequence NAKs", n, naks);
	printf("reorder: %llu packets held back, %llu sequence NAKs\n", n, naks);

	n = ctr(c, "wire_delayed");
	knob(c, "wire-delay-us", "2000");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	writes(&r, 1, 8, rng, "delay 2 ms");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	T_CHECK(ms >= 2.0, "a WRITE delayed 2 ms completed in %.3f ms", ms);
	naks = qp_ctr(&r.p.s[1], "seq_naks_sent");
	knob(c, "wire-delay-us", "uniform:0-300");
	writes(&r, 20, MSG, rng, "jitter");
	knob(c, "wire-delay-us", "0");
	n = ctr(c, "wire_delayed") - n;
	naks = qp_ctr(&r.p.s[1], "seq_naks_sent") - naks;
	T_CHECK(n >= 20 * 16 && naks > 0, "delay: %llu delayed, jitter made %llu sequence NAKs",
		n, naks);
	printf("delay: a 2 ms delayed WRITE took %.3f ms; jitter: %llu sequence NAKs\n", ms,
	       naks);
	rig_down(&r);
}

static void directions_and_filters(struct h_env *e, struct t_rng *rng)
{
	struct rig r;
	struct odpemu_context *c0 = e->ctx[0], *c1 = e->ctx[1];
	unsigned long long d, m, x;

	if (!rig_up(e, &r, 14))
		return;
	/* host 1 loses 10 % of the WRITE packets it receives */
	d = ctr(c1, "wire_dropped");
	knob(c1, "wire-match", "write");
	knob(c1, "wire-loss", "rx:0.1");
	writes(&r, 30, MSG, rng, "rx loss");
	knob(c1, "wire-loss", "rx:0");
	T_CHECK(ctr(c1, "wire_dropped") > d, "rx loss: nothing dropped");
	/* host 1 loses a fifth of its ACKs, nothing else */
	d = ctr(c1, "wire_dropped");
	x = qp_ctr(&r.p.s[0], "retransmits");
	knob(c1, "wire-match", "ack");
	knob(c1, "wire-loss", "0.2");
	writes(&r, 40, 4096, rng, "ACK loss");
	knob(c1, "wire-loss", "0");
	knob(c1, "wire-match", "all");
	T_CHECK(ctr(c1, "wire_dropped") > d && qp_ctr(&r.p.s[0], "retransmits") > x,
		"ACK loss: %llu ACKs dropped, %llu retransmits", ctr(c1, "wire_dropped") - d,
		qp_ctr(&r.p.s[0], "retransmits") - x);
	/* a filter on another peer: host 0's packets are not touched. (Not its retransmits:
	 * an ACK timer that runs out on a slow build, ThreadSanitizer's, resends with nothing
	 * lost; the wire's own counters say what the filter did.) */
	m = ctr(c0, "wire_matched");
	d = ctr(c0, "wire_dropped");
	knob(c0, "wire-peer", "192.0.2.1");
	knob(c0, "wire-loss", "1");
	writes(&r, 10, MSG, rng, "another peer's loss");
	knob(c0, "wire-loss", "0");
	knob(c0, "wire-peer", "any");
	T_EQ(ctr(c0, "wire_matched"), m, "another peer: nothing matched");
	T_EQ(ctr(c0, "wire_dropped"), d, "another peer: nothing dropped");
	rig_down(&r);
}

/* ---- odpemu-ctl ---- */

/* Run odpemu-ctl args (bounded: 20 s): exit status, output in out. */
static int ctl(const char *const *args, char *out, size_t outlen)
{
	const char *argv[16], *path = getenv("ODPEMU_CTL");
	int n = 0, st;

	argv[n++] = path && *path ? path : "odpemu-ctl";
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	st = h_capture(argv, 20, out, outlen);
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void expect_ctl(const char *const *args, int code, const char *text)
{
	char out[8192];
	int rc = ctl(args, out, sizeof(out));

	T_CHECK(rc == code && strstr(out, text), "odpemu-ctl %s %s %s: exit %d (want %d), "
		"output lacks '%s':\n%s", args[0], args[1], args[2], rc, code, text, out);
}

static void with_ctl(struct h_env *e, struct t_rng *rng)
{
	const char *dev = e->host[0].name;
	char out[16384], *line;
	unsigned long long dropped = 0;
	struct rig r;

	expect_ctl((const char *const[]){ "inject", "-d", dev, "wire-loss", "0.1", "wire-match",
					  "write", NULL }, 0, "wire-loss = 0.1");
	expect_ctl((const char *const[]){ "inject", "-d", dev, NULL }, 0,
		   "wire-loss = tx:0.1 rx:0");
	expect_ctl((const char *const[]){ "inject", "-d", dev, NULL }, 0, "wire-match = write");
	expect_ctl((const char *const[]){ "inject", "-d", dev, "wire-dup", "2", NULL }, 1,
		   "P a probability 0..1");
	expect_ctl((const char *const[]){ "inject", "-d", dev, "wire-bogus", "1", NULL }, 2,
		   "unknown knob");
	if (rig_up(e, &r, 14)) {
		writes(&r, 20, MSG, rng, "loss set by odpemu-ctl");
		rig_down(&r);
	}
	expect_ctl((const char *const[]){ "inject", "-d", dev, "--wire-loss", "0", "wire-match",
					  "all", NULL }, 0, "wire-match = all");
	T_EQ(ctl((const char *const[]){ "stat", "-d", dev, NULL }, out, sizeof(out)), 0, "stat");
	line = strstr(out, "wire_dropped");
	T_CHECK(line && sscanf(line, "wire_dropped %llu", &dropped) == 1 && dropped > 0,
		"odpemu-ctl stat shows wire_dropped > 0:\n%s", out);
	T_EQ(dropped, ctr(e->ctx[0], "wire_dropped"), "stat agrees with the counters");
}

/* ---- bad flags ---- */

static void refusals(struct h_env *e)
{
	static const char *const cases[][3] = {
		{ "--wire-loss", "1.5", "P a probability 0..1" },
		{ "--wire-dup", "rx:-1", "[tx:|rx:|both:]P" },
		{ "--wire-reorder", "0.1:0", "DEPTH 1..64" },
		{ "--wire-delay-us", "sometimes", "uniform:A-B" },
		{ "--wire-corrupt", "0.5@2s/1s", "0 < ON <= PERIOD" },
		{ "--wire-match", "writes", "no opcode class" },
		{ "--wire-peer", "nowhere", "IPv4 or IPv6" },
	};
	char out[4096];

	for (size_t i = 0; i < T_ARRAY_SIZE(cases); i++) {
		const char *args[] = { "--addr", "127.0.0.1", cases[i][0], cases[i][1], NULL };
		int st = h_run(e, 0, args, out, sizeof(out)), lines = 0;

		for (const char *q = out; (q = strchr(q, '\n')); q++)
			lines++;
		T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && lines == 1 &&
			strstr(out, cases[i][0]) && strstr(out, cases[i][2]),
			"%s %s: status %#x, want 2 and one line with '%s': %s", cases[i][0],
			cases[i][1], st, cases[i][2], out);
	}
}

static void body(struct h_env *e)
{
	reproducible(e);
	corrupt(e, &e->rng);
	dup_reorder_delay(e, &e->rng);
	directions_and_filters(e, &e->rng);
	with_ctl(e, &e->rng);
	refusals(e);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "e2e-wire", .seed = 17, .watchdog_s = 600,
		.daemon_args = { loss_flags, NULL }, .open = H_OPEN_BOTH, .body = body };

	return h_main(argc, argv, &t);
}
