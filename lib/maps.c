/* SPDX-License-Identifier: MIT */
/* /proc/self/maps, parsed: the only way a process learns what backs its own address
 * ranges (private anonymous, a file, one of our pin memfds) without privileges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>

#include "lib_int.h"

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
