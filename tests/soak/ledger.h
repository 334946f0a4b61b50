/* SPDX-License-Identifier: MIT */
/*
 * ledger — every WR of one round of traffic (a QP pair: side 0 and side 1, each a send and
 * a receive queue, each side one CQ) completes exactly once, in the order it was posted,
 * with a status the round can justify.
 *
 * A WR's wr_id is its queue (bit 63: receive) and its sequence number on that queue, so a
 * completion is the one expected (the queue's next), or out of order, duplicated or
 * unknown: a failure either way. A queue that completed a WR in error completes nothing
 * with success after it.
 *
 * Errors are judged when the round ends (ledger_judge), against what the round knows
 * happened to each side: inj[s], the fault failures injected into side s's memory (its
 * MR's fault_failed), and peer_killed[s] (the process holding side s's peer was killed).
 *  - root errors (anything but WR_FLUSH_ERR): at most one per side; LOC_PROT_ERR needs
 *    inj[s] (a local SGE or a receive buffer whose fault failed), REM_ACCESS_ERR and
 *    REM_OP_ERR need inj[peer] (the responder's fault failed: NAK), RETRY_EXC_ERR needs
 *    inj[peer] (its QP went to ERR and the NAK was lost) or peer_killed[s]; any other
 *    status is never justified;
 *  - WR_FLUSH_ERR before the teardown needs a justified root error on the side, or
 *    inj[s] (the side's QP went to ERR as a responder: no completion says so);
 *  - WR_FLUSH_ERR after ledger_teardown (the round moved both QPs to ERR) needs a round
 *    that had errors, or teardown_expected (UD: receives nobody filled).
 */
#ifndef ODPEMU_TESTS_SOAK_LEDGER_H
#define ODPEMU_TESTS_SOAK_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "odpemu/odpemu.h"
#include "soak.h"

struct ledger_q {
	uint64_t posted, done;	/* next sequence number to post, to complete */
	bool failed;		/* completed a WR in error */
	void **ops;		/* the round's record of WR seq, at seq % cap */
};

struct ledger_err {
	int root;		/* the first root error's status, -1: none */
	uint32_t root_verr;	/* its vendor_err (odpemu_vendor_err_str) */
	unsigned n_root, n_flush, n_teardown;
};

struct ledger {
	struct soak_stats *st;
	char what[96];		/* "rc round 12 (...)": names the round in messages */
	unsigned cap;		/* WRs a queue may have outstanding */
	struct ledger_q q[2][2];	/* [side][0: send, 1: receive] */
	struct ledger_err err[2];
	bool peer_killed[2];
	bool teardown, teardown_expected;
};

/* Called for each completion that is the one expected, with the round's record. */
typedef void (*ledger_cb)(void *round, int side, const struct odpemu_wc *wc, void *op);

void ledger_init(struct ledger *l, struct soak_stats *st, const char *what, unsigned cap);
void ledger_free(struct ledger *l);
/* The wr_id for the next WR on (side, recv); op is kept for its completion. */
uint64_t ledger_post(struct ledger *l, int side, int recv, void *op);
/* The last ledger_post of (side, recv) was not posted after all. */
void ledger_unpost(struct ledger *l, int side, int recv);
uint64_t ledger_outstanding(const struct ledger *l);
uint64_t ledger_outstanding_q(const struct ledger *l, int side, int recv);
/* A completion other than success was seen (either side). */
bool ledger_any_error(const struct ledger *l);
/* Poll both CQs once; each completion is accounted for, then handed to cb. The number
 * taken, or -1 if a CQ failed (device gone: a failure). */
int ledger_poll(struct ledger *l, struct odpemu_cq *const cq[2], ledger_cb cb, void *round);
/* Poll until nothing is outstanding or timeout_ms passes without a completion; false if
 * something is still outstanding (with must, a failure naming the first missing WR). An
 * error completion before the teardown ends must (and cuts the wait to 3 s): what it
 * stopped completes only when the teardown flushes it. */
bool ledger_drain(struct ledger *l, struct odpemu_cq *const cq[2], ledger_cb cb, void *round,
		  int timeout_ms, bool must);
/* Move both QPs to ERR (every outstanding WR flushes) and drain. */
void ledger_teardown(struct ledger *l, struct odpemu_qp *const qp[2],
		     struct odpemu_cq *const cq[2], ledger_cb cb, void *round);
/* Judge the round's errors (see above); counts justified ones, records failures. */
void ledger_judge(struct ledger *l, const uint64_t inj[2]);

#endif
