/* SPDX-License-Identifier: MIT */
/*
 * sec-rkey-flood — remote keys guessed over UDP reach no client's memory.
 *
 * Host 1's daemon serves a victim (this process) and a bystander (a child process). The
 * victim has canary memory, each region filled with its own seeded pattern:
 *   pin_rw     2 MiB pinned, PD 1, REMOTE_WRITE|READ|ATOMIC: the only memory the victim's
 *              QPs may reach, so the attacker aims only outside it (below it, across its
 *              end, wrapped around 2^64)
 *   pin_local  2 MiB pinned, PD 1, local access only
 *   odp_local  2 MiB explicit ODP, PD 1, local access only
 *   odp_pd2    2 MiB explicit ODP, PD 2, REMOTE_WRITE|READ|ATOMIC (another PD)
 *   implicit   implicit ODP (all of the address space), PD 1, local access only
 *   unreg      1 MiB registered nowhere
 * and QPS RC QPs in PD 1 (half with the rnr fault policy, half stall), at RTR with path
 * MTU 256, connected to the attacker. The bystander (bystander.h) has its own canary
 * memory, remote-writable and local-only, and WRITEs and READs back over an RC pair with
 * host 0 all along.
 *
 * The attacker is the strongest there is: the victim QPs' peer on the wire (another
 * address of host 0, the daemons' UDP port), told every QPN, every expected PSN and every
 * key and address above. It builds packets with proto/ (valid ICRC) and sends them with a
 * plain UDP socket: RDMA WRITE ONLY and FIRST, READ REQUEST and atomics, with random keys
 * and addresses, brute-forced keys (slot << 8 | variant) and the real keys of memory the
 * QP must not reach. Each round, per victim QP: AHEAD packets with PSNs ahead of the
 * expected one (the responder drops them, NAKs the gap once, and under the rnr policy
 * still looks the key up to fault ahead), one at the expected PSN (the key check: NAK
 * remote access error, QP to error: IBA 9.7.5.1.3, 10.6.3.2), DEAD more to the QP in error;
 * plus RANDOM packets to random QP numbers (half near the victims'). Then the victim
 * re-arms its QPs (RESET, INIT, RTR at a new random PSN) for the next round.
 *
 * Asserted: every packet sent is counted once — device drops (drop_no_qp,
 * drop_src_mismatch, drop_parse, drop_qp_state, and the victim QPs' drop_seq_err_silent,
 * which the device counts too) + remote access NAKs — exactly, per round and in total; the NAKs the victim QPs sent
 * (their pkts_sent, seq_naks_sent) are the NAKs the attacker received; every packet it
 * receives is a PSN sequence or remote access NAK, nothing else (no READ response, no
 * ACK); one QP_ACCESS_ERR event per NAKed request; every canary byte unchanged; the ODP
 * MRs never faulted nor prefetched; the bystander's WRITE+READ-back loop made progress
 * through the flood with every byte right.
 *
 * --packets N (default 10^6), --quick (10^5), --seed S.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bystander.h"
#include "harness.h"
#include "roce.h"
#include "t.h"

#define QPS		32
#define AHEAD		4	/* per QP and round: PSN ahead of the expected one */
#define DEAD		1	/* per QP and round: after the one that errors it */
#define RANDOM		16	/* per round: to random QP numbers */
#define PER_ROUND	(QPS * (AHEAD + 1 + DEAD) + RANDOM)
#define PMTU		256	/* the victim QPs' path MTU: WRITE FIRST carries 256 B */
#define FAKE_QPN	0xABCDEu	/* the attacker's "QP": where the NAKs are addressed */
#define MIB		(1u << 20)
#define PKT_MAX		512
#define ROUND_WAIT_MS	5000

static unsigned long long packets_wanted = 1000000;

/* ---- memory ---- */

struct region {
	const char *name;
	uint8_t *buf;		/* NULL: implicit (no buffer of its own) */
	size_t len;
	uint64_t seed;		/* of its pattern */
	struct odpemu_mr *mr;	/* NULL: not registered */
};

