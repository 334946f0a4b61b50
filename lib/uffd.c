/* SPDX-License-Identifier: MIT */
/* The process's userfaultfd (one, made by relay.c): every daemon the process talks to
 * registers ranges on it, and the relay thread forwards its events, so their notifiers
 * learn of every unmap, discard and remap of MR memory (docs/emu.md, "MMU notifier"). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib_int.h"
#include "mask.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1	/* Linux 5.11 */
#endif

/* vm.unprivileged_userfaultfd = 0 still lets anyone open a user-mode-only fd, which is
 * all the non-cooperative events need; older kernels do not know the flag. */
static int uffd_create(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	if (fd < 0 && errno == EINVAL)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	return fd;
}

static bool uffd_api(int fd, uint64_t features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };

	return ioctl(fd, UFFDIO_API, &api) == 0;
}

/* A new fd with the features, or -1. The API handshake is once per fd: a failed one
 * leaves the fd unusable, so each try takes a new fd. */
static int uffd_open_with(uint64_t features)
{
	int fd = uffd_create();

	if (fd >= 0 && !uffd_api(fd, features)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Features, best first. WP_ASYNC (Linux 6.7) lets write-protect-only registration take
 * any VMA, regular files' shared mappings too (mm/userfaultfd.c vma_can_userfault), so
 * their unmaps and discards reach the daemons; write faults it would resolve never
 * happen (no page is ever protected). Then without it, then without shmem write-protect
 * (kernels before 5.19). */
static _Atomic uint64_t opened_with;	/* the features of the fd last opened */

int lib_uffd_open(void)
{
	static const uint64_t tries[] = { IPC_UFFD_FEATURES | UFFD_FEATURE_WP_ASYNC,
		IPC_UFFD_FEATURES, IPC_UFFD_FEATURES & ~(uint64_t)UFFD_FEATURE_WP_HUGETLBFS_SHMEM };
	const char *mask = getenv("ODPEMU_MASK");
	int fd = -1;
	unsigned first = 0;

	/* The profiles' test switch (ipc/mask.h): as where the kernel or a container's
	 * seccomp profile refuses userfaultfd, or a kernel before a feature's tier. */
	if (ipc_mask_has(mask, "userfaultfd")) {
		errno = EPERM;
		return -1;
	}
	if (ipc_mask_has(mask, "uffd_wp_async"))
		first = 1;
	if (ipc_mask_has(mask, "uffd_wp_shmem"))
		first = 2;
	for (unsigned i = first; i < sizeof(tries) / sizeof(tries[0]) && fd < 0; i++)
		if ((fd = uffd_open_with(tries[i])) >= 0)
			opened_with = tries[i];
	return fd;
}

uint64_t lib_uffd_features(void)
{
	return opened_with;
}
