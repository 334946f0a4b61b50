/* SPDX-License-Identifier: MIT */
/* watch — the mapping-change notifier (include/odpemu/odpemu.h, docs/regcache.md): watches
 * live in the daemon that supervises the process (supervise.c); and the seccomp route, by
 * which that daemon is also the MMU notifier of a process without a (capable) userfaultfd
 * (docs/emu.md, "Without a userfaultfd"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib_int.h"

struct odpemu_watch {
	struct odpemu_context *context;
	uint32_t handle;
};

/* A userfaultfd without UFFD_FEATURE_WP_ASYNC (before Linux 6.7) takes anonymous memory
 * and shmem only (mm/userfaultfd.c, vma_can_userfault): does [addr, +len) meet a mapping
 * of another file (or is the MR every range, implicit ODP)? A tmpfs file outside
 * /dev/shm counts as a file: the route is then taken for nothing, never missed. */
static bool file_mappings_unwatched(const void *addr, size_t len, bool implicit)
{
	struct lib_vma *v;
	size_t n;
	bool any = false;

	if (lib_uffd_features() & UFFD_FEATURE_WP_ASYNC)
		return false;
	if (implicit || !addr)
		return true;
	if (lib_maps_range((uintptr_t)addr, (uintptr_t)addr + len, &v, &n))
		return true;	/* cannot tell: the route covers it */
	for (size_t i = 0; i < n && !any; i++)
		any = v[i].ino && strncmp(v[i].path, "/memfd:", 7) &&
		      strncmp(v[i].path, "/SYSV", 5) && strncmp(v[i].path, "/dev/shm/", 9);
	free(v);
	return any;
}

/* No userfaultfd here (or one that cannot watch file mappings, and the MR meets one): at
 * the context's first such MR, the process's seccomp filter holds its
 * mapping changes for the daemon of the first device that registers one, which
 * invalidates its own translations before each call runs and sends the range back for
 * the relay to forward to the other devices (relay.c; docs/emu.md, "Without a
 * userfaultfd"). Not at open: a process that never registers memory (a monitor, a parent
 * about to fork workers) then pays no round trip per munmap, keeps its privileges
 * (no_new_privs) and leaves its children free to install their own. */
void lib_seccomp_route(struct lib_context *c, const void *addr, size_t len, bool implicit)
{
	bool uffd = c->notifier == IPC_NOTIFIER_UFFD;
	int rc;

	if (c->relay_peer < 0 || (c->notifier != IPC_NOTIFIER_NONE && !uffd) ||
	    (uffd && !file_mappings_unwatched(addr, len, implicit)) ||
	    atomic_exchange(&c->route_tried, true))
		return;
	rc = lib_supervise(&c->pub, false);
	if (rc && rc != -EXDEV)		/* no seccomp, or a fork child's inherited filter */
		return;
	/* -EXDEV: another device's daemon supervises; it relays to this one */
	c->notifier = uffd ? IPC_NOTIFIER_UFFD_AND_SECCOMP :
		      rc ? IPC_NOTIFIER_SECCOMP_RELAYED : IPC_NOTIFIER_SECCOMP;
	(void)lib_client_info(c);	/* the daemon's record of us says so */
}

ODPEMU_EXPORT int odpemu_watch_create(struct odpemu_context *context, const void *addr,
				      size_t len, uint64_t *z, struct odpemu_watch **watch)
{
	struct ipc_watch_req q = { .addr = (uint64_t)(uintptr_t)addr, .len = len,
				   .z = (uint64_t)(uintptr_t)z };
	struct ipc_handle_rep rep;
	struct lib_call call = { .op = IPC_WATCH_CREATE, .req = &q, .req_len = sizeof(q),
				 .rep = &rep, .rep_min = sizeof(rep), .rep_cap = sizeof(rep) };
	struct odpemu_watch *w;
	int rc;

	if (!context || !len || !z || ((uintptr_t)z & 7) || !watch)
		return lib_fail(EINVAL);
	if ((rc = lib_supervise(context, true)))
		return lib_fail(-rc);
	if (!(w = calloc(1, sizeof(*w))))
		return lib_fail(ENOMEM);
	if ((rc = lib_call(lib_ctx(context), &call))) {
		free(w);
		return lib_fail(-rc);
	}
	w->context = context;
	w->handle = rep.handle;
	*watch = w;
	return 0;
}

ODPEMU_EXPORT int odpemu_watch_destroy(struct odpemu_watch *w)
{
	int rc;

	if (!w)
		return lib_fail(EINVAL);
	if ((rc = lib_call_destroy(lib_ctx(w->context), IPC_WATCH_DESTROY, w->handle)))
		return lib_fail(-rc);
	free(w);
	return 0;
}
