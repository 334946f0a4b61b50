/* SPDX-License-Identifier: MIT */
/* harness — see harness.h. */
#include "harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct h_env *live;	/* what the exit handlers tear down */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "harness: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Run a shell command quietly; its status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " >/dev/null 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	return system(cmd);
}

/* The parent of /proc/PID/stat (the field after the name, which may hold spaces and
 * parentheses: it ends at the last ')'). */
static pid_t parent_of(const char *pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (!(p = strrchr(buf, ')')))
		return -1;
	return (pid_t)strtol(p + 4, NULL, 10);	/* ") S 123" */
}

/* What each thread of a process waits in: the watchdog's evidence of a hang. */
static void show_tasks(pid_t pid)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "cd /proc/%d/task 2>/dev/null && for t in *; do "
		 "echo \"  task $t $(cat $t/comm): wchan $(cat $t/wchan) syscall $(cat $t/syscall)\";"
		 " sed 's/^/    /' $t/stack 2>/dev/null | head -n 8; done >&2", (int)pid);
	(void)!system(cmd);
}

/* The watchdog fired while a child of the test (a fork running checks, a client) still
 * runs: say where it waits, then kill it, so that it cannot hold the test's output open
 * after the test is gone (meson would wait for it until its own timeout). The daemons
 * are not strays: h_down stops them. */
static void kill_strays(struct h_env *e)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);

		if (pid <= 0 || parent_of(de->d_name) != getpid() ||
		    (e && (pid == e->host[0].pid || pid == e->host[1].pid)))
			continue;
		fprintf(stderr, "harness: child %d still running; its threads:\n", (int)pid);
		show_tasks(pid);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	closedir(d);
}

static void on_signal(int sig)
{
	if (sig == SIGALRM)
		kill_strays(live);
	if (live)
		(void)h_down(live);
	signal(sig, SIG_DFL);
	if (sig == SIGALRM)
		fprintf(stderr, "harness: watchdog expired, test took too long\n");
	raise(sig == SIGALRM ? SIGTERM : sig);
}

static void on_exit_cleanup(void)
{
	if (live)
		(void)h_down(live);
}

/* The test hosts are odpemu-cluster's (tools/odpemu-cluster: the demo's and the cluster's
 * too), a cluster of two without daemons named after the test's pid: e<pid>. */
static const char *cluster_tool(void)
{
	const char *p = getenv("ODPEMU_CLUSTER");

	return p && *p ? p : ODPEMU_CLUSTER_TOOL;
}

/* Clusters of earlier runs whose test process is gone (killed with SIGKILL). */
static void remove_stale_hosts(void)
{
	FILE *f = popen("ip netns list 2>/dev/null", "r");
	char line[128];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		int pid, k;

		if (sscanf(line, "e%d-h%d", &pid, &k) == 2 && k == 1 && kill(pid, 0) &&
		    errno == ESRCH)
			sh("%s --name e%d down", cluster_tool(), pid);
	}
	pclose(f);
}

/* Test hosts in network namespaces need root with CAP_SYS_ADMIN and CAP_NET_ADMIN; a
 * container's root has neither (the netns row of odpemud --check): try, in a child. */
static bool can_make_netns(void)
{
	int status = -1;
	pid_t pid;

	if (geteuid() != 0 || (pid = fork()) < 0)
		return false;
	if (pid == 0)
		_exit(unshare(CLONE_NEWNET) ? 1 : 0);
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status);
}

/* Reads the cluster's hosts ("hK NS ADDR DIR [ADDR6]") into e->host[]. */
static void read_hosts(struct h_env *e)
{
	char cmd[256], line[512];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s --name e%d hosts", cluster_tool(), (int)getpid());
	if (!(f = popen(cmd, "r")))
		die("cannot run %s: %s", cmd, strerror(errno));
	while (n < 2 && fgets(line, sizeof(line), f)) {
		char ns[32], a4[64], dir[256], a6[64] = "";
		struct h_host *h = &e->host[n];

		if (sscanf(line, "h%*d %31s %63s %255s %63s", ns, a4, dir, a6) < 3)
			break;
		snprintf(h->ns, sizeof(h->ns), "%s", ns);
		snprintf(h->dev, sizeof(h->dev), "eth0");
		snprintf(h->addr, sizeof(h->addr), "%s", e->ipv6 ? a6 : a4);
		n++;
	}
	pclose(f);
	if (n != 2 || !e->host[0].addr[0] || !e->host[1].addr[0])
		die("%s: not two hosts with addresses", cmd);
}