enum { R_PIN_RW, R_PIN_LOCAL, R_ODP_LOCAL, R_ODP_PD2, R_IMPLICIT, R_UNREG, R_COUNT };

static void pattern(uint64_t seed, uint8_t *buf, size_t len)
{
	struct t_rng r = { seed };

	t_fill(&r, buf, len);
}

/* Bytes of buf[0..len) that differ from the pattern of seed. */
static size_t pattern_diff(uint64_t seed, const uint8_t *buf, size_t len)
{
	uint8_t *want = malloc(len);
	size_t bad = 0;

	if (!want)
		return len;
	pattern(seed, want, len);
	if (memcmp(want, buf, len))
		for (size_t i = 0; i < len; i++)
			bad += want[i] != buf[i];
	free(want);
	return bad;
}

/* ---- the attacker ---- */

struct attacker {
	int fd;
	struct sockaddr_in self, daemon;
	struct roce_flow4 flow;		/* attacker -> daemon b */
	struct roce_flow4 back;		/* daemon b -> attacker */
	struct roce_icrc_ids ids;
	struct t_rng rng;
	/* what it knows */
	uint32_t qpn[QPS], epsn[QPS];
	uint32_t qpn_lo, qpn_hi;
	struct { uint64_t va, len; uint32_t key; } allowed;	/* pin_rw: never inside */
	struct { uint64_t va, len; uint32_t key; } forbidden[8];
	unsigned nforbidden;
	/* what it saw */
	uint64_t sent, seq_naks, access_naks, other_rx, bad_icrc;
	uint64_t real_key;	/* requests that carried the key of an existing MR */
};

static bool attacker_up(struct h_env *e, struct attacker *a)
{
	char addr[64];

	h_extra_addr(e, 0, addr, sizeof(addr));
	a->self = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)e->port) };
	a->daemon = a->self;
	inet_pton(AF_INET, addr, &a->self.sin_addr);
	inet_pton(AF_INET, e->host[1].addr, &a->daemon.sin_addr);
	a->fd = h_socket_in(e, 0, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK);
	T_CHECK(a->fd >= 0, "attacker socket: %s", strerror(-a->fd));
	if (a->fd < 0)
		return false;
	/* DF, as the daemons send: the ICRC covers the flags (Identification 0) */
	setsockopt(a->fd, IPPROTO_IP, IP_MTU_DISCOVER, &(int){ IP_PMTUDISC_DO }, sizeof(int));
	setsockopt(a->fd, SOL_SOCKET, SO_RCVBUF, &(int){ 4 << 20 }, sizeof(int));
	T_CHECK(!bind(a->fd, (struct sockaddr *)&a->self, sizeof(a->self)), "bind %s:%u: %s",
		addr, e->port, strerror(errno));
	a->flow = (struct roce_flow4){ a->self.sin_addr.s_addr, a->daemon.sin_addr.s_addr,
		(uint16_t)e->port, (uint16_t)e->port };
	a->back = (struct roce_flow4){ a->daemon.sin_addr.s_addr, a->self.sin_addr.s_addr,
		(uint16_t)e->port, (uint16_t)e->port };
	roce_icrc_ids_init(&a->ids);
	return true;
}

/* Would this request be allowed? Only inside pin_rw with its key: never drawn. */
static bool legal(const struct attacker *a, uint32_t key, uint64_t va, uint64_t len)
{
	return key == a->allowed.key && va >= a->allowed.va && va + len >= va &&
	       va + len <= a->allowed.va + a->allowed.len;
}

/* A key and an address the QP must refuse, for a request of len bytes (an atomic's
 * address 8-byte aligned: a misaligned one would be dropped unparsed). */
