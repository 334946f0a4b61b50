/* SPDX-License-Identifier: MIT */
/*
 * bw — the bandwidth loops. The client keeps tx_depth messages in flight on every QP,
 * posting round-robin over the QPs (iteration i on QP i % qps, so a receiver knows which
 * iteration it holds), and counts completions; the send server keeps receives posted.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "progress.h"
#include "run.h"

#define POLL_BATCH 64

/* The local slot of iteration i: QP q's own ring of tx_depth slots, which completes in
 * order, so a slot is free again when its message completes. */
static unsigned local_slot(const struct perf_run *r, uint64_t i)
{
	unsigned qps = r->cfg->qps;

	return (unsigned)(i % qps) * r->lay.tx_depth + (unsigned)(i / qps % r->lay.tx_depth);
}

static uint64_t remote_addr(const struct perf_run *r, uint64_t i)
{
	return r->peer.addr + i % r->peer.slots * r->peer.stride;
}

/* --regcache, before message i from slot ls (mem.h): from the slot's second message on,
 * the buffer is freed and mapped again at its address; message i is written there (READ:
 * zeros, which a READ through a stale registration leaves as they are), and its
 * registration is taken from the cache. */
static void rc_before(struct perf_run *r, uint64_t i, unsigned ls)
{
	uint8_t *buf;

	if (i >= r->local.nslots && area_rc_remap(&r->local, ls))
		exit(1);
	buf = area_slot(&r->local, ls);
	if (r->cfg->test == PERF_READ)
		memset(buf, 0, r->size);
	else
		pattern_fill(buf, r->size, i);
	if (area_rc_get(&r->local, ls))
		exit(1);
}

static void post_one(struct perf_run *r, uint64_t i)
{
	unsigned ls = local_slot(r, i);
	uint8_t *buf = r->local.nslots ? area_slot(&r->local, ls) : NULL;
	struct odpemu_sge sge = { (uintptr_t)buf, (uint32_t)r->size, 0 };
	struct odpemu_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
				     .send_flags = ODPEMU_SEND_SIGNALED };

	if (r->cfg->regcache && buf)
		rc_before(r, i, ls);
	if (buf)
		sge.lkey = area_lkey(&r->local, ls);
	run_wr_target(r, &wr, remote_addr(r, i));
	if ((r->cfg->test == PERF_WRITE || r->cfg->test == PERF_SEND) && r->cfg->verify &&
	    !r->cfg->regcache)
		pattern_fill(buf, r->size, i);
	run_post_send(r, (unsigned)(i % r->cfg->qps), &wr);
}

/* A message completed: check what it brought back (--verify), renew its buffer
 * (--churn) or give its registration back (--regcache). */
static void completed(struct perf_run *r, const struct odpemu_wc *wc)
{
	unsigned ls = local_slot(r, wc->wr_id);
	uint8_t *buf = r->local.nslots ? area_slot(&r->local, ls) : NULL;

	if (r->cfg->verify && r->cfg->test == PERF_READ) {
		run_check_data(r, buf, wc->wr_id, "read");
	} else if (r->cfg->verify && r->cfg->test == PERF_ATOMIC) {
		uint64_t v;

		memcpy(&v, buf, 8);
		if (v)
			run_verify_fail(r, "fetch-and-add of message %" PRIu64 " fetched %" PRIu64
					", want 0 (each target is added to once per lap)",
					wc->wr_id, v);
		else
			r->verify.checked++;
	}
	if (r->cfg->regcache && r->local.nslots)
		area_rc_put(&r->local, ls);
	else if (r->cfg->churn && r->local.nslots &&
		 area_churn(&r->local, r->dev, ls, &r->odp.retired))
		perf_die("--churn: cannot re-allocate a buffer");
}

struct bw_loop {
	uint64_t posted, done, limit, next_pass;
	unsigned inflight[PERF_MAX_QPS];
	double start, end_at;
	struct perf_peak peak;
	struct perf_progress prog;
};

/* Post while the next QP in turn has room; drain and sync at a lap's end. */
static void post_some(struct perf_run *r, struct bw_loop *l)
{
	while (l->posted < l->limit) {
		unsigned q = (unsigned)(l->posted % r->cfg->qps);

		if (l->inflight[q] == r->lay.tx_depth)
			return;
		if (l->posted == l->next_pass) {
			double t0 = perf_now();

			if (l->done < l->posted)
				return;		/* drain the lap first */
			if (pass_request(r, l->posted)) {
				l->limit = l->posted;
				return;
			}
			peak_pause(&l->peak, perf_now() - t0);
			l->next_pass += r->peer.slots;
		}
		post_one(r, l->posted++);
		l->inflight[q]++;
	}
}

