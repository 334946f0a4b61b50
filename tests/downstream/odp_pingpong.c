/* SPDX-License-Identifier: MIT */
/*
 * odp_pingpong — an On-Demand Paging check written only to libibverbs.
 *
 * Two processes, one RC QP each, connected by exchanging QP number, PSN, GID and the
 * target buffer's address and rkey over a TCP socket (the server listens, the client
 * connects). Every buffer the NIC writes into is a fresh anonymous mapping that nobody
 * has touched, registered with IBV_ACCESS_ON_DEMAND, so the NIC must fault its pages in:
 *
 *   client                                   server
 *   WRITE  src  -> target (never touched)    target faulted in by the responder
 *   READ   target -> back (never touched)    back faulted in by the requester
 *   SEND   msg  -> inbox  (never touched)    inbox faulted in by the receive
 *
 * Each side then checks every byte it received against a pattern seeded by the client,
 * the two verdicts are swapped over TCP, and each process exits 0 only if both passed.
 *
 *   server:  odp_pingpong -d DEV [-p PORT] [-s BYTES] [-g GIDX] [-t SECONDS]
 *   client:  odp_pingpong -d DEV [-p PORT] [-s BYTES] [-g GIDX] [-t SECONDS] SERVER
 *
 * Exit status: 0 every check passed; 1 a check or a verb failed; 2 usage;
 * 77 the device has no ODP for what this program does (nothing was tested).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define EXIT_USAGE	2
#define EXIT_NO_ODP	77
#define MSG_BYTES	(64 * 1024)	/* the SEND: 16 pages, several packets */
#define WIRE_MAGIC	0x4f445050u	/* "ODPP" */
#define WIRE_VERSION	1u

/* What the client needs of an ODP device, and what the server needs: the server's MRs
 * are written by WRITE, read by READ and filled by a receive; the client's are read by
 * a SEND or WRITE and filled by a READ response (IBV_ODP_SUPPORT_READ covers both ends
 * of a READ on mlx5, hence on both sides). */
#define RC_ODP_NEEDED	(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | \
			 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ)

struct opts {
	const char *dev;
	const char *server;	/* NULL: this is the server */
	const char *port;
	size_t size;
	int gid_index;		/* -1: find the RoCE v2 GID of our IP address */
	int timeout_s;
};

/* One side's half of the connection, in network byte order on the wire. */
struct wire_info {
	uint32_t magic, version;
	uint32_t qpn, psn;
	uint32_t rkey, mtu;		/* enum ibv_mtu */
	uint32_t lid, seed;		/* the seed: the client's, for every pattern */
	uint64_t addr, size;
	uint8_t gid[16];
};
_Static_assert(sizeof(struct wire_info) == 64, "wire_info has no padding");

/* Each side's verdict, sent to the other after its checks. */
struct wire_verdict {
	uint32_t magic;
	uint32_t wrong;		/* bytes that did not match, plus failed checks */
};

struct side {
	const struct opts *o;
	const char *who;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_port_attr port;
	int gid_index;
	union ibv_gid gid;
	/* server: target (WRITE/READ) and inbox (SEND); client: src, back and msg */
	uint8_t *buf[3];
	size_t len[3];
	struct ibv_mr *mr[3];
	uint32_t psn, seed;
	struct timespec deadline;
};

static const char *me = "odp_pingpong";

static void say(const struct side *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(const struct side *s, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", s->who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* --- the data pattern ---------------------------------------------------------------- */

/* Byte at offset off of stream k (0: WRITE data, 1: SEND data) under seed: a different
 * value for neighbouring bytes, pages and runs, so a misplaced page or a stale buffer
 * shows. */
static uint8_t pattern(uint32_t seed, unsigned k, uint64_t off)
{
	uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed << 32 | k);

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	return (uint8_t)(x >> 56);
}

static void fill(uint8_t *p, size_t len, uint32_t seed, unsigned k)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(seed, k, i);
}

