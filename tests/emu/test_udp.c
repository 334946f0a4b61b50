/* SPDX-License-Identifier: MIT */
/* emu/udp: two sockets (127.0.0.1 and 127.0.0.2, each on its own emu_loop, one thread)
 * exchange datagrams of mixed sizes on both receive paths, with segmentation offload on
 * and off (the segments' ICRCs re-sealed for their IPv4 Identification); a burst larger
 * than the buffer ring; oversized datagrams; a second socket on a taken address; close
 * with completions still queued; IPv6. Runs in a private network namespace when it can
 * (port 4791, nothing shared with the host), else on the host's lo with a port of its own. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "icrc.h"
#include "io/loop.h"
#include "t.h"
#include "tloop.h"
#include "tnet.h"
#include "io/udp.h"

#define COUNT 1000u
#define WINDOW 64u		/* sent but not yet received, per direction: no socket overflow */
#define LOOP_ENTRIES 256u

static uint64_t seed;
static uint16_t port = EMU_UDP_PORT;
static bool in_netns = true;	/* false: on the host's lo, maybe not root */
/* the daemon's loop here: io_uring unless the host report says it is refused or masked */
static enum emu_loop_kind loop_kind = EMU_LOOP_URING;
static bool no_gso, no_gro;	/* peer_open: cfg.no_gso, cfg.no_gro */

struct peer {
	struct emu_loop loop;
	struct emu_udp *u;
	struct nic_gid gid;
	uint16_t port;
	const struct peer *from;	/* who sends to this peer */
	uint32_t next;			/* next sequence number expected */
	unsigned bad;
	bool count_only;		/* take any datagram: count it */
	struct roce_icrc_ids ids;	/* checking the ICRC of segments (Identification k) */
	uint16_t ids_seen[COUNT];	/* the Identification each datagram was sealed for */
};

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Sizes: the RoCE extremes (8 bytes, a full 4096-byte payload with headers, the largest
 * datagram received whole) and random ones in between. */
static size_t size_of(uint32_t seq)
{
	struct t_rng r = { seed ^ (seq * 0x9E3779B97F4A7C15ull) };

	switch (seq % 16) {
	case 0: return 8;
	case 1: return 4096 + 12 + 16 + 4;
	case 2: return EMU_UDP_MAX_DATAGRAM;
	default: return 8 + t_below(&r, 4200 - 8);
	}
}

/* seq, len, then bytes only seq determines. */
static void fill(uint8_t *buf, uint32_t seq, size_t len)
{
	struct t_rng r = { seed + seq };

	put32(buf, seq);
	put32(buf + 4, (uint32_t)len);
	t_fill(&r, buf + 8, len - 8);
}

/* Datagrams of 16 bytes or more carry an ICRC over the flow, as RoCE packets do, so the
 * sender's segmentation offload re-seals them (udp_tx.c) and the receiver checks that. */
static void flows(const struct peer *from, const struct peer *to, struct roce_flow4 *f4,
		  struct roce_flow6 *f6)
{
	*f4 = (struct roce_flow4){ .sport = from->port, .dport = to->port };
	memcpy(&f4->saddr, from->gid.raw + 12, 4);
	memcpy(&f4->daddr, to->gid.raw + 12, 4);
	*f6 = (struct roce_flow6){ .sport = from->port, .dport = to->port };
	memcpy(f6->saddr, from->gid.raw, 16);
	memcpy(f6->daddr, to->gid.raw, 16);
}

static void seal_for(const struct peer *from, const struct peer *to, uint8_t *buf, size_t len)
{
	struct roce_flow4 f4;
	struct roce_flow6 f6;

	flows(from, to, &f4, &f6);
	if (nic_gid_is_v4(&to->gid))
		roce_icrc4_seal(&f4, buf, len);
	else
		roce_icrc6_seal(&f6, buf, len);
}

