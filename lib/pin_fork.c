/* SPDX-License-Identifier: MIT */
/*
 * A fork child's copy of pinned memory. pin.c pins private memory by moving it into
 * memfds mapped MAP_SHARED at the same addresses; a fork child would share those pages
 * with its parent instead of copying them, and pages of the heap are among them (malloc'd
 * buffers, and their neighbours). A child's malloc or write would then land in the
 * parent's heap and buffers, and the parent's in the child's. Linux since 5.13 copies a
 * pinned page at fork (the child gets its own copy, the parent keeps the pinned one), and
 * so does this: in the child, right after fork, every mapping of one of our memfds is
 * replaced by a private copy of its bytes, with its protection. The parent keeps the
 * shared pages the daemon reaches. Ranges the program made MADV_DONTFORK (ibv_fork_init:
 * compat/verbs/fork.c) are not in the child at all, as with rdma-core.
 *
 * It runs in pthread_atfork's child handler, before the child's first malloc could touch a
 * shared heap page: so no malloc here, and /proc/self/maps is read with plain system
 * calls into a static buffer (the child has one thread).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib_int.h"

#define PIN_MAPS_PATH "/memfd:" LIB_PIN_NAME " (deleted)"

static char maps_buf[1 << 16];	/* one read of /proc/self/maps, line by line */

/* One mapping of ours from a maps line: start, end and protection, or false. */
static bool pin_line(const char *line, uintptr_t *start, uintptr_t *end, int *prot)
{
	const char *path = strchr(line, '/');
	char *p;

	if (!path || strcmp(path, PIN_MAPS_PATH))
		return false;
	*start = (uintptr_t)strtoull(line, &p, 16);
	if (*p != '-')
		return false;
	*end = (uintptr_t)strtoull(p + 1, &p, 16);
	if (*p != ' ' || *end <= *start)
		return false;
	*prot = (p[1] == 'r' ? PROT_READ : 0) | (p[2] == 'w' ? PROT_WRITE : 0) |
		(p[3] == 'x' ? PROT_EXEC : 0);
	return true;
}

/* The copy reads whole pages: under a sanitizer, heap redzones and freed chunks among
 * them, which an instrumented memcpy would report. So a plain word loop, uninstrumented,
 * through a volatile source (which also keeps the compiler from making it a memcpy call). */
__attribute__((no_sanitize("address", "thread", "undefined")))
static void copy_pages(uint64_t *dst, const volatile uint64_t *src, size_t len)
{
	for (size_t i = 0; i < len / sizeof(*dst); i++)
		dst[i] = src[i];
}

/* Replace [start, end) by a private copy of its bytes. A range the process made
 * unreadable is copied after a read permission of our own, then given its own back. */
static void privatize(uintptr_t start, uintptr_t end, int prot)
{
	size_t len = end - start;
	void *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (copy == MAP_FAILED)
		return;		/* left shared: what the child had before this existed */
	if (!(prot & PROT_READ))
		mprotect((void *)start, len, prot | PROT_READ);
	copy_pages(copy, (const volatile uint64_t *)start, len);
	if (mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)start) == MAP_FAILED) {
		munmap(copy, len);
		mprotect((void *)start, len, prot);
		return;
	}
	mprotect((void *)start, len, prot);
}

/* /proc/self/maps is read in chunks, each complete line handled as it comes: the kernel
 * resumes a read after the address it stopped at, so a mapping replaced behind that point
 * does not disturb it. A line longer than the buffer (no such line exists) ends the walk. */
void lib_pin_fork_child(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t used = 0;
	ssize_t n;

	if (fd < 0)
		return;
	while ((n = read(fd, maps_buf + used, sizeof(maps_buf) - 1 - used)) > 0) {
		char *line = maps_buf, *nl;
		uintptr_t s, e;
		int prot;

		used += (size_t)n;
		maps_buf[used] = '\0';
		for (; (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = '\0';
			if (pin_line(line, &s, &e, &prot))
				privatize(s, e, prot);
		}
		used -= (size_t)(line - maps_buf);	/* a cut line moves to the front */
		memmove(maps_buf, line, used);
		if (used == sizeof(maps_buf) - 1)
			break;
	}
	close(fd);
}