static void setup_netns(struct h_env *e)
{
	unsigned sub = (unsigned)getpid() % 250 + 1;

	remove_stale_hosts();
	/* isolated: the addresses exist only inside the namespaces, so tests running at
	 * once may share a subnet */
	if (sh("%s --name e%d up 2 --no-daemons --isolated --mtu 9000 --subnet 10.201.%u%s",
	       cluster_tool(), (int)getpid(), sub, e->ipv6 ? " --ipv6" : ""))
		die("cannot create the test hosts (%s up)", cluster_tool());
	read_hosts(e);
}

/* Another address of host i's, in its subnet: its own with the last number 3 + i. */
void h_extra_addr(struct h_env *e, int i, char *addr, size_t len)
{
	const char *own = e->host[i].addr, *last;

	if (!e->netns) {
		snprintf(addr, len, "127.0.0.%d", 3 + i);
		return;
	}
	last = strrchr(own, e->ipv6 ? ':' : '.');
	snprintf(addr, len, "%.*s%d", (int)(last + 1 - own), own, 3 + i);
	if (sh("ip -n %s addr add %s/%d dev %s%s", e->host[i].ns, addr, e->ipv6 ? 64 : 24,
	       e->host[i].dev, e->ipv6 ? " nodad" : ""))
		die("cannot add %s to host %d", addr, i);
}

int h_gid_of(const char *addr, union odpemu_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (strchr(addr, ':'))
		return inet_pton(AF_INET6, addr, gid->raw) == 1 ? 0 : -1;
	gid->raw[10] = gid->raw[11] = 0xff;
	return inet_pton(AF_INET, addr, gid->raw + 12) == 1 ? 0 : -1;
}

