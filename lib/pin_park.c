/* SPDX-License-Identifier: MIT */
/*
 * Running a job while the calling thread is parked in the kernel (pin.c's move of a range
 * that holds the caller's own stack).
 *
 * Moving memory copies it and then maps the copy over it: a write between the two is
 * lost. When the range holds the calling thread's stack, that thread's own frames are in
 * it, so the copy is made by a helper thread while the caller writes nothing — and "waits
 * in pthread_join" is not nothing: between pthread_create's return and the moment the
 * caller is asleep in the kernel it pushes return addresses and saves registers on that
 * very stack. A helper that copied then lost them, and the caller returned to address 0
 * (seen as a SIGSEGV at rip 0 in brick-api-client under `tools/test --profile rhel9`).
 *
 * So the caller parks in FUTEX_WAIT on a word of the job, all signals blocked, and the
 * helper starts the job only once the kernel reports the caller blocked in that very
 * call: /proc/self/task/TID/syscall holds "NR ARG0 ..." while a thread sleeps in a system
 * call (proc(5); a thread of the same process may read it without ptrace rights, as
 * __ptrace_may_access allows its own thread group). A sleeping thread writes nothing to
 * its stack until it wakes, and only the helper knows the word's address. Where the file
 * does not exist (a kernel without CONFIG_HAVE_ARCH_TRACEHOOK) the job is refused with
 * EOPNOTSUPP and a reason; pd_mr.c then registers the range by address, as for any range
 * it cannot pin.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib_int.h"

/* How long the helper waits for the caller to park: it takes microseconds; a caller that
 * has not parked in 10 s is stopped or starved, and the job is refused rather than run
 * under it. */
#define PARK_POLLS 20000
#define PARK_POLL_US 500

struct park_job {
	int (*fn)(void *arg);
	void *arg;
	pid_t caller;
	_Atomic uint32_t done;		/* the futex word the caller sleeps on */
	int rc;
	const char *why;		/* why the job did not run */
};

enum park_state { PARK_NOT_YET, PARK_PARKED, PARK_UNKNOWABLE };

/* Is the caller asleep in FUTEX_WAIT on job->done? */
static enum park_state park_state(struct park_job *job)
{
	char path[64], buf[256];
	long nr;
	unsigned long arg0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)job->caller);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT || errno == EACCES ? PARK_UNKNOWABLE : PARK_NOT_YET;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return PARK_NOT_YET;
	buf[n] = '\0';
	/* "running", or "-1 SP PC" between calls: not parked */
	if (sscanf(buf, "%ld %lx", &nr, &arg0) != 2)
		return PARK_NOT_YET;
	return nr == SYS_futex && arg0 == (uintptr_t)&job->done ? PARK_PARKED : PARK_NOT_YET;
}

static void *park_helper(void *arg)
{
	struct park_job *job = arg;
	enum park_state s = PARK_NOT_YET;

	for (int i = 0; i < PARK_POLLS && s == PARK_NOT_YET; i++) {
		if ((s = park_state(job)) == PARK_NOT_YET)
			usleep(i < 100 ? 10 : PARK_POLL_US);
	}
	if (s == PARK_PARKED) {
		job->rc = job->fn(job->arg);
	} else {
		job->rc = -EOPNOTSUPP;
		job->why = s == PARK_UNKNOWABLE ?
			"this kernel does not say when a thread sleeps (no /proc/self/task/TID/syscall)"
			: "the registering thread did not sleep within 10 s";
	}
	atomic_store_explicit(&job->done, 1, memory_order_release);
	syscall(SYS_futex, &job->done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return NULL;
}

int lib_run_parked(int (*fn)(void *arg), void *arg, const char **why)
{
	struct park_job job = { .fn = fn, .arg = arg, .caller = (pid_t)syscall(SYS_gettid) };
	sigset_t all, old;
	pthread_t t;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, NULL, park_helper, &job);
	if (!rc) {
		/* Nothing but the futex call between here and sleeping: the helper starts the
		 * job only once we sleep in it, and wakes us after. A job-control stop restarts
		 * the call in the kernel, with no write to this stack. */
		while (!atomic_load_explicit(&job.done, memory_order_acquire))
			syscall(SYS_futex, &job.done, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		pthread_join(t, NULL);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		*why = "no thread to move the stack from";
		return -rc;
	}
	if (job.why)
		*why = job.why;
	return job.rc;
}
