/* SPDX-License-Identifier: MIT */
/* plot — see plot.h. The data go inline into the gnuplot script ($name << EOD), so there
 * is no temporary file to clean up. */
#include "plot.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LAT_BINS 40

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];

	for (const char *p = path ? path : "/usr/bin:/bin"; *p; ) {
		size_t n = strcspn(p, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, prog);
		if (access(buf, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

static void terminal(FILE *g, const char *file)
{
	if (strstr(file, ".png"))
		fprintf(g, "set terminal pngcairo size 1000,%d noenhanced\n", 560);
	else
		fprintf(g, "set terminal svg size 1000,%d dynamic noenhanced background "
			"'white'\n", 560);
	fprintf(g, "set output '%s'\n", file);
}

/* Samples are sorted (stats.c); bins span min .. p99.9 so one outlier cannot squash
 * the picture; the rest is counted in the title. */
static void latency(FILE *g, const struct perf_report *rep, const struct perf_samples *s,
		    uint64_t size)
{
	double lo = s->v[0], hi = s->v[(size_t)(0.999 * (double)(s->n - 1))], w;
	uint64_t bins[LAT_BINS] = { 0 }, over = 0;

	if (hi <= lo)
		hi = lo + 1;
	w = (hi - lo) / LAT_BINS;
	for (size_t i = 0; i < s->n; i++) {
		double b = floor((s->v[i] - lo) / w);

		if (s->v[i] > hi)
			over++;
		else
			bins[b >= LAT_BINS ? LAT_BINS - 1 : (int)b]++;
	}
	fprintf(g, "$lat << EOD\n");
	for (int i = 0; i < LAT_BINS; i++)
		fprintf(g, "%g %" PRIu64 "\n", lo + (i + 0.5) * w, bins[i]);
	fprintf(g, "EOD\n");
	fprintf(g, "set title '%s --lat --odp %s, %" PRIu64 " B, %zu samples (%s): median %.2f us, "
		"%" PRIu64 " above p99.9 not shown'\n", perf_test_name(rep->cfg->test),
		perf_odp_name(rep->cfg->odp), size, s->n, rep->local_dev, s->v[s->n / 2], over);
	fprintf(g, "set xlabel 'latency [us]'\nset ylabel 'messages'\nset boxwidth %g\n"
		"set style fill solid 0.6\nset key off\n"
		"plot $lat using 1:2 with boxes lc rgb '#3b75af'\n", w * 0.9);
}

/* Bucket bounds of both sides, merged and sorted. */
static int bounds_of(const struct perf_report *rep, uint64_t *all)
{
	uint64_t b[64], c[64];
	int n = 0;
	const struct ctrs *sides[2] = { &rep->local_total, &rep->remote_total };

	for (int s = 0; s < 2; s++) {
		int k = ctrs_hist(sides[s], b, c, 64);

		for (int i = 0; i < k; i++) {
			int j = 0;

			while (j < n && all[j] < b[i])
				j++;
			if (j < n && all[j] == b[i])
				continue;
			memmove(all + j + 1, all + j, (size_t)(n - j) * sizeof(*all));
			all[j] = b[i];
			n++;
		}
	}
	return n;
}

static void faults(FILE *g, const struct perf_report *rep)
{
	uint64_t bounds[128];
	int n = bounds_of(rep, bounds);
	char name[64];

	fprintf(g, "$fl << EOD\n");
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), CTRS_HIST_PREFIX "%" PRIu64, bounds[i]);
		fprintf(g, "\"<%" PRIu64 "\" %" PRIu64 " %" PRIu64 "\n", bounds[i],
			ctrs_get(&rep->local_total, name), ctrs_get(&rep->remote_total, name));
	}
	if (!n)
		fprintf(g, "\"none\" 0 0\n");
	fprintf(g, "EOD\n");
	fprintf(g, "set title 'page-fault latency (request to answer, injected delay "
		"included)%s'\n", n ? "" : ": no page faults in this run");
	/* a run without faults still gets its (empty) picture, without gnuplot's warning */
	fprintf(g, "set yrange [0:%s]\n", n ? "*" : "1");
	fprintf(g, "set xlabel 'answered in under [us]'\nset ylabel 'faults'\nset key top right\n"
		"set style data histograms\nset style histogram clustered gap 1\n"
		"set style fill solid 0.6\nset boxwidth 0.9\n"
		"plot $fl using 2:xtic(1) title '%s (this side)' lc rgb '#3b75af', "
		"'' using 3 title '%s (peer)' lc rgb '#e1812c'\n", rep->local_dev, rep->remote_dev);
}

int plot_histogram(const char *file, const struct perf_report *rep,
		   const struct perf_samples *samples, uint64_t size)
{
	bool lat = samples && samples->n;
	FILE *g;
	int st;

	if (!in_path("gnuplot")) {
		perf_err("--histogram needs gnuplot: apt-get install gnuplot-nox");
		return -1;
	}
	if (!(g = popen("gnuplot", "w"))) {
		perf_err("--histogram: cannot run gnuplot");
		return -1;
	}
	terminal(g, file);
	if (lat) {
		fprintf(g, "set multiplot layout 2,1\n");
		latency(g, rep, samples, size);
		fprintf(g, "reset\n");
	}
	faults(g, rep);
	if (lat)
		fprintf(g, "unset multiplot\n");
	st = pclose(g);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		perf_err("--histogram: gnuplot failed to write %s (see its message above)", file);
		return -1;
	}
	return 0;
}