int h_socket_in(struct h_env *e, int i, int domain, int type)
{
	char path[96];
	int self, ns, fd, err;

	if (!e->netns)
		return (fd = socket(domain, type, 0)) < 0 ? -errno : fd;
	snprintf(path, sizeof(path), "/var/run/netns/%s", e->host[i].ns);
	if ((self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if ((ns = open(path, O_RDONLY | O_CLOEXEC)) < 0 || setns(ns, CLONE_NEWNET)) {
		err = -errno;
		if (ns >= 0)
			close(ns);
		close(self);
		return err;
	}
	/* a socket keeps the namespace it was made in */
	fd = socket(domain, type, 0);
	err = fd < 0 ? -errno : 0;
	if (setns(self, CLONE_NEWNET))
		die("cannot return to the test's network namespace: %s", strerror(errno));
	close(ns);
	close(self);
	return fd < 0 ? err : fd;
}

/* $ODPEMU_TEST_DROP_PCT=N (1..50): each host drops N % of its RoCEv2 output at random
 * (nftables numgen, counted), so the transport must recover every loss. On the sender's
 * output hook a segmentation-offload send is one super-packet, so a drop takes a whole run:
 * bursts, not only single packets. Needs the namespaces: skipped (77) without them. */
static void setup_drop(struct h_env *e)
{
	const char *v = getenv("ODPEMU_TEST_DROP_PCT");
	int pct = v ? atoi(v) : 0;

	if (pct <= 0)
		return;
	if (!e->netns) {
		printf("random drop needs network namespaces, root with CAP_SYS_ADMIN and "
		       "CAP_NET_ADMIN (nftables): skipped\n");
		exit(77);
	}
	for (int i = 0; i < 2; i++)
		if (sh("ip netns exec %s nft add table inet odpt", e->host[i].ns) ||
		    sh("ip netns exec %s nft 'add chain inet odpt out { type filter hook output "
		       "priority 0 ; }'", e->host[i].ns) ||
		    sh("ip netns exec %s nft add rule inet odpt out udp dport %u numgen random "
		       "mod 100 '<' %d counter drop", e->host[i].ns, e->port, pct))
			die("cannot install the random drop on host %d (nftables: apt-get install "
			    "nftables)", i);
	e->drop_pct = pct;
	printf("random drop: %d %% of each host's RoCEv2 output (nftables)\n", pct);
}

/* $ODPEMU_TEST_DUP_PCT=N (1..50): each host also sends N % of its RoCEv2 output twice
 * (nftables dup to the peer, counted); the copy leaves after the original, so the peer sees
 * late duplicates of packets it has already taken, as after a reordering. */
static void setup_dup(struct h_env *e)
{
	const char *v = getenv("ODPEMU_TEST_DUP_PCT"), *fam = e->ipv6 ? "ip6" : "ip";
	int pct = v ? atoi(v) : 0;

	if (pct <= 0)
		return;
	if (!e->netns) {
		printf("random duplication needs network namespaces, root with CAP_SYS_ADMIN "
		       "and CAP_NET_ADMIN (nftables): "
		       "skipped\n");
		exit(77);
	}
	for (int i = 0; i < 2; i++)
		if (sh("ip netns exec %s nft add table %s odpd", e->host[i].ns, fam) ||
		    sh("ip netns exec %s nft 'add chain %s odpd out { type filter hook output "
		       "priority 0 ; }'", e->host[i].ns, fam) ||
		    sh("ip netns exec %s nft add rule %s odpd out udp dport %u numgen random "
		       "mod 100 '<' %d counter dup to %s device %s", e->host[i].ns, fam,
		       e->port, pct, e->host[!i].addr, e->host[i].dev))
			die("cannot install the random duplication on host %d (nftables)", i);
	e->dup_pct = pct;
	printf("random duplication: %d %% of each host's RoCEv2 output (nftables)\n", pct);
}

/* The packets counted by the rules of one nftables chain on both hosts. */
static unsigned long long chain_count(struct h_env *e, const char *chain)
{
	unsigned long long total = 0;

	for (int i = 0; i < 2; i++) {
		char cmd[256], line[512];
		FILE *f;

		snprintf(cmd, sizeof(cmd), "ip netns exec %s nft list chain %s 2>/dev/null",
			 e->host[i].ns, chain);
		f = popen(cmd, "r");
		while (f && fgets(line, sizeof(line), f)) {
			const char *c = strstr(line, "counter packets ");

			if (c)
				total += strtoull(c + strlen("counter packets "), NULL, 10);
		}
		if (f)
			pclose(f);
	}
	return total;
}

unsigned long long h_dropped(struct h_env *e)
{
	return e->drop_pct ? chain_count(e, "inet odpt out") : 0;
}

unsigned long long h_duplicated(struct h_env *e)
{
	return !e->dup_pct ? 0 : chain_count(e, e->ipv6 ? "ip6 odpd out" : "ip odpd out");
}

void h_up(struct h_env *e, const char *const *extra_a, const char *const *extra_b,
	  unsigned watchdog_s)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->rundir, sizeof(e->rundir), "/tmp/odpemu-test-XXXXXX");
	if (!mkdtemp(e->rundir))
		die("mkdtemp: %s", strerror(errno));
	setenv("ODPEMU_RUNDIR", e->rundir, 1);
	live = e;
	atexit(on_exit_cleanup);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGALRM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	alarm(watchdog_s);
	e->netns = !getenv("ODPEMU_TEST_NO_NETNS") && can_make_netns() && sh("ip netns list") == 0;
	e->ipv6 = getenv("ODPEMU_TEST_IPV6") != NULL;
	if (e->ipv6 && !e->netns) {
		/* loopback has one IPv6 address (::1): two hosts need the namespaces */
		printf("IPv6 test hosts need network namespaces, root with CAP_SYS_ADMIN and "
		       "CAP_NET_ADMIN: skipped\n");
		exit(77);
	}
	e->port = 4791;
	if (e->netns) {
		setup_netns(e);
	} else {
		e->port = 20000 + (unsigned)getpid() % 20000;
		strcpy(e->host[0].addr, "127.0.0.1");
		strcpy(e->host[1].addr, "127.0.0.2");
	}
	setup_drop(e);
	setup_dup(e);
	for (int i = 0; i < 2; i++) {
		snprintf(e->host[i].name, sizeof(e->host[i].name), "odp%c", 'a' + i);
		snprintf(e->host[i].log, sizeof(e->host[i].log), "%s/%s.stderr", e->rundir,
			 e->host[i].name);
		if (h_daemon_start(e, i, i ? extra_b : extra_a))
			die("daemon %d did not start", i);
	}
}