static bool sealed_ok(struct peer *to, const uint8_t *pkt, size_t len, uint16_t *id)
{
	struct roce_flow4 f4;
	struct roce_flow6 f6;

	*id = 0;
	if (len < 16)
		return true;
	flows(to->from, to, &f4, &f6);
	if (nic_gid_is_v4(&to->gid))
		return roce_icrc4_ok_any_id(&to->ids, &f4, pkt, len, id);
	return roce_icrc6_ok(&f6, pkt, len);
}

static void on_rx(void *arg, const uint8_t *pkt, size_t len, const struct nic_gid *src,
		  uint16_t sport)
{
	uint16_t id;
	static uint8_t want[EMU_UDP_MAX_DATAGRAM];
	struct peer *p = arg;
	bool ok;

	if (p->count_only) {
		if (!sealed_ok(p, pkt, len, &id) && p->bad++ < 5)
			T_CHECK(0, "peer %u: datagram %u: ICRC wrong", p->port, p->next);
		p->ids_seen[p->next % COUNT] = id;
		p->next++;
		return;
	}
	ok = len >= 8 && get32(pkt) == p->next && len == size_of(p->next) &&
	     sealed_ok(p, pkt, len, &id);
	if (ok) {
		fill(want, p->next, len);
		ok = !memcmp(want, pkt, len < 16 ? len : len - 4);
		p->ids_seen[p->next % COUNT] = id;
	}
	ok = ok && !memcmp(src, &p->from->gid, sizeof(*src)) && sport == p->from->port;
	if (!ok && p->bad++ < 5)
		T_CHECK(0, "peer %u: datagram %u (len %zu, seq %u, sport %u) is wrong", p->port,
			p->next, len, len >= 4 ? get32(pkt) : 0, sport);
	p->next++;
}

static int peer_open(struct peer *p, struct nic_gid gid, uint16_t pt, bool fallback,
		     char *err, size_t errlen)
{
	struct emu_udp_config c = { .local = gid, .port = pt, .force_fallback = fallback,
		.no_gso = no_gso, .no_gro = no_gro, .deliver = on_rx, .deliver_arg = p };
	int rc;

	memset(p, 0, sizeof(*p));
	roce_icrc_ids_init(&p->ids);
	p->gid = gid;
	p->port = pt;
	rc = emu_loop_init(&p->loop, LOOP_ENTRIES, loop_kind);
	if (rc)
		return rc;
	rc = emu_udp_open(&p->loop, &c, &p->u, err, errlen);
	if (rc)
		emu_loop_fini(&p->loop);
	return rc;
}

static void peer_close(struct peer *p)
{
	emu_udp_close(p->u);
	emu_loop_fini(&p->loop);
}

static bool pair_open(struct peer *a, struct peer *b, bool fallback)
{
	char err[256] = "";

	if (peer_open(a, nic_gid_from_v4(0x7f000001), port, fallback, err, sizeof(err)) ||
	    peer_open(b, nic_gid_from_v4(0x7f000002), port, fallback, err, sizeof(err))) {
		T_CHECK(0, "open: %s", err);
		return false;
	}
	a->from = b;
	b->from = a;
	return true;
}

static void send_seq(struct peer *from, const struct peer *to, uint32_t seq)
{
	static uint8_t buf[EMU_UDP_MAX_DATAGRAM];
	size_t len = size_of(seq);

	fill(buf, seq, len);
	if (len >= 16)
		seal_for(from, to, buf, len);
	emu_udp_send(from->u, &to->gid, to->port, buf, len);
}

/* Run both loops until each peer got `count` datagrams or 20 s passed. */
static void run_until(struct peer *a, struct peer *b, uint32_t count)
{
	uint64_t end = emu_now_ns() + 20000000000ull;

	while ((a->next < count || b->next < count) && emu_now_ns() < end) {
		emu_loop_run_once(&a->loop, emu_now_ns() + 1000000);
		emu_loop_run_once(&b->loop, emu_now_ns());
	}
}

