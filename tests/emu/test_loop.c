/* SPDX-License-Identifier: MIT */
/* emu/loop, each kind (io_uring, epoll): emu_loop_cancel — after it returns, no completion
 * of the cancelled emu_io is dispatched, whether its request was queued, armed, or had
 * completions waiting (in the CQ; epoll: a ready fd), and also when called from a
 * completion callback; the step — it runs before each look, so no completion is
 * dispatched before a step that began after it was posted; emu_loop_cancel_sync — one last
 * completion, -ECANCELED without F_MORE; and the multishot image — a readiness not taken
 * in is not reported again until new news or emu_loop_rearm (epoll), F_MORE set. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "io/loop.h"
#include "t.h"
#include "tloop.h"

static enum emu_loop_kind kind;

/* What is queued reaches the kernel (the epoll kind has nothing queued). */
static void submit(struct emu_loop *l)
{
	if (l->kind == EMU_LOOP_URING)
		io_uring_submit(&l->ring);
}

struct probe {
	struct emu_io io;
	unsigned calls;
	bool dead;			/* cancelled: must not be called any more */
	struct probe *victim;		/* cancelled by this probe's callback */
	struct emu_loop *loop;
	int last_res;
	bool last_more;
};

static void probe_fn(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct probe *p = (struct probe *)io;

	T_CHECK(!p->dead, "completion dispatched after cancel");
	p->calls++;
	p->last_res = cqe->res;
	p->last_more = cqe->flags & IORING_CQE_F_MORE;
	if (p->victim) {
		T_EQ(emu_loop_cancel(p->loop, &p->victim->io), 0, "cancel from a callback");
		p->victim->dead = true;
	}
}

static void kick(int fd)
{
	uint64_t one = 1;

	T_CHECK(write(fd, &one, sizeof(one)) == sizeof(one), "eventfd write");
}

/* stage 0: queued, not submitted; 1: armed; 2: a completion waiting in the CQ */
static void test_cancel(int stage)
{
	struct emu_loop l;
	struct probe p = { .io.fn = probe_fn };
	int fd = eventfd(0, EFD_NONBLOCK);

	T_EQ(emu_loop_init(&l, 8, kind), 0, "loop");
	emu_loop_poll_in(&l, fd, &p.io);
	if (stage >= 1)
		submit(&l);
	if (stage >= 2 && kind == EMU_LOOP_EPOLL) {
		kick(fd);	/* ready in the set, not yet taken by a wait */
	} else if (stage >= 2) {
		kick(fd);
		for (int i = 0; i < 100 && !io_uring_cq_ready(&l.ring); i++)
			io_uring_get_events(&l.ring);
		T_CHECK(io_uring_cq_ready(&l.ring) > 0, "stage %d: completion waiting", stage);
	}
	T_EQ(emu_loop_cancel(&l, &p.io), 0, "cancel");
	p.dead = true;
	kick(fd);
	emu_loop_run_once(&l, emu_now_ns() + 20000000);
	T_EQ(p.calls, 0, "never dispatched");
	T_EQ(emu_loop_cancel(&l, &p.io), 0, "cancel again: nothing left");
	close(fd);
	emu_loop_fini(&l);
}

/* b's callback cancels a, then itself, in the same dispatch that holds a's completion. */
static void test_cancel_in_callback(void)
{
	struct emu_loop l;
	struct probe a = { .io.fn = probe_fn }, b = { .io.fn = probe_fn };
	int fa = eventfd(0, EFD_NONBLOCK), fb = eventfd(0, EFD_NONBLOCK);
	uint64_t end = emu_now_ns() + 1000000000ull;

	T_EQ(emu_loop_init(&l, 8, kind), 0, "loop");
	b.loop = &l;
	b.victim = &a;
	emu_loop_poll_in(&l, fb, &b.io);
	emu_loop_poll_in(&l, fa, &a.io);
	submit(&l);
	kick(fb);
	kick(fa);
	while (!b.calls && emu_now_ns() < end)
		emu_loop_run_once(&l, emu_now_ns() + 10000000);
	T_EQ(b.calls, 1, "b ran");
	b.victim = &b;
	kick(fb);
	kick(fa);
	emu_loop_run_once(&l, emu_now_ns() + 20000000);	/* b cancels itself */
	kick(fb);
	kick(fa);
	emu_loop_run_once(&l, emu_now_ns() + 20000000);
	T_CHECK(a.dead && b.dead, "both cancelled");
	T_CHECK(a.calls <= 1 && b.calls == 2, "a %u b %u", a.calls, b.calls);
	close(fa);
	close(fb);
	emu_loop_fini(&l);
}

/* The owner's state and the step's view of it: how often the step ran and what state it
 * last saw. */
struct witness {
	unsigned state, steps, seen;
};

struct step_probe {
	struct emu_io io;
	struct witness *w;
	unsigned seen_at_dispatch, steps_at_dispatch;	/* 0: not dispatched */
	int chain_fd;		/* >= 0: the callback moves the state on and kicks this fd */
};

static void step_fn(void *arg)
{
	struct witness *w = arg;

	w->steps++;
	w->seen = w->state;
}

static void step_probe_fn(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct step_probe *p = (struct step_probe *)io;

	(void)cqe;
	p->seen_at_dispatch = p->w->seen;
	p->steps_at_dispatch = p->w->steps;
	if (p->chain_fd >= 0) {
		p->w->state++;
		kick(p->chain_fd);
		p->chain_fd = -1;
	}
}

