/* SPDX-License-Identifier: MIT */
/* odp — see odp.h. */
#include "odp.h"

#include <errno.h>
#include <string.h>

const char *const perf_odp_keys[] = {
	"page_faults", "page_fault_pages", "page_invalidations", "page_prefetch",
	"fault_failed", "rnr_naks_sent", "rnr_naks_no_wqe", "rnr_naks_received", "retransmits",
	"timeouts",
	"stalls", "evictions",
};
const unsigned perf_odp_nkeys = sizeof(perf_odp_keys) / sizeof(perf_odp_keys[0]);

int odp_begin(struct perf_odp_track *t, struct perf_dev *d)
{
	t->retired.n = 0;
	if (ctrs_query(d->ctx, ODPEMU_COUNTERS_DEVICE, 0, &t->before)) {
		perf_err("cannot read the counters of %s: %s", d->name, strerror(errno));
		return -1;
	}
	return 0;
}

int odp_end(struct perf_odp_track *t, struct perf_dev *d, struct ctrs *delta)
{
	static struct ctrs after;

	if (ctrs_query(d->ctx, ODPEMU_COUNTERS_DEVICE, 0, &after)) {
		perf_err("cannot read the counters of %s: %s", d->name, strerror(errno));
		return -1;
	}
	for (int i = 0; i < t->retired.n; i++)
		ctrs_add(&after, t->retired.c[i].name, t->retired.c[i].value);
	ctrs_delta(&after, &t->before, delta);
	return 0;
}

void odp_accumulate(struct ctrs *acc, const struct ctrs *d)
{
	for (int i = 0; i < d->n; i++)
		if (!ctrs_is_gauge(d->c[i].name))
			ctrs_add(acc, d->c[i].name, d->c[i].value);
}
