/* SPDX-License-Identifier: MIT */
/*
 * The brick survives kill -9 (issue 15, docs/brick.md "Persistence"): 50 seeded kill
 * points over one backing file (64 MiB, 32 blocks), each:
 *  1. the brick starts on the file as the last one left it;
 *  2. an initiator (brick-crash-client's "run" mode, crash_client.c, on host 0) does seeded ALLOCs, FREEs and
 *     64 KiB WRITEs made durable by a persistent FLUSH, printing each call before it is
 *     sent ("? ...") and once it is answered;
 *  3. the kill: of the brick at a seeded moment, of the brick while the initiator waits
 *     right after an answered ALLOC or an answered FLUSH, or of the brick's daemon (the
 *     brick then ends on DEVICE_REMOVAL, and the daemon is started again);
 *  4. the brick starts again and a verifier (its "verify" mode) checks: LIST holds every
 *     answered ALLOC not answered-FREEd, nothing else but the one call in flight; every
 *     flushed range reads back what was written; a range written but never answered is
 *     not claimed.
 * The model (what must hold) lives in this process; each kill's outcome updates it.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "brick_run.h"
#include "crash.h"
#include "t.h"

#define KILLS 50
#define FILE_NAME "brick-crash.img"
#define MODEL_FILE "brick-crash.model"

/* ---- the model and the kills (this process) ---- */

struct model {
	bool alloc[IDS];
	uint32_t data[IDS][POS];	/* flushed seed, 0: nothing claimed */
	int in_flight_alloc, in_flight_free;	/* the id, or -1 */
};

/* An initiator's output, applied: answered calls change the model; the call in flight
 * (printed with "?", never answered) makes its id uncertain. */
static void apply(struct model *m, const char *out)
{
	char kind, q;
	unsigned k, pos, seed;
	int fk = -1, fpos = -1;

	m->in_flight_alloc = m->in_flight_free = -1;
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "") {
		if (sscanf(l, "? %c %u %u", &q, &k, &pos) >= 2) {
			fk = q == 'W' ? -1 : (int)k;
			fpos = q == 'W' ? (int)(k * POS + pos) : -1;
			if (q == 'A')
				m->in_flight_alloc = (int)k;
			if (q == 'F')
				m->in_flight_free = (int)k;
			continue;
		}
		if (sscanf(l, "%c %u", &kind, &k) != 2 || k >= IDS)
			continue;
		m->in_flight_alloc = m->in_flight_free = fk = fpos = -1;
		if (kind == 'A')
			m->alloc[k] = true;
		else if (kind == 'F') {
			m->alloc[k] = false;
			memset(m->data[k], 0, sizeof(m->data[k]));
		} else if (kind == 'W' && sscanf(l, "W %u %u %u", &k, &pos, &seed) == 3 && pos < POS)
			m->data[k][pos] = seed;
	}
	(void)fk;
	if (fpos >= 0)		/* a write never answered: its range is not claimed */
		m->data[fpos / POS][fpos % POS] = 0;
}

static int write_model(const struct model *m)
{
	FILE *f = fopen(MODEL_FILE, "w");

	if (!f)
		return -1;
	for (unsigned k = 0; k < IDS; k++) {
		bool uncertain = (int)k == m->in_flight_alloc || (int)k == m->in_flight_free;

		if (m->alloc[k] || uncertain)
			fprintf(f, "%c %u\n", m->alloc[k] && !uncertain ? 'A' : 'M', k);
		for (unsigned p = 0; p < POS && m->alloc[k] && !uncertain; p++)
			if (m->data[k][p])
				fprintf(f, "D %u %u %u\n", k, p, m->data[k][p]);
	}
	return fclose(f);
}

/* After the verifier: the listed ids are the truth (the uncertain call resolved). */
static void resolve(struct model *m, const char *out)
{
	bool listed[IDS] = { 0 };
	unsigned k;

	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "")
		if (sscanf(l, "L %u", &k) == 1 && k < IDS)
			listed[k] = true;
	for (k = 0; k < IDS; k++) {
		if (!listed[k] || (int)k == m->in_flight_alloc)
			memset(m->data[k], 0, sizeof(m->data[k]));
		m->alloc[k] = listed[k];
	}
}