/* A completion is dispatched only after a step that saw the state its event was posted
 * in; one posted from a callback waits for the next look and its step. */
static void test_step(void)
{
	struct witness w = { 0 };
	struct emu_loop l;
	struct step_probe a = { .io.fn = step_probe_fn, .w = &w, .chain_fd = -1 };
	struct step_probe b = { .io.fn = step_probe_fn, .w = &w, .chain_fd = -1 };
	int fa = eventfd(0, EFD_NONBLOCK), fb = eventfd(0, EFD_NONBLOCK);
	uint64_t end = emu_now_ns() + 1000000000ull;

	T_EQ(emu_loop_init(&l, 8, kind), 0, "loop");
	emu_loop_set_step(&l, step_fn, &w);
	emu_loop_poll_in(&l, fa, &a.io);
	emu_loop_poll_in(&l, fb, &b.io);
	submit(&l);
	w.state = 1;
	a.chain_fd = fb;	/* a's callback moves the state to 2 and posts b's event */
	kick(fa);
	for (int i = 0; i < 100 && !b.steps_at_dispatch && emu_now_ns() < end; i++)
		emu_loop_run_once(&l, emu_now_ns() + 10000000);
	T_EQ(a.seen_at_dispatch, 1, "a dispatched after a step that saw its event's state");
	T_EQ(b.seen_at_dispatch, 2, "b dispatched after a step that saw its event's state");
	T_CHECK(b.steps_at_dispatch > a.steps_at_dispatch,
		"b, posted from a's callback, waited for the next look's step (steps %u, %u)",
		a.steps_at_dispatch, b.steps_at_dispatch);
	close(fa);
	close(fb);
	emu_loop_fini(&l);
}

/* Run until p has been called `calls` times or 1 s passed. */
static void run_until(struct emu_loop *l, struct probe *p, unsigned calls)
{
	uint64_t end = emu_now_ns() + 1000000000ull;

	while (p->calls < calls && emu_now_ns() < end)
		emu_loop_run_once(l, emu_now_ns() + 10000000);
}

/* cancel_sync: after the completions of an armed poll (F_MORE), one last completion,
 * -ECANCELED without F_MORE, and nothing after it. */
static void test_cancel_sync(void)
{
	struct emu_loop l;
	struct probe p = { .io.fn = probe_fn };
	int fd = eventfd(0, EFD_NONBLOCK);
	uint64_t v;

	T_EQ(emu_loop_init(&l, 8, kind), 0, "loop");
	emu_loop_poll_in(&l, fd, &p.io);
	kick(fd);
	run_until(&l, &p, 1);
	T_CHECK(p.calls == 1 && p.last_res > 0 && p.last_more,
		"armed: ready, F_MORE (calls %u res %d more %d)", p.calls, p.last_res, p.last_more);
	T_CHECK(read(fd, &v, sizeof(v)) == sizeof(v), "eventfd read");
	T_EQ(emu_loop_cancel_sync(&l, &p.io), 0, "cancel_sync");
	run_until(&l, &p, 2);
	T_CHECK(p.calls == 2 && p.last_res == -ECANCELED && !p.last_more,
		"last completion: -ECANCELED, no F_MORE (calls %u res %d more %d)", p.calls,
		p.last_res, p.last_more);
	p.dead = true;
	kick(fd);
	emu_loop_run_once(&l, emu_now_ns() + 20000000);
	close(fd);
	emu_loop_fini(&l);
}

/* The epoll kind is edge-triggered like a multishot poll: an fd left ready is not reported
 * again by itself; new news or emu_loop_rearm report it. */
static void test_edges(void)
{
	struct emu_loop l;
	struct probe p = { .io.fn = probe_fn };
	int fd = eventfd(0, EFD_NONBLOCK);

	T_EQ(emu_loop_init(&l, 8, EMU_LOOP_EPOLL), 0, "loop");
	emu_loop_poll_in(&l, fd, &p.io);
	kick(fd);
	run_until(&l, &p, 1);
	T_EQ(p.calls, 1, "reported once");
	emu_loop_run_once(&l, emu_now_ns() + 20000000);
	T_EQ(p.calls, 1, "still ready, not taken in: not reported again by itself");
	emu_loop_rearm(&l, &p.io);
	run_until(&l, &p, 2);
	T_EQ(p.calls, 2, "rearm: reported again");
	kick(fd);
	run_until(&l, &p, 3);
	T_EQ(p.calls, 3, "new news: reported");
	T_EQ(emu_loop_cancel(&l, &p.io), 0, "cancel");
	close(fd);
	emu_loop_fini(&l);
}

int main(void)
{
	static const enum emu_loop_kind kinds[] = { EMU_LOOP_URING, EMU_LOOP_EPOLL };
	char why[512];
	/* the io_uring kind where the host report says the daemon could run it */
	unsigned first = t_loop_kind(why, sizeof(why)) == EMU_LOOP_URING ? 0 : 1;

	if (first)
		printf("the io_uring kind is not run here: %s\n", why);
	for (unsigned k = first; k < 2; k++) {
		kind = kinds[k];
		for (int stage = 0; stage < 3; stage++)
			test_cancel(stage);
		test_cancel_in_callback();
		test_step();
		test_cancel_sync();
	}
	test_edges();
	return t_done("loop");
}
