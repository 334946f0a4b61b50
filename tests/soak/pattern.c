/* SPDX-License-Identifier: MIT */
/* pattern — see pattern.h. Eight bytes per step of splitmix64, the last word cut short. */
#include "pattern.h"

#include <string.h>

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint64_t pat_seed(uint64_t s, uint64_t n)
{
	uint64_t x = s ^ (n * 0xD6E8FEB86659FD93ull);

	return mix(&x);
}

void pat_fill(uint64_t seed, void *buf, size_t len)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = mix(&seed);

		memcpy(p + i, &w, len - i < 8 ? len - i : 8);
	}
}

long pat_check(uint64_t seed, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = mix(&seed);
		size_t n = len - i < 8 ? len - i : 8;

		if (memcmp(p + i, &w, n))
			for (size_t k = 0; k < n; k++)
				if (p[i + k] != ((const uint8_t *)&w)[k])
					return (long)(i + k);
	}
	return -1;
}
