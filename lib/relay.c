/* SPDX-License-Identifier: MIT */
/*
 * The process's userfaultfd and its relay. One VMA can be registered with one userfaultfd
 * only, so a process that opens several devices gives them all the same one (each
 * daemon registers the ranges it touches on it); a thread of ours reads its events and
 * forwards each to every device the process has open, on a SOCK_SEQPACKET socket per
 * context (ipc.h, IPC_HELLO_HAS_UFFD). Invalidation is then exact for every device.
 *
 * The thread must never block the memory it watches: it allocates nothing and frees
 * nothing while relaying (a free could munmap registered memory and wait for itself).
 * A munmap elsewhere in the process waits until this thread has read its event; a send
 * to a daemon that died fails at once (EPIPE), and that device is dropped. In a fork
 * child the thread does not exist and the userfaultfd watches the parent: the child
 * starts afresh on its first open (lib_relay_forget, from fork.c).
 */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib_int.h"

#define MAX_PEERS 256	/* devices one process may have open with a notifier */

static pthread_mutex_t relay_lock = PTHREAD_MUTEX_INITIALIZER;
static int relay_uffd = -1;		/* -1: not started, or the kernel refused one */
static bool relay_tried;
static int peers[MAX_PEERS];		/* our ends of the sockets, -1 when free */
static bool gone[MAX_PEERS];		/* its daemon died: skipped until it leaves */
static unsigned npeers;			/* slots used (some may be -1) */
/* Events the thread has taken (or is about to) and not yet forwarded: counted up before
 * the read that lets the unmapping thread go on, so that thread's next control request
 * can wait for them (lib_relay_settle). */
static atomic_uint in_flight;
static sem_t relay_ready;

/* Forward one batch to every device; a device that cannot take it (dead daemon) is
 * dropped. Called with relay_lock held. */
static void forward(const struct uffd_msg *msg, size_t len)
{
	for (unsigned i = 0; i < npeers; i++) {
		if (peers[i] < 0 || gone[i])
			continue;
		/* blocking: the daemon reads in its loop; EPIPE/ECONNRESET: it died (the fd
		 * stays ours until its context leaves, so its number cannot be reused) */
		if (send(peers[i], msg, len, MSG_NOSIGNAL) != (ssize_t)len)
			gone[i] = true;
	}
}

static void *relay_thread(void *arg)
{
	struct uffd_msg msg[IPC_UFFD_RELAY_MSGS];
	int uffd = (int)(intptr_t)arg;

	sem_post(&relay_ready);		/* set up: see thread.c */
	for (;;) {
		struct pollfd p = { .fd = uffd, .events = POLLIN };
		ssize_t got;

		if (poll(&p, 1, -1) < 0)
			continue;	/* EINTR */
		atomic_fetch_add(&in_flight, 1);
		got = read(uffd, msg, sizeof(msg));	/* non-blocking fd */
		got -= got > 0 ? got % (ssize_t)sizeof(msg[0]) : got;
		if (got > 0) {
			pthread_mutex_lock(&relay_lock);
			forward(msg, (size_t)got);
			pthread_mutex_unlock(&relay_lock);
		}
		atomic_fetch_sub(&in_flight, 1);
	}
	return NULL;
}

/* Create the userfaultfd and the thread, once per process. Called with relay_lock. */
static void start(void)
{
	int fd;

	relay_tried = true;
	if ((fd = lib_uffd_open()) < 0)
		return;
	for (unsigned i = 0; i < MAX_PEERS; i++)
		peers[i] = -1;
	if (sem_init(&relay_ready, 0, 0) ||
	    lib_thread_spawn(relay_thread, (void *)(intptr_t)fd, &relay_ready)) {
		close(fd);
		fd = -1;
	}
	relay_uffd = fd;
}

static int add_peer(int fd)
{
	unsigned i = 0;

	while (i < npeers && peers[i] >= 0)
		i++;
	if (i == MAX_PEERS)
		return -EMFILE;
	if (i == npeers)
		npeers++;
	peers[i] = fd;
	gone[i] = false;
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A munmap returns once the relay has read its event; a control request the process makes
 * after it must reach the daemons after the relayed event, as with a kernel's MMU
 * notifier (the daemon reads the relay before each request). Bounded: a relay held up by
 * a stalled daemon delays requests by a second at most. */
void lib_relay_settle(void)
{
	uint64_t until = 0;

	while (atomic_load(&in_flight)) {
		uint64_t now = now_ns();

		if (!until)
			until = now + 1000000000ull;
		else if (now > until)
			return;
		sched_yield();
	}
}

int lib_relay_join(int *uffd, int *relay, int *peer)
{
	int sp[2] = { -1, -1 }, rc = -ENOTSUP;

	*uffd = *relay = *peer = -1;
	pthread_mutex_lock(&relay_lock);
	if (!relay_tried)
		start();
	if (relay_uffd >= 0 && !socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) &&
	    (*uffd = fcntl(relay_uffd, F_DUPFD_CLOEXEC, 0)) >= 0 && !(rc = add_peer(sp[1]))) {
		*relay = sp[0];
		*peer = sp[1];
	}
	pthread_mutex_unlock(&relay_lock);
	if (*peer < 0) {
		if (*uffd >= 0)
			close(*uffd);
		if (sp[0] >= 0) {
			close(sp[0]);
			close(sp[1]);
		}
		*uffd = -1;
		return rc ? rc : -errno;
	}
	return 0;
}

void lib_relay_leave(int peer)
{
	if (peer < 0)
		return;
	pthread_mutex_lock(&relay_lock);
	for (unsigned i = 0; i < npeers; i++)
		if (peers[i] == peer) {
			close(peer);
			peers[i] = -1;
		}
	pthread_mutex_unlock(&relay_lock);
}

/* fork child (only this thread exists; the lock may have been held by a parent thread). */
void lib_relay_forget(void)
{
	pthread_mutex_init(&relay_lock, NULL);
	for (unsigned i = 0; i < npeers; i++)
		if (peers[i] >= 0)
			close(peers[i]);
	npeers = 0;
	if (relay_uffd >= 0)
		close(relay_uffd);
	relay_uffd = -1;
	relay_tried = false;
}
