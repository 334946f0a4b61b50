/* SPDX-License-Identifier: MIT */
/*
 * ibverbs-utils' device programs on odpemu's libibverbs.so.1, between the two daemons of
 * the e2e harness: ibv_devices lists both devices; ibv_devinfo -v shows each as a RoCE
 * device (transport InfiniBand, port 1 active, link layer Ethernet, an IPv4-mapped RoCE v2
 * GID of its host's address) with ODP capabilities; with no daemon in the run directory
 * there are no devices, and no crash. tools/odpemu-run does the same without the test's
 * LD_LIBRARY_PATH. Expected strings are rdma-core v44 devinfo.c's and device_list.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compat_run.h"
#include "t.h"

static struct h_env env;

/* Run a on host (extra env may be NULL): exit `code`, and every string of `want` in the
 * output. Returns the output (malloc'd) for more checks. */
static char *expect(int host, const struct cr_args *a, const char *const *extra, int code,
		    const char *const *want)
{
	char *out = NULL;
	int rc = cr_run(&env, host, a, extra, &out, 30);
	unsigned long failed = t_failures;

	T_CHECK(rc == code, "%s: exit %d, want %d", cr_cmdline(a), rc, code);
	for (int i = 0; want && want[i]; i++)
		T_CHECK(strstr(out, want[i]) != NULL, "%s: output lacks '%s'", cr_cmdline(a),
			want[i]);
	if (t_failures != failed)
		fprintf(stderr, "---- output of host %d: %s\n%s\n----\n", host, cr_cmdline(a), out);
	return out;
}

static void run_expect(int host, const struct cr_args *a, int code, const char *const *want)
{
	free(expect(host, a, NULL, code, want));
}

/* The lines of `out` under the header line "\t<name>:" up to the next header (a line with
 * one leading tab), e.g. the capability names under "\trc_odp_caps:". Static buffer. */
static const char *section(const char *out, const char *name)
{
	static char buf[2048];
	char head[64];
	const char *p, *end;

	snprintf(head, sizeof(head), "\n\t%s:\n", name);
	if (!(p = strstr(out, head)))
		return "";
	p += strlen(head);
	/* its lines have two or more leading tabs */
	for (end = p; end[0] == '\t' && end[1] == '\t';) {
		const char *nl = strchr(end, '\n');

		end = nl ? nl + 1 : end + strlen(end);
	}
	snprintf(buf, sizeof(buf), "%.*s", (int)(end - p), p);
	return buf;
}

/* Every capability of `caps` (NULL-terminated) on a line of its own in section `name`. */
static void check_caps(const char *out, const char *dev, const char *name,
		       const char *const *caps)
{
	const char *s = section(out, name);
	char line[64];

	for (int i = 0; caps[i]; i++) {
		snprintf(line, sizeof(line), "\t%s\n", caps[i]);
		T_CHECK(strstr(s, line) != NULL, "ibv_devinfo -v -d %s: %s lacks %s (got:\n%s)",
			dev, name, caps[i], s);
	}
}

/* A GID line "GID[  N]:\t\t<gid>, RoCE v2" whose GID is the host's address. */
static bool has_roce_gid(const char *out, const char *addr, bool mapped)
{
	char want[96];

	snprintf(want, sizeof(want), "\t%s%s, RoCE v2\n", mapped ? "::ffff:" : "", addr);
	return strstr(out, want) != NULL;
}

static void test_devinfo_host(int i)
{
	const char *dev = env.host[i].name;
	struct cr_args a = { 0 };
	char hca[64], *out;
	unsigned long failed;

	cr_push(&a, "ibv_devinfo", "-v", "-d", dev, NULL);
	snprintf(hca, sizeof(hca), "hca_id:\t%s\n", dev);
	out = expect(i, &a, NULL, 0, (const char *const[]){ hca,
		"\ttransport:\t\t\tInfiniBand (0)\n", "\t\tport:\t1\n",
		"\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n", "\t\t\tlink_layer:\t\tEthernet\n", NULL });
	failed = t_failures;
	T_CHECK(has_roce_gid(out, env.host[i].addr, !env.ipv6),
		"ibv_devinfo -v -d %s: no RoCE v2 GID line for %s", dev, env.host[i].addr);
	check_caps(out, dev, "general_odp_caps",
		   (const char *const[]){ "ODP_SUPPORT", "ODP_SUPPORT_IMPLICIT", NULL });
	/* what rc_pingpong -o, perftest --odp and the NIC model's caps (nic/device_attr.c) say */
	check_caps(out, dev, "rc_odp_caps", (const char *const[]){ "SUPPORT_SEND",
		   "SUPPORT_RECV", "SUPPORT_WRITE", "SUPPORT_READ", "SUPPORT_ATOMIC",
		   "SUPPORT_SRQ", NULL });
	check_caps(out, dev, "ud_odp_caps",
		   (const char *const[]){ "SUPPORT_SEND", "SUPPORT_RECV", NULL });
	if (t_failures != failed)
		fprintf(stderr, "---- ibv_devinfo -v -d %s:\n%s\n----\n", dev, out);
	free(out);
}

