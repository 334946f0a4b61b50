/* SPDX-License-Identifier: MIT */
/* ledger — see ledger.h. */
#include "ledger.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECV_BIT (1ull << 63)

static const char *const qname[2] = { "send", "receive" };

void ledger_init(struct ledger *l, struct soak_stats *st, const char *what, unsigned cap)
{
	memset(l, 0, sizeof(*l));
	l->st = st;
	l->cap = cap;
	snprintf(l->what, sizeof(l->what), "%s", what);
	for (int s = 0; s < 2; s++) {
		l->err[s].root = -1;
		for (int r = 0; r < 2; r++)
			if (!(l->q[s][r].ops = calloc(cap, sizeof(void *))))
				abort();
	}
}

void ledger_free(struct ledger *l)
{
	for (int s = 0; s < 2; s++)
		for (int r = 0; r < 2; r++)
			free(l->q[s][r].ops);
}

uint64_t ledger_post(struct ledger *l, int side, int recv, void *op)
{
	struct ledger_q *q = &l->q[side][recv];
	uint64_t seq = q->posted++;

	if (q->posted - q->done > l->cap)
		abort();	/* the round posted beyond its queue: a bug of the test */
	q->ops[seq % l->cap] = op;
	SOAK_ADD(l->st->posted, 1);
	return seq | (recv ? RECV_BIT : 0);
}

void ledger_unpost(struct ledger *l, int side, int recv)
{
	l->q[side][recv].posted--;
	SOAK_ADD(l->st->posted, (uint64_t)-1);
}

uint64_t ledger_outstanding_q(const struct ledger *l, int side, int recv)
{
	return l->q[side][recv].posted - l->q[side][recv].done;
}

uint64_t ledger_outstanding(const struct ledger *l)
{
	uint64_t n = 0;

	for (int s = 0; s < 2; s++)
		for (int r = 0; r < 2; r++)
			n += ledger_outstanding_q(l, s, r);
	return n;
}

bool ledger_any_error(const struct ledger *l)
{
	return l->q[0][0].failed || l->q[0][1].failed || l->q[1][0].failed || l->q[1][1].failed;
}

/* The completion's record, or NULL (a failure recorded) if it is not the one expected. */
static void *complete(struct ledger *l, int side, const struct odpemu_wc *wc)
{
	int recv = !!(wc->wr_id & RECV_BIT);
	struct ledger_q *q = &l->q[side][recv];
	uint64_t seq = wc->wr_id & ~RECV_BIT;
	struct ledger_err *e = &l->err[side];

	if ((unsigned)wc->status < SOAK_NSTATUS)
		SOAK_ADD(l->st->by_status[wc->status], 1);
	if (seq != q->done) {
		soak_fail(l->st, "%s: side %d %s queue: completion of WR %" PRIu64 " (%s), expected "
			  "WR %" PRIu64 " of %" PRIu64 " posted: %s", l->what, side, qname[recv], seq,
			  odpemu_wc_status_str(wc->status), q->done, q->posted,
			  seq < q->done ? "a second completion" : "out of order or never posted");
		return NULL;
	}
	q->done++;
	if (wc->status == ODPEMU_WC_SUCCESS) {
		if (q->failed)
			soak_fail(l->st, "%s: side %d %s WR %" PRIu64 " succeeded after an error "
				  "completion on its queue", l->what, side, qname[recv], seq);
		return q->ops[seq % l->cap];
	}
	q->failed = true;
	if (wc->status != ODPEMU_WC_WR_FLUSH_ERR) {
		if (!e->n_root++) {
			e->root = (int)wc->status;
			e->root_verr = wc->vendor_err;
		}
		if (l->teardown)
			fprintf(stderr, "soak: %s: side %d: %s (%s) during the teardown\n", l->what,
				side, odpemu_wc_status_str(wc->status),
				odpemu_vendor_err_str(wc->vendor_err));
	} else if (l->teardown) {
		e->n_teardown++;
	} else {
		e->n_flush++;
	}
	return q->ops[seq % l->cap];
}

int ledger_poll(struct ledger *l, struct odpemu_cq *const cq[2], ledger_cb cb, void *round)
{
	struct odpemu_wc wc[16];
	int total = 0;

	for (int s = 0; s < 2; s++) {
		int n;

		if (!cq[s])
			continue;
		if ((n = odpemu_poll_cq(cq[s], (int)T_ARRAY_SIZE(wc), wc)) < 0) {
			soak_fail(l->st, "%s: poll_cq on side %d failed: the device is gone", l->what, s);
			return -1;
		}
		for (int i = 0; i < n; i++) {
			void *op = complete(l, s, &wc[i]);

			if (op && cb)
				cb(round, s, &wc[i], op);
		}
		total += n;
	}
	return total;
}

