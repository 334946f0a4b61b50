/* SPDX-License-Identifier: MIT */
/*
 * emu/check: the host feature report (emu/check.h). Every row has a verdict, what it
 * saw, a use, a text for its absence and a remedy; the rows this kernel has are
 * available (on Linux >= 6.11 outside a seccomp filter, with io_uring enabled: io_uring
 * and its features, PROCMAP_QUERY, userfaultfd and its tiers, cachestat, ...); ODPEMU_MASK
 * reports rows absent with their own texts, and an unknown name is an error naming the
 * known ones. Then `odpemud --check` as a user runs it ($ODPEMUD): exit 0 and a line per
 * row, --json one document with every row; io_uring masked (or a feature its loop needs):
 * the epoll loop, exit 0; exit 1 with the reason when the UDP socket is masked, exit 2 for
 * a bad mask or --json alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "t.h"

/* The running kernel as major * 1000 + minor. */
static int kernel_version(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major * 1000 + minor;
}

static long proc_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

/* Under a seccomp filter (a container's profile) anything may be refused. */
static bool filtered(void)
{
	char line[128];
	bool yes = false;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8))
			yes = atoi(line + 8) == 2;
	if (f)
		fclose(f);
	return yes;
}

static void every_row_complete(const struct emu_check_report *rep)
{
	unsigned n;

	emu_check_rows(&n);
	T_EQ(rep->n, n, "every row probed (with the tests' rows)");
	for (unsigned i = 0; i < rep->n; i++) {
		const struct emu_check_result *r = &rep->r[i];
		const struct emu_check_row *row = r->row;

		T_CHECK(r->verdict <= EMU_CHECK_MISSING, "%s: a verdict", row->name);
		T_CHECK(row->absent != EMU_CHECK_AVAILABLE, "%s: absence is a fallback or "
			"missing", row->name);
		T_CHECK(r->detail[0], "%s: what the probe saw", row->name);
		T_CHECK(row->needs && row->needs[0] && row->used_for && row->used_for[0],
			"%s: what it needs and is for", row->name);
		T_CHECK(row->without && row->without[0] && row->remedy && row->remedy[0],
			"%s: a text without it, and a remedy", row->name);
		T_CHECK(row->absent != EMU_CHECK_MISSING || !strncmp(row->without, "none", 4) ||
			row->who == EMU_CHECK_TESTS, "%s: missing says 'none: what fails'",
			row->name);
		T_CHECK(!r->masked, "%s: nothing masked", row->name);
	}
}

/* The rows a kernel of `since` and later has, where nothing filters system calls. */
static void expect_available(const struct emu_check_report *rep, const char *name, int since)
{
	const struct emu_check_result *r = emu_check_find(rep, name);

	T_CHECK(r != NULL, "%s: a row", name);
	if (!r || kernel_version() < since || filtered())
		return;
	if (!strncmp(name, "io_uring", 8) && proc_long("/proc/sys/kernel/io_uring_disabled") > 0)
		return;
	T_CHECK(r->verdict == EMU_CHECK_AVAILABLE, "%s: available on Linux %d.%d (%s)", name,
		since / 1000, since % 1000, r->detail);
}

static void this_machine(void)
{
	struct emu_check_report rep;
	char err[1024] = "";

	T_EQ(emu_check_run(&rep, NULL, true, err, sizeof(err)), 0, "a run without a mask");
	every_row_complete(&rep);
	expect_available(&rep, "udp_socket", 0);
	expect_available(&rep, "io_uring", 5001);
	expect_available(&rep, "io_uring_poll_multishot", 5013);
	expect_available(&rep, "io_uring_coop_taskrun", 5019);
	expect_available(&rep, "io_uring_buf_ring", 5019);
	expect_available(&rep, "io_uring_recvmsg_multishot", 6000);
	expect_available(&rep, "io_uring_sync_cancel", 6000);
	expect_available(&rep, "udp_gso", 4018);
	expect_available(&rep, "udp_gro", 5000);
	expect_available(&rep, "procmap_query", 6011);
	expect_available(&rep, "userfaultfd", 5011);
	expect_available(&rep, "uffd_wp_shmem", 5019);
	expect_available(&rep, "uffd_wp_async", 6007);
	expect_available(&rep, "seccomp_notify", 5007);
	expect_available(&rep, "pidfd_open", 5003);
	expect_available(&rep, "cachestat", 6005);
	if (geteuid() == 0) {	/* root: every capability, no Yama in its way */
		expect_available(&rep, "process_vm", 0);
		expect_available(&rep, "ptrace_scope", 0);
		expect_available(&rep, "map_files", 0);
		expect_available(&rep, "udp_buffers", 0);
	}
	T_CHECK(rep.fatal < 0 || filtered(), "odpemud can run here (fatal row %d)", rep.fatal);
	/* the daemon's own run leaves the tests' rows out */
	T_EQ(emu_check_run(&rep, NULL, false, err, sizeof(err)), 0, "a run without tests' rows");
	T_CHECK(!emu_check_find(&rep, "cachestat") && !emu_check_find(&rep, "netns") &&
		emu_check_find(&rep, "io_uring"), "the start's run skips cachestat and netns");
}

