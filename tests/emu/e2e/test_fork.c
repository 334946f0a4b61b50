/* SPDX-License-Identifier: MIT */
/*
 * fork: a child inherits the parent's open device but may not use it (lib/fork.c).
 *  - in the child every call on the inherited context fails with ENODEV before touching
 *    the daemon or the rings: control verbs, post_send, post_recv, poll_cq;
 *  - the child can open the device again and use it;
 *  - the parent's pair keeps working while and after the child ran;
 *  - the child's copy of the socket does not keep the parent's session alive: when the
 *    parent closes its device while the child still lives, the daemon's session count
 *    drops;
 *  - a fork right after the first open: the child allocates and starts a thread (which
 *    allocates in the sanitizer runtime as well; not under TSan, which cannot) without
 *    hanging, 50 times, each in a fresh process (the library's threads run before open
 *    returns, lib/thread.c).
 */
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "ops.h"
#include "t.h"

#define LEN 4096u

/* Runs in the child: 0 if every check held, else the number of the first that failed. */
static int child_checks(struct h_env *e, struct h_pair *p)
{
	struct odpemu_wc wc;
	struct odpemu_sge sge = { 0, 0, 0 };
	struct odpemu_send_wr wr = { .opcode = ODPEMU_WR_SEND, .sg_list = &sge }, *bad = NULL;
	struct odpemu_recv_wr rwr = { .sg_list = &sge }, *rbad = NULL;
	struct odpemu_context *again;
	struct odpemu_pd *pd;

	errno = 0;
	if (odpemu_alloc_pd(p->s[0].ctx) || errno != ENODEV)
		return 1;
	if (odpemu_poll_cq(p->s[0].cq, 1, &wc) != -1 || errno != ENODEV)
		return 2;
	if (odpemu_post_send(p->s[0].qp, &wr, &bad) != ENODEV || bad != &wr)
		return 3;
	if (odpemu_post_recv(p->s[0].qp, &rwr, &rbad) != ENODEV || rbad != &rwr)
		return 4;
	if (!strstr(odpemu_last_error(p->s[0].ctx), "before a fork"))
		return 5;
	if (!(again = h_open(e, 0)) || !(pd = odpemu_alloc_pd(again)))
		return 6;
	if (odpemu_dealloc_pd(pd) || odpemu_close_device(again))
		return 7;
	return 0;
}

static void pair_works(struct h_pair *p, struct h_mem *a, struct h_mem *b, const char *tag,
		       struct t_rng *rng)
{
	h_data_ops(p, a, b, LEN, tag, rng);
}

static unsigned long long sessions(struct odpemu_context *c)
{
	return h_counter(c, ODPEMU_COUNTERS_DEVICE, 0, "sessions");
}

static void fork_rules(struct h_env *e)
{
	struct h_pair p = { 0 };
	struct h_qp_opts o;
	struct h_mem a, b;
	struct odpemu_context *watcher;
	int status = 0, pipefd[2];
	pid_t pid;

	h_qp_opts_default(&o);
	if (h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	a.buf = h_cold(4 * LEN);
	b.buf = h_cold(4 * LEN);
	a.mr = odpemu_reg_mr(p.s[0].pd, a.buf, 4 * LEN, ODPEMU_ACCESS_LOCAL_WRITE |
			     ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ);
	b.mr = odpemu_reg_mr(p.s[1].pd, b.buf, 4 * LEN, ODPEMU_ACCESS_LOCAL_WRITE |
			     ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ);
	T_CHECK(a.mr && b.mr, "reg_mr: %m");
	pair_works(&p, &a, &b, "before fork", &e->rng);

	/* the child checks, then waits (holding its socket copies) until told to go */
	if (pipe(pipefd) || (pid = fork()) < 0) {
		T_CHECK(0, "fork: %m");
		return;
	}
	if (pid == 0) {
		char c;
		int rc = child_checks(e, &p);

		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1);
		_exit(rc);
	}
	close(pipefd[0]);
	pair_works(&p, &a, &b, "while the child lives", &e->rng);

	/* the parent's session on host 1 ends when the parent closes it, child or not.
	 * h_open's device list connects to each daemon to see it is alive and hangs up: the
	 * daemon counts that session until it has read the hang-up, so let it go first. */
	watcher = h_open(e, 1);
	for (int i = 0; i < 200 && sessions(watcher) > 2; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	T_EQ(sessions(watcher), 2, "sessions on host 1: the pair's and the watcher's");
	odpemu_dereg_mr(a.mr);
	odpemu_dereg_mr(b.mr);
	h_pair_down(&p);
	odpemu_close_device(p.s[0].ctx);
	odpemu_close_device(p.s[1].ctx);
	for (int i = 0; i < 200 && sessions(watcher) != 1; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	T_EQ(sessions(watcher), 1, "the parent's session ended while its child lives");
	odpemu_close_device(watcher);

	close(pipefd[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		T_CHECK(0, "the child did not exit normally (status %#x)", status);
	else
		T_EQ(WEXITSTATUS(status), 0, "child's check that failed (0: none)");
}

/* ThreadSanitizer does not support a thread started in the child of a threaded process
 * (it dies: "dup thread with used id"): there the child only allocates, and 5 rounds do
 * (each costs TSan a second; the hang this chases is AddressSanitizer's). */
#if defined(__SANITIZE_THREAD__)
#define NO_THREADS_AFTER_FORK 1
#define FRESH_ROUNDS 5
#else
#define NO_THREADS_AFTER_FORK 0
#define FRESH_ROUNDS 50
#endif

static void *nothing(void *arg)
{
	return arg;
}

/* Wait for pid at most ms milliseconds; kill it if it is still there. Its status. */
static int wait_bounded(pid_t pid, int ms)
{
	int status = -1;

	for (int i = 0; i < ms / 10 && waitpid(pid, &status, WNOHANG) == 0; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	if (!WIFEXITED(status) && !WIFSIGNALED(status)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	return status;
}

/* In a fresh process: open (the library's threads start), fork at once; the child
 * allocates a few sizes and starts a thread. 0: the child ended well within 5 s. */
static int open_then_fork(struct h_env *e)
{
	struct odpemu_context *c = h_open(e, 0);
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		pthread_t t;

		for (size_t n = 16; n <= 4096; n *= 2)
			free(calloc(1, n));
		if (NO_THREADS_AFTER_FORK)
			_exit(0);
		_exit(pthread_create(&t, NULL, nothing, NULL) || pthread_join(t, NULL));
	}
	st = pid < 0 ? -1 : wait_bounded(pid, 5000);
	odpemu_close_device(c);
	return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static void fork_after_open(struct h_env *e)
{
	unsigned bad = 0;

	fflush(stdout);		/* the children must not print what is buffered here */
	for (int i = 0; i < FRESH_ROUNDS; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(open_then_fork(e));
		st = pid < 0 ? -1 : wait_bounded(pid, 10000);
		bad += st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	T_CHECK(!bad, "%u of %d forks right after a first open: the child hung or failed", bad,
		FRESH_ROUNDS);
}

static void body(struct h_env *e)
{
	fork_after_open(e);	/* first: the test process has no thread of ours yet */
	fork_rules(e);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "e2e-fork", .seed = 7, .watchdog_s = 120,
		.open = H_OPEN_NONE, .body = body };

	return h_main(argc, argv, &t);
}
