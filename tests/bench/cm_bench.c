/* SPDX-License-Identifier: MIT */
/*
 * cm-bench — rdma_cm connection setup through odpemu's daemons (issue 13's figure): the
 * time from the initiator's connect (REQ) to the acceptor's ESTABLISHED (the RTU), with
 * libodpemu's CM calls (include/odpemu/cm.h) in one driver process for both sides, two
 * daemons in two network namespaces as root (else loopback). Sequential: one connection
 * at a time, median and p99. Parallel: 64 connects posted at once, then all accepted,
 * the time until the last ESTABLISHED. QP transitions are not part of it (librdmacm does
 * those with modify_qp around the CM exchange): the CM carries made-up QP numbers.
 * Prints figures; never fails on time.
 *
 * usage: cm-bench [N]   (N sequential connections, default 2000); needs ODPEMUD.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "harness.h"
#include "odpemu/cm.h"

#define PARALLEL 64
#define WAIT_MS 5000

static struct h_env env;

static void die(const char *what)
{
	fprintf(stderr, "cm-bench: %s: %s\n", what, strerror(errno));
	h_down(&env);
	exit(1);
}

/* The next event on ch that is not an earlier connection's teardown; it must be `want`. */
static void next(struct odpemu_cm_channel *ch, enum odpemu_cm_event_type want,
		 struct odpemu_cm_event *ev)
{
	struct pollfd p = { ch->fd, POLLIN, 0 };

	do {
		if (poll(&p, 1, WAIT_MS) != 1 || odpemu_cm_get_event(ch, ev))
			die("no CM event");
	} while (ev->type != want && (ev->type == ODPEMU_CM_EVENT_DISCONNECTED ||
				      ev->type == ODPEMU_CM_EVENT_TIMEWAIT_EXIT));
	if (ev->type != want) {
		errno = EPROTO;
		fprintf(stderr, "cm-bench: got %s, wanted %s\n", odpemu_cm_event_str(ev->type),
			odpemu_cm_event_str(want));
		die("unexpected event");
	}
}

struct side {
	struct odpemu_context *ctx;
	struct odpemu_cm_channel *ch;
	struct odpemu_cm_addr addr;
};

static void side_up(struct side *s, int host)
{
	s->ctx = env.ctx[host] ? env.ctx[host] : (env.ctx[host] = h_open(&env, host));
	if (!(s->ch = odpemu_cm_create_channel(s->ctx)))
		die("CM channel");
	if (odpemu_query_gid(s->ctx, 1, 0, &s->addr.gid))
		die("query_gid");
}

static struct odpemu_cm_qp fake_qp(uint32_t n)
{
	return (struct odpemu_cm_qp){ .qpn = 0x100 + n, .psn = n * 7, .qp_type = ODPEMU_QPT_RC,
		.responder_resources = 4, .initiator_depth = 4, .retry_count = 7,
		.rnr_retry_count = 7, .mtu = ODPEMU_MTU_4096 };
}

