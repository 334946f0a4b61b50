/* SPDX-License-Identifier: MIT */
/*
 * What the suite's results must be on odpemu: the allow-list of skips (features real
 * devices lack too) and the known gaps (what odpemu does not do yet: issue 30). One table
 * each; a gap that no longer shows is an error of the table.
 */
#include <stdio.h>
#include <string.h>

#include "conformance.h"
#include "t.h"

/* A skip reason (substring) allowed, in the tests of `module` (NULL: any), and the real
 * device that lacks the feature too. */
struct allowed_skip {
	const char *reason;
	const char *module;
	const char *why;
	bool no_sysfs_only;	/* allowed only when no sysfs view could be made */
};

static bool sysfs_seen;		/* conf_judge's: the suite ran with odpemu-run --sysfs */

static const struct allowed_skip allowed[] = {
	{ "Device memory is not supported", NULL,
	  "device memory (ibv_alloc_dm) is ConnectX on-chip memory: rxe has none" },
	{ "Allocating dmabuf is not supported", NULL,
	  "dmabuf MRs need a GPU exporter (/dev/dri): none here, and rxe registers none" },
	{ "Create XRCD is not supported", NULL, "XRC: rxe has none" },
	{ "Create QP type 8 is not supported", NULL, "raw packet QPs (Ethernet frames): rxe has none" },
	{ "Create Raw Packet QP", NULL, "raw packet QPs: rxe has none" },
	{ "To Create RAW QP must be done by root", NULL,
	  "raw packet QPs (asked for only by root): rxe has none" },
	{ "Must be run by root on Ethernet link layer", NULL,
	  "flow steering and RSS on raw packet QPs (asked for only by root): rxe has none" },
	{ "Parent Domain is not supported", NULL, "parent domains: rxe's provider has none" },
	{ "Extended CQ is not supported", "tests.test_tag_matching.",
	  "tag matching's CQs (IBV_WC_EX_WITH_TM_INFO): tag matching is ConnectX's; rxe has none" },
	{ "There are no huge pages of size 2M allocated", NULL,
	  "only when not root: the test reserves 2 MiB pages as root (conf_hugepages_reserve)" },
	{ "doesn't have net interface", NULL, "no sysfs view can be made here (odpemu-run "
	  "--sysfs refused, its reason above): the suite finds no device/net", true },
};

/* A known gap: a skip reason (substring) or a failing test (id substring). */
struct gap {
	const char *match;
	enum conf_outcome outcome;	/* CONF_SKIP: match is a reason; else a test id */
	const char *what;
};

/* Empty since imports and multicast run (issue 30); the terminator keeps the table (and
 * its checks) for the next gap found. */
static const struct gap gaps[] = {
	{ NULL, CONF_OUTCOMES, NULL }	/* terminator */
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct allowed_skip *allowed_of(const struct conf_test *t)
{
	for (size_t i = 0; i < N(allowed); i++)
		if (strstr(t->reason, allowed[i].reason) &&
		    (!allowed[i].module || strstr(t->id, allowed[i].module)) &&
		    (!allowed[i].no_sysfs_only || !sysfs_seen))
			return &allowed[i];
	return NULL;
}

static const struct gap *gap_of(const struct conf_test *t)
{
	for (size_t i = 0; gaps[i].match; i++) {
		const char *in = gaps[i].outcome == CONF_SKIP ? t->reason : t->id;

		if (gaps[i].outcome == t->outcome && in && strstr(in, gaps[i].match))
			return &gaps[i];
	}
	return NULL;
}

/* Count of each distinct skip reason, printed with its allow-list or gap entry. */
static void print_skips(const struct conf_results *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct conf_test *t = &r->t[i];
		const struct allowed_skip *a;
		const struct gap *g;
		unsigned n = 0;
		size_t first = 0;

		if (t->outcome != CONF_SKIP)
			continue;
		while (r->t[first].outcome != CONF_SKIP || strcmp(r->t[first].reason, t->reason))
			first++;	/* ends at i at the latest */
		if (first != i)
			continue;
		for (size_t j = i; j < r->n; j++)
			n += r->t[j].outcome == CONF_SKIP && !strcmp(r->t[j].reason, t->reason);
		a = allowed_of(t);
		g = a ? NULL : gap_of(t);
		printf("  %3u skipped '%s': %s%s\n", n, t->reason,
		       a ? "allowed, " : g ? "gap: " : "NOT ALLOWED", a ? a->why : g ? g->what : "");
	}
}

void conf_judge(const struct conf_results *r, bool sysfs)
{
	unsigned count[CONF_OUTCOMES + 1] = { 0 }, gap_hits[N(gaps)] = { 0 };

	sysfs_seen = sysfs;
	for (size_t i = 0; i < r->n; i++) {
		const struct conf_test *t = &r->t[i];
		const struct gap *g = gap_of(t);

		count[t->outcome]++;
		if (g)
			gap_hits[g - gaps]++;
		if (t->outcome == CONF_OUTCOMES)
			T_CHECK(0, "%s: no result found in the output", t->id);
		else if (t->outcome == CONF_SKIP)
			T_CHECK(allowed_of(t) || g, "%s skipped for a reason not allowed: "
				"'%s'", t->id, t->reason);
		else if (t->outcome != CONF_PASS)
			T_CHECK(g != NULL, "%s: %s", t->id, conf_outcome_name(t->outcome));
	}
	T_CHECK(r->ran > 0 && (size_t)r->ran == r->n, "the suite ran %ld tests, %zu read",
		r->ran, r->n);
	for (size_t i = 0; gaps[i].match; i++)
		T_CHECK(gap_hits[i] > 0, "gap '%s' (%s) no longer shows: take it off the list",
			gaps[i].match, gaps[i].what);
	printf("rdma-core v44 suite: %zu tests: %u passed, %u failed, %u errors, %u skipped\n",
	       r->n, count[CONF_PASS], count[CONF_FAIL], count[CONF_ERROR], count[CONF_SKIP]);
	print_skips(r);
	for (size_t i = 0; i < r->n; i++)
		if (r->t[i].outcome == CONF_FAIL || r->t[i].outcome == CONF_ERROR)
			printf("  %s: %s (%s)\n", conf_outcome_name(r->t[i].outcome), r->t[i].id,
			       gap_of(&r->t[i]) ? gap_of(&r->t[i])->what : "NOT A KNOWN GAP");
}
