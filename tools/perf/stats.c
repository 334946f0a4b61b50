/* SPDX-License-Identifier: MIT */
/* stats — see stats.h. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

#include "perf.h"

void samples_add(struct perf_samples *s, double us)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4096;
		double *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			perf_die("out of memory for %zu latency samples", cap);
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = us;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples. */
static double pct(const struct perf_samples *s, double p)
{
	size_t i = (size_t)ceil(p / 100.0 * (double)s->n);

	return s->v[i ? i - 1 : 0];
}

void samples_summary(struct perf_samples *s, struct perf_result *r)
{
	double sum = 0;

	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(s->v[0]), by_value);
	for (size_t i = 0; i < s->n; i++)
		sum += s->v[i];
	r->t_min = s->v[0];
	r->t_max = s->v[s->n - 1];
	r->t_avg = sum / (double)s->n;
	r->t_med = pct(s, 50);
	r->t_p99 = pct(s, 99);
	r->t_p999 = pct(s, 99.9);
}

void samples_free(struct perf_samples *s)
{
	free(s->v);
	*s = (struct perf_samples){ 0 };
}

void peak_init(struct perf_peak *p, double now, uint64_t window)
{
	*p = (struct perf_peak){ .t0 = now, .window = window ? window : 1 };
}

void peak_tick(struct perf_peak *p, double now, uint64_t completed, uint64_t size)
{
	double dt = now - p->t0, bw;

	if (completed - p->n0 < p->window || dt <= 0)
		return;
	bw = (double)(completed - p->n0) * (double)size / dt;
	if (bw > p->best)
		p->best = bw;
	p->t0 = now;
	p->n0 = completed;
}

void peak_pause(struct perf_peak *p, double paused)
{
	p->t0 += paused;
}
