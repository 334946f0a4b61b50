/* SPDX-License-Identifier: MIT */
/*
 * odpemu-perf --regcache between two hosts: write, send and read, each message from a
 * buffer freed and mapped again at the same address, its registration from the reference
 * cache (docs/regcache.md), every byte checked where it lands (--verify):
 *  - none (pinned MRs, a cache never told): the classic bug, stale messages counted and
 *    reported (JSON regcache.stale > 0), and the run still passes (exit 0);
 *  - notify, lease, odp: no stale message, exit 0, and the machinery each one claims
 *    shows in its figures (notify: a registration per message, the notifier fired;
 *    lease: restores, the daemon's lease breaks acknowledged; odp: no cache at all).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_check.h"
#include "t.h"

static struct h_env env;

#define ITERS 200
#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* A number of the client's --json document: d[...] in Python. */
static double num(const struct tr_pair *r, const char *expr)
{
	char e[200];

	snprintf(e, sizeof(e), "d%s", expr);
	return tr_json_num(r->cout, e);
}

static void check_backend(const struct tr_pair *r, const char *what, const char *backend)
{
	double stale = num(r, "[\"regcache\"][\"stale\"]");
	double regs = num(r, "[\"results\"][0][\"regcache\"][\"registrations\"]");
	double restores = num(r, "[\"results\"][0][\"regcache\"][\"restores\"]");

	T_CHECK(num(r, "[\"regcache\"][\"checked\"]") == ITERS, "%s: messages checked", what);
	T_CHECK(strstr(r->sout, "stale messages: "), "%s: the server's text lacks the stale "
		"count:\n%s", what, r->sout);
	if (!strcmp(backend, "none")) {
		/* 16 buffers, registered once each; every later message goes out stale */
		T_CHECK(stale > 0, "%s: no stale message: the classic bug did not show", what);
		T_CHECK(regs == 16, "%s: %.0f registrations, want 16", what, regs);
		return;
	}
	T_CHECK(stale == 0, "%s: %.0f stale messages", what, stale);
	if (!strcmp(backend, "notify")) {
		T_CHECK(regs == ITERS, "%s: %.0f registrations, want one per message", what,
			regs);
		T_CHECK(num(r, "[\"regcache\"][\"local\"][\"watch_fired\"]") >= ITERS - 16,
			"%s: the notifier fired %.0f times", what,
			num(r, "[\"regcache\"][\"local\"][\"watch_fired\"]"));
	} else if (!strcmp(backend, "lease")) {
		double breaks = num(r, "[\"regcache\"][\"local\"][\"lease_breaks\"]");
		double revoked = num(r, "[\"regcache\"][\"local\"][\"lease_revocations\"]");

		T_CHECK(regs == 16, "%s: %.0f registrations, want 16", what, regs);
		T_CHECK(restores == ITERS - 16, "%s: %.0f restores, want one per re-mapped buffer",
			what, restores);
		T_CHECK(breaks == ITERS - 16, "%s: %.0f lease breaks, want %d", what, breaks,
			ITERS - 16);
		T_CHECK(revoked == 0, "%s: %.0f leases revoked (an acknowledgement came too late)",
			what, revoked);
	} else {
		T_CHECK(regs == 0, "%s: the cache registered %.0f times", what, regs);
	}
}

static void run(const char *test, const char *backend)
{
	struct tr_pair r;
	char what[80];
	unsigned long failed = t_failures;

	snprintf(what, sizeof(what), "%s --regcache %s", test, backend);
	tr_perf_pair(&env, test, ARGS("--regcache", backend, "--verify", "--json", "-n", "200",
				      "-t", "16", "-s", "8192"), NULL, &r, 120);
	if (pc_ok(&r, what, ITERS, true))
		check_backend(&r, what, backend);
	if (t_failures == failed)
		printf("%s: %.0f of %d stale, %.0f msgs/s, munmap %.1f us, mmap %.1f us, get "
		       "%.1f us\n", what, num(&r, "[\"regcache\"][\"stale\"]"), ITERS,
		       num(&r, "[\"results\"][0][\"regcache\"][\"msgs_per_s\"]"),
		       num(&r, "[\"results\"][0][\"regcache\"][\"munmap_us\"]"),
		       num(&r, "[\"results\"][0][\"regcache\"][\"mmap_us\"]"),
		       num(&r, "[\"results\"][0][\"regcache\"][\"get_us\"]"));
	else
		pc_show(&r, what);
	tr_pair_free(&r);
}

/* Several QPs, each with its ring of churned buffers, under leases. */
static void run_qps(void)
{
	struct tr_pair r;

	tr_perf_pair(&env, "send", ARGS("--regcache", "lease", "--verify", "--json", "-q", "3",
					"-t", "4", "-n", "240", "-s", "3000"), NULL, &r, 120);
	if (pc_ok(&r, "send --regcache lease -q 3", 240, true))
		T_CHECK(num(&r, "[\"regcache\"][\"stale\"]") == 0, "-q 3: stale messages");
	tr_pair_free(&r);
}

int main(void)
{
	static const char *const tests[] = { "write", "send", "read" };
	static const char *const backends[] = { "none", "notify", "lease", "odp" };

	if (system("python3 -c 'import json' >/dev/null 2>&1")) {
		printf("tools-perf-regcache: SKIP (python3 checks the JSON)\n");
		return T_SKIP;
	}
	h_up(&env, NULL, NULL, 600);
	for (size_t t = 0; t < T_ARRAY_SIZE(tests); t++)
		for (size_t b = 0; b < T_ARRAY_SIZE(backends); b++)
			run(tests[t], backends[b]);
	run_qps();
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	T_EQ(h_down(&env), 0, "daemons that did not stop cleanly");
	return t_done("tools-perf-regcache");
}