static void draw_target(struct attacker *a, uint64_t len, bool align8, uint32_t *key,
			uint64_t *va)
{
	struct t_rng *r = &a->rng;
	unsigned k = (unsigned)t_below(r, a->nforbidden);
	uint64_t in = a->forbidden[k].len > len ? t_below(r, a->forbidden[k].len - len + 1) : 0;

	do {
		switch (t_below(r, 20)) {
		case 0: case 1: case 2: case 3: case 4:		/* anything */
			*key = (uint32_t)t_rand(r);
			*va = t_rand(r);
			break;
		case 5: case 6: case 7: case 8: case 9:		/* brute force, aimed */
			*key = (uint32_t)(t_below(r, 256) << 8 | t_below(r, 256));
			*va = a->forbidden[k].va + in;
			break;
		case 10: case 11: case 12: case 13: case 14: case 15:	/* real keys, aimed */
			*key = a->forbidden[t_below(r, a->nforbidden)].key;
			*va = a->forbidden[k].va + in;
			break;
		default: {					/* the QP's own MR, outside */
			uint64_t lo = a->allowed.va, hi = lo + a->allowed.len;

			*key = a->allowed.key;
			switch (t_below(r, 4)) {
			case 0: *va = lo - 1 - t_below(r, 1u << 20); break;	/* below */
			case 1: *va = hi - 1 - t_below(r, len > 1 ? len - 1 : 1); break; /* across */
			case 2: *va = UINT64_MAX - t_below(r, len);  break;	/* wraps */
			default: *va = hi + t_below(r, 1u << 20); break;	/* above */
			}
		}
		}
		if (align8)
			*va &= ~7ull;
	} while (legal(a, *key, *va, len));
	if (*key == a->allowed.key)
		a->real_key++;
	for (unsigned i = 0; i < a->nforbidden; i++)
		if (*key == a->forbidden[i].key) {
			a->real_key++;
			break;
		}
}

/* One attack packet for QP qpn at psn into pkt; its length. */
static size_t build(struct attacker *a, uint8_t *pkt, uint32_t qpn, uint32_t psn)
{
	static const uint8_t ops[] = { ROCE_OP_RC_RDMA_WRITE_ONLY, ROCE_OP_RC_RDMA_WRITE_ONLY,
		ROCE_OP_RC_RDMA_WRITE_ONLY, ROCE_OP_RC_RDMA_WRITE_FIRST, ROCE_OP_RC_RDMA_WRITE_FIRST,
		ROCE_OP_RC_RDMA_READ_REQUEST, ROCE_OP_RC_RDMA_READ_REQUEST,
		ROCE_OP_RC_RDMA_READ_REQUEST, ROCE_OP_RC_COMPARE_SWAP, ROCE_OP_RC_FETCH_ADD };
	struct t_rng *r = &a->rng;
	struct roce_hdr h = { 0 };
	uint8_t payload[PMTU];
	uint32_t plen = 0;
	uint64_t len;
	long n;

	h.bth = (struct roce_bth){ .opcode = ops[t_below(r, sizeof(ops))],
		.pkey = ROCE_DEFAULT_PKEY, .dqpn = qpn, .psn = psn & ROCE_PSN_MASK,
		.ackreq = t_below(r, 2) };
	switch (h.bth.opcode) {
	case ROCE_OP_RC_RDMA_WRITE_ONLY:
		len = plen = 1 + (uint32_t)t_below(r, PMTU);
		break;
	case ROCE_OP_RC_RDMA_WRITE_FIRST:
		plen = PMTU;
		len = PMTU + 1 + t_below(r, ROCE_RETH_MAX_LEN - PMTU);
		break;
	case ROCE_OP_RC_RDMA_READ_REQUEST:
		len = 1 + t_below(r, ROCE_RETH_MAX_LEN);
		break;
	default:
		len = 8;
	}
	if (h.bth.opcode == ROCE_OP_RC_COMPARE_SWAP || h.bth.opcode == ROCE_OP_RC_FETCH_ADD) {
		draw_target(a, 8, true, &h.atmeth.rkey, &h.atmeth.va);
		h.atmeth.swap_add = 0x5A5A5A5A5A5A5A5Aull;
		h.atmeth.compare = t_rand(r);
	} else {
		draw_target(a, len, false, &h.reth.rkey, &h.reth.va);
		h.reth.len = (uint32_t)len;
	}
	memset(payload, 0xE7, plen);	/* poison: no canary pattern holds a run of it */
	n = roce_build(pkt, PKT_MAX, &h, payload, plen);
	if (n <= 0)
		return 0;
	roce_icrc4_seal(&a->flow, pkt, (size_t)n);
	return (size_t)n;
}