/* Bytes of p that differ from the pattern; the first one is reported. */
static size_t check(const struct side *s, const char *what, const uint8_t *p, size_t len,
		    uint32_t seed, unsigned k)
{
	size_t wrong = 0;

	for (size_t i = 0; i < len; i++) {
		uint8_t want = pattern(seed, k, i);

		if (p[i] != want && wrong++ == 0)
			say(s, "%s: first wrong byte at offset %zu (page %zu): 0x%02x, want 0x%02x",
			    what, i, i / (size_t)sysconf(_SC_PAGESIZE), p[i], want);
	}
	say(s, "%s: %zu bytes checked, %zu wrong", what, len, wrong);
	return wrong;
}

/* --- memory ------------------------------------------------------------------------- */

/* A fresh anonymous mapping: no page of it exists until someone touches it. */
static uint8_t *fresh_pages(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* How many pages of [p, p+len) are resident (mincore), or -1. */
static long resident_pages(const void *p, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = (len + pg - 1) / pg;
	unsigned char *v = malloc(n);
	long count = 0;

	if (!v || mincore((void *)p, len, v)) {
		free(v);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		count += v[i] & 1;
	free(v);
	return count;
}

static size_t pages_of(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (len + pg - 1) / pg;
}

/* --- the device -------------------------------------------------------------------- */

static struct ibv_context *open_by_name(const char *name)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;

	if (!list) {
		fprintf(stderr, "%s: ibv_get_device_list: %s%s\n", me, strerror(errno),
			errno == ENOSYS ? " (no RDMA support in this kernel; a software device "
			"such as odpemu's is reached through its launcher, e.g. odpemu-run)" : "");
		return NULL;
	}
	for (int i = 0; i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name) &&
		    !(ctx = ibv_open_device(list[i])))
			fprintf(stderr, "%s: ibv_open_device %s: %s\n", me, name, strerror(errno));
	if (!ctx && n >= 0) {
		fprintf(stderr, "%s: no RDMA device named '%s'; devices here:", me, name);
		for (int i = 0; i < n; i++)
			fprintf(stderr, " %s", ibv_get_device_name(list[i]));
		fprintf(stderr, "%s\n", n ? "" : " none (is the device's driver or daemon up?)");
	}
	ibv_free_device_list(list);
	return ctx;
}

/* 0 if the device does ODP for everything this program does, else EXIT_NO_ODP with a
 * line that says what is missing. */
