/* SPDX-License-Identifier: MIT */
/* tools_run — see tools_run.h. */
#include "tools_run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned seq;	/* output file names */

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

const char *tr_ctl(void)
{
	return env_or("ODPEMU_CTL", "odpemu-ctl");
}

const char *tr_perf(void)
{
	return env_or("ODPEMU_PERF", "odpemu-perf");
}

static void child(struct h_env *e, int host, const char *const *argv, const char *const *env,
		  const char *out)
{
	const char *a[64];
	int n = 0, fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (int i = 0; env && env[i]; i++)
		putenv((char *)env[i]);
	if (host >= 0 && e->netns) {
		a[n++] = "ip";
		a[n++] = "netns";
		a[n++] = "exec";
		a[n++] = e->host[host].ns;
	}
	for (int i = 0; argv[i] && n < 63; i++)
		a[n++] = argv[i];
	a[n] = NULL;
	execvp(a[0], (char *const *)a);
	fprintf(stderr, "exec %s: %s\n", a[0], strerror(errno));
	_exit(127);
}

int tr_start(struct h_env *e, int host, const char *const *argv, const char *const *env,
	     struct tr_proc *p)
{
	snprintf(p->out, sizeof(p->out), "%s/tool-%d-%u.out", e->rundir, (int)getpid(), seq++);
	p->status = -1;
	p->pid = fork();
	if (p->pid < 0)
		return -1;
	if (p->pid == 0)
		child(e, host, argv, env, p->out);
	return 0;
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int tr_wait(struct tr_proc *p, int timeout_s)
{
	for (int k = 0; p->status < 0 && k < timeout_s * 100; k++) {
		if (waitpid(p->pid, &p->status, WNOHANG) == p->pid)
			break;
		p->status = -1;
		nap_ms(10);
	}
	if (p->status < 0) {
		fprintf(stderr, "tools_run: pid %d still running after %d s: killed\n",
			(int)p->pid, timeout_s);
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &p->status, 0);
	}
	return p->status;
}

char *tr_output(const struct tr_proc *p)
{
	FILE *f = fopen(p->out, "r");
	char *buf = NULL;
	size_t len = 0;

	if (f) {
		FILE *m = open_memstream(&buf, &len);
		char chunk[4096];
		size_t n;

		while (m && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		if (m)
			fclose(m);
		fclose(f);
	}
	return buf ? buf : strdup("");
}

bool tr_wait_for(struct tr_proc *p, const char *text, int timeout_ms)
{
	for (int k = 0; k < timeout_ms / 10; k++) {
		char *out = tr_output(p);
		bool found = strstr(out, text) != NULL;

		free(out);
		if (found)
			return true;
		if (p->status < 0 && waitpid(p->pid, &p->status, WNOHANG) == p->pid)
			return false;
		p->status = -1;
		nap_ms(10);
	}
	return false;
}

static int exit_code(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

int tr_run(struct h_env *e, int host, const char *const *argv, const char *const *env,
	   char **out, int timeout_s)
{
	struct tr_proc p;
	int st;

	if (tr_start(e, host, argv, env, &p))
		return -1;
	st = tr_wait(&p, timeout_s);
	*out = tr_output(&p);
	unlink(p.out);
	return exit_code(st);
}

/* tool, test, args..., "-p" port "-d" device [server address] */
static void perf_argv(const char **a, int max, const char *test, const char *const *args,
		      const char *port, const char *dev, const char *server)
{
	int n = 0;

	a[n++] = tr_perf();
	a[n++] = test;
	for (int i = 0; args && args[i] && n < max - 6; i++)
		a[n++] = args[i];
	a[n++] = "-p";
	a[n++] = port;
	a[n++] = "-d";
	a[n++] = dev;
	if (server)
		a[n++] = server;
	a[n] = NULL;
}

int tr_perf_pair(struct h_env *e, const char *test, const char *const *cargs,
		 const char *const *sargs, struct tr_pair *r, int timeout_s)
{
	const char *sa[64], *ca[64];
	char port[16];
	struct tr_proc s, c;

	/* each test has its own namespaces; on loopback, a port of its own */
	snprintf(port, sizeof(port), "%u", e->netns ? 18515 : e->port + 1);
	perf_argv(sa, 64, test, sargs, port, e->host[1].name, NULL);
	perf_argv(ca, 64, test, cargs, port, e->host[0].name, e->host[1].addr);
	memset(r, 0, sizeof(*r));
	if (tr_start(e, 1, sa, NULL, &s))
		return -1;
	if (!tr_wait_for(&s, "waiting for a client", 10000)) {
		r->server = exit_code(tr_wait(&s, 1));
		r->sout = tr_output(&s);
		r->cout = strdup("(not started: the server did not come up)");
		r->client = -1;
		return -1;
	}
	if (tr_start(e, 0, ca, NULL, &c))
		return -1;
	r->client = exit_code(tr_wait(&c, timeout_s));
	r->server = exit_code(tr_wait(&s, 10));
	r->cout = tr_output(&c);
	r->sout = tr_output(&s);
	unlink(c.out);
	unlink(s.out);
	return 0;
}

void tr_pair_free(struct tr_pair *r)
{
	free(r->cout);
	free(r->sout);
	r->cout = r->sout = NULL;
}

int tr_json(const char *json, const char *expr, char *out, size_t len)
{
	char path[] = "/tmp/odpemu-json-XXXXXX", cmd[1024];
	int fd = mkstemp(path);
	FILE *f;
	size_t got;

	out[0] = '\0';
	if (fd < 0 || write(fd, json, strlen(json)) != (ssize_t)strlen(json)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
		 "print(%s)' %s", expr, path);
	f = popen(cmd, "r");
	got = f ? fread(out, 1, len - 1, f) : 0;
	out[got] = '\0';
	if (got && out[got - 1] == '\n')
		out[got - 1] = '\0';
	unlink(path);
	return f && pclose(f) == 0 ? 0 : -1;
}

double tr_json_num(const char *json, const char *expr)
{
	char out[64];

	return tr_json(json, expr, out, sizeof(out)) ? -1 : strtod(out, NULL);
}
