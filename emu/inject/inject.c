/* SPDX-License-Identifier: MIT */
/* inject — seeded delays, failures and evictions (see inject.h). */
#include "inject.h"
#include "say.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the generator: splitmix64 seeds xoshiro256** (Blackman & Vigna, prng.di.unimi.it) ---- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

void emu_rng_seed(struct emu_rng *r, uint64_t seed, uint64_t stream)
{
	/* Mix the stream into the splitmix state through one splitmix step of its own, so that
	 * (seed, stream) pairs that differ in either give unrelated sequences. */
	uint64_t st = stream * 0xD1B54A32D192ED03ull;
	uint64_t x = seed ^ splitmix64(&st);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
	/* xoshiro's only bad state is all zero; splitmix64 never yields four zeros in a row, but
	 * the guard is free. */
	if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
		r->s[0] = 1;
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t emu_rng_next(struct emu_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

double emu_rng_unit(struct emu_rng *r)
{
	return (double)(emu_rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- strict numbers ---- */

static const char *skip_digits(const char *q)
{
	while (isdigit((unsigned char)*q))
		q++;
	return q;
}

/* A non-negative decimal at *p: digits [. digits] [e [+-] digits]. strtod alone would also
 * take a sign, leading spaces, hex, "inf" and "nan"; checking the shape first leaves it only
 * the conversion (correctly rounded). Advances *p past the number. */
static int parse_number(const char **p, double *out)
{
	const char *s = *p, *q = skip_digits(s);
	bool digits = q != s;
	char tmp[64], *end;
	double v;

	if (*q == '.') {
		const char *f = skip_digits(q + 1);

		digits = digits || f != q + 1;
		q = f;
	}
	if (!digits)
		return -EINVAL;
	if (*q == 'e' || *q == 'E') {
		const char *e = q + 1 + (q[1] == '+' || q[1] == '-');

		if (!isdigit((unsigned char)*e))
			return -EINVAL;
		q = skip_digits(e);
	}
	if ((size_t)(q - s) >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, (size_t)(q - s));
	tmp[q - s] = '\0';
	errno = 0;
	v = strtod(tmp, &end);
	if (errno == ERANGE || !isfinite(v) || *end)
		return -EINVAL;
	*out = v;
	*p = q;
	return 0;
}

/* A number at *p no larger than max. */
static int parse_bounded(const char **p, double max, double *out)
{
	const char *q = *p;
	double v;

	if (parse_number(&q, &v) || v > max)
		return -EINVAL;
	*out = v;
	*p = q;
	return 0;
}

int emu_number_parse(const char **s, double max, double *out)
{
	return parse_bounded(s, max, out);
}

int emu_number_format(double v, char *buf, size_t len)
{
	/* 15 significant digits round-trip every decimal a person types; the rest need 17. */
	char tmp[40];

	for (int prec = 15; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	return snprintf(buf, len, "%s", tmp);
}

/* ---- delays ---- */

static const char delay_usage[] =
	"use N, uniform:A-B, exp:MEAN or normal:MEAN,SD in microseconds (e.g. 200, exp:200), "
	"each at most 3600000000";

static int delay_fields(const char *s, struct emu_delay *d)
{
	const char *p = s;
	double a = 0, b = 0;

	if (!strncmp(p, "uniform:", 8)) {
		p += 8;
		d->kind = EMU_DELAY_UNIFORM;
		if (parse_bounded(&p, EMU_DELAY_MAX_US, &a) || *p++ != '-' ||
		    parse_bounded(&p, EMU_DELAY_MAX_US, &b) || a > b)
			return -EINVAL;
	} else if (!strncmp(p, "exp:", 4)) {
		p += 4;
		d->kind = EMU_DELAY_EXP;
		if (parse_bounded(&p, EMU_DELAY_MAX_US, &a))
			return -EINVAL;
	} else if (!strncmp(p, "normal:", 7)) {
		p += 7;
		d->kind = EMU_DELAY_NORMAL;
		if (parse_bounded(&p, EMU_DELAY_MAX_US, &a) || *p++ != ',' ||
		    parse_bounded(&p, EMU_DELAY_MAX_US, &b))
			return -EINVAL;
	} else {
		d->kind = EMU_DELAY_FIXED;
		if (parse_bounded(&p, EMU_DELAY_MAX_US, &a))
			return -EINVAL;
	}
	d->a_us = a;
	d->b_us = b;
	return *p ? -EINVAL : 0;
}

int emu_delay_parse(const char *s, struct emu_delay *out, char *msg, size_t msglen)
{
	struct emu_delay d;

	if (!s || delay_fields(s, &d)) {
		emu_say(msg, msglen, "fault delay '%s' is not a delay: %s", s ? s : "(null)",
			delay_usage);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

int emu_delay_format(const struct emu_delay *d, char *buf, size_t len)
{
	char a[40], b[40];

	emu_number_format(d->a_us, a, sizeof(a));
	emu_number_format(d->b_us, b, sizeof(b));
	switch (d->kind) {
	case EMU_DELAY_UNIFORM:
		return snprintf(buf, len, "uniform:%s-%s", a, b);
	case EMU_DELAY_EXP:
		return snprintf(buf, len, "exp:%s", a);
	case EMU_DELAY_NORMAL:
		return snprintf(buf, len, "normal:%s,%s", a, b);
	case EMU_DELAY_FIXED:
		break;
	}
	return snprintf(buf, len, "%s", a);
}

/* A standard normal deviate (Box-Muller). Both uniforms are drawn every time, so each draw
 * consumes exactly two numbers of the stream; 1 - u keeps the log's argument in (0, 1]. */
static double std_normal(struct emu_rng *r)
{
	double u1 = 1.0 - emu_rng_unit(r), u2 = emu_rng_unit(r);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static double draw_us(const struct emu_delay *d, struct emu_rng *r)
{
	switch (d->kind) {
	case EMU_DELAY_UNIFORM:
		return d->a_us + (d->b_us - d->a_us) * emu_rng_unit(r);
	case EMU_DELAY_EXP:
		/* Inverse CDF; log1p(-u) is finite for u in [0, 1). */
		return -d->a_us * log1p(-emu_rng_unit(r));
	case EMU_DELAY_NORMAL:
		return d->a_us + d->b_us * std_normal(r);
	case EMU_DELAY_FIXED:
		break;
	}
	return d->a_us;
}

uint64_t emu_delay_draw_ns(const struct emu_delay *d, struct emu_rng *r)
{
	double us = draw_us(d, r);

	if (!(us > 0))		/* also catches NaN */
		return 0;
	if (us > EMU_DELAY_MAX_US)	/* the exponential's tail */
		us = EMU_DELAY_MAX_US;
	return (uint64_t)(us * 1000.0 + 0.5);
}

/* ---- probabilities and rates ---- */

int emu_prob_parse(const char *s, double *out, char *msg, size_t msglen)
{
	const char *p = s;
	double v;

	if (!s || parse_bounded(&p, 1.0, &v) || *p) {
		emu_say(msg, msglen, "fault fail rate '%s' is not a probability: use a number from 0 "
			"to 1 (e.g. 0.01 or 1e-3)", s ? s : "(null)");
		return -EINVAL;
	}
	*out = v;
	return 0;
}

bool emu_prob_draw(double p, struct emu_rng *r)
{
	if (p <= 0)
		return false;
	return emu_rng_unit(r) < p;	/* unit < 1, so p >= 1 is always true */
}

int emu_rate_parse(const char *s, double *per_s, char *msg, size_t msglen)
{
	const char *p = s;
	double v;

	if (!s || parse_bounded(&p, EMU_EVICT_MAX_PER_S, &v) || (*p && strcmp(p, "/s"))) {
		emu_say(msg, msglen, "evict rate '%s' is not a rate: use evictions per second, "
			"e.g. 100 or 100/s (0 is off, at most 10000000)", s ? s : "(null)");
		return -EINVAL;
	}
	*per_s = v;
	return 0;
}

/* ---- the injector ---- */

void emu_inject_init(struct emu_inject *inj, uint64_t seed)
{
	memset(inj, 0, sizeof(*inj));
	inj->seed = seed;
	pthread_mutex_init(&inj->lock, NULL);
	inj->delay.kind = EMU_DELAY_FIXED;
	emu_rng_seed(&inj->delay_rng, seed, EMU_STREAM_FAULT_DELAY);
	emu_rng_seed(&inj->fail_rng, seed, EMU_STREAM_FAULT_FAIL);
	emu_rng_seed(&inj->evict_rng, seed, EMU_STREAM_EVICT);
}

void emu_inject_fini(struct emu_inject *inj)
{
	pthread_mutex_destroy(&inj->lock);
}

void emu_inject_set_delay(struct emu_inject *inj, const struct emu_delay *d)
{
	pthread_mutex_lock(&inj->lock);
	inj->delay = *d;
	pthread_mutex_unlock(&inj->lock);
}

void emu_inject_set_fail_rate(struct emu_inject *inj, double p)
{
	pthread_mutex_lock(&inj->lock);
	inj->fail_rate = p;
	pthread_mutex_unlock(&inj->lock);
}

void emu_inject_get(struct emu_inject *inj, struct emu_delay *delay, double *fail_rate)
{
	pthread_mutex_lock(&inj->lock);
	if (delay)
		*delay = inj->delay;
	if (fail_rate)
		*fail_rate = inj->fail_rate;
	pthread_mutex_unlock(&inj->lock);
}

void emu_inject_draw_job(struct emu_inject *inj, struct emu_inject_draw *out)
{
	pthread_mutex_lock(&inj->lock);
	out->fail = emu_prob_draw(inj->fail_rate, &inj->fail_rng);
	out->delay_ns = emu_delay_draw_ns(&inj->delay, &inj->delay_rng);
	pthread_mutex_unlock(&inj->lock);
}

/* ---- evictions ---- */

static uint64_t evict_gap_ns(struct emu_inject *inj)
{
	double ns = -1e9 / inj->evict_per_s * log1p(-emu_rng_unit(&inj->evict_rng));

	/* At least 1 ns, so that each loop iteration below consumes time. */
	return ns < 1.0 ? 1 : ns > 1e18 ? (uint64_t)1e18 : (uint64_t)ns;
}

void emu_inject_set_evict_rate(struct emu_inject *inj, double per_s)
{
	inj->evict_per_s = per_s > 0 ? per_s : 0;
	inj->evict_left_ns = inj->evict_per_s > 0 ? evict_gap_ns(inj) : 0;
}

#define EVICT_WALK_MAX 4096

unsigned emu_inject_evictions_due(struct emu_inject *inj, uint64_t elapsed_ns)
{
	double expect = inj->evict_per_s * (double)elapsed_ns * 1e-9;
	unsigned n = 0;

	if (inj->evict_per_s <= 0)
		return 0;
	if (expect > EVICT_WALK_MAX) {
		/* Walking millions of gaps would stall the loop; the mean is what a rate means. */
		inj->evict_left_ns = evict_gap_ns(inj);
		return expect >= 4e9 ? 4000000000u : (unsigned)(expect + 0.5);
	}
	while (elapsed_ns >= inj->evict_left_ns) {
		elapsed_ns -= inj->evict_left_ns;
		inj->evict_left_ns = evict_gap_ns(inj);
		n++;
	}
	inj->evict_left_ns -= elapsed_ns;
	return n;
}
