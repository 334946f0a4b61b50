/* SPDX-License-Identifier: MIT */
/*
 * The connection manager on the wire (emu/cm/cm.c), against a peer CM played by this test: a
 * UDP socket on another address of host a, at the daemons' port, that sends CM MADs to
 * daemon b's QP1 as a RoCE NIC's kernel does (UD SEND_ONLY, Q_Key 0x80010000, ICRC) and
 * reads what comes back. With no listener, daemon b answers as Linux's ib_cm answers a CM
 * it holds no state for: REQ -> REJ INVALID_SERVICE_ID, REP -> REJ INVALID_COMM_ID,
 * DREQ -> DREP, SIDR_REQ -> SIDR_REP UNSUPPORTED; each with the request's Transaction ID
 * and the communication IDs swapped. RTU, MRA and REJ of no exchange, a MAD that is not
 * the CM's, and a MAD from a source QP other than 1 are counted and never answered. Then
 * a UDP port space listener on daemon b answers SIDR_REQs: accepted (QPN, Q_Key, again for
 * a duplicate) and rejected (status 2).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm_mad.h"
#include "harness.h"
#include "odpemu/cm.h"
#include "roce.h"
#include "t.h"

#define WAIT_MS 2000	/* a reply on a quiet veth takes microseconds */

struct peer {
	int fd;
	struct sockaddr_storage self, daemon;	/* the fake CM, daemon b */
	socklen_t len;
	uint32_t psn;
};

static void fill_addr(struct sockaddr_storage *ss, const char *addr, unsigned port)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, addr, &s6->sin6_addr);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, addr, &s4->sin_addr);
	}
}

static bool peer_up(struct h_env *e, struct peer *p)
{
	char addr[64];

	h_extra_addr(e, 0, addr, sizeof(addr));
	fill_addr(&p->self, addr, e->port);
	fill_addr(&p->daemon, e->host[1].addr, e->port);
	p->len = p->self.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					       : sizeof(struct sockaddr_in);
	p->fd = h_socket_in(e, 0, p->self.ss_family, SOCK_DGRAM | SOCK_CLOEXEC);
	T_CHECK(p->fd >= 0, "peer socket: %s", strerror(-p->fd));
	if (p->fd < 0)
		return false;
	/* DF, as the daemons send: the ICRC covers the flags (Identification 0) */
	if (p->self.ss_family == AF_INET)
		setsockopt(p->fd, IPPROTO_IP, IP_MTU_DISCOVER, &(int){ IP_PMTUDISC_DO }, sizeof(int));
	T_CHECK(!bind(p->fd, (struct sockaddr *)&p->self, p->len), "bind %s:%u: %s", addr, e->port,
		strerror(errno));
	return true;
}

/* The ICRC of pkt (len with the ICRC) for the flow from `from` to `to`: seal or check. */
static bool icrc(const struct sockaddr_storage *from, const struct sockaddr_storage *to,
		 uint8_t *pkt, size_t len, bool seal)
{
	if (from->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)from, *b = (const void *)to;
		struct roce_flow6 f = { .sport = ntohs(a->sin6_port), .dport = ntohs(b->sin6_port) };

		memcpy(f.saddr, &a->sin6_addr, 16);
		memcpy(f.daddr, &b->sin6_addr, 16);
		if (seal)
			roce_icrc6_seal(&f, pkt, len);
		return roce_icrc6_ok(&f, pkt, len);
	}
	const struct sockaddr_in *a = (const void *)from, *b = (const void *)to;
	struct roce_flow4 f = { a->sin_addr.s_addr, b->sin_addr.s_addr, ntohs(a->sin_port),
				ntohs(b->sin_port) };

	if (seal)
		roce_icrc4_seal(&f, pkt, len);
	return roce_icrc4_ok(&f, pkt, len);
}

