/* SPDX-License-Identifier: MIT */
/*
 * fault — the host fault handler's thread and its two queues, and the calls of fault.h
 * (what it does; its insides: fault_int.h). The loop submits jobs or resolves them on the
 * spot; the thread takes every queued job per wake-up, resolves each (fault_resolve.c)
 * and queues its answer for the loop at once.
 */
#include "fault.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fault_int.h"

#define BATCH_MAX	64	/* jobs taken per wake-up */
#define GONE_MAX	16	/* forgotten clients remembered until the thread's next batch */
/* A text walk of more lines (about 0.3 us each) sends faults to the thread: ~40 us on
 * the loop costs less than a hand-off (50-150 us of wake-up on a busy 2-vCPU host). */
#define TEXT_INLINE_LINES 128

struct emu_fault {
	struct emu_inject *inj;
	struct resolver *rs;		/* the thread's */
	struct resolver *now_rs;	/* the caller's, for emu_fault_resolve_now */
	struct emu_fault_stats now_stats;	/* ... and its account (caller's thread) */
	bool now_off;			/* _set_inline(false) */
	unsigned now_text_lines;	/* lines the last inline text walk parsed */
	unsigned text_inline_lines;	/* above this, the thread (TEXT_INLINE_LINES) */
	int efd;
	pthread_t thread;
	bool joined;
	/* Lock-free looks, for the loop: answers wait (set and cleared under the lock), and
	 * the loop polls without sleeping (then no eventfd write is needed to wake it). */
	atomic_bool answers_waiting;
	atomic_bool loop_polling;
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t wake;		/* jobs queued, clients gone, or stop */
	bool stop;
	bool efd_raised;		/* the eventfd holds a count take() must read */
	struct emu_fault_job *in, **in_tail;
	struct emu_fault_job *out, **out_tail;
	uint32_t gone[GONE_MAX];	/* clients whose files the thread should close */
	unsigned ngone;
	bool gone_overflow;		/* more than GONE_MAX: close every cached file */
	struct emu_fault_stats stats;
};

static void add_stats(struct emu_fault_stats *to, const struct emu_fault_stats *d)
{
	to->jobs += d->jobs;
	to->batches += d->batches;
	to->batch_reused += d->batch_reused;
	to->inline_jobs += d->inline_jobs;
	to->failed_unmapped += d->failed_unmapped;
	to->failed_access += d->failed_access;
	to->injected_fail += d->injected_fail;
	to->maps_errors += d->maps_errors;
	to->uffd_registered += d->uffd_registered;
	to->uffd_refused += d->uffd_refused;
	to->uffd_races += d->uffd_races;
	to->resolve_ns_total += d->resolve_ns_total;
	to->wait_ns_total += d->wait_ns_total;
}

/* Queue an answer. When the out queue goes from empty to non-empty the loop must learn
 * it: a polling loop sees answers_waiting on its next round; a sleeping one is woken by
 * the eventfd. The loop stores loop_polling = false before its last look at
 * answers_waiting and sleeping; we store answers_waiting before looking at loop_polling
 * (both sequentially consistent), so at least one of the two sees the other. */
static void answer_locked(struct emu_fault *f, struct emu_fault_job *job)
{
	bool was_empty = !f->out;
	uint64_t one = 1;

	job->next = NULL;
	*f->out_tail = job;
	f->out_tail = &job->next;
	if (!was_empty)
		return;
	atomic_store(&f->answers_waiting, true);
	if (atomic_load(&f->loop_polling) || f->efd_raised)
		return;
	if (write(f->efd, &one, sizeof(one)) != sizeof(one))
		assert(0 && "eventfd write cannot fail below 2^64 - 1");
	f->efd_raised = true;
}

static void cancel_locked(struct emu_fault *f, struct emu_fault_job *job)
{
	job->err = -ECANCELED;
	job->nmaps = 0;
	job->resolved_ns = job->due_ns = now_ns();
	f->stats.jobs++;
	answer_locked(f, job);
}

static struct emu_fault_job *pop_in_locked(struct emu_fault *f)
{
	struct emu_fault_job *job = f->in;

	f->in = job->next;
	if (!f->in)
		f->in_tail = &f->in;
	return job;
}

/* Take the whole input queue (up to BATCH_MAX) and the forgotten clients, under the lock. */
static unsigned take_batch_locked(struct emu_fault *f, struct emu_fault_job **jobs)
{
	unsigned n = 0;

	fault_files_forget(f->rs, f->gone, f->ngone, f->gone_overflow);
	f->ngone = 0;
	f->gone_overflow = false;
	while (f->in && n < BATCH_MAX)
		jobs[n++] = pop_in_locked(f);
	return n;
}

/* One wake-up: every queued job is resolved, and each is answered as soon as it is, so
 * the first does not wait for the last. The batch shares the VMAs it settles. */