static int check_odp(const struct side *s)
{
	struct ibv_device_attr_ex attr;
	uint32_t rc;
	int rc_q;

	memset(&attr, 0, sizeof(attr));
	rc_q = ibv_query_device_ex(s->ctx, NULL, &attr);
	if (rc_q) {
		fprintf(stderr, "%s: %s: ibv_query_device_ex: %s: cannot learn its ODP "
			"capabilities\n", me, s->o->dev, strerror(rc_q));
		return EXIT_NO_ODP;
	}
	if (!(attr.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		fprintf(stderr, "%s: %s does not support On-Demand Paging "
			"(odp_caps.general_caps has no IBV_ODP_SUPPORT); nothing was tested\n",
			me, s->o->dev);
		return EXIT_NO_ODP;
	}
	rc = attr.odp_caps.per_transport_caps.rc_odp_caps;
	if ((rc & RC_ODP_NEEDED) != RC_ODP_NEEDED) {
		fprintf(stderr, "%s: %s supports ODP, but not on RC for:%s%s%s%s; nothing was "
			"tested\n", me, s->o->dev,
			rc & IBV_ODP_SUPPORT_SEND ? "" : " SEND",
			rc & IBV_ODP_SUPPORT_RECV ? "" : " RECV",
			rc & IBV_ODP_SUPPORT_WRITE ? "" : " WRITE",
			rc & IBV_ODP_SUPPORT_READ ? "" : " READ");
		return EXIT_NO_ODP;
	}
	return 0;
}

static bool gid_is_v4mapped(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(g->raw, prefix, sizeof(prefix));
}

static void gid_str(const union ibv_gid *g, char *out, size_t len)
{
	if (gid_is_v4mapped(g))
		inet_ntop(AF_INET, g->raw + 12, out, (socklen_t)len);
	else
		inet_ntop(AF_INET6, g->raw, out, (socklen_t)len);
}

/* The GID a RoCE v2 peer reaches us at: the first RoCE v2 entry holding an IPv4 address,
 * else the first RoCE v2 entry that is not link-local (perftest's rule; rdma_cm would
 * resolve an address instead). Entries of other types (RoCE v1, IB) are skipped. On
 * InfiniBand, entry 0. -g names the index instead. */
static int find_gid(struct side *s)
{
	int v4 = -1, any = -1;

	if (s->o->gid_index >= 0 || s->port.link_layer != IBV_LINK_LAYER_ETHERNET) {
		s->gid_index = s->o->gid_index >= 0 ? s->o->gid_index : 0;
		if (ibv_query_gid(s->ctx, 1, s->gid_index, &s->gid)) {
			fprintf(stderr, "%s: %s has no GID[%d]\n", me, s->o->dev, s->gid_index);
			return -1;
		}
		return s->gid_index;
	}
	for (int i = 0; i < s->port.gid_tbl_len && v4 < 0; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(s->ctx, 1, (uint32_t)i, &e, 0) ||
		    e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;	/* an empty slot (ENODATA), RoCE v1 or IB */
		if (gid_is_v4mapped(&e.gid))
			v4 = i;
		else if (any < 0 && !(e.gid.raw[0] == 0xfe && (e.gid.raw[1] & 0xc0) == 0x80))
			any = i;
	}
	s->gid_index = v4 >= 0 ? v4 : any;
	if (s->gid_index < 0) {
		fprintf(stderr, "%s: %s port 1 has no RoCE v2 GID with an IP address; give the "
			"index with -g (ibv_devinfo -v lists the table)\n", me, s->o->dev);
		return -1;
	}
	return ibv_query_gid(s->ctx, 1, s->gid_index, &s->gid) ? -1 : s->gid_index;
}

/* --- the TCP side channel ------------------------------------------------------------ */

static int ms_left(const struct side *s)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (s->deadline.tv_sec - now.tv_sec) * 1000LL +
	     (s->deadline.tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : (int)ms;
}

static int set_timeouts(int fd, const struct side *s)
{
	struct timeval tv = { .tv_sec = ms_left(s) / 1000 + 1 };

	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	       setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A listening socket on every address: IPv6 taking IPv4 too, else IPv4 alone (a host or
 * container without IPv6). */
static int tcp_listen(const char *port)
{
	static const int families[] = { AF_INET6, AF_INET };
	int err = 0;

	for (unsigned f = 0; f < 2; f++) {
		struct addrinfo hints = { .ai_family = families[f], .ai_socktype = SOCK_STREAM,
					  .ai_flags = AI_PASSIVE }, *ai;
		int one = 1, zero = 0, fd, rc;

		if ((rc = getaddrinfo(NULL, port, &hints, &ai))) {
			fprintf(stderr, "%s: port %s: %s\n", me, port, gai_strerror(rc));
			return -1;
		}
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
		    (ai->ai_family != AF_INET6 ||
		     !setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero))) &&
		    !bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, 1)) {
			freeaddrinfo(ai);
			return fd;
		}
		err = errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
	}
	fprintf(stderr, "%s: listening on TCP port %s: %s\n", me, port, strerror(err));
	return -1;
}

