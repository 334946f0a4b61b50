/* SPDX-License-Identifier: MIT */
/* tiering — brick-tiering's shape, shared by the test and its initiator. */
#ifndef ODPEMU_TESTS_BRICK_TIERING_H
#define ODPEMU_TESTS_BRICK_TIERING_H

#define BLOCKS 512u		/* a 1 GiB backing file */
#define BUDGET_MIB 64u		/* the brick's --mem */
#define BLK BRICK_BLOCK_SIZE

#endif
