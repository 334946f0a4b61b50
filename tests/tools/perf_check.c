/* SPDX-License-Identifier: MIT */
/* perf_check — see perf_check.h. */
#include "perf_check.h"

#include <stdio.h>
#include <string.h>

#include "t.h"

void pc_show(const struct tr_pair *r, const char *what)
{
	fprintf(stderr, "---- %s: client (exit %d) ----\n%s\n---- server (exit %d) ----\n%s\n",
		what, r->client, r->cout ? r->cout : "", r->server, r->sout ? r->sout : "");
}

bool pc_ok(const struct tr_pair *r, const char *what, unsigned long iters, bool verify)
{
	unsigned long failed = t_failures;
	char v[32];

	T_CHECK(r->client == 0, "%s: client exit %d", what, r->client);
	T_CHECK(r->server == 0, "%s: server exit %d", what, r->server);
	if (r->client == 0) {
		T_CHECK(tr_json(r->cout, "d[\"ok\"]", v, sizeof(v)) == 0 && !strcmp(v, "True"),
			"%s: --json: ok is '%s'", what, v);
		if (iters)
			T_EQ(tr_json_num(r->cout, "d[\"results\"][0][\"iterations\"]"), iters,
			     "iterations");
		if (verify)
			T_CHECK(tr_json_num(r->cout, "d[\"results\"][0][\"verify\"][\"checked\"]") >=
				(double)iters, "%s: fewer messages checked than sent", what);
	}
	if (t_failures != failed)
		pc_show(r, what);
	return t_failures == failed;
}

double pc_odp(const struct tr_pair *r, const char *side, const char *key)
{
	char expr[160];

	snprintf(expr, sizeof(expr), "d[\"odp\"][\"%s\"][\"%s\"]", side, key);
	return tr_json_num(r->cout, expr);
}
