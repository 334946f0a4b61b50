/* SPDX-License-Identifier: MIT */
/* The process's userfaultfd (one, made by relay.c): every daemon the process talks to
 * registers ranges on it, and the relay thread forwards its events, so their notifiers
 * learn of every unmap, discard and remap of MR memory (docs/emu.md, "MMU notifier"). */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib_int.h"

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

int lib_uffd_open(void)
{
	int fd = uffd_create();

	if (fd < 0)
		return -1;
	/* The API handshake is once per fd: a failed one leaves the fd unusable, so the
	 * retry without shmem write-protect (kernels before 5.19) takes a new fd. */
	if (uffd_api(fd, IPC_UFFD_FEATURES))
		return fd;
	close(fd);
	fd = uffd_create();
	if (fd < 0)
		return -1;
	if (uffd_api(fd, IPC_UFFD_FEATURES & ~(uint64_t)UFFD_FEATURE_WP_HUGETLBFS_SHMEM))
		return fd;
	close(fd);
	return -1;
}