/* A QP number that is none of the victim's, nor QP 0 or 1; half near the victim's. */
static uint32_t random_qpn(struct attacker *a)
{
	for (;;) {
		uint32_t q = t_below(&a->rng, 2) ?
			     (uint32_t)t_below(&a->rng, ROCE_QPN_MASK + 1) :
			     a->qpn_lo - 64 + (uint32_t)t_below(&a->rng, a->qpn_hi - a->qpn_lo + 129);
		bool victim = false;

		for (int i = 0; i < QPS; i++)
			victim |= a->qpn[i] == (q & ROCE_QPN_MASK);
		if (!victim && (q & ROCE_QPN_MASK) > 1)
			return q & ROCE_QPN_MASK;
	}
}

static void send_all(struct attacker *a, uint8_t (*pkts)[PKT_MAX], const size_t *lens, unsigned n)
{
	for (unsigned i = 0; i < n; ) {
		struct mmsghdr m[64];
		struct iovec iov[64];
		unsigned k = n - i < 64 ? n - i : 64;
		int sent;

		for (unsigned j = 0; j < k; j++) {
			iov[j] = (struct iovec){ pkts[i + j], lens[i + j] };
			m[j] = (struct mmsghdr){ .msg_hdr = { .msg_name = &a->daemon,
				.msg_namelen = sizeof(a->daemon), .msg_iov = &iov[j], .msg_iovlen = 1 } };
		}
		sent = sendmmsg(a->fd, m, k, 0);
		if (sent < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
			poll(&(struct pollfd){ a->fd, POLLOUT, 0 }, 1, 10);
			continue;
		}
		T_CHECK(sent > 0, "sendmmsg: %s", strerror(errno));
		if (sent <= 0)
			return;
		i += (unsigned)sent;
		a->sent += (uint64_t)sent;
	}
}

/* Read what came back: NAKs sorted by code, anything else counted as other. */
static void receive(struct attacker *a)
{
	uint8_t buf[2048];
	ssize_t n;

	while ((n = recv(a->fd, buf, sizeof(buf), 0)) > 0) {
		struct roce_pkt p;
		uint16_t id;

		if (!roce_icrc4_ok_any_id(&a->ids, &a->back, buf, (size_t)n, &id)) {
			a->bad_icrc++;
			continue;
		}
		if (roce_parse(buf, (size_t)n, PMTU, &p) != ROCE_R_OK ||
		    p.h.bth.opcode != ROCE_OP_RC_ACKNOWLEDGE ||
		    roce_syndrome_type(p.h.aeth.syndrome) != ROCE_AETH_NAK || p.h.bth.dqpn != FAKE_QPN)
			a->other_rx++;
		else if (roce_syndrome_value(p.h.aeth.syndrome) == ROCE_NAK_PSN_SEQ_ERR)
			a->seq_naks++;
		else if (roce_syndrome_value(p.h.aeth.syndrome) == ROCE_NAK_REMOTE_ACCESS)
			a->access_naks++;
		else
			a->other_rx++;
	}
}

/* ---- the victim ---- */

struct victim {
	struct odpemu_context *ctx;
	struct odpemu_pd *pd, *pd2;
	struct odpemu_cq *cq;
	struct odpemu_qp *qp[QPS];
	union odpemu_gid peer;
	struct region reg[R_COUNT];
	uint64_t events, other_events;
};

