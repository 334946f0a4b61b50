/* SPDX-License-Identifier: MIT */
/*
 * odpemu-sysfs — the /sys/class/infiniband view of `odpemu-run --sysfs` (docs/compat.md,
 * "A sysfs view"). Two parts: ns.c gives the program a private mount namespace (a user
 * namespace too when it is not root) with a tmpfs where the kernel's RDMA class would be;
 * view.c fills it from the devices, through the drop-in libibverbs the program runs on, so
 * the files say what ibv_query_* says.
 */
#ifndef ODPEMU_TOOLS_SYSFS_H
#define ODPEMU_TOOLS_SYSFS_H

#define SYSFS_PROG "odpemu-run --sysfs"

/* Enter private namespaces and mount an empty, writable tmpfs at /sys/class/infiniband.
 * 0, or -1 with a one-line message (cause and remedy) printed. */
int sysfs_ns_enter(void);

/* Make the view read-only once written. 0, or -1 with a message printed. */
int sysfs_ns_seal(void);

/* Write the tree of every device under the directory `root` (the kernel's layout of a
 * RoCE device: drivers/infiniband/core/sysfs.c). 0, or -1 with a message printed. */
int sysfs_view_write(const char *root);

#endif
