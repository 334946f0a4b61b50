/* SPDX-License-Identifier: MIT */
/* server — waits for one client, takes the run's settings from it, serves the run, and
 * prints the same results (wire.h: the order of messages). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "side.h"

/* The next line must be `verb`; false when the client said BYE instead. */
static bool expect(struct perf_conn *c, char *line, const char *verb, double timeout)
{
	int got = net_recv(c, line, NET_LINE, timeout);

	if (got < 0)
		side_lost();
	if (!got)
		perf_die("the client did not send %s in %g s", verb, timeout);
	if (wire_is(line, "BYE"))
		return false;
	if (!wire_is(line, verb))
		perf_die("unexpected message from the client: '%.60s' (expected %s)", line, verb);
	return true;
}

/* Refuse (to the client and here) what this side cannot run. */
static void refuse(struct perf_conn *c, const char *msg) __attribute__((noreturn));
static void refuse(struct perf_conn *c, const char *msg)
{
	net_send(c, "ERR %s", msg);
	perf_die("%s", msg);
}

static void hello(const struct perf_opts *o, struct perf_conn *c, struct perf_dev *d,
		  struct perf_cfg *cfg)
{
	char line[NET_LINE], msg[512];

	if (!expect(c, line, "HELLO", o->timeout))
		perf_die("the client left before saying what to run");
	if (cfg_parse(line, cfg, msg, sizeof(msg)))
		refuse(c, msg);
	if (cfg->test != o->cfg.test) {
		snprintf(msg, sizeof(msg), "the client runs %s, this server %s: start the server "
			 "as `%s %s`", perf_test_name(cfg->test), perf_test_name(o->cfg.test),
			 PERF_PROG, perf_test_name(cfg->test));
		refuse(c, msg);
	}
	if (perf_check_caps(cfg, d->name, &d->attr, &d->port, msg, sizeof(msg)))
		refuse(c, msg);
	if (dev_prepare(d, cfg))
		refuse(c, "cannot register implicit ODP memory (see the server's output)");
	if (net_send(c, "OK dev=%s", d->name))
		side_lost();
}

/* Endpoints out and in, QPs to RTS; false when the client said BYE. */
static bool connect_size(struct perf_run *r, struct perf_report *rep, bool first)
{
	char line[NET_LINE], ep[NET_LINE];
	struct perf_ep mine;

	side_ep(r, &mine);
	ep_format(&mine, ep, sizeof(ep));
	if (net_send(r->conn, "READY %s", ep))
		side_lost();
	if (!expect(r->conn, line, "GO", -1))
		return false;
	if (ep_parse(line, &r->peer))
		perf_die("a malformed GO from the client");
	r->iters = r->peer.iters;
	if (qps_connect(r->dev, r->cfg, &r->qps, &r->peer))
		exit(1);
	if (first)
		report_banner(rep, r, &mine);
	return true;
}

static int serve(struct perf_run *r)
{
	if (r->cfg->lat)
		return lat_server(r);
	if (r->cfg->test == PERF_SEND)
		return bw_server_send(r);
	return pass_serve(r);
}

static void trade_results(struct perf_run *r, const struct ctrs *local, struct ctrs *remote,
			  struct perf_result *res, struct perf_verify *rv)
{
	char line[NET_LINE];

	if (!r->peer_done) {
		if (!expect(r->conn, line, "DONE", -1))
			side_lost();
		r->peer_n = kv_u64(line, "n", 0);
	}
	expect(r->conn, line, "RESULT", -1);
	result_parse(line, res);
	expect(r->conn, line, "VERIFY", -1);
	side_parse_verify(line, rv);
	expect(r->conn, line, "CTRS", -1);
	ctrs_parse(line, remote);
	if (side_send_verify(r->conn, &r->verify))
		side_lost();
	ctrs_format(local, line, sizeof(line));
	if (net_send(r->conn, "%s", line))
		side_lost();
}

/* One size; false when the client ended the session instead. */
static bool one_size(const struct perf_opts *o, const struct perf_cfg *cfg, struct perf_dev *d,
		     struct perf_conn *c, struct perf_report *rep, uint64_t size)
{
	static struct perf_run r;
	static struct ctrs local, remote;
	struct perf_result res;
	struct perf_verify rv;

	r = (struct perf_run){ .o = o, .cfg = cfg, .dev = d, .conn = c, .server = true,
		.size = size };
	/* counters from before the buffers exist: --prefetch is part of the run */
	if (odp_begin(&r.odp, d) || side_build(&r))
		exit(1);
	if (!connect_size(&r, rep, rep->nrows == 0)) {
		side_teardown(&r);
		return false;
	}
	if (net_send(c, "START"))
		exit(1);
	if (serve(&r))
		exit(1);
	/* after the run, before the buffers go: freed MRs leave the device's sums */
	if (odp_end(&r.odp, d, &local))
		exit(1);
	trade_results(&r, &local, &remote, &res, &rv);
	report_row(rep, &r, &res, &local, &remote, &rv);
	side_teardown(&r);
	return true;
}

int perf_server(const struct perf_opts *o)
{
	static struct perf_dev d;
	static struct perf_conn c;
	static struct perf_report rep;
	static struct perf_cfg cfg;
	uint64_t sizes[32];
	int n, rc;

	dev_open(&d, o->dev);
	if (net_serve_one(o->port, perf_test_name(o->cfg.test), &c))
		return 1;
	hello(o, &c, &d, &cfg);
	side_evict(&d, &cfg, false);
	report_init(&rep, o, &cfg, true, d.name);
	n = perf_sizes(&cfg, sizes, 32);
	for (int i = 0; i < n; i++)
		if (!one_size(o, &cfg, &d, &c, &rep, sizes[i]))
			break;
	side_evict(&d, &cfg, true);
	rc = side_finish(&rep, NULL, 0);
	net_close(&c);
	dev_close(&d);
	return rc;
}
