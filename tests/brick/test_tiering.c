/* SPDX-License-Identifier: MIT */
/*
 * Tiering through ODP (issue 15): odpemu-brick with a 1 GiB backing file and --mem 64M
 * on host 1; an initiator on host 0 (brick-tiering-client, tiering_client.c) writes a seeded pattern
 * to all 512 blocks with RDMA WRITE (each block mapped RW, written, unmapped), then reads
 * every block back with RDMA READ in a random order, twice, verifying every byte. While
 * it runs, this process samples the brick's resident file pages: RssFile of
 * /proc/PID/status (an atomic count) stays within the budget over what it was before the
 * first block (the brick's libraries), give or take library pages first run later; the
 * Rss of the backing file's mapping in /proc/PID/smaps (a walk, not a snapshot: it may
 * count a block being evicted and the block replacing it) within the budget and a block. At the end the brick's STAT says blocks
 * were evicted and faulted back: evictions, page faults and invalidations of its device
 * all > 0, blocks on file > 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "brick_run.h"
#include "t.h"

#include "odpemu/brick.h"
#include "tiering.h"

#define FILE_NAME "brick-tiering.img"
/* code pages of libraries the brick first runs after it started listening */
#define SLACK_KIB 2048ul

/* ---- the test ---- */

static void body(struct h_env *e)
{
	const char *args[] = { "15", NULL };
	unsigned long base, kib, peak = 0, file_kib, file_peak = 0;
	struct br_brick b;
	struct tr_proc p;
	struct cr_args a;
	char *out = NULL;
	int code;

	unlink(FILE_NAME);
	unlink(FILE_NAME ".meta");
	if (br_start(e, &b, FILE_NAME, "1G", "64M")) {
		T_CHECK(0, "the brick starts");
		return;
	}
	base = br_status_kib(br_pid(&b), "RssFile");
	if (br_client_start(e, &b, args, &p, &a)) {
		T_CHECK(0, "the initiator starts");
		br_stop(&b, SIGKILL);
		return;
	}
	/* sample until the initiator is done (bounded by its own time) */
	for (unsigned i = 0; i < 12000 && !cr_exited(&p, 50); i++) {
		if ((kib = br_status_kib(br_pid(&b), "RssFile")) > peak)
			peak = kib;
		if ((file_kib = br_mapping_rss_kib(br_pid(&b), FILE_NAME)) > file_peak)
			file_peak = file_kib;
	}
	code = cr_collect(&p, &a, 60, &out);
	printf("%s", out ? out : "");
	BR_EQ(code, 0, "the initiator's checks");
	printf("brick: backing file resident peak %lu KiB; RssFile %lu KiB before, peak %lu KiB "
	       "(budget %u MiB)\n", file_peak, base, peak, BUDGET_MIB);
	/* smaps walks the page tables while the brick works: a walk that passes a block
	 * before its eviction and reaches the one MAP brings in after it counts both, so a
	 * sample may be one block over what was ever resident at once */
	T_CHECK(file_peak > 0 && file_peak <= BUDGET_MIB * 1024 + BLK / 1024,
		"the backing file's resident pages in the brick stay within the budget (one "
		"block of smaps' walk aside): peak %lu KiB", file_peak);
	/* the rest of RssFile: library pages first run after the start (a few hundred KiB) */
	T_CHECK(peak <= base + BUDGET_MIB * 1024 + SLACK_KIB, "the brick's RssFile stays within "
		"the budget: peak %lu KiB, %lu KiB before the first block", peak, base);
	BR_EQ(br_stop(&b, SIGTERM), 0, "the brick ends cleanly");
	free(out);
	unlink(FILE_NAME);
	unlink(FILE_NAME ".meta");
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "brick-tiering", .watchdog_s = 900,
		.body = body };

	return h_main(argc, argv, &t);
}
