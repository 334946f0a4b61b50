/* SPDX-License-Identifier: MIT */
/* fork: a child inherits the parent's contexts (their sockets, rings and status pages),
 * but a daemon session belongs to the process that opened it. In the child every
 * inherited context is as good as dead: control calls fail with ENODEV before touching
 * the socket, post and poll fail before touching the rings (which are the parent's
 * memory: a child's poll would steal the parent's completions). The child also closes
 * its copies of the control sockets, so the parent's session still ends when the
 * parent does. A child opens the device again to use it, as with rdma-core.
 *
 * The pid is cached in the child handler of pthread_atfork (getpid() is a system call),
 * so the fast-path check is one load. Pinned memory becomes the child's own copy there
 * first (pin_fork.c). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib_int.h"

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ctx_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lib_context **ctx_list;		/* every open context of this process */
static size_t ctx_n, ctx_cap;
static _Atomic pid_t self_pid;

/* Every context still open was opened by the parent: close our copy of its socket, and
 * start its locks afresh (a parent thread may have held one at the fork, and that thread
 * does not exist here). */
static void in_child(void)
{
	lib_pin_fork_child();	/* first: until then, heap pages may be the parent's */
	atomic_store_explicit(&self_pid, getpid(), memory_order_relaxed);
	lib_relay_forget();	/* its relay peers are closed there */
	for (size_t i = 0; i < ctx_n; i++) {
		struct lib_context *c = ctx_list[i];

		if (c->sock >= 0)
			close(c->sock);
		if (c->cmd_fd >= 0)	/* an import's copy of another end: the same */
			close(c->cmd_fd);
		c->sock = c->cmd_fd = c->relay_peer = -1;
		pthread_mutex_init(&c->ctl_lock, NULL);
		pthread_mutex_init(&c->err_lock, NULL);
		pthread_mutex_init(&c->tab_lock, NULL);
		pthread_mutex_init(&c->ev_lock, NULL);
		snprintf(c->last_error, sizeof(c->last_error), "this device was opened by "
			 "process %d before a fork: open it again in this process", (int)c->pid);
	}
	pthread_mutex_unlock(&ctx_list_lock);
}

static void before_fork(void)
{
	pthread_mutex_lock(&ctx_list_lock);
}

static void in_parent(void)
{
	pthread_mutex_unlock(&ctx_list_lock);
}

static void setup(void)
{
	atomic_store_explicit(&self_pid, getpid(), memory_order_relaxed);
	pthread_atfork(before_fork, in_parent, in_child);
}

int lib_fork_track(struct lib_context *c)
{
	int rc = 0;

	pthread_once(&fork_once, setup);
	c->pid = atomic_load_explicit(&self_pid, memory_order_relaxed);
	pthread_mutex_lock(&ctx_list_lock);
	if (ctx_n == ctx_cap) {
		size_t cap = ctx_cap ? ctx_cap * 2 : 8;
		struct lib_context **l = realloc(ctx_list, cap * sizeof(*l));

		if (l) {
			ctx_list = l;
			ctx_cap = cap;
		} else {
			rc = -ENOMEM;
		}
	}
	if (!rc)
		ctx_list[ctx_n++] = c;
	pthread_mutex_unlock(&ctx_list_lock);
	return rc;
}

void lib_fork_untrack(struct lib_context *c)
{
	pthread_mutex_lock(&ctx_list_lock);
	for (size_t i = 0; i < ctx_n; i++)
		if (ctx_list[i] == c) {
			ctx_list[i] = ctx_list[--ctx_n];
			break;
		}
	pthread_mutex_unlock(&ctx_list_lock);
}

struct lib_context *lib_fork_pick(bool (*want)(const struct lib_context *c))
{
	struct lib_context *found = NULL;

	pthread_mutex_lock(&ctx_list_lock);
	for (size_t i = 0; i < ctx_n && !found; i++)
		if (want(ctx_list[i]))
			found = ctx_list[i];
	pthread_mutex_unlock(&ctx_list_lock);
	return found;
}

bool lib_forked(const struct lib_context *c)
{
	return c->pid && c->pid != atomic_load_explicit(&self_pid, memory_order_relaxed);
}