bool ledger_drain(struct ledger *l, struct odpemu_cq *const cq[2], ledger_cb cb, void *round,
		  int timeout_ms, bool must)
{
	long long last = soak_ms();

	while (ledger_outstanding(l)) {
		int n;

		if (must && !l->teardown && ledger_any_error(l)) {
			/* an error came in the meantime: what it stopped may never complete */
			must = false;
			timeout_ms = timeout_ms < 3000 ? timeout_ms : 3000;
		}
		n = ledger_poll(l, cq, cb, round);

		if (n < 0)
			return false;
		if (n > 0) {
			last = soak_ms();
			continue;
		}
		if (soak_ms() - last <= timeout_ms) {
			nanosleep(&(struct timespec){ 0, 50000 }, NULL);	/* two cores */
			continue;
		}
		for (int s = 0; s < 2 && must; s++)
			for (int r = 0; r < 2; r++)
				if (ledger_outstanding_q(l, s, r))
					soak_fail(l->st, "%s: side %d %s WR %" PRIu64 " (and %" PRIu64 " after "
						  "it) never completed (%d ms)%s; outstanding: %" PRIu64 " %"
						  PRIu64 " / %" PRIu64 " %" PRIu64 " (side 0 send recv / side "
						  "1)", l->what, s, qname[r], l->q[s][r].done,
						  ledger_outstanding_q(l, s, r) - 1, timeout_ms,
						  l->teardown ? ", not even flushed by ERR" : "",
						  ledger_outstanding_q(l, 0, 0), ledger_outstanding_q(l, 0, 1),
						  ledger_outstanding_q(l, 1, 0), ledger_outstanding_q(l, 1, 1));
		return false;
	}
	return true;
}

void ledger_teardown(struct ledger *l, struct odpemu_qp *const qp[2],
		     struct odpemu_cq *const cq[2], ledger_cb cb, void *round)
{
	l->teardown = true;
	for (int s = 0; s < 2; s++) {
		struct odpemu_qp_attr a = { .qp_state = ODPEMU_QPS_ERR };
		int rc;

		if (qp[s] && (rc = odpemu_modify_qp(qp[s], &a, ODPEMU_QP_STATE)))
			soak_fail(l->st, "%s: modify_qp to ERR on side %d: %s (%s)", l->what, s,
				  strerror(rc), odpemu_last_error(qp[s]->context));
	}
	ledger_drain(l, cq, cb, round, 10000, true);
}

static bool root_justified(int root, int side, const uint64_t inj[2], bool peer_killed)
{
	switch (root) {
	case ODPEMU_WC_LOC_PROT_ERR:
		return inj[side] > 0;
	case ODPEMU_WC_REM_ACCESS_ERR:
	case ODPEMU_WC_REM_OP_ERR:
		return inj[!side] > 0;
	case ODPEMU_WC_RETRY_EXC_ERR:
		return inj[!side] > 0 || peer_killed;
	default:
		return false;
	}
}

void ledger_judge(struct ledger *l, const uint64_t inj[2])
{
	bool any = false;

	for (int s = 0; s < 2; s++)
		any |= l->err[s].n_root || l->err[s].n_flush;
	for (int s = 0; s < 2; s++) {
		const struct ledger_err *e = &l->err[s];
		bool root_ok = e->n_root && root_justified(e->root, s, inj, l->peer_killed[s]);

		if (e->n_root > 1)
			soak_fail(l->st, "%s: side %d had %u root errors (first %s): one error moves a "
				  "QP to ERR, everything after it flushes", l->what, s, e->n_root,
				  odpemu_wc_status_str((enum odpemu_wc_status)e->root));
		if (e->n_root && !root_ok)
			soak_fail(l->st, "%s: side %d completed %s (%s), which nothing injected "
				  "explains (fault failures: here %" PRIu64 ", at the peer %" PRIu64 "%s)",
				  l->what, s, odpemu_wc_status_str((enum odpemu_wc_status)e->root),
				  odpemu_vendor_err_str(e->root_verr), inj[s], inj[!s],
				  l->peer_killed[s] ? ", peer killed" : "");
		if (e->n_flush && !root_ok && !inj[s])
			soak_fail(l->st, "%s: side %d flushed %u WRs (WR_FLUSH_ERR) with no error before "
				  "them and no fault failure in its memory", l->what, s, e->n_flush);
		if (e->n_teardown && !any && !l->teardown_expected)
			soak_fail(l->st, "%s: side %d: %u WRs were still outstanding at the teardown "
				  "of a round without errors", l->what, s, e->n_teardown);
		if (root_ok)
			SOAK_ADD(l->st->justified, 1);
		if (root_ok || inj[s])
			SOAK_ADD(l->st->justified, e->n_flush);
		SOAK_ADD(l->st->teardown, e->n_teardown);
	}
}
