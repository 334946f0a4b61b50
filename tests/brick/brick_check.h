/* SPDX-License-Identifier: MIT */
/* brick_check — checks shared by the brick's tests and their initiator programs. */
#ifndef ODPEMU_TESTS_BRICK_CHECK_H
#define ODPEMU_TESTS_BRICK_CHECK_H

#include <stdio.h>

#include "t.h"

/* Equality of two integers with a formatted message, both printed (signed) on failure:
 * the brick's calls return negative errnos. */
#define BR_EQ(a, b, ...) do { \
		long long br_a_ = (long long)(a), br_b_ = (long long)(b); \
		T_CHECK(br_a_ == br_b_, __VA_ARGS__); \
		if (br_a_ != br_b_) \
			fprintf(stderr, "    got %lld, want %lld\n", br_a_, br_b_); \
	} while (0)

#endif
