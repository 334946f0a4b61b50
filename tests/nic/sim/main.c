/* SPDX-License-Identifier: MIT */
/*
 * nic-sim: the deterministic simulation of NICs over a simulated network.
 *
 *   nic-sim --seed N [-v|-vv]       one run (-v: summary and failure context, -vv: trace)
 *   nic-sim --seeds A..B            a range of runs
 *   nic-sim --file regress.txt      the seeds listed in a file (one per line, '#' comments)
 *   nic-sim --features a,b,...      only these features may be drawn (names: --list)
 *
 * A run fails at its first broken invariant; the seed and the invariant are printed and the
 * exit status is 1. Every run is bounded in loop iterations and in virtual time: a run that
 * does not quiesce in time is reported as a hang.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const char *const feature_names[] = {
#define SIM_FNAME_(n, d) #n,
	SIM_FEATURES(SIM_FNAME_)
#undef SIM_FNAME_
};
static const char *const feature_docs[] = {
#define SIM_FDOC_(n, d) d,
	SIM_FEATURES(SIM_FDOC_)
#undef SIM_FDOC_
};

/* Each seed draws its own configuration: about one seed in eight is the plain run (two
 * NICs, one RC pair, SEND/WRITE, no impairment), the others switch each allowed feature
 * on with probability 0.6. */
static int window_override = -1;	/* --window N: force cfg.max_inflight */

static void draw_config(struct sim *s, unsigned allowed)
{
	struct sim_cfg *c = &s->cfg;
	static const unsigned loss[] = { 1000, 10000, 30000 }, dup[] = { 1000, 10000, 30000 };
	static const unsigned reorder[] = { 1000, 10000, 30000 };
	static const uint64_t around[] = { 0, 4096, 2ull << 20 };

	c->features = 0;
	if (t_below(&s->rng, 8))
		for (unsigned b = 0; b < SIM_FB__COUNT; b++)
			if ((allowed & (1u << b)) && t_below(&s->rng, 10) < 6)
				c->features |= 1u << b;
	c->nnics = (c->features & SIM_F(MULTI)) ? 3 : 2;
	c->nclients = (c->features & SIM_F(MULTI)) ? 6 : 2;
	c->npairs = (c->features & SIM_F(MULTI)) ? 2 + (unsigned)t_below(&s->rng, 8) : 1;
	c->nud = (c->features & SIM_F(UD)) ? c->nnics : 0;
	c->phases = 2 + (unsigned)t_below(&s->rng, 3);
	c->actions_per_phase = 8 + (unsigned)t_below(&s->rng, 40);
	c->phase_span = 2 * SIM_MS;
	c->net.loss_ppm = (c->features & SIM_F(LOSS)) ? loss[t_below(&s->rng, 3)] : 0;
	c->net.dup_ppm = (c->features & SIM_F(DUP)) ? dup[t_below(&s->rng, 3)] : 0;
	c->net.reorder_ppm = (c->features & SIM_F(REORDER)) ? reorder[t_below(&s->rng, 3)] : 0;
	c->net.delay_min = 1 * SIM_US;
	c->net.delay_max = c->net.delay_min + t_below(&s->rng, 20 * SIM_US);
	c->net.reorder_extra = 50 * SIM_US;
	c->fault.lat_max = (c->features & SIM_F(SLOW_FAULTS)) ? 10 * SIM_MS : 200 * SIM_US;
	c->fault.zero_lat_pct = 20;
	c->stall_queue = t_below(&s->rng, 3) ? 0 : 4;
	c->max_inflight = t_below(&s->rng, 3) ? 0 : 8;
	if (window_override >= 0)
		c->max_inflight = (unsigned)window_override;
	c->fault_around = around[t_below(&s->rng, 3)];
	c->error_pct = (c->features & SIM_F(ERRORS)) ? 5 : 0;
	c->time_bound = 600ull * 1000 * SIM_MS;
	c->step_bound = 3000000;
}

static uint64_t next_time(struct sim *s)
{
	uint64_t t = net_next(s);

	if (fault_next(s) < t)
		t = fault_next(s);
	if (workload_next(s) < t)
		t = workload_next(s);
	for (unsigned i = 0; i < s->cfg.nnics; i++) {
		uint64_t d = nic_next_deadline(s->nics[i].nic);

		if (d < t)
			t = d;
	}
	for (unsigned i = 0; i < s->nqps; i++)
		if ((s->qps[i].reset_stage == 1 || s->qps[i].reset_stage == 3) && s->qps[i].reset_at < t)
			t = s->qps[i].reset_at;
	return t;
}