/* The server: accept one client within the deadline. */
static int tcp_serve(struct side *s)
{
	int lfd = tcp_listen(s->o->port), fd = -1;
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	if (lfd < 0)
		return -1;
	say(s, "waiting for the client on TCP port %s", s->o->port);
	if (poll(&p, 1, ms_left(s)) != 1)
		fprintf(stderr, "%s: no client connected within %d s\n", me, s->o->timeout_s);
	else if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		fprintf(stderr, "%s: accept: %s\n", me, strerror(errno));
	close(lfd);
	return fd;
}

/* The client: connect, retrying until the deadline (the server may not listen yet). */
static int tcp_connect(struct side *s)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	int rc, err = 0;

	if ((rc = getaddrinfo(s->o->server, s->o->port, &hints, &ai))) {
		fprintf(stderr, "%s: %s: %s\n", me, s->o->server, gai_strerror(rc));
		return -1;
	}
	do {
		for (struct addrinfo *a = ai; a; a = a->ai_next) {
			int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

			if (fd >= 0 && !connect(fd, a->ai_addr, a->ai_addrlen)) {
				freeaddrinfo(ai);
				return fd;
			}
			err = errno;
			if (fd >= 0)
				close(fd);
		}
		usleep(100 * 1000);
	} while (ms_left(s) > 0);
	fprintf(stderr, "%s: could not connect to %s port %s within %d s: %s\n", me,
		s->o->server, s->o->port, s->o->timeout_s, strerror(err));
	freeaddrinfo(ai);
	return -1;
}

static int xfer(int fd, void *buf, size_t len, bool out)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n <= 0) {
			fprintf(stderr, "%s: TCP %s: %s\n", me, out ? "send" : "receive",
				n == 0 ? "the peer closed the connection" :
				errno == EAGAIN ? "timed out" : strerror(errno));
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* --- verbs ------------------------------------------------------------------------ */

static struct ibv_mr *reg_odp(struct side *s, void *p, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(s->pd, p, len, access | IBV_ACCESS_ON_DEMAND);

	if (!mr)
		fprintf(stderr, "%s: ibv_reg_mr(%zu bytes, IBV_ACCESS_ON_DEMAND): %s\n", me, len,
			strerror(errno));
	return mr;
}

/* PD, CQ, RC QP in INIT. */
static int make_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 2, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	if (!(s->pd = ibv_alloc_pd(s->ctx)) || !(s->cq = ibv_create_cq(s->ctx, 8, NULL, NULL, 0))) {
		fprintf(stderr, "%s: ibv_alloc_pd/ibv_create_cq: %s\n", me, strerror(errno));
		return -1;
	}
	ia.send_cq = ia.recv_cq = s->cq;
	if (!(s->qp = ibv_create_qp(s->pd, &ia))) {
		fprintf(stderr, "%s: ibv_create_qp(RC): %s\n", me, strerror(errno));
		return -1;
	}
	if ((errno = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS))) {
		fprintf(stderr, "%s: ibv_modify_qp(INIT): %s\n", me, strerror(errno));
		return -1;
	}
	return 0;
}

/* INIT -> RTR -> RTS towards the peer. The responder asks for the shortest RNR timer:
 * an ODP page fault is answered with an RNR NAK on many NICs, and the requester retries
 * for ever (rnr_retry 7), so a fault costs microseconds, not milliseconds. */
static int connect_qp(struct side *s, const struct wire_info *peer)
{
	enum ibv_mtu mtu = (enum ibv_mtu)ntohl(peer->mtu);
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .dest_qp_num = ntohl(peer->qpn),
		.rq_psn = ntohl(peer->psn), .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
		.path_mtu = mtu < s->port.active_mtu ? mtu : s->port.active_mtu,
		.ah_attr = { .port_num = 1, .dlid = (uint16_t)ntohl(peer->lid) },
	};
	int rc;

	if (s->port.link_layer == IBV_LINK_LAYER_ETHERNET) {	/* RoCE routes by GID */
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
		memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	}
	if ((rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER))) {
		fprintf(stderr, "%s: ibv_modify_qp(RTR): %s\n", me, strerror(rc));
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = s->psn;
	a.timeout = 14;		/* 67 ms */
	a.retry_cnt = 7;
	a.rnr_retry = 7;	/* retry RNR NAKs for ever: ODP faults */
	a.max_rd_atomic = 1;
	if ((rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))) {
		fprintf(stderr, "%s: ibv_modify_qp(RTS): %s\n", me, strerror(rc));
		return -1;
	}
	return 0;
}

