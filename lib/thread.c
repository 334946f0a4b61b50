/* SPDX-License-Identifier: MIT */
/*
 * The library's own threads (the userfaultfd relay, the held-call fallback): detached,
 * every signal blocked (signals are the application's), and running when their starter
 * returns. The last matters for a process that forks right after opening a device: a
 * thread still starting is inside the C library's and a sanitizer runtime's set-up,
 * which allocate; a fork at that moment gives the child an allocator lock that no thread
 * of the child will ever release (GCC 12's AddressSanitizer has no fork handler for its
 * allocator), and the child's first allocation of that size hangs. Once a thread of ours
 * runs its loop it allocates nothing, so a fork after open is safe.
 */
#include <errno.h>
#include <signal.h>
#include <time.h>

#include "lib_int.h"

/* Bounded: a thread that never starts (the system out of resources) is not waited for. */
#define START_WAIT_S 10

int lib_thread_spawn(void *(*fn)(void *), void *arg, sem_t *ready)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (!(rc = pthread_attr_init(&attr))) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&t, &attr, fn, arg);
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!rc) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += START_WAIT_S;
		while (sem_timedwait(ready, &until) && errno == EINTR)
			;
	}
	return -rc;
}
