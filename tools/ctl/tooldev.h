/* SPDX-License-Identifier: MIT */
/*
 * tooldev — how odpemu-ctl and odpemu-perf find and open a device, with the one-line
 * errors a user can act on (no daemon running, no such device).
 */
#ifndef ODPEMU_TOOLS_TOOLDEV_H
#define ODPEMU_TOOLS_TOOLDEV_H

#include <stddef.h>

#include "odpemu/odpemu.h"

/* Where the library looks for control sockets (the same rule as libodpemu). */
void tool_rundir(char *buf, size_t len);

/* Print "prog: message\n" on stderr. */
void tool_err(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The running devices, NULL-terminated and never empty: NULL (with a message naming the
 * fix) when no daemon runs. Free with odpemu_free_device_list. */
struct odpemu_device **tool_devices(const char *prog, int *n);

/* Open device `name`; NULL name picks the device of this host: the first one whose
 * address is local to this network namespace, else the first one. NULL with a message
 * when it cannot. */
struct odpemu_context *tool_open(const char *prog, const char *name);

/* Why dev cannot be opened (errno err) and what to do, in buf: "permission denied:
 * <socket path> (...)" for EACCES. Returns buf. */
const char *tool_open_why(const struct odpemu_device *dev, int err, char *buf, size_t len);

/* GID as text: an IPv4-mapped GID as a dotted IPv4 address, else IPv6 notation. */
void tool_gid_str(const union odpemu_gid *gid, char *buf, size_t len);

#endif