/* One MAD to daemon b's QP1 from source QP sqpn. */
static void send_mad(struct peer *p, const uint8_t mad[CM_MAD_LEN], uint32_t sqpn)
{
	struct roce_hdr h = { 0 };
	uint8_t pkt[512];
	long n;

	h.bth = (struct roce_bth){ .opcode = ROCE_OP_UD_SEND_ONLY, .pkey = ROCE_DEFAULT_PKEY,
		.dqpn = ROCE_GSI_QPN, .psn = p->psn++ };
	h.deth = (struct roce_deth){ .qkey = CM_GSI_QKEY, .sqpn = sqpn };
	n = roce_build(pkt, sizeof(pkt), &h, mad, CM_MAD_LEN);
	T_CHECK(n > 0, "build: %ld", n);
	if (n <= 0)
		return;
	icrc(&p->self, &p->daemon, pkt, (size_t)n, true);
	T_CHECK(sendto(p->fd, pkt, (size_t)n, 0, (struct sockaddr *)&p->daemon, p->len) == n,
		"sendto: %s", strerror(errno));
}

static void send_msg(struct peer *p, const struct cm_msg *m)
{
	uint8_t mad[CM_MAD_LEN];

	T_CHECK(cm_mad_build(m, mad) == 0, "cm_mad_build %s", cm_attr_str((uint16_t)m->attr));
	send_mad(p, mad, CM_GSI_QPN);
}

/* The next MAD daemon b sends us, checked as a NIC would; false if none in wait_ms. */
static bool recv_msg(struct peer *p, struct cm_msg *m, int wait_ms)
{
	struct pollfd pf = { p->fd, POLLIN, 0 };
	uint8_t pkt[2048];
	struct roce_pkt rp;
	ssize_t n;

	if (poll(&pf, 1, wait_ms) != 1)
		return false;
	n = recv(p->fd, pkt, sizeof(pkt), 0);
	T_CHECK(n > 0, "recv: %s", strerror(errno));
	if (n <= 0)
		return false;
	T_CHECK(icrc(&p->daemon, &p->self, pkt, (size_t)n, false), "the reply's ICRC");
	T_EQ(roce_parse(pkt, (size_t)n, 4096, &rp), ROCE_R_OK, "the reply parses");
	T_EQ(rp.h.bth.opcode, ROCE_OP_UD_SEND_ONLY, "a UD SEND_ONLY");
	T_EQ(rp.h.bth.dqpn, ROCE_GSI_QPN, "to QP1");
	T_EQ(rp.h.bth.pkey, ROCE_DEFAULT_PKEY, "P_Key");
	T_EQ(rp.h.deth.qkey, CM_GSI_QKEY, "the GSI Q_Key");
	T_EQ(rp.h.deth.sqpn, ROCE_GSI_QPN, "from QP1");
	T_EQ(rp.payload_len, CM_MAD_LEN, "one MAD");
	return rp.payload_len == CM_MAD_LEN && cm_mad_parse(rp.payload, CM_MAD_LEN, m) == 0;
}

static struct cm_msg msg(enum cm_attr attr, uint64_t tid)
{
	struct cm_msg m = { .attr = attr };

	m.hdr = (struct cm_mad_hdr){ .method = CM_METHOD_SEND, .tid = tid };
	return m;
}

static unsigned long long ctr(struct h_env *e, const char *name)
{
	return h_counter(e->ctx[1], ODPEMU_COUNTERS_DEVICE, 0, name);
}

static void req_without_listener(struct peer *p)
{
	struct cm_msg m = msg(CM_ATTR_REQ, 0x1111222233334444ull), r;

	m.u.req.local_comm_id = 0xc0ffee01;
	m.u.req.service_id = cm_service_id(CM_PS_TCP, 7471);
	m.u.req.local_qpn = 0x123456;
	m.u.req.starting_psn = 0xabcde;
	m.u.req.pkey = 0xffff;
	m.u.req.path_mtu = 5;
	m.u.req.max_cm_retries = 15;
	m.u.req.local_cm_response_timeout = 20;
	m.u.req.remote_cm_response_timeout = 20;
	send_msg(p, &m);
	T_CHECK(recv_msg(p, &r, WAIT_MS), "REQ: an answer within %d ms", WAIT_MS);
	T_CHECK(r.attr == CM_ATTR_REJ, "REQ without a listener: answered with %s",
		cm_attr_str((uint16_t)r.attr));
	T_EQ(r.hdr.tid, m.hdr.tid, "REJ carries the REQ's Transaction ID");
	T_CHECK(r.u.rej.reason == CM_REJ_INVALID_SERVICE_ID, "REJ reason %s",
		cm_rej_reason_str(r.u.rej.reason));
	T_EQ(r.u.rej.message_rejected, CM_MSG_RESPONSE_REQ, "message rejected: the REQ");
	T_EQ(r.u.rej.remote_comm_id, m.u.req.local_comm_id, "REJ's remote ID is ours");
	T_CHECK(r.u.rej.local_comm_id != 0, "REJ names a local communication ID");
}

