/* SPDX-License-Identifier: MIT */
/* PSN arithmetic: packet sequence numbers are 24-bit and compared modulo 2^24
 * (IBA 9.7.1: a PSN is "ahead" when it lies in the half-window after the other). */
#ifndef ODPEMU_PROTO_PSN_H
#define ODPEMU_PROTO_PSN_H

#include <stdint.h>

#define ROCE_PSN_MASK 0xFFFFFFu

/* a - b as a signed distance in [-2^23, 2^23): < 0 means a is before b. */
static inline int32_t roce_psn_diff(uint32_t a, uint32_t b)
{
	/* Shift the 24-bit difference into the top of a 32-bit word so the sign bit is
	 * bit 23 of the difference, then shift back arithmetically. */
	return (int32_t)((a - b) << 8) >> 8;
}

/* <0, 0, >0 as a is before, equal to or after b (modulo 2^24). */
static inline int roce_psn_cmp(uint32_t a, uint32_t b)
{
	int32_t d = roce_psn_diff(a, b);
	return (d > 0) - (d < 0);
}

static inline uint32_t roce_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & ROCE_PSN_MASK;
}

static inline uint32_t roce_psn_next(uint32_t psn)
{
	return roce_psn_add(psn, 1);
}

#endif
