/* SPDX-License-Identifier: MIT */
/* run — helpers the loops share (run.h). */
#include "run.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"

/* How often a waiting loop looks at the side channel. */
#define WATCH_EVERY_S 0.005

void run_verify_fail(struct perf_run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->verify.failed)
		return;
	r->verify.failed = true;
	va_start(ap, fmt);
	vsnprintf(r->verify.msg, sizeof(r->verify.msg), fmt, ap);
	va_end(ap);
	perf_err("VERIFY FAILED: %s", r->verify.msg);
}

/* --regcache: did message iter go through a stale registration? WRITE and SEND then
 * carry the bytes of the message the registration was made for; a READ lands in the old
 * pages, and the churned buffer keeps the zeros bw.c wrote there. */
static bool stale(const struct perf_run *r, const uint8_t *buf, uint64_t iter)
{
	uint64_t earlier;

	if (!r->cfg->regcache)
		return false;
	if (r->cfg->test != PERF_READ)
		return pattern_earlier(buf, r->size, iter, &earlier);
	for (uint64_t k = 0; k < r->size; k++)
		if (buf[k])
			return false;
	return true;
}

bool run_check_data(struct perf_run *r, const uint8_t *buf, uint64_t iter, const char *where)
{
	uint8_t got = 0, want = 0;
	int64_t off = pattern_check(buf, r->size, iter, &got, &want);

	if (off < 0 || stale(r, buf, iter)) {
		r->verify.checked++;
		r->verify.stale += off >= 0;
		return true;
	}
	run_verify_fail(r, "%s %s message %" PRIu64 " (%" PRIu64 " bytes): byte %" PRId64
			" is 0x%02x, want 0x%02x", perf_test_name(r->cfg->test), where, iter,
			r->size, off, got, want);
	return false;
}

static const char *hint(enum odpemu_wc_status s)
{
	switch (s) {
	case ODPEMU_WC_RNR_RETRY_EXC_ERR:
		return "the responder answered RNR NAK more than --rnr-retry times (page faults "
		       "under --fault-policy rnr, or no receive posted): raise --rnr-retry (7 = "
		       "forever) or --min-rnr-timer";
	case ODPEMU_WC_RETRY_EXC_ERR:
		return "the peer stopped answering (its process or daemon died, or packets are "
		       "lost)";
	case ODPEMU_WC_REM_ACCESS_ERR:
		return "the peer refused the access: a page fault failed there (fault injection?) "
		       "or the range is not registered";
	case ODPEMU_WC_LOC_PROT_ERR:
		return "a local buffer could not be reached (its page fault failed)";
	case ODPEMU_WC_WR_FLUSH_ERR:
		return "the QP had already failed";
	default:
		return "see the daemons' logs";
	}
}

void run_wc_fail(struct perf_run *r, const struct odpemu_wc *wc)
{
	perf_die("%s failed at message %" PRIu64 ": %s (%s): %s", perf_test_name(r->cfg->test),
		 wc->wr_id, odpemu_wc_status_str(wc->status), odpemu_vendor_err_str(wc->vendor_err),
		 hint(wc->status));
}

void run_wr_target(const struct perf_run *r, struct odpemu_send_wr *wr, uint64_t raddr)
{
	switch (r->cfg->test) {
	case PERF_WRITE:
		wr->opcode = ODPEMU_WR_RDMA_WRITE;
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = r->peer.rkey;
		break;
	case PERF_SEND: wr->opcode = ODPEMU_WR_SEND; break;
	case PERF_READ:
		wr->opcode = ODPEMU_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = r->peer.rkey;
		return;
	case PERF_ATOMIC:
		wr->opcode = ODPEMU_WR_ATOMIC_FETCH_AND_ADD;
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.compare_add = 1;
		wr->wr.atomic.rkey = r->peer.rkey;
		return;
	case PERF_FLUSH:
		wr->opcode = ODPEMU_WR_FLUSH;
		wr->num_sge = 0;
		wr->wr.flush.remote_addr = raddr;
		wr->wr.flush.rkey = r->peer.rkey;
		wr->wr.flush.len = (uint32_t)r->size;
		wr->wr.flush.type = 1;	/* global visibility */
		return;
	}
	if (r->size <= r->cfg->inline_size)	/* WRITE, SEND: --inline */
		wr->send_flags |= ODPEMU_SEND_INLINE;
}

void run_post_send(struct perf_run *r, unsigned q, struct odpemu_send_wr *wr)
{
	struct odpemu_send_wr *bad;
	int rc = odpemu_post_send(r->qps.qp[q], wr, &bad);

	if (rc)
		perf_die("post_send on %s: %s", r->dev->name, strerror(rc));
}

void run_post_recv(struct perf_run *r, unsigned q, uint64_t wr_id, uint8_t *buf, uint32_t lkey,
		   uint64_t len)
{
	struct odpemu_sge sge = { (uintptr_t)buf, (uint32_t)len, lkey };
	struct odpemu_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = odpemu_post_recv(r->qps.qp[q], &wr, &bad);

	if (rc)
		perf_die("post_recv on %s: %s", r->dev->name, strerror(rc));
}

int run_poll(struct perf_run *r, struct odpemu_cq *cq, struct odpemu_wc *wc, int max)
{
	int n = odpemu_poll_cq(cq, max, wc);

	if (n < 0)
		perf_die("the daemon of %s went away (poll_cq failed): start odpemud again",
			 r->dev->name);
	for (int i = 0; i < n; i++)
		if (wc[i].status != ODPEMU_WC_SUCCESS)
			run_wc_fail(r, &wc[i]);
	return n;
}

bool run_watch_peer(struct perf_run *r)
{
	char line[NET_LINE];
	int got;

	if (r->peer_done)
		return true;
	got = net_recv(r->conn, line, sizeof(line), 0);
	if (got < 0)
		perf_die("the peer closed the connection (it failed or was stopped: see its "
			 "output)");
	if (!got)
		return false;
	if (!r->server || !wire_is(line, "DONE"))
		perf_die("unexpected message from the peer: '%.60s'", line);
	r->peer_done = true;
	r->peer_n = kv_u64(line, "n", 0);
	return true;
}

bool run_wait_one(struct perf_run *r, struct odpemu_cq *cq, struct odpemu_wc *wc,
		  bool stop_on_done)
{
	double next = perf_now() + WATCH_EVERY_S;
	unsigned spins = 0;

	while (!run_poll(r, cq, wc, 1)) {
		perf_idle(&spins);
		if (perf_now() < next)
			continue;
		next = perf_now() + WATCH_EVERY_S;
		if (run_watch_peer(r) && stop_on_done)
			return false;
	}
	return true;
}

bool run_has_passes(const struct perf_cfg *c)
{
	bool pingpong = c->lat && (c->test == PERF_WRITE || c->test == PERF_SEND);
	bool data = c->test == PERF_WRITE || c->test == PERF_READ || c->test == PERF_ATOMIC;

	if (pingpong || (c->test == PERF_SEND))
		return false;
	return (c->verify && data) || (c->cold && c->odp != PERF_ODP_OFF);
}