static void describe_outstanding(struct sim *s)
{
	size_t len = strlen(s->why);

	for (unsigned i = 0; i < s->nqps && len + 80 < sizeof(s->why); i++)
		if (s->qps[i].sq.n || s->qps[i].rq.n || s->qps[i].reset_stage)
			len += (size_t)snprintf(s->why + len, sizeof(s->why) - len,
						"; qp %u (client %u): %zu WRs and %zu RECVs out, reset stage %d",
						s->qps[i].qpn, s->qps[i].client, s->qps[i].sq.n, s->qps[i].rq.n,
						s->qps[i].reset_stage);
}

/* One turn of the loop: jump to the earliest event and run everything due then. */
static bool step(struct sim *s)
{
	uint64_t t = next_time(s);

	if (t == UINT64_MAX) {
		sim_fail(s, "hang: nothing scheduled (no packet, fault, timer or action) but the run is not quiet");
		describe_outstanding(s);
		return false;
	}
	if (t > s->cfg.time_bound) {
		sim_fail(s, "hang: not quiet after %" PRIu64 " ms of virtual time", s->cfg.time_bound / SIM_MS);
		describe_outstanding(s);
		return false;
	}
	if (++s->steps > s->cfg.step_bound) {
		sim_fail(s, "livelock: %" PRIu64 " loop turns at virtual time %" PRIu64 " ns", s->steps, s->now);
		describe_outstanding(s);
		return false;
	}
	if (t > s->now)
		s->now = t;
	net_deliver_due(s);
	fault_answer_due(s);
	for (unsigned i = 0; i < s->cfg.nnics && !s->failed; i++)
		if (nic_next_deadline(s->nics[i].nic) <= s->now)
			nic_tick(s->nics[i].nic, s->now);
	workload_actions_due(s);
	pair_reset_poll(s);
	model_poll_all(s);
	pair_reset_poll(s);	/* the flushes just polled may have drained a pair */
	model_poll_all(s);
	workload_keep_ud_recvs(s);
	return !s->failed;
}

static void run_phases(struct sim *s)
{
	for (s->phase = 0; s->phase < s->cfg.phases && !s->failed; s->phase++) {
		workload_phase(s);
		while (!s->failed && (workload_next(s) != UINT64_MAX || !model_quiet(s)))
			step(s);
		if (!s->failed)
			check_all_memory(s);
	}
	if (!s->failed)
		model_check_counters(s);
}

static void sim_free(struct sim *s)
{
	struct ev e;

	while (pq_pop(&s->action_q, &e))
		free(e.p);	/* a failed run may leave actions (their RECVs leak: tolerated) */
	pq_free(&s->action_q);
	for (size_t i = 0; i < s->nud; i++) {
		free(s->ud[i]->data);
		free(s->ud[i]);
	}
	free(s->ud);
	for (unsigned i = 0; i < s->ncounters; i++)
		free(s->counters[i].ops);
}

static void features_str(unsigned f, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned b = 0; b < SIM_FB__COUNT && len + 1 < cap; b++)
		if (f & (1u << b))
			len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? "," : "", feature_names[b]);
	if (!len)
		snprintf(buf, cap, "basic");
}