static void rep_unknown(struct peer *p)
{
	struct cm_msg m = msg(CM_ATTR_REP, 0x55), r;

	m.u.rep.local_comm_id = 0xabc;
	m.u.rep.remote_comm_id = 0xdead;	/* never handed out by daemon b */
	m.u.rep.local_qpn = 0x22;
	send_msg(p, &m);
	T_CHECK(recv_msg(p, &r, WAIT_MS), "REP: an answer");
	T_EQ(r.attr, CM_ATTR_REJ, "REP of no REQ: REJ");
	T_EQ(r.hdr.tid, 0x55, "the REP's Transaction ID");
	T_CHECK(r.u.rej.reason == CM_REJ_INVALID_COMM_ID, "reason %s",
		cm_rej_reason_str(r.u.rej.reason));
	T_EQ(r.u.rej.message_rejected, CM_MSG_RESPONSE_REP, "message rejected: the REP");
	T_EQ(r.u.rej.local_comm_id, 0xdead, "the ID the REP named as ours");
	T_EQ(r.u.rej.remote_comm_id, 0xabc, "the REP's own ID");
}

static void dreq_unknown(struct peer *p)
{
	struct cm_msg m = msg(CM_ATTR_DREQ, 0x66), r;

	m.u.dreq.local_comm_id = 0x1001;
	m.u.dreq.remote_comm_id = 0x2002;
	m.u.dreq.remote_qpn_eecn = 0x33;
	send_msg(p, &m);
	T_CHECK(recv_msg(p, &r, WAIT_MS), "DREQ: an answer");
	T_EQ(r.attr, CM_ATTR_DREP, "DREQ of no connection: DREP all the same");
	T_EQ(r.hdr.tid, 0x66, "the DREQ's Transaction ID");
	T_EQ(r.u.drep.local_comm_id, 0x2002, "DREP's local ID: the one the DREQ named");
	T_EQ(r.u.drep.remote_comm_id, 0x1001, "DREP's remote ID: the DREQ's own");
}

static void sidr_unknown(struct peer *p)
{
	struct cm_msg m = msg(CM_ATTR_SIDR_REQ, 0x77), r;

	m.u.sidr_req.request_id = 0x4242;
	m.u.sidr_req.pkey = 0xffff;
	m.u.sidr_req.service_id = cm_service_id(CM_PS_UDP, 7174);
	send_msg(p, &m);
	T_CHECK(recv_msg(p, &r, WAIT_MS), "SIDR_REQ: an answer");
	T_EQ(r.attr, CM_ATTR_SIDR_REP, "SIDR_REQ of no service: SIDR_REP");
	T_EQ(r.hdr.tid, 0x77, "the SIDR_REQ's Transaction ID");
	T_EQ(r.u.sidr_rep.request_id, 0x4242, "the request ID");
	T_EQ(r.u.sidr_rep.status, 1, "status UNSUPPORTED");
	T_EQ(r.u.sidr_rep.service_id, m.u.sidr_req.service_id, "the service ID");
}

/* A CM event on ch within WAIT_MS; false if none. */
static bool cm_event(struct odpemu_cm_channel *ch, struct odpemu_cm_event *ev)
{
	struct pollfd pf = { ch->fd, POLLIN, 0 };

	return poll(&pf, 1, WAIT_MS) == 1 && odpemu_cm_get_event(ch, ev) == 0;
}

/* A SIDR_REQ from the peer to UDP port `port` of daemon b, rdma_cm's IP header first. */
static struct cm_msg sidr_req(struct peer *p, uint64_t tid, uint32_t request_id, unsigned port)
{
	struct cm_msg m = msg(CM_ATTR_SIDR_REQ, tid);
	struct sockaddr_storage src = p->self, dst = p->daemon;

