/* SPDX-License-Identifier: MIT */
/* Devices: a device is a running odpemud, i.e. a <name>.sock in the run directory that
 * accepts a connection. A socket file left behind by a daemon that died refuses the
 * connection and is not listed. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib_int.h"
#include "rundir.h"


/* "odp0.sock" -> "odp0"; false for other files and names too long for the protocol. */
static bool sock_name(const char *file, char *name)
{
	size_t n = strlen(file), suffix = strlen(".sock");

	if (n <= suffix || strcmp(file + n - suffix, ".sock") || n - suffix >= IPC_NAME_LEN)
		return false;
	memcpy(name, file, n - suffix);
	name[n - suffix] = '\0';
	return true;
}

/* Does a daemon listen there? A full backlog (EAGAIN) still means yes, and so does a
 * socket we may not connect to (EACCES): it is listed, and opening it says why it fails,
 * as a verbs device whose node we cannot open is listed. */
static bool alive(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool ok;

	if (fd < 0)
		return false;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	ok = !connect(fd, (struct sockaddr *)&sa, sizeof(sa)) || errno == EAGAIN ||
	     errno == EINPROGRESS || errno == EACCES || errno == EPERM;
	close(fd);
	return ok;
}

static int by_name(const void *a, const void *b)
{
	const struct odpemu_device *x = *(struct odpemu_device *const *)a;
	const struct odpemu_device *y = *(struct odpemu_device *const *)b;

	return strcmp(x->name, y->name);
}

/* Append dev to the NULL-terminated *list of *n entries. */
static int append(struct odpemu_device ***list, int *n, struct odpemu_device *dev)
{
	struct odpemu_device **l = realloc(*list, (size_t)(*n + 2) * sizeof(*l));

	if (!l)
		return -ENOMEM;
	l[(*n)++] = dev;
	l[*n] = NULL;
	*list = l;
	return 0;
}

/* The listed device of directory entry `file`, or NULL (not a live socket, or no memory:
 * *err says which). */
static struct odpemu_device *probe(const char *dir, const char *file, int *err)
{
	struct odpemu_device *dev;
	char name[IPC_NAME_LEN];

	*err = 0;
	if (!sock_name(file, name))
		return NULL;
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(dev->name, name, sizeof(name));
	if ((size_t)snprintf(dev->path, sizeof(dev->path), "%s/%s", dir, file) >= sizeof(dev->path) ||
	    !alive(dev->path)) {
		free(dev);
		return NULL;
	}
	return dev;
}

static int scan(const char *dir, struct odpemu_device ***list, int *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return 0;	/* no run directory: no daemon ever ran here */
	while (!rc && (de = readdir(d))) {
		struct odpemu_device *dev = probe(dir, de->d_name, &rc);

		if (dev && (rc = append(list, n, dev)))
			free(dev);
	}
	closedir(d);
	return rc;
}

ODPEMU_EXPORT struct odpemu_device **odpemu_get_device_list(int *num_devices)
{
	struct odpemu_device **list = calloc(1, sizeof(*list));
	char dir[LIB_PATH_LEN];
	int n = 0, rc;

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	ipc_rundir(dir, sizeof(dir));
	rc = scan(dir, &list, &n);
	if (rc) {
		odpemu_free_device_list(list);
		errno = -rc;
		return NULL;
	}
	qsort(list, (size_t)n, sizeof(*list), by_name);
	if (num_devices)
		*num_devices = n;
	return list;
}

ODPEMU_EXPORT void odpemu_free_device_list(struct odpemu_device **list)
{
	if (!list)
		return;
	for (struct odpemu_device **d = list; *d; d++)
		free(*d);
	free(list);
}

ODPEMU_EXPORT const char *odpemu_get_device_name(const struct odpemu_device *device)
{
	return device ? device->name : NULL;
}
