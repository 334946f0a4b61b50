/* SPDX-License-Identifier: MIT */
/*
 * The brick's store (brick/store.h), on a file in the build tree's filesystem (the
 * test's working directory; tmpfs has no write-back):
 *  - 64 MiB (32 blocks) with an 8 MiB budget: 16 blocks written through the mapping, two
 *    of them pinned; enforce evicts the coldest unpinned ones (oldest release first) until
 *    8 MiB or less is resident, never a pinned one; the process's RssFile falls with it;
 *    every byte reads back (from the file);
 *  - discard punches the block out of the file: zeros after, fewer blocks allocated;
 *  - sizes: a file that is not a whole number of blocks is EINVAL; a reopen keeps data.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "t.h"

#define MiB (1ull << 20)

static unsigned long rss_file_kib(void)
{
	char line[128];
	unsigned long kib = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "RssFile: %lu", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static void fill(struct brick_store *s, uint64_t slot)
{
	memset(brick_store_block(s, slot), (int)('A' + slot), BRICK_BLOCK);
}

static bool holds(struct brick_store *s, uint64_t slot, int c)
{
	const uint8_t *b = brick_store_block(s, slot);

	for (uint64_t i = 0; i < BRICK_BLOCK; i += 512)
		if (b[i] != (uint8_t)c)
			return false;
	return true;
}

static void tiering(const char *path)
{
	struct brick_store *s = NULL;
	struct brick_store_stats st;
	unsigned long rss0, rss1;
	int n;

	T_EQ(brick_store_open(path, 64 * MiB, 8 * MiB, &s), 0, "open 64 MiB, budget 8 MiB");
	if (!s)
		return;
	T_EQ(brick_store_slots(s), 32, "32 blocks");
	for (uint64_t i = 0; i < 16; i++)
		fill(s, i);
	brick_store_pin(s, 3);		/* mapped: never evicted */
	brick_store_pin(s, 12);
	brick_store_pin(s, 5);
	brick_store_release(s, 5);	/* released: the most recent, evicted last */
	brick_store_stats(s, &st);
	T_CHECK(st.resident_bytes >= 16 * BRICK_BLOCK, "16 blocks resident (%llu bytes)",
		(unsigned long long)st.resident_bytes);
	T_EQ(st.pinned_blocks, 2, "two pinned");
	rss0 = rss_file_kib();
	n = brick_store_enforce(s, 0);
	rss1 = rss_file_kib();
	brick_store_stats(s, &st);
	printf("enforce: %d blocks evicted, resident %llu MiB (budget 8), RssFile %lu -> %lu KiB\n",
	       n, (unsigned long long)(st.resident_bytes / MiB), rss0, rss1);
	T_CHECK(n >= 12, "at least 12 blocks evicted (%d)", n);
	T_CHECK(st.resident_bytes <= 8 * MiB, "within the budget (%llu bytes)",
		(unsigned long long)st.resident_bytes);
	/* the evicted blocks' 2 MiB each, less 1 MiB for code pages first run meanwhile */
	T_CHECK(n > 0 && rss1 + (unsigned long)n * 2048 - 1024 <= rss0,
		"RssFile fell by the evicted blocks (%d x 2 MiB, within 1 MiB)", n);
	T_EQ(st.evictions, (uint64_t)n, "evictions counted");
	T_EQ(st.written_back_bytes, (uint64_t)n * BRICK_BLOCK, "written back");
	T_CHECK(st.resident_blocks >= 2, "the pinned blocks stay");
	for (uint64_t i = 0; i < 16; i++)
		T_CHECK(holds(s, i, (int)('A' + i)), "block %llu reads back", (unsigned long long)i);
	brick_store_close(s);
}

static void discard(const char *path)
{
	struct brick_store *s = NULL;
	struct stat before, after;
	int fd = open(path, O_RDONLY);

	T_EQ(brick_store_open(path, 0, 0, &s), 0, "reopen at the file's size");
	if (!s || fd < 0)
		return;
	T_CHECK(holds(s, 7, 'A' + 7), "a reopen keeps the data");
	T_EQ(brick_store_sync(s, 7), 0, "sync");
	fstat(fd, &before);
	T_EQ(brick_store_discard(s, 7), 0, "discard");
	fstat(fd, &after);
	T_CHECK(holds(s, 7, 0), "a discarded block reads zeros");
	/* the file system may keep an extent block or so: most of the 2 MiB is enough */
	T_CHECK(after.st_blocks + (long long)(BRICK_BLOCK / 512 * 15 / 16) <= before.st_blocks,
		"its space went back to the file system (%lld -> %lld sectors)",
		(long long)before.st_blocks, (long long)after.st_blocks);
	T_EQ(brick_store_sync(s, 32), -EINVAL, "slot beyond the file");
	T_CHECK(brick_store_block(s, 32) == NULL, "no block 32");
	brick_store_close(s);
	close(fd);
}

static void sizes(const char *path)
{
	struct brick_store *s = NULL;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	T_CHECK(fd >= 0 && ftruncate(fd, 3 * MiB) == 0, "a 3 MiB file");
	close(fd);
	T_EQ(brick_store_open(path, 0, 0, &s), -EINVAL, "not a whole number of blocks");
	T_EQ(brick_store_open(path, 4 * MiB, 0, &s), 0, "grown to two blocks");
	if (s)
		T_EQ(brick_store_slots(s), 2, "two");
	brick_store_close(s);
}

int main(void)
{
	char path[] = "brick-store-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return 99;
	close(fd);
	tiering(path);
	discard(path);
	sizes(path);
	unlink(path);
	return t_done("brick-store");
}
