/* SPDX-License-Identifier: MIT */
/* relay_anchor — see relay_anchor.h. */
#include "relay_anchor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_addr.h"

#define GRACE_NS 1000000000ull	/* after the budget, for children told to stop */
#define CLOCK_EVERY 256u	/* idle looks between deadline checks: keeps the idle loop lean */
#define MAX_N (64u << 20)	/* half_rtt_ns entries: 512 MiB of results is surely a typo */
#define PAYLOAD_AT (12 + 16)	/* where the 8 bytes sit in RELAY_DGRAM, as in the real packet */

enum role { APP_A, RELAY_A, RELAY_B, APP_B, ROLES };

/* One direction of the application <-> relay hand-off: data, then seq (release). The
 * reader acquires seq, then reads data; the writer writes the next one only after the
 * reader has answered, so data is never read while written. */
struct slot {
	_Atomic uint64_t seq;	/* 0: nothing yet; rounds count from 1 */
	uint8_t data[8];
};

/* The page an application shares with its host's relay, as odpemu's rings are shared
 * with odpemud. out and in on their own cache lines: each has one writer. */
struct host_page {
	alignas(64) struct slot out;	/* application -> relay (the work request) */
	alignas(64) struct slot in;	/* relay -> application (the payload landing) */
};

/* Control and results, shared by the caller and all four children. */
struct shared {
	atomic_int stop;	/* app a finished, or a child failed: everyone ends */
	atomic_int ready;	/* relays bound: app a must not send into a closed port */
	atomic_bool done;	/* app a recorded all n */
	int rc[ROLES];		/* each child's 0 / -errno */
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC, shared by every namespace */
	unsigned warm, n;
	alignas(64) uint64_t half[];
};

/* Everything a child needs, resolved before the fork so a child only runs. */
struct plan {
	struct shared *sh;
	struct host_page *page[2];	/* host a's, host b's */
	struct bench_addr self[2];		/* relay a's and relay b's bound addresses */
	int ns_fd[2];			/* -1: stay in the caller's namespace */
};

/* True when this process should end: told to, or past the budget. Reads the clock only
 * every CLOCK_EVERY calls, so a spinning loop costs a load and a branch. */
static bool should_stop(const struct shared *sh, unsigned *looks)
{
	if (atomic_load_explicit(&sh->stop, memory_order_relaxed))
		return true;
	return ++*looks % CLOCK_EVERY == 0 && bench_now_ns() > sh->deadline_ns;
}

/* Ends everyone early: nobody spins out the budget waiting for a failed peer. */
static int fail(struct shared *sh, enum role r, int rc)
{
	sh->rc[r] = rc;
	atomic_store_explicit(&sh->stop, 1, memory_order_release);
	return rc;
}

/* ---- relays ---- */

/* A UDP socket bound to the relay's address, DF set as odpemud's are. Default buffers:
 * one datagram is ever in flight. */
