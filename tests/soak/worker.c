/* SPDX-License-Identifier: MIT */
/*
 * worker — one client process of the soak: opens its own sessions on both hosts, then runs
 * seeded rounds (rc.c, ud.c, victim.c) until the parent sets stop, reopening its sessions
 * every few rounds. It exits with _exit: exit() would run the harness's atexit handler,
 * which tears the hosts down.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "round.h"

const char *const soak_mem_name[SOAK_NMEM] = { "pinned", "odp", "implicit" };

long long soak_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

void soak_nap(void)
{
	nanosleep(&(struct timespec){ 0, 50000 }, NULL);
}

void soak_fail(struct soak_stats *st, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!SOAK_ADD(st->failures, 1))
		snprintf(st->first_failure, sizeof(st->first_failure), "%s", msg);
	fprintf(stderr, "soak: FAIL (worker %d): %s\n", (int)getpid(), msg);
}

bool soak_stopping(const struct soak_w *w)
{
	return __atomic_load_n(&w->cfg->sh->stop, __ATOMIC_RELAXED);
}

struct odpemu_mr *soak_reg(struct soak_w *w, struct odpemu_pd *pd, void *buf, size_t len,
			   enum soak_mem k)
{
	struct odpemu_mr *mr;

	if (k == SOAK_IMPLICIT)
		mr = odpemu_reg_mr(pd, NULL, SIZE_MAX, SOAK_ALL_ACCESS | ODPEMU_ACCESS_ON_DEMAND);
	else
		mr = odpemu_reg_mr(pd, buf, len, SOAK_ALL_ACCESS |
				   (k == SOAK_ODP ? ODPEMU_ACCESS_ON_DEMAND : 0));
	if (!mr)
		soak_fail(w->st, "reg_mr (%s, %zu bytes): %s (%s)", soak_mem_name[k], len,
			  strerror(errno), odpemu_last_error(pd->context));
	return mr;
}

uint64_t soak_fault_failed(struct soak_w *w, struct odpemu_mr *mr)
{
	unsigned long long v;

	if (!mr)
		return 0;
	v = h_counter(mr->context, ODPEMU_COUNTERS_MR, mr->handle, "fault_failed");
	if (v == ~0ull) {
		soak_fail(w->st, "MR counters of handle %u: %s", mr->handle, strerror(errno));
		return 0;
	}
	return v;
}

uint32_t soak_len(struct soak_w *w, uint32_t max)
{
	uint64_t r = t_below(&w->rng, 100);
	uint32_t len;

	if (r < 35)
		len = (uint32_t)t_below(&w->rng, 65);			/* 0 .. 64 */
	else if (r < 70)
		len = 4096 + (uint32_t)t_below(&w->rng, 129) - 64;	/* around a page */
	else
		len = (uint32_t)t_below(&w->rng, max + 1u);
	return len > max ? max : len;
}

int soak_objects_of(struct odpemu_context *ctx, pid_t pid)
{
	enum { MAX = 4096 };
	struct odpemu_counter *c = calloc(MAX, sizeof(*c));
	char qp[32], mr[32];
	int n, found = 0;

	if (!c)
		return -1;
	snprintf(qp, sizeof(qp), "qp %d", (int)pid);
	snprintf(mr, sizeof(mr), "mr %d", (int)pid);
	n = odpemu_query_counters(ctx, ODPEMU_COUNTERS_OBJECTS, 0, c, MAX);
	for (int i = 0; i < n; i++)
		found += !strcmp(c[i].name, qp) || !strcmp(c[i].name, mr);
	free(c);
	return n < 0 ? -1 : found;
}

