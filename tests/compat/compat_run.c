/* SPDX-License-Identifier: MIT */
/* compat_run — see compat_run.h. */
#include "compat_run.h"

#include <dirent.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

void cr_push_list(struct cr_args *a, const char *const *list)
{
	for (int i = 0; list && list[i] && a->n < 63; i++)
		a->v[a->n++] = list[i];
	a->v[a->n] = NULL;
}

void cr_push(struct cr_args *a, ...)
{
	va_list ap;
	const char *s;

	va_start(ap, a);
	while ((s = va_arg(ap, const char *)) && a->n < 63)
		a->v[a->n++] = s;
	va_end(ap);
	a->v[a->n] = NULL;
}

void cr_pushf(struct cr_args *a, const char *fmt, ...)
{
	va_list ap;

	if (a->nown == 8)
		abort();	/* a test with too many formatted words: make own[] larger */
	va_start(ap, fmt);
	vsnprintf(a->own[a->nown], sizeof(a->own[0]), fmt, ap);
	va_end(ap);
	cr_push(a, a->own[a->nown++], NULL);
}

const char *cr_cmdline(const struct cr_args *a)
{
	static char buf[1024];
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < a->n && len < sizeof(buf); i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? " " : "", a->v[i]);
	return buf;
}

void cr_need(const char *prog, const char *package)
{
	const char *path = getenv("PATH");
	char dir[512], file[600];

	while (path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(dir, sizeof(dir), "%.*s", (int)n, path);
		snprintf(file, sizeof(file), "%s/%s", *dir ? dir : ".", prog);
		if (access(file, X_OK) == 0)
			return;
		path += n + (path[n] == ':');
	}
	printf("%s is not installed (apt-get install %s): skipped\n", prog, package);
	exit(T_SKIP);
}

/* In a sanitizer build the drop-in library needs the sanitizer runtimes, which must come
 * before everything else in an uninstrumented program: meson passes them in
 * $ODPEMU_COMPAT_PRELOAD. Leak checking stays off there, as it would report the
 * programs' own leaks. */
const char *const *cr_preload_env(void)
{
	static char preload[600], asan[600];
	static const char *env[3];
	const char *libs = getenv("ODPEMU_COMPAT_PRELOAD"), *opts = getenv("ASAN_OPTIONS");

	if (libs && *libs && !env[0]) {
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", libs);
		snprintf(asan, sizeof(asan), "ASAN_OPTIONS=%s%sdetect_leaks=0", opts ? opts : "",
			 opts && *opts ? ":" : "");
		env[0] = preload;
		env[1] = asan;
	}
	return env;
}

const char *const *cr_env(void)
{
	static char lib[600];
	static const char *env[4];
	const char *dir = getenv("ODPEMU_COMPAT_DIR");
	int n = 0;

	if (!dir || !*dir) {
		fprintf(stderr, "compat: $ODPEMU_COMPAT_DIR is not set: run this test with "
			"meson test --suite compat\n");
		exit(1);
	}
	snprintf(lib, sizeof(lib), "LD_LIBRARY_PATH=%s", dir);
	env[n++] = lib;
	for (const char *const *p = cr_preload_env(); *p; p++)
		env[n++] = *p;
	env[n] = NULL;
	return env;
}

static int exit_code(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

int cr_run(struct h_env *e, int host, const struct cr_args *a, const char *const *extra,
	   char **out, int timeout_s)
{
	const char *env[16];
	int n = 0;

	for (const char *const *p = cr_env(); *p && n < 15; p++)
		env[n++] = *p;
	for (int i = 0; extra && extra[i] && n < 15; i++)
		env[n++] = extra[i];
	env[n] = NULL;
	return tr_run(e, host, a->v, env, out, timeout_s);
}

/* A port nothing listens on now: the kernel's pick for a wildcard bind. */
static unsigned kernel_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	unsigned port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

unsigned cr_port(struct h_env *e)
{
	static unsigned next = 18515;	/* the pingpong and perftest default */
	unsigned port = e->netns ? 0 : kernel_free_port();

	return port ? port : next++;
}

/* Is this TCP socket inode one of pid's open files? */
static bool owns_socket(pid_t pid, unsigned long inode)
{
	char dir[64], path[320], link[64], want[64];
	struct dirent *d;
	bool found = false;
	DIR *fds;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	if (!(fds = opendir(dir)))
		return false;
	while (!found && (d = readdir(fds))) {
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = '\0';
			found = !strcmp(link, want);
		}
	}
	closedir(fds);
	return found;
}

