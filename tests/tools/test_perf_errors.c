/* SPDX-License-Identifier: MIT */
/*
 * The mistakes a user can make with odpemu-perf, and the failures it must report: each
 * gives one line naming the fix and a non-zero exit, never a hang. No daemon, no such
 * device, no server (refused, no answer), sizes over the limits, bad flags (--regcache's
 * too), mismatched tests, a server that dies mid-run, page faults that fail (injected),
 * RNR retries exhausted.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf_check.h"
#include "t.h"

static struct h_env env;

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Run odpemu-perf args on host 0; its exit code must be `code` and its output hold every
 * one of the texts. */
static void expect(const char *const *args, const char *const *extra_env, int code,
		   const char *text1, const char *text2)
{
	const char *argv[32] = { tr_perf() };
	char *out;
	int n = 1, rc;

	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	rc = tr_run(&env, 0, argv, extra_env, &out, 30);
	T_CHECK(rc == code, "odpemu-perf %s %s: exit %d, want %d:\n%s", args[0], args[1], rc,
		code, out);
	T_CHECK(strstr(out, text1) && (!text2 || strstr(out, text2)), "odpemu-perf %s %s: the "
		"output lacks '%s'%s%s:\n%s", args[0], args[1], text1, text2 ? " / " : "",
		text2 ? text2 : "", out);
	T_CHECK(strchr(out, '\n') == out + strlen(out) - 1, "odpemu-perf %s %s: not one line:\n%s",
		args[0], args[1], out);
	free(out);
}

static void test_setup_errors(void)
{
	const char *a = env.host[0].name, *b = env.host[1].addr;
	char unused[64];

	expect(ARGS("write", b), ARGS("ODPEMU_RUNDIR=/nonexistent-odpemu"), 1,
	       "no odpemu device is running", "start one with `odpemud");
	expect(ARGS("write"), ARGS("ODPEMU_RUNDIR=/nonexistent-odpemu"), 1,
	       "no odpemu device is running", NULL);
	expect(ARGS("write", "-d", "nosuchdev", b), NULL, 1, "no device 'nosuchdev' (running: ",
	       "pick one of them with -d");
	expect(ARGS("write", "-d", a, "-p", "18999", b), NULL, 1, "cannot reach the server",
	       "connection refused (start `odpemu-perf write` there first");
	if (env.netns) {
		/* an address of the test subnet that no host holds */
		snprintf(unused, sizeof(unused), "%.*s99", (int)(strrchr(b, '.') - b + 1), b);
		expect(ARGS("write", "-d", a, "--timeout", "1", unused), NULL, 1,
		       "cannot reach the server", unused);
	}
	expect(ARGS("write", "-d", a, "-s", "4G", b), NULL, 1, "is over the largest message",
	       "use a smaller -s");
	expect(ARGS("write", "-d", a, "--inline", "1000", b), NULL, 1,
	       "is over odpa's max_inline_data", "use --inline");
	expect(ARGS("write", "--mtu", "8192", b), NULL, 2, "--mtu '8192'", NULL);
	expect(ARGS("write", "--mtu", "1000", b), NULL, 2, "want 256, 512, 1024, 2048 or 4096",
	       NULL);
	expect(ARGS("atomic", "-s", "64", b), NULL, 2, "atomics move 8 bytes", NULL);
	expect(ARGS("write", "--prefetch", b), NULL, 2, "--prefetch needs ODP memory", NULL);
	expect(ARGS("flush", "--verify", b), NULL, 2, "flush moves no data", NULL);
	expect(ARGS("write", "--lat", "-q", "2", b), NULL, 2, "--lat runs one QP", NULL);
	expect(ARGS("write", "-n", "5", "-D", "1", b), NULL, 2, "give one of them", NULL);
	expect(ARGS("frobnicate"), NULL, 2, "want write, read, send, atomic or flush", NULL);
	expect(ARGS("write", "--histogram", "x.jpg"), NULL, 2, ".svg or .png", NULL);
	expect(ARGS("write", "--regcache", "sometimes", b), NULL, 2,
	       "--regcache 'sometimes': want none, notify, lease or odp", NULL);
	expect(ARGS("atomic", "--regcache", "notify", b), NULL, 2, "--regcache notify: atomic",
	       "run write, send or read");
	expect(ARGS("flush", "--regcache", "odp", b), NULL, 2, "--regcache odp: flush", NULL);
	expect(ARGS("write", "--regcache", "lease", "--lat", b), NULL, 2,
	       "--regcache lease runs with --bw only", NULL);
	expect(ARGS("send", "--regcache", "none", "--inline", "64", b), NULL, 2,
	       "--regcache none and --inline", "drop --inline");
	expect(ARGS("write", "--regcache", "odp", "--odp", "explicit", "--prefetch", b), NULL, 2,
	       "--regcache odp and --prefetch", "drop --prefetch");
}

