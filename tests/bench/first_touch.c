/* SPDX-License-Identifier: MIT */
/* first_touch — see first_touch.h. */
#include "first_touch.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define PAGE 4096u

/* The child: map the region, hand its address over the pipe, wait to be killed. */
static void child(int wr, int hold, size_t bytes)
{
	void *r = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char c;

	bench_child_detach();
	if (write(wr, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(1);
	(void)!read(hold, &c, 1);	/* returns when the parent closes its end */
	_exit(0);
}

/* One pass over the region; its time in ns, or 0 on a failed write (errno set). */
static uint64_t pass(pid_t pid, uint8_t *dst, size_t bytes, const uint8_t *src, size_t chunk)
{
	uint64_t t0 = bench_now_ns();

	for (size_t off = 0; off < bytes; off += chunk) {
		struct iovec l = { (void *)src, chunk }, r = { dst + off, chunk };

		if (process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)chunk) {
			if (!errno)
				errno = EIO;
			return 0;
		}
	}
	return bench_now_ns() - t0;
}

static int measure(pid_t pid, int rd, size_t bytes, size_t chunk, struct first_touch *o)
{
	uint8_t *dst, *src = malloc(chunk);
	uint64_t cold, warm;
	double pages = (double)(bytes / PAGE);

	if (!src)
		return -ENOMEM;
	memset(src, 0x5a, chunk);
	if (read(rd, &dst, sizeof(dst)) != (ssize_t)sizeof(dst) || dst == MAP_FAILED) {
		free(src);
		return -ENOMEM;
	}
	cold = pass(pid, dst, bytes, src, chunk);
	warm = cold ? pass(pid, dst, bytes, src, chunk) : 0;
	free(src);
	if (!cold || !warm)
		return -errno;
	*o = (struct first_touch){ (double)bytes / (double)cold, (double)bytes / (double)warm,
				   (double)cold / pages, (double)warm / pages };
	return 0;
}

int first_touch_measure(size_t bytes, size_t chunk, struct first_touch *out)
{
	int addr[2], hold[2], rc;
	pid_t pid;

	if (!chunk || chunk % PAGE || !bytes || bytes % chunk)
		return -EINVAL;
	if (pipe(addr))
		return -errno;
	if (pipe(hold)) {
		rc = -errno;
		close(addr[0]), close(addr[1]);
		return rc;
	}
	pid = fork();
	if (pid == 0) {
		close(addr[0]), close(hold[1]);
		child(addr[1], hold[0], bytes);
	}
	close(addr[1]), close(hold[0]);
	rc = pid < 0 ? -errno : measure(pid, addr[0], bytes, chunk, out);
	close(addr[0]), close(hold[1]);	/* the child's read returns: it exits */
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return rc;
}