/* One connection, then its teardown; the setup time in ns. */
static uint64_t one(struct side *a, struct side *b, uint16_t port, uint32_t n)
{
	struct odpemu_cm_addr src = a->addr, dst = b->addr;
	struct odpemu_cm_qp q = fake_qp(n);
	struct odpemu_cm_event ev;
	uint32_t ca, cb;
	uint64_t t0, t;

	src.port = (uint16_t)(40000 + n % 20000);
	dst.port = port;
	t0 = bench_now_ns();
	if (odpemu_cm_connect(a->ch, ODPEMU_CM_PS_TCP, &src, &dst, &q, NULL, 0, n, &ca))
		die("connect");
	next(b->ch, ODPEMU_CM_EVENT_CONNECT_REQUEST, &ev);
	cb = ev.conn;
	if (odpemu_cm_accept(b->ctx, cb, NULL, &q, NULL, 0, n))
		die("accept");
	next(a->ch, ODPEMU_CM_EVENT_CONNECT_RESPONSE, &ev);
	if (odpemu_cm_establish(a->ctx, ca, NULL, 0))
		die("establish");
	next(b->ch, ODPEMU_CM_EVENT_ESTABLISHED, &ev);
	t = bench_now_ns() - t0;
	odpemu_cm_destroy(a->ctx, ca);	/* DREQ; b answers it from its daemon */
	odpemu_cm_destroy(b->ctx, cb);
	return t;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Drain what teardown sends (DISCONNECTED and friends of destroyed connections). */
static void drain(struct odpemu_cm_channel *ch)
{
	struct odpemu_cm_event ev;
	struct pollfd p = { ch->fd, POLLIN, 0 };

	while (poll(&p, 1, 50) == 1 && !odpemu_cm_get_event(ch, &ev))
		;
}

static double parallel(struct side *a, struct side *b, uint16_t port)
{
	uint32_t ca[PARALLEL], cb[PARALLEL];
	struct odpemu_cm_event ev;
	uint64_t t0 = bench_now_ns();

	for (uint32_t i = 0; i < PARALLEL; i++) {
		struct odpemu_cm_addr src = a->addr, dst = b->addr;
		struct odpemu_cm_qp q = fake_qp(i);

		src.port = (uint16_t)(30000 + i);
		dst.port = port;
		if (odpemu_cm_connect(a->ch, ODPEMU_CM_PS_TCP, &src, &dst, &q, NULL, 0, i, &ca[i]))
			die("connect");
	}
	for (uint32_t i = 0; i < PARALLEL; i++) {
		struct odpemu_cm_qp q = fake_qp(i);

		next(b->ch, ODPEMU_CM_EVENT_CONNECT_REQUEST, &ev);
		cb[i] = ev.conn;
		if (odpemu_cm_accept(b->ctx, ev.conn, NULL, &q, NULL, 0, i))
			die("accept");
	}
	for (uint32_t i = 0; i < PARALLEL; i++) {
		next(a->ch, ODPEMU_CM_EVENT_CONNECT_RESPONSE, &ev);
		if (odpemu_cm_establish(a->ctx, ev.conn, NULL, 0))
			die("establish");
	}
	for (uint32_t i = 0; i < PARALLEL; i++)
		next(b->ch, ODPEMU_CM_EVENT_ESTABLISHED, &ev);
	t0 = bench_now_ns() - t0;
	for (uint32_t i = 0; i < PARALLEL; i++) {
		odpemu_cm_destroy(a->ctx, ca[i]);
		odpemu_cm_destroy(b->ctx, cb[i]);
	}
	return (double)t0 / 1e3;
}

static void default_daemon(void)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n;

	if (getenv("ODPEMUD") && *getenv("ODPEMUD"))
		return;
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		return;
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(path, sizeof(path), "%s/../../emu/odpemud", self);
	setenv("ODPEMUD", path, 1);
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
	struct side a = { 0 }, b = { 0 };
	uint64_t *t;
	uint32_t l;
	uint16_t port;

	if (!n || n > 1000000 || !(t = calloc(n, sizeof(*t))))
		return 2;
	default_daemon();
	h_up(&env, NULL, NULL, 300);
	side_up(&a, 0);
	side_up(&b, 1);
	if (odpemu_cm_listen(b.ch, ODPEMU_CM_PS_TCP, &(struct odpemu_cm_addr){ .port = 0 },
			     PARALLEL, 0, &l, &port))
		die("listen");
	for (unsigned i = 0; i < 50; i++)	/* warm-up */
		one(&a, &b, port, i);
	drain(a.ch);
	drain(b.ch);
	for (unsigned i = 0; i < n; i++) {
		t[i] = one(&a, &b, port, i);
		if (i % 64 == 63) {	/* keep the teardown events from piling up */
			drain(a.ch);
			drain(b.ch);
		}
	}
	qsort(t, n, sizeof(*t), cmp_u64);
	printf("hosts: %s\n", env.netns ? "two network namespaces, veth" : "loopback");
	printf("connection setup (connect -> acceptor's ESTABLISHED), %u sequential: median %.1f "
	       "us, p99 %.1f us, %.0f connections/s\n", n, (double)t[n / 2] / 1e3,
	       (double)t[(size_t)(n * 0.99)] / 1e3, 1e9 / (double)t[n / 2]);
	drain(a.ch);
	drain(b.ch);
	{
		double us = parallel(&a, &b, port);

		printf("connection setup, %d at once: %.1f us for all (%.1f us each, %.0f "
		       "connections/s)\n", PARALLEL, us, us / PARALLEL, PARALLEL * 1e6 / us);
	}
	printf("goal (issue 13): median <= 200 us\n");
	free(t);
	odpemu_cm_destroy_channel(a.ch);
	odpemu_cm_destroy_channel(b.ch);
	return h_down(&env) ? 1 : 0;
}