static const char *daemon_path(void)
{
	const char *p = getenv("ODPEMUD");

	return p && *p ? p : "odpemud";
}

/* The start of a command line running the daemon in host i (in its namespace as root):
 * the number of arguments put in argv (at most 5). */
static int daemon_argv(struct h_env *e, int i, const char **argv)
{
	int n = 0;

	if (e->netns) {
		argv[n++] = "ip";
		argv[n++] = "netns";
		argv[n++] = "exec";
		argv[n++] = e->host[i].ns;
	}
	argv[n++] = daemon_path();
	return n;
}

static void exec_daemon(struct h_env *e, int i, const char *const *extra)
{
	const char *argv[48];
	char port[16];
	int n, fd = open(e->host[i].log, O_WRONLY | O_CREAT | O_APPEND, 0644);

	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	/* A fork inherits its parent's timer slack (a benchmark may have set 1 ns): daemons
	 * run with the kernel's usual 50 us, as they would when started by hand. */
	prctl(PR_SET_TIMERSLACK, 50000ul);
	snprintf(port, sizeof(port), "%u", e->port);
	n = daemon_argv(e, i, argv);
	argv[n++] = "--foreground";
	argv[n++] = "--name";
	argv[n++] = e->host[i].name;
	argv[n++] = "--addr";
	argv[n++] = e->host[i].addr;
	argv[n++] = "--port";
	argv[n++] = port;
	argv[n++] = "--rundir";
	argv[n++] = e->rundir;
	argv[n++] = "--log-level";
	argv[n++] = "debug";
	/* $ODPEMU_TEST_FAULT_THREAD: every page fault resolved on the fault thread, as
	 * odpemud does where PROCMAP_QUERY is missing (the default resolves inline). */
	if (getenv("ODPEMU_TEST_FAULT_THREAD"))
		argv[n++] = "--fault-thread";
	for (int k = 0; extra && extra[k] && n < 46; k++)
		argv[n++] = extra[k];
	argv[n] = NULL;
	execvp(argv[0], (char *const *)argv);
	fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int h_daemon_start(struct h_env *e, int i, const char *const *extra)
{
	char sock[300];
	pid_t pid;

	/* A killed daemon leaves its socket: gone first, so its presence means "ready". */
	snprintf(sock, sizeof(sock), "%s/%s.sock", e->rundir, e->host[i].name);
	unlink(sock);
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0)
		exec_daemon(e, i, extra);
	e->host[i].pid = pid;
	for (int k = 0; k < 500; k++) {		/* up to 5 s */
		int st;
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (access(sock, F_OK) == 0)
			return 0;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			e->host[i].pid = 0;
			h_show_log(e, i);
			return -1;
		}
		nanosleep(&ts, NULL);
	}
	h_show_log(e, i);
	return -1;
}

