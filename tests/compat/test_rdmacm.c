/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm programs, unmodified (rdmacm-utils, perftest -R), on odpemu's drop-in
 * librdmacm.so.1 and libibverbs.so.1 between the two daemons of the e2e harness: each
 * pair connects through the daemons' connection managers (REQ/REP/RTU on QP1), moves and
 * checks its data, and disconnects (DREQ/DREP):
 *  - rping -v -V (every ping printed and verified) for 1000 round trips;
 *  - ucmatose with 8 connections, 10 messages each;
 *  - rdma_server / rdma_client (rdma_create_ep, sync IDs, rdma_get_request);
 *  - udaddy with 4 UD "connections" (SIDR_REQ/SIDR_REP), 10 datagrams each way;
 *  - cmtime with 16 connections at once (its client destroys the event channel while its
 *    event thread still waits on it);
 *  - rping to a port nobody listens on: REJECTED (reason 8, invalid service ID); udaddy
 *    to one: UNREACHABLE (SIDR status 1, unsupported);
 *  - mckey: UD multicast to 230.1.2.3 (rdma_join_multicast, a receiver on host 1, a sender
 *    on host 0). The sender's QP is attached too, but mckey leaves the group right after
 *    posting its sends, so whether their looped-back copies still find it attached is a
 *    race (on rxe too): tests/emu/e2e/test_mcast.c checks that delivery instead.
 * perftest -R runs in the perftest tests; failures (dead daemon, dead server, silent
 * address) in rdmacm_failures; libfabric in libfabric.
 * The client starts once the server's daemon has its listener (cr_pair_run_cm).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat_run.h"
#include "t.h"

static struct h_env env;

static bool run(struct cr_pair *r, const char *want)
{
	bool ok;

	cr_pair_run_cm(&env, NULL, NULL, r, 60);
	ok = cr_pair_ok(r, want);
	printf("%-64s %s\n", cr_cmdline(&r->client), ok ? "ok" : "FAILED");
	return ok;
}

static void rping(void)
{
	struct cr_pair r = { 0 };

	cr_push(&r.server, "rping", "-s", "-a", env.host[1].addr, "-v", "-V", "-C", "1000", NULL);
	cr_push(&r.client, "rping", "-c", "-a", env.host[1].addr, "-v", "-V", "-C", "1000", NULL);
	run(&r, "ping data: rdma-ping-999: ");	/* -v prints every ping; the last one came */
	cr_pair_free(&r);
}

static void ucmatose(void)
{
	struct cr_pair r = { 0 };

	cr_push(&r.server, "ucmatose", "-b", env.host[1].addr, "-c", "8", "-C", "10", NULL);
	cr_push(&r.client, "ucmatose", "-s", env.host[1].addr, "-c", "8", "-C", "10", NULL);
	if (run(&r, "return status 0"))
		T_CHECK(strstr(r.sout, "return status 0") != NULL, "ucmatose server:\n%s", r.sout);
	cr_pair_free(&r);
}

static void rdma_server_client(void)
{
	struct cr_pair r = { 0 };

	cr_push(&r.server, "rdma_server", NULL);
	cr_push(&r.client, "rdma_client", "-s", env.host[1].addr, NULL);
	if (run(&r, "rdma_client: end 0"))
		T_CHECK(strstr(r.sout, "rdma_server: end 0") != NULL, "rdma_server:\n%s", r.sout);
	cr_pair_free(&r);
}

/* The UDP port space: SIDR_REQ/SIDR_REP, then datagrams to the QPN and Q_Key it gave, both
 * ways (the server answers through ibv_create_ah_from_wc). */
static void udaddy(void)
{
	struct cr_pair r = { 0 };

	cr_push(&r.server, "udaddy", "-b", env.host[1].addr, "-c", "4", "-C", "10", NULL);
	cr_push(&r.client, "udaddy", "-s", env.host[1].addr, "-c", "4", "-C", "10", NULL);
	if (run(&r, "return status 0"))
		T_CHECK(strstr(r.sout, "data transfers complete") &&
			strstr(r.sout, "return status 0"), "udaddy server:\n%s", r.sout);
	cr_pair_free(&r);
}

/* cmtime: 16 connections set up at once and timed, step by step; its server serves until
 * it is stopped (SIGTERM here, once the client is done). */
static void cmtime(void)
{
	unsigned long long listens = cr_dev_counter(&env, 1, "cm_listens");
	struct cr_args sa = { 0 }, ca = { 0 };
	char *sout = NULL, *cout = NULL;
	struct tr_proc s;
	int rc;

	cr_push(&sa, "cmtime", "-b", env.host[1].addr, "-c", "16", NULL);
	cr_push(&ca, "cmtime", "-s", env.host[1].addr, "-c", "16", NULL);
	if (cr_start(&env, 1, &sa, NULL, &s))
		return;
	if (!cr_wait_dev_counter(&env, 1, "cm_listens", listens, &s, 20000)) {
		T_CHECK(false, "cmtime -b never listened");
		cr_collect(&s, &sa, 0, &sout);
		free(sout);
		return;
	}
	rc = cr_run(&env, 0, &ca, NULL, &cout, 60);
	T_CHECK(rc == 0 && cout && strstr(cout, "connect      :") && strstr(cout, "disconnect   :"),
		"cmtime -c 16: exit %d, output:\n%s", rc, cout ? cout : "");
	T_CHECK(!cr_exited(&s, 0), "the cmtime server still serves after its client");
	kill(s.pid, SIGTERM);
	cr_collect(&s, &sa, 10, &sout);
	printf("%-64s %s\n", cr_cmdline(&ca), rc ? "FAILED" : "ok");
	free(sout);
	free(cout);
}

