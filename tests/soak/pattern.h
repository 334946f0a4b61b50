/* SPDX-License-Identifier: MIT */
/*
 * pattern — seeded byte patterns: what a WR's bytes must be is a function of one 64-bit
 * seed, so a check needs no copy of what was sent.
 */
#ifndef ODPEMU_TESTS_SOAK_PATTERN_H
#define ODPEMU_TESTS_SOAK_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* buf[0..len) = the pattern of seed. */
void pat_fill(uint64_t seed, void *buf, size_t len);
/* The offset of the first byte of buf[0..len) that is not the pattern of seed, or -1. */
long pat_check(uint64_t seed, const void *buf, size_t len);
/* The seed of item n of stream s (a worker's WRs, a round's canaries). */
uint64_t pat_seed(uint64_t s, uint64_t n);

#endif
