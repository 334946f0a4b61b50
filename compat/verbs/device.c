/* SPDX-License-Identifier: MIT */
/* Devices: one ibv_device per odpemud whose socket answers in the run directory
 * (odpemu_get_device_list). Device structs live as long as the process, as in rdma-core
 * (a context keeps pointing at its device after the list is freed); a name seen again
 * gets the same struct back, so pointers and indexes stay stable across lists. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"

static_assert(offsetof(struct cv_device, ops) == sizeof(struct ibv_device),
	      "verbs_device.ops follows the ibv_device (offset 664 in rdma-core 44)");

/* What the ops pointer points at: a vendor library compares it with its own and
 * finds it is not. */
static const char cv_device_ops_tag[] = "odpemu";

static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cv_device **devices;	/* every device ever listed, by index */
static int ndevices;

struct cv_device *cv_dev(struct ibv_device *d)
{
	return (struct cv_device *)d;
}

static struct cv_device *device_new(const char *name)
{
	struct cv_device *d = calloc(1, sizeof(*d));
	struct cv_device **grown = realloc(devices, (size_t)(ndevices + 1) * sizeof(*grown));

	if (!d || !grown) {
		free(d);
		if (grown)
			devices = grown;
		return NULL;
	}
	devices = grown;
	d->ops = cv_device_ops_tag;
	d->refcount = 1;
	d->index = ndevices;
	d->dev.node_type = IBV_NODE_CA;
	/* RoCE reports the IB transport (rxe, mlx5): libfabric needs it for DGRAM. */
	d->dev.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->dev.name, sizeof(d->dev.name), "%s", name);
	/* Every device names the one node odpemud provides (odpemu/verbs_types.h). */
	snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "%s", ODPEMU_DEVNODE_NAME);
	snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/%s",
		 ODPEMU_DEVNODE_NAME);
	snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s", name);
	devices[ndevices++] = d;
	return d;
}

static struct cv_device *device_get(const char *name)
{
	for (int i = 0; i < ndevices; i++)
		if (!strcmp(devices[i]->dev.name, name))
			return devices[i];
	return device_new(name);
}

struct ibv_device *cv_device_named(const char *name)
{
	struct cv_device *d;

	pthread_mutex_lock(&devices_lock);
	d = device_get(name);
	pthread_mutex_unlock(&devices_lock);
	return d ? &d->dev : cv_fail_null(ENOMEM);
}

CV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct odpemu_device **odp;
	struct ibv_device **list;
	int n = 0, k = 0;

	if (num_devices)
		*num_devices = 0;
	if (!(odp = odpemu_get_device_list(&n)))
		return NULL;
	if (!(list = calloc((size_t)n + 1, sizeof(*list)))) {
		odpemu_free_device_list(odp);
		return cv_fail_null(ENOMEM);
	}
	pthread_mutex_lock(&devices_lock);
	for (int i = 0; i < n; i++) {
		struct cv_device *d = device_get(odpemu_get_device_name(odp[i]));

		if (d)
			list[k++] = &d->dev;
	}
	pthread_mutex_unlock(&devices_lock);
	odpemu_free_device_list(odp);
	if (num_devices)
		*num_devices = k;
	return list;
}

CV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

CV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

CV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return device ? cv_dev(device)->index : -1;
}

/* The node GUID needs the daemon: ask it once (rdma-core reads it from sysfs). */
CV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct cv_device *d = cv_dev(device);
	struct ibv_context *c;
	struct ibv_device_attr a;

	if (!device)
		return 0;
	if (d->guid)
		return d->guid;
	if (!(c = ibv_open_device(device)))
		return 0;
	if (!ibv_query_device(c, &a))
		d->guid = a.node_guid;
	ibv_close_device(c);
	return d->guid;
}

/* ---- sysfs helpers, as rdma-core's (no odpemu device has sysfs files: callers then
 * omit what they would have read, e.g. ibv_devinfo's board_id) ---- */

CV_EXPORT const char *ibv_get_sysfs_path(void)
{
	const char *env = getuid() == geteuid() ? getenv("SYSFS_PATH") : NULL;

	return env && *env ? env : "/sys";
}

CV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (!dir || !file || !buf || !size)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	if (n <= 0)
		return -1;
	if ((size_t)n == size)
		n--;
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return (int)n;
}
