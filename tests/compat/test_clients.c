/* SPDX-License-Identifier: MIT */
/*
 * The fabric libraries on odpemu's libibverbs.so.1, unmodified, between the two daemons of
 * the e2e harness:
 *  - fi_info (libfabric-bin) starts and lists the verbs provider's DGRAM domain of the
 *    host's device (the MSG endpoints need rdma_cm: the next drop-in);
 *  - ucx_info -d (ucx-utils) lists rc_verbs and ud_verbs on the host's device (UCX needs
 *    /dev/infiniband/odpemu, which odpemud makes when it runs as root: skipped otherwise);
 *  - ucx_perftest between the hosts: UCT put_bw over rc_verbs, UCT am_lat over ud_verbs,
 *    UCP tag_lat over rc_v (rc_verbs with ud_verbs for the wire-up), each ends with its
 *    "Final:" line and no UCX error (ucx_perftest exits 0 even when a test failed).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat_run.h"
#include "ipc.h"
#include "t.h"

#define DEVNODE IPC_DEVNODE_DIR "/" IPC_DEVNODE_NAME

static struct h_env env;

static void expect_output(int host, const struct cr_args *a, const char *const *extra,
			  const char *const *want)
{
	char *out = NULL;
	int rc = cr_run(&env, host, a, extra, &out, 60);
	unsigned long failed = t_failures;

	T_CHECK(rc == 0, "%s: exit %d", cr_cmdline(a), rc);
	for (int i = 0; want[i]; i++)
		T_CHECK(out && strstr(out, want[i]), "%s: output lacks '%s'", cr_cmdline(a), want[i]);
	if (t_failures != failed)
		fprintf(stderr, "---- %s\n%s\n----\n", cr_cmdline(a), out ? out : "");
	free(out);
}

static void fi_info(void)
{
	struct cr_args a = { 0 };
	char domain[64];

	snprintf(domain, sizeof(domain), "domain: %s-dgram", env.host[0].name);
	cr_push(&a, "fi_info", "-p", "verbs", NULL);
	expect_output(0, &a, NULL, (const char *const[]){ "provider: verbs", domain, NULL });
}

static void ucx_info(void)
{
	struct cr_args a = { 0 };
	char dev[64];

	snprintf(dev, sizeof(dev), "Device: %s:1", env.host[0].name);
	cr_push(&a, "ucx_info", "-d", NULL);
	expect_output(0, &a, NULL, (const char *const[]){ "Transport: rc_verbs",
		"Transport: ud_verbs", dev, NULL });
}

/* One ucx_perftest pair: args after the program on both sides ("%dev": the side's
 * device), the test on the client; ucp: a UCP test, the transports and device in the
 * environment. */
static void perftest(const char *what, const char *const *both, const char *test, bool ucp)
{
	unsigned port = cr_port(&env);
	char senv_s[96], cenv_s[96], sdev[64], cdev[64];
	const char *senv[3] = { "UCX_TLS=rc_v" }, *cenv[3] = { "UCX_TLS=rc_v" };
	struct cr_pair r = { 0 };
	unsigned long failed = t_failures;

	snprintf(sdev, sizeof(sdev), "%s:1", env.host[1].name);
	snprintf(cdev, sizeof(cdev), "%s:1", env.host[0].name);
	cr_push(&r.server, "ucx_perftest", "-p", NULL);
	cr_pushf(&r.server, "%u", port);
	cr_push(&r.client, "ucx_perftest", env.host[1].addr, "-p", NULL);
	cr_pushf(&r.client, "%u", port);
	for (int i = 0; both[i]; i++) {
		bool dev = !strcmp(both[i], "%dev");

		cr_push(&r.server, dev ? sdev : both[i], NULL);
		cr_push(&r.client, dev ? cdev : both[i], NULL);
	}
	cr_push(&r.client, "-t", test, "-n", "1000", NULL);
	if (ucp) {
		snprintf(senv_s, sizeof(senv_s), "UCX_NET_DEVICES=%s", sdev);
		snprintf(cenv_s, sizeof(cenv_s), "UCX_NET_DEVICES=%s", cdev);
		senv[1] = senv_s;
		cenv[1] = cenv_s;
	} else {
		senv[0] = cenv[0] = NULL;
	}
	if (cr_pair_run_args(&env, port, senv, cenv, &r, 120)) {
		T_CHECK(0, "%s: did not run", what);
	} else {
		T_CHECK(r.sexit == 0 && r.cexit == 0, "%s: exits %d/%d", what, r.sexit, r.cexit);
		T_CHECK(r.cout && strstr(r.cout, "Final:"), "%s: no 'Final:' line", what);
		T_CHECK(r.cout && !strstr(r.cout, "ERROR"), "%s: UCX reported an error", what);
		T_CHECK(r.sout && !strstr(r.sout, "ERROR"), "%s: the server reported an error",
			what);
	}
	if (t_failures != failed)
		cr_pair_show(&r);
	cr_pair_free(&r);
}

int main(void)
{
	cr_need("fi_info", "libfabric-bin");
	cr_need("ucx_info", "ucx-utils");
	h_up(&env, NULL, NULL, 600);
	fi_info();
	if (access(DEVNODE, F_OK)) {
		printf("ucx: %s is missing (odpemud makes it as root): UCX not run\n", DEVNODE);
	} else {
		ucx_info();
		perftest("UCT put_bw over rc_verbs",
			 (const char *const[]){ "-d", "%dev", "-x", "rc_verbs", NULL }, "put_bw", false);
		perftest("UCT am_lat over ud_verbs",
			 (const char *const[]){ "-d", "%dev", "-x", "ud_verbs", NULL }, "am_lat", false);
		perftest("UCP tag_lat over rc_v", (const char *const[]){ NULL }, "tag_lat", true);
	}
	T_EQ(h_down(&env), 0, "daemons stopped cleanly");
	return t_done("compat-clients");
}
