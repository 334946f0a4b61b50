/* SPDX-License-Identifier: MIT */
/*
 * The process's MMU-notifier relay: a thread of ours that forwards every mapping change
 * of the process to every device it has open, on a SOCK_SEQPACKET socket per context
 * (ipc.h IPC_HELLO_HAS_UFFD, IPC_HELLO_HAS_RELAY). The changes come from one of two
 * sources, whichever this process has (docs/emu.md, "MMU notifier"):
 *
 *  - its userfaultfd (uffd.c): one VMA can be registered with one userfaultfd only, so a
 *    process that opens several devices gives them all the same one (each daemon
 *    registers the ranges it touches on it); we read its events and forward them;
 *  - the seccomp route, where the kernel or a container's seccomp profile refuses a
 *    userfaultfd: the process's seccomp filter holds each call that changes a mapping for
 *    the daemon that supervises it (supervise.c; the route starts in watch.c), which
 *    invalidates its own translations before letting the call run and sends the range
 *    back on its relay socket (the "source" below); we forward it to every other device.
 *
 * The thread must never block the memory it watches: it allocates nothing and frees
 * nothing while relaying (a free could munmap registered memory and wait for itself).
 * A munmap elsewhere in the process waits until this thread has read its event (or, by
 * the seccomp route, until the supervising daemon has sent the range); a send to a
 * daemon that died fails at once (EPIPE), and that device is dropped. In a fork child
 * the thread does not exist and the userfaultfd watches the parent: the child starts
 * afresh on its first open (lib_relay_forget, from fork.c).
 */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib_int.h"

#define MAX_PEERS 256	/* devices one process may have open with a notifier */

static pthread_mutex_t relay_lock = PTHREAD_MUTEX_INITIALIZER;
static bool relay_running;		/* the thread exists (not in a fork child) */
static int relay_uffd = -1;		/* -1: the kernel refused one: the seccomp route */
static int wake_fd = -1;		/* an eventfd: the source changed */
static _Atomic int source = -1;		/* the supervising daemon's peer, or -1 */
static int peers[MAX_PEERS];		/* our ends of the sockets, -1 when free */
static bool gone[MAX_PEERS];		/* its daemon died: skipped until it leaves */
static unsigned npeers;			/* slots used (some may be -1) */
/* Events the thread has taken (or is about to) and not yet forwarded: counted up before
 * the read that lets the unmapping thread go on, so that thread's next control request
 * can wait for them (lib_relay_settle). */
static atomic_uint in_flight;
static sem_t relay_ready;

/* Forward one batch to every device but from's; a device that cannot take it (dead
 * daemon) is dropped. Called with relay_lock held. */
static void forward(const struct uffd_msg *msg, size_t len, int from)
{
	for (unsigned i = 0; i < npeers; i++) {
		if (peers[i] < 0 || gone[i] || peers[i] == from)
			continue;
		/* blocking: the daemon reads in its loop; EPIPE/ECONNRESET: it died (the fd
		 * stays ours until its context leaves, so its number cannot be reused) */
		if (send(peers[i], msg, len, MSG_NOSIGNAL) != (ssize_t)len)
			gone[i] = true;
	}
}

/* Read what fd has (the userfaultfd, or the source socket) and forward it. */
static void relay_from(int fd, bool is_source)
{
	struct uffd_msg msg[IPC_UFFD_RELAY_MSGS];
	ssize_t got;

	atomic_fetch_add(&in_flight, 1);
	pthread_mutex_lock(&relay_lock);
	/* the source may have left while we polled (its number reused): read it only if it
	 * is still the source */
	if (!is_source || fd == source) {
		got = is_source ? recv(fd, msg, sizeof(msg), MSG_DONTWAIT)
				: read(fd, msg, sizeof(msg));	/* non-blocking fd */
		got -= got > 0 ? got % (ssize_t)sizeof(msg[0]) : got;
		if (got > 0)
			forward(msg, (size_t)got, is_source ? fd : -1);
	}
	pthread_mutex_unlock(&relay_lock);
	atomic_fetch_sub(&in_flight, 1);
}

static void *relay_thread(void *arg)
{
	(void)arg;
	sem_post(&relay_ready);		/* set up: see thread.c */
	for (;;) {
		struct pollfd p[3] = { { .fd = relay_uffd, .events = POLLIN },
				       { .fd = wake_fd, .events = POLLIN },
				       { .fd = -1, .events = POLLIN } };
		uint64_t v;

		pthread_mutex_lock(&relay_lock);
		p[2].fd = source;	/* poll skips -1 */
		pthread_mutex_unlock(&relay_lock);
		if (poll(p, 3, -1) < 0)
			continue;	/* EINTR */
		if (p[1].revents & POLLIN)
			(void)read(wake_fd, &v, sizeof(v));
		if (p[0].revents & POLLIN)
			relay_from(relay_uffd, false);
		if (p[2].revents & POLLIN)
			relay_from(p[2].fd, true);
	}
	return NULL;
}

/* The userfaultfd if the kernel gives one, the wake-up eventfd and the thread, once per
 * process. Called with relay_lock. */
static void start(void)
{
	relay_uffd = lib_uffd_open();	/* -1: the seccomp route */
	for (unsigned i = 0; i < MAX_PEERS; i++)
		peers[i] = -1;
	if ((wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) >= 0 &&
	    !sem_init(&relay_ready, 0, 0) && !lib_thread_spawn(relay_thread, NULL, &relay_ready)) {
		relay_running = true;
		return;
	}
	if (relay_uffd >= 0)
		close(relay_uffd);
	if (wake_fd >= 0)
		close(wake_fd);
	relay_uffd = wake_fd = -1;
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

/* Has the source a range the thread has not read yet? */
static bool source_pending(void)
{
	struct pollfd p = { .fd = source, .events = POLLIN };

	return p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* A munmap returns once the relay has read its event (or, by the seccomp route, once the
 * supervising daemon has sent its range to us); a control request the process makes after
 * it must reach the daemons after the relayed event, as with a kernel's MMU notifier (the
 * daemon reads the relay before each request). Bounded: a relay held up by a stalled
 * daemon delays requests by a second at most. */
void lib_relay_settle(void)
{
	uint64_t until = 0;

	while (atomic_load(&in_flight) || source_pending()) {
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
	if (!relay_running)
		start();
	if (relay_running && !socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) &&
	    (relay_uffd < 0 || (*uffd = fcntl(relay_uffd, F_DUPFD_CLOEXEC, 0)) >= 0) &&
	    !(rc = add_peer(sp[1]))) {
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

/* The thread polls the source it read before: make it look again. */
static void wake_thread(void)
{
	uint64_t one = 1;

	if (wake_fd >= 0)
		(void)write(wake_fd, &one, sizeof(one));
}

void lib_relay_set_source(int peer)
{
	pthread_mutex_lock(&relay_lock);
	source = peer;
	pthread_mutex_unlock(&relay_lock);
	wake_thread();
}

void lib_relay_leave(int peer)
{
	if (peer < 0)
		return;
	pthread_mutex_lock(&relay_lock);
	if (source == peer) {
		source = -1;	/* the thread checks under this lock before reading it */
		wake_thread();
	}
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
	if (wake_fd >= 0)
		close(wake_fd);
	relay_uffd = wake_fd = -1;
	source = -1;
	relay_running = false;
}
