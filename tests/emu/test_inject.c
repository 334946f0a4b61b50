/* SPDX-License-Identifier: MIT */
/* emu/inject: the option parsers (good and bad values), determinism per seed, independence
 * of the streams, the shape of the delay distributions, the eviction process, and a setter
 * racing the fault thread's draws (for -fsanitize=thread). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "inject/inject.h"
#include "t.h"

static void test_rng(uint64_t seed)
{
	struct emu_rng a, b, c;
	int same = 0, diff = 0;

	emu_rng_seed(&a, seed, 1);
	emu_rng_seed(&b, seed, 1);
	emu_rng_seed(&c, seed, 2);
	for (int i = 0; i < 1000; i++) {
		uint64_t x = emu_rng_next(&a), y = emu_rng_next(&b), z = emu_rng_next(&c);

		same += x == y;
		diff += x != z;
	}
	T_EQ(same, 1000, "one seed and stream repeat");
	T_EQ(diff, 1000, "streams differ");
	for (int i = 0; i < 10000; i++) {
		double u = emu_rng_unit(&a);

		if (!(u >= 0 && u < 1)) {
			T_CHECK(0, "unit out of [0,1): %g", u);
			break;
		}
	}
}

static void delay_ok(const char *s, enum emu_delay_kind kind, double a, double b)
{
	struct emu_delay d;
	char msg[256] = "", back[128];

	T_EQ(emu_delay_parse(s, &d, msg, sizeof(msg)), 0, s);
	T_CHECK(d.kind == kind && d.a_us == a && d.b_us == b, "%s: kind %d a %g b %g", s,
		(int)d.kind, d.a_us, d.b_us);
	emu_delay_format(&d, back, sizeof(back));
	{
		struct emu_delay e;

		T_CHECK(!emu_delay_parse(back, &e, NULL, 0) && e.kind == d.kind &&
			e.a_us == d.a_us && e.b_us == d.b_us, "%s: format gives '%s'", s, back);
	}
}

static void delay_bad(const char *s)
{
	struct emu_delay d = { EMU_DELAY_EXP, 7, 7 };
	char msg[256] = "";

	T_EQ(emu_delay_parse(s, &d, msg, sizeof(msg)), -EINVAL, s ? s : "(null)");
	T_CHECK(d.kind == EMU_DELAY_EXP && d.a_us == 7, "%s: out changed on error", s);
	T_CHECK(strstr(msg, "fault delay") && strstr(msg, "exp:MEAN") &&
		(!s || strstr(msg, s)), "%s: message '%s'", s, msg);
}

static void test_delay_parse(void)
{
	delay_ok("0", EMU_DELAY_FIXED, 0, 0);
	delay_ok("500", EMU_DELAY_FIXED, 500, 0);
	delay_ok("0.5", EMU_DELAY_FIXED, 0.5, 0);
	delay_ok(".5", EMU_DELAY_FIXED, 0.5, 0);
	delay_ok("1e3", EMU_DELAY_FIXED, 1000, 0);
	delay_ok("3600000000", EMU_DELAY_FIXED, 3.6e9, 0);
	delay_ok("uniform:10-20", EMU_DELAY_UNIFORM, 10, 20);
	delay_ok("uniform:5-5", EMU_DELAY_UNIFORM, 5, 5);
	delay_ok("uniform:0.5-1e2", EMU_DELAY_UNIFORM, 0.5, 100);
	delay_ok("exp:100", EMU_DELAY_EXP, 100, 0);
	delay_ok("exp:0", EMU_DELAY_EXP, 0, 0);
	delay_ok("normal:100,10", EMU_DELAY_NORMAL, 100, 10);
	delay_ok("normal:100,0", EMU_DELAY_NORMAL, 100, 0);

	const char *bad[] = {
		"", "-1", "+1", "abc", "10us", " 10", "10 ", "1.2.3", ".", "e5", "1e", "1e+",
		"inf", "nan", "0x10", "1e400", "3600000001", "99999999999999999999999999",
		"0.00000000000000000000000000000000000000000000000000000000000000000000001",
		"uniform:", "uniform:20-10", "uniform:10", "uniform:10-", "uniform:-10-20",
		"uniform:1-2x", "uniform:1,2", "exp:", "exp:-5", "exp:1,2", "exp:abc",
		"normal:100", "normal:100,", "normal:100,-1", "normal:1,2,3", "normal:-1,2",
		"Exp:5", "exp :5", "fixed:5", "5:", NULL,
	};
	for (size_t i = 0; i < T_ARRAY_SIZE(bad); i++)
		delay_bad(bad[i]);
}

static double mean_us(const struct emu_delay *d, uint64_t seed, int n, uint64_t *min,
	uint64_t *max)
{
	struct emu_rng r;
	double sum = 0;

	emu_rng_seed(&r, seed, EMU_STREAM_FAULT_DELAY);
	*min = UINT64_MAX;
	*max = 0;
	for (int i = 0; i < n; i++) {
		uint64_t ns = emu_delay_draw_ns(d, &r);

		sum += (double)ns;
		*min = ns < *min ? ns : *min;
		*max = ns > *max ? ns : *max;
	}
	return sum / n / 1000.0;
}

static void test_delay_draw(uint64_t seed)
{
	struct emu_delay fixed = { EMU_DELAY_FIXED, 500, 0 }, uni = { EMU_DELAY_UNIFORM, 10, 20 };
	struct emu_delay ex = { EMU_DELAY_EXP, 100, 0 }, nor = { EMU_DELAY_NORMAL, 100, 10 };
	struct emu_delay clamp = { EMU_DELAY_NORMAL, 10, 100 };
	uint64_t lo, hi;
	double m;

	m = mean_us(&fixed, seed, 100, &lo, &hi);
	T_CHECK(lo == 500000 && hi == 500000, "fixed: %llu..%llu", (unsigned long long)lo,
		(unsigned long long)hi);
	m = mean_us(&uni, seed, 10000, &lo, &hi);
	T_CHECK(lo >= 10000 && hi <= 20000 && fabs(m - 15) < 0.5, "uniform: mean %g, %llu..%llu",
		m, (unsigned long long)lo, (unsigned long long)hi);
	m = mean_us(&ex, seed, 10000, &lo, &hi);
	T_CHECK(fabs(m - 100) < 10, "exp:100 mean %g", m);
	T_CHECK(hi > 400000, "exp:100 has a tail: max %llu ns", (unsigned long long)hi);
	m = mean_us(&nor, seed, 10000, &lo, &hi);
	T_CHECK(fabs(m - 100) < 2, "normal:100,10 mean %g", m);
	/* Mostly negative draws clamp at 0: a mean above 10 and a minimum of exactly 0. */
	m = mean_us(&clamp, seed, 10000, &lo, &hi);
	T_CHECK(lo == 0 && m > 10, "normal:10,100 clamped: mean %g min %llu", m,
		(unsigned long long)lo);
}

