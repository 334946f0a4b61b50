/* SPDX-License-Identifier: MIT */
/* client — the side that connects, decides the run, and times it (wire.h: the order of
 * messages). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "side.h"

static void expect(struct perf_conn *c, char *line, const char *verb, double timeout)
{
	int got = net_recv(c, line, NET_LINE, timeout);

	if (got < 0)
		side_lost();
	if (!got)
		perf_die("the server did not answer in %g s (expected %s)", timeout, verb);
	if (wire_is(line, "ERR"))
		perf_die("the server refused: %s", line + 4);
	if (!wire_is(line, verb))
		perf_die("unexpected message from the server: '%.60s' (expected %s)", line, verb);
}

static void hello(const struct perf_opts *o, struct perf_conn *c)
{
	char line[NET_LINE];

	cfg_format(&o->cfg, line, sizeof(line));
	if (net_send(c, "%s", line))
		side_lost();
	expect(c, line, "OK", o->timeout);
}

/* Trade endpoints and connect; the server's QPs are in RTS when START arrives. */
static void connect_size(struct perf_run *r, struct perf_report *rep, bool first)
{
	char line[NET_LINE], ep[NET_LINE];
	struct perf_ep mine;

	expect(r->conn, line, "READY", r->o->timeout);
	if (ep_parse(line, &r->peer))
		perf_die("a malformed READY from the server");
	if (qps_connect(r->dev, r->cfg, &r->qps, &r->peer))
		exit(1);
	side_ep(r, &mine);
	ep_format(&mine, ep, sizeof(ep));
	if (net_send(r->conn, "GO %s", ep))
		side_lost();
	expect(r->conn, line, "START", r->o->timeout);
	if (first)
		report_banner(rep, r, &mine);
}

/* Results out, the server's verdict and counters in. */
static void trade_results(struct perf_run *r, const struct ctrs *local, struct ctrs *remote,
			  struct perf_verify *rv)
{
	char line[NET_LINE];

	if (net_send(r->conn, "DONE n=%" PRIu64, r->done))
		side_lost();
	result_format(&r->res, line, sizeof(line));
	if (net_send(r->conn, "%s", line))
		side_lost();
	if (side_send_verify(r->conn, &r->verify))
		side_lost();
	ctrs_format(local, line, sizeof(line));
	if (net_send(r->conn, "%s", line))
		side_lost();
	expect(r->conn, line, "VERIFY", -1);
	side_parse_verify(line, rv);
	expect(r->conn, line, "CTRS", -1);
	ctrs_parse(line, remote);
}

static void one_size(const struct perf_opts *o, struct perf_dev *d, struct perf_conn *c,
		     struct perf_report *rep, uint64_t size, struct perf_samples *keep)
{
	static struct perf_run r;
	static struct ctrs local, remote;
	struct perf_verify rv;

	r = (struct perf_run){ .o = o, .cfg = &o->cfg, .dev = d, .conn = c, .size = size,
		.iters = perf_iters_for(o, size) };
	/* counters from before the buffers exist: --prefetch is part of the run */
	if (odp_begin(&r.odp, d) || side_build(&r))
		exit(1);
	connect_size(&r, rep, rep->nrows == 0);
	if (o->cfg.lat ? lat_client(&r) : bw_client(&r))
		exit(1);
	if (odp_end(&r.odp, d, &local))
		exit(1);
	side_figures(&r);
	trade_results(&r, &local, &remote, &rv);
	report_row(rep, &r, &r.res, &local, &remote, &rv);
	samples_free(keep);
	*keep = r.samples;		/* the last size's samples feed --histogram */
	r.samples = (struct perf_samples){ 0 };
	side_teardown(&r);
}

int perf_client(const struct perf_opts *o)
{
	static struct perf_dev d;
	static struct perf_conn c;
	static struct perf_report rep;
	struct perf_samples keep = { 0 };
	uint64_t sizes[32];
	int n = perf_sizes(&o->cfg, sizes, 32), rc;
	char msg[512];

	dev_open(&d, o->dev);
	if (perf_check_caps(&o->cfg, d.name, &d.attr, &d.port, msg, sizeof(msg)))
		perf_die("%s", msg);
	if (dev_prepare(&d, &o->cfg))
		return 1;
	if (net_connect(o->connect_to, o->port, o->timeout, perf_test_name(o->cfg.test), &c))
		return 1;
	hello(o, &c);
	side_evict(&d, &o->cfg, false);
	report_init(&rep, o, &o->cfg, false, d.name);
	for (int i = 0; i < n && !rep.failed; i++)
		one_size(o, &d, &c, &rep, sizes[i], &keep);
	net_send(&c, "BYE");
	side_evict(&d, &o->cfg, true);
	rc = side_finish(&rep, &keep, rep.nrows ? rep.rows[rep.nrows - 1].res.size : 0);
	samples_free(&keep);
	net_close(&c);
	dev_close(&d);
	return rc;
}
