/*
 * SPDX-License-Identifier: MIT
 *
 * lat — the latency loops, one message in flight, as perftest's *_lat:
 *  - write: ping-pong. Each side spins on the last byte of its own target slot until the
 *    peer's WRITE lands there, then WRITEs back; a sample is half the round trip;
 *  - send: ping-pong through posted receives; half the round trip;
 *  - read, atomic, flush: the client times each operation to its completion; the server
 *    only serves laps (pass.c).
 * --cold: each side walks its own target region and gives it fresh pages at a lap's
 * start, at a moment when the peer cannot be writing there (it waits for our reply).
 */
#include <inttypes.h>
#include <string.h>

#include "pattern.h"
#include "progress.h"
#include "run.h"

static bool pingpong(const struct perf_cfg *c)
{
	return c->test == PERF_WRITE || c->test == PERF_SEND;
}

static uint64_t remote_addr(const struct perf_run *r, uint64_t i)
{
	return r->peer.addr + i % r->peer.slots * r->peer.stride;
}

static uint8_t *target_slot(const struct perf_run *r, uint64_t i)
{
	return area_slot(&r->target, (unsigned)(i % r->target.nslots));
}

/* The message of iteration i in our local slot (renewed first with --churn). */
static uint8_t *fill_local(struct perf_run *r, uint64_t i)
{
	uint8_t *buf;

	if (r->cfg->churn && i && area_churn(&r->local, r->dev, 0, &r->odp.retired))
		perf_die("--churn: cannot re-allocate a buffer");
	buf = area_slot(&r->local, 0);
	if (r->cfg->verify)
		pattern_fill(buf, r->size, i);
	else if (r->cfg->test == PERF_WRITE)
		buf[r->size - 1] = pattern_marker(i);
	return buf;
}

static void post_op(struct perf_run *r, uint64_t i, uint8_t *buf)
{
	struct odpemu_sge sge = { (uintptr_t)buf, (uint32_t)r->size,
				  buf ? area_lkey(&r->local, 0) : 0 };
	struct odpemu_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
				     .send_flags = ODPEMU_SEND_SIGNALED };

	run_wr_target(r, &wr, remote_addr(r, i));
	run_post_send(r, 0, &wr);
}

/* Spin on the last byte of our target slot until message i's marker is there: false
 * when the client's DONE came first (server, -D). */
static bool spin_marker(struct perf_run *r, uint64_t i)
{
	const uint8_t *last = target_slot(r, i) + r->size - 1;
	uint8_t want = pattern_marker(i);
	double next = perf_now() + 0.005;
	unsigned spins = 0;

	/* acquire: the marker is the last byte the peer's WRITE lands; once it is seen, the
	 * rest of the message is too (a load-acquire, which ThreadSanitizer understands,
	 * rather than a fence, which it does not) */
	while (__atomic_load_n(last, __ATOMIC_ACQUIRE) != want) {
		perf_idle(&spins);
		if (perf_now() < next)
			continue;
		next = perf_now() + 0.005;
		if (run_watch_peer(r) && r->server)
			return false;
	}
	return true;
}

/* Wait until the peer's message i is in our target: false when the client's DONE came
 * first (server, -D). */
static bool wait_message(struct perf_run *r, uint64_t i)
{
	struct odpemu_wc wc;

	if (r->cfg->test == PERF_SEND)
		return run_wait_one(r, r->qps.rcq, &wc, true);
	return spin_marker(r, i);
}

static void post_recv_i(struct perf_run *r, uint64_t i)
{
	run_post_recv(r, 0, i, target_slot(r, i), r->target.lkey, r->size);
}

int lat_prepare(struct perf_run *r)
{
	if (r->cfg->test == PERF_SEND)
		for (uint64_t i = 0; i < r->lay.rx_depth; i++)
			post_recv_i(r, i);
	return 0;
}

/* After message i arrived: check it, and post the receive two ahead. */
static void received(struct perf_run *r, uint64_t i)
{
	if (r->cfg->verify)
		run_check_data(r, target_slot(r, i), i, "received");
	if (r->cfg->test == PERF_SEND)
		post_recv_i(r, i + r->lay.rx_depth);
}

/* Our target's lap ends before iteration i: give it fresh pages (--cold). */
static void maybe_recycle(struct perf_run *r, uint64_t i)
{
	if (r->cfg->cold && i && i % r->target.nslots == 0)
		area_recycle(&r->target, 0, r->target.nslots);
}

static void one_pingpong(struct perf_run *r, uint64_t i)
{
	struct odpemu_wc wc;
	double t0;
	uint8_t *buf;

	maybe_recycle(r, i);
	buf = fill_local(r, i);
	t0 = perf_now();
	post_op(r, i, buf);
	wait_message(r, i);
	samples_add(&r->samples, (perf_now() - t0) * 1e6 / 2);
	run_wait_one(r, r->qps.scq, &wc, false);
	received(r, i);
}

static void one_op(struct perf_run *r, uint64_t i)
{
	struct odpemu_wc wc;
	uint8_t *buf = NULL;
	double t0;

	if (run_has_passes(r->cfg) && i && i % r->peer.slots == 0)
		pass_request(r, i);
	if (r->local.nslots) {
		if (r->cfg->churn && i && area_churn(&r->local, r->dev, 0, &r->odp.retired))
			perf_die("--churn: cannot re-allocate a buffer");
		buf = area_slot(&r->local, 0);
	}
	t0 = perf_now();
	post_op(r, i, buf);
	run_wait_one(r, r->qps.scq, &wc, false);
	samples_add(&r->samples, (perf_now() - t0) * 1e6);
	if (r->cfg->verify && r->cfg->test == PERF_READ) {
		run_check_data(r, buf, i, "read");
	} else if (r->cfg->verify && r->cfg->test == PERF_ATOMIC) {
		uint64_t v;

		memcpy(&v, buf, 8);
		if (v)
			run_verify_fail(r, "fetch-and-add of message %" PRIu64 " fetched %" PRIu64
					", want 0", i, v);
		else
			r->verify.checked++;
	}
}

int lat_client(struct perf_run *r)
{
	uint64_t limit = r->iters ? r->iters : UINT64_MAX, i;
	double start = perf_now(), end_at = r->iters ? 0 : start + r->cfg->duration;
	struct perf_progress prog;

	progress_init(&prog, r->o->json, start);
	for (i = 0; i < limit && !r->verify.failed; i++) {
		double now;

		if (pingpong(r->cfg))
			one_pingpong(r, i);
		else
			one_op(r, i);
		now = perf_now();
		progress_tick(&prog, now, i + 1, r->size);
		if (end_at && now >= end_at)
			limit = i + 1;
	}
	progress_end(&prog);
	r->done = i;
	r->res.secs = perf_now() - start - r->excluded;
	return 0;
}

int lat_server(struct perf_run *r)
{
	uint64_t i;

	if (!pingpong(r->cfg))
		return pass_serve(r);
	for (i = 0; !r->iters || i < r->iters; i++) {
		struct odpemu_wc wc;

		if (!wait_message(r, i))
			break;
		received(r, i);
		/* the client sends message i + 1 only after our reply: recycle now */
		maybe_recycle(r, i + 1);
		post_op(r, i, fill_local(r, i));
		run_wait_one(r, r->qps.scq, &wc, false);
	}
	r->done = i;
	return 0;
}
