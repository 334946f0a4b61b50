/* SPDX-License-Identifier: MIT */
/* ctrs — see ctrs.h. */
#include "ctrs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ctrs_query(struct odpemu_context *ctx, enum odpemu_counter_scope scope, uint32_t id,
	       struct ctrs *out)
{
	int n = odpemu_query_counters(ctx, scope, id, out->c, CTRS_MAX);

	out->n = n < 0 ? 0 : n;
	return n < 0 ? -1 : 0;
}

static struct odpemu_counter *find(const struct ctrs *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->c[i].name, name))
			return (struct odpemu_counter *)&s->c[i];
	return NULL;
}

uint64_t ctrs_get(const struct ctrs *s, const char *name)
{
	const struct odpemu_counter *c = find(s, name);

	return c ? c->value : 0;
}

bool ctrs_has(const struct ctrs *s, const char *name)
{
	return find(s, name) != NULL;
}

static struct odpemu_counter *slot(struct ctrs *s, const char *name)
{
	struct odpemu_counter *c = find(s, name);

	if (c || s->n >= CTRS_MAX)
		return c;
	c = &s->c[s->n++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->value = 0;
	return c;
}

void ctrs_set(struct ctrs *s, const char *name, uint64_t v)
{
	struct odpemu_counter *c = slot(s, name);

	if (c)
		c->value = v;
}

void ctrs_add(struct ctrs *s, const char *name, uint64_t v)
{
	struct odpemu_counter *c = slot(s, name);

	if (c)
		c->value += v;
}

bool ctrs_is_gauge(const char *name)
{
	static const char *const gauges[] = { "sessions", "pds", "mrs", "cqs", "srqs", "qps",
		"present_pages", "table_bytes", "qp_num", "lkey" };

	for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++)
		if (!strcmp(name, gauges[i]))
			return true;
	return false;
}

void ctrs_delta(const struct ctrs *after, const struct ctrs *before, struct ctrs *out)
{
	out->n = 0;
	for (int i = 0; i < after->n; i++) {
		uint64_t a = after->c[i].value, b = ctrs_get(before, after->c[i].name);

		ctrs_set(out, after->c[i].name, ctrs_is_gauge(after->c[i].name) ? a :
			 a > b ? a - b : 0);
	}
	for (int i = 0; i < before->n; i++)
		if (!ctrs_has(after, before->c[i].name))
			ctrs_set(out, before->c[i].name, 0);
}

static int by_bound(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

int ctrs_hist(const struct ctrs *s, uint64_t *bounds, uint64_t *counts, int max)
{
	return ctrs_hist_of(s, CTRS_HIST_PREFIX, bounds, counts, max);
}

int ctrs_hist_of(const struct ctrs *s, const char *prefix, uint64_t *bounds, uint64_t *counts,
		 int max)
{
	size_t plen = strlen(prefix);
	uint64_t pairs[CTRS_MAX][2];
	int n = 0;

	for (int i = 0; i < s->n; i++) {
		char *end;
		unsigned long long bound;

		if (strncmp(s->c[i].name, prefix, plen) || !s->c[i].value)
			continue;
		bound = strtoull(s->c[i].name + plen, &end, 10);
		if (*end || n >= CTRS_MAX)
			continue;
		pairs[n][0] = bound;
		pairs[n++][1] = s->c[i].value;
	}
	qsort(pairs, (size_t)n, sizeof(pairs[0]), by_bound);
	if (n > max)
		n = max;
	for (int i = 0; i < n; i++) {
		bounds[i] = pairs[i][0];
		counts[i] = pairs[i][1];
	}
	return n;
}

uint64_t ctrs_hist_pct(const struct ctrs *s, double pct)
{
	return ctrs_hist_pct_of(s, CTRS_HIST_PREFIX, pct);
}

uint64_t ctrs_hist_pct_of(const struct ctrs *s, const char *prefix, double pct)
{
	uint64_t bounds[CTRS_MAX], counts[CTRS_MAX], total = 0, seen = 0;
	int n = ctrs_hist_of(s, prefix, bounds, counts, CTRS_MAX);

	for (int i = 0; i < n; i++)
		total += counts[i];
	for (int i = 0; i < n; i++) {
		seen += counts[i];
		if ((double)seen >= pct / 100.0 * (double)total)
			return bounds[i];
	}
	return 0;
}
