/* SPDX-License-Identifier: MIT */
/* watch — the mapping-change notifier (include/odpemu/odpemu.h, docs/regcache.md): the
 * process's seccomp filter, installed once, whose listener goes to the daemon of the
 * first context that watches; the watches themselves live in that daemon. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib_int.h"

struct odpemu_watch {
	struct odpemu_context *context;
	uint32_t handle;
};

static pthread_mutex_t supervise_lock = PTHREAD_MUTEX_INITIALIZER;
static struct odpemu_context *supervisor;	/* whose daemon holds our listener */
static pid_t supervised_pid;			/* a fork child installs its own */

/* The filter: the calls that can change a mapping are held for the daemon (user
 * notification); everything else runs. madvise only with a discarding advice, mmap only
 * with MAP_FIXED (the low word of the flags argument: x86-64 is little-endian). */
#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARG_LO(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define HOLD BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF)
#define RUN BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static int install_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		RUN,						/* another ABI: not ours */
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_munmap, 0, 1),
		HOLD,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mremap, 0, 1),
		HOLD,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 0, 6),
		LD_ARG_LO(2),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_DONTNEED, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_FREE, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_REMOVE, 1, 0),
		RUN,
		HOLD,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 3),
		LD_ARG_LO(3),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_FIXED, 0, 1),
		HOLD,
		RUN,
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	/* every thread, now (TSYNC; ESRCH rather than a thread left unfiltered) */
	return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC |
			    SECCOMP_FILTER_FLAG_TSYNC_ESRCH, &prog);
}

/* The first watch of the process: the filter, its listener to this context's daemon.
 * Later watches must use the same daemon (one listener per process). */
static int supervise(struct odpemu_context *context)
{
	struct lib_call call = { .op = IPC_SUPERVISE };
	int rc = 0, fd;

	pthread_mutex_lock(&supervise_lock);
	if (supervisor && supervised_pid == getpid()) {
		rc = supervisor == context ? 0 : -EXDEV;
		goto out;
	}
	if ((fd = install_filter()) < 0) {
		rc = fd == -1 ? -errno : fd;
		goto out;
	}
	call.fds = &fd;
	call.nfds = 1;
	rc = lib_call(lib_ctx(context), &call);
	close(fd);	/* the daemon's copy is the only one: see docs/regcache.md */
	if (!rc) {
		supervisor = context;
		supervised_pid = getpid();
	}
out:
	pthread_mutex_unlock(&supervise_lock);
	return rc;
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
	if ((rc = supervise(context)))
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