static int run_seed(uint64_t seed, unsigned allowed, int verbose)
{
	struct sim *s = calloc(1, sizeof(*s));
	char fs[512];
	int failed;

	if (!s)
		abort();
	s->seed = seed;
	s->rng.s = seed * 0x9E3779B97F4A7C15ull + 1;
	s->verbose = verbose;
	draw_config(s, allowed);
	features_str(s->cfg.features, fs, sizeof(fs));
	if (verbose)
		printf("seed %" PRIu64 ": %u nics, %u clients, %u pairs, %u ud, %u phases; features %s\n", seed,
		       s->cfg.nnics, s->cfg.nclients, s->cfg.npairs, s->cfg.nud, s->cfg.phases, fs);
	if (!setup_world(s)) {
		workload_init(s);
		run_phases(s);
	}
	teardown_world(s);
	failed = s->failed;
	if (failed)
		printf("FAIL seed %" PRIu64 " (features %s) at %" PRIu64 " ns: %s\n", seed, fs, s->now, s->why);
	else if (verbose)
		printf("ok seed %" PRIu64 ": %" PRIu64 " WRs, %" PRIu64 " RECVs, %" PRIu64 " UD recvs, %" PRIu64
		       " packets (%" PRIu64 " lost, %" PRIu64 " dup), %" PRIu64 " faults (%" PRIu64 " refused), %" PRIu64
		       " remaps, %" PRIu64 " evictions, %" PRIu64 " resets, %" PRIu64 " ms virtual, %" PRIu64 " turns\n",
		       seed, s->completed, s->recv_completed, s->ud_recvs, s->net.sent, s->net.lost, s->net.duplicated,
		       s->faults, s->faults_refused, s->remaps, s->evictions, s->resets, s->now / SIM_MS, s->steps);
	fflush(stdout);
	sim_free(s);
	free(s);
	return failed;
}

static unsigned parse_features(const char *arg)
{
	unsigned f = 0;
	char *dup = strdup(arg), *save = NULL;

	if (!strcmp(arg, "all"))
		f = SIM_F_ALL;
	else if (strcmp(arg, "basic"))
		for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			unsigned b;

			for (b = 0; b < SIM_FB__COUNT && strcasecmp(t, feature_names[b]); b++)
				;
			if (b == SIM_FB__COUNT) {
				fprintf(stderr, "nic-sim: unknown feature '%s' (see --list)\n", t);
				exit(2);
			}
			f |= 1u << b;
		}
	free(dup);
	return f;
}

static int usage(void)
{
	fprintf(stderr, "usage: nic-sim [--seed N | --seeds A..B | --file F] [--features LIST|all|basic] [--window N] [-v|-vv|-vvv] [--list]\n");
	return 2;
}

/* Seeds from a file: one number per line; '#' starts a comment; a line may add a feature
 * list after the seed ("1234 LOSS,ODP") to pin the features it was found with. */
static int run_file(const char *path, unsigned allowed, int verbose, unsigned *runs)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int fails = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *end, feat[400];
		uint64_t seed;

		if (hash)
			*hash = '\0';
		seed = strtoull(line, &end, 0);
		if (end == line)
			continue;
		(*runs)++;
		if (sscanf(end, " %399s", feat) == 1)
			fails += run_seed(seed, parse_features(feat), verbose);
		else
			fails += run_seed(seed, allowed, verbose);
	}
	fclose(f);
	return fails;
}

int main(int argc, char **argv)
{
	uint64_t a = 1, b = 1;
	unsigned allowed = SIM_F_ALL, runs = 0;
	int verbose = 0, fails = 0;
	const char *file = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			a = b = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
			char *dots;

			a = strtoull(argv[++i], &dots, 0);
			if (strncmp(dots, "..", 2))
				return usage();
			b = strtoull(dots + 2, NULL, 0);
		} else if (!strcmp(argv[i], "--file") && i + 1 < argc) {
			file = argv[++i];
		} else if (!strcmp(argv[i], "--features") && i + 1 < argc) {
			allowed = parse_features(argv[++i]);
		} else if (!strcmp(argv[i], "-v")) {
			verbose = verbose > 1 ? verbose : 1;
		} else if (!strcmp(argv[i], "-vv")) {
			verbose = 2;
		} else if (!strcmp(argv[i], "-vvv")) {
			verbose = 3;
		} else if (!strcmp(argv[i], "--window") && i + 1 < argc) {
			window_override = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--list")) {
			for (unsigned k = 0; k < SIM_FB__COUNT; k++)
				printf("%-12s %s\n", feature_names[k], feature_docs[k]);
			return 0;
		} else {
			return usage();
		}
	}
	if (file) {
		fails = run_file(file, allowed, verbose, &runs);
		if (fails < 0)
			return 2;
	} else {
		for (uint64_t seed = a; seed <= b; seed++, runs++)
			fails += run_seed(seed, allowed, verbose);
	}
	printf("nic-sim: %u runs, %d failed\n", runs, fails);
	return fails ? 1 : 0;
}