static void test_devices(void)
{
	struct cr_args list = { 0 }, all = { 0 }, nosuch = { 0 };

	cr_push(&list, "ibv_devices", NULL);
	run_expect(0, &list, 0, (const char *const[]){ "    odpa", "    odpb", NULL });
	cr_push(&all, "ibv_devinfo", NULL);
	run_expect(1, &all, 0, (const char *const[]){ "hca_id:\todpa\n", "hca_id:\todpb\n",
		   NULL });
	cr_push(&nosuch, "ibv_devinfo", "-d", "nosuch", NULL);
	run_expect(0, &nosuch, 255, (const char *const[]){ "IB device 'nosuch' wasn't found",
		   NULL });
}

/* A run directory without daemons (fresh and empty, or missing): no devices. */
static void test_no_daemon(const char *rundir)
{
	struct cr_args info = { 0 }, list = { 0 }, devices = { 0 };
	char var[300];
	const char *const extra[] = { var, NULL };
	char *out;

	snprintf(var, sizeof(var), "ODPEMU_RUNDIR=%s", rundir);
	cr_push(&info, "ibv_devinfo", NULL);
	free(expect(0, &info, extra, 255, (const char *const[]){ "No IB devices found", NULL }));
	/* -l prints ibv_get_device_list's count: a list, and an empty one */
	cr_push(&list, "ibv_devinfo", "-l", NULL);
	free(expect(0, &list, extra, 0, (const char *const[]){ "0 HCAs found:", NULL }));
	cr_push(&devices, "ibv_devices", NULL);
	out = expect(0, &devices, extra, 0, (const char *const[]){ "node GUID", NULL });
	T_CHECK(!strstr(out, "odp"), "ibv_devices in %s lists a device:\n%s", rundir, out);
	free(out);
}

/* tools/odpemu-run (build-tree copy) with no LD_LIBRARY_PATH of its own (meson's test
 * environment has one, the build's library directories); --rundir wins over the
 * ODPEMU_RUNDIR in the environment. */
static void test_odpemu_run(const char *empty)
{
	const char *run = getenv("ODPEMU_RUN");
	const char *devices[] = { "env", "-u", "LD_LIBRARY_PATH", run, "--rundir", env.rundir,
		"ibv_devices", NULL };
	const char *info[] = { "env", "-u", "LD_LIBRARY_PATH", run, "--rundir", empty,
		"ibv_devinfo", NULL };
	char *out;
	int rc;

	if (!run || !*run) {
		T_CHECK(0, "$ODPEMU_RUN is not set (meson passes tools/odpemu-run)");
		return;
	}
	rc = tr_run(&env, 0, devices, cr_preload_env(), &out, 30);
	T_CHECK(rc == 0 && strstr(out, "odpa") && strstr(out, "odpb"),
		"odpemu-run --rundir %s ibv_devices: exit %d, output:\n%s", env.rundir, rc, out);
	free(out);
	rc = tr_run(&env, 0, info, cr_preload_env(), &out, 30);
	T_CHECK(rc == 255 && strstr(out, "No IB devices found"),
		"odpemu-run --rundir %s ibv_devinfo: exit %d, output:\n%s", empty, rc, out);
	free(out);
}

int main(void)
{
	char empty[200], missing[200];

	setvbuf(stdout, NULL, _IOLBF, 0);	/* progress survives the watchdog's SIGTERM */
	cr_need("ibv_devinfo", "ibverbs-utils");
	h_up(&env, NULL, NULL, 180);
	test_devices();
	for (int i = 0; i < 2; i++)
		test_devinfo_host(i);
	snprintf(empty, sizeof(empty), "%s/empty", env.rundir);
	snprintf(missing, sizeof(missing), "%s/missing", env.rundir);
	T_CHECK(mkdir(empty, 0700) == 0, "mkdir %s", empty);
	test_no_daemon(empty);
	test_no_daemon(missing);
	test_odpemu_run(empty);
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	T_EQ(h_down(&env), 0, "daemons that did not stop cleanly");
	return t_done("compat-devinfo");
}
