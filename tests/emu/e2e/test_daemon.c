/* SPDX-License-Identifier: MIT */
/*
 * The daemon as an operator meets it:
 *  - garbage datagrams are dropped and counted by reason;
 *  - a second daemon with the same name, or on the same address and port, refuses to start
 *    and says why; bad flags are one clear line and exit status 2;
 *  - runtime injection: fault-fail-rate 1 turns a cold ODP WRITE into REM_ACCESS_ERR;
 *    fault-delay-us shows in the fault-latency histogram; evict-rate makes warm ODP memory
 *    fault again during steady traffic, with every byte still right;
 *  - per-MR and per-QP counters;
 *  - link down/up of the test host's interface: PORT_ERR / PORT_ACTIVE events (root);
 *  - SIGTERM with a live client: its posted receive completes WR_FLUSH_ERR, it gets
 *    DEVICE_FATAL, and the control socket is gone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "t.h"

#define LEN (8u << 20)
#define ALL_ACCESS (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE | \
		    ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC)

static unsigned long long ctr(struct odpemu_context *c, const char *name);

/* Datagrams from host b's namespace to host a's daemon: random bytes, and well-formed
 * headers with a wrong ICRC. */
static void send_garbage(struct h_env *e, unsigned n)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)e->port) };
	struct t_rng rng = { 99 };
	uint8_t buf[2048];
	char ns[160];
	int fd;

	if (e->netns) {
		snprintf(ns, sizeof(ns), "/var/run/netns/%s", e->host[1].ns);
		fd = open(ns, O_RDONLY);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(3);
		close(fd);
	}
	inet_pton(AF_INET, e->host[0].addr, &to.sin_addr);
	if ((fd = socket(AF_INET, SOCK_DGRAM, 0)) < 0)
		_exit(4);
	for (unsigned i = 0; i < n; i++) {
		size_t len = 1 + t_below(&rng, sizeof(buf) - 1);

		t_fill(&rng, buf, len);
		if (i & 1) {		/* a plausible BTH: RC SEND_ONLY to QP 1, version 0 */
			buf[0] = 0x04;
			buf[1] = 0;
			buf[5] = buf[6] = 0;
			buf[7] = 1;
		}
		sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to));
		if (i % 64 == 63)
			usleep(1000);	/* stay under the receive buffer */
	}
	_exit(0);
}

static void wire_garbage(struct h_env *e, struct odpemu_context **ctx)
{
	unsigned long long drops0 = ctr(ctx[0], "drop_icrc") + ctr(ctx[0], "drop_parse");
	unsigned long long rx0 = ctr(ctx[0], "udp_rx_pkts"), drops;
	int st = -1;
	pid_t pid = fork();

	if (pid == 0)
		send_garbage(e, 2000);
	waitpid(pid, &st, 0);
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "garbage sender failed: %#x", st);
	for (int i = 0; i < 100 && ctr(ctx[0], "udp_rx_pkts") - rx0 < 2000; i++)
		usleep(10000);
	drops = ctr(ctx[0], "drop_icrc") + ctr(ctx[0], "drop_parse") - drops0;
	T_CHECK(drops + 100 >= ctr(ctx[0], "udp_rx_pkts") - rx0 && drops >= 1900,
		"garbage: %llu received, %llu counted as ICRC/parse drops",
		ctr(ctx[0], "udp_rx_pkts") - rx0, drops);
	printf("wire garbage: %llu datagrams dropped as bad ICRC or unparsable\n", drops);
}

static void refusals(struct h_env *e)
{
	char out[32768], port[16];	/* the start log: a row per fallback first */
	const char *same_name[] = { "--foreground", "--name", e->host[0].name, "--addr",
		e->host[0].addr, "--rundir", e->rundir, NULL };
	const char *same_addr[] = { "--foreground", "--name", "other", "--addr", e->host[0].addr,
		"--port", port, "--rundir", e->rundir, NULL };
	const char *bad_flag[] = { "--addr", "127.0.0.1", "--fault-fail-rate", "2", NULL };
	const char *bad_delay[] = { "--foreground", "--addr", "127.0.0.1", "--fault-delay-us",
		"sometimes", "--rundir", e->rundir, NULL };
	int st;

	snprintf(port, sizeof(port), "%u", e->port);
	st = h_run(e, 0, same_name, out, sizeof(out));
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && strstr(out, "already running"),
		"same name: status %#x, output: %s", st, out);
	st = h_run(e, 0, same_addr, out, sizeof(out));
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && strstr(out, "in use"),
		"same address: status %#x, output: %s", st, out);
	st = h_run(e, 0, bad_flag, out, sizeof(out));
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, "fault-fail-rate"),
		"bad rate: status %#x, output: %s", st, out);
	st = h_run(e, 0, bad_delay, out, sizeof(out));
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && strstr(out, "fault-delay-us"),
		"bad delay: status %#x, output: %s", st, out);
}

