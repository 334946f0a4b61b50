/* SPDX-License-Identifier: MIT */
/*
 * The conformance test's pieces: reading a unittest run's verbose output (results.c),
 * judging it against the allow-list and the known gaps (verdict.c), and 2 MiB huge pages
 * for the suite's huge-page tests (hugepages.c).
 */
#ifndef ODPEMU_TESTS_CONFORMANCE_H
#define ODPEMU_TESTS_CONFORMANCE_H

#include <stdbool.h>
#include <stddef.h>

enum conf_outcome { CONF_PASS, CONF_SKIP, CONF_FAIL, CONF_ERROR, CONF_OUTCOMES };

/* One test of the suite: "test_x (tests.module.Class.test_x)", its outcome and, for a
 * skip, the reason unittest printed. */
struct conf_test {
	char *id;
	enum conf_outcome outcome;
	char *reason;
};

struct conf_results {
	struct conf_test *t;
	size_t n, cap;
	long ran;		/* "Ran N tests", -1 if absent */
};

/* Parse unittest's -v output: every "test_x (tests....) ... RESULT", the result on the same
 * line or on a later one before the next test (a test's own output comes in between). */
void conf_parse(const char *out, struct conf_results *r);
void conf_free(struct conf_results *r);
const char *conf_outcome_name(enum conf_outcome o);

/* Check every result (T_CHECK) and print the counts per outcome and per skip reason.
 * sysfs: the suite saw odpemu-run's sysfs view (without one, tests that need a device's
 * net interface may skip). */
void conf_judge(const struct conf_results *r, bool sysfs);

/* As root: at least CONF_HUGEPAGES free 2 MiB pages for the run (test_odp, test_mr and
 * test_parent_domain map some), the old count put back after. Not root: nothing (the
 * tests that need them skip, a reason in the allow-list). */
#define CONF_HUGEPAGES 16
void conf_hugepages_reserve(void);
void conf_hugepages_restore(void);

#endif
