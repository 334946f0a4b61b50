/* SPDX-License-Identifier: MIT */
/*
 * The files of the view, in the kernel's layout and formats for a RoCE device
 * (drivers/infiniband/core/sysfs.c: node_type_show, state_show, rate_show, show_port_gid,
 * ...). Every value comes from libibverbs, which is odpemu's drop-in here (odpemu-run puts
 * it first on LD_LIBRARY_PATH), so a file and ibv_query_* never disagree; the one thing
 * verbs cannot name, the netdev, comes from the daemon (odpemu_query_port).
 *
 * What the kernel has and the view does not: the device is a directory, not a symlink
 * into /sys/devices, and `device` is a directory holding net/<ifname> (a symlink to
 * /sys/class/net/<ifname>) and numa_node (-1, as for any virtual device); no counters,
 * hw_counters or infiniband_verbs (the drop-in reads none of them).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "odpemu/odpemu.h"
#include "sysfs.h"

static int view_err(const char *dev, const char *what, int err)
{
	fprintf(stderr, "%s: %s: cannot %s: %s\n", SYSFS_PROG, dev, what, strerror(err));
	return -1;
}

/* mkdir -p of `path` under the directory fd `dir`. */
static int mkdirs(int dir, const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdirat(dir, p, 0755) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdirat(dir, p, 0755) && errno != EEXIST ? -1 : 0;
}

/* One attribute file: the text and the newline sysfs_emit's callers end it with. */
static int __attribute__((format(printf, 3, 4))) put(int dir, const char *path,
						     const char *fmt, ...)
{
	char text[256];
	va_list ap;
	int fd, n, rc;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(text) - 1)
		return errno = EOVERFLOW, -1;
	text[n++] = '\n';
	fd = openat(dir, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0)
		return -1;
	rc = write(fd, text, (size_t)n) == n ? 0 : -1;
	close(fd);
	return rc;
}

/* node_guid and sys_image_guid: four groups of 16 bits, host order of the wire value. */
static int put_guid(int dir, const char *path, __be64 guid)
{
	uint64_t g = be64toh(guid);

	return put(dir, path, "%04x:%04x:%04x:%04x", (unsigned)(g >> 48),
		   (unsigned)(g >> 32 & 0xffff), (unsigned)(g >> 16 & 0xffff),
		   (unsigned)(g & 0xffff));
}

/* rate_show: the lane speed (in 100 Mb/s) times the lanes. */
static int put_rate(int dir, const struct ibv_port_attr *p)
{
	static const struct { uint8_t code; int rate; const char *name; } speeds[] = {
		{ 2, 50, " DDR" }, { 4, 100, " QDR" }, { 8, 100, " FDR10" },
		{ 16, 140, " FDR" }, { 32, 250, " EDR" }, { 64, 500, " HDR" },
		{ 128, 1000, " NDR" } };
	static const int lanes[17] = { [1] = 1, [2] = 4, [4] = 8, [8] = 12, [16] = 2 };
	int rate = 25, width = p->active_width <= 16 ? lanes[p->active_width] : 0;
	const char *name = "";	/* SDR, and the kernel's default */

	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].code == p->active_speed) {
			rate = speeds[i].rate;
			name = speeds[i].name;
		}
	rate *= width;
	return put(dir, "rate", "%d%s Gb/sec (%dX%s)", rate / 10, rate % 10 ? ".5" : "",
		   width, name);
}

