/* SPDX-License-Identifier: MIT */
/* fi_anchor — see fi_anchor.h. */
#include "fi_anchor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define RUN_BUDGET_NS 25000000000ull	/* all client attempts together */
#define SERVER_GRACE_NS 2000000000ull	/* for the server to end on its own after a run */
#define RETRY_PAUSE_NS 100000000l	/* before each client attempt: the server starting */
#define MAX_ATTEMPTS 20
#define OUT_CAP 8192			/* the client prints two lines */

/* name's full path from PATH into path; false if no executable file is found. */
static bool find_exe(const char *name, char *path, size_t len)
{
	const char *dirs = getenv("PATH");

	if (!dirs || !*dirs)
		dirs = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while (*dirs) {
		size_t n = strcspn(dirs, ":");
		int w = snprintf(path, len, "%.*s/%s", (int)n, dirs, name);

		if (n && w > 0 && (size_t)w < len && !access(path, X_OK))
			return true;
		dirs += n + (dirs[n] == ':');
	}
	return false;
}

bool fi_pingpong_available(void)
{
	char path[PATH_MAX];

	return find_exe("fi_pingpong", path, sizeof(path));
}

static void pause_ns(long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000l, .tv_nsec = ns % 1000000000l };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* fi_pingpong (path fi) with args, in namespace ns (through ip, path ip) or ours for NULL;
 * its stdout into out_fd (or /dev/null for -1), its stderr into /dev/null: a client that
 * retries while the server starts would otherwise print "failed to connect" each time.
 * Paths are resolved before the fork so the child only execs. */
static pid_t spawn(const char *ip, const char *ns, const char *fi, const char *const *args,
		   int out_fd)
{
	const char *argv[16];
	pid_t parent = getpid(), pid;
	int n = 0, null;

	if (ns) {
		argv[n++] = ip;
		argv[n++] = "netns";
		argv[n++] = "exec";
		argv[n++] = ns;
	}
	argv[n++] = fi;
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = fork();
	if (pid)
		return pid;
	/* No leftovers even if the bench dies: ip netns exec execs in place, so the
	 * signal reaches fi_pingpong itself. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	/* The kernel's usual 50 us, not the bench's 1 ns inherited through fork. */
	prctl(PR_SET_TIMERSLACK, 50000ul);
	null = open("/dev/null", O_WRONLY);
	dup2(out_fd >= 0 ? out_fd : null, 1);
	dup2(null, 2);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

/* Wait for pid until deadline, then SIGKILL it; reaped either way. Its wait status, or
 * -1 if it had to be killed. */
static int reap(pid_t pid, uint64_t deadline_ns)
{
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			return -1;	/* not ours to wait for: nothing to reap */
		if (bench_now_ns() >= deadline_ns)
			break;
		pause_ns(5000000);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return -1;
}

/* All of fd (up to cap - 1 bytes kept, NUL-terminated) until EOF or deadline. */
static int read_all(int fd, char *buf, size_t cap, uint64_t deadline_ns)
{
	size_t got = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = bench_now_ns();
		char sink[512];
		ssize_t r;
		int rc;

		if (now >= deadline_ns) {
			buf[got] = 0;
			return -ETIMEDOUT;
		}
		rc = poll(&p, 1, (int)((deadline_ns - now) / 1000000u) + 1);
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc <= 0)
			continue;
		if (got < cap - 1)
			r = read(fd, buf + got, cap - 1 - got);
		else
			r = read(fd, sink, sizeof(sink));	/* keep the pipe moving */
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (got < cap - 1)
			got += (size_t)r;
	}
	buf[got] = 0;
	return 0;
}

/* The usec/xfer figure of fi_pingpong's table: the column of that name in the header
 * line, the same column of the line after it. Whitespace-separated, as show_perf()
 * prints it ("8  1k  =1k  15k  0.07s  0.23  35.54  0.03"). */
