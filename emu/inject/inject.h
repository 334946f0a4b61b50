/* SPDX-License-Identifier: MIT */
/*
 * inject — seeded fault injection for odpemud: how slow the host fault handler is
 * (--fault-delay-us), how often it fails (--fault-fail-rate) and how often the daemon evicts
 * pages behind the application's back (--evict-rate). One seed reproduces one run.
 *
 * RANDOMNESS. xoshiro256** seeded through splitmix64, one independent stream per purpose
 * (enum emu_stream): a draw added to one purpose never shifts the numbers another sees, so
 * turning on evictions does not change which faults fail. Other modules (e.g. wire loss) may
 * take a stream of their own with emu_rng_seed(&r, inj->seed, EMU_STREAM_...).
 *
 * THREADING. The loop thread owns struct emu_inject: it parses options, applies control
 * socket changes (the setters) and draws evictions. The fault thread draws a job's failure
 * and delay with emu_inject_draw_job(). `lock` guards exactly what both threads touch: the
 * delay spec, the fail rate and their two streams (one uncontended mutex per job is ~20 ns,
 * and a mutex, unlike per-field atomics, never lets a draw see half of a new delay spec).
 * The evict_* fields are the loop thread's alone and take no lock.
 *
 * PARSERS return 0 or -EINVAL and, on error, write a message naming the value and the fix
 * into msg (may be NULL). Numbers are plain decimals ("250", "0.5", "1e-3"): no sign, no
 * spaces, no hex, inf or nan, nothing after the value. The C locale's decimal point is
 * assumed (the daemon never calls setlocale).
 */
#ifndef ODPEMU_EMU_INJECT_H
#define ODPEMU_EMU_INJECT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the generator ---- */

struct emu_rng {
	uint64_t s[4];
};

enum emu_stream {
	EMU_STREAM_FAULT_DELAY = 1,
	EMU_STREAM_FAULT_FAIL = 2,
	EMU_STREAM_EVICT = 3,
	EMU_STREAM_WIRE = 4,	/* the wire injector: one sub-stream per knob and direction
				 * in the upper 32 bits (wire.h) */
};

/* Seed stream `stream` of `seed`: different streams of one seed are independent. */
void emu_rng_seed(struct emu_rng *r, uint64_t seed, uint64_t stream);
uint64_t emu_rng_next(struct emu_rng *r);
/* Uniform in [0, 1), 53 bits. */
double emu_rng_unit(struct emu_rng *r);

/* ---- strict numbers (the wire injector parses its own values with them) ---- */

/* A number as PARSERS above describe it, at *s and no larger than max; advances *s past it
 * and leaves the rest to the caller. 0 or -EINVAL (*s and out unchanged). */
int emu_number_parse(const char **s, double max, double *out);
/* v (finite, >= 0) as the shortest decimal that parses back to v exactly: "0.1", not
 * "0.10000000000000001". Returns snprintf's count. */
int emu_number_format(double v, char *buf, size_t len);

/* ---- fault delay: --fault-delay-us ---- */

#define EMU_DELAY_MAX_US 3.6e9	/* one hour: larger specs are typos, not tests */

enum emu_delay_kind {
	EMU_DELAY_FIXED,	/* a: the delay ("N"; "0" is off) */
	EMU_DELAY_UNIFORM,	/* [a, b] ("uniform:A-B") */
	EMU_DELAY_EXP,		/* exponential, mean a ("exp:MEAN") */
	EMU_DELAY_NORMAL,	/* mean a, deviation b, negative draws become 0 ("normal:MEAN,SD") */
};
struct emu_delay {
	enum emu_delay_kind kind;
	double a_us, b_us;
};

/* "N", "uniform:A-B" (A <= B), "exp:MEAN", "normal:MEAN,SD"; microseconds, each value
 * <= EMU_DELAY_MAX_US. */
int emu_delay_parse(const char *s, struct emu_delay *out, char *msg, size_t msglen);
/* The spec back as text (what the parser accepts); returns snprintf's count. */
int emu_delay_format(const struct emu_delay *d, char *buf, size_t len);
/* One delay in nanoseconds (<= EMU_DELAY_MAX_US * 1000). FIXED draws nothing from r. */
uint64_t emu_delay_draw_ns(const struct emu_delay *d, struct emu_rng *r);

/* ---- fault failure: --fault-fail-rate ---- */

/* A probability in [0, 1]: "0", "0.01", "1e-3", "1". */
int emu_prob_parse(const char *s, double *out, char *msg, size_t msglen);
/* True with probability p (p <= 0: always false, drawing nothing; p >= 1: always true). */
bool emu_prob_draw(double p, struct emu_rng *r);

/* ---- evictions: --evict-rate ---- */

#define EMU_EVICT_MAX_PER_S 1e7

/* Evictions per second: "100", "100/s", "0.5/s", "0" (off); <= EMU_EVICT_MAX_PER_S. */
int emu_rate_parse(const char *s, double *per_s, char *msg, size_t msglen);

/* ---- the injector ---- */

struct emu_inject {
	uint64_t seed;
	pthread_mutex_t lock;		/* guards the four fields below */
	struct emu_delay delay;
	double fail_rate;
	struct emu_rng delay_rng, fail_rng;
	/* loop thread only: */
	double evict_per_s;
	uint64_t evict_left_ns;		/* time to the next eviction */
	struct emu_rng evict_rng;
};

/* Everything off (delay 0, fail rate 0, evict rate 0), streams seeded from seed. */
void emu_inject_init(struct emu_inject *inj, uint64_t seed);
void emu_inject_fini(struct emu_inject *inj);

/* Setters: any thread, any time; the next job drawn sees the new value. The streams are not
 * reseeded, so a run that changes a rate at the same point repeats exactly. */
void emu_inject_set_delay(struct emu_inject *inj, const struct emu_delay *d);
void emu_inject_set_fail_rate(struct emu_inject *inj, double p);
void emu_inject_get(struct emu_inject *inj, struct emu_delay *delay, double *fail_rate);

/* The fault thread's draws for one job: always both, in this order, so that a job's delay
 * does not depend on whether it failed. */
struct emu_inject_draw {
	bool fail;
	uint64_t delay_ns;
};
void emu_inject_draw_job(struct emu_inject *inj, struct emu_inject_draw *out);

/* Loop thread only. A Poisson process of rate per_s (0: off); re-arms the next gap. */
void emu_inject_set_evict_rate(struct emu_inject *inj, double per_s);
/* Evictions due in the elapsed_ns since the previous call. Exponential gaps, so counts are
 * Poisson; beyond 4096 due at once (a loop that slept long) the expected count is returned
 * instead of walking each gap. */
unsigned emu_inject_evictions_due(struct emu_inject *inj, uint64_t elapsed_ns);

#endif
