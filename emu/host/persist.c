/* SPDX-License-Identifier: MIT */
/* persist — durable persistent FLUSHes (see persist.h). */
#include "persist.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/limits.h>	/* PATH_MAX: <limits.h> is emu/limits.h here */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "daemon.h"
#include "iopt.h"
#include "log.h"
#include "maps.h"

struct job {
	struct job *next;		/* todo or done */
	struct job *live_next;		/* p->live: from request to answer */
	pid_t pid;
	uint64_t addr, len, t0;
	struct iopt_waiter *w;
	int status;
	bool synced;			/* a file was behind it */
	bool cancelled;
};

struct emu_persist {
	struct emu_daemon *d;
	pthread_t thread;
	pthread_mutex_t lock;		/* the lists and stop */
	pthread_cond_t cond;
	struct job *todo, **todo_tail, *done, *live;
	bool stop;
	int efd;
	struct emu_io io;
	struct emu_persist_stats st;	/* loop thread */
	/* The thread's maps reader: its state (12 KiB, and whether the kernel has
	 * PROCMAP_QUERY) kept from job to job. */
	struct ipc_maps maps;
};

/* ---- the thread: find the files behind a range, fdatasync them ---- */

/* The file behind a shared mapping: through map_files (any path, even a deleted file;
 * needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else by its path (the VMA's name: a
 * name too long for a path could not be opened anyway). */
static int open_backing(pid_t pid, const struct ipc_vma *v)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		 v->start, v->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && v->name_len && v->name[0] == '/' && v->name_len < sizeof(path)) {
		memcpy(path, v->name, v->name_len);
		path[v->name_len] = '\0';
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

/* fdatasync every file mapped shared in [addr, addr+len) of pid: 0 or -errno. Unmapped
 * holes and anonymous or private memory have nothing durable behind them. The VMAs come
 * from ipc/maps.c (PROCMAP_QUERY: the range's VMAs alone; the text before Linux 6.11);
 * a walk that fails fails the FLUSH, which cannot be durable with a file left unsynced. */
static int sync_range(struct ipc_maps *m, pid_t pid, uint64_t addr, uint64_t len,
		      bool *synced)
{
	uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
	struct ipc_vma v;
	char path[64];
	int maps, fd, rc;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if ((maps = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	ipc_maps_begin(m, maps, addr, end);
	while ((rc = ipc_maps_next(m, &v)) > 0) {
		if (!(v.prot & IPC_VMA_SHARED) || !v.inode)
			continue;	/* private, or no file behind it */
		if ((fd = open_backing(pid, &v)) < 0) {
			rc = fd;
			break;
		}
		rc = fdatasync(fd) ? -errno : 0;
		*synced = true;
		close(fd);
		if (rc)
			break;
	}
	close(maps);
	return rc;
}

static void *persist_main(void *arg)
{
	struct emu_persist *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct job *j;
		uint64_t one = 1;

		while (!p->todo && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stop)
			break;
		j = p->todo;
		p->todo = j->next;
		if (!p->todo)
			p->todo_tail = &p->todo;
		pthread_mutex_unlock(&p->lock);
		j->status = sync_range(&p->maps, j->pid, j->addr, j->len, &j->synced);
		pthread_mutex_lock(&p->lock);
		j->next = p->done;
		p->done = j;
		(void)!write(p->efd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ---- the loop's side ---- */

static void unlink_live(struct emu_persist *p, struct job *j)
{
	struct job **q = &p->live;

	while (*q != j)
		q = &(*q)->live_next;
	*q = j->live_next;
}

static void answer(struct emu_persist *p, struct job *j)
{
	uint64_t ns = emu_now_ns() - j->t0;

	p->st.ns += ns;
	if (ns > p->st.max_ns)
		p->st.max_ns = ns;
	if (j->status)
		p->st.errors++;
	else if (j->synced)
		p->st.syncs++;
	else
		p->st.volatile_ranges++;
	if (j->status)
		emu_log(EMU_LOG_WARN, "a persistent FLUSH of [%#" PRIx64 ", +%#" PRIx64 ") of pid "
			"%d failed: %s", j->addr, j->len, (int)j->pid, strerror(-j->status));
	if (j->cancelled)
		return;
	atomic_store(&j->w->status, j->status);
	j->w->fn(j->w->cookie, j->status);
}

static void take_done(struct emu_persist *p)
{
	struct job *j;
	uint64_t v;

	(void)!read(p->efd, &v, sizeof(v));
	pthread_mutex_lock(&p->lock);
	j = p->done;
	p->done = NULL;
	pthread_mutex_unlock(&p->lock);
	while (j) {
		struct job *next = j->next;

		unlink_live(p, j);
		answer(p, j);
		free(j);
		j = next;
	}
}

static void on_done(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_persist *p = (struct emu_persist *)((char *)io - offsetof(struct emu_persist, io));

	take_done(p);
	if (!(cqe->flags & IORING_CQE_F_MORE))
		emu_loop_poll_in(&p->d->loop, p->efd, &p->io);
}

int emu_persist_start(struct emu_daemon *d, struct emu_persist **out)
{
	struct emu_persist *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->d = d;
	p->todo_tail = &p->todo;
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0) {
		rc = -errno;
		free(p);
		return rc;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if ((rc = pthread_create(&p->thread, NULL, persist_main, p))) {
		close(p->efd);
		free(p);
		return -rc;
	}
	p->io.fn = on_done;
	emu_loop_poll_in(&d->loop, p->efd, &p->io);
	*out = p;
	return 0;
}

int emu_persist_request(struct emu_persist *p, pid_t pid, uint64_t addr, uint64_t len,
			struct iopt_waiter *w)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	*j = (struct job){ .pid = pid, .addr = addr, .len = len, .w = w, .t0 = emu_now_ns() };
	j->live_next = p->live;
	p->live = j;
	pthread_mutex_lock(&p->lock);
	*p->todo_tail = j;
	p->todo_tail = &j->next;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return 1;
}

void emu_persist_cancel(struct emu_persist *p, struct iopt_waiter *w)
{
	for (struct job *j = p->live; j; j = j->live_next)
		if (j->w == w)
			j->cancelled = true;	/* the loop owns the flag: no lock */
}

void emu_persist_stats(const struct emu_persist *p, struct emu_persist_stats *st)
{
	*st = p->st;
}

void emu_persist_stop(struct emu_persist *p)
{
	if (!p)
		return;
	if (emu_loop_cancel(&p->d->loop, &p->io)) {
		emu_log(EMU_LOG_WARN, "persist: its poll could not be cancelled; kept");
		return;		/* a completion may still name p->io: keep p */
	}
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	while (p->live) {
		struct job *j = p->live;

		p->live = j->live_next;
		free(j);
	}
	close(p->efd);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}
