/* SPDX-License-Identifier: MIT */
/*
 * soak — the parent (docs/testing.md "Soak"): two test hosts whose daemons lose 2 %,
 * duplicate 0.5 % and reorder 1 % of the packets (half on the way out of the sender,
 * half on the way into the receiver), evict ODP pages, delay page
 * faults and fail 1 % of them; N worker processes (worker.c) run every verb between them;
 * every few seconds one is SIGKILLed and a new one started. Checked:
 *  - the workers' checks (every byte of every successful completion, every WR completed
 *    once with a justified status: ledger.h);
 *  - a killed worker's QPs and MRs are gone from both daemons within 5 s;
 *  - at the end the daemons hold what they held before the workers came (objects, fds,
 *    memfds), their resident memory grew by less than a bound, and they exit 0 (h_main:
 *    under ASan that is a leak check);
 *  - the faults were really injected (drops, duplicates, reorders, evictions, failed
 *    faults, retransmits: all > 0).
 *
 *   soak [--seconds N] [--long] [--workers N] [--seed S] [--only rc|ud|victim]
 *
 * --seconds: how long the workers run (default 60; --long: 4 hours); --long also prints a
 * progress line every minute and kills less often; --only: one kind of round (to chase
 * a failure).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checks.h"
#include "harness.h"
#include "soak.h"

#if defined(__SANITIZE_ADDRESS__)
#define SOAK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOAK_ASAN 1
#endif
#endif
#ifndef SOAK_ASAN
#define SOAK_ASAN 0
#endif

/* Resident memory a daemon may gain over the run: its caches and allocator; under ASan
 * also the quarantine of freed memory (256 MiB by default). */
#define RSS_SLACK_MIB (SOAK_ASAN ? 512 : 64)
#define WARMUP_ROUNDS 6
#define SETTLE_MS 10000

static struct {
	unsigned seconds, workers;
	bool long_mode;
	uint64_t seed;
	unsigned kill_min_ms, kill_max_ms;
	int only;
} opt = { .seconds = 60, .workers = 4, .seed = 1, .only = -1 };

struct run {
	struct h_env *e;
	struct soak_shared *sh;
	pid_t daemon[2];
	pid_t worker[SOAK_MAX_WORKERS];
	struct soak_stats total;	/* workers that are gone */
	unsigned started, killed, generation, early;
	bool daemon_dead;
	struct soak_hold base[2];
	long rss_max[2];
	struct t_rng rng;
};

static void usage(void)
{
	fprintf(stderr, "usage: soak [--seconds N] [--long] [--workers 1..%d] [--seed S] "
		"[--only rc|ud|victim]\n", SOAK_MAX_WORKERS);
	exit(2);
}

static void parse(int argc, char **argv)
{
	bool seconds = false;
	const char *env = getenv("T_SEED");

	if (env && *env)
		opt.seed = strtoull(env, NULL, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--long")) {
			opt.long_mode = true;
			continue;
		}
		if (!v)
			usage();
		if (!strcmp(a, "--seconds"))
			opt.seconds = (unsigned)strtoul(v, NULL, 0), seconds = true;
		else if (!strcmp(a, "--workers"))
			opt.workers = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--seed"))
			opt.seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--only") && (!strcmp(v, "rc") || !strcmp(v, "ud") ||
						  !strcmp(v, "victim")))
			opt.only = v[0] == 'r' ? SOAK_RC : v[0] == 'u' ? SOAK_UD : SOAK_VICTIM;
		else
			usage();
		i++;
	}
	if (opt.long_mode && !seconds)
		opt.seconds = 4 * 3600;
	if (!opt.seconds || !opt.workers || opt.workers > SOAK_MAX_WORKERS)
		usage();
	opt.kill_min_ms = opt.long_mode ? 5000 : 2000;
	opt.kill_max_ms = opt.long_mode ? 60000 : 6000;
}

