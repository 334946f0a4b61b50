/* SPDX-License-Identifier: MIT */
#include "t.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

unsigned long t_failures;
unsigned long t_checks;

void t_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (++t_failures > 50)
		return;
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int t_done(const char *name)
{
	printf("%s: %lu checks, %lu failed\n", name, t_checks, t_failures);
	return t_failures ? 1 : 0;
}

uint64_t t_rand(struct t_rng *r)
{
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint64_t t_below(struct t_rng *r, uint64_t n)
{
	return n ? t_rand(r) % n : 0;
}

void t_fill(struct t_rng *r, void *buf, size_t len)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)t_rand(r);
}

uint64_t t_seed(int argc, char **argv, uint64_t fallback)
{
	uint64_t seed = fallback;
	const char *env = getenv("T_SEED");

	if (env && *env)
		seed = strtoull(env, NULL, 0);
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[i + 1], NULL, 0);
	printf("seed %" PRIu64 " (repeat with --seed %" PRIu64 ")\n", seed, seed);
	return seed;
}

int t_run_cases(int argc, char **argv, const struct t_case *cases, size_t n)
{
	const char *only = NULL;
	bool ran = false;

	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--case"))
			only = argv[i + 1];
	for (size_t i = 0; i < n; i++)
		if (!only || !strcmp(only, cases[i].name)) {
			cases[i].fn();
			ran = true;
		}
	if (!ran)
		printf("no case named %s\n", only);
	return ran ? 0 : 1;
}

void t_hex(const void *buf, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * len] = '\0';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

long t_unhex(const char *hex, void *buf, size_t cap)
{
	size_t n = strlen(hex);
	uint8_t *p = buf;

	if (n % 2 || n / 2 > cap)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		p[i] = (uint8_t)(hi << 4 | lo);
	}
	return (long)(n / 2);
}