/* Both directions at once, COUNT each, at most WINDOW in flight per direction. */
static void exchange(struct peer *a, struct peer *b)
{
	uint32_t sa = 0, sb = 0;
	uint64_t end = emu_now_ns() + 20000000000ull;

	while ((a->next < COUNT || b->next < COUNT) && emu_now_ns() < end) {
		while (sa < COUNT && sa - b->next < WINDOW)
			send_seq(a, b, sa++);
		while (sb < COUNT && sb - a->next < WINDOW)
			send_seq(b, a, sb++);
		emu_udp_flush(a->u);
		emu_udp_flush(b->u);
		emu_loop_run_once(&a->loop, emu_now_ns());
		emu_loop_run_once(&b->loop, emu_now_ns() + 1000000);
	}
	T_EQ(b->next, COUNT, "a → b delivered");
	T_EQ(a->next, COUNT, "b → a delivered");
}

static void check_stats(const struct peer *p, uint32_t sent)
{
	struct emu_udp_stats s;

	emu_udp_stats(p->u, &s);
	T_EQ(s.tx_pkts, sent, "tx_pkts");
	T_EQ(s.rx_pkts, p->next, "rx_pkts");
	T_EQ(s.tx_errors + s.rx_errors + s.rx_truncated, 0, "no errors");
}

static void test_exchange(bool fallback)
{
	struct peer a, b;

	if (!pair_open(&a, &b, fallback))
		return;
	printf("exchange: rx path %s / %s\n", emu_udp_rx_path(a.u), emu_udp_rx_path(b.u));
	if (fallback)
		T_CHECK(strstr(emu_udp_rx_path(a.u), "fallback"), "forced fallback");
	else if (!strstr(emu_udp_rx_path(a.u), "multishot"))
		printf("note: this kernel has no multishot recvmsg; both runs use the fallback\n");
	exchange(&a, &b);
	check_stats(&a, COUNT);
	check_stats(&b, COUNT);
	peer_close(&a);
	peer_close(&b);
}

/* More datagrams than the ring has buffers, sent before the receiver runs: the multishot
 * request ends with -ENOBUFS and is re-armed; the fallback's budget runs out and kicks.
 * Without GSO and GRO, so each datagram takes a buffer of its own. */
static void test_burst(bool fallback)
{
	struct peer a, b;
	struct emu_udp_stats s;
	uint8_t buf[512];
	const uint32_t n = 600;
	uint64_t end = emu_now_ns() + 10000000000ull;

	no_gso = no_gro = true;
	if (!pair_open(&a, &b, fallback)) {
		no_gso = no_gro = false;
		return;
	}
	no_gso = no_gro = false;
	memset(buf, 0, sizeof(buf));
	for (uint32_t i = 0; i < n; i++) {
		put32(buf, i);
		seal_for(&a, &b, buf, sizeof(buf));
		emu_udp_send(a.u, &b.gid, b.port, buf, sizeof(buf));
	}
	emu_udp_flush(a.u);
	emu_udp_stats(a.u, &s);
	T_EQ(s.tx_pkts, n, "burst sent");
	b.count_only = true;
	while (b.next < n && emu_now_ns() < end)
		emu_loop_run_once(&b.loop, emu_now_ns() + 1000000);
	T_EQ(b.next, n, "burst delivered");
	emu_udp_stats(b.u, &s);
	if (strstr(emu_udp_rx_path(b.u), "multishot"))
		T_CHECK(s.rx_rearms > 0, "ring ran dry and was re-armed");
	peer_close(&a);
	peer_close(&b);
}

