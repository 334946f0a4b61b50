/* SPDX-License-Identifier: MIT */
/*
 * sec-group — who may use a device: root, the daemon's user and the members of the control
 * socket's group (odpemud --group). As root: daemon a at its defaults, daemon b with
 * --group 4242, both in one run directory made 0755; odpemu-ctl runs as nobody (uid and
 * gid 65534) through setpriv:
 *  - the run directory still 0700: "permission denied" naming the directory;
 *  - b's socket is mode 0660, group 4242 (renamed into place with it); a's has the
 *    daemon's group;
 *  - no groups: `odpemu-ctl list` exits 1 and says "permission denied: <socket path>"
 *    with the --group hint for both devices; devinfo -d odpb exits 1 the same way;
 *  - supplementary group 4242: b is listed ACTIVE and devinfo works, a stays denied; so
 *    with 4242 as the primary group;
 *  - the daemon's own group as a supplementary group opens a (the daemon's peer check
 *    looked at the primary group only: the connection was accepted by the kernel, then
 *    closed by the daemon, and the client saw ENODEV);
 *  - root lists both;
 *  - --group by name sets that group's gid; an unknown name exits 2 with one clear line.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "t.h"

#define GROUP "4242"
#define NOBODY "65534"

/* odpemu-ctl args as nobody with setpriv's identity flags `who` (NULL: as ourselves, root);
 * exit status, output (stdout and stderr) in out. Bounded: 20 s. */
static int ctl_as(const char *const *who, const char *const *args, char *out, size_t outlen)
{
	const char *argv[32], *path = getenv("ODPEMU_CTL");
	int n = 0, st;

	if (who) {
		argv[n++] = "setpriv";
		for (int i = 0; who[i]; i++)
			argv[n++] = who[i];
	}
	argv[n++] = path && *path ? path : "odpemu-ctl";
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	st = h_capture(argv, 20, out, outlen);
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static const char *const nobody[] = { "--reuid", NOBODY, "--regid", NOBODY, "--clear-groups",
				      NULL };
static const char *const nobody_in_group[] = { "--reuid", NOBODY, "--regid", NOBODY,
					       "--groups", GROUP, NULL };
static const char *const nobody_primary[] = { "--reuid", NOBODY, "--regid", GROUP,
					      "--clear-groups", NULL };

/* Run and check: exit code, and each of the NULL-terminated texts in the output. */
static void expect(const char *who_name, const char *const *who, const char *const *args,
		   int code, const char *const *texts)
{
	char out[16384];
	int rc = ctl_as(who, args, out, sizeof(out));

	T_CHECK(rc == code, "%s: odpemu-ctl %s: exit %d, want %d:\n%s", who_name, args[0], rc,
		code, out);
	for (int i = 0; texts[i]; i++)
		T_CHECK(strstr(out, texts[i]), "%s: odpemu-ctl %s: output lacks '%s':\n%s",
			who_name, args[0], texts[i], out);
}

static void socket_owner(struct h_env *e, int i, gid_t want)
{
	char path[300];
	struct stat st;

	h_sock_path(e, i, path, sizeof(path));
	T_CHECK(!stat(path, &st), "stat %s: %s", path, strerror(errno));
	T_EQ(st.st_mode & 07777, 0660, "socket mode");
	T_EQ(st.st_gid, want, "socket group");
}

static void by_name(struct h_env *e)
{
	static const char *const unknown[] = { "--name", "odpx", "--addr", "127.0.0.1",
		"--group", "no-such-group-odpemu", NULL };
	struct group *g = getgrgid(1);
	char out[4096], name[64];
	int st = h_run(e, 1, unknown, out, sizeof(out));

	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "unknown --group: status %#x", st);
	T_CHECK(strstr(out, "--group 'no-such-group-odpemu': no such group"),
		"unknown --group: message:\n%s", out);
	if (!g) {
		printf("no group with gid 1: --group by name not checked\n");
		return;
	}
	snprintf(name, sizeof(name), "%s", g->gr_name);
	h_daemon_stop(e, 1, SIGTERM);
	T_CHECK(!h_daemon_start(e, 1, (const char *const[]){ "--group", name, NULL }),
		"daemon b with --group %s", name);
	socket_owner(e, 1, 1);
}

static void body(struct h_env *e)
{
	char sock_a[300], sock_b[300], deny_a[400], deny_b[400], dir_deny[300];
	const char *const list[] = { "list", NULL }, *const info_b[] = { "devinfo", "-d", "odpb",
									NULL };
	const char *const info_a[] = { "devinfo", "-d", "odpa", NULL };

	h_sock_path(e, 0, sock_a, sizeof(sock_a));
	h_sock_path(e, 1, sock_b, sizeof(sock_b));
	snprintf(deny_a, sizeof(deny_a), "permission denied: %s (", sock_a);
	snprintf(deny_b, sizeof(deny_b), "permission denied: %s (", sock_b);
	snprintf(dir_deny, sizeof(dir_deny), "permission denied: %s (the run directory", e->rundir);

	/* mkdtemp made it 0700: nobody cannot even look */
	expect("nobody, run directory 0700", nobody_in_group, list, 1,
	       (const char *const[]){ dir_deny, NULL });
	T_CHECK(!chmod(e->rundir, 0755), "chmod 0755 %s: %s", e->rundir, strerror(errno));

	socket_owner(e, 0, getegid());
	socket_owner(e, 1, 4242);

	expect("nobody", nobody, list, 1, (const char *const[]){ deny_a, deny_b,
	       "odpemud --group", NULL });
	expect("nobody", nobody, info_b, 1, (const char *const[]){ "cannot open device odpb: ",
	       deny_b, NULL });
	expect("nobody in " GROUP, nobody_in_group, list, 1,
	       (const char *const[]){ deny_a, "odpb       ACTIVE", NULL });
	expect("nobody in " GROUP, nobody_in_group, info_b, 0,
	       (const char *const[]){ "odpb", "PORT_ACTIVE", NULL });
	expect("nobody in " GROUP, nobody_in_group, info_a, 1, (const char *const[]){ deny_a,
	       NULL });
	expect("nobody, primary group " GROUP, nobody_primary, info_b, 0,
	       (const char *const[]){ "PORT_ACTIVE", NULL });
	/* the daemon's own group (root's: 0) as a supplementary group */
	expect("nobody in the daemon's group", (const char *const[]){ "--reuid", NOBODY,
	       "--regid", NOBODY, "--groups", "0", NULL }, info_a, 0,
	       (const char *const[]){ "PORT_ACTIVE", NULL });
	expect("root", NULL, list, 0, (const char *const[]){ "odpa       ACTIVE",
	       "odpb       ACTIVE", NULL });
	by_name(e);
}

int main(int argc, char **argv)
{
	static const char *const group_b[] = { "--group", GROUP, NULL };
	static const struct h_test t = { .name = "sec-group", .watchdog_s = 120,
		.daemon_args = { NULL, group_b }, .open = H_OPEN_NONE, .body = body };

	if (geteuid() != 0) {
		printf("sec-group needs root (setpriv to another user): skipped\n");
		return T_SKIP;
	}
	if (system("setpriv --help >/dev/null 2>&1")) {
		printf("sec-group needs setpriv (util-linux): skipped\n");
		return T_SKIP;
	}
	return h_main(argc, argv, &t);
}
