/* SPDX-License-Identifier: MIT */
/*
 * ops — the verbs exchanges several e2e tests run on a connected pair (harness.h): every
 * data verb and every atomic from side 0's buffer to side 1's, each byte checked.
 */
#ifndef ODPEMU_TESTS_OPS_H
#define ODPEMU_TESTS_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "harness.h"
#include "t.h"

/* A buffer and its MR. */
struct h_mem {
	uint8_t *buf;
	struct odpemu_mr *mr;
};

/* Post wr on side 0 (signaled) and wait for its completion; true if it succeeded. */
bool h_run_wr(struct h_pair *p, struct odpemu_send_wr *wr, const char *what);
/* WRITE, READ, SEND, SEND_WITH_IMM, WRITE_WITH_IMM of len bytes between a (side 0) and b
 * (side 1), contents drawn from rng; tag names the checks. */
void h_data_ops(struct h_pair *p, struct h_mem *a, struct h_mem *b, uint32_t len,
		const char *tag, struct t_rng *rng);
/* FAA, CAS, ATOMIC_WRITE on a word of b (b->buf needs 4 pages), then FLUSH. */
void h_atomic_ops(struct h_pair *p, struct h_mem *a, struct h_mem *b, const char *tag);

#endif