static int write_wait(struct h_pair *p, struct odpemu_mr *lmr, void *l, uint64_t raddr,
		      uint32_t rkey, uint32_t len)
{
	struct odpemu_sge sge = { (uintptr_t)l, len, lmr->lkey };
	struct odpemu_send_wr wr = { .opcode = ODPEMU_WR_RDMA_WRITE, .sg_list = &sge,
		.num_sge = 1, .send_flags = ODPEMU_SEND_SIGNALED, .wr.rdma = { raddr, rkey } }, *bad;
	struct odpemu_wc wc;

	if (odpemu_post_send(p->s[0].qp, &wr, &bad))
		return -1;
	return h_poll(p->s[0].cq, &wc, 1, 20000) == 1 ? (int)wc.status : -2;
}

static unsigned long long ctr(struct odpemu_context *c, const char *name)
{
	return h_counter(c, ODPEMU_COUNTERS_DEVICE, 0, name);
}

/* Sum of the fault-latency buckets at or above `us`. */
static unsigned long long slow_faults(struct odpemu_context *c, unsigned us)
{
	struct odpemu_counter v[256];
	int n = odpemu_query_counters(c, ODPEMU_COUNTERS_DEVICE, 0, v, 256);
	unsigned long long sum = 0;

	for (int i = 0; i < n; i++) {
		unsigned lt;

		if (sscanf(v[i].name, "fault_latency_us_lt_%u", &lt) == 1 && lt > us)
			sum += v[i].value;
	}
	return sum;
}

/* Another process (here: another session) sees every QP and MR of the device and their
 * counters, as odpemu-ctl stat qp|mr does. */
static void other_session_view(struct h_env *e, struct odpemu_qp *qp, struct odpemu_mr *mr)
{
	struct odpemu_context *c = h_open(e, 1);
	struct odpemu_counter list[64];
	int n = odpemu_query_counters(c, ODPEMU_COUNTERS_OBJECTS, 0, list, 64);
	bool qp_seen = false, mr_seen = false;

	for (int i = 0; i < n; i++) {
		qp_seen |= !strncmp(list[i].name, "qp ", 3) && list[i].value == qp->qp_num;
		mr_seen |= !strncmp(list[i].name, "mr ", 3) && list[i].value == mr->lkey;
	}
	T_CHECK(qp_seen && mr_seen, "object list (%d entries) lacks the QP or the MR", n);
	T_CHECK(h_counter(c, ODPEMU_COUNTERS_ANY_QP, qp->qp_num, "pkts_received") > 0,
		"another session's QP counters");
	T_CHECK(h_counter(c, ODPEMU_COUNTERS_ANY_MR, mr->lkey, "page_faults") > 0,
		"another session's MR counters");
	T_CHECK(h_counter(c, ODPEMU_COUNTERS_MR, mr->handle, "page_faults") == ~0ull,
		"a handle of another session must not resolve");
	odpemu_close_device(c);
}

