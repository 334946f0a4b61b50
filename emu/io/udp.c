/* SPDX-License-Identifier: MIT */
/* udp — the RoCEv2 socket: multishot recvmsg on a provided-buffer ring (or a recvmmsg
 * fallback) for receive, sendmmsg batches for send. Model: liburing's examples/io_uring-udp.c */
#include "udp.h"
#include "say.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>

#define RX_BUFS 256u		/* provided buffers; a power of two (the ring's mask) */
/* What a multishot recvmsg writes in front of the payload: its header, the address and the
 * control messages (UDP_GRO's segment size). */
#define RX_HDR (sizeof(struct io_uring_recvmsg_out) + RX_NAMELEN + sizeof(union gro_cmsg))
/* The name's room in a multishot buffer, rounded to 8 so that the control message after it
 * is aligned as struct cmsghdr must be. */
#define RX_NAMELEN ((sizeof(struct sockaddr_in6) + 7) & ~(size_t)7)
/* The largest payload one receive holds: one datagram, or with UDP_GRO a coalesced run. */
#define RX_MAX_PLAIN EMU_UDP_MAX_DATAGRAM
#define RX_MAX_GRO 65536u
static_assert((RX_BUFS & (RX_BUFS - 1)) == 0, "buffer ring size is a power of two");

#define RX_BUDGET 256u		/* fallback: datagrams per wakeup before the loop moves on */
#define RX_ERR_STREAK 16u	/* failed arms in a row before multishot is given up */
#define BUF_DEFAULT (8u << 20)	/* SO_RCVBUF/SO_SNDBUF: REFERENCE.md "This machine's limits" */
#define BGID_MAX 64		/* buffer group ids tried: one per socket on a loop */

#include "udp_int.h"

/* ---- addresses ---- */

static void format_name(struct emu_udp *u)
{
	char ip[INET6_ADDRSTRLEN];
	const struct nic_gid *g = &u->cfg.local;

	if (u->family == AF_INET) {
		inet_ntop(AF_INET, g->raw + 12, ip, sizeof(ip));
		snprintf(u->name, sizeof(u->name), "%s:%u", ip, u->cfg.port);
	} else {
		inet_ntop(AF_INET6, g->raw, ip, sizeof(ip));
		snprintf(u->name, sizeof(u->name), "[%s]:%u", ip, u->cfg.port);
	}
}

bool emu_udp_sockaddr(const struct emu_udp *u, const struct nic_gid *g, uint16_t port,
			union sa *out, socklen_t *len)
{
	memset(out, 0, sizeof(*out));
	if (nic_gid_is_v4(g) != (u->family == AF_INET))
		return false;
	if (u->family == AF_INET) {
		out->in.sin_family = AF_INET;
		out->in.sin_port = htons(port);
		memcpy(&out->in.sin_addr, g->raw + 12, 4);
		*len = sizeof(out->in);
		return true;
	}
	out->in6.sin6_family = AF_INET6;
	out->in6.sin6_port = htons(port);
	memcpy(&out->in6.sin6_addr, g->raw, 16);
	if (IN6_IS_ADDR_LINKLOCAL(&out->in6.sin6_addr))
		out->in6.sin6_scope_id = (uint32_t)u->cfg.ifindex;
	*len = sizeof(out->in6);
	return true;
}

/* A received source address as GID and port; false for anything but AF_INET/AF_INET6. */
static bool source_of(const void *name, size_t len, struct nic_gid *g, uint16_t *port)
{
	union sa a;

	memset(&a, 0, sizeof(a));
	memcpy(&a, name, len < sizeof(a) ? len : sizeof(a));
	if (a.sa.sa_family == AF_INET && len >= sizeof(a.in)) {
		*g = nic_gid_from_v4(ntohl(a.in.sin_addr.s_addr));
		*port = ntohs(a.in.sin_port);
		return true;
	}
	if (a.sa.sa_family == AF_INET6 && len >= sizeof(a.in6)) {
		memcpy(g->raw, &a.in6.sin6_addr, 16);
		*port = ntohs(a.in6.sin6_port);
		return true;
	}
	return false;
}

/* ---- receive, common ---- */

/* One datagram to nic/; longer than EMU_UDP_MAX_DATAGRAM (possible inside a coalesced run,
 * whose buffer is larger) it is dropped as the kernel truncates it otherwise. */