static void test_prob(uint64_t seed)
{
	const char *good[] = { "0", "0.01", "1e-3", "1", "1.0", "0.5", "1e0" };
	const double want[] = { 0, 0.01, 1e-3, 1, 1, 0.5, 1 };
	const char *bad[] = { "-1", "2", "abc", "1.5", "", "0.5x", "nan", "1e1", " 0.5", NULL };
	struct emu_rng r;
	char msg[256];
	double p;
	int hits = 0;

	for (size_t i = 0; i < T_ARRAY_SIZE(good); i++)
		T_CHECK(!emu_prob_parse(good[i], &p, msg, sizeof(msg)) && p == want[i],
			"prob %s", good[i]);
	for (size_t i = 0; i < T_ARRAY_SIZE(bad); i++) {
		msg[0] = '\0';
		T_EQ(emu_prob_parse(bad[i], &p, msg, sizeof(msg)), -EINVAL, "bad prob");
		T_CHECK(strstr(msg, "fail rate") && strstr(msg, "0 to 1"), "message '%s'", msg);
	}
	emu_rng_seed(&r, seed, EMU_STREAM_FAULT_FAIL);
	for (int i = 0; i < 1000; i++)
		T_CHECK(!emu_prob_draw(0, &r) && emu_prob_draw(1, &r), "p 0 / 1 at %d", i);
	for (int i = 0; i < 20000; i++)
		hits += emu_prob_draw(0.25, &r);
	T_CHECK(hits > 4600 && hits < 5400, "p 0.25: %d of 20000", hits);
}

static void test_rate_parse(void)
{
	const char *good[] = { "100", "100/s", "0", "0.5/s", "1e7" };
	const double want[] = { 100, 100, 0, 0.5, 1e7 };
	const char *bad[] = { "-1", "100/m", "100/", "abc", "1e8", "/s", "100 /s", "100/s ", "",
		NULL };
	char msg[256];
	double v;

	for (size_t i = 0; i < T_ARRAY_SIZE(good); i++)
		T_CHECK(!emu_rate_parse(good[i], &v, msg, sizeof(msg)) && v == want[i],
			"rate %s", good[i]);
	for (size_t i = 0; i < T_ARRAY_SIZE(bad); i++) {
		msg[0] = '\0';
		T_EQ(emu_rate_parse(bad[i], &v, msg, sizeof(msg)), -EINVAL, "bad rate");
		T_CHECK(strstr(msg, "evict rate") && strstr(msg, "per second"), "message '%s'", msg);
	}
}