static void injection(struct h_env *e, struct odpemu_context **ctx)
{
	struct h_pair p = { .s = { { .ctx = ctx[0] }, { .ctx = ctx[1] } } };
	struct h_qp_opts o;
	uint8_t *t = h_cold(LEN), *l = h_cold(LEN);
	struct odpemu_mr *mr, *lmr;
	unsigned long long f0, ev0;
	struct t_rng rng = { 3 };
	int st;

	h_qp_opts_default(&o);
	o.policy = ODPEMU_FAULT_POLICY_STALL;
	if (h_pair_up(e, &p, &o))
		{ T_CHECK(0, "pair up"); return; }
	mr = odpemu_reg_mr(p.s[1].pd, t, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	lmr = odpemu_reg_mr(p.s[0].pd, l, LEN, ALL_ACCESS);
	if (!mr || !lmr)
		{ T_CHECK(0, "reg_mr: %m"); return; }

	/* a slow fault shows in the histogram */
	T_EQ(odpemu_set_inject(ctx[1], "fault-delay-us", "uniform:2000-3000"), 0, "set delay");
	T_EQ(write_wait(&p, lmr, l, (uintptr_t)t, mr->rkey, 4096), ODPEMU_WC_SUCCESS,
	     "WRITE with a slow fault");
	T_CHECK(slow_faults(ctx[1], 1024) > 0, "no fault slower than 1 ms in the histogram");
	T_EQ(odpemu_set_inject(ctx[1], "fault-delay-us", "0"), 0, "reset delay");
	T_CHECK(odpemu_set_inject(ctx[1], "fault-delay-us", "-5") == EINVAL,
		"a bad delay must be refused");
	T_CHECK(odpemu_set_inject(ctx[1], "no-such-knob", "1") == EINVAL, "unknown knob refused");

	/* per-MR counters */
	T_CHECK(h_counter(ctx[1], ODPEMU_COUNTERS_MR, mr->handle, "page_faults") > 0,
		"MR page_faults");
	T_CHECK(h_counter(ctx[1], ODPEMU_COUNTERS_QP, p.s[1].qp->handle, "pkts_received") > 0,
		"QP pkts_received");
	other_session_view(e, p.s[1].qp, mr);
	{
		char v[64];

		T_EQ(odpemu_set_inject(ctx[1], "fault-fail-rate", "0.25"), 0, "set fail rate");
		T_CHECK(odpemu_get_inject(ctx[1], "fault-fail-rate", v, sizeof(v)) == 0 &&
			!strcmp(v, "0.25"), "get fault-fail-rate: '%s'", v);
		T_EQ(odpemu_set_inject(ctx[1], "fault-fail-rate", "0"), 0, "reset fail rate");
		T_CHECK(odpemu_get_inject(ctx[1], "fault-policy", v, sizeof(v)) == 0 &&
			!strcmp(v, "rnr"), "get fault-policy: '%s'", v);
		T_CHECK(odpemu_get_inject(ctx[1], "nope", v, sizeof(v)) == EINVAL, "unknown knob");
	}

	/* eviction: warm pages fault again while traffic runs, and no byte is wrong */
	for (uint32_t off = 0; off < LEN; off += 65536)
		write_wait(&p, lmr, l, (uintptr_t)t + off, mr->rkey, 65536);
	f0 = ctr(ctx[1], "page_faults");
	ev0 = ctr(ctx[1], "evictions");
	T_EQ(odpemu_set_inject(ctx[1], "evict-rate", "20000/s"), 0, "set evict rate");
	for (int round = 0; round < 200; round++) {
		uint32_t off = (uint32_t)t_below(&rng, LEN / 65536) * 65536;

		t_fill(&rng, l + off, 65536);
		st = write_wait(&p, lmr, l + off, (uintptr_t)t + off, mr->rkey, 65536);
		T_EQ(st, ODPEMU_WC_SUCCESS, "WRITE under eviction");
		T_CHECK(!memcmp(t + off, l + off, 65536), "data under eviction (round %d)", round);
		if (st)
			break;
	}
	odpemu_set_inject(ctx[1], "evict-rate", "0");
	T_CHECK(ctr(ctx[1], "evictions") > ev0, "no eviction happened");
	T_CHECK(ctr(ctx[1], "page_faults") > f0, "eviction caused no new fault");
	printf("eviction: %llu pages evicted, %llu new faults in 200 warm WRITEs\n",
	       ctr(ctx[1], "evictions") - ev0, ctr(ctx[1], "page_faults") - f0);

	/* every fault fails: the cold WRITE is an access error at the peer */
	T_EQ(odpemu_set_inject(ctx[1], "fault-fail-rate", "1"), 0, "set fail rate");
	odpemu_dereg_mr(mr);
	munmap(t, LEN + 4096);
	t = h_cold(LEN);
	mr = odpemu_reg_mr(p.s[1].pd, t, LEN, ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	T_EQ(write_wait(&p, lmr, l, (uintptr_t)t, mr->rkey, 4096), ODPEMU_WC_REM_ACCESS_ERR,
	     "WRITE with fault-fail-rate 1");
	odpemu_set_inject(ctx[1], "fault-fail-rate", "0");
	f0 = ctr(ctx[1], "page_faults");
	odpemu_dereg_mr(mr);
	T_CHECK(ctr(ctx[1], "page_faults") >= f0, "device page_faults went down when an MR went");
	odpemu_dereg_mr(lmr);
	h_pair_down(&p);
	munmap(t, LEN + 4096);
	munmap(l, LEN + 4096);
}

static bool wait_event(struct odpemu_context *c, enum odpemu_event_type want)
{
	struct pollfd pfd = { .fd = c->async_fd, .events = POLLIN };

	for (int i = 0; i < 50; i++) {
		struct odpemu_async_event ev;

		if (poll(&pfd, 1, 100) != 1)
			continue;
		if (odpemu_get_async_event(c, &ev))
			return false;
		odpemu_ack_async_event(&ev);
		if (ev.event_type == want)
			return true;
	}
	return false;
}

/* Is addr's IPv4-mapped GID (::ffff:a.b.c.d) in port 1's table? */
static bool has_v4_gid(struct odpemu_context *c, const char *addr)
{
	struct odpemu_port_attr pa;
	union odpemu_gid want, g;

	if (h_gid_of(addr, &want) || odpemu_query_port(c, 1, &pa))
		return false;
	for (int i = 0; i < (int)pa.gid_tbl_len; i++)
		if (!odpemu_query_gid(c, 1, i, &g) && !memcmp(g.raw, want.raw, sizeof(g.raw)))
			return true;
	return false;
}

static void link_events(struct h_env *e, struct odpemu_context *c)
{
	struct odpemu_port_attr pa;
	char cmd[256];

	if (!e->netns) {
		printf("link events: skipped (needs network namespaces, root with CAP_SYS_ADMIN "
		       "and CAP_NET_ADMIN)\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "ip -n %s link set %s down", e->host[1].ns, e->host[1].dev);
	T_CHECK(system(cmd) == 0, "%s", cmd);
	T_CHECK(wait_event(c, ODPEMU_EVENT_PORT_ERR), "no PORT_ERR after link down");
	T_CHECK(odpemu_query_port(c, 1, &pa) == 0 && pa.state == ODPEMU_PORT_DOWN,
		"port state after link down: %s", odpemu_port_state_str(pa.state));
	snprintf(cmd, sizeof(cmd), "ip -n %s link set %s up", e->host[1].ns, e->host[1].dev);
	T_CHECK(system(cmd) == 0, "%s", cmd);
	T_CHECK(wait_event(c, ODPEMU_EVENT_PORT_ACTIVE), "no PORT_ACTIVE after link up");
	T_CHECK(odpemu_query_port(c, 1, &pa) == 0 && pa.state == ODPEMU_PORT_ACTIVE,
		"port state after link up: %s", odpemu_port_state_str(pa.state));
	/* A new address on the interface is a new GID. Not counted: after the link came back
	 * the kernel re-adds its IPv6 link-local address on its own time, another GID that
	 * may land before or after this one. */
	T_CHECK(!has_v4_gid(c, "10.202.77.7"), "10.202.77.7's GID before the address exists");
	snprintf(cmd, sizeof(cmd), "ip -n %s addr add 10.202.77.7/32 dev %s", e->host[1].ns,
		 e->host[1].dev);
	T_CHECK(system(cmd) == 0, "%s", cmd);
	T_CHECK(wait_event(c, ODPEMU_EVENT_GID_CHANGE), "no GID_CHANGE after an address was added");
	for (int i = 0; i < 50 && !has_v4_gid(c, "10.202.77.7"); i++)
		usleep(100 * 1000);	/* the event may have been the link-local's */
	T_CHECK(has_v4_gid(c, "10.202.77.7"), "10.202.77.7's GID in the table within 5 s of its "
		"GID_CHANGE");
}

static void graceful_stop(struct h_env *e, struct odpemu_context **ctx)
{
	struct h_pair p = { .s = { { .ctx = ctx[0] }, { .ctx = ctx[1] } } };
	struct h_qp_opts o;
	uint8_t *buf = h_cold(4096);
	struct odpemu_mr *mr;
	struct odpemu_wc wc;
	char sock[300];
	int st;

	h_qp_opts_default(&o);
	if (h_pair_up(e, &p, &o) || !(mr = odpemu_reg_mr(p.s[1].pd, buf, 4096, ALL_ACCESS)))
		{ T_CHECK(0, "setup"); return; }
	{
		struct odpemu_sge sge = { (uintptr_t)buf, 4096, mr->lkey };
		struct odpemu_recv_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 }, *bad;

		T_EQ(odpemu_post_recv(p.s[1].qp, &wr, &bad), 0, "post_recv");
	}
	usleep(20000);		/* let the daemon take the WQE from the ring */
	st = h_daemon_stop(e, 1, SIGTERM);
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SIGTERM exit status %#x", st);
	T_CHECK(h_poll(p.s[1].cq, &wc, 1, 2000) == 1 && wc.status == ODPEMU_WC_WR_FLUSH_ERR &&
		wc.wr_id == 9, "the posted receive was not flushed at stop");
	T_CHECK(wait_event(ctx[1], ODPEMU_EVENT_DEVICE_FATAL), "no DEVICE_FATAL at stop");
	T_CHECK(access(h_sock_path(e, 1, sock, sizeof(sock)), F_OK) != 0,
		"the control socket is still there");
	odpemu_dereg_mr(mr);
	h_pair_down(&p);
	munmap(buf, 4096 + 4096);
}

static void operator_view(struct h_env *e)
{
	struct odpemu_context **ctx = e->ctx;

	refusals(e);
	wire_garbage(e, ctx);
	injection(e, ctx);
	link_events(e, ctx[1]);
	graceful_stop(e, ctx);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "emu-daemon", .watchdog_s = 300,
		.open = H_OPEN_BOTH, .body = operator_view };

	return h_main(argc, argv, &t);
}
