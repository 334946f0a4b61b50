/* SPDX-License-Identifier: MIT */
/*
 * odpemu-run --sysfs on the hosts of the e2e harness (root: network namespaces and a veth
 * pair; otherwise 127.0.0.1/2 on lo, through an unprivileged user namespace): each file
 * of /sys/class/infiniband/<dev> says what the daemon says, asked here through libodpemu
 * and not through the drop-in that wrote the view (node_guid, the GIDs with rxe's
 * link-local entry in front, the netdev in gid_attrs/ndevs and device/net); the command
 * runs as its caller; the view is read-only; nothing stays mounted on the host; and where
 * namespaces are refused (a seccomp filter refusing unshare, as Docker's profile does)
 * odpemu-run says so and runs nothing.
 */
#include <endian.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat_run.h"
#include "t.h"

static struct h_env env;

/* The value of file `rel` of device dev in `grep -r . /sys/class/infiniband/DEV` output
 * ("<path>:<value>" lines); "" when absent. Static buffer. */
static const char *field(const char *out, const char *dev, const char *rel)
{
	static char val[256];
	char key[160];
	const char *p;

	snprintf(key, sizeof(key), "/sys/class/infiniband/%s/%s:", dev, rel);
	val[0] = '\0';
	for (p = out; (p = strstr(p, key)); p++)
		if (p == out || p[-1] == '\n') {
			p += strlen(key);
			snprintf(val, sizeof(val), "%.*s", (int)strcspn(p, "\n"), p);
			break;
		}
	return val;
}

static void gid_text(const union odpemu_gid *g, char *buf, size_t len)
{
	const uint8_t *r = g->raw;

	snprintf(buf, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
		 "%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
		 r[11], r[12], r[13], r[14], r[15]);
}

static void check_field(const char *out, const char *dev, const char *rel, const char *want)
{
	const char *got = field(out, dev, rel);

	T_CHECK(!strcmp(got, want), "%s/%s: '%s', want '%s'", dev, rel, got, want);
}

/* Every GID of the daemon's table at index + 1 (the drop-in's link-local GID is 0),
 * RoCE v2, on the daemon's netdev. */
static void check_gids(const char *out, const char *dev, struct odpemu_context *ctx,
		       const struct odpemu_port_attr *p)
{
	char rel[64], want[64];

	for (int i = 0; i < p->gid_tbl_len; i++) {
		union odpemu_gid g;

		T_CHECK(odpemu_query_gid(ctx, 1, i, &g) == 0, "%s: query_gid %d", dev, i);
		gid_text(&g, want, sizeof(want));
		snprintf(rel, sizeof(rel), "ports/1/gids/%d", i + 1);
		check_field(out, dev, rel, want);
		snprintf(rel, sizeof(rel), "ports/1/gid_attrs/types/%d", i + 1);
		check_field(out, dev, rel, "RoCE v2");
		snprintf(rel, sizeof(rel), "ports/1/gid_attrs/ndevs/%d", i + 1);
		check_field(out, dev, rel, p->netdev);
	}
	/* after them, empty entries as the kernel shows them: a zero GID, no type (the drop-in's
	 * table has 32 entries, compat/verbs/query.c CV_GID_TBL_LEN); none past the table */
	snprintf(rel, sizeof(rel), "ports/1/gids/%d", p->gid_tbl_len + 1);
	check_field(out, dev, rel, "0000:0000:0000:0000:0000:0000:0000:0000");
	snprintf(rel, sizeof(rel), "ports/1/gid_attrs/types/%d", p->gid_tbl_len + 1);
	check_field(out, dev, rel, "");
	check_field(out, dev, "ports/1/gids/32", "");
}

/* The device's identity and port, from its daemon. */
static void check_device(const char *out, int i)
{
	const char *dev = env.host[i].name;
	struct odpemu_context *ctx = h_open(&env, i);
	struct odpemu_device_attr a;
	struct odpemu_port_attr p;
	union odpemu_gid ll = { .raw = { 0xfe, 0x80 } };
	char want[96];
	uint64_t g;

	if (!ctx || odpemu_query_device(ctx, &a) || odpemu_query_port(ctx, 1, &p)) {
		T_CHECK(0, "%s: cannot open or query it", dev);
		return;
	}
	g = be64toh(a.node_guid);
	snprintf(want, sizeof(want), "%04x:%04x:%04x:%04x", (unsigned)(g >> 48),
		 (unsigned)(g >> 32 & 0xffff), (unsigned)(g >> 16 & 0xffff), (unsigned)(g & 0xffff));
	check_field(out, dev, "node_guid", want);
	check_field(out, dev, "sys_image_guid", want);
	check_field(out, dev, "node_type", "1: CA");
	check_field(out, dev, "fw_ver", a.fw_ver);
	check_field(out, dev, "ports/1/state", "4: ACTIVE");
	check_field(out, dev, "ports/1/phys_state", "5: LinkUp");
	check_field(out, dev, "ports/1/link_layer", "Ethernet");
	check_field(out, dev, "ports/1/lid", "0x0");
	check_field(out, dev, "ports/1/rate", "10 Gb/sec (1X QDR)");
	memcpy(&ll.raw[8], &a.node_guid, 8);	/* IBA 4.1.1: fe80::/64 and the GUID */
	gid_text(&ll, want, sizeof(want));
	check_field(out, dev, "ports/1/gids/0", want);
	check_gids(out, dev, ctx, &p);
	snprintf(want, sizeof(want), "device/net/%s", p.netdev);
	T_CHECK(strstr(out, want) != NULL, "%s: no %s in the view:\n%s", dev, want, out);
	odpemu_close_device(ctx);
}