static void test_oversize(void)
{
	struct peer a, b;
	struct emu_udp_stats s;
	static uint8_t big[70000];
	uint64_t end = emu_now_ns() + 5000000000ull;

	if (!pair_open(&a, &b, false))
		return;
	send_seq(&a, &b, 0);
	/* Larger than any IPv4 datagram: EMSGSIZE from sendto, in order after seq 0. */
	emu_udp_send(a.u, &b.gid, b.port, big, sizeof(big));
	send_seq(&a, &b, 1);
	emu_udp_flush(a.u);
	/* The wrong family for this socket: dropped and counted. */
	emu_udp_send(a.u, (struct nic_gid[]){ { { 0xfd, 0, [15] = 1 } } }, 0, big, 100);
	while (b.next < 2 && emu_now_ns() < end)
		emu_loop_run_once(&b.loop, emu_now_ns() + 1000000);
	emu_udp_stats(a.u, &s);
	T_EQ(s.tx_err_emsgsize, 1, "EMSGSIZE counted");
	T_EQ(s.tx_errors, 2, "both drops counted");
	T_EQ(s.tx_pkts, 2, "the others sent");
	T_EQ(b.next, 2, "the others delivered");
	peer_close(&a);
	peer_close(&b);
}

/* A datagram longer than EMU_UDP_MAX_DATAGRAM (fits lo's MTU, so it is sent) arrives
 * truncated: counted, not delivered; the next one is fine. */
static void test_truncated(bool fallback)
{
	struct peer a, b;
	struct emu_udp_stats s;
	static uint8_t big[EMU_UDP_MAX_DATAGRAM + 500];
	uint64_t end = emu_now_ns() + 5000000000ull;

	if (!pair_open(&a, &b, fallback))
		return;
	emu_udp_send(a.u, &b.gid, b.port, big, sizeof(big));
	send_seq(&a, &b, 0);
	emu_udp_flush(a.u);
	do {
		emu_loop_run_once(&b.loop, emu_now_ns() + 1000000);
		emu_udp_stats(b.u, &s);
	} while ((b.next < 1 || !s.rx_truncated) && emu_now_ns() < end);
	T_EQ(s.rx_truncated, 1, "truncated datagram counted");
	T_EQ(b.next, 1, "the next one delivered");
	T_EQ(s.rx_pkts, 1, "only it");
	peer_close(&a);
	peer_close(&b);
}

/* What the ICRC assumes of IPv4 (REFERENCE.md): DF set and IP ID 0 on every datagram sent
 * on its own (no_gso; test_gso covers the segments' Identifications). Read back from lo
 * with a packet socket (root, so only in the private namespace). */
static void test_df_id0(void)
{
	struct peer a, b;
	uint8_t frame[EMU_UDP_MAX_DATAGRAM + 64];
	unsigned seen = 0;
	uint64_t end = emu_now_ns() + 2000000000ull;
	int ps = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK, htons(ETH_P_IP));

	if (ps < 0) {
		printf("df-id0: skipped (no packet socket: %s)\n", strerror(errno));
		return;
	}
	no_gso = true;
	if (!pair_open(&a, &b, false)) {
		no_gso = false;
		close(ps);
		return;
	}
	no_gso = false;
	for (uint32_t i = 0; i < 4; i++)
		send_seq(&a, &b, i);
	emu_udp_flush(a.u);
	while (seen < 4 && emu_now_ns() < end) {
		struct pollfd p = { .fd = ps, .events = POLLIN };
		ssize_t n;
		const struct iphdr *ip = (const struct iphdr *)frame;
		const struct udphdr *udp;

		if (poll(&p, 1, 10) <= 0 || (n = recv(ps, frame, sizeof(frame), 0)) < 28)
			continue;
		udp = (const struct udphdr *)(frame + ip->ihl * 4);
		if (ip->protocol != IPPROTO_UDP || ntohs(udp->dest) != b.port ||
		    ntohs(udp->source) != a.port)
			continue;
		T_EQ(ntohs(ip->frag_off), 0x4000, "DF set, no fragment");
		T_EQ(ip->id, 0, "IP ID 0");
		seen++;
	}
	T_CHECK(seen >= 4, "saw our datagrams on lo (%u)", seen);
	close(ps);
	peer_close(&a);
	peer_close(&b);
}