/* Does pid itself hold a socket listening on TCP port? /proc/PID/net/tcp{,6} list every
 * socket of pid's network namespace; the inode says whose it is (another program may
 * listen on the same port, and before `ip netns exec` has entered the namespace pid still
 * sees the parent's). */
static bool listens(pid_t pid, unsigned port)
{
	static const char *const files[] = { "tcp", "tcp6" };
	bool found = false;

	for (int f = 0; f < 2 && !found; f++) {
		char path[64], line[512];
		FILE *in;

		snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, files[f]);
		if (!(in = fopen(path, "r")))
			continue;
		while (!found && fgets(line, sizeof(line), in)) {
			unsigned lport, state;
			unsigned long inode;

			if (sscanf(line, " %*d: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x "
				   "%*x %*u %*u %lu", &lport, &state, &inode) == 3 &&
			    lport == port && state == 0x0A /* TCP_LISTEN */)
				found = owns_socket(pid, inode);
		}
		fclose(in);
	}
	return found;
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Wait until p listens on port: false when it exits first or timeout_ms passes. */
bool cr_wait_listen(struct tr_proc *p, unsigned port, int timeout_ms)
{
	for (int k = 0; k < timeout_ms / 10; k++) {
		if (listens(p->pid, port))
			return true;
		if (waitpid(p->pid, &p->status, WNOHANG) == p->pid)
			return false;
		p->status = -1;
		nap_ms(10);
	}
	return false;
}

/* prog -d dev -p port opts... [server] */
static void side_args(struct cr_args *a, const char *prog, const char *const *opts,
		      unsigned port, const char *dev, const char *server)
{
	memset(a, 0, sizeof(*a));
	cr_push(a, prog, "-d", dev, "-p", NULL);
	cr_pushf(a, "%u", port);
	cr_push_list(a, opts);
	if (server)
		cr_push(a, server, NULL);
}

unsigned cr_hangs;

/* A program that hangs is a bug report: print where its threads are (gdb, if installed,
 * itself bounded) before it is killed. */
static void show_stacks(const struct tr_proc *p, const struct cr_args *a, int timeout_s)
{
	char cmd[200];

	fprintf(stderr, "---- %s (pid %d) still runs after %d s; its stacks:\n", cr_cmdline(a),
		(int)p->pid, timeout_s);
	snprintf(cmd, sizeof(cmd), "timeout -k 2 10 gdb -p %d -batch -ex 'thread apply all bt' "
		 "2>/dev/null | grep -E '^(#|Thread)' >&2", (int)p->pid);
	if (system(cmd))
		fprintf(stderr, "(none: gdb is not installed or could not attach)\n");
}

/* Has p exited within timeout_s (0: now)? Reaps it. */
static bool exited(struct tr_proc *p, int timeout_s)
{
	for (int k = 0; p->status < 0 && k <= timeout_s * 100; k++) {
		if (waitpid(p->pid, &p->status, WNOHANG) == p->pid)
			return true;
		p->status = -1;
		nap_ms(10);
	}
	return p->status >= 0;
}

/* Reap p (started as a) within timeout_s, else show its stacks and kill it: its exit
 * code; its output into *out. */
static int collect(struct tr_proc *p, const struct cr_args *a, int timeout_s, char **out)
{
	int code;

	if (!exited(p, timeout_s)) {
		cr_hangs++;
		show_stacks(p, a, timeout_s);
	}
	code = exit_code(tr_wait(p, 0));
	*out = tr_output(p);
	unlink(p->out);
	return code;
}

/* cr_env() then extra (may be NULL) into out (room for 16). */
static const char *const *env_with(const char **out, const char *const *extra)
{
	int n = 0;

	for (const char *const *p = cr_env(); *p && n < 15; p++)
		out[n++] = *p;
	for (const char *const *p = extra; p && *p && n < 15; p++)
		out[n++] = *p;
	out[n] = NULL;
	return out;
}

/* The rdma_cm listeners host's daemon has made so far (its cm_listens counter). */
static unsigned long long cm_listens(struct h_env *e, int host)
{
	static struct odpemu_context *ctx[2];
	unsigned long long n;

	if (!ctx[host])
		ctx[host] = h_open(e, host);
	n = h_counter(ctx[host], ODPEMU_COUNTERS_DEVICE, 0, "cm_listens");
	return n == UINT64_MAX ? 0 : n;
}

