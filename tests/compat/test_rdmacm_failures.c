/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm failures under the unmodified rping (rdmacm-utils), on odpemu's drop-in
 * librdmacm.so.1 between the two daemons of the e2e harness. Each case is bounded and
 * checks what the program saw and how fast it ended:
 *  - silent address: rping -c to an address in host 1's subnet that no device owns and
 *    nothing answers: UNREACHABLE after the REQ's retries (3 x 500 ms, docs/rdmacm.md),
 *    a non-zero exit well within the CM timeout;
 *  - dead daemon: rping -s listens on host 1, host 1's daemon is SIGKILLed: the server
 *    gets DEVICE_REMOVAL (its channel's socket reads EOF) and exits; a client then gets
 *    UNREACHABLE. The daemon is started again for what follows;
 *  - dead server: rping -s / rping -c with a count that never ends, the server process
 *    SIGKILLed once connected: its daemon tears its connection down (DREQ), the client
 *    gets DISCONNECTED and exits.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat_run.h"
#include "t.h"

/* Time a CM failure may take: UNREACHABLE comes after ~2 s (odpemu's REQ retries). */
#define CM_BOUND_S 10.0
/* Time a program has to exit once its peer or its device is gone. */
#define EXIT_BOUND_S 10

static struct h_env env;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* An address in host 1's subnet that no host has: host 1's with its last part 9. */
static void silent_addr(char *buf, size_t len)
{
	const char *a = env.host[1].addr, *last = strrchr(a, strchr(a, ':') ? ':' : '.');

	snprintf(buf, len, "%.*s9", (int)(last - a) + 1, a);
}

/* An exit with an error code, not a crash (exit codes above 128 up to 128+64 are taken for
 * signals; rping's exit(-1) is 255). */
static bool error_exit(int code)
{
	return code > 0 && !(code > 128 && code <= 128 + 64);
}

static bool has(const char *out, const char *text)
{
	return out && strstr(out, text);
}

static void show(const char *who, const struct cr_args *a, int code, const char *out)
{
	fprintf(stderr, "---- %s, exit %d: %s\n%s\n----\n", who, code, cr_cmdline(a),
		out ? out : "");
}

/* rping -c to addr:port, count pings. */
static void client_args(struct cr_args *a, const char *addr, unsigned port, const char *count)
{
	cr_push(a, "rping", "-c", "-a", addr, "-C", count, "-p", NULL);
	cr_pushf(a, "%u", port);
}

/* A client whose REQ nobody answers: UNREACHABLE within the CM timeout, a non-zero exit.
 * Returns false (the output shown) otherwise. */
static bool client_unreachable(const char *what, const char *addr, unsigned port)
{
	unsigned long failed = t_failures;
	struct cr_args a = { 0 };
	char *out = NULL;
	double t0, took;
	int rc;

	client_args(&a, addr, port, "1");
	t0 = now_s();
	rc = cr_run(&env, 0, &a, NULL, &out, 30);
	took = now_s() - t0;
	T_CHECK(error_exit(rc), "%s: client exit %d, want an error exit", what, rc);
	T_CHECK(has(out, "RDMA_CM_EVENT_UNREACHABLE") || has(out, "RDMA_CM_EVENT_ADDR_ERROR"),
		"%s: the client did not report UNREACHABLE (or ADDR_ERROR)", what);
	T_CHECK(took < CM_BOUND_S, "%s: the client took %.1f s, want < %.0f s", what, took,
		CM_BOUND_S);
	if (t_failures != failed)
		show("client (host 0)", &a, rc, out);
	printf("%-40s client exit %d after %.2f s: %s", what, rc, took,
	       out && *out ? out : "(no output)\n");
	free(out);
	return t_failures == failed;
}

static void silent_address(void)
{
	char addr[64];

	silent_addr(addr, sizeof(addr));
	client_unreachable("silent address", addr, cr_port(&env));
}

/* rping -s on host 1's address and port, count pings. */
static void server_args(struct cr_args *a, unsigned port, const char *count)
{
	cr_push(a, "rping", "-s", "-a", env.host[1].addr, "-C", count, "-p", NULL);
	cr_pushf(a, "%u", port);
}

static void dead_daemon(void)
{
	unsigned port = cr_port(&env);
	unsigned long long before = cr_dev_counter(&env, 1, "cm_listens");
	struct cr_args sa = { 0 };
	struct tr_proc s;
	unsigned long failed = t_failures;
	char *sout = NULL;
	double t0, took;
	int sexit;

	server_args(&sa, port, "1");
	if (cr_start(&env, 1, &sa, NULL, &s)) {
		T_CHECK(0, "dead daemon: could not start the server");
		return;
	}
	if (!cr_wait_dev_counter(&env, 1, "cm_listens", before, &s, 20000)) {
		sexit = cr_collect(&s, &sa, 0, &sout);
		T_CHECK(0, "dead daemon: the server never listened with rdma_cm");
		show("server (host 1)", &sa, sexit, sout);
		free(sout);
		return;
	}
	t0 = now_s();
	h_daemon_stop(&env, 1, SIGKILL);
	T_CHECK(cr_exited(&s, EXIT_BOUND_S * 1000), "dead daemon: the server still runs %d s "
		"after its daemon died", EXIT_BOUND_S);
	took = now_s() - t0;
	sexit = cr_collect(&s, &sa, 0, &sout);
	T_CHECK(error_exit(sexit), "dead daemon: server exit %d, want an error exit",
		sexit);
	T_CHECK(has(sout, "device removal"), "dead daemon: the server did not report "
		"DEVICE_REMOVAL");
	if (t_failures != failed)
		show("server (host 1)", &sa, sexit, sout);
	printf("%-40s server exit %d after %.2f s: %s", "dead daemon", sexit, took,
	       *sout ? sout : "(no output)\n");
	free(sout);

	client_unreachable("dead daemon", env.host[1].addr, port);
	T_EQ(h_daemon_start(&env, 1, NULL), 0, "dead daemon: host 1's daemon starts again");
}

static void dead_server(void)
{
	unsigned port = cr_port(&env);
	unsigned long long listens = cr_dev_counter(&env, 1, "cm_listens");
	unsigned long long established = cr_dev_counter(&env, 1, "cm_established");
	unsigned long failed = t_failures;
	struct cr_args sa = { 0 }, ca = { 0 };
	struct tr_proc s, c;
	char *sout = NULL, *cout = NULL;
	int sexit = -1, cexit = -1;
	double took = -1;

	server_args(&sa, port, "1000000");
	client_args(&ca, env.host[1].addr, port, "1000000");
	if (cr_start(&env, 1, &sa, NULL, &s)) {
		T_CHECK(0, "dead server: could not start the server");
		return;
	}
	if (!cr_wait_dev_counter(&env, 1, "cm_listens", listens, &s, 20000) ||
	    cr_start(&env, 0, &ca, NULL, &c)) {
		T_CHECK(0, "dead server: the server never listened with rdma_cm");
		sexit = cr_collect(&s, &sa, 0, &sout);
		show("server (host 1)", &sa, sexit, sout);
		free(sout);
		return;
	}
	/* connected (the server's ESTABLISHED, on the RTU), then a second of pings */
	T_CHECK(cr_wait_dev_counter(&env, 1, "cm_established", established, &c, 20000),
		"dead server: the pair never connected");
	T_CHECK(!cr_exited(&c, 1000) && !cr_exited(&s, 0), "dead server: both run 1 s into "
		"the pings");
	if (t_failures == failed) {
		double t0 = now_s();

		kill(s.pid, SIGKILL);
		T_CHECK(cr_exited(&c, EXIT_BOUND_S * 1000), "dead server: the client still runs "
			"%d s after the server died", EXIT_BOUND_S);
		took = now_s() - t0;
	}
	cexit = cr_collect(&c, &ca, 0, &cout);
	sexit = cr_collect(&s, &sa, 5, &sout);
	T_EQ(sexit, 128 + SIGKILL, "dead server: the server was killed");
	T_CHECK(has(cout, "client DISCONNECT EVENT"), "dead server: the client did not report "
		"DISCONNECTED");
	/* rping ends a run its peer disconnected with exit 0 (or 255 when a failed completion
	 * came first): either, but no crash */
	T_CHECK(cexit == 0 || error_exit(cexit), "dead server: client exit %d (a signal)", cexit);
	if (t_failures != failed) {
		show("server (host 1)", &sa, sexit, sout);
		show("client (host 0)", &ca, cexit, cout);
	}
	printf("%-40s client exit %d after %.2f s: %s", "dead server", cexit, took,
	       *cout ? cout : "(no output)\n");
	free(sout);
	free(cout);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	cr_need("rping", "rdmacm-utils");
	h_up(&env, NULL, NULL, 240);
	silent_address();
	dead_daemon();
	if (env.host[1].pid > 0)
		dead_server();
	return cr_finish(&env, "compat-rdmacm-failures");
}
