/* SPDX-License-Identifier: MIT */
/*
 * rdma-core v44's own test suite (pyverbs: what Linux rxe is tested with) on odpemu's
 * drop-ins: two test hosts, the suite's generic modules run on host 0 through odpemu-run
 * as a user runs them (`run_tests.py --dev DEVICE --gid INDEX -v MODULES`), the GID index
 * being the one `ibv_devinfo -v` shows for the RoCE v2 GID of the host's address.
 *
 * The suite is a test input, not project code: it stays in ../shared/conformance beside
 * the source tree (or $ODPEMU_CONFORMANCE) and this test skips, saying so, without it.
 * pyverbs (python3-pyverbs, tools/dependencies.txt) is for Debian's /usr/bin/python3.
 *
 * Verdict, per test of the suite: a pass passes; a failure or an error fails this test,
 * unless it is one of the gaps below; a skip passes only when its reason is in the
 * allow-list (a feature real devices lack too, with which) or among the gaps. A gap that no
 * longer shows fails as well, so the list shrinks with the work (issue 30). Counts per
 * outcome and per skip reason are printed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat_run.h"
#include "conformance.h"
#include "t.h"

static struct h_env env;

static const char *const modules[] = {
	"tests.test_addr", "tests.test_atomic", "tests.test_cq", "tests.test_cq_events",
	"tests.test_cqex", "tests.test_device", "tests.test_flow", "tests.test_fork",
	"tests.test_mr", "tests.test_odp", "tests.test_parent_domain", "tests.test_pd",
	"tests.test_qp", "tests.test_qpex", "tests.test_rdmacm", "tests.test_relaxed_ordering",
	"tests.test_rss_traffic", "tests.test_shared_pd", "tests.test_tag_matching",
};

static const char *suite_dir(void)
{
	const char *d = getenv("ODPEMU_CONFORMANCE");

	return d && *d ? d : ODPEMU_CONFORMANCE_DEFAULT;
}

/* The index a user picks on host 0: the RoCE v2 GID of its address, as `ibv_devinfo -v`
 * prints it through odpemu-run ("GID[  1]:  ::ffff:10.201.0.1, RoCE v2"), or -1. */
static int gid_index(void)
{
	const char *run = getenv("ODPEMU_RUN");
	struct cr_args a = { 0 };
	char want[96], *out = NULL, *p;
	int idx = -1;

	cr_push(&a, run && *run ? run : "odpemu-run", "ibv_devinfo", "-v", "-d", env.host[0].name,
		NULL);
	snprintf(want, sizeof(want), strchr(env.host[0].addr, ':') ? "%s, RoCE v2" :
		 "::ffff:%s, RoCE v2", env.host[0].addr);
	if (cr_run(&env, 0, &a, NULL, &out, 60) == 0 && out && (p = strstr(out, want))) {
		while (p > out && p[-1] != '[')
			p--;
		idx = p > out ? atoi(p) : -1;
	}
	if (idx < 0)
		printf("no '%s' in ibv_devinfo -v:\n%s\n", want, out ? out : "(no output)");
	free(out);
	return idx;
}

/* Can odpemu-run show host 0 a sysfs view here (a mount namespace, or a user namespace
 * with one)? If not, its one-line reason goes into *why. */
static bool sysfs_view(char *why, size_t len)
{
	const char *run = getenv("ODPEMU_RUN");
	struct cr_args a = { 0 };
	char *out = NULL;
	int rc;

	cr_push(&a, run && *run ? run : "odpemu-run", "--sysfs", "true", NULL);
	rc = cr_run(&env, 0, &a, NULL, &out, 60);
	snprintf(why, len, "%s", out ? out : "");
	why[strcspn(why, "\n")] = '\0';
	free(out);
	return rc == 0;
}

static char *run_suite(const char *dev, int gid, bool sysfs)
{
	struct cr_args a = { 0 };
	const char *run = getenv("ODPEMU_RUN");
	char *out = NULL;
	int rc;

	cr_push(&a, run && *run ? run : "odpemu-run", NULL);
	if (sysfs)		/* the suite's rdma_cm and address tests look for device/net */
		cr_push(&a, "--sysfs", NULL);
	cr_push(&a, "/usr/bin/python3", "tests/run_tests.py", "--dev", dev, "--gid", NULL);
	cr_pushf(&a, "%d", gid);
	cr_push(&a, "-v", NULL);
	for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++)
		cr_push(&a, modules[i], NULL);
	printf("%s\n", cr_cmdline(&a));
	rc = cr_run(&env, 0, &a, NULL, &out, 900);
	printf("exit %d\n", rc);
	return out;
}

int main(void)
{
	struct conf_results r;
	struct stat st;
	char path[512], why[512];
	bool sysfs;
	char *out;
	int gid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(path, sizeof(path), "%s/tests/run_tests.py", suite_dir());
	if (stat(path, &st)) {
		printf("skipped: rdma-core's suite is not at %s (../shared/conformance/"
		       "rdma-core-v44 beside the source tree, or set $ODPEMU_CONFORMANCE)\n",
		       suite_dir());
		return 77;
	}
	/* found, not imported: importing loads libibverbs.so.1, here the drop-in (which in a
	 * sanitizer build needs its runtimes preloaded, as cr_run does) */
	if (system("/usr/bin/python3 -c 'import importlib.util as u, sys; "
		   "sys.exit(u.find_spec(\"pyverbs\") is None)' 2>/dev/null")) {
		fprintf(stderr, "pyverbs is missing for /usr/bin/python3: install python3-pyverbs "
			"(tools/test does)\n");
		return 1;
	}
	conf_hugepages_reserve();
	h_up(&env, NULL, NULL, 1200);
	gid = gid_index();
	T_CHECK(gid >= 0, "no GID of %s's address %s", env.host[0].name, env.host[0].addr);
	sysfs = sysfs_view(why, sizeof(why));
	if (!sysfs)
		printf("no sysfs view here, the suite runs without it: %s\n", why);
	if (gid >= 0 && chdir(suite_dir()) == 0) {
		out = run_suite(env.host[0].name, gid, sysfs);
		conf_parse(out ? out : "", &r);
		conf_judge(&r, sysfs);
		if (t_failures)
			fputs(out ? out : "(no output)\n", stdout);
		conf_free(&r);
		free(out);
	}
	conf_hugepages_restore();
	return cr_finish(&env, "conformance-rdma-core");
}