static void deliver_one(struct emu_udp *u, const uint8_t *pkt, size_t len,
			const struct nic_gid *src, uint16_t sport)
{
	if (len > EMU_UDP_MAX_DATAGRAM) {
		u->st.rx_truncated++;
		return;
	}
	u->st.rx_pkts++;
	u->st.rx_bytes += len;
	u->cfg.deliver(u->cfg.deliver_arg, pkt, len, src, sport);
}

/* One received buffer: a datagram, or with UDP_GRO (gso_size > 0) a run of datagrams of
 * gso_size bytes (the last may be shorter) that the kernel coalesced: cut back here. */
static void rx_one(struct emu_udp *u, const uint8_t *pkt, size_t len, const void *name,
		   size_t namelen, bool truncated, unsigned gso_size)
{
	struct nic_gid src;
	uint16_t sport;

	if (truncated) {
		u->st.rx_truncated++;
		return;
	}
	if (!source_of(name, namelen, &src, &sport)) {
		u->st.rx_errors++;
		return;
	}
	if (!gso_size || gso_size >= len) {
		deliver_one(u, pkt, len, &src, sport);
		return;
	}
	u->st.rx_gro_bufs++;
	for (size_t off = 0; off < len; off += gso_size)
		deliver_one(u, pkt + off, len - off < gso_size ? len - off : gso_size, &src, sport);
}

/* The segment size if c is UDP_GRO's control message, else 0. */
static unsigned gro_size_in(const struct cmsghdr *c)
{
	int v;

	if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_GRO ||
	    c->cmsg_len < CMSG_LEN(sizeof(v)))
		return 0;
	memcpy(&v, CMSG_DATA(c), sizeof(v));
	return v > 0 ? (unsigned)v : 0;
}

/* The segment size UDP_GRO reports for a coalesced buffer, 0 for a plain datagram. */
static unsigned gro_size_of(struct msghdr *h)
{
	unsigned size = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c && !size; c = CMSG_NXTHDR(h, c))
		size = gro_size_in(c);
	return size;
}

/* ---- receive, fallback: multishot poll + recvmmsg ---- */

static void rx_reset_batch(struct emu_udp *u)
{
	for (unsigned i = 0; i < RX_BATCH; i++) {
		u->rx_mm[i].msg_hdr.msg_namelen = sizeof(u->rx_names[i]);
		u->rx_mm[i].msg_hdr.msg_controllen = u->gro ? sizeof(u->rx_ctl[i]) : 0;
		u->rx_mm[i].msg_hdr.msg_flags = 0;
	}
}

/* Read up to RX_BUDGET datagrams; true if the socket is empty. */
static bool rx_drain(struct emu_udp *u)
{
	unsigned done = 0;

	while (done < RX_BUDGET) {
		int got;

		rx_reset_batch(u);
		got = recvmmsg(u->fd, u->rx_mm, RX_BATCH, MSG_DONTWAIT, NULL);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				u->st.rx_errors++;
			return true;
		}
		for (int i = 0; i < got; i++) {
			struct msghdr *h = &u->rx_mm[i].msg_hdr;

			rx_one(u, u->rx_iov[i].iov_base, u->rx_mm[i].msg_len, h->msg_name,
			       h->msg_namelen, h->msg_flags & MSG_TRUNC,
			       u->gro ? gro_size_of(h) : 0);
		}
		done += (unsigned)got;
		if ((unsigned)got < RX_BATCH)
			return true;
	}
	return false;
}

static void rx_drain_and_kick(struct emu_udp *u)
{
	if (u->loop->kind == EMU_LOOP_EPOLL) {
		if (!rx_drain(u))	/* datagrams left: report the socket again */
			emu_loop_rearm(u->loop, &u->poll_io);
		return;
	}
	/* A oneshot poll checks readiness when armed: it fires at once if datagrams are left. */
	if (!rx_drain(u) && !u->kick_armed) {
		struct io_uring_sqe *sqe = emu_loop_sqe(u->loop);

		io_uring_prep_poll_add(sqe, u->fd, POLLIN);
		io_uring_sqe_set_data(sqe, &u->kick_io);
		u->kick_armed = true;
	}
}

