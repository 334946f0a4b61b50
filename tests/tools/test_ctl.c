/* SPDX-License-Identifier: MIT */
/*
 * odpemu-ctl against two real daemons: list, devinfo, stat (text and JSON; the device
 * counters' names and order against tests/tools/counter_names.txt), inject (accepted,
 * refused with the daemon's reason, the wire knobs, the list without knobs), watch bounded
 * by -n, and the errors a user meets (no daemon, no such device, qp/mr scope not
 * available yet).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "tools_run.h"

static struct h_env env;

/* Run odpemu-ctl args on host 0: exit code, output in *out. */
static int ctl(const char *const *args, const char *const *extra_env, char **out)
{
	const char *argv[32] = { tr_ctl() };
	int n = 1;

	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return tr_run(&env, 0, argv, extra_env, out, 20);
}

static void expect(const char *const *args, int code, const char *text)
{
	char *out;
	int rc = ctl(args, NULL, &out);

	T_CHECK(rc == code, "odpemu-ctl %s: exit %d, want %d; output:\n%s", args[0], rc, code, out);
	T_CHECK(strstr(out, text) != NULL, "odpemu-ctl %s %s: output lacks '%s':\n%s", args[0],
		args[1] ? args[1] : "", text, out);
	free(out);
}

static void test_list_devinfo(void)
{
	expect((const char *const[]){ "list", NULL }, 0, env.host[0].name);
	expect((const char *const[]){ "list", NULL }, 0, env.host[1].name);
	expect((const char *const[]){ "list", NULL }, 0, "ACTIVE");
	expect((const char *const[]){ "devinfo", "-d", env.host[1].name, NULL }, 0,
	       env.host[1].addr);
	expect((const char *const[]){ "devinfo", "-d", env.host[1].name, NULL }, 0,
	       "PORT_ACTIVE");
	expect((const char *const[]){ "devinfo", "-v", NULL }, 0,
	       "file-backed shared memory: fdatasync'ed before the acknowledgement");
	expect((const char *const[]){ "devinfo", "-v", NULL }, 0,
	       "ODP_SUPPORT ODP_SUPPORT_IMPLICIT");
	expect((const char *const[]){ "devinfo", "-v", NULL }, 0, "rc_odp_caps:");
	expect((const char *const[]){ "devinfo", "-v", NULL }, 0,
	       "host (the daemon's, probed at its start");
	expect((const char *const[]){ "devinfo", "-v", NULL }, 0, "\t\tprocmap_query ");
	expect((const char *const[]){ "devinfo", NULL }, 0, "features not available");
	expect((const char *const[]){ "devinfo", "-v", NULL }, 0, "max_inline_data:");
	/* without -d: every device, in name order */
	expect((const char *const[]){ "devinfo", NULL }, 0, env.host[0].name);
}

/* stat qp|mr lists the objects of other processes (this one's, seen from odpemu-ctl). */
static void test_stat_objects(void)
{
	struct h_side side = { .ctx = h_open(&env, 1) };
	struct h_qp_opts o;
	static uint8_t buf[8192];
	struct odpemu_mr *mr;
	char *out, want[64];
	int rc;

	h_qp_opts_default(&o);
	if (h_side_up(&side, &o) || !(mr = odpemu_reg_mr(side.pd, buf, sizeof(buf),
			ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_ON_DEMAND))) {
		T_CHECK(0, "objects for stat qp|mr: %m");
		return;
	}
	snprintf(want, sizeof(want), "qp %#x", side.qp->qp_num);
	expect((const char *const[]){ "stat", "-d", env.host[1].name, "qp", NULL }, 0, want);
	expect((const char *const[]){ "stat", "-d", env.host[1].name, "qp", NULL }, 0,
	       "rnr_naks_received");
	snprintf(want, sizeof(want), "mr %#x", mr->lkey);
	expect((const char *const[]){ "stat", "-d", env.host[1].name, "mr", NULL }, 0, want);
	rc = ctl((const char *const[]){ "stat", "-d", env.host[1].name, "mr", "--json", NULL },
		 NULL, &out);
	T_EQ(rc, 0, "stat mr --json exit");
	T_EQ(tr_json_num(out, "d[\"devices\"][0][\"mrs\"][0][\"lkey\"]"), mr->lkey,
	     "stat mr --json lkey");
	T_CHECK(tr_json_num(out, "d[\"devices\"][0][\"mrs\"][0][\"counters\"][\"page_faults\"]")
		>= 0, "stat mr --json has page_faults:\n%s", out);
	free(out);
	odpemu_dereg_mr(mr);
	odpemu_destroy_qp(side.qp);
	odpemu_destroy_cq(side.cq);
	odpemu_dealloc_pd(side.pd);
	odpemu_close_device(side.ctx);
}

static void test_stat(void)
{
	char *out, v[64];
	int rc;

	expect((const char *const[]){ "stat", "-d", env.host[0].name, NULL }, 0, "page_faults");
	expect((const char *const[]){ "stat", NULL }, 0, "rnr_naks_sent");
	rc = ctl((const char *const[]){ "stat", "-d", env.host[1].name, "--json", NULL }, NULL,
		 &out);
	T_EQ(rc, 0, "stat --json exit");
	T_CHECK(tr_json(out, "d[\"devices\"][0][\"name\"]", v, sizeof(v)) == 0 &&
		!strcmp(v, env.host[1].name), "stat --json names the device: '%s' in\n%s", v, out);
	T_CHECK(tr_json_num(out, "d[\"devices\"][0][\"counters\"][\"page_faults\"]") >= 0,
		"stat --json has page_faults:\n%s", out);
	free(out);
	test_stat_objects();
	expect((const char *const[]){ "stat", "bogus", NULL }, 2, "unknown object 'bogus'");
}