static int arm(struct victim *v, int i, uint32_t psn)
{
	struct odpemu_qp_attr a = { .qp_state = ODPEMU_QPS_RESET };

	if (v->qp[i]->state != ODPEMU_QPS_RESET && odpemu_modify_qp(v->qp[i], &a, ODPEMU_QP_STATE))
		return -1;
	a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_INIT, .port_num = 1,
		.qp_access_flags = ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ |
				   ODPEMU_ACCESS_REMOTE_ATOMIC };
	if (odpemu_modify_qp(v->qp[i], &a, ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT |
			     ODPEMU_QP_ACCESS_FLAGS))
		return -1;
	a = (struct odpemu_qp_attr){ .qp_state = ODPEMU_QPS_RTR, .path_mtu = ODPEMU_MTU_256,
		.dest_qp_num = FAKE_QPN, .rq_psn = psn, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 1, .ah_attr = { .is_global = 1, .port_num = 1,
		.grh = { .dgid = v->peer, .hop_limit = 64 } } };
	return odpemu_modify_qp(v->qp[i], &a, ODPEMU_QP_STATE | ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU |
				ODPEMU_QP_DEST_QPN | ODPEMU_QP_RQ_PSN |
				ODPEMU_QP_MAX_DEST_RD_ATOMIC | ODPEMU_QP_MIN_RNR_TIMER) ? -1 : 0;
}

static void take_events(struct victim *v)
{
	struct odpemu_async_event ev;

	while (!odpemu_get_async_event(v->ctx, &ev)) {
		if (ev.event_type == ODPEMU_EVENT_QP_ACCESS_ERR)
			v->events++;
		else if (ev.event_type == ODPEMU_EVENT_GID_CHANGE)
			;	/* the port's addresses settling (IPv6 link-local): not ours */
		else if (++v->other_events < 5)
			printf("victim: unexpected event %s\n", odpemu_event_type_str(ev.event_type));
		odpemu_ack_async_event(&ev);
	}
}