/* UD to nobody: SIDR_REP "unsupported" at once, UNREACHABLE with that status (1), as the
 * kernel's cma_sidr_rep_handler reports it. */
static void udaddy_no_listener(void)
{
	struct cr_args a = { 0 };
	char *out = NULL;
	int rc;

	cr_push(&a, "udaddy", "-s", env.host[1].addr, "-c", "1", "-C", "1", NULL);
	rc = cr_run(&env, 0, &a, NULL, &out, 30);
	T_CHECK(rc != 0 && out && strstr(out, "RDMA_CM_EVENT_UNREACHABLE, error: 1"),
		"udaddy to a port nobody listens on: exit %d, output:\n%s", rc, out ? out : "");
	printf("%-64s %s\n", cr_cmdline(&a), rc ? "unreachable, as it should be" : "FAILED");
	free(out);
}

/* No listener: the client's REQ is answered with REJ (invalid service ID) at once. */
static void no_listener(void)
{
	struct cr_args a = { 0 };
	char *out = NULL;
	int rc;

	cr_push(&a, "rping", "-c", "-a", env.host[1].addr, "-p", "7", "-C", "1", NULL);
	rc = cr_run(&env, 0, &a, NULL, &out, 30);
	T_CHECK(rc != 0 && out && strstr(out, "RDMA_CM_EVENT_REJECTED, error 8"),
		"rping to a port nobody listens on: exit %d, output:\n%s", rc, out ? out : "");
	printf("%-64s %s\n", cr_cmdline(&a), rc ? "rejected, as it should be" : "FAILED");
	free(out);
}

static unsigned long long dev_ctr(int host, const char *name)
{
	return cr_dev_counter(&env, host, name);
}

/* mckey: the receiver (host 1) posts its receives and joins; the sender (host 0) starts
 * once host 1's daemon listens on the group, joins too, and sends 10 datagrams. UD has no
 * retransmission: skipped under the harness's random drop. */
static void mckey(void)
{
	struct cr_args sa = { 0 }, ca = { 0 };
	unsigned long long sent0 = dev_ctr(0, "mcast_pkts_sent"),
		groups1 = dev_ctr(1, "mcast_groups");
	char *sout = NULL, *cout = NULL;
	struct tr_proc s;
	int rc, src;

	if (env.ipv6 || env.drop_pct) {
		printf("%-64s skipped (IPv4 group; no random drop)\n", "mckey -m 230.1.2.3");
		return;
	}
	cr_push(&sa, "mckey", "-m", "230.1.2.3", "-b", env.host[1].addr, "-C", "10", NULL);
	cr_push(&ca, "mckey", "-m", "230.1.2.3", "-b", env.host[0].addr, "-s", "-C", "10", NULL);
	if (cr_start(&env, 1, &sa, NULL, &s))
		return;
	if (!cr_wait_dev_counter(&env, 1, "mcast_groups", groups1, &s, 20000)) {
		T_CHECK(false, "mckey receiver never joined 230.1.2.3");
		cr_collect(&s, &sa, 0, &sout);
		free(sout);
		return;
	}
	rc = cr_run(&env, 0, &ca, NULL, &cout, 60);
	src = cr_collect(&s, &sa, 30, &sout);
	T_CHECK(rc == 0 && cout && strstr(cout, "data transfers complete"),
		"mckey sender: exit %d, output:\n%s", rc, cout ? cout : "");
	T_CHECK(src == 0 && sout && strstr(sout, "joined dgid: ::ffff:230.1.2.3") &&
		strstr(sout, "data transfers complete"), "mckey receiver: exit %d, output:\n%s",
		src, sout ? sout : "");
	T_CHECK(dev_ctr(0, "mcast_pkts_sent") - sent0 == 10, "host 0 sent 10 to the group");
	T_CHECK(dev_ctr(1, "mcast_groups") == groups1, "host 1 left the group at the end");
	printf("%-64s %s\n", cr_cmdline(&ca), rc || src ? "FAILED" : "ok");
	free(sout);
	free(cout);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	cr_need("rping", "rdmacm-utils");
	h_up(&env, NULL, NULL, 600);
	rping();
	ucmatose();
	rdma_server_client();
	udaddy();
	cmtime();
	no_listener();
	udaddy_no_listener();
	mckey();
	return cr_finish(&env, "compat-rdmacm");
}
