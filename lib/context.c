/* SPDX-License-Identifier: MIT */
/* The context's own state: locks, tables, the dead flag, the last error line, the
 * doorbell. Opening and closing a session with the daemon is open.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib_int.h"

/* One completion vector per possible CPU, as rxe offers (num_possible_cpus()): programs
 * pick a vector by CPU (UCX: the lowest CPU of its mask). Vectors only name where a CQ's
 * events would be steered; here every CQ's events reach its channel alike. */
static int comp_vectors(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	return n > 0 && n < 65536 ? (int)n : 1;
}

struct lib_context *lib_ctx_alloc(void)
{
	struct lib_context *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->pub.device = &c->dev;
	c->pub.async_fd = -1;
	c->pub.num_comp_vectors = comp_vectors();
	c->sock = -1;
	c->cmd_fd = -1;
	c->doorbell_fd = -1;
	c->relay_peer = -1;
	pthread_mutex_init(&c->ctl_lock, NULL);
	pthread_mutex_init(&c->err_lock, NULL);
	pthread_mutex_init(&c->tab_lock, NULL);
	pthread_mutex_init(&c->ev_lock, NULL);
	atomic_init(&c->dead, false);
	atomic_init(&c->live_check_ns, 0);
	return c;
}

/* Free what a table holds with the given destructor, then the table. */
#define LIB_FREE_TABLE(t, type, fn) do { \
		for (uint32_t i_ = 0; i_ < (t)->n; i_++) \
			fn((type *)(t)->e[i_].obj); \
		lib_table_free(t); \
	} while (0)

/* QPs first: they point at CQs and SRQs; CQs before channels. */
void lib_ctx_free(struct lib_context *c)
{
	LIB_FREE_TABLE(&c->qps, struct lib_qp, lib_qp_free);
	LIB_FREE_TABLE(&c->srqs, struct lib_srq, lib_srq_free);
	LIB_FREE_TABLE(&c->cqs, struct lib_cq, lib_cq_free);
	LIB_FREE_TABLE(&c->channels, struct odpemu_comp_channel, lib_channel_free);
	LIB_FREE_TABLE(&c->mrs, struct lib_mr, lib_mr_free);
	LIB_FREE_TABLE(&c->pds, struct odpemu_pd, free);
	pthread_mutex_destroy(&c->ctl_lock);
	pthread_mutex_destroy(&c->err_lock);
	pthread_mutex_destroy(&c->tab_lock);
	pthread_mutex_destroy(&c->ev_lock);
	free(c);
}

bool lib_ctx_dead(struct lib_context *c)
{
	return atomic_load_explicit(&c->dead, memory_order_relaxed) || lib_forked(c) ||
	       (c->status && atomic_load_explicit(&c->status->fatal, memory_order_relaxed));
}

void lib_ctx_mark_dead(struct lib_context *c)
{
	atomic_store_explicit(&c->dead, true, memory_order_relaxed);
}

void lib_set_error(struct lib_context *c, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&c->err_lock);
	va_start(ap, fmt);
	vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&c->err_lock);
}

ODPEMU_EXPORT const char *odpemu_last_error(struct odpemu_context *context)
{
	return context ? lib_ctx(context)->last_error : "";
}

/* The full fence orders the caller's producer store before the marks and the load of
 * `sleeping`; the daemon stores `sleeping` before its last look at the marks, so one of
 * the two sides sees the other (no lost wake-up; ipc_db.h). */
void lib_doorbell_obj(struct lib_context *c, uint32_t handle)
{
	uint64_t one = 1;

	atomic_thread_fence(memory_order_seq_cst);
	if (c->db)
		ipc_db_mark(c->db, handle);
	if (!c->status || !atomic_load_explicit(&c->status->sleeping, memory_order_seq_cst))
		return;
	if (write(c->doorbell_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is already non-zero, the daemon will wake anyway. */
	}
}

void lib_doorbell(struct lib_context *c)
{
	lib_doorbell_obj(c, 0);		/* handle 0 is no object: every queue (ipc_db.h) */
}
