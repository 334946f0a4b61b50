/* SPDX-License-Identifier: MIT */
/* Handle tables: the daemon names objects by small per-session handles (ipc.h); events and
 * CQ notifications carry only the handle, so the library maps it back to its object. A
 * sorted array: lookups are a binary search, and a session has few objects. */
#include <stdlib.h>
#include <string.h>

#include "lib_int.h"

/* The first index whose handle is >= handle. */
static uint32_t lower_bound(const struct lib_table *t, uint32_t handle)
{
	uint32_t lo = 0, hi = t->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->e[mid].handle < handle)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int grow(struct lib_table *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 16;
	struct lib_table_entry *e;

	if (cap < t->cap)
		return -ENOMEM;
	e = realloc(t->e, (size_t)cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	t->e = e;
	t->cap = cap;
	return 0;
}

int lib_table_add(struct lib_table *t, uint32_t handle, void *obj)
{
	uint32_t i = lower_bound(t, handle);

	if (i < t->n && t->e[i].handle == handle)
		return -EEXIST;
	if (t->n == t->cap && grow(t))
		return -ENOMEM;
	memmove(&t->e[i + 1], &t->e[i], (size_t)(t->n - i) * sizeof(*t->e));
	t->e[i].handle = handle;
	t->e[i].obj = obj;
	t->n++;
	return 0;
}

void *lib_table_find(const struct lib_table *t, uint32_t handle)
{
	uint32_t i = lower_bound(t, handle);

	return i < t->n && t->e[i].handle == handle ? t->e[i].obj : NULL;
}

void *lib_table_remove(struct lib_table *t, uint32_t handle)
{
	uint32_t i = lower_bound(t, handle);
	void *obj;

	if (i >= t->n || t->e[i].handle != handle)
		return NULL;
	obj = t->e[i].obj;
	memmove(&t->e[i], &t->e[i + 1], (size_t)(t->n - i - 1) * sizeof(*t->e));
	t->n--;
	return obj;
}

void lib_table_free(struct lib_table *t)
{
	free(t->e);
	t->e = NULL;
	t->n = t->cap = 0;
}