static void test_in_use(void)
{
	struct peer a, c;
	char err[256] = "", want[64];

	if (peer_open(&a, nic_gid_from_v4(0x7f000001), port, false, err, sizeof(err))) {
		T_CHECK(0, "open: %s", err);
		return;
	}
	T_EQ(peer_open(&c, nic_gid_from_v4(0x7f000001), port, false, err, sizeof(err)),
	     -EADDRINUSE, "second socket on the same address:port");
	snprintf(want, sizeof(want), "127.0.0.1:%u is in use", port);
	T_CHECK(strstr(err, want) && strstr(err, "another odpemud"), "message: '%s'", err);
	peer_close(&a);
}

/* Completions of a closed socket still in its loop's CQ must never be dispatched (a
 * use-after-free under ASan before emu_loop_cancel forgot them). */
static void test_close_pending(bool fallback)
{
	struct peer a, b;
	uint64_t end = emu_now_ns() + 2000000000ull;

	if (!pair_open(&a, &b, fallback))
		return;
	emu_loop_run_once(&b.loop, 0);	/* submit b's receive request */
	for (uint32_t i = 0; i < 8; i++)
		send_seq(&a, &b, i);
	emu_udp_flush(a.u);
	/* the epoll loop: lo delivers within the sender's call, so b's socket is readable,
	 * in the set, not yet taken by a wait: the same case */
	while (loop_kind == EMU_LOOP_URING && !io_uring_cq_ready(&b.loop.ring) &&
	       emu_now_ns() < end)
		io_uring_get_events(&b.loop.ring);
	T_CHECK(loop_kind != EMU_LOOP_URING || io_uring_cq_ready(&b.loop.ring) > 0,
		"%s: completions queued before close", emu_udp_rx_path(b.u));
	emu_udp_close(b.u);
	b.u = NULL;
	T_CHECK(emu_loop_run_once(&b.loop, 0) >= 0, "run after close");
	/* and a cancellation's own completion never comes late */
	T_CHECK(emu_loop_run_once(&b.loop, emu_now_ns() + 20000000) >= 0, "wait after close");
	T_EQ(b.next, 0, "nothing delivered after close");
	peer_close(&a);
	emu_loop_fini(&b.loop);
}

static void test_ipv6(void)
{
	struct peer a, b;
	struct nic_gid one;
	char err[256] = "";
	uint32_t sa = 0;

	memset(&one, 0, sizeof(one));
	one.raw[15] = 1;
	if (peer_open(&a, one, port, false, err, sizeof(err))) {
		printf("ipv6: skipped (%s)\n", err);
		return;
	}
	T_EQ(peer_open(&b, one, (uint16_t)(port + 1), false, err, sizeof(err)), 0, "open [::1]");
	a.from = &b;
	b.from = &a;
	T_CHECK(!strcmp(emu_udp_name(a.u), "[::1]:4791") || port != EMU_UDP_PORT, "name %s",
		emu_udp_name(a.u));
	while (sa < 100) {
		send_seq(&a, &b, sa);
		send_seq(&b, &a, sa++);
		emu_udp_flush(a.u);
		emu_udp_flush(b.u);
		run_until(&a, &b, sa);
	}
	T_EQ(a.next + b.next, 200, "IPv6 both ways");
	peer_close(&a);
	peer_close(&b);
}

/* One flush of 40 datagrams of 1000 bytes and a last one of 500: one UDP_SEGMENT send
 * (the kernel lets the last segment be short) whose segments' IPv4 Identification is their
 * index, which their ICRCs were re-sealed for. With GRO the receiver takes the send whole
 * and cuts it (one coalesced buffer); without, the kernel cuts it. With no_gso: 41 sends,
 * each sealed for 0. */
