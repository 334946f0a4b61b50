/* SPDX-License-Identifier: MIT */
/*
 * ibverbs-utils' pingpong programs on odpemu's libibverbs.so.1: the server (-d odpb) on
 * host 1, the client (-d odpa) on host 0, both exit 0. ibv_rc_pingpong in each mode that
 * reaches a different part of the library: polling and events (-e), explicit and implicit
 * ODP (-o, -O), prefetch (-P), completion timestamps (-t, ibv_cq_ex), the new post-send
 * API (-N, ibv_qp_ex), 1 B and 1 MiB messages; ibv_uc_pingpong, ibv_ud_pingpong and
 * ibv_srq_pingpong.
 * Link layer Ethernet needs -g (a GRH on every AH): -g 1 everywhere.
 *
 * Page faults (odpemu-ctl stat -d odpb): none on pinned memory, some with -o and -O, and
 * fewer with -o -P than with -o alone for the same size and iterations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat_run.h"
#include "t.h"

#define GID_INDEX "1"	/* the IPv4-mapped RoCE v2 GID */

static struct h_env env;

enum faults { ANY, NONE, SOME };	/* what odpb's page_faults must do over a run */

struct variant {
	const char *prog;
	const char *opts[12];	/* after -g GID_INDEX */
	const char *want;	/* in the client's output */
	enum faults faults;
};

static const struct variant variants[] = {
	{ "ibv_rc_pingpong", { "-n", "500" }, "500 iters in", NONE },
	{ "ibv_rc_pingpong", { "-e", "-n", "500" }, "500 iters in", ANY },
	{ "ibv_rc_pingpong", { "-O", "-n", "200" }, "200 iters in", SOME },
	{ "ibv_rc_pingpong", { "-t", "-n", "200" }, "Average receive completion clock cycles",
	  ANY },
	{ "ibv_rc_pingpong", { "-N", "-n", "500" }, "500 iters in", ANY },
	{ "ibv_rc_pingpong", { "-s", "1", "-n", "500" }, "500 iters in", ANY },
	{ "ibv_rc_pingpong", { "-s", "1048576", "-n", "100" }, "100 iters in", ANY },
	{ "ibv_uc_pingpong", { "-n", "500" }, "500 iters in", NONE },
	{ "ibv_uc_pingpong", { "-e", "-s", "65536", "-n", "200" }, "200 iters in", ANY },
	{ "ibv_ud_pingpong", { "-n", "500" }, "500 iters in", ANY },
	{ "ibv_srq_pingpong", { "-n", "100" }, "100 iters in", ANY },
	{ "ibv_srq_pingpong", { "-o", "-n", "100" }, "100 iters in", SOME },
};

/* -o and -o -P: the same size and iterations, so only the prefetch differs */
#define ODP_RUN "-s", "262144", "-n", "100"

/* Run prog -g GID_INDEX opts... as server and client; odpb's page faults over the run in
 * *faults (NULL: not read). True when both exited 0 and the client printed `want`. */
static bool run(const char *prog, const char *const *opts, const char *want, double *faults)
{
	struct cr_args o = { 0 };
	struct cr_pair r;
	double before = faults ? cr_counter(&env, env.host[1].name, "page_faults") : 0;
	bool ok;

	cr_push(&o, "-g", GID_INDEX, NULL);
	cr_push_list(&o, opts);
	cr_pair_run(&env, prog, o.v, &r, 30);
	ok = cr_pair_ok(&r, want);
	/* rc_pingpong -P only warns when ibv_advise_mr fails */
	if (ok && (strstr(r.sout, "Couldn't prefetch MR") || strstr(r.cout, "Couldn't prefetch"))) {
		T_CHECK(0, "%s: ibv_advise_mr failed", cr_cmdline(&r.client));
		cr_pair_show(&r);
		ok = false;
	}
	if (faults)
		*faults = cr_counter(&env, env.host[1].name, "page_faults") - before;
	printf("%-64s %s", cr_cmdline(&r.client), ok ? "ok" : "FAILED");
	if (faults && ok)
		printf(", %s page faults: %.0f", env.host[1].name, *faults);
	printf("\n");
	cr_pair_free(&r);
	return ok;
}

static void test_variant(const struct variant *v)
{
	struct cr_args what = { 0 };
	double faults;

	if (!run(v->prog, v->opts, v->want, v->faults == ANY ? NULL : &faults))
		return;
	cr_push(&what, v->prog, NULL);
	cr_push_list(&what, v->opts);
	if (v->faults == NONE)
		T_CHECK(faults == 0, "%s: %.0f page faults on pinned memory", cr_cmdline(&what),
			faults);
	if (v->faults == SOME)
		T_CHECK(faults > 0, "%s: no page fault on %s", cr_cmdline(&what),
			env.host[1].name);
}

/* Prefetching the whole MR first (-P: ibv_advise_mr PREFETCH_WRITE, FLUSH) leaves fewer
 * pages for the NIC to fault on. */
static void test_prefetch(void)
{
	double plain, prefetched;

	if (!run("ibv_rc_pingpong", (const char *const[]){ "-o", ODP_RUN, NULL }, "100 iters in",
		 &plain) ||
	    !run("ibv_rc_pingpong", (const char *const[]){ "-o", "-P", ODP_RUN, NULL },
		 "100 iters in", &prefetched))
		return;
	T_CHECK(plain > 0, "ibv_rc_pingpong -o: no page fault on %s", env.host[1].name);
	T_CHECK(prefetched < plain, "ibv_rc_pingpong -o -P: %.0f page faults, -o alone %.0f",
		prefetched, plain);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);	/* progress survives the watchdog's SIGTERM */
	cr_need("ibv_rc_pingpong", "ibverbs-utils");
	h_up(&env, NULL, NULL, 600);
	/* after CR_MAX_HANGS hung programs the rest would only wait as long again */
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
		if (cr_hangs < CR_MAX_HANGS)
			test_variant(&variants[i]);
	if (cr_hangs < CR_MAX_HANGS)
		test_prefetch();
	return cr_finish(&env, "compat-pingpong");
}
