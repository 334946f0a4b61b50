/* SPDX-License-Identifier: MIT */
/* pattern — --verify's data: every message's bytes are a function of its iteration
 * number, so the receiver can check each byte knowing only which message it holds. The
 * last byte is also the iteration's marker (never 0, never the previous marker), the
 * byte a --lat WRITE receiver spins on. */
#ifndef ODPEMU_TOOLS_PERF_PATTERN_H
#define ODPEMU_TOOLS_PERF_PATTERN_H

#include <stdbool.h>
#include <stdint.h>

uint8_t pattern_marker(uint64_t iter);
void pattern_fill(void *buf, uint64_t len, uint64_t iter);
/* -1 when buf holds iteration iter's pattern, else the first wrong offset (with the byte
 * found and the byte wanted). */
int64_t pattern_check(const void *buf, uint64_t len, uint64_t iter, uint8_t *got,
		      uint8_t *want);
/* Does buf hold the whole pattern of an iteration before `before` (a stale message)? Its
 * number in *iter. Messages of 9 bytes or more name their iteration in their first word;
 * shorter ones are compared with the latest PATTERN_TINY_TRIES earlier iterations whose
 * marker matches. */
#define PATTERN_TINY_TRIES 4096
bool pattern_earlier(const void *buf, uint64_t len, uint64_t before, uint64_t *iter);

#endif
