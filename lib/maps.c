/* SPDX-License-Identifier: MIT */
/* /proc/self/maps, as lib_vma arrays: the only way a process learns what backs its own
 * address ranges (private anonymous, a file, one of our pin memfds) without privileges.
 * The reading is ipc/maps.c's, shared with the daemon: PROCMAP_QUERY (Linux 6.11) asks
 * for the VMAs of one range alone, so a process with thousands of mappings (a ring per QP)
 * does not pay for all of them; before 6.11 the text, read whole. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib_int.h"
#include "maps.h"

static void to_lib_vma(const struct ipc_vma *s, struct lib_vma *v)
{
	size_t n = s->name_len < sizeof(v->path) ? s->name_len : sizeof(v->path) - 1;

	v->start = (uintptr_t)s->start;
	v->end = (uintptr_t)s->end;
	v->prot = (s->prot & IPC_VMA_R ? PROT_READ : 0) | (s->prot & IPC_VMA_W ? PROT_WRITE : 0) |
		  (s->prot & IPC_VMA_X ? PROT_EXEC : 0);
	v->shared = s->prot & IPC_VMA_SHARED;
	v->offset = s->offset;
	v->dev = makedev(s->dev_major, s->dev_minor);
	v->ino = (ino_t)s->inode;
	memcpy(v->path, s->name, n);
	v->path[n] = '\0';
}

static int push(struct lib_vma **vmas, size_t *n, size_t *cap, const struct ipc_vma *s)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct lib_vma *p = realloc(*vmas, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*vmas = p;
		*cap = c;
	}
	to_lib_vma(s, &(*vmas)[(*n)++]);
	return 0;
}

/* One walk over [lo, hi) of our own maps with the reader m (m->text chooses the source,
 * and says afterwards whether the kernel has PROCMAP_QUERY). */
static int walk(struct ipc_maps *m, uintptr_t lo, uintptr_t hi, struct lib_vma **vmas,
		size_t *n)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	struct ipc_vma s;
	size_t cap = 0;
	int rc;

	if (fd < 0)
		return -errno;
	ipc_maps_begin(m, fd, lo, hi);
	while ((rc = ipc_maps_next(m, &s)) > 0)
		if ((rc = push(vmas, n, &cap, &s)) < 0)
			break;
	close(fd);
	return rc;
}

/* The VMAs meeting [lo, hi); *text: read the text rather than ask PROCMAP_QUERY, set when
 * the kernel turns out not to have it. */
static int read_vmas(uintptr_t lo, uintptr_t hi, bool *text, struct lib_vma **vmas, size_t *n)
{
	struct ipc_maps *m = malloc(sizeof(*m));	/* 12 KiB: not on an application's stack */
	int rc;

	*vmas = NULL;
	*n = 0;
	if (!m)
		return -ENOMEM;
	m->text = *text;
	rc = walk(m, lo, hi, vmas, n);
	*text = m->text;
	free(m);
	if (rc < 0) {
		free(*vmas);
		*vmas = NULL;
		*n = 0;
	}
	return rc < 0 ? rc : 0;
}

int lib_maps_read(struct lib_vma **vmas, size_t *n)
{
	bool text = true;	/* every VMA: one read of the text beats an ioctl per VMA */

	return read_vmas(0, UINTPTR_MAX, &text, vmas, n);
}

int lib_maps_range(uintptr_t lo, uintptr_t hi, struct lib_vma **vmas, size_t *n)
{
	/* Found once per process: a kernel without PROCMAP_QUERY does not grow one. */
	static atomic_bool no_query;
	bool text = atomic_load_explicit(&no_query, memory_order_relaxed);
	int rc = read_vmas(lo, hi, &text, vmas, n);

	if (text)
		atomic_store_explicit(&no_query, true, memory_order_relaxed);
	return rc;
}