static void add_stats(struct soak_stats *t, const struct soak_stats *s)
{
	for (int i = 0; i < SOAK_NSTATUS; i++)
		t->by_status[i] += s->by_status[i];
	t->justified += s->justified;
	t->teardown += s->teardown;
	t->posted += s->posted;
	t->bytes += s->bytes;
	t->rounds_rc += s->rounds_rc;
	t->rounds_ud += s->rounds_ud;
	t->rounds_victim += s->rounds_victim;
	t->reopens += s->reopens;
	t->rc_error_rounds += s->rc_error_rounds;
	t->ud_sent += s->ud_sent;
	t->ud_received += s->ud_received;
	t->ud_dups += s->ud_dups;
	t->victims_killed += s->victims_killed;
	t->qp_events += s->qp_events;
	t->failures += s->failures;
	if (s->failures && !t->first_failure[0])
		snprintf(t->first_failure, sizeof(t->first_failure), "%s", s->first_failure);
}

/* A worker that does not stop: print where it is (gdb, if installed), then it is killed. */
static void show_stuck(pid_t pid)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v gdb >/dev/null && timeout 60 gdb -p %d -batch -nx "
		 "-ex 'thread apply all bt' 2>/dev/null | grep -E '^(#|Thread)' | head -n 80 >&2",
		 (int)pid);
	fprintf(stderr, "soak: where process %d is stuck:\n", (int)pid);
	fflush(stderr);
	if (system(cmd))
		fprintf(stderr, "(no stack: gdb is missing)\n");
}

static pid_t spawn(struct run *r, int slot, unsigned max_rounds)
{
	struct soak_worker_cfg cfg = { .e = r->e, .sh = r->sh, .slot = slot,
		.seed = opt.seed * 1000003 + ++r->generation, .max_rounds = max_rounds,
		.only = max_rounds ? -1 : opt.only };
	pid_t pid;

	memset(&r->sh->slot[slot], 0, sizeof(r->sh->slot[slot]));
	fflush(NULL);
	if ((pid = fork()) == 0)
		soak_worker_main(&cfg);
	T_CHECK(pid > 0, "fork a worker: %s", strerror(errno));
	r->started += pid > 0;
	return pid > 0 ? pid : 0;
}

/* A worker is gone (status from waitpid): fold its stats in, check how it ended. */
static void gone(struct run *r, int slot, int status, bool killed)
{
	struct soak_stats *s = &r->sh->slot[slot];

	if (s->failures)
		fprintf(stderr, "soak: worker %d: %" PRIu64 " failed checks, first: %s\n",
			(int)r->worker[slot], s->failures, s->first_failure);
	if (killed)
		T_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			"worker %d: status %#x after SIGKILL", (int)r->worker[slot], status);
	else
		T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "worker %d ended with status "
			"%#x (%s)", (int)r->worker[slot], status, WIFSIGNALED(status) ?
			strsignal(WTERMSIG(status)) : "its checks failed");
	add_stats(&r->total, s);
	r->worker[slot] = 0;
}

/* The daemons free a killed client's QPs and MRs (its session ends with its socket). */
static void check_freed(struct run *r, pid_t pid, const char *what)
{
	for (int i = 0; i < 2; i++) {
		int n = -1;

		for (int k = 0; k < 500 && (n = soak_objects_of(r->e->ctx[i], pid)) != 0; k++)
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		T_CHECK(n == 0, "%s %d killed: %d of its QPs and MRs still on %s after 5 s", what,
			(int)pid, n, r->e->host[i].name);
	}
}

static void kill_one(struct run *r)
{
	int live[SOAK_MAX_WORKERS], n = 0, slot, status;
	pid_t pid, victim;

	for (int i = 0; i < (int)opt.workers; i++)
		if (r->worker[i])
			live[n++] = i;
	if (!n)
		return;
	slot = live[t_below(&r->rng, (uint64_t)n)];
	pid = r->worker[slot];
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		status = -1;
	victim = r->sh->slot[slot].victim_pid;	/* dies with it (PR_SET_PDEATHSIG) */
	r->killed++;
	gone(r, slot, status, true);
	check_freed(r, pid, "worker");
	if (victim > 0)
		check_freed(r, victim, "victim of a killed worker");
	r->worker[slot] = spawn(r, slot, 0);
}