	((struct sockaddr_in *)&src)->sin_port = htons(5555);	/* the same for IPv6 */
	((struct sockaddr_in *)&dst)->sin_port = htons((uint16_t)port);
	m.u.sidr_req.request_id = request_id;
	m.u.sidr_req.pkey = 0xffff;
	m.u.sidr_req.service_id = cm_service_id(CM_PS_UDP, (uint16_t)port);
	T_EQ(cm_ip_hdr_encode(m.u.sidr_req.private_data, (struct sockaddr *)&src,
			      (struct sockaddr *)&dst), 0, "rdma_cm's IP header");
	memcpy(m.u.sidr_req.private_data + CM_IP_HDR_LEN, "hello", 5);
	return m;
}

/* The UDP port space with a listener (emu/cm/cm_sidr.c): SIDR_REQ -> CONNECT_REQUEST with the
 * private data after the IP header; a retransmission before the answer is a duplicate;
 * accept -> SIDR_REP success with the QPN and Q_Key, sent again for a late duplicate;
 * reject -> SIDR_REP status 2 (rejected) with the private data. */
static void sidr_listened(struct h_env *e, struct peer *p)
{
	struct odpemu_cm_channel *ch = odpemu_cm_create_channel(e->ctx[1]);
	struct odpemu_cm_addr any = { .port = 7175 };
	struct odpemu_cm_qp qp = { .qpn = 0x1234, .qkey = 0x01234567, .qp_type = ODPEMU_QPT_UD };
	unsigned long long dup0 = ctr(e, "cm_duplicates");
	struct cm_msg m = sidr_req(p, 0x501, 0x5151, 7175), r;
	struct odpemu_cm_event ev;
	uint32_t listener = 0;

	T_CHECK(ch != NULL, "a CM channel on daemon b");
	if (!ch)
		return;
	T_EQ(odpemu_cm_listen(ch, ODPEMU_CM_PS_UDP, &any, 0, 7, &listener, NULL), 0,
	     "listen on UDP port 7175");
	send_msg(p, &m);
	T_CHECK(cm_event(ch, &ev), "SIDR_REQ: an event");
	T_EQ(ev.type, ODPEMU_CM_EVENT_CONNECT_REQUEST, "CONNECT_REQUEST");
	T_EQ(ev.peer.qp_type, ODPEMU_QPT_UD, "a UD request");
	T_EQ(ev.src.port, 5555, "the IP header's source port");
	T_CHECK(ev.private_len >= 5 && !memcmp(ev.private_data, "hello", 5),
		"the private data after the IP header");
	send_msg(p, &m);	/* a retransmission while the listener decides */
	T_CHECK(!recv_msg(p, &r, 200), "no answer to a duplicate before the accept");
	T_EQ(ctr(e, "cm_duplicates") - dup0, 1, "counted as a duplicate");
	T_EQ(odpemu_cm_accept(e->ctx[1], ev.conn, NULL, &qp, "ok", 2, 8), 0, "accept");
	T_CHECK(recv_msg(p, &r, WAIT_MS), "accept: an answer");
	T_EQ(r.attr, CM_ATTR_SIDR_REP, "SIDR_REP");
	T_EQ(r.hdr.tid, 0x501, "the SIDR_REQ's Transaction ID");
	T_EQ(r.u.sidr_rep.request_id, 0x5151, "the request ID");
	T_EQ(r.u.sidr_rep.status, 0, "status success");
	T_EQ(r.u.sidr_rep.qpn, 0x1234, "our QPN");
	T_EQ(r.u.sidr_rep.qkey, 0x01234567, "our Q_Key");
	T_EQ(r.u.sidr_rep.service_id, m.u.sidr_req.service_id, "the service ID");
	T_CHECK(!memcmp(r.u.sidr_rep.private_data, "ok", 2), "the accept's private data");
	send_msg(p, &m);	/* our SIDR_REP "was lost" */
	T_CHECK(recv_msg(p, &r, WAIT_MS) && r.attr == CM_ATTR_SIDR_REP && r.u.sidr_rep.status == 0
		&& r.u.sidr_rep.qpn == 0x1234, "a late duplicate gets the same SIDR_REP");
	odpemu_cm_destroy(e->ctx[1], ev.conn);

	m = sidr_req(p, 0x502, 0x5252, 7175);
	send_msg(p, &m);
	T_CHECK(cm_event(ch, &ev) && ev.type == ODPEMU_CM_EVENT_CONNECT_REQUEST,
		"a second SIDR_REQ: CONNECT_REQUEST");
	T_EQ(odpemu_cm_reject(e->ctx[1], ev.conn, "no", 2), 0, "reject");
	T_CHECK(recv_msg(p, &r, WAIT_MS) && r.attr == CM_ATTR_SIDR_REP, "reject: SIDR_REP");
	T_EQ(r.u.sidr_rep.status, 2, "status REJECT");
	T_EQ(r.u.sidr_rep.request_id, 0x5252, "its request ID");
	T_CHECK(!memcmp(r.u.sidr_rep.private_data, "no", 2), "the reject's private data");
	odpemu_cm_destroy(e->ctx[1], ev.conn);
	odpemu_cm_destroy(e->ctx[1], listener);
	T_EQ(odpemu_cm_destroy_channel(ch), 0, "the channel goes");
}

