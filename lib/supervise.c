/* SPDX-License-Identifier: MIT */
/* supervise — the process's seccomp filter, installed once, and its listener, held by one
 * daemon (docs/regcache.md, "The mechanism"): the daemon of the first watch or lease, or,
 * for the seccomp route (watch.c), of the first MR, until a watch or lease moves it. A
 * thread of ours answers the held calls if that daemon dies. */
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
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib_int.h"

static pthread_mutex_t supervise_lock = PTHREAD_MUTEX_INITIALIZER;
static struct odpemu_context *supervisor;	/* whose daemon holds our listener */
static pid_t supervised_pid;			/* a fork child installs its own */
/* A watch or lease was made through the supervisor: its daemon keeps the listener. Until
 * then (the seccomp route took it at an MR) the first watch or lease moves it. */
static bool supervisor_pinned;

/* If the daemon dies, nobody answers the held calls: the process would hang in munmap
 * (the library's copy keeps the listener alive). So the library keeps a copy of the
 * listener and a thread that sleeps on the daemon's pidfd; from then on it lets every
 * held call run, forever. It never makes a held call itself: its buffers are static, it
 * allocates nothing. (When the context whose daemon holds the listener closes, that
 * daemon keeps answering until the process exits, emu/host/orphan.h: a thread of ours could
 * be stopped, by LeakSanitizer at exit say, while another task of the process unmaps.) */
static int listener_copy = -1;
static _Atomic int daemon_pidfd = -1;	/* the supervisor's daemon; -1: answer now */
static int switch_fd = -1;		/* an eventfd: daemon_pidfd changed (a move) */
/* The ids of the calls the daemon holds for a lease (ipc_supervise_req; it writes them):
 * a dead daemon's held calls are let go from here, the new ones by the loop below. */
static uint64_t held_ids[IPC_HELD_SLOTS] __attribute__((aligned(8)));

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

/* Until the supervising daemon dies: its pidfd, read again after each move. */
static void wait_for_orphaning(void)
{
	for (;;) {
		struct pollfd pf[2] = { { .fd = daemon_pidfd, .events = POLLIN },
					{ .fd = switch_fd, .events = POLLIN } };
		uint64_t v;

		if (pf[0].fd < 0 || poll(pf, 2, -1) < 0)
			return;		/* no daemon: answer from now on; EINTR: never (signals
					 * are blocked, thread.c) */
		if (pf[1].revents & POLLIN) {
			(void)read(switch_fd, &v, sizeof(v));
			continue;
		}
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))
			return;
	}
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
	(void)arg;
	warm_up();
	wait_for_orphaning();
	for (unsigned i = 0; i < IPC_HELD_SLOTS; i++) {
		uint64_t id = __atomic_load_n(&held_ids[i], __ATOMIC_ACQUIRE);

		if (!id)
			continue;
		memset(&out, 0, sizeof(out));
		out.r.id = id;
		out.r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		(void)ioctl(listener_copy, SECCOMP_IOCTL_NOTIF_SEND, &out.r);	/* ENOENT: gone */
	}
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
	int pidfd = c ? (int)syscall(SYS_pidfd_open, (pid_t)c->daemon_pid, 0) : -1;

	if (c && pidfd < 0) {
		close(listener);
		return;
	}
	daemon_pidfd = pidfd;
	switch_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	listener_copy = listener;
	if (!sem_init(&fallback_ready, 0, 0))
		(void)lib_thread_spawn(answer_when_orphaned, NULL, &fallback_ready);
}

/* The filter: the calls that can change a mapping are held for the daemon (user
 * notification), which works out what each one changes (emu/host/watch.c); everything else
 * runs. Arguments are tested on their low word (x86-64 is little-endian) where the kernel
 * reads an int (madvise's advice, mmap's and shmat's flags).
 *
 * Built from blocks so that no jump offset is counted by hand: once the call's number is
 * loaded, ON_CALL(nr, block...) skips the block (its length is computed) unless the number
 * is nr. Every block ends in a return, so the next ON_CALL still finds the number in the
 * accumulator; inside a block every jump skips exactly one instruction. A call that no
 * block names reaches the last RUN without reading an argument: the kernel's seccomp
 * action cache (5.11) then lets it run without running the filter at all. */
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24	/* Linux 5.18 */
#endif
#define LD_ARCH BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch))
#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARG_LO(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define LD_ARG_HI(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, \
			      offsetof(struct seccomp_data, args[i]) + 4)
#define HOLD BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF)
#define RUN BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define HOLD_IF_EQ(v) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (v), 0, 1), HOLD
#define HOLD_IF_NE(v) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (v), 1, 0), HOLD
#define HOLD_IF_ANY(bits) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (bits), 0, 1), HOLD
#define RUN_IF_NE(v) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (v), 1, 0), RUN
#define NINSN(...) (sizeof((struct sock_filter[]){ __VA_ARGS__ }) / sizeof(struct sock_filter))
#define ON_CALL(nr, ...) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, NINSN(__VA_ARGS__)), __VA_ARGS__

