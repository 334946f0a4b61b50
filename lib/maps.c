/* SPDX-License-Identifier: MIT */
/* /proc/self/maps, parsed: the only way a process learns what backs its own address
 * ranges (private anonymous, a file, one of our pin memfds) without privileges. Where the
 * kernel has PROCMAP_QUERY (Linux 6.11) the VMAs of one range are asked for alone, so a
 * process with thousands of mappings (a ring per QP) does not pay for all of them. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib_int.h"
#include "procmap.h"

/* "7f..-7f.. rw-p 00000000 00:01 1234   /memfd:odpemu-pin (deleted)" */
static bool parse_line(const char *line, struct lib_vma *v)
{
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	char perms[5];
	int pos = 0;
	const char *path;
	size_t n;

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min,
		   &ino, &pos) < 7 || !pos)
		return false;
	v->start = (uintptr_t)start;
	v->end = (uintptr_t)end;
	v->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	v->shared = perms[3] == 's';
	v->offset = off;
	v->dev = makedev(maj, min);
	v->ino = (ino_t)ino;
	path = line + pos;
	n = strcspn(path, "\n");
	if (n >= sizeof(v->path))
		n = sizeof(v->path) - 1;
	memcpy(v->path, path, n);
	v->path[n] = '\0';
	return true;
}

static int push(struct lib_vma **vmas, size_t *n, size_t *cap, const struct lib_vma *v)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct lib_vma *p = realloc(*vmas, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*vmas = p;
		*cap = c;
	}
	(*vmas)[(*n)++] = *v;
	return 0;
}

int lib_maps_read(struct lib_vma **vmas, size_t *n)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t linecap = 0, cap = 0;
	struct lib_vma v;
	int rc = 0;

	*vmas = NULL;
	*n = 0;
	if (!f)
		return -errno;
	while (!rc && getline(&line, &linecap, f) > 0)
		if (parse_line(line, &v))
			rc = push(vmas, n, &cap, &v);
	free(line);
	fclose(f);
	if (rc) {
		free(*vmas);
		*vmas = NULL;
		*n = 0;
	}
	return rc;
}

#define PMQ_NAME_MAX		4160	/* PATH_MAX and some */

/* The VMA covering addr or the next one: 1, 0 (none), or -errno (-ENOTTY: no ioctl). */
static int query(int fd, uint64_t addr, struct lib_vma *v, char *name)
{
	struct odpemu_procmap_query q = {
		.size = sizeof(q), .query_flags = PMQ_COVERING_OR_NEXT, .query_addr = addr,
		.vma_name_size = PMQ_NAME_MAX, .vma_name_addr = (uintptr_t)name,
	};
	size_t n;
	int rc = ioctl(fd, ODPEMU_PROCMAP_QUERY, &q);

	if (rc && (errno == E2BIG || errno == ENAMETOOLONG)) {
		q.vma_name_size = 0;	/* a name longer than PATH_MAX: none of ours */
		q.vma_name_addr = 0;
		rc = ioctl(fd, ODPEMU_PROCMAP_QUERY, &q);
	}
	if (rc)
		return errno == ENOENT ? 0 : -errno;
	v->start = (uintptr_t)q.vma_start;
	v->end = (uintptr_t)q.vma_end;
	v->prot = (q.vma_flags & PMQ_READABLE ? PROT_READ : 0) |
		  (q.vma_flags & PMQ_WRITABLE ? PROT_WRITE : 0) |
		  (q.vma_flags & PMQ_EXECUTABLE ? PROT_EXEC : 0);
	v->shared = q.vma_flags & PMQ_SHARED;
	v->offset = q.vma_offset;
	v->dev = makedev(q.dev_major, q.dev_minor);
	v->ino = (ino_t)q.inode;
	n = q.vma_name_size ? q.vma_name_size - 1 : 0;	/* it counts the terminating zero */
	if (n >= sizeof(v->path))
		n = sizeof(v->path) - 1;
	memcpy(v->path, name, n);
	v->path[n] = '\0';
	return 1;
}

int lib_maps_range(uintptr_t lo, uintptr_t hi, struct lib_vma **vmas, size_t *n)
{
	static atomic_bool no_query;
	char *name;
	size_t cap = 0;
	struct lib_vma v;
	int fd, rc = 0;

	if (atomic_load_explicit(&no_query, memory_order_relaxed))
		return lib_maps_read(vmas, n);
	*vmas = NULL;
	*n = 0;
	if ((fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (!(name = malloc(PMQ_NAME_MAX))) {
		close(fd);
		return -ENOMEM;
	}
	/* Each step starts at the end of the last VMA: as many steps as VMAs meet the range. */
	for (uint64_t at = lo; at < hi && (rc = query(fd, at, &v, name)) > 0 && v.start < hi;
	     at = v.end)
		if ((rc = push(vmas, n, &cap, &v)) < 0)
			break;
	free(name);
	close(fd);
	if (rc == -ENOTTY || rc == -EINVAL) {	/* before Linux 6.11: read them all */
		atomic_store_explicit(&no_query, true, memory_order_relaxed);
		free(*vmas);
		return lib_maps_read(vmas, n);
	}
	if (rc < 0) {
		free(*vmas);
		*vmas = NULL;
		*n = 0;
		return rc;
	}
	return 0;
}