/* Workers that ended by themselves before the end: failed, their checks say why. Up to
 * MAX_EARLY are replaced; false when the run should end. */
#define MAX_EARLY 10
static bool reap(struct run *r)
{
	for (int i = 0; i < (int)opt.workers; i++) {
		int status;

		if (r->worker[i] && waitpid(r->worker[i], &status, WNOHANG) == r->worker[i]) {
			gone(r, i, status, false);
			T_CHECK(0, "worker in slot %d ended before it was told to", i);
			if (++r->early > MAX_EARLY)
				return false;
			r->worker[i] = spawn(r, i, 0);
		}
	}
	return true;
}

/* Is the daemon still running? (Not reaped here: h_down wants its status.) */
static bool daemon_alive(struct run *r, int i)
{
	char path[64], line[512], *p;
	FILE *f;
	bool alive = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)r->daemon[i]);
	if ((f = fopen(path, "r"))) {
		if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')')) && p[1] == ' ')
			alive = p[2] != 'Z' && p[2] != 'X';
		fclose(f);
	}
	r->daemon_dead |= !alive;
	T_CHECK(alive, "%s's daemon (pid %d) died during the run: see its log",
		r->e->host[i].name, (int)r->daemon[i]);
	return alive;
}

static void sample(struct run *r)
{
	for (int i = 0; i < 2; i++) {
		struct soak_hold h;

		soak_hold_read(r->e->ctx[i], r->daemon[i], &h);
		if (h.rss_kib > r->rss_max[i])
			r->rss_max[i] = h.rss_kib;
	}
}

static void progress(struct run *r, long long t0)
{
	struct soak_stats t = r->total;

	for (int i = 0; i < (int)opt.workers; i++)
		if (r->worker[i])
			add_stats(&t, &r->sh->slot[i]);
	printf("soak: %llds: %.2f GB, %" PRIu64 " WRs, %u workers started, %u killed, %" PRIu64
	       " failed checks, daemon RSS %ld / %ld MiB\n", (soak_ms() - t0) / 1000,
	       (double)t.bytes / 1e9, t.posted, r->started, r->killed, t.failures,
	       r->rss_max[0] / 1024, r->rss_max[1] / 1024);
	fflush(stdout);
}

/* Ask the workers to stop and wait for them (bounded), then check what they left. */
static void stop_all(struct run *r)
{
	long long end = soak_ms() + 120000;

	__atomic_store_n(&r->sh->stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < (int)opt.workers; i++) {
		int status = 0;
		pid_t got = 0;

		while (r->worker[i] && (got = waitpid(r->worker[i], &status, WNOHANG)) == 0 &&
		       soak_ms() < end)
			nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
		if (!r->worker[i])
			continue;
		if (got != r->worker[i]) {
			T_CHECK(0, "worker %d did not stop within 120 s", (int)r->worker[i]);
			show_stuck(r->worker[i]);
			if (r->sh->slot[i].victim_pid > 0)
				show_stuck(r->sh->slot[i].victim_pid);
			kill(r->worker[i], SIGKILL);
			waitpid(r->worker[i], &status, 0);
		}
		gone(r, i, status, false);
	}
}

/* Wait (bounded) until each daemon holds what it held at the start, then check. */
static void check_end(struct run *r, struct soak_hold end[2])
{
	long long until = soak_ms() + SETTLE_MS;

	for (int i = 0; i < 2; i++) {
		while (soak_hold_read(r->e->ctx[i], r->daemon[i], &end[i]),
		       !soak_hold_same(&end[i], &r->base[i]) && soak_ms() < until)
			nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
		for (int k = 0; k < SOAK_NOBJ; k++)
			T_CHECK(end[i].obj[k] == r->base[i].obj[k], "%s: %s %" PRIu64 " at the end, %"
				PRIu64 " at the start", r->e->host[i].name, soak_obj_name[k],
				end[i].obj[k], r->base[i].obj[k]);
		T_CHECK(end[i].fds == r->base[i].fds, "%s: %ld fds at the end, %ld at the start",
			r->e->host[i].name, end[i].fds, r->base[i].fds);
		T_CHECK(end[i].memfd_fds == r->base[i].memfd_fds && end[i].memfd_maps ==
			r->base[i].memfd_maps, "%s: memfds %ld (mapped %ld) at the end, %ld (%ld) at "
			"the start", r->e->host[i].name, end[i].memfd_fds, end[i].memfd_maps,
			r->base[i].memfd_fds, r->base[i].memfd_maps);
		T_CHECK(end[i].rss_kib <= r->base[i].rss_kib + RSS_SLACK_MIB * 1024L,
			"%s: RSS %ld MiB at the end, %ld MiB at the start (bound: +%d MiB)",
			r->e->host[i].name, end[i].rss_kib / 1024, r->base[i].rss_kib / 1024,
			RSS_SLACK_MIB);
	}
}

