/* SPDX-License-Identifier: MIT */
/* watch — the mapping-change notifier, MR leases and device counters through the drop-in
 * (odpemu/verbs_ext.h): the same calls as libodpemu's odpemu_watch_create/destroy and
 * odpemu_restore_mr (docs/regcache.md), for programs that hold an ibv_context or ibv_mr.
 * Exported at odpemu's own version node ODPEMU_VERBS_EXT_1: a program that uses them
 * needs odpemu's libibverbs.so.1. */
#include <errno.h>

#include "compat.h"
#include "odpemu/verbs_ext.h"

CV_EXPORT int odpemu_ibv_watch_create(struct ibv_context *context, const void *addr, size_t len,
				      uint64_t *z, struct odpemu_watch **watch)
{
	struct odpemu_context *o = context ? odpemu_compat_context(context) : NULL;

	if (!o)
		return errno = EINVAL;
	return odpemu_watch_create(o, addr, len, z, watch);
}

CV_EXPORT int odpemu_ibv_watch_destroy(struct odpemu_watch *watch)
{
	return odpemu_watch_destroy(watch);
}

CV_EXPORT int odpemu_ibv_restore_mr(struct ibv_mr *mr)
{
	/* every ibv_mr of this library is a cv_mr */
	if (!mr)
		return errno = EINVAL;
	return odpemu_restore_mr(((struct cv_mr *)mr)->odp);
}

/* The device's counters, as odpemu-ctl stat shows them (struct odpemu_ibv_counter has
 * struct odpemu_counter's layout). */
_Static_assert(sizeof(struct odpemu_ibv_counter) == sizeof(struct odpemu_counter),
	       "odpemu_ibv_counter mirrors odpemu_counter");
CV_EXPORT int odpemu_ibv_query_counters(struct ibv_context *context,
					struct odpemu_ibv_counter *out, int max)
{
	struct odpemu_context *o = context ? odpemu_compat_context(context) : NULL;

	if (!o || !out || max < 0)
		return errno = EINVAL, -1;
	return odpemu_query_counters(o, ODPEMU_COUNTERS_DEVICE, 0,
				     (struct odpemu_counter *)out, max);
}
