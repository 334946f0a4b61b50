/* SPDX-License-Identifier: MIT */
/*
 * libfabric 1.17 (libfabric-bin), unmodified, through its own verbs provider on odpemu's
 * drop-in libibverbs.so.1 and librdmacm.so.1, between the two daemons of the e2e harness:
 *  - fi_info -p verbs lists both devices, with FI_EP_MSG (verbs) and FI_EP_RDM
 *    (verbs;ofi_rxm);
 *  - fi_pingpong -e msg over verbs and -e rdm over verbs;ofi_rxm, every size, with data
 *    checks (-c), each with pinned memory and with FI_VERBS_USE_ODP=1; with ODP the
 *    server's device must have taken page faults during the run (odpemu-ctl's
 *    page_faults), and with pinned memory none.
 * Each side names its host's device (-d): the run directory the hosts share lists both.
 * The control socket is fi_pingpong's own TCP port (-B on the server, -P on the client);
 * the data moves over rdma_cm connections the daemons' CMs negotiate. Without root (hosts
 * on 127.0.0.1 and 127.0.0.2) the test skips: libfabric ignores addresses on lo.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat_run.h"
#include "t.h"

static struct h_env env;

static void fi_info_lists(void)
{
	struct cr_args a = { 0 };
	char *out = NULL;
	int rc;

	cr_push(&a, "fi_info", "-p", "verbs", NULL);
	rc = cr_run(&env, 1, &a, NULL, &out, 60);
	T_CHECK(rc == 0, "fi_info -p verbs: exit %d, output:\n%s", rc, out ? out : "");
	if (out) {
		T_CHECK(strstr(out, "domain: odpa") && strstr(out, "domain: odpb"),
			"fi_info lists both devices:\n%s", out);
		T_CHECK(strstr(out, "FI_EP_MSG") && strstr(out, "FI_PROTO_RDMA_CM_IB_RC"),
			"fi_info lists the verbs MSG endpoint:\n%s", out);
		T_CHECK(strstr(out, "provider: verbs;ofi_rxm") && strstr(out, "FI_EP_RDM"),
			"fi_info lists the RDM endpoint over ofi_rxm:\n%s", out);
	}
	printf("%-64s %s\n", cr_cmdline(&a), rc == 0 ? "ok" : "FAILED");
	free(out);
}

/* fi_pingpong -p prov -e ep -c on both hosts; odp: FI_VERBS_USE_ODP=1 on both. */
static void pingpong(const char *prov, const char *ep, bool odp)
{
	static const char *const odp_env[] = { "FI_VERBS_USE_ODP=1", NULL };
	const char *const *extra = odp ? odp_env : NULL;
	unsigned port = cr_port(&env);
	double faults_before = cr_counter(&env, env.host[1].name, "page_faults"), faults;
	struct cr_pair r = { 0 };
	bool ok;

	cr_push(&r.server, "fi_pingpong", "-p", prov, "-e", ep, "-c", "-I", "200",
		"-d", env.host[1].name, NULL);
	cr_pushf(&r.server, "-B%u", port);
	cr_push(&r.client, "fi_pingpong", "-p", prov, "-e", ep, "-c", "-I", "200",
		"-d", env.host[0].name, NULL);
	cr_pushf(&r.client, "-P%u", port);
	cr_push(&r.client, env.host[1].addr, NULL);
	cr_pair_run_args(&env, port, extra, extra, &r, 120);
	/* every size up to 1 MiB ran, each checked (-c) */
	ok = cr_pair_ok(&r, "1m ");
	faults = cr_counter(&env, env.host[1].name, "page_faults") - faults_before;
	if (odp)
		T_CHECK(faults > 0, "%s %s with ODP: the server's device took no page faults",
			prov, ep);
	else
		T_CHECK(faults == 0, "%s %s pinned: the server's device took %.0f page faults",
			prov, ep, faults);
	printf("%-64s %s (server page faults %.0f)\n", cr_cmdline(&r.client),
	       ok ? "ok" : "FAILED", faults);
	cr_pair_free(&r);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	cr_need("fi_pingpong", "libfabric-bin");
	h_up(&env, NULL, NULL, 600);
	if (!strncmp(env.host[1].addr, "127.", 4))	/* not root: no namespaces */
		h_skip(&env, "libfabric's verbs provider offers no address on lo (it skips "
		       "IFF_LOOPBACK interfaces): run as root, with network namespaces");
	fi_info_lists();
	for (int odp = 0; odp < 2; odp++) {
		pingpong("verbs", "msg", odp);
		pingpong("verbs;ofi_rxm", "rdm", odp);
	}
	return cr_finish(&env, "compat-libfabric");
}