static void summary(struct run *r, const struct soak_hold end[2], unsigned secs)
{
	const struct soak_stats *t = &r->total;
	struct soak_ctrs c[2];
	uint64_t completed = 0, errors;
	char line[1024];
	int n = 0;

	for (int i = 0; i < 2; i++)
		soak_ctrs_read(r->e->ctx[i], &c[i]);
#define BOTH(name) soak_ctr(&c[0], name), soak_ctr(&c[1], name)
	printf("soak: %u s, seed %" PRIu64 ", %u workers at a time: %u started, %u killed; rounds: "
	       "rc %" PRIu64 " (%" PRIu64 " ended by an injected error), ud %" PRIu64 ", victim %"
	       PRIu64 " (%" PRIu64 " killed); %" PRIu64 " session reopens\n", secs, opt.seed,
	       opt.workers, r->started, r->killed, t->rounds_rc, t->rc_error_rounds, t->rounds_ud,
	       t->rounds_victim, t->victims_killed, t->reopens);
	for (int s = 0; s < SOAK_NSTATUS; s++)
		if (t->by_status[s]) {
			completed += t->by_status[s];
			n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%s %" PRIu64, n ? ", " : "",
				      odpemu_wc_status_str((enum odpemu_wc_status)s), t->by_status[s]);
		}
	errors = completed - t->by_status[ODPEMU_WC_SUCCESS];
	printf("soak: moved %.3f GB (checked); WRs posted %" PRIu64 ", completed %" PRIu64
	       " (%" PRIu64 " lost with killed workers)\n", (double)t->bytes / 1e9, t->posted,
	       completed, t->posted - completed);
	printf("soak: completions by status: %s; errors justified %" PRIu64 " (and %" PRIu64
	       " not judged: rounds a kill cut short), flushed by the teardown %" PRIu64 ", QP error "
	       "events %" PRIu64 ", failed checks %" PRIu64 "\n", n ? line : "none", t->justified,
	       errors > t->teardown + t->justified ? errors - t->teardown - t->justified : 0,
	       t->teardown, t->qp_events, t->failures);
	printf("soak: UD datagrams sent %" PRIu64 ", received %" PRIu64 " (%" PRIu64 " not: lost, "
	       "or dropped at a receive buffer's page fault %" PRIu64 " / %" PRIu64 " or with no "
	       "receive WQE %" PRIu64 " / %" PRIu64 "), duplicates %" PRIu64 "\n", t->ud_sent,
	       t->ud_received, t->ud_sent - t->ud_received, BOTH("drop_rnr"),
	       BOTH("drop_ud_no_wqe"), t->ud_dups);
	printf("soak: faults (%s / %s): raised %" PRIu64 " / %" PRIu64 ", failed (injected) %"
	       PRIu64 " / %" PRIu64 ", pages %" PRIu64 " / %" PRIu64 ", evictions %" PRIu64 " / %"
	       PRIu64 "\n", r->e->host[0].name, r->e->host[1].name, BOTH("faults_raised"),
	       BOTH("faults_failed"), BOTH("page_fault_pages"), BOTH("evictions"));
	printf("soak: transport: retransmits %" PRIu64 " / %" PRIu64 ", timeouts %" PRIu64 " / %"
	       PRIu64 ", RNR NAKs sent %" PRIu64 " / %" PRIu64 ", stalls %" PRIu64 " / %" PRIu64
	       "\n", BOTH("retransmits"), BOTH("timeouts"), BOTH("rnr_naks_sent"), BOTH("stalls"));
	printf("soak: wire injected: dropped %" PRIu64 " / %" PRIu64 ", duplicated %" PRIu64
	       " / %" PRIu64 ", reordered %" PRIu64 " / %" PRIu64 " (of %" PRIu64 " / %" PRIu64
	       " packets sent)\n", BOTH("wire_dropped"), BOTH("wire_duplicated"),
	       BOTH("wire_reordered"), BOTH("pkts_sent"));
	for (int i = 0; i < 2; i++) {
		char now[256], then[256];

		soak_hold_str(&end[i], now, sizeof(now));
		soak_hold_str(&r->base[i], then, sizeof(then));
		printf("soak: %s at the end: %s (max rss %ld MiB); at the start: %s\n",
		       r->e->host[i].name, now, r->rss_max[i] / 1024, then);
	}
	/* a soak whose faults did not happen proves nothing */
	T_CHECK(t->by_status[ODPEMU_WC_SUCCESS] > 0 && t->bytes > 0, "no WR succeeded");
	T_CHECK(t->rounds_rc && t->rounds_ud && t->rounds_victim, "a kind of round never ran");
	T_CHECK(t->ud_received > 0, "no datagram arrived");
	T_CHECK(soak_ctr(&c[0], "wire_dropped") + soak_ctr(&c[1], "wire_dropped") > 0 &&
		soak_ctr(&c[0], "wire_duplicated") + soak_ctr(&c[1], "wire_duplicated") > 0 &&
		soak_ctr(&c[0], "wire_reordered") + soak_ctr(&c[1], "wire_reordered") > 0,
		"the wire injector dropped, duplicated or reordered nothing");
	T_CHECK(soak_ctr(&c[0], "faults_failed") + soak_ctr(&c[1], "faults_failed") > 0 &&
		soak_ctr(&c[0], "evictions") + soak_ctr(&c[1], "evictions") > 0,
		"no fault failed or no page was evicted");
	T_CHECK(soak_ctr(&c[0], "retransmits") + soak_ctr(&c[1], "retransmits") > 0,
		"nothing was retransmitted");
	if (t->failures)
		fprintf(stderr, "soak: %" PRIu64 " failed checks in the workers, first: %s\n",
			t->failures, t->first_failure);
	T_EQ(t->failures, 0, "failed checks in the workers");
