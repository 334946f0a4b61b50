/* SPDX-License-Identifier: MIT */
/*
 * odpemud — one soft RDMA NIC with On-Demand Paging. See `odpemud --help` and docs/emu.md.
 *
 * Without --foreground the daemon detaches only once it is ready (socket listening), so a
 * script that starts it can connect right after the command returns, and a start that
 * fails (address in use, a daemon of that name running) returns non-zero with the reason
 * on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "daemon.h"
#include "log.h"
#include "options.h"

/* Fork; the parent waits for the child's one-byte verdict and exits with it. */
static int detach(const struct emu_options *opt, int *ready_fd)
{
	char dir[200], log[300];
	int p[2], fd;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	if ((pid = fork()) < 0)
		return -errno;
	if (pid > 0) {
		unsigned char v = 1;

		close(p[1]);
		if (read(p[0], &v, 1) != 1)
			v = 1;
		_exit(v);
	}
	close(p[0]);
	setsid();
	emu_rundir(opt, dir, sizeof(dir));
	snprintf(log, sizeof(log), "%s/%s.log", dir, opt->name);
	if ((fd = open("/dev/null", O_RDONLY)) >= 0) {
		dup2(fd, 0);
		close(fd);
	}
	/* Errors until ready still go to the caller's stderr; the log takes over after. */
	*ready_fd = p[1];
	return 0;
}

static void ready(const struct emu_options *opt, int ready_fd)
{
	char dir[200], log[300];
	unsigned char v = 0;
	int fd;

	if (ready_fd < 0)
		return;
	emu_rundir(opt, dir, sizeof(dir));
	snprintf(log, sizeof(log), "%s/%s.log", dir, opt->name);
	if ((fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640)) >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	if (write(ready_fd, &v, 1) != 1)
		emu_log(EMU_LOG_WARN, "could not tell the parent we are ready");
	close(ready_fd);
}

int main(int argc, char **argv)
{
	struct emu_options opt;
	static struct emu_daemon d;
	int rc, ready_fd = -1;

	if ((rc = emu_options_parse(argc, argv, &opt)))
		return rc > 0 ? 0 : 2;
	emu_log_level = opt.log_level;
	if (opt.check)
		return emu_check_main(opt.json);
	if (!opt.foreground && (rc = detach(&opt, &ready_fd))) {
		fprintf(stderr, "odpemud: cannot detach: %s\n", strerror(-rc));
		return 1;
	}
	if ((rc = emu_daemon_start(&d, &opt))) {
		bool usage = d.usage_error;

		unsigned char code = usage ? 2 : 1;

		emu_daemon_stop(&d);
		if (ready_fd >= 0 && write(ready_fd, &code, 1) != 1)
			code = 1;	/* the parent then exits 1 on end of file */
		return code;	/* the reason was logged to stderr */
	}
	ready(&opt, ready_fd);
	rc = emu_daemon_run(&d);
	emu_daemon_stop(&d);
	emu_log(EMU_LOG_INFO, "%s stopped", opt.name);
	return rc ? 1 : 0;
}