/* One completion of the wanted opcode before the deadline, its status checked. */
static int wait_wc(struct side *s, enum ibv_wc_opcode want, struct ibv_wc *wc)
{
	int n;

	while ((n = ibv_poll_cq(s->cq, 1, wc)) == 0) {
		if (ms_left(s) == 0) {
			fprintf(stderr, "%s: no completion of %s within %d s\n", me,
				want == IBV_WC_RECV ? "the receive" : "the request",
				s->o->timeout_s);
			return -1;
		}
	}
	if (n < 0) {
		fprintf(stderr, "%s: ibv_poll_cq failed\n", me);
		return -1;
	}
	if (wc->status != IBV_WC_SUCCESS || wc->opcode != want) {
		fprintf(stderr, "%s: completion of wr_id %" PRIu64 ": %s (opcode %d, want %d, "
			"vendor_err 0x%x)\n", me, wc->wr_id, ibv_wc_status_str(wc->status),
			wc->opcode, want, wc->vendor_err);
		return -1;
	}
	return 0;
}

static int post_one(struct side *s, enum ibv_wr_opcode op, int i, size_t len,
		    const struct wire_info *peer, uint32_t imm)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf[i], .length = (uint32_t)len,
			       .lkey = s->mr[i]->lkey };
	struct ibv_send_wr wr = { .wr_id = (uint64_t)op, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .imm_data = htonl(imm) }, *bad;
	int rc;

	if (op != IBV_WR_SEND_WITH_IMM) {
		wr.wr.rdma.remote_addr = be64toh(peer->addr);
		wr.wr.rdma.rkey = ntohl(peer->rkey);
	}
	if ((rc = ibv_post_send(s->qp, &wr, &bad))) {
		fprintf(stderr, "%s: ibv_post_send: %s\n", me, strerror(rc));
		return -1;
	}
	return 0;
}

/* --- the two roles ------------------------------------------------------------------- */

static void fill_info(const struct side *s, struct wire_info *w, int i)
{
	memset(w, 0, sizeof(*w));
	w->magic = htonl(WIRE_MAGIC);
	w->version = htonl(WIRE_VERSION);
	w->qpn = htonl(s->qp->qp_num);
	w->psn = htonl(s->psn);
	w->mtu = htonl((uint32_t)s->port.active_mtu);
	w->lid = htonl(s->port.lid);
	w->seed = htonl(s->seed);
	w->size = htobe64(s->o->size);
	if (i >= 0) {		/* the buffer the peer may access */
		w->rkey = htonl(s->mr[i]->rkey);
		w->addr = htobe64((uintptr_t)s->buf[i]);
	}
	memcpy(w->gid, s->gid.raw, 16);
}

static int swap_info(struct side *s, int fd, int i, struct wire_info *peer)
{
	struct wire_info mine;

	fill_info(s, &mine, i);
	if (xfer(fd, &mine, sizeof(mine), true) || xfer(fd, peer, sizeof(*peer), false))
		return -1;
	if (ntohl(peer->magic) != WIRE_MAGIC || ntohl(peer->version) != WIRE_VERSION) {
		fprintf(stderr, "%s: the peer is not odp_pingpong version %u\n", me, WIRE_VERSION);
		return -1;
	}
	return 0;
}

/* Both QPs are in RTS before the client posts: a request to a QP still in INIT would
 * be dropped and cost a retransmission timeout. */