#undef BOTH
	soak_ctrs_free(&c[0]);
	soak_ctrs_free(&c[1]);
}

/* On a failure, the daemons' whole logs outlive the hosts (h_down removes the run
 * directory): copied to $ODPEMU_SOAK_LOGS, else /tmp/soak-logs-PID. */
static void keep_logs(struct h_env *e)
{
	const char *dir = getenv("ODPEMU_SOAK_LOGS");
	char def[64], cmd[1024];

	if (!dir || !*dir) {
		snprintf(def, sizeof(def), "/tmp/soak-logs-%d", (int)getpid());
		dir = def;
	}
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s' '%s' '%s/' 2>/dev/null", dir,
		 e->host[0].log, e->host[1].log, dir);
	if (system(cmd) == 0)
		fprintf(stderr, "soak: the daemons' logs are in %s\n", dir);
}

/* One worker runs a few rounds of each kind first, so the daemons' lazily made state
 * (threads, caches, the fault handler's files) exists before the baseline is taken. */
static bool warm_up(struct run *r)
{
	long long until = soak_ms() + 120000;
	int status = 0;
	pid_t pid = spawn(r, 0, WARMUP_ROUNDS), got = 0;

	r->worker[0] = pid;
	while (pid && (got = waitpid(pid, &status, WNOHANG)) == 0 && soak_ms() < until)
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
	if (pid && got != pid) {
		show_stuck(pid);
		if (r->sh->slot[0].victim_pid > 0)
			show_stuck(r->sh->slot[0].victim_pid);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		T_CHECK(0, "the warm-up worker took more than 120 s");
	}
	if (pid)
		gone(r, 0, status, false);
	return !t_failures;
}