static bool victim_up(struct h_env *e, struct victim *v, const char *peer_addr)
{
	static const struct { const char *name; size_t len; int pd2; int access; } spec[] = {
		[R_PIN_RW] = { "pin_rw", 2 * MIB, 0, ODPEMU_ACCESS_LOCAL_WRITE |
			ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ |
			ODPEMU_ACCESS_REMOTE_ATOMIC },
		[R_PIN_LOCAL] = { "pin_local", 2 * MIB, 0, ODPEMU_ACCESS_LOCAL_WRITE },
		[R_ODP_LOCAL] = { "odp_local", 2 * MIB, 0, ODPEMU_ACCESS_LOCAL_WRITE |
			ODPEMU_ACCESS_ON_DEMAND },
		[R_ODP_PD2] = { "odp_pd2", 2 * MIB, 1, ODPEMU_ACCESS_LOCAL_WRITE |
			ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ |
			ODPEMU_ACCESS_REMOTE_ATOMIC | ODPEMU_ACCESS_ON_DEMAND },
		[R_IMPLICIT] = { "implicit", 0, 0, ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_ON_DEMAND },
		[R_UNREG] = { "unreg", 1 * MIB, 0, -1 },
	};
	struct odpemu_qp_init_attr init = { .cap = { .max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1 }, .qp_type = ODPEMU_QPT_RC };
	int fl;

	v->ctx = h_open(e, 1);
	e->ctx[1] = v->ctx;	/* closed by h_main */
	fl = fcntl(v->ctx->async_fd, F_GETFL);
	fcntl(v->ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	if (h_gid_of(peer_addr, &v->peer) || !(v->pd = odpemu_alloc_pd(v->ctx)) ||
	    !(v->pd2 = odpemu_alloc_pd(v->ctx)) ||
	    !(v->cq = odpemu_create_cq(v->ctx, 16, NULL, NULL, 0))) {
		T_CHECK(0, "victim PD/CQ: %s", strerror(errno));
		return false;
	}
	for (int i = 0; i < R_COUNT; i++) {
		struct region *g = &v->reg[i];

		g->name = spec[i].name;
		g->len = spec[i].len;
		g->seed = 0xC0 + (uint64_t)i;
		if (g->len) {
			g->buf = h_cold(g->len);
			pattern(g->seed, g->buf, g->len);
		}
		if (spec[i].access < 0)
			continue;
		g->mr = odpemu_reg_mr(spec[i].pd2 ? v->pd2 : v->pd, g->buf, g->len ? g->len : SIZE_MAX,
				      spec[i].access);
		T_CHECK(g->mr, "register %s: %s", g->name, strerror(errno));
		if (!g->mr)
			return false;
	}
	init.send_cq = init.recv_cq = v->cq;
	for (int i = 0; i < QPS; i++) {
		init.fault_policy = i & 1 ? ODPEMU_FAULT_POLICY_STALL : ODPEMU_FAULT_POLICY_RNR;
		if (!(v->qp[i] = odpemu_create_qp(v->pd, &init))) {
			T_CHECK(0, "create QP %d: %s", i, strerror(errno));
			return false;
		}
	}
	return true;
}

/* What the attacker is told: QPNs, keys, addresses. */
static void brief(struct attacker *a, const struct victim *v, const struct bys_info *b)
{
	a->qpn_lo = UINT32_MAX;
	for (int i = 0; i < QPS; i++) {
		a->qpn[i] = v->qp[i]->qp_num;
		a->qpn_lo = a->qpn[i] < a->qpn_lo ? a->qpn[i] : a->qpn_lo;
		a->qpn_hi = a->qpn[i] > a->qpn_hi ? a->qpn[i] : a->qpn_hi;
	}
	a->allowed.va = (uint64_t)(uintptr_t)v->reg[R_PIN_RW].buf;
	a->allowed.len = v->reg[R_PIN_RW].len;
	a->allowed.key = v->reg[R_PIN_RW].mr->rkey;
	for (int i = R_PIN_LOCAL; i < R_COUNT; i++) {
		const struct region *g = &v->reg[i];

		if (i == R_IMPLICIT)
			continue;	/* its key goes with the others' addresses */
		a->forbidden[a->nforbidden].va = (uint64_t)(uintptr_t)g->buf;
		a->forbidden[a->nforbidden].len = g->len;
		a->forbidden[a->nforbidden++].key = g->mr ? g->mr->rkey : v->reg[R_IMPLICIT].mr->rkey;
	}
	for (const struct bys_mem *m = &b->rw; m <= &b->odp; m++) {
		a->forbidden[a->nforbidden].va = m->va;
		a->forbidden[a->nforbidden].len = m->len;
		a->forbidden[a->nforbidden++].key = m->rkey;
	}
}

/* ---- counting ---- */

/* The device's drops: every reason, the QPs' included. */
static uint64_t device_drops(struct odpemu_context *ctx)
{
	struct odpemu_counter c[512];
	int n = odpemu_query_counters(ctx, ODPEMU_COUNTERS_DEVICE, 0, c, 512);
	uint64_t sum = 0;

	for (int i = 0; i < n; i++)
		if (!strncmp(c[i].name, "drop_", 5))
			sum += c[i].value;
	return sum;
}

/* A counter summed over the victim's QPs. */
static uint64_t qp_sum(struct victim *v, const char *name)
{
	uint64_t sum = 0;

	for (int i = 0; i < QPS; i++)
		sum += h_counter(v->ctx, ODPEMU_COUNTERS_ANY_QP, v->qp[i]->qp_num, name);
	return sum;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

/* One round; false if its packets were not all accounted for in time. */
static bool round_once(struct attacker *a, struct victim *v, uint8_t (*pkts)[PKT_MAX],
		       size_t *lens, uint64_t *drops)
{
	uint64_t naks0 = a->seq_naks + a->access_naks, d;
	unsigned n = 0;
	long long end;

	for (int i = 0; i < QPS; i++) {
		a->epsn[i] = (uint32_t)t_below(&a->rng, ROCE_PSN_MASK + 1);
		if (arm(v, i, a->epsn[i])) {
			T_CHECK(0, "re-arm QP %u: %s", v->qp[i]->qp_num, strerror(errno));
			return false;
		}
	}
	for (int k = 0; k < RANDOM; k++, n++)
		lens[n] = build(a, pkts[n], random_qpn(a), (uint32_t)t_rand(&a->rng));
	for (int i = 0; i < QPS; i++) {
		for (int k = 0; k < AHEAD; k++, n++)	/* ahead by 1 .. 2^23 - 1 */
			lens[n] = build(a, pkts[n], a->qpn[i], a->epsn[i] + 1 +
					(uint32_t)t_below(&a->rng, (1u << 23) - 1));
		lens[n] = build(a, pkts[n], a->qpn[i], a->epsn[i]);
		n++;
		for (int k = 0; k < DEAD; k++, n++)
			lens[n] = build(a, pkts[n], a->qpn[i], (uint32_t)t_rand(&a->rng));
	}
	for (unsigned k = 0; k < n; k++)
		if (!lens[k]) {
			T_CHECK(0, "roce_build failed");
			return false;
		}
	send_all(a, pkts, lens, n);
	/* every QP: one sequence NAK for the gap, one access NAK; the rest dropped */
	end = now_ms() + ROUND_WAIT_MS;
	do {
		receive(a);
		d = device_drops(v->ctx);
		if (a->seq_naks + a->access_naks - naks0 >= 2 * QPS &&
		    d - *drops >= RANDOM + QPS * (DEAD + AHEAD))
			break;
		poll(&(struct pollfd){ a->fd, POLLIN, 0 }, 1, 1);
	} while (now_ms() < end);
	receive(a);
	T_CHECK(a->seq_naks + a->access_naks - naks0 == 2 * QPS && d - *drops ==
		RANDOM + QPS * (DEAD + AHEAD), "round: %" PRIu64 " NAKs (want %d), %" PRIu64
		" device drops (want %d)", a->seq_naks + a->access_naks - naks0, 2 * QPS,
		d - *drops, RANDOM + QPS * (DEAD + AHEAD));
	*drops = d;
	take_events(v);
	return !t_failures;
}

static void body(struct h_env *e)
{
	struct attacker *a = calloc(1, sizeof(*a));
	struct victim v = { 0 };
	struct bys b;
	struct bys_result br;
	uint8_t (*pkts)[PKT_MAX] = calloc(PER_ROUND, PKT_MAX);
	size_t *lens = calloc(PER_ROUND, sizeof(*lens));
	uint64_t drops0, seq0, sent0, naks0, drops, rounds = 0, faults = 0, ops0, ops1;
	char peer[64];
	long long t0, t1;

	if (e->ipv6)
		h_skip(e, "sec-rkey-flood builds IPv4 packets only");
	if (!a || !pkts || !lens) {
		T_CHECK(0, "setup: %s", strerror(errno));
		return;
	}
	a->rng.s = e->rng.s;
	if (bys_start(e, &b))
		goto out;
	if (!attacker_up(e, a))
		goto out;
	inet_ntop(AF_INET, &a->self.sin_addr, peer, sizeof(peer));
	if (!victim_up(e, &v, peer))
		goto out;
	brief(a, &v, &b.info);
	printf("victim: %d QPs %u..%u, keys pin_rw %#x pin_local %#x odp_local %#x odp_pd2 %#x "
	       "implicit %#x; bystander QP %u keys %#x %#x %#x\n", QPS, a->qpn_lo, a->qpn_hi,
	       v.reg[R_PIN_RW].mr->rkey, v.reg[R_PIN_LOCAL].mr->rkey, v.reg[R_ODP_LOCAL].mr->rkey,
	       v.reg[R_ODP_PD2].mr->rkey, v.reg[R_IMPLICIT].mr->rkey, b.info.qpn, b.info.rw.rkey,
	       b.info.local.rkey, b.info.odp.rkey);

	drops0 = drops = device_drops(v.ctx);
	seq0 = qp_sum(&v, "drop_seq_err_silent");
	sent0 = qp_sum(&v, "pkts_sent");
	naks0 = qp_sum(&v, "seq_naks_sent");
	ops0 = bys_ops(&b);
	t0 = now_ms();
	while (a->sent < packets_wanted && round_once(a, &v, pkts, lens, &drops))
		rounds++;
	t1 = now_ms();
	ops1 = bys_ops(&b);
	take_events(&v);
	printf("bystander: %" PRIu64 " WRITE + READ-back pairs during the flood\n", ops1 - ops0);
	T_CHECK(ops1 != UINT64_MAX && ops1 > ops0, "the bystander made no progress during the "
		"flood (%" PRIu64 " -> %" PRIu64 ")", ops0, ops1);

	/* every packet counted exactly once */
	{
		uint64_t dd = device_drops(v.ctx) - drops0, ss = qp_sum(&v, "drop_seq_err_silent") - seq0;
		uint64_t out = qp_sum(&v, "pkts_sent") - sent0, seq = qp_sum(&v, "seq_naks_sent") - naks0;

		printf("sent %" PRIu64 " packets in %" PRIu64 " rounds, %.1f s (%.0f packets/s): "
		       "device drops %" PRIu64 ", of them victim QPs' silent sequence drops %" PRIu64
		       ", remote access NAKs %" PRIu64 " (sequence NAKs %" PRIu64 "), "
		       "QP_ACCESS_ERR events %" PRIu64 "\n", a->sent, rounds, (t1 - t0) / 1000.0,
		       a->sent * 1000.0 / (double)(t1 - t0 + 1), dd, ss, a->access_naks,
		       a->seq_naks, v.events);
		printf("%" PRIu64 " requests carried the key of an existing MR\n", a->real_key);
		T_EQ(dd + a->access_naks, a->sent, "drops + NAKed requests = packets sent");
		T_EQ(a->access_naks, rounds * QPS, "remote access NAKs");
		T_EQ(a->seq_naks, rounds * QPS, "sequence NAKs");
		T_EQ(ss, rounds * QPS * AHEAD, "silent sequence drops");
		/* the daemon's own count of what it answered: the victim QPs send nothing else */
		T_EQ(seq, a->seq_naks, "sequence NAKs the victim QPs sent");
		T_EQ(out - seq, a->access_naks, "remote access NAKs the victim QPs sent");
		T_EQ(v.events, rounds * QPS, "QP_ACCESS_ERR events");
		T_EQ(v.other_events, 0, "other events");
		T_EQ(a->other_rx, 0, "packets other than NAKs back to the attacker");
		T_EQ(a->bad_icrc, 0, "packets back with a bad ICRC");
		T_CHECK(a->sent >= packets_wanted, "sent %" PRIu64 " of %llu", a->sent,
			packets_wanted);
	}
	for (int i = 0; i < R_COUNT; i++) {
		struct region *g = &v.reg[i];

		if (g->buf)
			T_EQ(pattern_diff(g->seed, g->buf, g->len), 0, g->name);
		if (g->mr && (i == R_ODP_LOCAL || i == R_ODP_PD2 || i == R_IMPLICIT))
			faults += h_counter(v.ctx, ODPEMU_COUNTERS_MR, g->mr->handle, "page_faults") +
				  h_counter(v.ctx, ODPEMU_COUNTERS_MR, g->mr->handle,
					    "page_prefetch");
	}
	T_EQ(faults, 0, "ODP MRs' page faults and prefetches");
out:
	bys_stop(&b, &br);
	for (int i = 0; i < QPS; i++)
		if (v.qp[i])
			odpemu_destroy_qp(v.qp[i]);
	for (int i = 0; i < R_COUNT; i++)
		if (v.reg[i].mr)
			odpemu_dereg_mr(v.reg[i].mr);
	if (v.cq)
		odpemu_destroy_cq(v.cq);
	if (v.pd2)
		odpemu_dealloc_pd(v.pd2);
	if (v.pd)
		odpemu_dealloc_pd(v.pd);
	if (a->fd > 0)
		close(a->fd);
	free(a);
	free(pkts);
	free(lens);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "sec-rkey-flood", .seed = 17, .watchdog_s = 600,
		.open = H_OPEN_NONE, .body = body };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			packets_wanted = 100000;
		else if (!strcmp(argv[i], "--packets") && i + 1 < argc)
			packets_wanted = strtoull(argv[++i], NULL, 0);
	}
	return h_main(argc, argv, &t);
}
