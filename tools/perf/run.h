/* SPDX-License-Identifier: MIT */
/* run — one message size's run on one side: its QPs, buffers, the peer's endpoint, and
 * what came out. The loops (bw.c, lat.c, pass.c) work on it. */
#ifndef ODPEMU_TOOLS_PERF_RUN_H
#define ODPEMU_TOOLS_PERF_RUN_H

#include "dev.h"
#include "layout.h"
#include "mem.h"
#include "net.h"
#include "odp.h"
#include "stats.h"
#include "wire.h"

struct perf_verify {
	bool failed;
	uint64_t checked;	/* messages whose every byte was checked */
	uint64_t stale;		/* --regcache: of them, messages that were not this one's
				 * (an earlier message's bytes; READ: they never arrived) */
	char msg[256];
};

struct perf_run {
	const struct perf_opts *o;
	const struct perf_cfg *cfg;
	struct perf_dev *dev;
	struct perf_conn *conn;
	bool server;
	uint64_t size;
	uint64_t iters;		/* 0: until cfg->duration */
	struct perf_layout lay;
	struct perf_qps qps;
	struct perf_area local, target;
	struct perf_ep peer;
	struct perf_odp_track odp;
	uint64_t done;		/* messages completed (the client's count, on both sides) */
	bool peer_done;		/* server: the client's DONE arrived (peer_n messages) */
	uint64_t peer_n;
	double excluded;	/* seconds of recycling/verify syncs, not timed */
	struct perf_result res;
	struct perf_samples samples;
	struct perf_verify verify;
	/* send --bw server: receives posted and completed per QP */
	uint64_t recv_posted[PERF_MAX_QPS], recv_done[PERF_MAX_QPS];
};

/* Record a --verify mismatch (the first one), loudly. */
void run_verify_fail(struct perf_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A failed completion ends the run: one line with the status and what to do. */
void run_wc_fail(struct perf_run *r, const struct odpemu_wc *wc) __attribute__((noreturn));
/* Check slot data against iteration iter's pattern; false (recorded) on a mismatch.
 * --regcache: a message that is an earlier one's whole (READ: a buffer still all zero,
 * as the sender left it) is counted stale and passes here; report.c judges the count. */
bool run_check_data(struct perf_run *r, const uint8_t *buf, uint64_t iter, const char *where);
/* Post one send WR; dies on failure. */
void run_post_send(struct perf_run *r, unsigned q, struct odpemu_send_wr *wr);
/* The opcode of the run's test, its remote target at raddr in the peer's region (READ,
 * WRITE, atomic, FLUSH) and INLINE for a WRITE or SEND up to --inline: what every message
 * of a run posts. */
void run_wr_target(const struct perf_run *r, struct odpemu_send_wr *wr, uint64_t raddr);
void run_post_recv(struct perf_run *r, unsigned q, uint64_t wr_id, uint8_t *buf, uint32_t lkey,
		   uint64_t len);
/* Poll the CQ for up to max completions, failing the run on an error status. */
int run_poll(struct perf_run *r, struct odpemu_cq *cq, struct odpemu_wc *wc, int max);
/* Look at the side channel without blocking: dies when the peer closed it (it failed or
 * was stopped) or sent something unexpected; true once the client's DONE arrived
 * (r->peer_done, r->peer_n). */
bool run_watch_peer(struct perf_run *r);
/* Wait for one completion on cq, watching the peer every few milliseconds: true with
 * the completion in wc, false when `stop_on_done` and the client's DONE arrived. */
bool run_wait_one(struct perf_run *r, struct odpemu_cq *cq, struct odpemu_wc *wc,
		  bool stop_on_done);

/* Do recycle/verify passes run over TCP for this run (bw write/read/atomic/flush, lat
 * read/atomic/flush)? */
bool run_has_passes(const struct perf_cfg *c);

/* The loops. 0, or -1 (printed). */
int bw_client(struct perf_run *r);
int bw_server_send_prepare(struct perf_run *r);
int bw_server_send(struct perf_run *r);
int lat_prepare(struct perf_run *r);
int lat_client(struct perf_run *r);
int lat_server(struct perf_run *r);
/* Client: ask the server to check and recycle the target slots of iterations [.., n). */
int pass_request(struct perf_run *r, uint64_t n);
/* Server: fill/zero the target before the run; serve PASS requests until DONE. */
void pass_prepare(struct perf_run *r);
int pass_serve(struct perf_run *r);

#endif
