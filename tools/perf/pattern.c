/* SPDX-License-Identifier: MIT */
/* pattern — see pattern.h. */
#include "pattern.h"

#include <string.h>

static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;	/* splitmix64's finaliser */
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* mix's inverse: each step of splitmix64's finaliser undone in reverse order. */
static uint64_t unshift(uint64_t y, unsigned s)
{
	uint64_t x = y;

	for (unsigned done = s; done < 64; done += s)	/* each round fixes s more bits */
		x = y ^ (x >> s);
	return x;
}

/* The inverse of an odd number modulo 2^64 (Newton: each step doubles the good bits). */
static uint64_t inverse(uint64_t a)
{
	uint64_t x = a;		/* a * a = 1 mod 8: three good bits */

	for (int k = 0; k < 5; k++)
		x *= 2 - a * x;
	return x;
}

static uint64_t unmix(uint64_t x)
{
	x = unshift(x, 31) * inverse(0x94D049BB133111EBull);
	x = unshift(x, 27) * inverse(0xBF58476D1CE4E5B9ull);
	return unshift(x, 30) - 0x9E3779B97F4A7C15ull;
}

/* Word k of iteration iter: distinct per word and per iteration, cheap to recompute. */
static uint64_t word(uint64_t seed, uint64_t k)
{
	return seed ^ (k * 0xD6E8FEB86659FD93ull);
}

uint8_t pattern_marker(uint64_t iter)
{
	return (uint8_t)(1 + iter % 255);
}

static uint8_t byte_at(uint64_t seed, uint64_t off, uint64_t len, uint64_t iter)
{
	uint64_t w = word(seed, off / 8);

	return off + 1 == len ? pattern_marker(iter) : (uint8_t)(w >> (8 * (off % 8)));
}

void pattern_fill(void *buf, uint64_t len, uint64_t iter)
{
	uint8_t *p = buf;
	uint64_t seed = mix(iter), k = 0;

	for (; (k + 1) * 8 <= len; k++) {
		uint64_t w = word(seed, k);

		memcpy(p + k * 8, &w, 8);	/* little-endian hosts: byte_at's order */
	}
	for (uint64_t off = k * 8; off < len; off++)
		p[off] = byte_at(seed, off, len, iter);
	if (len)
		p[len - 1] = pattern_marker(iter);
}

static bool holds(const void *buf, uint64_t len, uint64_t iter)
{
	uint8_t got, want;

	return pattern_check(buf, len, iter, &got, &want) < 0;
}

bool pattern_earlier(const void *buf, uint64_t len, uint64_t before, uint64_t *iter)
{
	const uint8_t *p = buf;
	uint64_t w, j;

	if (len > 8) {
		/* word 0 is mix(iter) itself (word(seed, 0) == seed); the marker is past it */
		memcpy(&w, p, 8);
		*iter = unmix(w);
		return *iter < before && holds(buf, len, *iter);
	}
	if (!len || !before)
		return false;
	/* the latest earlier iteration with this marker, then every 255th before it */
	j = before - 1 - (before - 1 + 256 - p[len - 1]) % 255;
	for (unsigned k = 0; k < PATTERN_TINY_TRIES && j < before; k++, j -= 255) {
		if (holds(buf, len, j)) {
			*iter = j;
			return true;
		}
		if (j < 255)
			break;
	}
	return false;
}

int64_t pattern_check(const void *buf, uint64_t len, uint64_t iter, uint8_t *got,
		      uint8_t *want)
{
	const uint8_t *p = buf;
	uint64_t seed = mix(iter), off = 0;

	/* whole words first (fast), then find the exact byte of a mismatch */
	for (uint64_t k = 0; (k + 1) * 8 < len; k++, off += 8) {
		uint64_t w = word(seed, k);

		if (memcmp(p + k * 8, &w, 8))
			break;
	}
	for (; off < len; off++) {
		uint8_t b = byte_at(seed, off, len, iter);

		if (p[off] != b) {
			*got = p[off];
			*want = b;
			return (int64_t)off;
		}
	}
	return -1;
}
