/* SPDX-License-Identifier: MIT */
/* crash — brick-crash's shape, shared by the test (the model) and its initiator. */
#ifndef ODPEMU_TESTS_BRICK_CRASH_H
#define ODPEMU_TESTS_BRICK_CRASH_H

#define IDS 48			/* the id pool: more than the 32 slots, so ENOSPC happens */
#define POS 32			/* 64 KiB ranges per block */
#define RANGE (64u << 10)
#define OPS 400			/* calls per run at most (a kill comes first) */

#endif
