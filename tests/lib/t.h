/* SPDX-License-Identifier: MIT */
/* Shared test helpers (prefix t_): checks that count failures, a seeded PRNG, and the
 * exit convention 0 pass / 1 fail / 77 skip (what `meson test` understands). */
#ifndef ODPEMU_TESTS_T_H
#define ODPEMU_TESTS_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define T_SKIP 77

/* The number of elements of an array (an array, not a pointer to one). */
#define T_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

extern unsigned long t_failures;
extern unsigned long t_checks;

void t_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record a failure and go on (prints at most the first 50 failures). */
#define T_CHECK(cond, ...) do { \
		t_checks++; \
		if (!(cond)) t_fail_at(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/* Equality of two integers, printing both in hex on failure. */
#define T_EQ(a, b, what) do { \
		unsigned long long t_a_ = (unsigned long long)(a), t_b_ = (unsigned long long)(b); \
		T_CHECK(t_a_ == t_b_, "%s: got 0x%llx, want 0x%llx", (what), t_a_, t_b_); \
	} while (0)

/* Print the summary; returns the process exit code (0 or 1). */
int t_done(const char *name);

/* A small, fast, seedable PRNG (splitmix64): one seed reproduces one run. */
struct t_rng { uint64_t s; };
uint64_t t_rand(struct t_rng *r);
/* Uniform in [0, n) (n > 0). */
uint64_t t_below(struct t_rng *r, uint64_t n);
void t_fill(struct t_rng *r, void *buf, size_t len);

/* The seed: --seed N on the command line, else $T_SEED, else a fixed default; printed so
 * a failing run can be repeated. */
uint64_t t_seed(int argc, char **argv, uint64_t fallback);

/* A named test case, for programs of several (`--case NAME` runs one). */
struct t_case {
	const char *name;
	void (*fn)(void);
};
/* Run the case named by --case, or all: 0, or 1 (printed) when no case has that name. */
int t_run_cases(int argc, char **argv, const struct t_case *cases, size_t n);

/* Bytes as lowercase hex into out (2*len+1 bytes). */
void t_hex(const void *buf, size_t len, char *out);
/* Parse hex (no separators) into buf; returns bytes written or -1. */
long t_unhex(const char *hex, void *buf, size_t cap);

#endif