/* Run `script` under odpemu-run --sysfs on host 0: its exit code, output in *out. */
static int run_sysfs(const char *script, const char *const *wrap, char **out)
{
	const char *argv[16];
	int n = 0;

	for (int i = 0; wrap && wrap[i]; i++)
		argv[n++] = wrap[i];
	argv[n++] = getenv("ODPEMU_RUN");
	argv[n++] = "--rundir";
	argv[n++] = env.rundir;
	argv[n++] = "--sysfs";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = script;
	argv[n] = NULL;
	return tr_run(&env, 0, argv, cr_preload_env(), out, 60);
}

static void test_view(void)
{
	char *out = NULL;
	int rc;

	rc = run_sysfs("id -u; ls /sys/class/infiniband; find /sys/class/infiniband/*/device/net "
		       "-mindepth 1; grep -r . /sys/class/infiniband/ && "
		       "! touch /sys/class/infiniband/x 2>/dev/null && echo read-only && "
		       "ls /sys/class/net >/dev/null && echo class-net", NULL, &out);
	if (rc == 2 && strstr(out, "cannot make a private user and mount namespace")) {
		/* this host refuses user namespaces to a process without CAP_SYS_ADMIN (a
		 * user, or a container's root): the refusal is the result */
		printf("user namespaces refused here, odpemu-run said: %s", out);
		T_CHECK(strchr(out, '\n') == out + strlen(out) - 1, "not one line:\n%s", out);
		free(out);
		return;
	}
	T_CHECK(rc == 0, "odpemu-run --sysfs: exit %d; output:\n%s", rc, out);
	T_CHECK(strstr(out, "read-only\n") && strstr(out, "class-net\n"),
		"the view is writable or /sys/class/net is gone:\n%s", out);
	{
		char uid[32];

		snprintf(uid, sizeof(uid), "%u\n", (unsigned)geteuid());
		T_CHECK(!strncmp(out, uid, strlen(uid)), "CMD does not run as uid %s:\n%s",
			uid, out);
	}
	/* host 0's command sees both devices: the run directory is shared */
	for (int i = 0; i < 2; i++)
		check_device(out, i);
	if (t_failures)
		fprintf(stderr, "---- the view:\n%s\n----\n", out);
	free(out);
}

/* After the runs, no view mount is left in this (the host's) mount namespace. */
static void test_nothing_left(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	bool left = false;

	if (!f) {
		T_CHECK(0, "/proc/self/mountinfo: %s", strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f))
		left |= strstr(line, "odpemu-sysfs") != NULL;
	fclose(f);
	T_CHECK(!left, "a mount of the view is left on the host");
}

/* test-compat-sysfs --deny-unshare CMD...: CMD under a seccomp filter that fails
 * unshare(2) with EPERM, as Docker's default profile does. */
static int deny_unshare_exec(char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return 1;
	}
	execvp(argv[0], argv);
	perror(argv[0]);
	return 127;
}

static void test_refused(const char *self)
{
	const char *wrap[] = { self, "--deny-unshare", NULL };
	char *out = NULL;
	int rc = run_sysfs("echo ran-without-view", wrap, &out);

	T_CHECK(rc == 2, "odpemu-run --sysfs under seccomp: exit %d, want 2; output:\n%s", rc, out);
	T_CHECK(!strstr(out, "ran-without-view"), "CMD ran without its view:\n%s", out);
	T_CHECK(strstr(out, "odpemu-run --sysfs: cannot make a private") &&
		strstr(out, "seccomp filter refuses") && strstr(out, "seccomp=unconfined"),
		"the refusal does not name seccomp and the remedy:\n%s", out);
	T_CHECK(strchr(out, '\n') == out + strlen(out) - 1, "not one line:\n%s", out);
	free(out);
}

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t n;

	if (argc > 2 && !strcmp(argv[1], "--deny-unshare"))
		return deny_unshare_exec(argv + 2);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!getenv("ODPEMU_RUN")) {
		fprintf(stderr, "$ODPEMU_RUN is not set (meson passes tools/odpemu-run)\n");
		return 1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	h_up(&env, NULL, NULL, 180);
	test_view();
	test_refused(self);
	test_nothing_left();
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	T_EQ(h_down(&env), 0, "daemons that did not stop cleanly");
	return t_done("compat-sysfs");
}