/* Wait until the server has an rdma_cm listener (at its daemon: it opens no socket). */
static bool wait_cm_listen(struct h_env *e, struct tr_proc *p, unsigned long long before,
			   int timeout_ms)
{
	for (int k = 0; k < timeout_ms / 10; k++) {
		if (cm_listens(e, 1) > before)
			return true;
		if (waitpid(p->pid, &p->status, WNOHANG) == p->pid)
			return false;
		p->status = -1;
		nap_ms(10);
	}
	return false;
}

/* The server started, then the client once the server is ready (port: its TCP port;
 * 0: its rdma_cm listener). */
static int run_pair(struct h_env *e, unsigned port, const char *const *senv,
		    const char *const *cenv, struct cr_pair *r, int timeout_s)
{
	unsigned long long before = port ? 0 : cm_listens(e, 1);
	const char *env[16];
	struct tr_proc s, c;
	char msg[128];

	r->sexit = r->cexit = -1;
	r->sout = r->cout = NULL;
	if (tr_start(e, 1, r->server.v, env_with(env, senv), &s))
		return -1;
	if (port ? !cr_wait_listen(&s, port, 20000) : !wait_cm_listen(e, &s, before, 20000)) {
		r->sexit = collect(&s, &r->server, 0, &r->sout);
		if (port)
			snprintf(msg, sizeof(msg), "(not started: the server never listened on TCP "
				 "port %u)", port);
		else
			snprintf(msg, sizeof(msg), "(not started: the server never listened with "
				 "rdma_cm)");
		r->cout = strdup(msg);
		return -1;
	}
	if (tr_start(e, 0, r->client.v, env_with(env, cenv), &c)) {
		r->sexit = collect(&s, &r->server, 0, &r->sout);
		r->cout = strdup("(fork failed)");
		return -1;
	}
	r->cexit = collect(&c, &r->client, timeout_s, &r->cout);
	/* the server ends with the client, or has nobody left to talk to; a client that
	 * crashed (killed by a signal) may leave it waiting for a connection: stopped, not
	 * counted as a hang */
	if (r->cexit > 128 && !exited(&s, 2)) {
		r->sexit = exit_code(tr_wait(&s, 0));
		r->sout = tr_output(&s);
		unlink(s.out);
	} else {
		r->sexit = collect(&s, &r->server, 10, &r->sout);
	}
	return 0;
}

int cr_pair_run_args(struct h_env *e, unsigned port, const char *const *senv,
		     const char *const *cenv, struct cr_pair *r, int timeout_s)
{
	return run_pair(e, port, senv, cenv, r, timeout_s);
}

int cr_pair_run_cm(struct h_env *e, const char *const *senv, const char *const *cenv,
		   struct cr_pair *r, int timeout_s)
{
	return run_pair(e, 0, senv, cenv, r, timeout_s);
}

int cr_pair_run(struct h_env *e, const char *prog, const char *const *opts, struct cr_pair *r,
		int timeout_s)
{
	unsigned port = cr_port(e);

	memset(r, 0, sizeof(*r));
	side_args(&r->server, prog, opts, port, e->host[1].name, NULL);
	side_args(&r->client, prog, opts, port, e->host[0].name, e->host[1].addr);
	return cr_pair_run_args(e, port, NULL, NULL, r, timeout_s);
}

int cr_pair_run_rdmacm(struct h_env *e, const char *prog, const char *const *opts,
		       struct cr_pair *r, int timeout_s)
{
	unsigned port = cr_port(e);

	memset(r, 0, sizeof(*r));
	side_args(&r->server, prog, opts, port, e->host[1].name, NULL);
	side_args(&r->client, prog, opts, port, e->host[0].name, e->host[1].addr);
	return cr_pair_run_cm(e, NULL, NULL, r, timeout_s);
}

void cr_pair_show(const struct cr_pair *r)
{
	fprintf(stderr, "---- server (host 1), exit %d: %s\n", r->sexit, cr_cmdline(&r->server));
	fprintf(stderr, "%s\n", r->sout ? r->sout : "");
	fprintf(stderr, "---- client (host 0), exit %d: %s\n", r->cexit, cr_cmdline(&r->client));
	fprintf(stderr, "%s\n----\n", r->cout ? r->cout : "");
}

bool cr_pair_ok(const struct cr_pair *r, const char *want)
{
	unsigned long failed = t_failures;

	T_CHECK(r->sexit == 0, "%s: server exit %d", r->server.v[0], r->sexit);
	T_CHECK(r->cexit == 0, "%s: client exit %d", r->client.v[0], r->cexit);
	if (want)
		T_CHECK(r->cout && strstr(r->cout, want), "%s: client output lacks '%s'",
			r->client.v[0], want);
	if (t_failures != failed)
		cr_pair_show(r);
	return t_failures == failed;
}