static void masked(void)
{
	struct emu_check_report rep;
	const struct emu_check_result *pq, *cs, *io;
	char err[1024] = "", reason[1024] = "";

	T_EQ(emu_check_run(&rep, "procmap_query,cachestat", true, err, sizeof(err)), 0,
	     "a run with two rows masked");
	pq = emu_check_find(&rep, "procmap_query");
	cs = emu_check_find(&rep, "cachestat");
	io = emu_check_find(&rep, "io_uring");
	T_CHECK(pq && pq->masked && pq->verdict == EMU_CHECK_FALLBACK,
		"procmap_query masked: a fallback");
	T_CHECK(pq && strstr(pq->detail, "ODPEMU_MASK") && strstr(pq->row->without,
		"/proc/PID/maps") && strstr(pq->row->without, "fault thread") &&
		strstr(pq->row->remedy, "6.11"), "procmap_query: the text and the fault thread");
	T_CHECK(cs && cs->masked && cs->verdict == EMU_CHECK_FALLBACK,
		"cachestat masked: a fallback");
	T_CHECK(cs && strstr(cs->row->without, "/proc/self/smaps") &&
		strstr(cs->row->remedy, "6.5"), "cachestat: e2e-persist reads smaps instead");
	T_CHECK(io && !io->masked, "io_uring is not masked");
	T_CHECK(rep.fatal < 0 || filtered(), "neither is fatal");
	if (pq) {
		emu_check_reason(pq, reason, sizeof(reason));
		T_CHECK(strstr(reason, "procmap_query: masked by ODPEMU_MASK") &&
			strstr(reason, "remedy: Linux 6.11"), "the reason line: %s", reason);
	}
	T_CHECK(emu_check_loop_uring(&rep, reason, sizeof(reason)) || filtered(),
		"nothing the io_uring loop needs is masked: io_uring (%s)", reason);
	T_EQ(emu_check_run(&rep, "io_uring", false, err, sizeof(err)), 0, "io_uring masked");
	io = emu_check_find(&rep, "io_uring");
	T_CHECK(rep.fatal < 0 && io && io->verdict == EMU_CHECK_FALLBACK &&
		strstr(io->row->without, "the epoll loop"),
		"io_uring masked: not fatal, the epoll loop instead");
	io = emu_check_find(&rep, "io_uring_sync_cancel");
	T_CHECK(io && io->verdict == EMU_CHECK_FALLBACK && strstr(io->detail, "needs io_uring"),
		"its features are absent with it");
	T_CHECK(!emu_check_loop_uring(&rep, reason, sizeof(reason)) &&
		strstr(reason, "io_uring: masked by ODPEMU_MASK"), "so the loop is epoll: %s",
		reason);
	T_EQ(emu_check_run(&rep, "io_uring_sync_cancel", false, err, sizeof(err)), 0,
	     "sync cancel masked (Linux 5.x)");
	T_CHECK(!emu_check_loop_uring(&rep, reason, sizeof(reason)) &&
		(strstr(reason, "io_uring_sync_cancel") || filtered()), "the loop is epoll: %s",
		reason);
	T_EQ(emu_check_run(&rep, "udp_socket", false, err, sizeof(err)), 0, "udp masked");
	T_CHECK(rep.fatal >= 0 && !strcmp(rep.r[rep.fatal].row->name, "udp_socket"),
		"no UDP socket: fatal");
}

