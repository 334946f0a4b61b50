/* SPDX-License-Identifier: MIT */
/* Fork support as rdma-core: ibv_fork_init (or RDMAV_FORK_SAFE / IBV_FORK_SAFE in the
 * environment) before the first registration makes pinned ranges MADV_DONTFORK, so a
 * child never shares pages the daemon reaches. odpemu pins by moving pages into shared
 * memory, which a child would share rather than copy: fork is therefore not "unneeded"
 * here even on kernels with copy-on-fork for pinned pages. */
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compat.h"

static atomic_bool fork_enabled;
static atomic_bool mr_registered;

static bool env_asks(void)
{
	return getenv("RDMAV_FORK_SAFE") || getenv("IBV_FORK_SAFE");
}

bool cv_fork_enabled(void)
{
	if (!atomic_load(&fork_enabled) && env_asks() && !atomic_load(&mr_registered))
		atomic_store(&fork_enabled, true);
	return atomic_load(&fork_enabled);
}

void cv_fork_mr_registered(void)
{
	atomic_store(&mr_registered, true);
}

/* 0; EINVAL once a memory region exists (too late: its pages may already be shared). */
CV_EXPORT int ibv_fork_init(void)
{
	if (atomic_load(&fork_enabled))
		return 0;
	if (atomic_load(&mr_registered))
		return EINVAL;
	atomic_store(&fork_enabled, true);
	return 0;
}

CV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return cv_fork_enabled() ? IBV_FORK_ENABLED : IBV_FORK_DISABLED;
}

static int advise(void *base, size_t size, int advice)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)base & ~(page - 1);
	uintptr_t end = ((uintptr_t)base + size + page - 1) & ~(page - 1);

	if (!cv_fork_enabled() || !size)
		return 0;	/* rdma-core: a no-op without fork support */
	return madvise((void *)start, end - start, advice) ? errno : 0;
}

CV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return advise(base, size, MADV_DONTFORK);
}

CV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return advise(base, size, MADV_DOFORK);
}
