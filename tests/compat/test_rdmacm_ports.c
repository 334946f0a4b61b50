/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm's port space (rdmacm_ports.c, the program given as argv[1]) between the two
 * daemons of the e2e harness, run as a client program is: in host 0's place with the
 * drop-ins on its library path, so that it loads no other copy of odpemu's library.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat_run.h"
#include "t.h"

static struct h_env env;

int main(int argc, char **argv)
{
	struct cr_args a = { 0 };
	char prog[PATH_MAX], *out = NULL;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s RDMACM-PORTS-PROGRAM\n", argv[0]);
		return 2;
	}
	/* meson passes its absolute path (a profile's wrapper runs this from elsewhere); a
	 * relative one from a user is made absolute before the harness changes anything */
	if (!realpath(argv[1], prog)) {
		fprintf(stderr, "%s: %m\n", argv[1]);
		return 1;
	}
	h_up(&env, NULL, NULL, 180);
	if (strchr(env.host[0].addr, ':'))
		h_skip(&env, "its cases need IPv4 test hosts");
	cr_push(&a, prog, env.host[0].addr, env.host[1].addr, env.netns ? "separate" : "shared",
		NULL);
	rc = cr_run(&env, 0, &a, NULL, &out, 120);
	printf("%s", out ? out : "(no output)\n");
	T_CHECK(rc == 0, "%s: exit %d", cr_cmdline(&a), rc);
	free(out);
	/* hosts in one namespace: host 0's daemon refused the REQ to "any address" on host 1's
	 * port and said why (cm_claim.c) */
	if (!env.netns) {
		struct odpemu_context *c = h_open(&env, 0);
		unsigned long long n = h_counter(c, ODPEMU_COUNTERS_DEVICE, 0,
					   "cm_req_port_elsewhere");

		T_CHECK(n >= 1 && n != UINT64_MAX, "host 0's cm_req_port_elsewhere: %llu", n);
		odpemu_close_device(c);
	}
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	h_down(&env);
	return t_done("compat-rdmacm-ports");
}