static void bad_masks(void)
{
	struct emu_check_report rep;
	unsigned long mask = 0;
	char err[1024] = "";

	T_EQ(emu_check_mask_parse("procmap_query,,cachestat,", &mask, err, sizeof(err)), 0,
	     "empty words are nothing");
	T_EQ(__builtin_popcountl(mask), 2, "two rows masked");
	T_EQ(emu_check_mask_parse("procmap_query,nosuch", &mask, err, sizeof(err)), -EINVAL,
	     "an unknown name");
	T_CHECK(strstr(err, "ODPEMU_MASK") && strstr(err, "'nosuch'") &&
		strstr(err, "procmap_query") && strstr(err, "netns"), "the error: %s", err);
	T_EQ(emu_check_mask_parse("procmap", &mask, err, sizeof(err)), -EINVAL, "no prefixes");
	T_EQ(emu_check_run(&rep, "io-uring", true, err, sizeof(err)), -EINVAL,
	     "a run with a bad mask");
	emu_check_io_uring_reason(-EPERM, err, sizeof(err));
	T_CHECK(!strncmp(err, "io_uring: refused (EPERM): ", 27) && strstr(err, "; remedy: "),
		"the io_uring reason: %s", err);
}

/* `mask odpemud args 2>&1`: the exit status, the output in out. */
static int run(const char *mask, const char *args, char *out, size_t cap)
{
	const char *bin = getenv("ODPEMUD");
	char cmd[1024];
	size_t got = 0;
	FILE *f;
	int st;

	out[0] = '\0';
	if (!bin)
		return -1;
	snprintf(cmd, sizeof(cmd), "ODPEMU_MASK='%s' '%s' %s 2>&1", mask, bin, args);
	if (!(f = popen(cmd, "r")))
		return -1;
	while (got + 1 < cap && (st = (int)fread(out + got, 1, cap - got - 1, f)) > 0)
		got += (size_t)st;
	out[got] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void the_binary(void)
{
	static char out[1 << 16];
	char line[64], key[64];
	unsigned n;
	const struct emu_check_row *rows = emu_check_rows(&n);
	int rc;

	T_CHECK(getenv("ODPEMUD") != NULL, "$ODPEMUD names odpemud (meson sets it)");
	rc = run("", "--check", out, sizeof(out));
	T_CHECK(rc == 0 || (filtered() && rc == 1), "odpemud --check exits 0 (%d): %s", rc, out);
	for (unsigned i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "\n%s ", rows[i].name);
		T_CHECK(strstr(out, line) != NULL, "--check prints row %s", rows[i].name);
	}
	T_CHECK(strstr(out, "odpemud can run") != NULL, "--check says odpemud can run");
	T_EQ(run("", "--check --json", out, sizeof(out)), 0, "--check --json exits 0");
	T_CHECK(out[0] == '{' && strstr(out, "\"can_run\": true"), "one JSON document");
	for (unsigned i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "\"name\": \"%s\"", rows[i].name);
		T_CHECK(strstr(out, key) != NULL, "--json has row %s", rows[i].name);
	}
	T_EQ(run("io_uring", "--check", out, sizeof(out)), 0, "io_uring masked: exit 0");
	T_CHECK(strstr(out, "the epoll loop") != NULL, "naming the epoll loop: %s", out);
	T_EQ(run("udp_socket", "--check", out, sizeof(out)), 1, "no UDP socket: exit 1");
	T_CHECK(strstr(out, "odpemud: cannot run: udp_socket: masked by ODPEMU_MASK; "
			    "remedy: ") != NULL, "with the reason on one line");
	T_EQ(run("cachestat,nosuch", "--check", out, sizeof(out)), 2, "a bad mask: exit 2");
	T_CHECK(strstr(out, "unknown feature 'nosuch'") != NULL, "naming the word: %s", out);
	T_EQ(run("", "--json", out, sizeof(out)), 2, "--json alone: a usage error");
}

int main(int argc, char **argv)
{
	t_seed(argc, argv, 1);
	this_machine();
	masked();
	bad_masks();
	the_binary();
	return t_done("emu-check");
}