/* A pair that must fail: the client's exit code and output must say why. */
static void expect_pair_fail(const char *stest, const char *ctest, const char *const *cargs,
			     const char *text, int timeout_s)
{
	struct tr_pair r;
	char what[128];

	snprintf(what, sizeof(what), "server %s, client %s", stest, ctest);
	if (strcmp(stest, ctest)) {
		/* tr_perf_pair runs one test on both sides: start the pair by hand */
		const char *sa[] = { tr_perf(), stest, "-d", env.host[1].name, "-p", "18600", NULL };
		const char *ca[] = { tr_perf(), ctest, "-d", env.host[0].name, "-p", "18600",
				     env.host[1].addr, NULL };
		struct tr_proc s, c;

		tr_start(&env, 1, sa, NULL, &s);
		tr_wait_for(&s, "waiting for a client", 10000);
		tr_start(&env, 0, ca, NULL, &c);
		r.client = tr_wait(&c, timeout_s);
		r.client = WIFEXITED(r.client) ? WEXITSTATUS(r.client) : -1;
		r.server = tr_wait(&s, 10);
		r.server = WIFEXITED(r.server) ? WEXITSTATUS(r.server) : -1;
		r.cout = tr_output(&c);
		r.sout = tr_output(&s);
	} else {
		tr_perf_pair(&env, stest, cargs, NULL, &r, timeout_s);
	}
	T_CHECK(r.client == 1 && strstr(r.cout, text), "%s: client exit %d, want 1 and '%s'",
		what, r.client, text);
	T_CHECK(r.server != 0, "%s: the server exited 0", what);
	if (r.client != 1 || !strstr(r.cout, text))
		pc_show(&r, what);
	tr_pair_free(&r);
}

static void inject(const char *key, const char *value)
{
	const char *argv[] = { tr_ctl(), "inject", "-d", env.host[1].name, key, value, NULL };
	char *out;

	T_EQ(tr_run(&env, 1, argv, NULL, &out, 20), 0, "odpemu-ctl inject");
	free(out);
}

static void test_run_errors(void)
{
	expect_pair_fail("write", "read", NULL, "start the server as `odpemu-perf read`", 30);
	/* every page fault on the responder fails: the requester sees an access error */
	inject("--fault-fail-rate", "1");
	expect_pair_fail("write", "write", ARGS("--odp", "explicit", "--cold", "-n", "50"),
			 "REM_ACCESS_ERR", 60);
	inject("--fault-fail-rate", "0");
	/* slow faults answered with RNR NAKs, and no retries allowed */
	inject("--fault-delay-us", "20000");
	expect_pair_fail("write", "write", ARGS("--odp", "explicit", "--cold", "-n", "50",
						"--fault-policy", "rnr", "--rnr-retry", "0",
						"--min-rnr-timer", "1"),
			 "raise --rnr-retry", 60);
	inject("--fault-delay-us", "0");
}

/* The server dies in the middle of a run: the client stops within seconds, and says so. */
static void test_peer_dies(void)
{
	const char *sa[] = { tr_perf(), "write", "-d", env.host[1].name, "-p", "18601", NULL };
	const char *ca[] = { tr_perf(), "write", "-d", env.host[0].name, "-p", "18601", "-D", "30",
			     env.host[1].addr, NULL };
	struct tr_proc s, c;
	struct timespec ts = { 1, 0 };
	char *out;
	int st;

	tr_start(&env, 1, sa, NULL, &s);
	tr_wait_for(&s, "waiting for a client", 10000);
	tr_start(&env, 0, ca, NULL, &c);
	nanosleep(&ts, NULL);
	kill(s.pid, SIGKILL);
	tr_wait(&s, 5);
	st = tr_wait(&c, 15);
	out = tr_output(&c);
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "client of a killed server: status %#x:\n%s",
		st, out);
	T_CHECK(strstr(out, "RETRY_EXC_ERR") || strstr(out, "closed the connection"),
		"client of a killed server does not say why:\n%s", out);
	free(out);
}

int main(void)
{
	h_up(&env, NULL, NULL, 300);
	test_setup_errors();
	test_run_errors();
	test_peer_dies();
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	T_EQ(h_down(&env), 0, "daemons that did not stop cleanly");
	return t_done("tools-perf-errors");
}
