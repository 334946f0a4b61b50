/* SPDX-License-Identifier: MIT */
/* udp_raw — see udp_raw.h. */
#include "udp_raw.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_addr.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define BUF_BYTES (8 << 20)	/* as odpemud: REFERENCE.md, UDP receive loss */
#define MAX_DGRAM 65507u

/* A UDP socket bound to ip:port, large buffers, DF set (odpemud's settings). */
static int open_bound(const char *ip, unsigned port, struct bench_addr *bound)
{
	int fd, buf = BUF_BYTES, pmtu;

	if (bench_addr_parse(ip, port, bound))
		return -EINVAL;
	fd = socket(bound->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* FORCE needs CAP_NET_ADMIN; without it the plain call gets rmem_max/wmem_max. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)))
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (bound->ss.ss_family == AF_INET) {
		pmtu = IP_PMTUDISC_DO;
		(void)setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	} else {
		pmtu = IPV6_PMTUDISC_DO;
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	}
	if (bind(fd, (struct sockaddr *)&bound->ss, bound->len)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static void set_timeout(int fd, unsigned ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static void say_ready(int ready_fd)
{
	char c = 'R';

	if (ready_fd >= 0 && write(ready_fd, &c, 1) != 1)
		return;		/* the parent is gone; its timeout ends us */
}

/* ---- bulk ---- */

int udp_bulk_recv(const char *addr, unsigned port, unsigned dgram, int ready_fd,
		  unsigned start_ms, unsigned idle_ms, struct udp_bulk_rx *out)
{
	struct mmsghdr mm[UDP_RAW_BATCH];
	struct iovec iov[UDP_RAW_BATCH];
	struct bench_addr self;
	uint8_t *buf;
	int fd;

	memset(out, 0, sizeof(*out));
	if (dgram > MAX_DGRAM || !(buf = malloc((size_t)UDP_RAW_BATCH * dgram)))
		return -ENOMEM;
	if ((fd = open_bound(addr, port, &self)) < 0) {
		free(buf);
		return fd;
	}
	for (unsigned i = 0; i < UDP_RAW_BATCH; i++) {
		iov[i] = (struct iovec){ buf + (size_t)i * dgram, dgram };
		mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
	}
	set_timeout(fd, start_ms);
	say_ready(ready_fd);
	for (;;) {
		int got = recvmmsg(fd, mm, UDP_RAW_BATCH, 0, NULL);
		uint64_t now = bench_now_ns();

		if (got < 0) {
			if (errno == EINTR)
				continue;
			break;		/* EAGAIN: idle (or never started) */
		}
		if (!out->datagrams) {
			out->first_ns = now;
			set_timeout(fd, idle_ms);
		}
		out->last_ns = now;
		out->datagrams += (unsigned)got;
		for (int i = 0; i < got; i++)
			out->bytes += mm[i].msg_len;
	}
	close(fd);
	free(buf);
	return out->datagrams ? 0 : -ETIMEDOUT;
}

int udp_bulk_send(const char *src, const char *dst, unsigned port, unsigned dgram,
		  double seconds, bool gso, uint64_t *sent)
{
	struct mmsghdr mm[UDP_RAW_BATCH];
	struct iovec iov[UDP_RAW_BATCH];
	struct bench_addr self, peer;
	unsigned segs = gso ? MAX_DGRAM / (dgram ? dgram : 1) : UDP_RAW_BATCH;
	size_t len = (size_t)UDP_RAW_BATCH * dgram;
	uint64_t end;
	uint8_t *buf;
	int fd, seg = (int)dgram;

	*sent = 0;
	if (bench_addr_parse(dst, port, &peer) || dgram > MAX_DGRAM)
		return -EINVAL;
	if (gso && (segs < 2 || segs > UDP_RAW_BATCH))
		return -EINVAL;
	if (!(buf = malloc(len)))
		return -ENOMEM;
	memset(buf, 0x5a, len);
	if ((fd = open_bound(src, 0, &self)) < 0) {
		free(buf);
		return fd;
	}
	if (gso && setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg))) {
		int e = -errno;

		close(fd);
		free(buf);
		return e;
	}
	for (unsigned i = 0; i < UDP_RAW_BATCH; i++) {
		iov[i] = (struct iovec){ buf + (size_t)i * dgram, dgram };
		mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &peer.ss,
			.msg_namelen = peer.len, .msg_iov = &iov[i], .msg_iovlen = 1 } };
	}
	if (gso)	/* one GSO send is one UDP datagram to the socket: at most 64 KiB */
		iov[0].iov_len = (size_t)segs * dgram;
	end = bench_now_ns() + (uint64_t)(seconds * 1e9);
	while (bench_now_ns() < end) {
		int rc = sendmmsg(fd, mm, gso ? 1 : UDP_RAW_BATCH, 0);

		if (rc < 0) {
			if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN)
				continue;
			break;
		}
		*sent += gso ? (uint64_t)rc * segs : (uint64_t)rc;
	}
	close(fd);
	free(buf);
	return 0;
}

