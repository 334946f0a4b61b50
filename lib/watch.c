/* SPDX-License-Identifier: MIT */
/* watch — the mapping-change notifier (include/odpemu/odpemu.h, docs/regcache.md): the
 * process's seccomp filter, installed once, whose listener goes to the daemon of the
 * first context that watches; the watches themselves live in that daemon. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib_int.h"

struct odpemu_watch {
	struct odpemu_context *context;
	uint32_t handle;
};

static pthread_mutex_t supervise_lock = PTHREAD_MUTEX_INITIALIZER;
static struct odpemu_context *supervisor;	/* whose daemon holds our listener */
static pid_t supervised_pid;			/* a fork child installs its own */

/* If the daemon dies, nobody would answer the held calls and the kernel would fail them
 * with ENOSYS (free() could no longer return memory, the dynamic loader could no longer
 * map a library). So the library keeps a copy of the listener and a thread that sleeps
 * on the daemon's pidfd; once the daemon is gone it lets every held call run, forever.
 * It never makes a held call itself: its buffers are static, it allocates nothing. */
static int listener_copy = -1, daemon_pidfd = -1;

static sem_t fallback_ready;

/* Everything a sanitizer runtime does for a new thread, and the first call of each of
 * its interceptors the loop below uses, may map memory with MAP_FIXED: a held call. Done
 * while the daemon is alive to answer, before supervise() returns; once it is dead, a held
 * call of this thread would wait for itself. */
static void warm_up(void)
{
	struct pollfd pf = { .fd = listener_copy, .events = POLLIN };
	uint64_t id = 0;

	(void)poll(&pf, 1, 0);
	(void)ioctl(listener_copy, SECCOMP_IOCTL_NOTIF_ID_VALID, &id);
	sem_post(&fallback_ready);
}

static void *answer_when_orphaned(void *arg)
{
	static union {
		struct seccomp_notif n;
		uint8_t room[512];	/* a newer kernel's larger record */
	} in;
	static union {
		struct seccomp_notif_resp r;
		uint8_t room[512];
	} out;
	struct pollfd pf = { .fd = daemon_pidfd, .events = POLLIN };

	(void)arg;
	warm_up();
	while (daemon_pidfd >= 0 && poll(&pf, 1, -1) < 0 && errno == EINTR)
		;
	for (;;) {
		memset(&in, 0, sizeof(in));
		if (ioctl(listener_copy, SECCOMP_IOCTL_NOTIF_RECV, &in.n))
			continue;	/* EINTR, or ENOENT: the caller went */
		memset(&out, 0, sizeof(out));
		out.r.id = in.n.id;
		out.r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		(void)ioctl(listener_copy, SECCOMP_IOCTL_NOTIF_SEND, &out.r);
	}
	return NULL;
}

/* The fallback above, for the daemon of c; c NULL: no daemon took the listener, answer
 * from now on. Without a pidfd of c's daemon (another PID namespace) there is none: the
 * thread would race the daemon for the calls (docs/regcache.md). */
static void keep_fallback(struct lib_context *c, int listener)
{
	pthread_attr_t attr;
	pthread_t t;

	if (c && (daemon_pidfd = (int)syscall(SYS_pidfd_open, (pid_t)c->daemon_pid, 0)) < 0) {
		close(listener);
		return;
	}
	listener_copy = listener;
	if (sem_init(&fallback_ready, 0, 0) || pthread_attr_init(&attr))
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (!pthread_create(&t, &attr, answer_when_orphaned, NULL)) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 10;	/* bounded: a thread that never starts is not waited for */
		while (sem_timedwait(&fallback_ready, &until) && errno == EINTR)
			;
	}
	pthread_attr_destroy(&attr);
}

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
	if (supervised_pid == getpid()) {	/* the filter is there (not a fork's copy) */
		rc = supervisor == context ? 0 : supervisor ? -EXDEV : -ENODEV;
		goto out;
	}
	if ((fd = install_filter()) < 0) {
		rc = fd == -1 ? -errno : fd;
		goto out;
	}
	supervised_pid = getpid();
	supervisor = NULL;
	call.fds = &fd;
	call.nfds = 1;
	rc = lib_call(lib_ctx(context), &call);
	if (rc) {
		keep_fallback(NULL, fd);	/* the filter stays: someone must answer */
	} else {
		supervisor = context;
		keep_fallback(lib_ctx(context), fd);
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