static const char *port_state_name(enum ibv_port_state s)
{
	static const char *const names[] = { "NOP", "DOWN", "INIT", "ARMED", "ACTIVE",
		"ACTIVE_DEFER" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

static const char *phys_state_name(uint8_t s)
{
	static const char *const names[] = { "<unknown>", "Sleep", "Polling", "Disabled",
		"PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "Phy Test" };

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "<unknown>";
}

/* gids/N (%pI6: eight groups of four hex digits) and, for each valid entry, its
 * gid_attrs: types/N and ndevs/N. */
static int put_gid(int port_dir, struct ibv_context *ctx, uint8_t port, int index,
		   const char *ifname)
{
	union ibv_gid gid;
	struct ibv_gid_entry entry;
	char path[64];
	const uint8_t *r = gid.raw;

	if (ibv_query_gid(ctx, port, index, &gid))
		return -1;
	snprintf(path, sizeof(path), "gids/%d", index);
	if (put(port_dir, path, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
		"%02x%02x:%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
		r[10], r[11], r[12], r[13], r[14], r[15]))
		return -1;
	/* an empty entry: the kernel's types/N and ndevs/N fail to read (EINVAL); here they
	 * are absent */
	if (ibv_query_gid_ex(ctx, port, (uint32_t)index, &entry, 0))
		return 0;
	snprintf(path, sizeof(path), "gid_attrs/types/%d", index);
	if (put(port_dir, path, "%s", entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" :
		"IB/RoCE v1"))
		return -1;
	snprintf(path, sizeof(path), "gid_attrs/ndevs/%d", index);
	return put(port_dir, path, "%s", ifname);
}

static int put_pkeys(int port_dir, struct ibv_context *ctx, uint8_t port, int len)
{
	for (int i = 0; i < len; i++) {
		char path[32];
		__be16 pkey;

		snprintf(path, sizeof(path), "pkeys/%d", i);
		if (ibv_query_pkey(ctx, port, i, &pkey) ||
		    put(port_dir, path, "0x%04x", be16toh(pkey)))
			return -1;
	}
	return 0;
}

static int put_port_attrs(int dir, const struct ibv_port_attr *p)
{
	if (put(dir, "state", "%d: %s", p->state, port_state_name(p->state)) ||
	    put(dir, "phys_state", "%u: %s", p->phys_state, phys_state_name(p->phys_state)) ||
	    put(dir, "link_layer", "%s", p->link_layer == IBV_LINK_LAYER_ETHERNET ?
		"Ethernet" : "InfiniBand") ||
	    put_rate(dir, p) || put(dir, "lid", "0x%x", p->lid) ||
	    put(dir, "sm_lid", "0x%x", p->sm_lid) || put(dir, "lid_mask_count", "%u", p->lmc) ||
	    put(dir, "sm_sl", "%u", p->sm_sl) || put(dir, "cap_mask", "0x%08x",
						     p->port_cap_flags))
		return -1;
	return 0;
}

static int write_port(int dev_dir, struct ibv_context *ctx, uint8_t port, const char *ifname)
{
	struct ibv_port_attr p;
	char path[32];
	int dir, rc = -1;

	if (ibv_query_port(ctx, port, &p))
		return -1;
	snprintf(path, sizeof(path), "ports/%u", port);
	if (mkdirs(dev_dir, path) || (dir = openat(dev_dir, path, O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	if (mkdirs(dir, "gids") || mkdirs(dir, "gid_attrs/types") ||
	    mkdirs(dir, "gid_attrs/ndevs") || mkdirs(dir, "pkeys") || put_port_attrs(dir, &p) ||
	    put_pkeys(dir, ctx, port, p.pkey_tbl_len))
		goto out;
	for (int i = 0; i < p.gid_tbl_len; i++)
		if (put_gid(dir, ctx, port, i, ifname))
			goto out;
	rc = 0;
out:
	close(dir);
	return rc;
}

/* The interface the daemon of device `name` sends on, from the daemon itself. */
static int netdev_of(const char *name, char *ifname, size_t len)
{
	struct odpemu_device **list = odpemu_get_device_list(NULL);
	struct odpemu_context *ctx = NULL;
	struct odpemu_port_attr p;
	int rc = -1;

	for (int i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(odpemu_get_device_name(list[i]), name))
			ctx = odpemu_open_device(list[i]);
	if (ctx) {
		if (!(errno = odpemu_query_port(ctx, 1, &p)) && p.netdev[0]) {
			snprintf(ifname, len, "%s", p.netdev);
			rc = 0;
		}
		odpemu_close_device(ctx);
	} else if (!errno) {
		errno = ENODEV;
	}
	odpemu_free_device_list(list);
	return rc;
}

/* `device`: what a tool reaches through /sys/class/infiniband/DEV/device (its netdev, its
 * NUMA node). */
static int put_parent(int dev_dir, const char *ifname)
{
	char target[PATH_MAX], link[PATH_MAX];

	snprintf(target, sizeof(target), "/sys/class/net/%s", ifname);
	snprintf(link, sizeof(link), "device/net/%s", ifname);
	if (mkdirs(dev_dir, "device/net") || symlinkat(target, dev_dir, link))
		return -1;
	return put(dev_dir, "device/numa_node", "-1");
}

static int write_device(int root, struct ibv_device *dev)
{
	const char *name = ibv_get_device_name(dev);
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_device_attr a;
	char ifname[64];
	int dir = -1, rc = -1;

	/* a device this user cannot open (another user's daemon) or that is gone is left
	 * out, as ibv_devinfo would fail on it too; the others are still shown */
	if (!ctx) {
		view_err(name, "open it (left out of the view)", errno);
		return 0;
	}
	if (ibv_query_device(ctx, &a) || netdev_of(name, ifname, sizeof(ifname))) {
		view_err(name, "query it (left out of the view)", errno);
		rc = 0;
		goto out;
	}
	if (mkdirat(root, name, 0755) || (dir = openat(root, name, O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    put(dir, "node_type", "%d: %s", IBV_NODE_CA, "CA") ||
	    put_guid(dir, "node_guid", a.node_guid) ||
	    put_guid(dir, "sys_image_guid", a.sys_image_guid) ||
	    put(dir, "fw_ver", "%s", a.fw_ver) || put(dir, "hw_rev", "0x%x", a.hw_ver) ||
	    put(dir, "node_desc", "%s", name) || put_parent(dir, ifname)) {
		view_err(name, "write its files", errno);
		goto out;
	}
	for (uint8_t port = 1; port <= a.phys_port_cnt; port++)
		if (write_port(dir, ctx, port, ifname)) {
			view_err(name, "write its port", errno);
			goto out;
		}
	rc = 0;
out:
	if (dir >= 0)
		close(dir);
	ibv_close_device(ctx);
	return rc;
}

int sysfs_view_write(const char *root_path)
{
	int root = open(root_path, O_DIRECTORY | O_CLOEXEC), n = 0, rc = 0;
	struct ibv_device **list;

	if (root < 0)
		return view_err(root_path, "open it", errno);
	list = ibv_get_device_list(&n);
	if (!list) {
		close(root);
		return view_err("devices", "list them", errno);
	}
	for (int i = 0; i < n && !rc; i++)
		rc = write_device(root, list[i]);
	ibv_free_device_list(list);
	close(root);
	return rc;
}
