/* SPDX-License-Identifier: MIT */
/* net — see net.h. */
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf.h"

static void nodelay(int fd)
{
	int one = 1;

	/* Every message is a request waiting for an answer: no Nagle delay. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int net_serve_one(unsigned port, const char *test, struct perf_conn *c)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	int one = 1, zero = 0, fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return perf_err("socket: %s", strerror(errno)), -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
		perf_err("cannot listen on TCP port %u: %s%s", port, strerror(errno),
			 errno == EADDRINUSE ? " (another odpemu-perf server? pick another with -p)"
			 : "");
		close(fd);
		return -1;
	}
	fprintf(stderr, "%s: %s server: waiting for a client on TCP port %u\n", PERF_PROG, test,
		port);
	c->fd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	close(fd);
	if (c->fd < 0)
		return perf_err("accept: %s", strerror(errno)), -1;
	c->have = 0;
	nodelay(c->fd);
	return 0;
}

/* Wait for a non-blocking connect; 0 or an errno (ETIMEDOUT). */
static int finish_connect(int fd, double timeout)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int err = 0, n = poll(&p, 1, (int)(timeout * 1000));
	socklen_t len = sizeof(err);

	if (n == 0)
		return ETIMEDOUT;
	if (n < 0)
		return errno;
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	return err;
}

static int try_addr(const struct addrinfo *ai, double timeout, int *fd_out)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			ai->ai_protocol);
	int err;

	if (fd < 0)
		return errno;
	err = connect(fd, ai->ai_addr, ai->ai_addrlen) ? errno : 0;
	if (err == EINPROGRESS)
		err = finish_connect(fd, timeout);
	if (err) {
		close(fd);
		return err;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	*fd_out = fd;
	return 0;
}

static void unreachable(const char *host, unsigned port, const char *test, int err,
			double timeout)
{
	if (err == ECONNREFUSED)
		perf_err("cannot reach the server %s port %u: connection refused (start "
			 "`%s %s` there first, or check -p)", host, port, PERF_PROG, test);
	else if (err == ETIMEDOUT)
		perf_err("cannot reach the server %s port %u: no answer in %g s (check the "
			 "address and that the host is reachable)", host, port, timeout);
	else
		perf_err("cannot reach the server %s port %u: %s (check the address and the "
			 "routes)", host, port, strerror(err));
}

int net_connect(const char *host, unsigned port, double timeout, const char *test,
		struct perf_conn *c)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res = NULL;
	char service[16];
	int rc, err = ETIMEDOUT;

	snprintf(service, sizeof(service), "%u", port);
	if ((rc = getaddrinfo(host, service, &hints, &res))) {
		perf_err("cannot resolve the server '%s': %s", host, gai_strerror(rc));
		return -1;
	}
	c->fd = -1;
	for (const struct addrinfo *ai = res; ai && c->fd < 0; ai = ai->ai_next)
		err = try_addr(ai, timeout, &c->fd);
	freeaddrinfo(res);
	if (c->fd < 0) {
		unreachable(host, port, test, err, timeout);
		return -1;
	}
	c->have = 0;
	nodelay(c->fd);
	return 0;
}

void net_close(struct perf_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int net_send(struct perf_conn *c, const char *fmt, ...)
{
	char line[NET_LINE];
	va_list ap;
	int n;
	size_t off = 0;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) - 1)
		return -1;
	line[n++] = '\n';
	while (off < (size_t)n) {
		ssize_t w = send(c->fd, line + off, (size_t)n - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* Move one complete line out of the buffer; true if there was one. */
static int take_line(struct perf_conn *c, char *line, size_t len)
{
	char *nl = memchr(c->buf, '\n', c->have);
	size_t n;

	if (!nl)
		return 0;
	n = (size_t)(nl - c->buf);
	snprintf(line, len, "%.*s", (int)n, c->buf);
	memmove(c->buf, nl + 1, c->have - n - 1);
	c->have -= n + 1;
	return 1;
}

int net_recv(struct perf_conn *c, char *line, size_t len, double timeout)
{
	double end = perf_now() + timeout;

	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		int ms = timeout < 0 ? -1 : (int)((end - perf_now()) * 1000);
		ssize_t r;

		if (take_line(c, line, len))
			return 1;
		if (c->have == sizeof(c->buf))
			return -1;	/* a line longer than any message: not our peer */
		if (timeout >= 0 && ms < 0)
			ms = 0;
		r = poll(&p, 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 0;
		r = recv(c->fd, c->buf + c->have, sizeof(c->buf) - c->have, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c->have += (size_t)r;
	}
}