int bw_client(struct perf_run *r)
{
	struct odpemu_wc wc[POLL_BATCH];
	struct bw_loop l = { .limit = r->iters ? r->iters : UINT64_MAX, .next_pass = UINT64_MAX };
	unsigned spins = 0;
	double now;

	if (run_has_passes(r->cfg))
		l.next_pass = r->peer.slots;
	l.start = now = perf_now();
	l.end_at = r->iters ? 0 : l.start + r->cfg->duration;
	peak_init(&l.peak, l.start, r->cfg->qps * r->lay.tx_depth);
	progress_init(&l.prog, r->o->json, l.start);
	while (l.done < l.posted || l.posted < l.limit) {
		int n;

		post_some(r, &l);
		n = run_poll(r, r->qps.scq, wc, POLL_BATCH);
		for (int k = 0; k < n; k++) {
			completed(r, &wc[k]);
			l.inflight[wc[k].wr_id % r->cfg->qps]--;
		}
		l.done += (uint64_t)n;
		now = perf_now();
		if (!n)
			perf_idle(&spins);
		else
			spins = 0;
		peak_tick(&l.peak, now, l.done, r->size);
		progress_tick(&l.prog, now, l.done, r->size);
		if ((l.end_at && now >= l.end_at) || r->verify.failed)
			l.limit = l.posted;
	}
	progress_end(&l.prog);
	r->done = l.done;
	r->res.secs = now - l.start - r->excluded;
	r->res.bw_peak = l.peak.best;
	return 0;
}

/* ---- send: the server's receives ---- */

/* QP q's k-th receive goes to slot k of its own part of the target. */
static unsigned recv_slot(const struct perf_run *r, unsigned q, uint64_t k)
{
	return q * r->lay.per_qp + (unsigned)(k % r->lay.per_qp);
}

/* Post QP q's k-th receive. --cold: entering a quarter of the QP's slots, give the
 * quarter two ahead fresh pages; every receive still outstanding lies in the current or
 * the previous quarter (layout.c keeps rx_depth within a quarter). */
static void post_recv_k(struct perf_run *r, unsigned q, uint64_t k)
{
	unsigned quarter = r->lay.per_qp / 4, s = recv_slot(r, q, k);

	if (r->cfg->cold && quarter && k % quarter == 0) {
		unsigned ahead = (unsigned)((k / quarter + 2) % 4);

		area_recycle(&r->target, q * r->lay.per_qp + ahead * quarter, quarter);
	}
	run_post_recv(r, q, k, area_slot(&r->target, s), r->target.lkey, r->size);
}

int bw_server_send_prepare(struct perf_run *r)
{
	for (unsigned q = 0; q < r->cfg->qps; q++) {
		r->recv_posted[q] = r->recv_done[q] = 0;
		for (unsigned k = 0; k < r->lay.rx_depth; k++)
			post_recv_k(r, q, r->recv_posted[q]++);
	}
	return 0;
}

static void received(struct perf_run *r, const struct odpemu_wc *wc)
{
	int q = qps_index(&r->qps, wc->qp_num);
	uint64_t k;

	if (q < 0)
		perf_die("a receive completion of an unknown QP 0x%x", wc->qp_num);
	k = r->recv_done[q]++;
	if (wc->byte_len != r->size)
		run_verify_fail(r, "send message %" PRIu64 " carried %u bytes, want %" PRIu64,
				k * r->cfg->qps + (unsigned)q, wc->byte_len, r->size);
	else if (r->cfg->verify)
		run_check_data(r, area_slot(&r->target, recv_slot(r, (unsigned)q, k)),
			       k * r->cfg->qps + (unsigned)q, "received");
	post_recv_k(r, (unsigned)q, r->recv_posted[q]++);
}

int bw_server_send(struct perf_run *r)
{
	struct odpemu_wc wc[POLL_BATCH];
	uint64_t got = 0;
	unsigned spins = 0;
	double next_watch = 0;

	while (!r->peer_done || got < r->peer_n) {
		int n = run_poll(r, r->qps.rcq, wc, POLL_BATCH);

		for (int k = 0; k < n; k++)
			received(r, &wc[k]);
		got += (uint64_t)n;
		if (n) {
			spins = 0;
			continue;
		}
		perf_idle(&spins);
		if (perf_now() >= next_watch) {
			run_watch_peer(r);
			next_watch = perf_now() + 0.005;
		}
	}
	r->done = got;
	return 0;
}
