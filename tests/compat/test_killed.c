/* SPDX-License-Identifier: MIT */
/*
 * The daemon dies under an unmodified program: ib_write_bw runs between the test hosts
 * through the drop-in, host 1's daemon is killed (SIGKILL) mid-run, and both sides must
 * notice (the server's device is gone: DEVICE_FATAL and failed polls; the client's peer
 * stops answering: retry-exceeded completions) and exit with an error, within 60 s — no
 * hang, no crash.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <stdbool.h>

#include "compat_run.h"
#include "t.h"

static struct h_env env;

static const char *verdict(int st)
{
	static char buf[64];

	if (WIFEXITED(st))
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, sizeof(buf), "signal %d", WTERMSIG(st));
	else
		snprintf(buf, sizeof(buf), "status %#x", st);
	return buf;
}

int main(void)
{
	struct cr_args sa = { 0 }, ca = { 0 };
	struct tr_proc s, c;
	unsigned port;
	int ss, cs;

	cr_need("ib_write_bw", "perftest");
	h_up(&env, NULL, NULL, 240);
	port = cr_port(&env);
	cr_push(&sa, "ib_write_bw", "-d", env.host[1].name, "-F", "-D", "60", "-p", NULL);
	cr_pushf(&sa, "%u", port);
	cr_push(&ca, "ib_write_bw", "-d", env.host[0].name, "-F", "-D", "60", "-p", NULL);
	cr_pushf(&ca, "%u", port);
	cr_push(&ca, env.host[1].addr, NULL);
	if (tr_start(&env, 1, sa.v, cr_env(), &s) || !cr_wait_listen(&s, port, 20000) ||
	    tr_start(&env, 0, ca.v, cr_env(), &c)) {
		T_CHECK(0, "could not start the pair");
		h_down(&env);
		return t_done("compat-killed");
	}
	/* their output is buffered until they exit: give the 60 s run three to get going */
	tr_wait_for(&c, "a line that never comes", 3000);
	T_CHECK(waitpid(c.pid, &cs, WNOHANG) == 0 && waitpid(s.pid, &ss, WNOHANG) == 0,
		"both are running 3 s into the run");
	h_daemon_stop(&env, 1, SIGKILL);
	ss = tr_wait(&s, 60);
	cs = tr_wait(&c, 60);
	T_CHECK(WIFEXITED(ss) && WEXITSTATUS(ss) != 0, "server: %s, want an error exit",
		verdict(ss));
	T_CHECK(WIFEXITED(cs) && WEXITSTATUS(cs) != 0, "client: %s, want an error exit",
		verdict(cs));
	if (t_failures) {
		char *so = tr_output(&s), *co = tr_output(&c);

		fprintf(stderr, "---- server\n%s\n---- client\n%s\n----\n", so, co);
		free(so);
		free(co);
	}
	h_down(&env);	/* host 1's daemon was killed: its status is not a verdict here */
	return t_done("compat-killed");
}