static void test_gso(bool gso_off, bool gro_off, bool fallback)
{
	struct peer a, b;
	struct emu_udp_stats s;
	static uint8_t buf[1000];
	const uint32_t n = 41;
	uint64_t end = emu_now_ns() + 10000000000ull;
	unsigned wrong = 0;

	no_gso = gso_off;
	no_gro = gro_off;
	if (!pair_open(&a, &b, fallback)) {
		no_gso = no_gro = false;
		return;
	}
	no_gso = no_gro = false;
	T_CHECK(emu_udp_gso(a.u) == !gso_off, "GSO %s", gso_off ? "off" : "on");
	T_CHECK(emu_udp_gro(b.u) == !gro_off, "GRO %s", gro_off ? "off" : "on");
	for (uint32_t i = 0; i < n; i++) {
		size_t len = i + 1 < n ? sizeof(buf) : 500;

		memset(buf, (int)i, len);
		put32(buf, i);
		seal_for(&a, &b, buf, len);
		emu_udp_send(a.u, &b.gid, b.port, buf, len);
	}
	emu_udp_flush(a.u);
	emu_udp_stats(a.u, &s);
	T_EQ(s.tx_pkts, n, "segments sent");
	T_EQ(s.tx_gso_sends, gso_off ? 0 : 1, "one UDP_SEGMENT send");
	b.count_only = true;
	while (b.next < n && emu_now_ns() < end)
		emu_loop_run_once(&b.loop, emu_now_ns() + 1000000);
	T_EQ(b.next, n, "segments delivered");
	emu_udp_stats(b.u, &s);
	T_EQ(s.rx_pkts, n, "segments received");
	T_CHECK(gso_off || gro_off ? s.rx_gro_bufs == 0 : s.rx_gro_bufs >= 1,
		"coalesced receives: %" PRIu64, s.rx_gro_bufs);
	for (uint32_t i = 0; i < n && i < COUNT; i++)
		wrong += b.ids_seen[i] != (gso_off ? 0 : i);
	T_EQ(wrong, 0, "each segment's ICRC is for the Identification the kernel gave it");
	peer_close(&a);
	peer_close(&b);
}

static int udp_body(void)
{
	test_gso(false, false, false);	/* GSO, GRO on multishot */
	test_gso(false, false, true);	/* GSO, GRO on the recvmmsg fallback */
	test_gso(false, true, false);	/* GSO, the kernel cuts at the receiver */
	test_gso(true, false, false);	/* no GSO: nothing to coalesce */
	test_exchange(false);
	test_exchange(true);
	test_burst(false);
	test_burst(true);
	test_oversize();
	test_truncated(false);
	test_truncated(true);
	test_in_use();
	if (in_netns)
		test_df_id0();
	test_close_pending(false);
	test_close_pending(true);
	test_ipv6();
	return t_done("udp");
}

/* lo at MTU 1500: a 2000-byte datagram with DF must fail with EMSGSIZE in the batch. */
static int mtu_body(void)
{
	struct peer a, b;
	struct emu_udp_stats s;
	static uint8_t buf[2000];

	if (t_link_set("lo", 1, 1500) || !pair_open(&a, &b, false))
		return 1;
	put32(buf, 0);
	emu_udp_send(a.u, &b.gid, b.port, buf, sizeof(buf));
	emu_udp_flush(a.u);
	emu_udp_stats(a.u, &s);
	T_EQ(s.tx_err_emsgsize, 1, "DF datagram over the MTU");
	T_EQ(s.tx_pkts, 0, "not sent");
	peer_close(&a);
	peer_close(&b);
	return t_done("udp-mtu");
}

int main(int argc, char **argv)
{
	int rc;

	char why[512];

	seed = t_seed(argc, argv, 7);
	if ((loop_kind = t_loop_kind(why, sizeof(why))) == EMU_LOOP_EPOLL)
		printf("the epoll loop, as odpemud here: %s\n", why);
	rc = t_in_netns("udp (private netns)", udp_body, 120);
	if (rc == T_SKIP) {
		/* No namespace: the host's lo, a port unlikely to be taken. */
		port = (uint16_t)(20000 + getpid() % 20000);
		in_netns = false;
		return udp_body();
	}
	T_CHECK(rc == 0, "udp child failed (%d)", rc);
	rc = t_in_netns("udp-mtu (private netns)", mtu_body, 60);
	T_CHECK(rc == 0 || rc == T_SKIP, "mtu child failed (%d)", rc);
	return t_done("udp-main");
}
