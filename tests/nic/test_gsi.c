/* SPDX-License-Identifier: MIT */
/*
 * QP1 (nic/gsi.c): a MAD sent with nic_gsi_send arrives whole at the peer's host agent
 * (ports.gsi_rx) with the sender's GID and source QP 1, as a UD SEND_ONLY with the GSI
 * Q_Key; anything else addressed to QP1 is dropped and counted, never handed up.
 */
#include <string.h>

#include "pair.h"
#include "roce.h"

/* A packet to side `to`'s QP1 from side !to, built by hand: h as given, ICRC right. */
static void inject_qp1(struct pair *p, int to, struct roce_hdr *h, const uint8_t *payload,
		       uint32_t len)
{
	struct roce_flow4 f = { .sport = ROCE_UDP_PORT, .dport = ROCE_UDP_PORT };
	uint8_t pkt[4096 + 128];
	long n;

	h->bth.dqpn = ROCE_GSI_QPN;
	n = roce_build(pkt, sizeof(pkt), h, payload, len);
	T_CHECK(n > 0, "crafted QP1 packet: %ld", n);
	if (n <= 0)
		return;
	memcpy(&f.saddr, p->s[!to].gid.raw + 12, 4);
	memcpy(&f.daddr, p->s[to].gid.raw + 12, 4);
	roce_icrc4_seal(&f, pkt, (size_t)n);
	nic_rx(p->s[to].nic, pkt, (size_t)n, &p->s[!to].gid, p->now);
}

static struct roce_hdr gsi_hdr(uint8_t opcode, uint16_t pkey, uint32_t qkey)
{
	struct roce_hdr h = { 0 };

	h.bth = (struct roce_bth){ .opcode = opcode, .pkey = pkey, .psn = 7 };
	h.deth = (struct roce_deth){ .qkey = qkey, .sqpn = ROCE_GSI_QPN };
	return h;
}

static void test_round_trip(void)
{
	struct pair *p = pair_new(NULL);
	struct t_rng r = { 0x6a5 };
	uint8_t mad[NIC_GSI_MAD_LEN];
	struct nic_counters a, b;

	t_fill(&r, mad, sizeof(mad));
	T_EQ(nic_gsi_send(p->s[0].nic, &p->s[1].gid, mad), 0, "nic_gsi_send");
	pair_settle(p);
	T_EQ(p->s[1].ngsi, 1, "MADs at side b's agent");
	T_CHECK(!memcmp(p->s[1].gsi[0].mad, mad, sizeof(mad)), "the MAD arrives unchanged");
	T_CHECK(!memcmp(&p->s[1].gsi[0].src, &p->s[0].gid, sizeof(struct nic_gid)),
		"the sender's GID comes with it");
	T_EQ(p->s[1].gsi[0].src_qp, ROCE_GSI_QPN, "source QP in the DETH");
	T_EQ(p->s[0].ngsi, 0, "nothing at the sender's agent");
	/* and back, twice: each send is its own packet */
	T_EQ(nic_gsi_send(p->s[1].nic, &p->s[0].gid, mad), 0, "reply");
	T_EQ(nic_gsi_send(p->s[1].nic, &p->s[0].gid, mad), 0, "reply again");
	pair_settle(p);
	T_EQ(p->s[0].ngsi, 2, "both replies at side a");
	nic_counters(p->s[0].nic, &a);
	nic_counters(p->s[1].nic, &b);
	T_EQ(a.gsi_sent, 1, "side a gsi_sent");
	T_EQ(a.gsi_received, 2, "side a gsi_received");
	T_EQ(b.gsi_sent, 2, "side b gsi_sent");
	T_EQ(b.gsi_received, 1, "side b gsi_received");
	pair_free(p);
}

/* Each malformed QP1 packet is dropped with its reason; none reaches the agent. */
static void test_drops(void)
{
	static const struct {
		const char *what;
		uint8_t opcode;
		uint16_t pkey;
		uint32_t qkey, len;
		enum nic_drop_reason why;
	} cases[] = {
		{ "wrong Q_Key", ROCE_OP_UD_SEND_ONLY, ROCE_DEFAULT_PKEY, 0x1234, 256,
		  NIC_DROP_BAD_QKEY },
		{ "wrong P_Key", ROCE_OP_UD_SEND_ONLY, 0x7fff, NIC_GSI_QKEY, 256,
		  NIC_DROP_BAD_PKEY },
		{ "short MAD", ROCE_OP_UD_SEND_ONLY, ROCE_DEFAULT_PKEY, NIC_GSI_QKEY, 100,
		  NIC_DROP_PARSE },
		{ "long MAD", ROCE_OP_UD_SEND_ONLY, ROCE_DEFAULT_PKEY, NIC_GSI_QKEY, 512,
		  NIC_DROP_PARSE },
		{ "with immediate", ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE, ROCE_DEFAULT_PKEY,
		  NIC_GSI_QKEY, 256, NIC_DROP_BAD_QP_TYPE },
	};
	uint8_t payload[512] = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pair *p = pair_new(NULL);
		struct roce_hdr h = gsi_hdr(cases[i].opcode, cases[i].pkey, cases[i].qkey);
		struct nic_counters c;

		inject_qp1(p, 1, &h, payload, cases[i].len);
		nic_counters(p->s[1].nic, &c);
		T_CHECK(p->s[1].ngsi == 0, "%s: handed to the agent", cases[i].what);
		T_CHECK(c.drops[cases[i].why] == 1, "%s: drop reason %s counted %llu times",
			cases[i].what, nic_drop_reason_str(cases[i].why),
			(unsigned long long)c.drops[cases[i].why]);
		T_CHECK(c.gsi_received == 0, "%s: gsi_received", cases[i].what);
		pair_free(p);
	}
}

/* A well-formed one injected the same way does arrive (the frame of test_drops is sound). */
static void test_inject_ok(void)
{
	struct pair *p = pair_new(NULL);
	struct roce_hdr h = gsi_hdr(ROCE_OP_UD_SEND_ONLY, ROCE_DEFAULT_PKEY, NIC_GSI_QKEY);
	uint8_t mad[NIC_GSI_MAD_LEN] = { 1, 7, 2, 3 };

	inject_qp1(p, 1, &h, mad, sizeof(mad));
	T_EQ(p->s[1].ngsi, 1, "a well-formed injected MAD arrives");
	T_CHECK(!memcmp(p->s[1].gsi[0].mad, mad, sizeof(mad)), "unchanged");
	pair_free(p);
}

int main(void)
{
	test_round_trip();
	test_drops();
	test_inject_ok();
	return t_done("nic-gsi");
}
