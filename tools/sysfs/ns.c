/* SPDX-License-Identifier: MIT */
/*
 * The namespaces of `odpemu-run --sysfs`. Root: a private mount namespace. Anyone else,
 * and a root without CAP_SYS_ADMIN (a container's): a user namespace that maps only the
 * caller's own uid and gid to themselves, with a mount namespace it owns. The identity map (not unshare -r's uid 0) means the command exec'd
 * afterwards runs as the caller with no capabilities (execve drops them for a non-zero
 * uid), so programs that behave differently as root do not, and the daemons' SO_PEERCRED
 * checks see the caller's real uid either way.
 *
 * Nothing outlives the command: the namespaces and the tmpfs go when its last process
 * exits, and no mount propagates back to the host (/ is made private first).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysfs.h"

#define CLASS_DIR	"/sys/class"
#define IB_CLASS_DIR	"/sys/class/infiniband"

/* The mount that holds the view: IB_CLASS_DIR, or CLASS_DIR when the kernel has no RDMA
 * class to cover (ib_core not loaded: the usual case where odpemu is used). */
static const char *view_mount;

static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* The "Seccomp:" mode of /proc/self/status: 2 when a filter is installed. */
static long seccomp_mode(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long mode = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %ld", &mode) == 1)
			break;
	fclose(f);
	return mode;
}

/* Why this host refuses namespaces to this process, and the remedy, from the knobs that
 * do it (most specific first); the errno's text when none of them is set. */
static const char *ns_blocker(int err, char *buf, size_t len)
{
	if (geteuid() != 0 && read_long("/proc/sys/kernel/unprivileged_userns_clone") == 0)
		return "kernel.unprivileged_userns_clone is 0 (Debian): set it to 1 "
		       "(sysctl -w kernel.unprivileged_userns_clone=1) or run as root";
	if (geteuid() != 0 &&
	    read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
		return "AppArmor restricts unprivileged user namespaces "
		       "(kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 23.10+): set it "
		       "to 0, give the program an AppArmor profile with 'userns,', or run as root";
	if (geteuid() != 0 && read_long("/proc/sys/user/max_user_namespaces") == 0)
		return "user.max_user_namespaces is 0: raise it "
		       "(sysctl -w user.max_user_namespaces=10000) or run as root";
	if (seccomp_mode() == 2)
		return "a seccomp filter refuses unshare or mount (Docker's default profile "
		       "does): run the container with --security-opt seccomp=unconfined (and "
		       "--cap-add SYS_ADMIN), or run odpemu-run outside it";
	if (geteuid() == 0 && err == EPERM)
		return "root without CAP_SYS_ADMIN (a container?): give it CAP_SYS_ADMIN "
		       "(docker run --cap-add SYS_ADMIN) or run odpemu-run on the host";
	snprintf(buf, len, "%s", strerror(err));
	return buf;
}

static int fail(const char *what, int err)
{
	char buf[128];

	fprintf(stderr, "%s: cannot %s (%s): %s\n", SYSFS_PROG, what, strerror(err),
		ns_blocker(err, buf, sizeof(buf)));
	return -1;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	err = errno;
	close(fd);
	errno = err;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* user_namespaces(7): setgroups must be denied before an unprivileged gid_map. */
static int map_identity(uid_t uid, gid_t gid)
{
	char map[64];

	snprintf(map, sizeof(map), "%u %u 1\n", uid, uid);
	if (write_file("/proc/self/uid_map", map))
		return -1;
	if (write_file("/proc/self/setgroups", "deny") && errno != ENOENT)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1\n", gid, gid);
	return write_file("/proc/self/gid_map", map);
}

static int enter_namespaces(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (uid == 0 && !unshare(CLONE_NEWNS))
		return 0;
	if (uid == 0 && errno != EPERM)
		return fail("make a private mount namespace", errno);
	/* not root, or a root without CAP_SYS_ADMIN (a container's): a user namespace of
	 * our own may still be allowed */
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return fail("make a private user and mount namespace", errno);
	if (map_identity(uid, gid))
		return fail("map the user namespace's uid and gid", errno);
	return 0;
}

static int mount_tmpfs(const char *where)
{
	if (mount("odpemu-sysfs", where, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=4m")) {
		char what[64];

		snprintf(what, sizeof(what), "mount a tmpfs on %s", where);
		return fail(what, errno);
	}
	return 0;
}

/* Bind the original class directory `name` (under the directory fd `orig`, opened before
 * the tmpfs hid it) back into the tmpfs now at CLASS_DIR. */
static int rebind_class(int orig, const char *name)
{
	char src[64], dst[PATH_MAX];

	snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", orig, name);
	snprintf(dst, sizeof(dst), CLASS_DIR "/%s", name);
	if (mkdir(dst, 0755) && errno != EEXIST)
		return fail("recreate " CLASS_DIR " in the view", errno);
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL))
		return fail("bind the host's " CLASS_DIR " entries into the view", errno);
	return 0;
}

/* No RDMA class on this kernel, and sysfs cannot grow a directory: cover /sys/class with
 * a tmpfs holding the host's classes (bind mounts, so /sys/class/net stays the live one
 * `ip` and the programs read) and a new infiniband directory. */
static int cover_class_dir(void)
{
	int orig = open(CLASS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (orig < 0)
		return fail("open " CLASS_DIR, errno);
	if (mount_tmpfs(CLASS_DIR)) {
		close(orig);
		return -1;
	}
	d = fdopendir(dup(orig));
	if (!d) {
		close(orig);
		return fail("list " CLASS_DIR, errno);
	}
	while (!rc && (e = readdir(d)))
		if (e->d_name[0] != '.')
			rc = rebind_class(orig, e->d_name);
	closedir(d);
	close(orig);
	if (!rc && mkdir(IB_CLASS_DIR, 0755))
		return fail("make " IB_CLASS_DIR, errno);
	view_mount = CLASS_DIR;
	return rc;
}

int sysfs_ns_enter(void)
{
	struct stat st;

	if (enter_namespaces())
		return -1;
	/* mount(8)'s --make-rprivate: nothing mounted here may reach the host's namespace */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return fail("make the mounts private", errno);
	if (stat(IB_CLASS_DIR, &st))
		return cover_class_dir();
	view_mount = IB_CLASS_DIR;	/* a kernel with RDMA devices: hide them, as the
					 * drop-in libibverbs does */
	return mount_tmpfs(IB_CLASS_DIR);
}

int sysfs_ns_seal(void)
{
	if (mount(NULL, view_mount, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID |
		  MS_NODEV | MS_NOEXEC, NULL))
		return fail("make the view read-only", errno);
	return 0;
}