static void *fault_main(void *arg)
{
	struct emu_fault *f = arg;
	struct emu_fault_job *jobs[BATCH_MAX];

	pthread_mutex_lock(&f->lock);
	for (;;) {
		unsigned n;

		while (!f->in && !f->stop && !f->ngone && !f->gone_overflow)
			pthread_cond_wait(&f->wake, &f->lock);
		if (f->stop)
			break;
		n = take_batch_locked(f, jobs);
		if (!n)
			continue;
		f->stats.batches++;
		fault_batch_begin(f->rs);
		for (unsigned i = 0; i < n; i++) {
			struct emu_fault_stats d = { 0 };

			pthread_mutex_unlock(&f->lock);
			fault_resolve_job(f->rs, f->inj, jobs[i], &d);
			pthread_mutex_lock(&f->lock);
			add_stats(&f->stats, &d);
			answer_locked(f, jobs[i]);
		}
	}
	while (f->in)
		cancel_locked(f, pop_in_locked(f));
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static void fault_free(struct emu_fault *f)
{
	if (f->efd >= 0)
		close(f->efd);
	pthread_cond_destroy(&f->wake);
	pthread_mutex_destroy(&f->lock);
	fault_resolver_free(f->rs);
	fault_resolver_free(f->now_rs);
	free(f);
}

/* The thread starts with every signal blocked: the loop thread handles them. */
static int start_thread(struct emu_fault *f)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&f->thread, NULL, fault_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!rc)
		pthread_setname_np(f->thread, "odpemu-fault");
	return -rc;
}

int emu_fault_start(struct emu_inject *inj, struct emu_fault **out)
{
	struct emu_fault *f = calloc(1, sizeof(*f));
	int rc;

	if (!f)
		return -ENOMEM;
	f->inj = inj;
	f->in_tail = &f->in;
	f->out_tail = &f->out;
	atomic_init(&f->answers_waiting, false);
	atomic_init(&f->loop_polling, false);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->wake, NULL);
	f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	f->rs = fault_resolver_new(false);
	f->now_rs = fault_resolver_new(false);
	f->text_inline_lines = TEXT_INLINE_LINES;
	rc = f->efd < 0 ? -errno : !f->rs || !f->now_rs ? -ENOMEM : start_thread(f);
	if (rc) {
		f->joined = true;
		fault_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

void emu_fault_stop(struct emu_fault *f)
{
	if (f->joined)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	f->joined = true;
}

void emu_fault_destroy(struct emu_fault *f)
{
	if (!f)
		return;
	emu_fault_stop(f);
	fault_free(f);
}

void emu_fault_set_text_maps(struct emu_fault *f, bool text)
{
	/* Read by the thread only after a submit, which orders this store through the lock. */
	f->rs->maps.text = text;
	f->now_rs->maps.text = text;
}

void emu_fault_set_inline(struct emu_fault *f, bool on)
{
	f->now_off = !on;
}

void emu_fault_set_text_inline_lines(struct emu_fault *f, unsigned lines)
{
	f->text_inline_lines = lines;
}

unsigned emu_fault_text_inline_lines(const struct emu_fault *f)
{
	return f->text_inline_lines;
}

void emu_fault_forget_vmas(struct emu_fault *f)
{
	if (f)
		fault_batch_begin(f->now_rs);
}

bool emu_fault_resolve_now(struct emu_fault *f, struct emu_fault_job *job)
{
	/* With PROCMAP_QUERY a job costs a few microseconds. The text of /proc/PID/maps costs
	 * about 0.3 us a line below the window: inline while the last text walk parsed few
	 * lines (a small process: tens of microseconds, less than the thread's queueing on a
	 * busy host), the thread's work once one parsed many. */
	if (f->now_off || (f->now_rs->maps.text && f->now_text_lines > f->text_inline_lines))
		return false;
	job->enqueued_ns = now_ns();
	fault_resolve_job(f->now_rs, f->inj, job, &f->now_stats);
	f->now_stats.inline_jobs++;
	if (f->now_rs->maps.text)
		f->now_text_lines = f->now_rs->maps.lines;
	return true;
}

void emu_fault_submit(struct emu_fault *f, struct emu_fault_job *job)
{
	job->enqueued_ns = now_ns();
	job->next = NULL;
	pthread_mutex_lock(&f->lock);
	if (f->stop) {
		cancel_locked(f, job);
	} else {
		bool was_empty = !f->in;

		*f->in_tail = job;
		f->in_tail = &job->next;
		/* Only an empty queue can have the thread asleep on it. */
		if (was_empty)
			pthread_cond_signal(&f->wake);
	}
	pthread_mutex_unlock(&f->lock);
}

void emu_fault_forget(struct emu_fault *f, uint32_t client)
{
	fault_files_forget(f->now_rs, &client, 1, false);
	pthread_mutex_lock(&f->lock);
	if (f->ngone < GONE_MAX)
		f->gone[f->ngone++] = client;
	else
		f->gone_overflow = true;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
}

int emu_fault_eventfd(const struct emu_fault *f)
{
	return f->efd;
}

void emu_fault_set_polling(struct emu_fault *f, bool polling)
{
	atomic_store(&f->loop_polling, polling);
}

bool emu_fault_answers_waiting(struct emu_fault *f)
{
	return atomic_load(&f->answers_waiting);
}

unsigned emu_fault_take(struct emu_fault *f, struct emu_fault_job **out, unsigned max)
{
	unsigned n = 0;
	uint64_t v;

	pthread_mutex_lock(&f->lock);
	while (n < max && f->out) {
		out[n++] = f->out;
		f->out = f->out->next;
	}
	if (!f->out) {
		f->out_tail = &f->out;
		atomic_store(&f->answers_waiting, false);
		if (f->efd_raised && read(f->efd, &v, sizeof(v)) < 0)
			assert(errno == EAGAIN);
		f->efd_raised = false;
	}
	pthread_mutex_unlock(&f->lock);
	return n;
}

void emu_fault_stats_get(struct emu_fault *f, struct emu_fault_stats *out)
{
	pthread_mutex_lock(&f->lock);
	*out = f->stats;
	pthread_mutex_unlock(&f->lock);
	add_stats(out, &f->now_stats);
}
