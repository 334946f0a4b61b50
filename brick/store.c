/* SPDX-License-Identifier: MIT */
/* store — the brick's blocks and their memory tier (see store.h). */
#include "store.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22	/* Linux 5.14, glibc 2.35 (RHEL 9's glibc: 2.34) */
#endif

#define PAGE 4096ull
#define PAGES_PER_BLOCK (BRICK_BLOCK / PAGE)

struct slot {
	uint32_t pins;		/* initiators that have it mapped */
	uint64_t released;	/* the clock when the last pin went (0: never pinned) */
	/* Pages of it may be in memory: set when pinned (only mapped blocks are accessed,
	 * and the mapping is MADV_RANDOM, so no readahead spills into a neighbour), cleared
	 * when it is evicted or found empty. Enforcing the budget asks mincore about these
	 * only: a 1 GiB file's full scan costs milliseconds, paid on every MAP and UNMAP. */
	bool warm;
};

struct brick_store {
	int fd;
	uint8_t *base;
	uint64_t bytes, slots, budget, clock;
	struct slot *slot;
	struct brick_store_stats st;	/* evictions and write-back; the rest computed */
};

static int size_file(int fd, uint64_t want, uint64_t *bytes)
{
	struct stat sb;

	if (fstat(fd, &sb))
		return -errno;
	if (want && (uint64_t)sb.st_size < want && ftruncate(fd, (off_t)want))
		return -errno;
	*bytes = want && (uint64_t)sb.st_size < want ? want : (uint64_t)sb.st_size;
	return *bytes && *bytes % BRICK_BLOCK == 0 ? 0 : -EINVAL;
}

/* The mapping and the slot table of an open, sized file: 0 or -errno. */
static int map_file(struct brick_store *s)
{
	s->slots = s->bytes / BRICK_BLOCK;
	s->base = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->base == MAP_FAILED)
		return -errno;
	if (!(s->slot = calloc(s->slots, sizeof(*s->slot)))) {
		munmap(s->base, s->bytes);
		return -ENOMEM;
	}
	/* whole blocks are brought in on purpose (brick_store_pin); speculative readahead
	 * around a fault would only fill neighbours that are to stay on file */
	(void)madvise(s->base, s->bytes, MADV_RANDOM);
	for (uint64_t i = 0; i < s->slots; i++)	/* the page cache may hold any of it */
		s->slot[i].warm = true;
	return 0;
}