static void poll_cb(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_udp *u = udp_of(io, poll_io);

	if (cqe->res < 0)
		u->st.rx_errors++;
	rx_drain_and_kick(u);
	if (!(cqe->flags & IORING_CQE_F_MORE))
		emu_loop_poll_in(u->loop, u->fd, &u->poll_io);
}

static void kick_cb(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_udp *u = udp_of(io, kick_io);

	(void)cqe;
	u->kick_armed = false;
	rx_drain_and_kick(u);
}

static int fallback_init(struct emu_udp *u)
{
	size_t max = u->gro ? RX_MAX_GRO : RX_MAX_PLAIN;

	u->rx_flat = malloc((size_t)RX_BATCH * max);
	if (!u->rx_flat)
		return -ENOMEM;
	for (unsigned i = 0; i < RX_BATCH; i++) {
		u->rx_iov[i].iov_base = u->rx_flat + (size_t)i * max;
		u->rx_iov[i].iov_len = max;
		u->rx_mm[i].msg_hdr.msg_control = u->rx_ctl[i].buf;
		u->rx_mm[i].msg_hdr.msg_iov = &u->rx_iov[i];
		u->rx_mm[i].msg_hdr.msg_iovlen = 1;
		u->rx_mm[i].msg_hdr.msg_name = &u->rx_names[i];
	}
	u->poll_io.fn = poll_cb;
	u->kick_io.fn = kick_cb;
	u->multishot = false;
	emu_loop_poll_in(u->loop, u->fd, &u->poll_io);
	return 0;
}

/* ---- receive, multishot recvmsg on a provided-buffer ring ---- */

static void ring_fini(struct emu_udp *u)
{
	if (u->bgid >= 0)
		io_uring_unregister_buf_ring(&u->loop->ring, u->bgid);
	u->bgid = -1;
	if (u->br)
		munmap(u->br, RX_BUFS * sizeof(struct io_uring_buf));
	if (u->bufs)
		munmap(u->bufs, (size_t)RX_BUFS * u->rx_stride);
	u->br = NULL;
	u->bufs = NULL;
}

static void ring_recycle(struct emu_udp *u, unsigned bid)
{
	io_uring_buf_ring_add(u->br, u->bufs + (size_t)bid * u->rx_stride, u->rx_stride,
			      (unsigned short)bid, io_uring_buf_ring_mask(RX_BUFS), 0);
	io_uring_buf_ring_advance(u->br, 1);
}