/* The device counters' names and order are an interface: a fresh daemon's list is
 * tests/tools/counter_names.txt (ODPEMU_COUNTER_NAMES), histogram buckets left out. */
static void test_counter_names(void)
{
	const char *golden = getenv("ODPEMU_COUNTER_NAMES");
	static char got[16384], want[16384];
	FILE *f = golden ? fopen(golden, "r") : NULL;
	char line[128], *out;
	size_t n = 0;

	T_CHECK(f != NULL, "ODPEMU_COUNTER_NAMES: cannot open '%s'", golden ? golden : "(unset)");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (line[0] != '#' && n + strlen(line) < sizeof(want))
			n += (size_t)snprintf(want + n, sizeof(want) - n, "%s", line);
	fclose(f);
	if (n && want[n - 1] == '\n')
		want[n - 1] = '\0';
	T_EQ(ctl((const char *const[]){ "stat", "-d", env.host[0].name, "--json", NULL }, NULL,
		 &out), 0, "stat --json exit");
	T_EQ(tr_json(out, "\"\\n\".join(k for k in d[\"devices\"][0][\"counters\"] "
		     "if \"_lt_\" not in k)", got, sizeof(got)), 0, "the counter names");
	T_CHECK(!strcmp(got, want), "device counters differ from %s:\n%s", golden, got);
	free(out);
}

static void test_inject(void)
{
	expect((const char *const[]){ "inject", "-d", env.host[1].name, "--fault-delay-us", "5",
				      "--fault-fail-rate", "0", "--evict-rate", "0",
				      "--fault-policy", "stall", NULL }, 0, "fault-policy = stall");
	expect((const char *const[]){ "inject", "-d", env.host[1].name, "--fault-policy", "rnr",
				      NULL }, 0, "fault-policy = rnr");
	expect((const char *const[]){ "inject", "-d", env.host[1].name, "--fault-fail-rate", "2",
				      NULL }, 1, "refused");
	expect((const char *const[]){ "inject", "-d", env.host[1].name, "--fault-delay-us", "0",
				      NULL }, 0, "fault-delay-us = 0");
	/* the wire knobs, positional or as options; without knobs, the list */
	expect((const char *const[]){ "inject", "-d", env.host[1].name, "wire-loss", "rx:0.5",
				      "--wire-match", "write,ack", NULL }, 0,
	       "wire-match = write,ack");
	expect((const char *const[]){ "inject", "-d", env.host[1].name, NULL }, 0,
	       "wire-loss = tx:0 rx:0.5");
	expect((const char *const[]){ "inject", "-d", env.host[1].name, NULL }, 0,
	       "fault-policy = rnr");
	expect((const char *const[]){ "inject", "-d", env.host[1].name, "wire-loss", "both:0",
				      "wire-match", "all", NULL }, 0, "wire-match = all");
	expect((const char *const[]){ "inject", "-d", env.host[1].name, "wire-reorder", "0.1:0",
				      NULL }, 1, "DEPTH 1..64");
	expect((const char *const[]){ "inject", "wire-loss", NULL }, 2, "no value");
	expect((const char *const[]){ "inject", "nope", "1", NULL }, 2, "unknown knob 'nope'");
}

/* Without -d a command takes the device of the host it runs on: as root the hosts are
 * namespaces sharing one run directory, and only the local device's address binds. */
static void test_default_device(void)
{
	const char *argv[] = { tr_ctl(), "inject", "--fault-delay-us", "0", NULL };
	char *out, want[64];

	if (!env.netns)
		return;
	for (int i = 0; i < 2; i++) {
		T_EQ(tr_run(&env, i, argv, NULL, &out, 20), 0, "inject without -d");
		snprintf(want, sizeof(want), "%s: fault-delay-us = 0", env.host[i].name);
		T_CHECK(strstr(out, want) != NULL, "host %d without -d: want '%s', got:\n%s", i,
			want, out);
		free(out);
	}
}

static void test_watch(void)
{
	char *out, v[64];
	int rc;

	expect((const char *const[]){ "watch", "-n", "2", "-i", "0.1", NULL }, 0, "faults/s");
	rc = ctl((const char *const[]){ "watch", "-d", env.host[0].name, "-n", "1", "-i", "0.1",
				       "--json", NULL }, NULL, &out);
	T_EQ(rc, 0, "watch --json exit");
	T_CHECK(tr_json(out, "d[\"per_second\"][\"page_faults\"]", v, sizeof(v)) == 0,
		"watch --json line parses:\n%s", out);
	free(out);
}

static void test_errors(void)
{
	char *out;
	int rc = ctl((const char *const[]){ "list", NULL },
		     (const char *const[]){ "ODPEMU_RUNDIR=/nonexistent-odpemu", NULL }, &out);

	T_EQ(rc, 1, "no daemon: exit");
	T_CHECK(strstr(out, "no odpemu device is running") && strstr(out, "start one with "
		"`odpemud"), "no daemon: message names the fix:\n%s", out);
	free(out);
	expect((const char *const[]){ "devinfo", "-d", "nosuchdev", NULL }, 1,
	       "no device 'nosuchdev' (running: ");
	expect((const char *const[]){ "stat", "-d", "nosuchdev", NULL }, 1, "pick one of them");
	expect((const char *const[]){ "frobnicate", NULL }, 2, "unknown command");
}

int main(void)
{
	h_up(&env, NULL, NULL, 120);
	test_list_devinfo();
	test_stat();
	test_counter_names();
	test_inject();
	test_default_device();
	test_watch();
	test_errors();
	T_EQ(h_down(&env), 0, "daemons that did not stop cleanly");
	return t_done("tools-ctl");
}