void soak_drain_events(struct soak_w *w)
{
	for (int i = 0; i < 2; i++) {
		struct odpemu_context *ctx = w->ctx[i];
		struct odpemu_async_event ev;
		int fl = fcntl(ctx->async_fd, F_GETFL);

		if (fl >= 0 && !(fl & O_NONBLOCK))
			fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
		for (int k = 0; k < 1000 && odpemu_get_async_event(ctx, &ev) == 0; k++) {
			switch (ev.event_type) {
			case ODPEMU_EVENT_QP_FATAL:
			case ODPEMU_EVENT_QP_REQ_ERR:
			case ODPEMU_EVENT_QP_ACCESS_ERR:
				SOAK_ADD(w->st->qp_events, 1);
				break;
			case ODPEMU_EVENT_GID_CHANGE:	/* the veth's IPv6 link-local address */
			case ODPEMU_EVENT_PORT_ACTIVE:
			case ODPEMU_EVENT_COMM_EST:
			case ODPEMU_EVENT_SQ_DRAINED:
			case ODPEMU_EVENT_QP_LAST_WQE_REACHED:
				break;
			default:
				soak_fail(w->st, "async event %s on device %d: nothing here causes one",
					  odpemu_event_type_str(ev.event_type), i);
				break;
			}
			odpemu_ack_async_event(&ev);
		}
	}
}

/* h_open, but without exit() on failure (the harness's atexit handler would tear the
 * hosts down from this child). */
struct odpemu_context *soak_open(struct soak_w *w, int i)
{
	struct odpemu_device **list = odpemu_get_device_list(NULL);
	struct odpemu_context *ctx = NULL;

	for (int k = 0; list && list[k]; k++)
		if (!strcmp(odpemu_get_device_name(list[k]), w->e->host[i].name))
			ctx = odpemu_open_device(list[k]);
	if (list)
		odpemu_free_device_list(list);
	if (!ctx) {
		soak_fail(w->st, "cannot open device %s: %s", w->e->host[i].name, strerror(errno));
		_exit(1);
	}
	return ctx;
}

static void open_both(struct soak_w *w)
{
	for (int i = 0; i < 2; i++)
		w->ctx[i] = soak_open(w, i);
}

static void close_both(struct soak_w *w)
{
	for (int i = 0; i < 2; i++) {
		int rc = odpemu_close_device(w->ctx[i]);

		if (rc)
			soak_fail(w->st, "close_device %d: %s", i, strerror(rc));
		w->ctx[i] = NULL;
	}
}

/* RC most of the time; datagrams and a killed peer now and then. The warm-up worker runs
 * each kind in turn; --only one kind. */
static void one_round(struct soak_w *w)
{
	uint64_t r = t_below(&w->rng, 100);
	enum soak_round k = r < 70 ? SOAK_RC : r < 90 ? SOAK_UD : SOAK_VICTIM;

	if (w->warmup)
		k = (enum soak_round)(w->round % SOAK_NROUND);
	if (w->cfg->only >= 0)
		k = (enum soak_round)w->cfg->only;
	switch (k) {
	case SOAK_RC:
		soak_round_rc(w);
		break;
	case SOAK_UD:
		soak_round_ud(w);
		break;
	default:
		soak_round_victim(w);
		break;
	}
}

void soak_worker_main(const struct soak_worker_cfg *cfg)
{
	struct soak_w w = { .cfg = cfg, .e = cfg->e, .st = &cfg->sh->slot[cfg->slot],
		.rng = { cfg->seed }, .pat = cfg->seed * 31 + 7, .warmup = cfg->max_rounds };
	unsigned reopen = 8 + (unsigned)t_below(&w.rng, 16);

	/* The harness's handlers would tear the hosts down: not ours to do. */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	alarm(0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(1);
	w.st->pid = getpid();
	open_both(&w);
	for (; !soak_stopping(&w) && (!cfg->max_rounds || w.round < cfg->max_rounds);
	     w.round++) {
		if (w.round && w.round % reopen == 0) {
			close_both(&w);		/* a new session on both daemons */
			open_both(&w);
			SOAK_ADD(w.st->reopens, 1);
		}
		one_round(&w);
	}
	close_both(&w);
	fflush(NULL);
	_exit(w.st->failures ? 1 : 0);
}
