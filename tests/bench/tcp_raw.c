/* SPDX-License-Identifier: MIT */
/* tcp_raw — see tcp_raw.h. */
#include "tcp_raw.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_addr.h"

#define IO_TIMEOUT_MS 5000u	/* a peer that stops reading or answering */

/* Blocking reads and writes that give up after ms with EAGAIN: the plain blocking path
 * (one syscall per read, as poll() + read() would not be) with a bound on every wait. */
static void set_timeouts(int fd, unsigned rcv_ms, unsigned snd_ms)
{
	struct timeval r = { .tv_sec = rcv_ms / 1000, .tv_usec = (rcv_ms % 1000) * 1000 };
	struct timeval s = { .tv_sec = snd_ms / 1000, .tv_usec = (snd_ms % 1000) * 1000 };

	if (!rcv_ms)		/* 0 would mean "wait forever" */
		r.tv_usec = 1000;
	if (!snd_ms)
		s.tv_usec = 1000;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &r, sizeof(r));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &s, sizeof(s));
}

static void set_nodelay(int fd)
{
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void say_ready(int ready_fd)
{
	char c = 'R';

	if (ready_fd >= 0 && write(ready_fd, &c, 1) != 1)
		return;		/* the parent is gone; its timeout ends us */
}

static int fail_close(int fd, int e)
{
	close(fd);
	return e;
}

/* A socket listening on ip:port; SO_REUSEADDR so back-to-back runs reuse the port while
 * the last run's connection sits in TIME_WAIT. */
static int open_listener(const char *ip, unsigned port)
{
	struct bench_addr self;
	int fd, one = 1;

	if (bench_addr_parse(ip, port, &self))
		return -EINVAL;
	fd = socket(self.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&self.ss, self.len) || listen(fd, 1))
		return fail_close(fd, -errno);
	return fd;
}

/* The one connection on listener lfd, waiting at most ms; lfd is closed either way. */
static int accept_within(int lfd, unsigned ms)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int rc, fd;

	do
		rc = poll(&p, 1, (int)ms);
	while (rc < 0 && errno == EINTR);
	if (rc <= 0)
		return fail_close(lfd, rc ? -errno : -ETIMEDOUT);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	return fail_close(lfd, fd < 0 ? -errno : fd);
}

/* A blocking socket from src (any port) connected to dst:port. The connect itself is
 * non-blocking with a poll, so an unreachable dst costs IO_TIMEOUT_MS, not the kernel's
 * two minutes of SYN retries. */
static int connect_from(const char *src, const char *dst, unsigned port, int nodelay)
{
	struct bench_addr self, peer;
	struct pollfd p;
	int fd, err = 0, rc;
	socklen_t len = sizeof(err);

	if (bench_addr_parse(src, 0, &self) || bench_addr_parse(dst, port, &peer) ||
	    self.ss.ss_family != peer.ss.ss_family)
		return -EINVAL;
	fd = socket(peer.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (nodelay)
		set_nodelay(fd);
	if (bind(fd, (struct sockaddr *)&self.ss, self.len))
		return fail_close(fd, -errno);
	if (connect(fd, (struct sockaddr *)&peer.ss, peer.len) && errno != EINPROGRESS)
		return fail_close(fd, -errno);
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	do
		rc = poll(&p, 1, (int)IO_TIMEOUT_MS);
	while (rc < 0 && errno == EINTR);
	if (rc <= 0)
		return fail_close(fd, rc ? -errno : -ETIMEDOUT);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err)
		return fail_close(fd, err ? -err : -errno);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		return fail_close(fd, -errno);
	return fd;
}

/* len bytes into buf. The count read (less than len only at EOF) or -errno; a read that
 * waited out SO_RCVTIMEO is -ETIMEDOUT. */
static ssize_t read_full(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = recv(fd, buf + got, len - got, 0);

		if (r > 0)
			got += (size_t)r;
		else if (r == 0)
			break;
		else if (errno != EINTR)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
	}
	return (ssize_t)got;
}

/* All len bytes of buf, or -errno. MSG_NOSIGNAL: a peer gone is EPIPE, not SIGPIPE. */
static int write_full(int fd, const uint8_t *buf, size_t len)
{
	size_t put = 0;

	while (put < len) {
		ssize_t r = send(fd, buf + put, len - put, MSG_NOSIGNAL);

		if (r >= 0)
			put += (size_t)r;
		else if (errno != EINTR)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
	}
	return 0;
}

/* ---- bulk ---- */