int brick_store_open(const char *path, uint64_t bytes, uint64_t mem_budget,
		     struct brick_store **out)
{
	struct brick_store *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->budget = mem_budget ? mem_budget : UINT64_MAX;
	s->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	rc = s->fd < 0 ? -errno : size_file(s->fd, bytes, &s->bytes);
	if (!rc)
		rc = map_file(s);
	if (rc) {
		if (s->fd >= 0)
			close(s->fd);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void brick_store_close(struct brick_store *s)
{
	if (!s)
		return;
	munmap(s->base, s->bytes);
	close(s->fd);
	free(s->slot);
	free(s);
}

uint64_t brick_store_slots(const struct brick_store *s) { return s->slots; }
void *brick_store_base(const struct brick_store *s) { return s->base; }

void *brick_store_block(const struct brick_store *s, uint64_t slot)
{
	return slot < s->slots ? s->base + slot * BRICK_BLOCK : NULL;
}

/* A mapped block is in memory when MAP answers: read in whole (WILLNEED starts large
 * reads; with MADV_RANDOM a fault reads one page), then waited for and mapped
 * (POPULATE_READ, synchronous). Otherwise the reads would still be running when the
 * initiator's first access arrives, and it would wait for them behind an RNR NAK. */
void brick_store_pin(struct brick_store *s, uint64_t slot)
{
	uint8_t *b = s->base + slot * BRICK_BLOCK;

	if (slot >= s->slots)
		return;
	s->slot[slot].pins++;
	s->slot[slot].warm = true;
	(void)madvise(b, BRICK_BLOCK, MADV_WILLNEED);
	(void)madvise(b, BRICK_BLOCK, MADV_POPULATE_READ);
}

void brick_store_release(struct brick_store *s, uint64_t slot)
{
	if (slot < s->slots && s->slot[slot].pins && !--s->slot[slot].pins)
		s->slot[slot].released = ++s->clock;
}

/* Resident pages of each block (the file's page cache under the mapping), into pages[]:
 * 0 or -errno. all: every block, else the warm ones (the others count 0); a warm block
 * found empty is cold again. */
static int residency(struct brick_store *s, uint32_t *pages, bool all)
{
	unsigned char vec[PAGES_PER_BLOCK];

	for (uint64_t b = 0; b < s->slots; b++) {
		uint32_t k = 0;

		if (!all && !s->slot[b].warm) {
			pages[b] = 0;
			continue;
		}
		if (mincore(s->base + b * BRICK_BLOCK, BRICK_BLOCK, vec))
			return -errno;
		for (uint64_t pg = 0; pg < PAGES_PER_BLOCK; pg++)
			k += vec[pg] & 1;
		pages[b] = k;
		s->slot[b].warm = k > 0 || s->slot[b].pins;
	}
	return 0;
}

/* Write the block back, then drop it from the mapping and from the page cache: the next
 * access (the NIC's, through its ODP MR) reads it from the file. `bytes`: what of it was
 * resident (msync writes back the dirty part of that). */
static int evict(struct brick_store *s, uint64_t slot, uint64_t bytes)
{
	uint8_t *b = s->base + slot * BRICK_BLOCK;

	if (msync(b, BRICK_BLOCK, MS_SYNC))
		return -errno;
	(void)madvise(b, BRICK_BLOCK, MADV_DONTNEED);
	(void)posix_fadvise(s->fd, (off_t)(slot * BRICK_BLOCK), (off_t)BRICK_BLOCK,
			    POSIX_FADV_DONTNEED);
	s->slot[slot].warm = false;
	s->st.evictions++;
	s->st.written_back_bytes += bytes;
	return 0;
}

/* The next victim: the unpinned resident block released longest ago (never pinned: 0,
 * first), or UINT64_MAX. */
static uint64_t coldest(const struct brick_store *s, const uint32_t *pages)
{
	uint64_t best = UINT64_MAX;

	for (uint64_t i = 0; i < s->slots; i++)
		if (pages[i] && !s->slot[i].pins &&
		    (best == UINT64_MAX || s->slot[i].released < s->slot[best].released))
			best = i;
	return best;
}

int brick_store_enforce(struct brick_store *s, uint64_t reserve)
{
	uint64_t budget = s->budget > reserve ? s->budget - reserve : 0;
	uint32_t *pages = calloc(s->slots, sizeof(*pages));
	uint64_t resident = 0, victim;
	int rc, evicted = 0;

	if (!pages)
		return -ENOMEM;
	if ((rc = residency(s, pages, false))) {
		free(pages);
		return rc;
	}
	for (uint64_t i = 0; i < s->slots; i++)
		resident += (uint64_t)pages[i] * PAGE;
	while (resident > budget && (victim = coldest(s, pages)) != UINT64_MAX) {
		if ((rc = evict(s, victim, (uint64_t)pages[victim] * PAGE)))
			break;
		resident -= (uint64_t)pages[victim] * PAGE;
		pages[victim] = 0;
		evicted++;
	}
	free(pages);
	return rc ? rc : evicted;
}

int brick_store_sync(struct brick_store *s, uint64_t slot)
{
	if (slot >= s->slots)
		return -EINVAL;
	return msync(s->base + slot * BRICK_BLOCK, BRICK_BLOCK, MS_SYNC) ? -errno : 0;
}

int brick_store_discard(struct brick_store *s, uint64_t slot)
{
	if (slot >= s->slots)
		return -EINVAL;
	if (fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(slot * BRICK_BLOCK), (off_t)BRICK_BLOCK))
		return -errno;
	s->slot[slot].warm = false;	/* the punch dropped its pages */
	return 0;
}

void brick_store_stats(struct brick_store *s, struct brick_store_stats *st)
{
	uint32_t *pages = calloc(s->slots, sizeof(*pages));

	*st = s->st;
	st->slots = s->slots;
	for (uint64_t i = 0; i < s->slots; i++)
		st->pinned_blocks += s->slot[i].pins > 0;
	if (!pages || residency(s, pages, true)) {
		free(pages);
		return;
	}
	for (uint64_t i = 0; i < s->slots; i++) {
		st->resident_bytes += (uint64_t)pages[i] * PAGE;
		st->resident_blocks += pages[i] > 0;
	}
	free(pages);
}