static int both_ready(int fd)
{
	uint8_t mine = 'R', theirs = 0;

	if (xfer(fd, &mine, 1, true) || xfer(fd, &theirs, 1, false))
		return -1;
	return theirs == 'R' ? 0 : -1;
}

static int swap_verdict(int fd, uint32_t mine, uint32_t *theirs)
{
	struct wire_verdict v = { .magic = htonl(WIRE_MAGIC), .wrong = htonl(mine) }, p;

	if (xfer(fd, &v, sizeof(v), true) || xfer(fd, &p, sizeof(p), false) ||
	    ntohl(p.magic) != WIRE_MAGIC)
		return -1;
	*theirs = ntohl(p.wrong);
	return 0;
}

static void report_resident(const struct side *s, const char *what, int i)
{
	long r = resident_pages(s->buf[i], s->len[i]);

	say(s, "%s: %ld of %zu pages resident%s", what, r, pages_of(s->len[i]),
	    r == 0 ? " (ODP registration pinned nothing)" : "");
}

/* server: target and inbox never touched; a receive posted into the inbox. */
static int server_buffers(struct side *s)
{
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc;

	s->len[0] = s->o->size;
	s->len[1] = MSG_BYTES;
	for (int i = 0; i < 2; i++)
		if (!(s->buf[i] = fresh_pages(s->len[i]))) {
			fprintf(stderr, "%s: mmap: %s\n", me, strerror(errno));
			return -1;
		}
	if (!(s->mr[0] = reg_odp(s, s->buf[0], s->len[0], IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)) ||
	    !(s->mr[1] = reg_odp(s, s->buf[1], s->len[1], IBV_ACCESS_LOCAL_WRITE)))
		return -1;
	report_resident(s, "WRITE target after ibv_reg_mr(ON_DEMAND)", 0);
	sge = (struct ibv_sge){ .addr = (uintptr_t)s->buf[1], .length = (uint32_t)s->len[1],
				.lkey = s->mr[1]->lkey };
	if ((rc = ibv_post_recv(s->qp, &wr, &bad))) {
		fprintf(stderr, "%s: ibv_post_recv: %s\n", me, strerror(rc));
		return -1;
	}
	return 0;
}

/* The client WRITEs, READs back and SENDs; the SEND's arrival says the target holds
 * the WRITE (RC delivers a QP's messages in order). */
static uint32_t serve(struct side *s, int fd)
{
	struct wire_info peer;
	struct ibv_wc wc;
	uint32_t wrong = 0;

	if (server_buffers(s) || swap_info(s, fd, 0, &peer) || connect_qp(s, &peer) ||
	    both_ready(fd))
		return UINT32_MAX;
	s->seed = ntohl(peer.seed);
	if (be64toh(peer.size) != s->len[0]) {
		fprintf(stderr, "%s: the client's size is %" PRIu64 ", ours %zu: use the same -s\n",
			me, (uint64_t)be64toh(peer.size), s->len[0]);
		return UINT32_MAX;
	}
	say(s, "connected: QP %u <-> QP %u, seed %u", s->qp->qp_num, ntohl(peer.qpn), s->seed);
	if (wait_wc(s, IBV_WC_RECV, &wc))
		return UINT32_MAX;
	if (!(wc.wc_flags & IBV_WC_WITH_IMM) || ntohl(wc.imm_data) != s->seed ||
	    wc.byte_len != MSG_BYTES) {
		say(s, "SEND: byte_len %u imm %s 0x%x, want %u with imm 0x%x", wc.byte_len,
		    wc.wc_flags & IBV_WC_WITH_IMM ? "" : "(none)", ntohl(wc.imm_data),
		    MSG_BYTES, s->seed);
		wrong++;
	}
	report_resident(s, "WRITE target after the client's WRITE", 0);
	wrong += (uint32_t)check(s, "WRITE data in the target", s->buf[0], s->len[0], s->seed, 0);
	wrong += (uint32_t)check(s, "SEND data in the inbox", s->buf[1], s->len[1], s->seed, 1);
	return wrong;
}

