/* SPDX-License-Identifier: MIT */
/* odpemu-ctl list — the running devices, one line each (like ibv_devices, plus what a
 * user asks next: is the port up, on which interface and address). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "tooldev.h"

/* One line; 1 if the device cannot be opened (the line says why). */
static int one(struct odpemu_device *dev)
{
	struct odpemu_context *ctx = odpemu_open_device(dev);
	struct odpemu_port_attr pa;
	union odpemu_gid gid;
	char addr[64] = "-", why[512];

	if (!ctx) {
		printf("%-10s (cannot open: %s)\n", odpemu_get_device_name(dev),
		       tool_open_why(dev, errno, why, sizeof(why)));
		return 1;
	}
	if (odpemu_query_port(ctx, 1, &pa)) {
		printf("%-10s (cannot query port 1: %s)\n", odpemu_get_device_name(dev),
		       strerror(errno));
	} else {
		if (!odpemu_query_gid(ctx, 1, 0, &gid))
			tool_gid_str(&gid, addr, sizeof(addr));
		printf("%-10s %-8s %-16s %-24s %-6s %s\n", odpemu_get_device_name(dev),
		       odpemu_port_state_str(pa.state), pa.netdev, addr,
		       odpemu_mtu_str(pa.active_mtu), odpemu_fault_policy_str(pa.fault_policy));
	}
	odpemu_close_device(ctx);
	return 0;
}

int ctl_list(int argc, char **argv)
{
	struct odpemu_device **list;
	int rc = 0;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: %s list\n  the running devices: name, port state, netdev, "
		       "address (GID 0), active MTU, default fault policy; exit status 1 if "
		       "one cannot be opened\n", CTL_PROG);
		return 0;
	}
	if (argc > 1)
		return ctl_usage_err("list", "unexpected argument '%s'", argv[1]);
	if (!(list = tool_devices(CTL_PROG, NULL)))
		return 1;
	printf("%-10s %-8s %-16s %-24s %-6s %s\n", "device", "state", "netdev", "address",
	       "mtu", "fault_policy");
	for (int i = 0; list[i]; i++)
		rc |= one(list[i]);
	odpemu_free_device_list(list);
	return rc;
}
