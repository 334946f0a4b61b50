/* SPDX-License-Identifier: MIT */
/* tooldev — see tooldev.h. */
#include "tooldev.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rundir.h"

void tool_rundir(char *buf, size_t len)
{
	ipc_rundir(buf, len);
}

void tool_err(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

struct odpemu_device **tool_devices(const char *prog, int *n)
{
	struct odpemu_device **list = odpemu_get_device_list(n);
	char dir[256];

	if (!list) {
		tool_err(prog, "cannot list devices: %s", strerror(errno));
		return NULL;
	}
	if (!list[0]) {
		tool_rundir(dir, sizeof(dir));
		if (access(dir, R_OK | X_OK) && errno == EACCES)
			tool_err(prog, "permission denied: %s (the run directory: this user may "
				 "not list the daemons' sockets)", dir);
		else
			tool_err(prog, "no odpemu device is running (no daemon socket in %s): "
				 "start one with `odpemud --name odp0 --addr <IP>`, or set "
				 "ODPEMU_RUNDIR to the daemons' run directory", dir);
		odpemu_free_device_list(list);
		return NULL;
	}
	return list;
}

const char *tool_open_why(const struct odpemu_device *dev, int err, char *buf, size_t len)
{
	char dir[256];

	if (err == EACCES || err == EPERM) {
		tool_rundir(dir, sizeof(dir));
		snprintf(buf, len, "permission denied: %s/%s.sock (root, the daemon's user and "
			 "the members of the socket's group may use it: odpemud --group)", dir,
			 odpemu_get_device_name(dev));
	} else if (err == ENODEV) {
		snprintf(buf, len, "%s (its daemon stopped: start odpemud again)", strerror(err));
	} else {
		snprintf(buf, len, "%s", strerror(err));
	}
	return buf;
}

void tool_gid_str(const union odpemu_gid *gid, char *buf, size_t len)
{
	static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	char tmp[INET6_ADDRSTRLEN];

	if (!memcmp(gid->raw, v4map, sizeof(v4map)))
		inet_ntop(AF_INET, gid->raw + 12, tmp, sizeof(tmp));
	else
		inet_ntop(AF_INET6, gid->raw, tmp, sizeof(tmp));
	snprintf(buf, len, "%s", tmp);
}

/* Can this network namespace bind the GID's address? Then the device's port is here:
 * as root the test hosts are namespaces that share one run directory, and each sees
 * every daemon's socket. */
static bool gid_is_local(const union odpemu_gid *gid)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	memcpy(&sa.sin6_addr, gid->raw, 16);
	ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

static bool device_is_local(struct odpemu_device *dev)
{
	struct odpemu_context *ctx = odpemu_open_device(dev);
	union odpemu_gid gid;
	bool local;

	if (!ctx)
		return false;
	local = !odpemu_query_gid(ctx, 1, 0, &gid) && gid_is_local(&gid);
	odpemu_close_device(ctx);
	return local;
}

static struct odpemu_device *pick(struct odpemu_device **list, const char *name)
{
	if (name) {
		for (int i = 0; list[i]; i++)
			if (!strcmp(odpemu_get_device_name(list[i]), name))
				return list[i];
		return NULL;
	}
	if (list[1])
		for (int i = 0; list[i]; i++)
			if (device_is_local(list[i]))
				return list[i];
	return list[0];
}

static void list_names(struct odpemu_device **list, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; list[i] && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
					odpemu_get_device_name(list[i]));
}

struct odpemu_context *tool_open(const char *prog, const char *name)
{
	struct odpemu_device **list = tool_devices(prog, NULL);
	struct odpemu_device *dev;
	struct odpemu_context *ctx = NULL;
	char names[512];

	if (!list)
		return NULL;
	dev = pick(list, name);
	if (!dev) {
		list_names(list, names, sizeof(names));
		tool_err(prog, "no device '%s' (running: %s): pick one of them with -d", name,
			 names);
	} else if (!(ctx = odpemu_open_device(dev))) {
		tool_err(prog, "cannot open device %s: %s", odpemu_get_device_name(dev),
			 tool_open_why(dev, errno, names, sizeof(names)));
	}
	odpemu_free_device_list(list);
	return ctx;
}