enum kill_kind { KILL_AT_TIME, KILL_AFTER_ALLOC, KILL_AFTER_FLUSH, KILL_DAEMON };

static const char *const kind_name[] = { "brick at a seeded moment",
	"brick after an answered ALLOC", "brick after an answered FLUSH", "brick's daemon" };

static int brick_up(struct h_env *e, struct br_brick *b)
{
	return br_start(e, b, FILE_NAME, "64M", NULL);
}

/* One kill point: run, kill, restart, verify. false when the test cannot go on. */
static bool kill_point(struct h_env *e, struct br_brick *b, struct model *m, unsigned i)
{
	enum kill_kind kind = (enum kill_kind)(i % 4);
	unsigned delay_ms = 5 + (unsigned)(t_rand(&e->rng) % 150);
	char seed[32], pause[16], *out = NULL;
	const char *args[] = { "run", seed, pause, NULL }, *vargs[] = { "verify", MODEL_FILE, NULL };
	struct tr_proc p;
	struct cr_args a;
	unsigned long failed = t_failures;

	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)t_rand(&e->rng));
	snprintf(pause, sizeof(pause), "%s", kind == KILL_AFTER_ALLOC ? "a" :
		 kind == KILL_AFTER_FLUSH ? "w" : "-");
	if (br_client_start(e, b, args, &p, &a))
		return false;
	if (!tr_wait_for(&p, "READY", 20000))
		T_CHECK(0, "kill %u: the initiator connected", i);
	if (kind == KILL_AFTER_ALLOC || kind == KILL_AFTER_FLUSH)
		T_CHECK(tr_wait_for(&p, "PAUSED", 20000), "kill %u: the initiator paused", i);
	else
		usleep(delay_ms * 1000);
	if (kind == KILL_DAEMON) {
		h_daemon_stop(e, 1, SIGKILL);
		T_CHECK(br_stop(b, 0) == 1, "kill %u: the brick ends on its daemon's death", i);
		BR_EQ(h_daemon_start(e, 1, NULL), 0, "kill %u: the daemon starts again", i);
	} else {
		br_stop(b, SIGKILL);
	}
	kill(p.pid, SIGKILL);
	cr_collect(&p, &a, 20, &out);
	apply(m, out);
	printf("kill %2u (%s", i, kind_name[kind]);
	if (kind == KILL_AT_TIME || kind == KILL_DAEMON)
		printf(", %u ms in", delay_ms);
	printf("): %zu bytes of initiator log\n", out ? strlen(out) : 0);
	free(out);
	out = NULL;
	if (write_model(m) || brick_up(e, b)) {
		T_CHECK(0, "kill %u: the brick starts again", i);
		return false;
	}
	BR_EQ(br_client(e, b, vargs, &out, 120), 0, "kill %u (%s): the verifier", i,
	     kind_name[kind]);
	if (t_failures != failed)
		printf("%s", out ? out : "");
	else if (out && strstr(out, "verified "))
		printf("  %.*s", (int)strcspn(strstr(out, "verified "), "\n") + 1,
		       strstr(out, "verified "));
	resolve(m, out);
	free(out);
	return t_failures == failed;
}

static void body(struct h_env *e)
{
	struct model m = { .in_flight_alloc = -1, .in_flight_free = -1 };
	struct br_brick b;
	unsigned i;

	unlink(FILE_NAME);
	unlink(FILE_NAME ".meta");
	if (brick_up(e, &b)) {
		T_CHECK(0, "the brick starts");
		return;
	}
	for (i = 0; i < KILLS && kill_point(e, &b, &m, i); i++)
		;
	BR_EQ(i, KILLS, "all %u kill points ran", KILLS);
	br_stop(&b, SIGTERM);
	unlink(FILE_NAME);
	unlink(FILE_NAME ".meta");
	unlink(MODEL_FILE);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "brick-crash", .seed = 15,
		.watchdog_s = 1500, .body = body };

	return h_main(argc, argv, &t);
}
