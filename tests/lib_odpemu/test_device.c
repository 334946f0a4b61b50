/* SPDX-License-Identifier: MIT */
/* Device listing and opening without a daemon, through the shared library's public API
 * only: an empty run directory, stale socket files, sockets that listen, a socket that
 * nobody serves. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "odpemu/odpemu.h"
#include "t.h"

static char dir[] = "/tmp/odpemu-dev-XXXXXX";

static int sock_at(const char *name, bool listening)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (listening && listen(fd, 8))) {
		perror(name);
		exit(1);
	}
	if (!listening) {
		close(fd);	/* the file stays: a daemon that died */
		return -1;
	}
	return fd;
}

static void test_list(void)
{
	struct odpemu_device **l;
	int n = -1, a, b;
	char path[256];
	FILE *f;

	l = odpemu_get_device_list(&n);
	T_CHECK(l && n == 0 && !l[0], "empty run directory: no devices");
	odpemu_free_device_list(l);

	sock_at("stale.sock", false);
	l = odpemu_get_device_list(&n);
	T_CHECK(l && n == 0, "a stale socket is skipped (n %d)", n);
	odpemu_free_device_list(l);

	b = sock_at("odp1.sock", true);
	a = sock_at("odp0.sock", true);
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	f = fopen(path, "w");		/* not a socket: ignored */
	if (f)
		fclose(f);
	l = odpemu_get_device_list(&n);
	T_EQ(n, 2, "two live devices");
	T_CHECK(l && l[0] && !strcmp(odpemu_get_device_name(l[0]), "odp0"), "sorted: odp0 first");
	T_CHECK(l && l[1] && !strcmp(odpemu_get_device_name(l[1]), "odp1"), "then odp1");
	T_CHECK(l && !l[2], "NULL-terminated");
	odpemu_free_device_list(l);
	close(a);
	close(b);
}

/* odp9 stops listening: its file is stale now. A list taken before still names it;
 * opening it says the daemon is not running. */
static void test_open_unserved(void)
{
	struct odpemu_device **l;
	int n = 0, fd = sock_at("odp9.sock", true);

	l = odpemu_get_device_list(&n);
	T_CHECK(l && n == 1 && l[0] && !strcmp(odpemu_get_device_name(l[0]), "odp9"), "listed");
	close(fd);
	errno = 0;
	T_CHECK(l && l[0] && !odpemu_open_device(l[0]), "open fails");
	T_EQ(errno, ENODEV, "ENODEV: nobody serves the socket");
	odpemu_free_device_list(l);
	errno = 0;
	T_CHECK(!odpemu_open_device(NULL), "NULL device");
	T_EQ(errno, EINVAL, "EINVAL");
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) {
		/* best effort */
	}
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	setenv("ODPEMU_RUNDIR", dir, 1);
	test_list();
	test_open_unserved();
	cleanup();
	T_EQ(odpemu_mtu_to_bytes(ODPEMU_MTU_1024), 1024, "mtu bytes through the .so");
	return t_done("device");
}