static int relay_socket(const struct bench_addr *self)
{
	int fd = socket(self->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), pmtu;

	if (fd < 0)
		return -errno;
	if (self->ss.ss_family == AF_INET) {
		pmtu = IP_PMTUDISC_DO;
		(void)setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	} else {
		pmtu = IPV6_PMTUDISC_DO;
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	}
	if (bind(fd, (const struct sockaddr *)&self->ss, self->len)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* The relay of host h: its application's out slot -> one datagram to the peer relay;
 * a datagram from the peer -> its application's in slot. Nothing else. */
static int relay_run(const struct plan *p, int h)
{
	struct shared *sh = p->sh;
	struct host_page *pg = p->page[h];
	const struct bench_addr *peer = &p->self[!h];
	enum role me = h ? RELAY_B : RELAY_A;
	uint8_t out[RELAY_DGRAM] = { 0 }, in[RELAY_DGRAM + 1];
	uint64_t sent = 0;
	unsigned looks = 0;
	int fd = relay_socket(&p->self[h]), rc = 0;

	if (fd < 0)
		return fail(sh, me, fd);
	atomic_fetch_add_explicit(&sh->ready, 1, memory_order_release);
	while (!rc) {
		uint64_t seq = atomic_load_explicit(&pg->out.seq, memory_order_acquire);
		bool busy = false;
		ssize_t r;

		if (seq != sent) {
			/* The header's room is zeros; seq and payload are all a relay carries. */
			memcpy(out, &seq, sizeof(seq));
			memcpy(out + PAYLOAD_AT, pg->out.data, sizeof(pg->out.data));
			if (sendto(fd, out, sizeof(out), 0, (const struct sockaddr *)&peer->ss,
				   peer->len) == (ssize_t)sizeof(out))
				sent = seq;
			else if (errno != EINTR && errno != EAGAIN && errno != ENOBUFS)
				rc = -errno;	/* transient ones are retried on the next look */
			busy = true;
		}
		/* in is one byte larger: a longer datagram shows as too long, not truncated. */
		r = recv(fd, in, sizeof(in), MSG_DONTWAIT);
		if (r == (ssize_t)RELAY_DGRAM) {
			memcpy(&seq, in, sizeof(seq));
			memcpy(pg->in.data, in + PAYLOAD_AT, sizeof(pg->in.data));
			atomic_store_explicit(&pg->in.seq, seq, memory_order_release);
			busy = true;
		} else if (r < 0 && errno != EAGAIN && errno != EINTR && !rc) {
			rc = -errno;
		}
		if (busy || rc)
			continue;
		if (should_stop(sh, &looks))
			break;
		sched_yield();
	}
	close(fd);
	return rc ? fail(sh, me, rc) : 0;
}

/* ---- applications ---- */

/* Spin (sched_yield between looks) until s shows seq; -ETIMEDOUT if told to stop first. */
static int await_seq(struct shared *sh, struct slot *s, uint64_t seq, unsigned *looks)
{
	while (atomic_load_explicit(&s->seq, memory_order_acquire) != seq) {
		if (should_stop(sh, looks))
			return -ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

static void post(struct slot *s, uint64_t seq, const uint8_t data[8])
{
	memcpy(s->data, data, sizeof(s->data));
	atomic_store_explicit(&s->seq, seq, memory_order_release);
}

/* App a: warm + n round trips, half of each of the last n recorded; then everyone stops. */
static int app_a_run(const struct plan *p)
{
	struct shared *sh = p->sh;
	struct host_page *pg = p->page[0];
	uint64_t rounds = (uint64_t)sh->warm + sh->n;
	unsigned looks = 0;

	while (atomic_load_explicit(&sh->ready, memory_order_acquire) < 2) {
		if (should_stop(sh, &looks))
			return fail(sh, APP_A, -ETIMEDOUT);
		sched_yield();
	}
	for (uint64_t k = 1; k <= rounds; k++) {
		uint8_t data[8];
		uint64_t t0, t1;

		memcpy(data, &k, sizeof(data));
		t0 = bench_now_ns();
		post(&pg->out, k, data);
		if (await_seq(sh, &pg->in, k, &looks))
			return fail(sh, APP_A, -ETIMEDOUT);
		t1 = bench_now_ns();
		if (memcmp(pg->in.data, data, sizeof(data)))
			return fail(sh, APP_A, -EPROTO);	/* the echo is not ours */
		if (k > sh->warm)
			sh->half[k - sh->warm - 1] = (t1 - t0) / 2;
	}
	atomic_store_explicit(&sh->done, true, memory_order_release);
	atomic_store_explicit(&sh->stop, 1, memory_order_release);
	return 0;
}

/* App b: each payload that lands is written back, as the echo side of the ping-pong. */
static int app_b_run(const struct plan *p)
{
	struct shared *sh = p->sh;
	struct host_page *pg = p->page[1];
	uint64_t rounds = (uint64_t)sh->warm + sh->n;
	unsigned looks = 0;

	for (uint64_t k = 1; k <= rounds; k++) {
		if (await_seq(sh, &pg->in, k, &looks))
			return fail(sh, APP_B, -ETIMEDOUT);
		post(&pg->out, k, pg->in.data);
	}
	return 0;
}

/* ---- processes ---- */

static int role_run(const struct plan *p, enum role r)
{
	switch (r) {
	case APP_A:
		return app_a_run(p);
	case RELAY_A:
		return relay_run(p, 0);
	case RELAY_B:
		return relay_run(p, 1);
	case APP_B:
		return app_b_run(p);
	case ROLES:
		break;
	}
	return -EINVAL;
}

/* Role r in a child, inside its host's namespace; its write end of alive held until it
 * exits, so the caller sees the last exit as EOF without waking meanwhile. */
static pid_t spawn(const struct plan *p, enum role r, const int alive[2])
{
	int host = r == APP_A || r == RELAY_A ? 0 : 1;
	pid_t parent = getpid(), pid = fork();

	if (pid)
		return pid;
	bench_child_detach();
	if (getppid() != parent)
		_exit(1);	/* the caller died before prctl: nobody to report to */
	close(alive[0]);
	if (p->ns_fd[host] >= 0 && setns(p->ns_fd[host], CLONE_NEWNET))
		_exit(fail(p->sh, r, -errno) ? 1 : 0);
	_exit(role_run(p, r) ? 1 : 0);
}

static void pause_ns(long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000l, .tv_nsec = ns % 1000000000l };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Wait for pid until deadline, then SIGKILL it; reaped either way. */
static void reap(pid_t pid, uint64_t deadline_ns)
{
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			return;
		if (bench_now_ns() >= deadline_ns)
			break;
		pause_ns(1000000);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

/* Until the write ends of alive are all closed (every child gone) or deadline. */
static void await_exits(int fd, uint64_t deadline_ns)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = bench_now_ns();
		char c;

		if (now >= deadline_ns)
			return;
		if (poll(&pfd, 1, (int)((deadline_ns - now) / 1000000u) + 1) > 0 &&
		    read(fd, &c, 1) == 0)
			return;
	}
}

/* The namespace's fd, or -1 for NULL (the caller's); -errno if it cannot be opened. */
static int open_ns(const char *name)
{
	char path[128];
	int fd;

	if (!name)
		return -1;
	if (!*name || strchr(name, '/') ||
	    snprintf(path, sizeof(path), "/var/run/netns/%s", name) >= (int)sizeof(path))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* The pieces of a run the caller sets up before forking; -errno if one is missing. */
static int plan_up(struct plan *p, const char *const ns[2], const char *addr_a,
		   const char *addr_b, unsigned port, size_t shared_len)
{
	memset(p, 0, sizeof(*p));
	p->ns_fd[0] = p->ns_fd[1] = -1;
	if (bench_addr_parse(addr_a, port, &p->self[0]) || bench_addr_parse(addr_b, port + 1, &p->self[1]) ||
	    p->self[0].ss.ss_family != p->self[1].ss.ss_family)
		return -EINVAL;
	for (int h = 0; h < 2; h++) {
		int fd = open_ns(ns[h]);

		if (fd < -1)
			return fd;
		p->ns_fd[h] = fd;
		/* One page per host, as each host's application shares its own with its relay. */
		p->page[h] = mmap(NULL, sizeof(struct host_page), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p->page[h] == MAP_FAILED) {
			p->page[h] = NULL;
			return -errno;
		}
	}
	p->sh = mmap(NULL, shared_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (p->sh == MAP_FAILED) {
		p->sh = NULL;
		return -errno;
	}
	return 0;
}

static void plan_down(struct plan *p, size_t shared_len)
{
	for (int h = 0; h < 2; h++) {
		if (p->ns_fd[h] >= 0)
			close(p->ns_fd[h]);
		if (p->page[h])
			munmap(p->page[h], sizeof(struct host_page));
	}
	if (p->sh)
		munmap(p->sh, shared_len);
}

/* The run's outcome: 0 if app a finished, else the first child's error, else timeout. */
static int outcome(const struct shared *sh)
{
	if (atomic_load_explicit(&sh->done, memory_order_acquire))
		return 0;
	for (int r = 0; r < ROLES; r++)
		if (sh->rc[r] && sh->rc[r] != -ETIMEDOUT)
			return sh->rc[r];
	return -ETIMEDOUT;
}

int relay_pingpong(const char *ns_a, const char *ns_b, const char *addr_a, const char *addr_b,
		   unsigned port, unsigned warm, unsigned n, uint64_t *half_rtt_ns)
{
	const char *const ns[2] = { ns_a, ns_b };
	size_t len = sizeof(struct shared) + (size_t)n * sizeof(uint64_t);
	static const enum role order[ROLES] = { RELAY_A, RELAY_B, APP_B, APP_A };
	pid_t pid[ROLES] = { -1, -1, -1, -1 };
	struct plan p;
	int alive[2], rc;

	if (!n || n > MAX_N || !half_rtt_ns || !port || port >= 65535)
		return -EINVAL;
	if ((rc = plan_up(&p, ns, addr_a, addr_b, port, len))) {
		plan_down(&p, len);
		return rc;
	}
	if (pipe2(alive, O_CLOEXEC)) {
		rc = -errno;
		plan_down(&p, len);
		return rc;
	}
	p.sh->deadline_ns = bench_now_ns() + (uint64_t)RELAY_BUDGET_MS * 1000000u;
	p.sh->warm = warm;
	p.sh->n = n;
	/* Relays first: app a also waits for both to be bound before its first round. */
	for (int i = 0; i < ROLES; i++) {
		pid[order[i]] = spawn(&p, order[i], alive);
		if (pid[order[i]] < 0) {
			/* Too few processes to run: the ones started stop, and are reaped below. */
			fail(p.sh, order[i], -errno);
			break;
		}
	}
	close(alive[1]);
	await_exits(alive[0], p.sh->deadline_ns);
	close(alive[0]);
	/* Whatever is still running has had its budget (or lost its peers): it stops on the
	 * flag within a yield, or is killed after the grace. */
	atomic_store_explicit(&p.sh->stop, 1, memory_order_release);
	for (int r = 0; r < ROLES; r++)
		if (pid[r] > 0)
			reap(pid[r], bench_now_ns() + GRACE_NS);
	rc = outcome(p.sh);
	if (!rc)
		memcpy(half_rtt_ns, p.sh->half, (size_t)n * sizeof(uint64_t));
	plan_down(&p, len);
	return rc;
}