/* mmap'd (page-aligned, as the kernel requires of the ring) and registered. */
static int ring_init(struct emu_udp *u)
{
	struct io_uring_buf_reg reg;
	void *p;
	int rc = -EEXIST;

	p = mmap(NULL, RX_BUFS * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	u->br = p;
	/* 64-byte aligned buffers, each holding the largest receive with what precedes it */
	u->rx_stride = (unsigned)((RX_HDR + (u->gro ? RX_MAX_GRO : RX_MAX_PLAIN) + 63) & ~63ul);
	p = mmap(NULL, (size_t)RX_BUFS * u->rx_stride, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	u->bufs = p;
	memset(&reg, 0, sizeof(reg));
	reg.ring_addr = (uint64_t)(uintptr_t)u->br;
	reg.ring_entries = RX_BUFS;
	/* Group ids are per ring: another socket on this loop may hold one already. */
	for (int bgid = 0; bgid < BGID_MAX && rc == -EEXIST; bgid++) {
		reg.bgid = (uint16_t)bgid;
		rc = io_uring_register_buf_ring(&u->loop->ring, &reg, 0);
		if (!rc)
			u->bgid = bgid;
	}
	if (rc)
		return rc;
	io_uring_buf_ring_init(u->br);
	for (unsigned bid = 0; bid < RX_BUFS; bid++)
		io_uring_buf_ring_add(u->br, u->bufs + (size_t)bid * u->rx_stride, u->rx_stride,
				      (unsigned short)bid, io_uring_buf_ring_mask(RX_BUFS),
				      (int)bid);
	io_uring_buf_ring_advance(u->br, (int)RX_BUFS);
	return 0;
}

static void ms_arm(struct emu_udp *u)
{
	struct io_uring_sqe *sqe = emu_loop_sqe(u->loop);

	io_uring_prep_recvmsg_multishot(sqe, u->fd, &u->rx_msg, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (uint16_t)u->bgid;
	io_uring_sqe_set_data(sqe, &u->rx_io);
}

/* UDP_GRO's segment size in a multishot buffer's control messages (0: none). */
static unsigned ms_gro_size(struct emu_udp *u, struct io_uring_recvmsg_out *o)
{
	unsigned size = 0;

	for (struct cmsghdr *c = io_uring_recvmsg_cmsg_firsthdr(o, &u->rx_msg); c && !size;
	     c = io_uring_recvmsg_cmsg_nexthdr(o, &u->rx_msg, c))
		size = gro_size_in(c);
	return size;
}

static void ms_buffer(struct emu_udp *u, unsigned bid, int res)
{
	uint8_t *buf = u->bufs + (size_t)bid * u->rx_stride;
	struct io_uring_recvmsg_out *o = io_uring_recvmsg_validate(buf, res, &u->rx_msg);

	if (!o) {
		u->st.rx_errors++;
		return;
	}
	rx_one(u, io_uring_recvmsg_payload(o, &u->rx_msg),
	       io_uring_recvmsg_payload_length(o, res, &u->rx_msg),
	       io_uring_recvmsg_name(o),
	       o->namelen < u->rx_msg.msg_namelen ? o->namelen : u->rx_msg.msg_namelen,
	       o->flags & MSG_TRUNC, u->gro ? ms_gro_size(u, o) : 0);
}

/* The request is over (no F_MORE) with an error: a kernel that cannot do multishot
 * recvmsg says so at once; anything else is retried a few times, then given up on too. */
static void ms_failed(struct emu_udp *u, int res)
{
	bool unsupported = res == -EINVAL || res == -EOPNOTSUPP;

	if (unsupported || ++u->rx_err_streak > RX_ERR_STREAK) {
		if (fallback_init(u) == 0) {
			ring_fini(u);	/* the request is over: the kernel holds no buffer */
			return;
		}
		/* no memory for the fallback: keep trying multishot */
	}
	ms_arm(u);
}

static void rx_cb(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_udp *u = udp_of(io, rx_io);

	if (cqe->flags & IORING_CQE_F_BUFFER) {
		unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;

		if (bid < RX_BUFS) {
			if (cqe->res > 0)
				ms_buffer(u, bid, cqe->res);
			ring_recycle(u, bid);
		}
	}
	if (cqe->res >= 0)
		u->rx_err_streak = 0;
	else if (cqe->res != -ENOBUFS)	/* -ENOBUFS: the ring ran dry; recycled above */
		u->st.rx_errors++;
	if (cqe->flags & IORING_CQE_F_MORE)
		return;
	if (cqe->res < 0 && cqe->res != -ENOBUFS) {
		ms_failed(u, cqe->res);
		return;
	}
	u->st.rx_rearms++;
	ms_arm(u);
}

/* A kernel without multishot recvmsg fails the arm inline, during submit: look for that
 * completion without consuming it (other modules' completions share the CQ). */
static bool ms_arm_failed(struct emu_udp *u)
{
	struct io_uring_cqe *cqe;
	unsigned head;

	io_uring_submit(&u->loop->ring);
	io_uring_for_each_cqe(&u->loop->ring, head, cqe) {
		if (cqe->user_data == (uint64_t)(uintptr_t)&u->rx_io && cqe->res < 0 &&
		    !(cqe->flags & IORING_CQE_F_MORE))
			return true;
	}
	return false;
}

static bool ms_init(struct emu_udp *u)
{
	memset(&u->rx_msg, 0, sizeof(u->rx_msg));
	u->rx_msg.msg_namelen = RX_NAMELEN;
	u->rx_msg.msg_controllen = u->gro ? sizeof(union gro_cmsg) : 0;
	u->rx_io.fn = rx_cb;
	if (ring_init(u)) {
		ring_fini(u);
		return false;
	}
	ms_arm(u);
	if (ms_arm_failed(u)) {
		/* Its completion must not reach rx_cb, and the ring must go. */
		if (emu_loop_cancel(u->loop, &u->rx_io) == 0)
			ring_fini(u);
		return false;
	}
	u->multishot = true;
	return true;
}

const char *emu_udp_rx_path(const struct emu_udp *u)
{
	return u->multishot ? "multishot recvmsg + provided buffer ring"
			    : "recvmmsg batch (fallback)";
}

bool emu_udp_gro(const struct emu_udp *u)
{
	return u->gro;
}

const char *emu_udp_name(const struct emu_udp *u)
{
	return u->name;
}

void emu_udp_stats(const struct emu_udp *u, struct emu_udp_stats *out)
{
	*out = u->st;
}

/* ---- the socket ---- */

/* Root may pass rmem_max/wmem_max (4 MiB here) with the FORCE variant; others are capped. */
static void set_buf(int fd, int force_opt, int opt, unsigned bytes)
{
	int v = (int)(bytes ? bytes : BUF_DEFAULT);

	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

static int set_opt(int fd, int level, int opt, int v, const char *what, char *err,
		   size_t errlen)
{
	if (setsockopt(fd, level, opt, &v, sizeof(v)) == 0)
		return 0;
	emu_say(err, errlen, "cannot set %s on the UDP socket: %s", what, strerror(errno));
	return -errno;
}

/* Multicast sends (udp.h): out of the device's interface, looped back, TTL 64. A host
 * that refuses these still sends unicast: errors are ignored (a multicast send then
 * follows the routing table, or fails and is counted). */
static void mcast_send_options(struct emu_udp *u)
{
	int one = 1, ttl = 64;

	if (u->family == AF_INET) {
		struct ip_mreqn m = { .imr_ifindex = u->cfg.ifindex };

		memcpy(&m.imr_address, u->cfg.local.raw + 12, 4);
		(void)setsockopt(u->fd, IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof(m));
		(void)setsockopt(u->fd, IPPROTO_IP, IP_MULTICAST_LOOP, &one, sizeof(one));
		(void)setsockopt(u->fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl));
		return;
	}
	if (u->cfg.ifindex)
		(void)setsockopt(u->fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &u->cfg.ifindex,
				 sizeof(u->cfg.ifindex));
	(void)setsockopt(u->fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &one, sizeof(one));
	(void)setsockopt(u->fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &ttl, sizeof(ttl));
}

/* A group socket's membership (udp.h, cfg.group): on the interface of cfg.iface. */
static int group_join(struct emu_udp *u, char *err, size_t errlen)
{
	int zero = 0;

	if (u->family == AF_INET) {
		struct ip_mreqn m = { .imr_ifindex = u->cfg.ifindex };

		memcpy(&m.imr_multiaddr, u->cfg.local.raw + 12, 4);
		memcpy(&m.imr_address, u->cfg.iface.raw + 12, 4);
		if (setsockopt(u->fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)) == 0)
			return set_opt(u->fd, IPPROTO_IP, IP_MULTICAST_ALL, zero,
				       "IP_MULTICAST_ALL", err, errlen);
	} else {
		struct ipv6_mreq m = { .ipv6mr_interface = (unsigned)u->cfg.ifindex };

		memcpy(&m.ipv6mr_multiaddr, u->cfg.local.raw, 16);
		if (setsockopt(u->fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof(m)) == 0)
			return 0;
	}
	emu_say(err, errlen, "cannot join multicast group %s on the device's interface: %s",
		u->name, strerror(errno));
	return -errno;
}

static int sock_options(struct emu_udp *u, char *err, size_t errlen)
{
	int rc = 0;

	set_buf(u->fd, SO_RCVBUFFORCE, SO_RCVBUF, u->cfg.rcvbuf);
	set_buf(u->fd, SO_SNDBUFFORCE, SO_SNDBUF, u->cfg.sndbuf);
	if (u->cfg.group)
		rc = set_opt(u->fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR", err, errlen);
	else
		mcast_send_options(u);
	if (rc)
		return rc;
	/* DF=1 and, on an unconnected socket, IP ID 0: the ICRC covers both (REFERENCE.md). */
	if (u->family == AF_INET)
		return set_opt(u->fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO,
			       "IP_MTU_DISCOVER", err, errlen);
	rc = set_opt(u->fd, IPPROTO_IPV6, IPV6_V6ONLY, 1, "IPV6_V6ONLY", err, errlen);
	if (!rc)
		rc = set_opt(u->fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO,
			     "IPV6_MTU_DISCOVER", err, errlen);
	return rc;
}

/* UDP_GRO: the kernel hands over runs of equal datagrams from one peer as one buffer (a
 * GSO send arrives whole); cfg.no_gro, or a kernel without it, keeps one per receive. */
static void rx_probe_gro(struct emu_udp *u)
{
	int one = 1;

	u->gro = !u->cfg.no_gro && setsockopt(u->fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0;
}

static int sock_bind(struct emu_udp *u, char *err, size_t errlen)
{
	union sa me;
	socklen_t len;
	int e;

	emu_udp_sockaddr(u, &u->cfg.local, u->cfg.port, &me, &len);
	if (u->family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&me.in6.sin6_addr) && !u->cfg.ifindex) {
		emu_say(err, errlen, "cannot bind %s: a link-local address needs its interface "
		    "(--addr fe80::...%%IFNAME)", u->name);
		return -EINVAL;
	}
	if (bind(u->fd, &me.sa, len) == 0)
		return 0;
	e = errno;
	if (e == EADDRINUSE)
		emu_say(err, errlen, "%s is in use — is another odpemud running on this address? "
		    "(the kernel's rdma_rxe also holds port %u on every address: see `rdma link`)",
		    u->name, u->cfg.port);
	else if (e == EADDRNOTAVAIL)
		emu_say(err, errlen, "cannot bind %s: the address is not assigned to any interface: "
		    "add it with `ip addr add` or pick another --addr", u->name);
	else
		emu_say(err, errlen, "cannot bind %s: %s", u->name, strerror(e));
	return -e;
}

static int sock_open(struct emu_udp *u, char *err, size_t errlen)
{
	int rc;

	u->fd = socket(u->family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
	if (u->fd < 0) {
		emu_say(err, errlen, "cannot create a UDP socket: %s", strerror(errno));
		return -errno;
	}
	rc = sock_options(u, err, errlen);
	if (!rc && u->cfg.bind_device)
		rc = set_opt(u->fd, SOL_SOCKET, SO_BINDTOIFINDEX, u->cfg.ifindex,
			     "SO_BINDTOIFINDEX (is ifindex an interface?)", err, errlen);
	if (!rc)
		rc = sock_bind(u, err, errlen);
	if (!rc && u->cfg.group)
		rc = group_join(u, err, errlen);
	return rc;
}

int emu_udp_open(struct emu_loop *loop, const struct emu_udp_config *cfg, struct emu_udp **out,
		 char *err, size_t errlen)
{
	struct emu_udp *u;
	int rc;

	if (!loop || !cfg || !cfg->deliver || !out) {
		emu_say(err, errlen, "emu_udp_open: no loop, config or deliver callback");
		return -EINVAL;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		emu_say(err, errlen, "out of memory for the UDP socket");
		return -ENOMEM;
	}
	u->loop = loop;
	u->cfg = *cfg;
	u->cfg.port = cfg->port ? cfg->port : EMU_UDP_PORT;
	u->family = nic_gid_is_v4(&cfg->local) ? AF_INET : AF_INET6;
	u->fd = -1;
	u->bgid = -1;
	format_name(u);
	rc = emu_udp_tx_init(u);
	if (rc)
		emu_say(err, errlen, "out of memory for the UDP send batch");
	if (!rc)
		rc = sock_open(u, err, errlen);
	if (!rc) {
		emu_udp_tx_probe(u);
		rx_probe_gro(u);
	}
	/* the epoll loop has no provided buffers: the recvmmsg path is its own */
	if (!rc && (cfg->force_fallback || loop->kind == EMU_LOOP_EPOLL || !ms_init(u))) {
		rc = fallback_init(u);
		if (rc)
			emu_say(err, errlen, "out of memory for the UDP receive batch");
	}
	if (rc) {
		emu_udp_close(u);
		return rc;
	}
	*out = u;
	return 0;
}

void emu_udp_close(struct emu_udp *u)
{
	bool stuck = false;

	if (!u)
		return;
	/* Every io of ours, armed or not: a switch to the fallback may have left either. */
	stuck |= emu_loop_cancel(u->loop, &u->rx_io) != 0;
	stuck |= emu_loop_cancel(u->loop, &u->poll_io) != 0;
	stuck |= emu_loop_cancel(u->loop, &u->kick_io) != 0;
	if (u->fd >= 0)
		close(u->fd);
	if (stuck) {
		/* A request may still complete into our buffers or with our address as
		 * user_data: leaking is the safe failure. */
		return;
	}
	ring_fini(u);
	free(u->rx_flat);
	emu_udp_tx_fini(u);
	free(u);
}