static int parse_usec(char *text, double *usec)
{
	char *line = strstr(text, "usec/xfer"), *next, *save, *tok, *end;
	int col = -1, i = 0;

	if (!line)
		return -EPROTO;
	while (line > text && line[-1] != '\n')
		line--;
	if (!(next = strchr(line, '\n')))
		return -EPROTO;
	*next++ = 0;
	for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save), i++)
		if (!strcmp(tok, "usec/xfer"))
			col = i;
	if (col < 0)
		return -EPROTO;
	next[strcspn(next, "\n")] = 0;
	tok = strtok_r(next, " \t", &save);
	for (i = 0; tok && i < col; i++)
		tok = strtok_r(NULL, " \t", &save);
	if (!tok)
		return -EPROTO;
	errno = 0;
	*usec = strtod(tok, &end);
	return errno || end == tok || *end || !(*usec > 0) ? -EPROTO : 0;
}

/* One client attempt; its stdout into out. 0 if it exited 0 and printed a table. */
static int client_once(const char *ip, const char *ns, const char *fi,
		       const char *const *args, uint64_t deadline_ns, char *out, size_t cap)
{
	int p[2], rc, st;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = spawn(ip, ns, fi, args, p[1]);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -errno;
	}
	rc = read_all(p[0], out, cap, deadline_ns);
	close(p[0]);
	st = reap(pid, rc ? bench_now_ns() : deadline_ns);
	if (rc)
		return rc;
	if (st < 0)
		return -ETIMEDOUT;
	/* fi_pingpong's exit code is its own -errno; a client started early exits with it
	 * after "failed to connect". */
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -ECONNREFUSED;
}

int fi_pingpong_run(const char *server_ns, const char *client_ns, const char *server_addr,
		    unsigned msg, unsigned iters, double *usec_per_xfer)
{
	char ip[PATH_MAX] = "ip", fi[PATH_MAX], size[16], count[16], out[OUT_CAP];
	const char *srv[] = { "-p", "tcp", "-e", "msg", "-S", size, "-I", count, NULL };
	const char *cli[] = { "-p", "tcp", "-e", "msg", "-S", size, "-I", count, server_addr,
			      NULL };
	bool server_gone = false;
	uint64_t deadline;
	int rc = -ETIMEDOUT;
	pid_t server;

	*usec_per_xfer = 0;
	if (!server_addr || !msg || !iters || msg > INT_MAX || iters > INT_MAX)
		return -EINVAL;
	if (!find_exe("fi_pingpong", fi, sizeof(fi)))
		return -ENOENT;
	if ((server_ns || client_ns) && !find_exe("ip", ip, sizeof(ip)))
		return -ENOENT;
	snprintf(size, sizeof(size), "%u", msg);
	snprintf(count, sizeof(count), "%u", iters);
	/* The server prints the same table; the client's is the one read (it timed the
	 * round trips it started). */
	if ((server = spawn(ip, server_ns, fi, srv, -1)) < 0)
		return -errno;
	deadline = bench_now_ns() + RUN_BUDGET_NS;
	/* The server gives no sign of listening but its port: a client started too early
	 * fails to connect at once, and is simply started again. */
	for (int attempt = 0; attempt < MAX_ATTEMPTS && bench_now_ns() < deadline; attempt++) {
		pause_ns(RETRY_PAUSE_NS);
		rc = client_once(ip, client_ns, fi, cli, deadline, out, sizeof(out));
		if (!rc) {
			rc = parse_usec(out, usec_per_xfer);
			break;
		}
		if (rc == -ETIMEDOUT)
			break;		/* the budget is spent */
		if (waitpid(server, NULL, WNOHANG) == server) {
			server_gone = true;	/* reaped: it failed, no retry helps */
			break;
		}
	}
	/* After a run the server ends by itself; after a failure it may wait forever. */
	if (!server_gone)
		reap(server, bench_now_ns() + (rc ? 0 : SERVER_GRACE_NS));
	return rc;
}