/* client: src holds the WRITE data, back never touched (the READ fills it), msg the
 * SEND's data. */
static int client_buffers(struct side *s)
{
	s->len[0] = s->len[1] = s->o->size;
	s->len[2] = MSG_BYTES;
	for (int i = 0; i < 3; i++)
		if (!(s->buf[i] = fresh_pages(s->len[i]))) {
			fprintf(stderr, "%s: mmap: %s\n", me, strerror(errno));
			return -1;
		}
	fill(s->buf[0], s->len[0], s->seed, 0);
	fill(s->buf[2], s->len[2], s->seed, 1);
	if (!(s->mr[0] = reg_odp(s, s->buf[0], s->len[0], 0)) ||
	    !(s->mr[1] = reg_odp(s, s->buf[1], s->len[1], IBV_ACCESS_LOCAL_WRITE)) ||
	    !(s->mr[2] = reg_odp(s, s->buf[2], s->len[2], 0)))
		return -1;
	report_resident(s, "READ destination after ibv_reg_mr(ON_DEMAND)", 1);
	return 0;
}

static uint32_t drive(struct side *s, int fd)
{
	struct wire_info peer;
	struct ibv_wc wc;

	if (client_buffers(s) || swap_info(s, fd, -1, &peer) || connect_qp(s, &peer) ||
	    both_ready(fd))
		return UINT32_MAX;
	say(s, "connected: QP %u <-> QP %u, seed %u; target %" PRIu64 " bytes at 0x%" PRIx64,
	    s->qp->qp_num, ntohl(peer.qpn), s->seed, (uint64_t)be64toh(peer.size),
	    (uint64_t)be64toh(peer.addr));
	if (be64toh(peer.size) != s->len[0]) {
		fprintf(stderr, "%s: the server's target is %" PRIu64 " bytes, ours %zu: use the "
			"same -s\n", me, (uint64_t)be64toh(peer.size), s->len[0]);
		return UINT32_MAX;
	}
	if (post_one(s, IBV_WR_RDMA_WRITE, 0, s->len[0], &peer, 0) ||
	    wait_wc(s, IBV_WC_RDMA_WRITE, &wc))
		return UINT32_MAX;
	say(s, "RDMA WRITE of %zu bytes onto the server's untouched pages: completed", s->len[0]);
	if (post_one(s, IBV_WR_RDMA_READ, 1, s->len[1], &peer, 0) ||
	    wait_wc(s, IBV_WC_RDMA_READ, &wc))
		return UINT32_MAX;
	say(s, "RDMA READ of %zu bytes into our untouched pages: completed", s->len[1]);
	if (post_one(s, IBV_WR_SEND_WITH_IMM, 2, s->len[2], &peer, s->seed) ||
	    wait_wc(s, IBV_WC_SEND, &wc))
		return UINT32_MAX;
	say(s, "SEND with immediate of %zu bytes into the server's untouched inbox: completed",
	    s->len[2]);
	report_resident(s, "READ destination after the READ", 1);
	return (uint32_t)check(s, "READ data in the destination", s->buf[1], s->len[1],
			       s->seed, 0);
}