static unsigned evictions(uint64_t seed, double rate, uint64_t step_ns, uint64_t total_ns)
{
	struct emu_inject inj;
	unsigned n = 0;

	emu_inject_init(&inj, seed);
	emu_inject_set_evict_rate(&inj, rate);
	for (uint64_t t = 0; t < total_ns; t += step_ns)
		n += emu_inject_evictions_due(&inj, step_ns);
	emu_inject_fini(&inj);
	return n;
}

static void test_evict(uint64_t seed)
{
	unsigned a = evictions(seed, 1000, 1000000, 1000000000);
	unsigned b = evictions(seed, 1000, 1000000000, 1000000000);
	unsigned big = evictions(seed, 1e6, 1000000000, 1000000000);

	T_EQ(evictions(seed, 0, 1000000, 1000000000), 0, "rate 0");
	T_CHECK(a > 900 && a < 1100, "1000/s over 1 s: %u", a);
	/* The process does not depend on how the loop slices time. */
	T_EQ(a, b, "1 ms steps == one 1 s step");
	T_EQ(evictions(seed, 1000, 1000000, 1000000000), a, "repeatable");
	T_CHECK(big == 1000000, "1e6/s over 1 s in one call: %u", big);
	T_CHECK(evictions(seed + 1, 1000, 1000000, 1000000000) != a ||
		evictions(seed + 2, 1000, 1000000, 1000000000) != a, "seeds differ");
}

/* Failures drawn from their own stream: turning them on leaves every delay unchanged. */
static void test_streams(uint64_t seed)
{
	struct emu_inject x, y;
	struct emu_delay ex = { EMU_DELAY_EXP, 100, 0 };
	int same = 0, failed = 0;

	emu_inject_init(&x, seed);
	emu_inject_init(&y, seed);
	emu_inject_set_delay(&x, &ex);
	emu_inject_set_delay(&y, &ex);
	emu_inject_set_fail_rate(&y, 0.5);
	emu_inject_set_evict_rate(&y, 1000);
	for (int i = 0; i < 1000; i++) {
		struct emu_inject_draw dx, dy;

		emu_inject_draw_job(&x, &dx);
		emu_inject_draw_job(&y, &dy);
		emu_inject_evictions_due(&y, 12345);
		same += dx.delay_ns == dy.delay_ns;
		failed += dy.fail;
		T_CHECK(!dx.fail, "fail rate 0 failed");
	}
	T_EQ(same, 1000, "delays independent of failures and evictions");
	T_CHECK(failed > 400 && failed < 600, "fail 0.5: %d of 1000", failed);
	emu_inject_fini(&x);
	emu_inject_fini(&y);
}

/* The loop thread's setters against the fault thread's draws: the drawer runs until told to
 * stop, then draws once more, and that draw must see the last setting. */
static atomic_bool drawing_done;
static uint64_t last_draw_ns;

static void *drawer(void *arg)
{
	struct emu_inject *inj = arg;
	struct emu_inject_draw d;

	while (!atomic_load(&drawing_done))
		emu_inject_draw_job(inj, &d);
	emu_inject_draw_job(inj, &d);
	last_draw_ns = d.delay_ns;
	return NULL;
}

static void test_threads(uint64_t seed)
{
	struct emu_delay a = { EMU_DELAY_UNIFORM, 1, 2 }, b = { EMU_DELAY_FIXED, 3, 0 }, got;
	struct emu_inject inj;
	pthread_t th;
	double p;

	emu_inject_init(&inj, seed);
	T_EQ(pthread_create(&th, NULL, drawer, &inj), 0, "thread");
	for (int i = 0; i < 20000; i++) {
		emu_inject_set_delay(&inj, i & 1 ? &a : &b);
		emu_inject_set_fail_rate(&inj, (i % 10) / 10.0);
	}
	atomic_store(&drawing_done, true);
	pthread_join(th, NULL);
	emu_inject_get(&inj, &got, &p);
	T_CHECK(got.kind == EMU_DELAY_UNIFORM && p == 0.9, "last set wins");
	T_CHECK(last_draw_ns >= 1000 && last_draw_ns <= 2000, "a draw after the last set: %llu ns",
		(unsigned long long)last_draw_ns);
	emu_inject_fini(&inj);
}

int main(int argc, char **argv)
{
	uint64_t seed = t_seed(argc, argv, 42);

	test_rng(seed);
	test_delay_parse();
	test_delay_draw(seed);
	test_prob(seed);
	test_rate_parse();
	test_evict(seed);
	test_streams(seed);
	test_threads(seed);
	return t_done("emu-inject");
}