/* ---- ping-pong ---- */

/* One datagram into buf, blocking (SO_RCVTIMEO bounds it) or spinning until deadline. */
static ssize_t recv_one(int fd, void *buf, size_t len, bool busy, uint64_t deadline_ns,
			struct sockaddr_storage *from, socklen_t *fromlen)
{
	for (;;) {
		ssize_t r = recvfrom(fd, buf, len, busy ? MSG_DONTWAIT : 0,
				     (struct sockaddr *)from, fromlen);

		if (r >= 0)
			return r;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN || !busy || bench_now_ns() > deadline_ns)
			return -1;
	}
}

int udp_echo(const char *addr, unsigned port, bool busy, int ready_fd, unsigned idle_ms)
{
	uint8_t buf[MAX_DGRAM];
	struct bench_addr self;
	int fd = open_bound(addr, port, &self);

	if (fd < 0)
		return fd;
	set_timeout(fd, idle_ms);
	say_ready(ready_fd);
	for (;;) {
		struct sockaddr_storage from;
		socklen_t fromlen = sizeof(from);
		ssize_t r = recv_one(fd, buf, sizeof(buf), busy,
				     bench_now_ns() + (uint64_t)idle_ms * 1000000u, &from, &fromlen);

		if (r < 0)
			break;
		if (r == 1 && buf[0] == 'Q')
			break;		/* the pinger is done */
		(void)sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&from, fromlen);
	}
	close(fd);
	return 0;
}

int udp_ping(const char *src, const char *dst, unsigned port, unsigned dgram, bool busy,
	     unsigned warmup, unsigned n, uint64_t *half_rtt_ns, unsigned *lost)
{
	uint8_t out[MAX_DGRAM], in[MAX_DGRAM];
	struct bench_addr self, peer;
	unsigned done = 0;
	int fd;

	*lost = 0;
	if (bench_addr_parse(dst, port, &peer) || dgram > MAX_DGRAM || dgram < 4)
		return -EINVAL;
	if ((fd = open_bound(src, 0, &self)) < 0)
		return fd;
	/* connect: the kernel filters other senders, and send/recv skip the address. */
	if (connect(fd, (struct sockaddr *)&peer.ss, peer.len)) {
		int e = -errno;

		close(fd);
		return e;
	}
	set_timeout(fd, 200);
	memset(out, 0x5a, dgram);
	for (unsigned k = 0; done < n; k++) {
		uint64_t t0, t1;
		ssize_t r;

		memcpy(out, &k, sizeof(k));
		t0 = bench_now_ns();
		if (send(fd, out, dgram, 0) != (ssize_t)dgram) {
			int e = -errno;

			close(fd);
			return e;
		}
		do	/* skip late echoes of a round given up on */
			r = recv_one(fd, in, sizeof(in), busy, t0 + 200000000u, NULL, NULL);
		while (r >= 4 && memcmp(in, &k, sizeof(k)));
		t1 = bench_now_ns();
		if (r < 0) {
			if (++*lost > 100) {
				close(fd);
				return -ETIMEDOUT;
			}
			continue;
		}
		if (k >= warmup)
			half_rtt_ns[done++] = (t1 - t0) / 2;
	}
	out[0] = 'Q';
	(void)send(fd, out, 1, 0);
	close(fd);
	return 0;
}
