/* SPDX-License-Identifier: MIT */
/*
 * pass — recycling and checking the server's target slots between laps (bw write, read,
 * atomic, flush; lat read, atomic, flush).
 *
 * The client walks the server's slots, iteration i on slot i % slots. Before it wraps it
 * drains its queue and sends PASS n=i: the server checks what the lap left (WRITE: each
 * slot holds its iteration's pattern; atomics: each counter was added to once), then
 * makes the slots new for the next lap (--cold: fresh pages; READ: the next lap's
 * pattern; atomics: zero) and answers. The wait is not timed (r->excluded).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pattern.h"
#include "run.h"

/* Slots [0, count) hold iterations base...; check them. */
static void check_lap(struct perf_run *r, uint64_t base, uint64_t count)
{
	enum perf_test t = r->cfg->test;

	if (!r->cfg->verify)
		return;
	if (count > r->target.nslots)
		count = r->target.nslots;	/* a lap never holds more (client.c) */
	for (uint64_t j = 0; j < count && !r->verify.failed; j++) {
		uint8_t *slot = area_slot(&r->target, (unsigned)j);

		if (t == PERF_WRITE) {
			run_check_data(r, slot, base + j, "received");
		} else if (t == PERF_ATOMIC) {
			uint64_t v;

			memcpy(&v, slot, 8);
			if (v != 1)
				run_verify_fail(r, "atomic target of message %" PRIu64 " holds %"
						PRIu64 " after one fetch-and-add of 1 to 0", base + j, v);
			else
				r->verify.checked++;
		}
	}
}

/* Make the slots ready for iterations base, base + 1, ... */
static void new_lap(struct perf_run *r, uint64_t base)
{
	enum perf_test t = r->cfg->test;

	if (r->cfg->cold)
		area_recycle(&r->target, 0, r->target.nslots);
	if (!r->cfg->verify)
		return;
	for (unsigned j = 0; j < r->target.nslots; j++) {
		uint8_t *slot = area_slot(&r->target, j);

		if (t == PERF_READ)
			pattern_fill(slot, r->size, base + j);
		else if (t == PERF_ATOMIC)
			memset(slot, 0, 8);
	}
}

void pass_prepare(struct perf_run *r)
{
	if (r->cfg->verify)
		new_lap(r, 0);
}

int pass_request(struct perf_run *r, uint64_t n)
{
	char line[NET_LINE];
	double t0 = perf_now();

	if (net_send(r->conn, "PASS n=%" PRIu64, n) ||
	    net_recv(r->conn, line, sizeof(line), -1) <= 0)
		perf_die("the peer closed the connection (it failed or was stopped: see its "
			 "output)");
	if (wire_is(line, "FAIL")) {
		r->verify.failed = true;
		snprintf(r->verify.msg, sizeof(r->verify.msg), "%.*s",
			 (int)sizeof(r->verify.msg) - 1, line + 5);
		perf_err("VERIFY FAILED (at the server): %s", r->verify.msg);
	} else if (!wire_is(line, "PASSED")) {
		perf_die("unexpected answer from the peer: '%.60s'", line);
	}
	r->excluded += perf_now() - t0;
	return r->verify.failed ? -1 : 0;
}

int pass_serve(struct perf_run *r)
{
	char line[NET_LINE];
	uint64_t base = 0;

	for (;;) {
		uint64_t n;

		if (net_recv(r->conn, line, sizeof(line), -1) <= 0)
			perf_die("the peer closed the connection (it failed or was stopped: see "
				 "its output)");
		n = kv_u64(line, "n", 0);
		if (n < base)
			perf_die("the peer's count went back (%" PRIu64 " < %" PRIu64 ")", n, base);
		check_lap(r, base, n - base);
		if (wire_is(line, "DONE")) {
			r->peer_done = true;
			r->peer_n = n;
			return 0;
		}
		if (!wire_is(line, "PASS"))
			perf_die("unexpected message from the peer: '%.60s'", line);
		if (r->verify.failed) {
			net_send(r->conn, "FAIL %s", r->verify.msg);
			continue;	/* the client stops and sends DONE */
		}
		new_lap(r, n);
		base = n;
		if (net_send(r->conn, "PASSED"))
			perf_die("the peer closed the connection");
	}
}
