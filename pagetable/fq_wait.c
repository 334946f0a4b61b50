/* SPDX-License-Identifier: MIT */
/*
 * Blocking conveniences for threaded users (the daemon's fault-handler thread). Built on the
 * non-blocking queue; the only part of the library that reads a clock or sleeps. They spin
 * first: on this kind of VM a cross-CPU wake-up costs ~30 us, a spinning peer ~0.1 us.
 */
#include <time.h>

#include "fq_int.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ volatile("" ::: "memory");
#endif
}

static struct timespec deadline_after(int timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);	/* pthread_cond_timedwait's default clock */
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

unsigned iopt_fq_pop_wait(struct iopt_fq *fq, struct iopt_req **out, unsigned max,
	uint64_t spin_ns, int timeout_ms)
{
	uint64_t t0 = mono_ns();
	struct timespec dl = deadline_after(timeout_ms < 0 ? 0 : timeout_ms);
	unsigned n;
	int rc = 0;

	for (unsigned i = 0; ; i++) {
		if ((n = iopt_fq_pop(fq, out, max)))
			return n;
		if ((i & 63) == 63 && mono_ns() - t0 >= spin_ns)
			break;
		cpu_relax();
	}
	pthread_mutex_lock(&fq->lock);
	while (!fq->head && !fq->kicked && rc == 0) {
		fq->sleepers++;
		if (timeout_ms < 0)
			pthread_cond_wait(&fq->cond, &fq->lock);
		else
			rc = pthread_cond_timedwait(&fq->cond, &fq->lock, &dl);
		fq->sleepers--;
	}
	fq->kicked = false;
	pthread_mutex_unlock(&fq->lock);
	return iopt_fq_pop(fq, out, max);
}

void iopt_fq_kick(struct iopt_fq *fq)
{
	pthread_mutex_lock(&fq->lock);
	fq->kicked = true;
	pthread_cond_broadcast(&fq->cond);
	pthread_mutex_unlock(&fq->lock);
}

/* Dekker pairing with iopt_waiter_wait: the waker stores the status then reads wsleepers,
 * the sleeper raises wsleepers then reads the status (both seq_cst): one sees the other. */
void iopt_fq_wake_waiters(struct iopt_fq *fq)
{
	if (!atomic_load_explicit(&fq->wsleepers, memory_order_seq_cst))
		return;
	pthread_mutex_lock(&fq->lock);
	pthread_cond_broadcast(&fq->wcond);
	pthread_mutex_unlock(&fq->lock);
}

int iopt_waiter_wait(struct iopt_fq *fq, struct iopt_waiter *w, uint64_t spin_ns)
{
	uint64_t t0 = mono_ns();
	int st;

	for (unsigned i = 0; ; i++) {
		st = atomic_load_explicit(&w->status, memory_order_acquire);
		if (st != IOPT_WAIT_PENDING)
			return st;
		if ((i & 63) == 63 && mono_ns() - t0 >= spin_ns)
			break;
		cpu_relax();
	}
	pthread_mutex_lock(&fq->lock);
	atomic_fetch_add_explicit(&fq->wsleepers, 1, memory_order_seq_cst);
	while ((st = atomic_load_explicit(&w->status, memory_order_seq_cst)) == IOPT_WAIT_PENDING)
		pthread_cond_wait(&fq->wcond, &fq->lock);
	atomic_fetch_sub_explicit(&fq->wsleepers, 1, memory_order_relaxed);
	pthread_mutex_unlock(&fq->lock);
	return st;
}
