/* SPDX-License-Identifier: MIT */
/*
 * Live-capture conformance: what two real daemons put on the wire is RoCEv2 as Wireshark
 * and scapy understand it. dumpcap records host a's interface (its veth, or lo without
 * namespaces) while every RC verb runs on pinned and ODP MRs with single- and multi-packet
 * sizes, every byte checked, and while the daemons' connection managers (emu/cm/, driven
 * through include/odpemu/cm.h as test_cm.c does) exchange their MADs: one connection from
 * a to a listener on b accepted, established and disconnected (REQ, REP, RTU, DREQ, DREP),
 * and one to a port nobody listens on, rejected (REJ, reason 8 INVALID_SERVICE_ID). Then:
 *  - tshark decodes every captured RoCEv2 datagram as InfiniBand (a BTH), with no malformed
 *    packet and no expert info of error severity;
 *  - every request and response opcode those verbs need was seen, and nothing else; the
 *    CM's one is UD SEND Only (0x64);
 *  - every UD SEND Only is a CM MAD as IBA 12.6 sends it (to QP1, Q_Key 0x80010000,
 *    management class 0x07), and each of REQ, REP, RTU, DREQ, DREP and REJ was seen as
 *    tshark decodes it (the REJ with reason 8), and no other CM attribute;
 *  - icrc_check.py (scapy) recomputes every IPv4 ICRC, the CM MADs' included (it fails
 *    when any of those six messages is missing: --require-cm), and finds it equal to the
 *    wire's.
 * Capturing needs root (or dumpcap's capabilities): without root, a capture that cannot
 * start skips (77). $ODPEMU_CAPTURE_KEEP=path keeps a copy of the capture.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cm_mad.h"
#include "harness.h"
#include "odpemu/cm.h"
#include "opcode.h"
#include "ops.h"
#include "t.h"

#define BUF (64u << 10)
#define CAPTURE_START_MS 10000	/* dumpcap must be capturing by then */
#define CAPTURE_STOP_MS 10000	/* and gone this long after SIGINT */
#define TOOL_TIMEOUT_MS 120000	/* tshark or the ICRC script on the capture */
#define EXPERT_ERROR 0x00800000	/* Wireshark's PI_ERROR severity */
#define CM_WAIT_MS 5000		/* one CM event: a round trip on a quiet link, with margin */

/* BTH opcodes (its first byte): RC for the verbs, UD SEND Only for the CM's MADs (to QP1,
 * cm_mad.h). Expected ones must all appear in the capture. */
static const struct opcode_info {
	const char *name;
	bool expected;
} opcodes[256] = {
	[0x00] = { "SEND First", true },
	[0x01] = { "SEND Middle", true },
	[0x02] = { "SEND Last", true },
	[0x03] = { "SEND Last with Immediate", true },
	[0x04] = { "SEND Only", true },
	[0x05] = { "SEND Only with Immediate", true },
	[0x06] = { "RDMA WRITE First", true },
	[0x07] = { "RDMA WRITE Middle", true },
	[0x08] = { "RDMA WRITE Last", true },
	[0x09] = { "RDMA WRITE Last with Immediate", true },
	[0x0A] = { "RDMA WRITE Only", true },
	[0x0B] = { "RDMA WRITE Only with Immediate", true },
	[0x0C] = { "RDMA READ Request", true },
	[0x0D] = { "RDMA READ Response First", true },
	[0x0E] = { "RDMA READ Response Middle", true },
	[0x0F] = { "RDMA READ Response Last", true },
	[0x10] = { "RDMA READ Response Only", true },
	[0x11] = { "Acknowledge", true },
	[0x12] = { "Atomic Acknowledge", true },
	[0x13] = { "CmpSwap", true },
	[0x14] = { "FetchAdd", true },
	[0x16] = { "SEND Last with Invalidate", false },
	[0x17] = { "SEND Only with Invalidate", false },
	[0x1C] = { "FLUSH (raw: unknown to tshark 4.0)", true },
	[0x1D] = { "ATOMIC WRITE (raw: unknown to tshark 4.0)", true },
	[ROCE_OP_UD_SEND_ONLY] = { "UD SEND Only (CM MADs)", true },
};

/* CM attribute IDs the exchange must put on the wire; any other one (MRA: the daemons
 * never delay, LAP, SIDR) is a failure, as an unexpected opcode is. */
static const bool cm_expected[CM_ATTR_APR + 1] = {
	[CM_ATTR_REQ] = true, [CM_ATTR_REP] = true, [CM_ATTR_RTU] = true,
	[CM_ATTR_DREQ] = true, [CM_ATTR_DREP] = true, [CM_ATTR_REJ] = true,
};