/* --- main ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s -d DEV [-p PORT] [-s BYTES] [-g GIDX] [-t SECONDS] [SERVER]\n"
		"  without SERVER: wait for a client on TCP PORT; with SERVER: connect to it.\n"
		"  -d DEV      the RDMA device (ibv_devices lists them)\n"
		"  -p PORT     TCP port of the QP exchange (default 19875)\n"
		"  -s BYTES    bytes written and read back, K/M suffix (default 1M; same on both)\n"
		"  -g GIDX     GID index (default: the first RoCE v2 GID with an IPv4 address)\n"
		"  -t SECONDS  give up after this long (default 30)\n"
		"Exit status: 0 all data checks passed, 1 failed, 2 usage, 77 no ODP.\n", me);
}

static int parse(int argc, char **argv, struct opts *o)
{
	char *end;
	int c;

	*o = (struct opts){ .port = "19875", .size = 1 << 20, .gid_index = -1, .timeout_s = 30 };
	while ((c = getopt(argc, argv, "d:p:s:g:t:h")) != -1) {
		switch (c) {
		case 'd': o->dev = optarg; break;
		case 'p': o->port = optarg; break;
		case 's':
			o->size = strtoull(optarg, &end, 0);
			if (*end == 'K' || *end == 'k')
				o->size <<= 10, end++;
			else if (*end == 'M' || *end == 'm')
				o->size <<= 20, end++;
			if (*end || !o->size || o->size > (1ull << 31)) {
				fprintf(stderr, "%s: -s %s: want 1 .. 2G bytes\n", me, optarg);
				return -1;
			}
			break;
		case 'g': o->gid_index = atoi(optarg); break;
		case 't': o->timeout_s = atoi(optarg); break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (optind < argc)
		o->server = argv[optind++];
	if (!o->dev || optind != argc || o->timeout_s <= 0) {
		fprintf(stderr, "%s: %s\n", me, !o->dev ? "-d DEV is required" :
			o->timeout_s <= 0 ? "-t wants seconds > 0" : "one SERVER at most");
		return -1;
	}
	return 0;
}

static void teardown(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	for (int i = 0; i < 3; i++) {
		if (s->mr[i])
			ibv_dereg_mr(s->mr[i]);
		if (s->buf[i])
			munmap(s->buf[i], s->len[i]);
	}
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct side s = { .o = &o };
	uint32_t mine = UINT32_MAX, theirs = UINT32_MAX;
	char gs[INET6_ADDRSTRLEN];
	int fd = -1, rc = 1;

	if (parse(argc, argv, &o)) {
		usage(stderr);
		return EXIT_USAGE;
	}
	s.who = o.server ? "client" : "server";
	clock_gettime(CLOCK_MONOTONIC, &s.deadline);
	s.deadline.tv_sec += o.timeout_s;
	s.seed = (uint32_t)time(NULL) ^ (uint32_t)getpid() << 8;
	s.psn = s.seed & 0xffffff;
	if (!(s.ctx = open_by_name(o.dev)))
		goto out;
	if ((rc = check_odp(&s)))
		goto out;
	rc = 1;
	if (ibv_query_port(s.ctx, 1, &s.port) || s.port.state != IBV_PORT_ACTIVE) {
		fprintf(stderr, "%s: %s port 1 is not ACTIVE\n", me, o.dev);
		goto out;
	}
	if (make_qp(&s) || find_gid(&s) < 0)
		goto out;
	fd = o.server ? tcp_connect(&s) : tcp_serve(&s);
	if (fd < 0 || set_timeouts(fd, &s))
		goto out;
	gid_str(&s.gid, gs, sizeof(gs));
	say(&s, "%s: ODP supported; port 1 %s, GID[%d] %s", o.dev,
	    s.port.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE v2" : "InfiniBand",
	    s.gid_index, gs);
	mine = o.server ? drive(&s, fd) : serve(&s, fd);
	if (mine == UINT32_MAX)
		goto out;
	if (swap_verdict(fd, mine, &theirs))
		goto out;
	say(&s, "verdict: ours %s, the %s's %s", mine ? "FAILED" : "passed",
	    o.server ? "server" : "client", theirs ? "FAILED" : "passed");
	rc = mine || theirs;
out:
	if (fd >= 0)
		close(fd);
	teardown(&s);
	if (rc == 1)
		fprintf(stderr, "%s: %s FAILED\n", me, s.who);
	return rc;
}