static void body(struct h_env *e)
{
	struct run *r = calloc(1, sizeof(*r));
	struct soak_hold end[2];
	long long t0, stop_at, next_kill, next_sample = 0, next_progress;

	if (!r)
		abort();
	r->e = e;
	r->rng = e->rng;
	r->sh = mmap(NULL, sizeof(*r->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (r->sh == MAP_FAILED) {
		T_CHECK(0, "mmap: %s", strerror(errno));
		free(r);
		return;
	}
	for (int i = 0; i < 2; i++) {
		r->daemon[i] = soak_daemon_pid(e, i);
		T_CHECK(r->daemon[i] > 0, "no odpemud process for %s", e->host[i].name);
	}
	if (t_failures || !warm_up(r)) {
		munmap(r->sh, sizeof(*r->sh));
		free(r);
		return;
	}
	for (int i = 0; i < 2; i++) {	/* the warm-up's sessions end asynchronously */
		long long until = soak_ms() + SETTLE_MS;

		while (soak_hold_read(e->ctx[i], r->daemon[i], &r->base[i]),
		       r->base[i].obj[0] != 1 && soak_ms() < until)
			nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
		r->rss_max[i] = r->base[i].rss_kib;
	}
	t0 = soak_ms();
	stop_at = t0 + opt.seconds * 1000ll;
	next_kill = t0 + opt.kill_min_ms + (long long)t_below(&r->rng, opt.kill_max_ms -
								opt.kill_min_ms + 1);
	next_progress = t0 + 60000;
	for (int i = 0; i < (int)opt.workers; i++)
		r->worker[i] = spawn(r, i, 0);
	for (long long now; (now = soak_ms()) < stop_at; ) {
		if (!reap(r) || !daemon_alive(r, 0) || !daemon_alive(r, 1))
			break;
		if (now >= next_kill) {
			kill_one(r);
			next_kill = soak_ms() + opt.kill_min_ms +
				    (long long)t_below(&r->rng, opt.kill_max_ms - opt.kill_min_ms + 1);
		}
		if (now >= next_sample) {
			sample(r);
			next_sample = now + 1000;
		}
		if (opt.long_mode && now >= next_progress) {
			progress(r, t0);
			next_progress = now + 60000;
		}
		nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
	}
	stop_all(r);
	if (!r->daemon_dead) {
		sample(r);
		check_end(r, end);
	} else {	/* what is left of the daemons proves nothing */
		memcpy(end, r->base, sizeof(end));
	}
	summary(r, end, (unsigned)((soak_ms() - t0) / 1000));
	if (t_failures)
		keep_logs(e);
	munmap(r->sh, sizeof(*r->sh));
	free(r);
}

int main(int argc, char **argv)
{
	static char seed_a[24], seed_b[24];
	static const char *args[2][16];
	struct h_test t = { .name = "soak", .open = H_OPEN_BOTH, .body = body };

	parse(argc, argv);
	snprintf(seed_a, sizeof(seed_a), "%" PRIu64, opt.seed * 2 + 1);
	snprintf(seed_b, sizeof(seed_b), "%" PRIu64, opt.seed * 2 + 2);
	for (int i = 0; i < 2; i++) {
		/* a packet meets its sender's tx knobs and its receiver's rx knobs: half the
		 * rate each (both hooks in use), the whole rate per packet */
		const char *a[] = { "--wire-loss", "both:0.01", "--wire-dup", "both:0.0025",
			"--wire-reorder", "both:0.005", "--evict-rate", "200/s", "--fault-delay-us",
			"uniform:0-200", "--fault-fail-rate", "0.01", "--seed", i ? seed_b : seed_a,
			NULL };

		memcpy(args[i], a, sizeof(a));
		t.daemon_args[i] = args[i];
	}
	t.seed = opt.seed;
	t.watchdog_s = opt.seconds + 600;
	printf("soak: %u s, %u workers%s\n", opt.seconds, opt.workers,
	       opt.long_mode ? ", long mode" : "");
	return h_main(argc, argv, &t);
}