static int install_filter(void)
{
	struct sock_filter f[] = {
		LD_ARCH,
		RUN_IF_NE(AUDIT_ARCH_X86_64),	/* another ABI (int 0x80): not ours */
		LD_NR,
		ON_CALL(__NR_munmap, HOLD),
		ON_CALL(__NR_mremap, HOLD),
		/* madvise: only the advices that discard pages */
		ON_CALL(__NR_madvise, LD_ARG_LO(2), HOLD_IF_EQ(MADV_DONTNEED),
			HOLD_IF_EQ(MADV_DONTNEED_LOCKED), HOLD_IF_EQ(MADV_FREE),
			HOLD_IF_EQ(MADV_REMOVE), RUN),
		/* mmap: only over what is there (MAP_FIXED; MAP_FIXED_NOREPLACE fails instead) */
		ON_CALL(__NR_mmap, LD_ARG_LO(3), HOLD_IF_ANY(MAP_FIXED), RUN),
		/* brk: every one but brk(0), the query: only the daemon knows the old break, so
		 * only it can tell a shrink (which frees pages) from a growth. Each held brk is
		 * a round trip to the daemon, growth too (docs/regcache.md). */
		ON_CALL(__NR_brk, LD_ARG_LO(0), HOLD_IF_NE(0), LD_ARG_HI(0), HOLD_IF_NE(0), RUN),
		/* System V shared memory: every detach; an attach only with SHM_REMAP (without
		 * it, an attach over a mapping fails) */
		ON_CALL(__NR_shmdt, HOLD),
		ON_CALL(__NR_shmat, LD_ARG_LO(2), HOLD_IF_ANY(SHM_REMAP), RUN),
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

/* The fallback follows c's daemon from now on. */
static void follow(int pidfd)
{
	uint64_t one = 1;
	int old = atomic_exchange(&daemon_pidfd, pidfd);

	(void)!write(switch_fd, &one, sizeof(one));	/* the thread polls the old one */
	if (old >= 0)
		close(old);
}

/* The listener from the supervisor's daemon, which took it for the seccomp route alone,
 * to context's, for a watch or lease (ipc.h UNSUPERVISE). Held calls made meanwhile wait
 * in the listener for the new daemon. 0, or -EXDEV where it cannot move. */
static int move_listener(struct odpemu_context *context)
{
	struct ipc_supervise_req q = { .held = (uint64_t)(uintptr_t)held_ids };
	struct lib_call un = { .op = IPC_UNSUPERVISE };
	struct lib_call su = { .op = IPC_SUPERVISE, .req = &q, .req_len = sizeof(q),
			       .fds = &listener_copy, .nfds = 1 };
	struct lib_call back = su;
	struct lib_context *to = lib_ctx(context);
	int pidfd;

	if (listener_copy < 0 || switch_fd < 0 ||
	    (pidfd = (int)syscall(SYS_pidfd_open, (pid_t)to->daemon_pid, 0)) < 0)
		return -EXDEV;	/* no fallback to follow the new daemon: stay */
	if (lib_call(lib_ctx(supervisor), &un)) {	/* -EBUSY: it has watches after all */
		close(pidfd);
		return -EXDEV;
	}
	if (lib_call(to, &su)) {
		close(pidfd);
		if (lib_call(lib_ctx(supervisor), &back))
			follow(-1);	/* nobody holds it: the fallback answers */
		return -EXDEV;
	}
	supervisor = context;
	follow(pidfd);
	lib_relay_set_source(to->relay_peer);
	return 0;
}

/* A context whose mapping changes come by the seccomp route through another's daemon. */
static bool relayed(const struct lib_context *c)
{
	return c->relay_peer >= 0 && (c->notifier == IPC_NOTIFIER_SECCOMP_RELAYED ||
				      c->notifier == IPC_NOTIFIER_UFFD_AND_SECCOMP);
}

void lib_watch_closing(struct odpemu_context *context)
{
	struct lib_context *to;

	pthread_mutex_lock(&supervise_lock);
	if (supervised_pid == getpid() && supervisor == context) {
		/* Held only for the seccomp route, and another device relies on it: the
		 * listener moves there (this context's socket is still open), so that device
		 * keeps learning of changes. Else its session goes with it: its daemon keeps
		 * answering held calls (emu/host/orphan.h), and later watches are ENODEV. */
		to = supervisor_pinned ? NULL : lib_fork_pick(relayed);
		if (to && !move_listener(&to->pub)) {
			to->notifier = to->notifier == IPC_NOTIFIER_UFFD_AND_SECCOMP ?
				       to->notifier : IPC_NOTIFIER_SECCOMP;
			(void)lib_client_info(to);	/* its daemon's record says so */
		} else {
			supervisor = NULL;
		}
	}
	pthread_mutex_unlock(&supervise_lock);
}

/* The first watch or lease of the process (pin), or the seccomp route at an MR: the
 * filter, its listener to this context's daemon. Later ones must use the same daemon (one
 * listener per process), unless only the route took it: then a watch or lease moves it. */
int lib_supervise(struct odpemu_context *context, bool pin)
{
	struct ipc_supervise_req q = { .held = (uint64_t)(uintptr_t)held_ids };
	struct lib_call call = { .op = IPC_SUPERVISE, .req = &q, .req_len = sizeof(q) };
	int rc = 0, fd;

	pthread_mutex_lock(&supervise_lock);
	if (supervised_pid == getpid()) {	/* the filter is there (not a fork's copy) */
		if (!supervisor)
			rc = -ENODEV;
		else if (supervisor != context)
			rc = pin && !supervisor_pinned ? move_listener(context) : -EXDEV;
		supervisor_pinned |= pin && !rc;
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
		supervisor_pinned = pin;
		keep_fallback(lib_ctx(context), fd);
		/* without a userfaultfd, what its daemon sends back goes to the others */
		lib_relay_set_source(lib_ctx(context)->relay_peer);
	}
out:
	pthread_mutex_unlock(&supervise_lock);
	return rc;
}