int h_daemon_stop(struct h_env *e, int i, int sig)
{
	pid_t pid = e->host[i].pid;
	int st = -1;

	if (pid <= 0)
		return -1;
	kill(pid, sig);
	if (sig != SIGTERM && sig != SIGKILL && sig != SIGINT)
		return 0;
	for (int k = 0; k < 500; k++) {		/* up to 5 s, then force */
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (waitpid(pid, &st, WNOHANG) == pid) {
			e->host[i].pid = 0;
			return st;
		}
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	e->host[i].pid = 0;
	return -1;
}

void h_show_log(struct h_env *e, int i)
{
	char cmd[400];

	fprintf(stderr, "---- %s log (tail) ----\n", e->host[i].name);
	snprintf(cmd, sizeof(cmd), "tail -n 30 %s >&2", e->host[i].log);
	if (system(cmd))
		fprintf(stderr, "(no log)\n");
}

int h_down(struct h_env *e)
{
	int bad = 0;

	live = NULL;
	for (int i = 0; i < 2; i++) {
		int st;

		if (e->host[i].pid <= 0)
			continue;
		/* A graceful stop exits 0; a sanitizer report or a leak makes it non-zero. */
		st = h_daemon_stop(e, i, SIGTERM);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "harness: daemon %s did not stop cleanly (status %#x)\n",
				e->host[i].name, st);
			h_show_log(e, i);
			bad++;
		}
	}
	if (e->netns && sh("%s --name e%d down", cluster_tool(), (int)getpid()))
		bad++;
	if (e->rundir[0])
		sh("rm -rf %s", e->rundir);
	e->rundir[0] = 0;
	return bad;
}

struct odpemu_context *h_open(struct h_env *e, int i)
{
	struct odpemu_device **list = odpemu_get_device_list(NULL);
	struct odpemu_context *ctx = NULL;

	for (int k = 0; list && list[k]; k++)
		if (!strcmp(odpemu_get_device_name(list[k]), e->host[i].name))
			ctx = odpemu_open_device(list[k]);
	if (list)
		odpemu_free_device_list(list);
	if (!ctx) {
		h_show_log(e, i);
		die("cannot open device %s: %s", e->host[i].name, strerror(errno));
	}
	return ctx;
}

int h_capture(const char *const *argv, unsigned alarm_s, char *out, size_t outlen)
{
	int p[2], st = -1;
	size_t got = 0;
	pid_t pid;

	if (pipe(p))
		return -1;
	if ((pid = fork()) == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		alarm(alarm_s);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	for (ssize_t r; got + 1 < outlen && (r = read(p[0], out + got, outlen - 1 - got)) > 0; )
		got += (size_t)r;
	out[got] = 0;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	return st;
}

int h_run(struct h_env *e, int i, const char *const *args, char *out, size_t outlen)
{
	const char *argv[40];
	int n = daemon_argv(e, i, argv);

	for (int k = 0; args[k] && n < 38; k++)
		argv[n++] = args[k];
	argv[n] = NULL;
	return h_capture(argv, 10, out, outlen);	/* 10 s: a daemon that should have refused */
}

const char *h_sock_path(struct h_env *e, int i, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.sock", e->rundir, e->host[i].name);
	return buf;
}

uint8_t *h_cold(size_t len)
{
	uint8_t *p = mmap(NULL, len + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	if (p == MAP_FAILED || mprotect(p + len, 4096, PROT_NONE))
		die("mmap of %zu bytes: %s", len, strerror(errno));
	return p;
}

int h_main(int argc, char **argv, const struct h_test *t)
{
	struct h_env e;
	uint64_t seed = t->seed ? t_seed(argc, argv, t->seed) : 0;

	h_up(&e, t->daemon_args[0], t->daemon_args[1], t->watchdog_s ? t->watchdog_s : 300);
	e.rng.s = seed;
	for (int i = 0; i < 2; i++)
		if (t->open & (1u << i))
			e.ctx[i] = h_open(&e, i);
	t->body(&e);
	for (int i = 0; i < 2; i++)
		if (e.ctx[i])
			odpemu_close_device(e.ctx[i]);
	if (t_failures) {
		h_show_log(&e, 0);
		h_show_log(&e, 1);
	}
	T_EQ(h_down(&e), 0, "daemons that did not stop cleanly");
	return t_done(t->name);
}

void h_skip(struct h_env *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	h_down(e);
	exit(T_SKIP);
}

void h_checks_in_child(struct h_env *e, void (*fn)(struct h_env *e), const char *what)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		fn(e);
		fflush(stdout);		/* _exit drops what stdio holds */
		_exit(t_failures ? 1 : 0);
	}
	T_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0, "%s, in a child (status %#x; its failures are "
		"printed above)", what, status);
}
