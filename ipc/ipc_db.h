/* SPDX-License-Identifier: MIT */
/*
 * ipc_db — the doorbell page of a session: which of its queues have new work.
 *
 * The daemon's loop must not look at every ring of every session each round (10,000 QPs
 * are 20,000 cache misses a round). So after a client publishes a producer index (SQ, RQ,
 * SRQ) or arms a CQ, it marks the object's handle here; the daemon takes the marks and
 * looks at those objects only. Three levels, so an idle session costs the daemon four
 * loads: bit h of bits[] is handle h; bit w of summary[] is bits[w] non-zero; bit s of
 * top[] is summary[s] non-zero.
 *
 * Ordering (all sequentially consistent): the client marks bottom-up after its release
 * store of the index, and skips a level whose bit is already set; the daemon takes
 * top-down, exchanging each word with 0, then reads the indexes. A mark made while the
 * daemon takes is seen this round or leaves its bits for the next one (a bit set at a
 * level whose lower level the daemon already emptied costs one empty look). The daemon
 * writes `sleeping` on the status page before its last take, the client loads it after
 * marking: one of them sees the other, so no doorbell is lost.
 *
 * The client may write anything here: the daemon checks every handle it takes.
 */
#ifndef ODPEMU_IPC_DB_H
#define ODPEMU_IPC_DB_H

#include <stdatomic.h>
#include <stdint.h>

#define IPC_DB_HANDLES	(1u << 20)			/* handles a session may have */
#define IPC_DB_WORDS	(IPC_DB_HANDLES / 64)
#define IPC_DB_SUMMARY	(IPC_DB_WORDS / 64)
#define IPC_DB_TOP	(IPC_DB_SUMMARY / 64)

struct ipc_db_page {
	_Alignas(64) _Atomic uint64_t top[IPC_DB_TOP];
	_Alignas(64) _Atomic uint64_t summary[IPC_DB_SUMMARY];
	_Alignas(64) _Atomic uint64_t bits[IPC_DB_WORDS];
};

static inline void ipc_db_set_(_Atomic uint64_t *w, uint64_t bit)
{
	if (!(atomic_load(w) & bit))
		atomic_fetch_or(w, bit);
}

/* Mark handle h (after the store that made its work visible). */
static inline void ipc_db_mark(struct ipc_db_page *p, uint32_t h)
{
	if (h >= IPC_DB_HANDLES)
		return;
	ipc_db_set_(&p->bits[h / 64], 1ull << (h % 64));
	ipc_db_set_(&p->summary[h / 4096], 1ull << (h / 64 % 64));
	ipc_db_set_(&p->top[h / 262144], 1ull << (h / 4096 % 64));
}

/* Take every mark: fn(arg, h) for each handle h < limit marked, each once, in handle
 * order. Marks at or above limit (handles the session has never had) are not looked at:
 * a client that marks everything costs the daemon what its own objects cost. */
static inline void ipc_db_take(struct ipc_db_page *p, uint32_t limit,
			       void (*fn)(void *arg, uint32_t h), void *arg)
{
	for (uint32_t t = 0; t < IPC_DB_TOP; t++) {
		uint64_t tv = atomic_load(&p->top[t]) ? atomic_exchange(&p->top[t], 0) : 0;

		for (; tv; tv &= tv - 1) {
			uint32_t s = t * 64 + (uint32_t)__builtin_ctzll(tv);
			uint64_t sv = atomic_exchange(&p->summary[s], 0);

			/* beyond limit: not descended (a stale bit there costs one look later) */
			for (; sv && s * 4096 < limit; sv &= sv - 1) {
				uint32_t w = s * 64 + (uint32_t)__builtin_ctzll(sv);
				uint64_t bv = atomic_exchange(&p->bits[w], 0);

				for (; bv && w * 64 < limit; bv &= bv - 1)
					fn(arg, w * 64 + (uint32_t)__builtin_ctzll(bv));
			}
		}
	}
}

#endif