int tcp_stream_recv(const char *addr, unsigned port, int ready_fd, unsigned start_ms,
		    unsigned idle_ms, struct tcp_stream_rx *out)
{
	uint8_t *buf;
	int fd;

	memset(out, 0, sizeof(*out));
	if (!(buf = malloc(TCP_RAW_CHUNK)))
		return -ENOMEM;
	if ((fd = open_listener(addr, port)) < 0) {
		free(buf);
		return fd;
	}
	say_ready(ready_fd);
	if ((fd = accept_within(fd, start_ms)) < 0) {
		free(buf);
		return fd;
	}
	set_timeouts(fd, idle_ms, IO_TIMEOUT_MS);
	for (;;) {
		ssize_t r = recv(fd, buf, TCP_RAW_CHUNK, 0);
		uint64_t now = bench_now_ns();

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;		/* EOF, or EAGAIN: idle */
		if (!out->bytes)
			out->first_ns = now;
		out->last_ns = now;
		out->bytes += (uint64_t)r;
	}
	close(fd);
	free(buf);
	return out->bytes ? 0 : -ETIMEDOUT;
}

int tcp_stream_send(const char *src, const char *dst, unsigned port, double seconds,
		    uint64_t *sent)
{
	uint64_t end;
	uint8_t *buf;
	int fd, rc = 0;

	*sent = 0;
	if (!(buf = malloc(TCP_RAW_CHUNK)))
		return -ENOMEM;
	memset(buf, 0x5a, TCP_RAW_CHUNK);
	if ((fd = connect_from(src, dst, port, 0)) < 0) {
		free(buf);
		return fd;
	}
	set_timeouts(fd, IO_TIMEOUT_MS, IO_TIMEOUT_MS);	/* a receiver that stalls */
	end = bench_now_ns() + (uint64_t)(seconds * 1e9);
	while (bench_now_ns() < end) {
		ssize_t r = send(fd, buf, TCP_RAW_CHUNK, MSG_NOSIGNAL);

		if (r >= 0) {
			*sent += (uint64_t)r;
		} else if (errno != EINTR) {
			rc = errno == EAGAIN ? -ETIMEDOUT : -errno;
			break;
		}
	}
	/* What is still queued is delivered after close; the receiver times the end. */
	close(fd);
	free(buf);
	return rc;
}

/* ---- ping-pong ---- */

int tcp_echo(const char *addr, unsigned port, unsigned msg, int ready_fd, unsigned idle_ms)
{
	uint8_t *buf;
	int fd, rc = 0;

	if (!msg || msg > TCP_RAW_MAX_MSG)
		return -EINVAL;
	if (!(buf = malloc(msg)))
		return -ENOMEM;
	if ((fd = open_listener(addr, port)) < 0) {
		free(buf);
		return fd;
	}
	say_ready(ready_fd);
	if ((fd = accept_within(fd, idle_ms)) < 0) {
		free(buf);
		return fd;
	}
	set_nodelay(fd);
	set_timeouts(fd, idle_ms, IO_TIMEOUT_MS);
	for (;;) {
		ssize_t r = read_full(fd, buf, msg);

		if (r == 0 || r == -ETIMEDOUT)
			break;		/* the pinger closed, or went quiet */
		if (r < 0 || r < (ssize_t)msg) {
			rc = r < 0 ? (int)r : -EPROTO;	/* closed mid-message */
			break;
		}
		if ((rc = write_full(fd, buf, msg)))
			break;
	}
	close(fd);
	free(buf);
	return rc;
}

int tcp_ping(const char *src, const char *dst, unsigned port, unsigned msg, unsigned warmup,
	     unsigned n, uint64_t *half_rtt_ns)
{
	size_t stamp = msg < sizeof(unsigned) ? msg : sizeof(unsigned);
	uint8_t *out, *in;
	int fd, rc = 0;

	if (!msg || msg > TCP_RAW_MAX_MSG)
		return -EINVAL;
	out = malloc(msg);
	in = malloc(msg);
	if (!out || !in) {
		free(out);
		free(in);
		return -ENOMEM;
	}
	memset(out, 0x5a, msg);
	if ((fd = connect_from(src, dst, port, 1)) < 0) {
		free(out);
		free(in);
		return fd;
	}
	set_timeouts(fd, IO_TIMEOUT_MS, IO_TIMEOUT_MS);
	for (unsigned k = 0; k < warmup + n; k++) {
		uint64_t t0, t1;
		ssize_t r;

		/* The round number in the first bytes: a framing slip shows as -EPROTO. */
		memcpy(out, &k, stamp);
		t0 = bench_now_ns();
		if ((rc = write_full(fd, out, msg)))
			break;
		r = read_full(fd, in, msg);
		t1 = bench_now_ns();
		if (r < 0 || r < (ssize_t)msg || memcmp(in, out, stamp)) {
			rc = r < 0 ? (int)r : -EPROTO;
			break;
		}
		if (k >= warmup)
			half_rtt_ns[k - warmup] = (t1 - t0) / 2;
	}
	close(fd);		/* the echo sees EOF and ends */
	free(out);
	free(in);
	return rc;
}