void cr_pair_free(struct cr_pair *r)
{
	free(r->sout);
	free(r->cout);
	r->sout = r->cout = NULL;
}

int cr_start(struct h_env *e, int host, const struct cr_args *a, const char *const *extra,
	     struct tr_proc *p)
{
	const char *env[16];

	return tr_start(e, host, a->v, env_with(env, extra), p);
}

bool cr_exited(struct tr_proc *p, int timeout_ms)
{
	for (int k = 0; p->status < 0 && k <= timeout_ms / 10; k++) {
		if (waitpid(p->pid, &p->status, WNOHANG) == p->pid)
			return true;
		p->status = -1;
		if (k < timeout_ms / 10)
			nap_ms(10);
	}
	return p->status >= 0;
}

int cr_collect(struct tr_proc *p, const struct cr_args *a, int timeout_s, char **out)
{
	return collect(p, a, timeout_s, out);
}

/* name's value in ctx's device counters (0 when absent) */
static unsigned long long dev_counter(struct odpemu_context *ctx, const char *name)
{
	unsigned long long n = h_counter(ctx, ODPEMU_COUNTERS_DEVICE, 0, name);

	return n == UINT64_MAX ? 0 : n;
}

unsigned long long cr_dev_counter(struct h_env *e, int host, const char *name)
{
	struct odpemu_context *ctx = h_open(e, host);
	unsigned long long n = dev_counter(ctx, name);

	odpemu_close_device(ctx);
	return n;
}

bool cr_wait_dev_counter(struct h_env *e, int host, const char *name,
			 unsigned long long above, struct tr_proc *p, int timeout_ms)
{
	struct odpemu_context *ctx = h_open(e, host);
	bool grew = false;

	for (int k = 0; !grew && k < timeout_ms / 10; k++) {
		if ((grew = dev_counter(ctx, name) > above))
			break;
		if (p && cr_exited(p, 0))
			break;
		nap_ms(10);
	}
	odpemu_close_device(ctx);
	return grew;
}

double cr_counter(struct h_env *e, const char *dev, const char *name)
{
	const char *argv[] = { tr_ctl(), "stat", "-d", dev, "--json", NULL };
	char expr[128], *out = NULL;
	double v = -1;

	if (tr_run(e, -1, argv, NULL, &out, 20) == 0) {
		snprintf(expr, sizeof(expr), "d[\"devices\"][0][\"counters\"][\"%s\"]", name);
		v = tr_json_num(out, expr);
	}
	if (v < 0)
		fprintf(stderr, "compat: no counter %s in odpemu-ctl stat -d %s --json:\n%s\n", name,
			dev, out ? out : "(not run)");
	free(out);
	return v;
}

/* After a failure: each device's error completions, timeouts, retransmits and drops that
 * are not zero, which say what the programs' QPs died of (a program prints only EIO). */
static void show_error_counters(struct h_env *e, int i)
{
	static const char *const prefixes[] = { "wc_err_", "timeouts", "retransmits", "drop_",
						"udp_rx_errors", "udp_tx_err" };
	const char *argv[] = { tr_ctl(), "stat", "-d", e->host[i].name, NULL };
	char *out = NULL, *save = NULL, name[64];
	unsigned long long v;

	fprintf(stderr, "---- %s error counters (not zero) ----\n", e->host[i].name);
	if (tr_run(e, -1, argv, NULL, &out, 20) || !out) {
		fprintf(stderr, "(odpemu-ctl stat failed)\n");
		free(out);
		return;
	}
	for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, " %63s %llu", name, &v) != 2 || !v)
			continue;
		for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++)
			if (!strncmp(name, prefixes[k], strlen(prefixes[k])))
				fprintf(stderr, "  %s %llu\n", name, v);
	}
	free(out);
}

int cr_finish(struct h_env *e, const char *name)
{
	T_CHECK(cr_hangs < CR_MAX_HANGS, "%u programs hung: the runs after them were skipped",
		cr_hangs);
	if (t_failures) {
		h_show_log(e, 0);
		h_show_log(e, 1);
		show_error_counters(e, 0);
		show_error_counters(e, 1);
	}
	T_EQ(h_down(e), 0, "daemons that did not stop cleanly");
	return t_done(name);
}
