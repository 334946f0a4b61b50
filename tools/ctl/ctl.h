/* SPDX-License-Identifier: MIT */
/*
 * odpemu-ctl — look at and steer running odpemud devices (like `ibv_devices`,
 * `ibv_devinfo` and `rdma stat`). Each command is a function taking its own argv
 * (argv[0] is the command's name) and returning the process exit status: 0 done,
 * 1 failed, 2 bad usage.
 */
#ifndef ODPEMU_TOOLS_CTL_H
#define ODPEMU_TOOLS_CTL_H

#define CTL_PROG "odpemu-ctl"

int ctl_list(int argc, char **argv);
int ctl_devinfo(int argc, char **argv);
int ctl_stat(int argc, char **argv);
struct jw;
struct odpemu_context;
/* stat clients for one device (stat_clients.c): 0 or 1. */
int ctl_stat_clients(struct odpemu_context *ctx, const char *name, struct jw *w);
int ctl_inject(int argc, char **argv);
int ctl_watch(int argc, char **argv);

/* "odpemu-ctl CMD: <what>  (see odpemu-ctl CMD --help)" on stderr; returns 2. */
int ctl_usage_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