/* Answers to nothing, a MAD of another class, one from a source QP other than 1: counted,
 * not answered (the next probe's answer is the next thing we read). */
static void silent_ones(struct h_env *e, struct peer *p)
{
	static const enum cm_attr unmatched[] = { CM_ATTR_RTU, CM_ATTR_MRA, CM_ATTR_REJ,
						   CM_ATTR_DREP };
	unsigned long long un0 = ctr(e, "cm_unmatched"), bad0 = ctr(e, "cm_rx_malformed");
	unsigned long long qp0 = ctr(e, "cm_rx_bad_src_qp");
	uint8_t mad[CM_MAD_LEN];
	struct cm_msg m = msg(CM_ATTR_DREQ, 0x99), r;

	for (size_t i = 0; i < sizeof(unmatched) / sizeof(unmatched[0]); i++)
		send_msg(p, &(struct cm_msg){ .attr = unmatched[i],
			.hdr = { .method = CM_METHOD_SEND, .tid = 0x88 } });
	memset(mad, 0, sizeof(mad));
	mad[0] = 1;	/* base version 1, class 0x81 (not the CM's) */
	mad[1] = 0x81;
	mad[2] = 1;
	send_mad(p, mad, CM_GSI_QPN);
	T_EQ(cm_mad_build(&m, mad), 0, "build DREQ");
	send_mad(p, mad, 0x42);		/* from a QP other than the GSI's */
	m.hdr.tid = 0x9a;
	send_msg(p, &m);		/* the probe: its DREP must be the next reply */
	T_CHECK(recv_msg(p, &r, WAIT_MS), "probe: an answer");
	T_CHECK(r.hdr.tid == 0x9a, "nothing was answered before the probe (got tid %#llx)",
		(unsigned long long)r.hdr.tid);
	T_EQ(ctr(e, "cm_unmatched") - un0, 4, "cm_unmatched");
	T_EQ(ctr(e, "cm_rx_malformed") - bad0, 1, "cm_rx_malformed");
	T_EQ(ctr(e, "cm_rx_bad_src_qp") - qp0, 1, "cm_rx_bad_src_qp");
}

static void body(struct h_env *e)
{
	struct peer p = { .fd = -1, .psn = 1 };
	unsigned long long rej0 = ctr(e, "cm_tx_rej"), req0 = ctr(e, "cm_rx_req");

	if (!peer_up(e, &p))
		return;
	req_without_listener(&p);
	rep_unknown(&p);
	dreq_unknown(&p);
	sidr_unknown(&p);
	silent_ones(e, &p);
	sidr_listened(e, &p);
	T_EQ(ctr(e, "cm_rx_req") - req0, 1, "cm_rx_req");
	T_EQ(ctr(e, "cm_tx_rej") - rej0, 2, "cm_tx_rej");
	T_CHECK(ctr(e, "gsi_received") >= 9, "gsi_received %llu", ctr(e, "gsi_received"));
	close(p.fd);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "emu-cm-wire", .open = H_OPEN_B, .body = body };

	return h_main(argc, argv, &t);
}