/* ---- child processes: every one bounded, none outliving the test ---- */

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void redirect(const char *path, int fd)
{
	int f;

	if (!path)
		return;
	f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (f >= 0) {
		dup2(f, fd);
		close(f);
	}
}

/* Fork argv with stdout/stderr to files (NULL: inherited). The child gets SIGTERM if the
 * test dies first, whatever the way (the harness's watchdog included). */
static pid_t start(const char *const *argv, const char *out, const char *err)
{
	pid_t parent = getpid(), pid = fork();

	if (pid != 0)
		return pid;
	redirect(out, 1);
	redirect(err, 2);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)	/* the parent died before prctl */
		_exit(127);
	execvp(argv[0], (char *const *)argv);
	fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Wait up to ms for pid; then SIGKILL it. Its wait status, or -1 if it had to be killed. */
static int reap(pid_t pid, long ms)
{
	long long end = ms_now() + ms;
	int st;

	while (ms_now() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* Run argv to completion (bounded); true if it exited 0. */
static bool run_tool(const char *const *argv, const char *out, const char *err)
{
	pid_t pid = start(argv, out, err);
	int st = pid > 0 ? reap(pid, TOOL_TIMEOUT_MS) : -1;

	if (st == -1)
		fprintf(stderr, "%s: did not finish in %d s\n", argv[0], TOOL_TIMEOUT_MS / 1000);
	return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void show_file(const char *path, const char *what)
{
	char line[512];
	FILE *f = fopen(path, "r");

	fprintf(stderr, "---- %s ----\n", what);
	while (f && fgets(line, sizeof(line), f))
		fputs(line, stderr);
	if (f)
		fclose(f);
}

static bool file_has(const char *path, const char *needle)
{
	char line[512];
	bool found = false;
	FILE *f = fopen(path, "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* ---- the capture ---- */

static bool no_gso;	/* the daemons run with --no-gso */

struct capture {
	pid_t pid;
	char file[200], err[200];	/* in the harness's run directory: removed with it */
	char iface[32];
	char filter[192];
};

static struct capture *live_capture;

/* At exit (a failed T_CHECK path, an exit() in the harness): no dumpcap left behind. */
static void capture_kill(void)
{
	if (live_capture && live_capture->pid > 0) {
		kill(live_capture->pid, SIGKILL);
		waitpid(live_capture->pid, NULL, 0);
		live_capture->pid = 0;
	}
}

/* Start dumpcap on host a's interface; true once it is capturing. */
static bool capture_start(struct h_env *e, struct capture *c)
{
	const char *argv[24];
	long long end;
	int n = 0;

	memset(c, 0, sizeof(*c));
	if (e->netns)	/* host a's interface in its namespace */
		snprintf(c->iface, sizeof(c->iface), "%s", e->host[0].dev);
	else
		strcpy(c->iface, "lo");
	snprintf(c->filter, sizeof(c->filter), "udp dst port %u and (host %s or host %s)",
		 e->port, e->host[0].addr, e->host[1].addr);
	snprintf(c->file, sizeof(c->file), "%s/capture.pcap", e->rundir);
	snprintf(c->err, sizeof(c->err), "%s/dumpcap.stderr", e->rundir);
	if (e->netns) {
		argv[n++] = "ip";
		argv[n++] = "netns";
		argv[n++] = "exec";
		argv[n++] = e->host[0].ns;
	}
	argv[n++] = "dumpcap";
	argv[n++] = "-i";
	argv[n++] = c->iface;
	argv[n++] = "-f";
	argv[n++] = c->filter;
	argv[n++] = "-P";		/* classic pcap */
	argv[n++] = "-w";
	argv[n++] = c->file;
	argv[n++] = "-a";
	argv[n++] = "duration:300";	/* the watchdog's bound, should all else fail */
	argv[n] = NULL;
	c->pid = start(argv, NULL, c->err);
	if (c->pid < 0)
		return false;
	live_capture = c;
	atexit(capture_kill);
	/* "Capturing on" comes first (even when opening the interface then fails); the file
	 * header is written only once the socket and its filter are in place. */
	for (end = ms_now() + CAPTURE_START_MS; ms_now() < end; sleep_ms(20)) {
		struct stat sb;
		int st;

		if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
			c->pid = 0;
			show_file(c->err, "dumpcap stderr");
			return false;
		}
		if (!stat(c->file, &sb) && sb.st_size >= 24 && file_has(c->err, "Capturing on")) {
			sleep_ms(100);	/* margin for the packet socket's ring */
			return true;
		}
	}
	show_file(c->err, "dumpcap stderr (not capturing in time)");
	capture_kill();
	return false;
}

/* SIGINT makes dumpcap flush and close the file; true if it did in time. */
static bool capture_stop(struct capture *c)
{
	int st;

	sleep_ms(200);	/* the last ACKs are on the wire; let the ring drain */
	kill(c->pid, SIGINT);
	st = reap(c->pid, CAPTURE_STOP_MS);
	c->pid = 0;
	T_CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"dumpcap did not stop cleanly on SIGINT (status %#x)", st);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
		show_file(c->err, "dumpcap stderr");
	return st != -1;
}

/* dumpcap's closing summary; a dropped packet would make the opcode checks meaningless. */
static void capture_drops(const struct capture *c)
{
	char line[512];
	FILE *f = fopen(c->err, "r");

	while (f && fgets(line, sizeof(line), f)) {
		const char *s = strstr(line, "dropped on interface");
		unsigned long got, dropped;

		/* "... dropped on interface 'Loopback: lo': 257/0 (pcap:0/dumpcap:0/...)" */
		if (!s || !(s = strstr(s, "': ")) || sscanf(s + 3, "%lu/%lu", &got, &dropped) != 2)
			continue;
		printf("dumpcap: %lu packets received, %lu dropped\n", got, dropped);
		T_EQ(dropped, 0, "packets dumpcap dropped");
	}
	if (f)
		fclose(f);
}

/* $ODPEMU_CAPTURE_KEEP=path: keep a copy of the capture (the run directory goes away). */
static void keep_capture(const struct capture *c)
{
	const char *dst = getenv("ODPEMU_CAPTURE_KEEP");
	const char *argv[] = { "cp", c->file, dst, NULL };

	if (dst && *dst)
		T_CHECK(run_tool(argv, NULL, NULL), "cannot copy the capture to %s", dst);
}

/* ---- the verbs exchange (its data checked; the capture is checked afterwards) ---- */

static struct odpemu_mr *reg(struct odpemu_pd *pd, void *buf, bool odp)
{
	int acc = ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
		  ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC |
		  ODPEMU_ACCESS_FLUSH_GLOBAL | (odp ? ODPEMU_ACCESS_ON_DEMAND : 0);
	struct odpemu_mr *mr = odpemu_reg_mr(pd, buf, BUF, acc);

	T_CHECK(mr != NULL, "reg_mr (%s): %s", odp ? "odp" : "pinned", strerror(errno));
	return mr;
}

/* Every verb on one QP pair, MRs pinned or ODP (fresh memory: the responder faults). */
static void exchange(struct h_env *e, struct odpemu_context **ctx, bool odp,
		     enum odpemu_fault_policy pol)
{
	/* 1 B has 3 bytes of pad; 4 KiB is exactly one PMTU; 4097 B is First+Last;
	 * 20 KiB is First, 3 x Middle, Last. */
	static const uint32_t sizes[] = { 1, 64, 4096, 4097, 20u << 10 };
	struct h_mem a = { h_cold(BUF), NULL }, b = { h_cold(BUF), NULL };
	struct h_pair p = { 0 };
	struct h_qp_opts o;
	char tag[48];

	h_qp_opts_default(&o);
	o.policy = pol;
	p.s[0].ctx = ctx[0];
	p.s[1].ctx = ctx[1];
	snprintf(tag, sizeof(tag), "%s/%s", odp ? "odp" : "pinned", odpemu_fault_policy_str(pol));
	if (h_pair_up(e, &p, &o)) {
		T_CHECK(0, "%s: pair up", tag);
		return;
	}
	a.mr = reg(p.s[0].pd, a.buf, odp);
	b.mr = reg(p.s[1].pd, b.buf, odp);
	if (a.mr && b.mr) {
		for (unsigned i = 0; i < T_ARRAY_SIZE(sizes); i++)
			h_data_ops(&p, &a, &b, sizes[i], tag, &e->rng);
		h_atomic_ops(&p, &a, &b, tag);
	}
	if (a.mr)
		odpemu_dereg_mr(a.mr);
	if (b.mr)
		odpemu_dereg_mr(b.mr);
	h_pair_down(&p);
	munmap(a.buf, BUF + 4096);
	munmap(b.buf, BUF + 4096);
}

/* ---- the connection managers' exchange (CM MADs; the capture checks them afterwards) ---- */

struct cm_end {
	struct h_side s;		/* its QP: what the CM messages describe */
	struct odpemu_cm_channel *ch;
};

/* The next event on ch within CM_WAIT_MS, of type want (test_cm.c's expect). */
static bool cm_expect(struct odpemu_cm_channel *ch, enum odpemu_cm_event_type want,
		      struct odpemu_cm_event *ev, const char *when)
{
	struct pollfd p = { ch->fd, POLLIN, 0 };

	if (poll(&p, 1, CM_WAIT_MS) != 1) {
		T_CHECK(0, "CM, %s: no event within %d ms (wanted %s)", when, CM_WAIT_MS,
			odpemu_cm_event_str(want));
		return false;
	}
	T_EQ(odpemu_cm_get_event(ch, ev), 0, "odpemu_cm_get_event");
	T_CHECK(ev->type == want, "CM, %s: got %s (status %d), wanted %s", when,
		odpemu_cm_event_str(ev->type), ev->status, odpemu_cm_event_str(want));
	return ev->type == want;
}

static struct odpemu_cm_qp cm_qp(const struct cm_end *e, uint32_t psn)
{
	return (struct odpemu_cm_qp){ .qpn = e->s.qp->qp_num, .psn = psn,
		.qp_type = ODPEMU_QPT_RC, .responder_resources = 4, .initiator_depth = 4,
		.retry_count = 7, .rnr_retry_count = 7, .mtu = ODPEMU_MTU_4096 };
}

/* REQ, REP, RTU, then DREQ, DREP. Each step waits for the event the previous message makes
 * on the other side, so every message has crossed host a's interface (the capture) before
 * the next is sent. The QPs stay in RESET: the CM only carries their numbers and PSNs, and
 * the verbs above have put their traffic on the wire already. */
static void cm_connect_disconnect(struct cm_end *a, struct cm_end *b, uint16_t port)
{
	struct odpemu_cm_addr src = { a->s.gid, 40000 }, dst = { b->s.gid, port };
	struct odpemu_cm_qp qa = cm_qp(a, 0x1234), qb = cm_qp(b, 0xabcdef);
	struct odpemu_cm_event ev;
	uint32_t ca = 0, cb = 0;

	T_EQ(odpemu_cm_connect(a->ch, ODPEMU_CM_PS_TCP, &src, &dst, &qa, NULL, 0, 0, &ca), 0,
	     "CM connect (REQ)");
	if (!cm_expect(b->ch, ODPEMU_CM_EVENT_CONNECT_REQUEST, &ev, "b, after the REQ"))
		return;
	cb = ev.conn;
	T_EQ(odpemu_cm_accept(b->s.ctx, cb, NULL, &qb, NULL, 0, 0), 0, "CM accept (REP)");
	if (!cm_expect(a->ch, ODPEMU_CM_EVENT_CONNECT_RESPONSE, &ev, "a, after the REP"))
		return;
	T_EQ(odpemu_cm_establish(a->s.ctx, ca, NULL, 0), 0, "CM establish (RTU)");
	if (!cm_expect(b->ch, ODPEMU_CM_EVENT_ESTABLISHED, &ev, "b, after the RTU"))
		return;
	T_EQ(odpemu_cm_disconnect(a->s.ctx, ca, NULL, 0), 0, "CM disconnect (DREQ)");
	if (!cm_expect(b->ch, ODPEMU_CM_EVENT_DISCONNECTED, &ev, "b, after the DREQ"))
		return;
	T_EQ(odpemu_cm_disconnect(b->s.ctx, cb, NULL, 0), 0, "CM disconnect answer (DREP)");
	if (!cm_expect(a->ch, ODPEMU_CM_EVENT_DISCONNECTED, &ev, "a, after the DREP"))
		return;
	/* time-wait (200 ms) over on both sides: destroying them then sends nothing more */
	cm_expect(a->ch, ODPEMU_CM_EVENT_TIMEWAIT_EXIT, &ev, "a, time-wait over");
	cm_expect(b->ch, ODPEMU_CM_EVENT_TIMEWAIT_EXIT, &ev, "b, time-wait over");
	T_EQ(odpemu_cm_destroy(a->s.ctx, ca), 0, "CM destroy a's connection");
	T_EQ(odpemu_cm_destroy(b->s.ctx, cb), 0, "CM destroy b's connection");
}

/* A REQ to a port nobody listens on: daemon b answers REJ INVALID_SERVICE_ID, as ib_cm
 * does. */
static void cm_rejected(struct cm_end *a, struct cm_end *b, uint16_t port)
{
	struct odpemu_cm_addr src = { a->s.gid, 40001 }, dst = { b->s.gid, port };
	struct odpemu_cm_qp qa = cm_qp(a, 0x5678);
	struct odpemu_cm_event ev;
	uint32_t ca = 0;

	T_EQ(odpemu_cm_connect(a->ch, ODPEMU_CM_PS_TCP, &src, &dst, &qa, NULL, 0, 0, &ca), 0,
	     "CM connect to a port nobody listens on (REQ)");
	if (cm_expect(a->ch, ODPEMU_CM_EVENT_REJECTED, &ev, "a, no listener (REJ)"))
		T_EQ(ev.status, CM_REJ_INVALID_SERVICE_ID, "REJ reason INVALID_SERVICE_ID");
	T_EQ(odpemu_cm_destroy(a->s.ctx, ca), 0, "CM destroy the rejected connection");
}

static bool cm_end_up(struct cm_end *e, struct odpemu_context *ctx, char host)
{
	struct h_qp_opts o;

	h_qp_opts_default(&o);
	e->s.ctx = ctx;
	if (h_side_up(&e->s, &o)) {
		T_CHECK(0, "CM: PD, CQ and QP on host %c", host);
		return false;
	}
	e->ch = odpemu_cm_create_channel(ctx);
	T_CHECK(e->ch != NULL, "CM channel: %s", strerror(errno));
	return e->ch != NULL;
}

static void cm_end_down(struct cm_end *e)
{
	if (e->ch)
		T_EQ(odpemu_cm_destroy_channel(e->ch), 0, "destroy the CM channel");
	h_pair_down(&(struct h_pair){ .s = { e->s } });
}

/* The CM's part of the capture: listen on b (the daemon picks an ephemeral port), connect
 * and disconnect; then a connect to port 7, where nobody listens, rejected. */
static void cm_exchange(struct odpemu_context **ctx)
{
	struct cm_end a = { 0 }, b = { 0 };
	struct odpemu_cm_addr any = { .port = 0 };
	uint32_t listener = 0;
	uint16_t port = 0;
	int rc;

	if (cm_end_up(&a, ctx[0], 'a') && cm_end_up(&b, ctx[1], 'b')) {
		rc = odpemu_cm_listen(b.ch, ODPEMU_CM_PS_TCP, &any, 4, 0, &listener, &port);
		T_EQ(rc, 0, "CM listen on b");
		if (!rc) {
			cm_connect_disconnect(&a, &b, port);
			cm_rejected(&a, &b, 7);
			T_EQ(odpemu_cm_destroy(b.s.ctx, listener), 0, "CM stop listening");
		}
	}
	cm_end_down(&a);
	cm_end_down(&b);
}

/* ---- what tshark makes of the capture ---- */

/* The fields tshark prints per packet (-T fields), tab separated, repeated ones comma
 * separated; the expert messages last (the only free text). */
enum field { F_NUMBER, F_PROTOCOLS, F_OPCODE, F_SYNDROME, F_DESTQP, F_QKEY, F_MGMT_CLASS,
	     F_ATTR_ID, F_REJ_REASON, F_MALFORMED, F_SEVERITY, F_MESSAGE, F_COUNT };

static const char *const fields[F_COUNT] = {
	[F_NUMBER] = "frame.number",
	[F_PROTOCOLS] = "frame.protocols",
	[F_OPCODE] = "infiniband.bth.opcode",
	[F_SYNDROME] = "infiniband.aeth.syndrome",
	[F_DESTQP] = "infiniband.bth.destqp",
	[F_QKEY] = "infiniband.deth.q_key",
	[F_MGMT_CLASS] = "infiniband.mad.mgmtclass",
	[F_ATTR_ID] = "infiniband.mad.attributeid",
	[F_REJ_REASON] = "infiniband.cm.rej.reason",
	[F_MALFORMED] = "_ws.malformed",
	[F_SEVERITY] = "_ws.expert.severity",
	[F_MESSAGE] = "_ws.expert.message",
};

struct decode {
	unsigned long packets, not_ib, malformed, expert_errors, rnr_naks;
	unsigned long seen[256];
	unsigned long cm[CM_ATTR_APR + 1];	/* CM MADs by attribute ID */
	unsigned long rej_invalid_sid;		/* REJs with reason INVALID_SERVICE_ID */
};

/* A UD SEND Only: it must be a CM MAD, as the CM sends it, that tshark decodes as one. */
static void decode_cm(char *const *f, struct decode *d)
{
	unsigned long qp = strtoul(f[F_DESTQP], NULL, 0), qkey = strtoul(f[F_QKEY], NULL, 0);
	unsigned long class = strtoul(f[F_MGMT_CLASS], NULL, 0);
	unsigned long attr = strtoul(f[F_ATTR_ID], NULL, 0);

	if (qp != CM_GSI_QPN || qkey != CM_GSI_QKEY || !*f[F_MGMT_CLASS] ||
	    class != CM_MGMT_CLASS || !*f[F_ATTR_ID]) {
		T_CHECK(0, "frame %s: a UD SEND Only that is not a CM MAD to QP1 (QP %s, Q_Key "
			"%s, management class '%s', attribute '%s')", f[F_NUMBER], f[F_DESTQP],
			f[F_QKEY], f[F_MGMT_CLASS], f[F_ATTR_ID]);
		return;
	}
	if (attr >= T_ARRAY_SIZE(d->cm)) {
		T_CHECK(0, "frame %s: CM attribute %#lx is none of IBA's", f[F_NUMBER], attr);
		return;
	}
	d->cm[attr]++;
	if (attr == CM_ATTR_REJ && *f[F_REJ_REASON] &&
	    strtoul(f[F_REJ_REASON], NULL, 0) == CM_REJ_INVALID_SERVICE_ID)
		d->rej_invalid_sid++;
}

static void decode_line(char *line, struct decode *d)
{
	static char empty[] = "";
	char *f[F_COUNT];
	unsigned long op;
	int n = 0;

	line[strcspn(line, "\n")] = 0;
	for (char *s = line, *tab; n < F_COUNT; s = tab + 1) {
		f[n++] = s;
		if (!(tab = strchr(s, '\t')))
			break;
		*tab = 0;
	}
	if (n <= F_OPCODE)
		return;
	while (n < F_COUNT)	/* fields missing at the end of the line are empty */
		f[n++] = empty;
	d->packets++;
	if (!strstr(f[F_PROTOCOLS], ":infiniband") || !*f[F_OPCODE]) {
		d->not_ib++;
		T_CHECK(0, "frame %s (%s) is not decoded as RoCEv2/InfiniBand", f[F_NUMBER],
			f[F_PROTOCOLS]);
		return;
	}
	op = strtoul(f[F_OPCODE], NULL, 0);
	d->seen[op & 0xff]++;
	if (*f[F_SYNDROME] && ((strtoul(f[F_SYNDROME], NULL, 0) >> 5) & 3) == 1)
		d->rnr_naks++;
	if (op == ROCE_OP_UD_SEND_ONLY)
		decode_cm(f, d);
	if (*f[F_MALFORMED]) {
		d->malformed++;
		T_CHECK(0, "frame %s (opcode %#lx) is malformed: %s", f[F_NUMBER], op,
			f[F_MESSAGE]);
	}
	for (char *s = f[F_SEVERITY], *end; *s; s = *end ? end + 1 : end) {
		unsigned long sev = strtoul(s, &end, 0);

		if (sev >= EXPERT_ERROR) {
			d->expert_errors++;
			T_CHECK(0, "frame %s (opcode %#lx): expert info of severity %#lx: %s",
				f[F_NUMBER], op, sev, f[F_MESSAGE]);
			break;
		}
		end += strcspn(end, ",");
	}
}

static bool decode_capture(struct h_env *e, const char *file, struct decode *d)
{
	/* tshark guesses what an InfiniBand payload carries; random test data then looks like,
	 * say, an Ethernet frame (bytes 2-3 zero: eth_over_ib) and comes out "malformed". The
	 * headers are what this test checks: the payload stays opaque. */
	static const char *const payload_heuristics[] = { "eth_over_ib", "mellanox_eoib",
		"smcr_infiniband", "smb_direct_infiniband", "nvme_rdma", "lnet_ib",
		"iser_infiniband", "sdp_infiniband", "fc_infiniband" };
	char out[200], err[200], port_pref[64], line[4096];
	const char *argv[64];
	bool ok;
	int n = 0;
	FILE *f;

	snprintf(out, sizeof(out), "%s/tshark.out", e->rundir);
	snprintf(err, sizeof(err), "%s/tshark.stderr", e->rundir);
	snprintf(port_pref, sizeof(port_pref), "infiniband.rroce.port:%u", e->port);
	argv[n++] = "tshark";
	argv[n++] = "-n";
	argv[n++] = "-r";
	argv[n++] = file;
	argv[n++] = "--disable-protocol";	/* else SEND payloads can parse as RPC-over-RDMA */
	argv[n++] = "rpcordma";
	for (unsigned i = 0; i < T_ARRAY_SIZE(payload_heuristics); i++) {
		argv[n++] = "--disable-heuristic";
		argv[n++] = payload_heuristics[i];
	}
	argv[n++] = "-o";		/* RoCEv2 on this test's port (4791 in namespaces) */
	argv[n++] = port_pref;
	argv[n++] = "-T";
	argv[n++] = "fields";
	argv[n++] = "-E";
	argv[n++] = "occurrence=a";
	for (unsigned i = 0; i < F_COUNT; i++) {
		argv[n++] = "-e";
		argv[n++] = fields[i];
	}
	argv[n] = NULL;
	ok = run_tool(argv, out, err);
	T_CHECK(ok, "tshark could not read the capture");
	if (!ok) {
		show_file(err, "tshark stderr");
		return false;
	}
	memset(d, 0, sizeof(*d));
	f = fopen(out, "r");
	while (f && fgets(line, sizeof(line), f))
		decode_line(line, d);
	if (f)
		fclose(f);
	return true;
}

/* The interpreter that has scapy: $PYTHON, python3, or Debian's own (python3-scapy). */
static const char *python_with_scapy(void)
{
	static const char *const cands[] = { "", "python3", "/usr/bin/python3" };

	for (unsigned i = 0; i < T_ARRAY_SIZE(cands); i++) {
		const char *py = i ? cands[i] : getenv("PYTHON");
		const char *argv[] = { py, "-c", "import scapy.contrib.roce", NULL };

		if (py && *py && run_tool(argv, "/dev/null", "/dev/null"))
			return py;
	}
	return NULL;
}

static void check_icrc(struct h_env *e, const char *file)
{
	const char *script = getenv("ODPEMU_ICRC_CHECK"), *py = python_with_scapy();
	char port[16];

	T_CHECK(script && *script, "$ODPEMU_ICRC_CHECK (the path of icrc_check.py) is not set: "
		"run this test through meson test");
	T_CHECK(py != NULL, "no python3 with scapy: apt-get install python3-scapy "
		"(tools/dependencies.txt)");
	if (!script || !*script || !py)
		return;
	snprintf(port, sizeof(port), "%u", e->port);
	{
		/* The ICRC covers the real UDP destination port, 4791 or the test's own.
		 * --require-cm: the CM's MADs too, each of the six messages at least once. */
		const char *argv[] = { py, script, "--port", port, "--require-cm", file, NULL };

		fflush(stdout);
		T_CHECK(run_tool(argv, NULL, NULL), "icrc_check.py: an ICRC differs, none was "
			"checked or a CM message was missing (%s %s --port %s --require-cm "
			"CAPTURE)", py, script, port);
	}
}

/* ---- segmentation offload: one frame per packet ---- */

/* odpemu-gso-split writes the capture as the cut makes it (one frame per RoCEv2 packet);
 * returns the super-frames it split, or -1. With GSO on (the default) some message must
 * have gone as one; with --no-gso none may. */
static long split_capture(struct h_env *e, const char *in, const char *out)
{
	const char *tool = getenv("ODPEMU_GSO_SPLIT");
	char port[16], log[240], line[512];
	long frames = -1, supers = -1, packets = -1, unsplit = -1, bad = -1;
	FILE *f;

	T_CHECK(tool && *tool, "$ODPEMU_GSO_SPLIT (tools/odpemu-gso-split) is not set: run this "
		"test through meson test");
	if (!tool || !*tool)
		return -1;
	snprintf(port, sizeof(port), "%u", e->port);
	snprintf(log, sizeof(log), "%s/gso-split.out", e->rundir);
	{
		const char *argv[] = { "python3", tool, "--port", port, in, out, NULL };

		T_CHECK(run_tool(argv, log, NULL), "odpemu-gso-split failed on the capture");
	}
	f = fopen(log, "r");
	if (f && fgets(line, sizeof(line), f))
		sscanf(line, "odpemu-gso-split: %ld frames read, %ld super-frames split into %ld "
		       "packets, %*d frames written, %ld not splittable, %ld segments", &frames,
		       &supers, &packets, &unsplit, &bad);
	if (f)
		fclose(f);
	printf("gso split: %ld frames, %ld super-frames split into %ld packets, %ld not "
	       "splittable, %ld segments with a wrong ICRC\n", frames, supers, packets, unsplit,
	       bad);
	T_EQ(unsplit, 0, "super-frames the split could not cut");
	T_EQ(bad, 0, "segments whose ICRC is wrong for their Identification");
	return supers;
}

static void report(const struct decode *d)
{
	printf("tshark: %lu RoCEv2 packets, %lu not InfiniBand, %lu malformed, %lu expert "
	       "errors, %lu RNR NAKs\n", d->packets, d->not_ib, d->malformed, d->expert_errors,
	       d->rnr_naks);
	for (int op = 0; op < 256; op++) {
		if (d->seen[op])
			printf("  opcode 0x%02x %-42s %5lu\n", op,
			       opcodes[op].name ? opcodes[op].name : "(unexpected)", d->seen[op]);
		if (opcodes[op].expected)
			T_CHECK(d->seen[op] > 0, "opcode 0x%02x (%s) never on the wire", op,
				opcodes[op].name);
		else
			T_CHECK(d->seen[op] == 0, "opcode 0x%02x (%s) on the wire %lu times: no "
				"verb here sends it", op, opcodes[op].name ? opcodes[op].name :
				"not an RC opcode", d->seen[op]);
	}
	for (uint16_t attr = 0; attr < T_ARRAY_SIZE(d->cm); attr++) {
		char name[48];

		snprintf(name, sizeof(name), "%s (management class 0x%02x)", cm_attr_str(attr),
			 CM_MGMT_CLASS);
		if (d->cm[attr])
			printf("  CM 0x%04x   %-42s %5lu\n", attr, name, d->cm[attr]);
		if (cm_expected[attr])
			T_CHECK(d->cm[attr] > 0, "CM %s (attribute 0x%04x) never on the wire",
				cm_attr_str(attr), attr);
		else
			T_CHECK(d->cm[attr] == 0, "CM %s (attribute 0x%04x) on the wire %lu times: "
				"nothing here sends it", cm_attr_str(attr), attr, d->cm[attr]);
	}
	T_CHECK(d->rej_invalid_sid > 0, "no REJ with reason %u (INVALID_SERVICE_ID) on the wire",
		CM_REJ_INVALID_SERVICE_ID);
}

static void capture_conformance(struct h_env *e)
{
	struct odpemu_context **ctx = e->ctx;
	struct capture cap;
	struct decode d;
	unsigned long long gso_sends[2] = { 0, 0 };
	long long t0 = ms_now(), t1, t2;

	if (!capture_start(e, &cap)) {
		if (geteuid() != 0)
			h_skip(e, "emu-capture: skipped: dumpcap cannot capture on %s (run as root "
			       "or give dumpcap its capabilities)", cap.iface);
		T_CHECK(0, "dumpcap cannot capture on %s as root (see its stderr above)",
			cap.iface);
		return;
	}
	printf("capturing on %s (%s), filter '%s'\n", cap.iface, e->netns ? e->host[0].ns :
	       "no namespaces", cap.filter);
	/* The devices live while the capture runs (.open = H_OPEN_NONE). */
	ctx[0] = h_open(e, 0);
	ctx[1] = h_open(e, 1);
	exchange(e, ctx, false, ODPEMU_FAULT_POLICY_STALL);
	exchange(e, ctx, true, ODPEMU_FAULT_POLICY_STALL);
	exchange(e, ctx, true, ODPEMU_FAULT_POLICY_RNR);
	cm_exchange(ctx);
	for (int i = 0; i < 2; i++)
		gso_sends[i] = h_counter(ctx[i], ODPEMU_COUNTERS_DEVICE, 0, "udp_tx_gso_sends");
	odpemu_close_device(ctx[0]);
	odpemu_close_device(ctx[1]);
	ctx[0] = ctx[1] = NULL;
	t1 = ms_now();
	if (capture_stop(&cap)) {
		char split[240];
		long supers;

		capture_drops(&cap);
		snprintf(split, sizeof(split), "%s/capture-split.pcap", e->rundir);
		supers = split_capture(e, cap.file, split);
		/* --no-gso is what the daemons send: a capture on the receiving side may still
		 * show datagrams its GRO merged (split like GSO runs, each with its own ICRC) */
		if (no_gso)
			T_CHECK(gso_sends[0] == 0 && gso_sends[1] == 0, "--no-gso: no UDP_SEGMENT "
				"send (udp_tx_gso_sends %llu, %llu; %ld frames merged on the way)",
				gso_sends[0], gso_sends[1], supers);
		else
			T_CHECK(supers > 0, "GSO on: some run of packets left as one send (%ld)",
				supers);
		if (decode_capture(e, split, &d))
			report(&d);
		check_icrc(e, split);
	}
	t2 = ms_now();
	keep_capture(&cap);
	printf("time: %lld ms verbs + CM (capture on), %lld ms decode + ICRC\n", t1 - t0, t2 - t1);
}

int main(int argc, char **argv)
{
	static const char *const gso_off[] = { "--no-gso", NULL };
	struct h_test t = { .name = "emu-capture", .seed = 11, .watchdog_s = 300,
		.open = H_OPEN_NONE, .body = capture_conformance };

	/* ODPEMU_TEST_NO_GSO=1 (e2e-capture-no-gso): the daemons send datagram by datagram,
	 * what a user asks for with --no-gso to read a capture frame by frame. */
	no_gso = getenv("ODPEMU_TEST_NO_GSO") && *getenv("ODPEMU_TEST_NO_GSO") == '1';
	if (no_gso) {
		t.name = "emu-capture-no-gso";
		t.daemon_args[0] = t.daemon_args[1] = gso_off;
	}
	return h_main(argc, argv, &t);
}
