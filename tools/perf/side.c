/* SPDX-License-Identifier: MIT */
/* side — see side.h. */
#include "side.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "plot.h"

static bool pingpong(const struct perf_cfg *c)
{
	return c->lat && (c->test == PERF_WRITE || c->test == PERF_SEND);
}

int side_build(struct perf_run *r)
{
	const struct perf_cfg *c = r->cfg;
	bool churn = c->churn;
	int rc = 0;

	perf_layout(c, r->size, r->server, &r->lay);
	if (qps_create(r->dev, c, r->lay.tx_depth, r->lay.rx_depth, &r->qps))
		return -1;
	/* cold targets stay untouched: the first access to each page must be the NIC's */
	if (area_make(&r->target, r->dev, c->odp, r->lay.target_slots, r->lay.target_stride,
		      false, !c->cold) ||
	    (c->regcache ? area_make_rc(&r->local, r->dev, c->regcache, r->lay.local_slots,
					r->lay.local_stride) :
	     area_make(&r->local, r->dev, c->odp, r->lay.local_slots, r->lay.local_stride, churn,
		       !churn)))
		return -1;
	if (r->server && c->test == PERF_SEND && !c->lat)
		rc = bw_server_send_prepare(r);
	else if (r->server && !pingpong(c))
		pass_prepare(r);
	if (!rc && pingpong(c))
		rc = lat_prepare(r);
	/* Prefetch last: preparing a verified pass gives a cold target fresh pages (a new
	 * lap), which would undo an earlier prefetch. */
	if (!rc && c->prefetch &&
	    (area_prefetch(&r->target, r->dev) || area_prefetch(&r->local, r->dev)))
		rc = -1;
	return rc;
}

void side_teardown(struct perf_run *r)
{
	/* QPs first: nothing may still be moving data into the buffers */
	qps_destroy(&r->qps);
	area_free(&r->local);
	area_free(&r->target);
	samples_free(&r->samples);
}

void side_ep(const struct perf_run *r, struct perf_ep *e)
{
	memset(e, 0, sizeof(*e));
	dev_ep(r->dev, &r->qps, e);
	e->addr = r->target.nslots ? (uint64_t)(uintptr_t)area_slot(&r->target, 0) : 0;
	e->rkey = r->target.rkey;
	e->slots = r->target.nslots;
	e->stride = r->target.stride;
	e->iters = r->iters;
}

void side_evict(struct perf_dev *d, const struct perf_cfg *c, bool restore)
{
	const char *v = restore ? "0" : c->evict_rate;
	int rc;

	if (!c->evict_rate[0])
		return;
	if ((rc = odpemu_set_inject(d->ctx, "evict-rate", v)))
		perf_die("--evict-rate %s refused by %s: %s", v, d->name, odpemu_last_error(d->ctx));
}

void side_figures(struct perf_run *r)
{
	double s = r->res.secs > 0 ? r->res.secs : 1e-9;

	r->res.size = r->size;
	r->res.iters = r->done;
	r->res.msg_rate = (double)r->done / s;
	r->res.bw_avg = r->res.msg_rate * (double)r->size;
	if (r->res.bw_peak < r->res.bw_avg)
		r->res.bw_peak = r->res.bw_avg;	/* runs shorter than one window */
	samples_summary(&r->samples, &r->res);
	if (r->local.rc)
		area_rc_figs(&r->local, &r->res.rc);
}

int side_send_verify(struct perf_conn *c, const struct perf_verify *v)
{
	if (v->failed)
		return net_send(c, "VERIFY fail n=%" PRIu64 " stale=%" PRIu64 " %s", v->checked,
				v->stale, v->msg);
	return net_send(c, "VERIFY ok n=%" PRIu64 " stale=%" PRIu64, v->checked, v->stale);
}

void side_parse_verify(const char *line, struct perf_verify *v)
{
	const char *why;

	memset(v, 0, sizeof(*v));
	v->checked = kv_u64(line, "n", 0);
	v->stale = kv_u64(line, "stale", 0);
	if (strncmp(line, "VERIFY fail n=", 14))
		return;
	why = strchr(line + 14, ' ');
	if (why && !strncmp(why + 1, "stale=", 6))
		why = strchr(why + 1, ' ');
	v->failed = true;
	snprintf(v->msg, sizeof(v->msg), "%s", why ? why + 1 : "(no reason given)");
	perf_err("VERIFY FAILED (at the peer): %s", v->msg);
}

void side_lost(void)
{
	perf_die("the peer closed the connection (it failed or was stopped: see its output)");
}

int side_finish(struct perf_report *rep, const struct perf_samples *samples, uint64_t size)
{
	int rc = 0;

	report_end(rep);
	if (rep->o->histogram && plot_histogram(rep->o->histogram, rep, samples, size))
		rc = 1;
	return rep->failed ? 1 : rc;
}
