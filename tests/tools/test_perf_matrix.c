/* SPDX-License-Identifier: MIT */
/*
 * odpemu-perf between two hosts, one test (argv[1]: write, read, send or atomic) across
 * --odp off/explicit/implicit × --fault-policy stall/rnr, every byte checked (--verify),
 * plus --lat for each memory mode. ODP runs are --cold, so every message must fault on
 * the responder, which must then have answered as its policy says: RNR NAKs or stalls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_check.h"
#include "t.h"

#define ITERS 200
#define ITERS_S "200"

static struct h_env env;

static const char *size_of(const char *test)
{
	return !strcmp(test, "atomic") ? "8" : "4096";
}

static void one(const char *test, const char *odp, const char *policy, bool lat)
{
	const char *args[32] = { lat ? "--lat" : "--bw", "-n", ITERS_S, "--odp", odp,
		"--fault-policy", policy, "--verify", "--json", "--min-rnr-timer", "1" };
	int n = 11;
	bool cold = strcmp(odp, "off");
	struct tr_pair r;
	char what[128];
	unsigned long failed = t_failures;

	if (strcmp(test, "atomic")) {
		args[n++] = "-s";
		args[n++] = size_of(test);
	}
	if (cold)
		args[n++] = "--cold";
	args[n] = NULL;
	snprintf(what, sizeof(what), "%s %s --odp %s --fault-policy %s", test, args[0], odp,
		 policy);
	tr_perf_pair(&env, test, args, NULL, &r, 90);
	if (pc_ok(&r, what, ITERS, true)) {
		double faults = pc_odp(&r, "remote", "page_faults");
		/* the RNR NAKs of page faults: those of an empty receive queue (a SEND
		 * receiver reposting late under load) are not the policy's */
		double rnr = pc_odp(&r, "remote", "rnr_naks_sent") -
			     pc_odp(&r, "remote", "rnr_naks_no_wqe");
		double stalls = pc_odp(&r, "remote", "stalls");

		printf("%-48s responder: %5.0f page faults, %5.0f RNR NAKs, %5.0f stalls\n", what,
		       faults, rnr, stalls);
		if (!cold) {
			T_CHECK(faults == 0 && pc_odp(&r, "local", "page_faults") == 0,
				"%s: pinned memory took page faults", what);
		} else {
			/* rnr: the pages of messages dropped behind an RNR NAK are faulted in
			 * ahead (prefetched, nic/resp.c fault_ahead), not faulted one by one */
			double ahead = pc_odp(&r, "remote", "page_prefetch");

			T_CHECK(faults + ahead >= ITERS, "%s: %.0f responder page faults and %.0f "
				"pages faulted ahead for %d cold messages", what, faults, ahead,
				ITERS);
			if (!strcmp(policy, "rnr"))
				T_CHECK(rnr > 0 && stalls == 0, "%s: rnr policy: %.0f RNR NAKs, %.0f "
					"stalls", what, rnr, stalls);
			else
				T_CHECK(stalls > 0 && rnr == 0, "%s: stall policy: %.0f RNR NAKs, %.0f "
					"stalls", what, rnr, stalls);
		}
		if (t_failures != failed)
			pc_show(&r, what);
	}
	tr_pair_free(&r);
}

int main(int argc, char **argv)
{
	static const char *const odps[] = { "off", "explicit", "implicit" };
	const char *test = argc > 1 ? argv[1] : "write";
	char name[64];

	h_up(&env, NULL, NULL, 600);
	for (int o = 0; o < 3; o++) {
		one(test, odps[o], "stall", false);
		one(test, odps[o], "rnr", false);
		one(test, odps[o], "stall", true);
	}
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	T_EQ(h_down(&env), 0, "daemons that did not stop cleanly");
	snprintf(name, sizeof(name), "tools-perf-%s", test);
	return t_done(name);
}
