/* SPDX-License-Identifier: MIT */
/*
 * UD multicast (nic/mcast.c): the group table's rules and errors (ib_attach_mcast, uverbs,
 * rxe_mcast.c) and the delivery of a datagram sent to a group: a copy to each attached QP
 * of every NIC, the sender's own QP included (rxe), each a UD receive of its own with its
 * own Q_Key check and receive WQE; none once detached.
 */
#include <errno.h>
#include <string.h>

#include "pair.h"
#include "roce.h"

#define QKEY 0x1234u
#define BUF 8192

static struct t_rng rng;

static struct nic_gid group(uint32_t a) { return nic_gid_from_v4(a); }
#define G1 group(0xE6010203u)	/* 230.1.2.3 */

static struct nic_qp *ud_qp(struct pair *p, int i, uint32_t qkey)
{
	struct nic_qp_init qi = { .type = ODPEMU_QPT_UD, .send_cq = p->s[i].scq,
		.recv_cq = p->s[i].rcq, .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
		.max_recv_sge = 1 };
	struct nic_qp *qp = NULL;

	T_EQ(nic_qp_create(p->s[i].pd, &qi, &qp), 0, "UD QP");
	if (qp)
		pair_ud_up(qp, qkey, 1);
	return qp;
}

static void test_attach_rules(void)
{
	struct pair *p = pair_new(NULL);
	struct nic_gid g = G1, v6 = { { 0xff, 0x0e, [15] = 1 } };
	struct nic_gid uni = p->s[1].gid;

	T_EQ(nic_mcast_attach(p->s[0].qp, &g), -EINVAL, "an RC QP (ib_attach_mcast: UD only)");
	T_EQ(nic_mcast_attach(p->s[0].ud, &uni), -EINVAL, "a unicast GID");
	T_EQ(nic_mcast_detach(p->s[0].ud, &g), -EINVAL, "detach before attach (uverbs)");
	T_EQ(nic_mcast_attach(p->s[0].ud, &g), 0, "attach");
	T_EQ(nic_mcast_attach(p->s[0].ud, &g), 0, "attach again: a no-op (rxe_attach_mcg)");
	T_EQ(nic_mcast_members(p->s[0].nic, &g), 1, "one member, not two");
	T_EQ(nic_mcast_attach(p->s[0].ud, &v6), 0, "an ff00::/8 GID");
	T_EQ(nic_qp_mcast_groups(p->s[0].ud), 2, "groups of the QP");
	T_EQ(p->s[0].mcast_joins, 2, "the port hears of each new group once");
	T_EQ(nic_mcast_detach(p->s[0].ud, &g), 0, "detach");
	T_EQ(nic_mcast_detach(p->s[0].ud, &g), -EINVAL, "detach twice");
	T_EQ(p->s[0].mcast_leaves, 1, "and of a group left by its last member");
	T_EQ(nic_mcast_detach(p->s[0].ud, &v6), 0, "detach v6");
	pair_free(p);
}

/* max_mcast_qp_attach QPs per group, max_mcast_grp groups: then -ENOMEM (rxe). */
static void test_limits(void)
{
	struct pair *p = pair_new(NULL);
	const struct nic_device_attr *a = nic_attr(p->s[0].nic);
	struct nic_qp *qps[64];
	struct nic_gid g = G1;
	unsigned n = a->max_mcast_qp_attach;

	T_CHECK(n > 0 && n < 64 && a->max_mcast_grp > 0, "limits reported: %u QPs, %u groups",
		n, a->max_mcast_grp);
	for (unsigned i = 0; i <= n && i < 64; i++) {
		qps[i] = ud_qp(p, 0, QKEY);
		T_CHECK(nic_mcast_attach(qps[i], &g) == (i < n ? 0 : -ENOMEM), "attach QP %u", i);
	}
	for (uint32_t i = 1; i <= a->max_mcast_grp; i++) {
		struct nic_gid gi = group(0xE6000000u + i);

		T_CHECK(nic_mcast_attach(p->s[0].ud, &gi) == (i < a->max_mcast_grp ? 0 : -ENOMEM),
			"group %u", i);
	}
	/* A QP destroyed leaves its groups: each group's member count drops. */
	for (unsigned i = 0; i <= n && i < 64; i++)
		T_CHECK(nic_qp_destroy(qps[i]) == 0, "destroy attached QP %u", i);
	T_EQ(nic_mcast_members(p->s[0].nic, &g), 0, "G1 has no member left");
	T_EQ(nic_qp_destroy(p->s[0].ud), 0, "destroy the QP of 255 groups");
	p->s[0].ud = NULL;
	T_EQ(p->s[0].mcast_leaves, p->s[0].mcast_joins, "every group left");
	pair_free(p);
}

struct mc {
	struct pair *p;
	struct pair_bufs x;
	struct nic_sge s;
	struct nic_send_wr wr;
};

/* Side 0's UD QP and side 1's attached to G1; side 0 sends 300 bytes to the group. */
static void mc_setup(struct mc *m)
{
	struct nic_gid g = G1;

	m->p = pair_new(NULL);
	pair_bufs_new(m->p, &m->x, BUF, ODPEMU_ACCESS_LOCAL_WRITE, ODPEMU_ACCESS_LOCAL_WRITE, &rng);
	T_EQ(nic_mcast_attach(m->p->s[0].ud, &g), 0, "attach a");
	T_EQ(nic_mcast_attach(m->p->s[1].ud, &g), 0, "attach b");
	m->s = pair_sge(m->x.a, 300, m->x.ma);
	m->wr = (struct nic_send_wr){ .wr_id = 9, .opcode = ODPEMU_WR_SEND,
		.send_flags = ODPEMU_SEND_SIGNALED, .sg_list = &m->s, .num_sge = 1,
		.ud_dgid = g, .remote_qpn = ROCE_MCAST_QPN, .remote_qkey = QKEY };
}

static void recv_on(struct mc *m, int i, struct nic_qp *qp, uint8_t *buf, struct nic_mr *mr)
{
	struct nic_sge rs = pair_sge(buf, 2048, mr);
	struct nic_recv_wr r = { 70 + (uint64_t)i, &rs, 1 };

	(void)m;
	T_EQ(nic_post_recv(qp, &r, 0), 0, "post recv");
}

static void send_one(struct mc *m)
{
	T_EQ(nic_post_send(m->p->s[0].ud, &m->wr, 0), 0, "send to the group");
	pair_settle(m->p);
	T_EQ(pair_wc(m->p, 0, true, "send").status, ODPEMU_WC_SUCCESS, "send completes");
}

static void check_recv(struct mc *m, int i, const uint8_t *buf)
{
	struct nic_wc wc = pair_wc(m->p, i, false, "multicast recv");
	struct nic_gid g = G1;

	T_CHECK(wc.status == ODPEMU_WC_SUCCESS, "side %d: received", i);
	T_CHECK(wc.byte_len == 40 + 300, "side %d: GRH + data", i);
	T_CHECK(wc.src_qp == nic_qp_num(m->p->s[0].ud), "side %d: the sender's QP", i);
	T_CHECK(!memcmp(buf + 36, g.raw + 12, 4), "side %d: the GRH's destination is the group", i);
	T_CHECK(!memcmp(buf + 32, m->p->s[0].gid.raw + 12, 4), "side %d: its source the sender", i);
	T_CHECK(!memcmp(buf + 40, m->x.a, 300), "side %d: the data", i);
}

static void mc_done(struct mc *m)
{
	pair_bufs_free(&m->x);
	pair_free(m->p);
}

/* Both attached QPs get it, the sender's own too (rxe loops it back: no self-block). */
static void test_delivery(void)
{
	struct mc m;
	struct nic_counters a, b;

	mc_setup(&m);
	recv_on(&m, 1, m.p->s[1].ud, m.x.b, m.x.mb);
	recv_on(&m, 0, m.p->s[0].ud, m.x.a + 4096, m.x.ma);
	send_one(&m);
	check_recv(&m, 1, m.x.b);
	check_recv(&m, 0, m.x.a + 4096);
	nic_counters(m.p->s[0].nic, &a);
	nic_counters(m.p->s[1].nic, &b);
	T_EQ(a.mcast_pkts_sent, 1, "a: mcast_pkts_sent");
	T_EQ(a.mcast_pkts_received, 1, "a: its own packet came back");
	T_EQ(b.mcast_pkts_received, 1, "b: mcast_pkts_received");
	T_EQ(b.mcast_copies, 1, "b: one copy");
	mc_done(&m);
}

/* Each copy is the QP's own UD receive: a Q_Key that differs drops that copy, a QP with no
 * WQE drops its copy (counted), and the others still get theirs. */
static void test_per_qp_rules(void)
{
	struct mc m;
	struct nic_gid g = G1;
	struct nic_qp *other, *empty;
	struct nic_qp_counters c;
	struct nic_wc wc;

	mc_setup(&m);
	other = ud_qp(m.p, 1, 0x9999);
	empty = ud_qp(m.p, 1, QKEY);
	T_EQ(nic_mcast_attach(other, &g), 0, "attach the other Q_Key's QP");
	T_EQ(nic_mcast_attach(empty, &g), 0, "attach a QP without receives");
	recv_on(&m, 1, other, m.x.b + 4096, m.x.mb);
	recv_on(&m, 1, m.p->s[1].ud, m.x.b, m.x.mb);
	send_one(&m);
	check_recv(&m, 1, m.x.b);
	T_CHECK(!pair_poll(m.p, 1, false, &wc), "nothing else on b's receive CQ");
	nic_qp_counters(other, &c);
	T_EQ(c.drops[NIC_DROP_BAD_QKEY], 1, "other Q_Key: dropped (IBA 10.2.4.1)");
	nic_qp_counters(empty, &c);
	T_EQ(c.drops[NIC_DROP_UD_NO_WQE], 1, "no WQE: dropped");
	nic_qp_counters(m.p->s[0].ud, &c);
	T_EQ(c.drops[NIC_DROP_UD_NO_WQE], 1, "the sender's own copy, no WQE: dropped");
	T_EQ(nic_mcast_detach(other, &g), 0, "detach");
	T_EQ(nic_mcast_detach(empty, &g), 0, "detach");
	T_EQ(nic_qp_destroy(other), 0, "destroy");
	T_EQ(nic_qp_destroy(empty), 0, "destroy");
	mc_done(&m);
}

/* Detached: nothing arrives; a NIC with no member counts MCAST_NO_GROUP. */
static void test_after_detach(void)
{
	struct mc m;
	struct nic_gid g = G1;
	struct nic_counters b;
	struct nic_wc wc;

	mc_setup(&m);
	T_EQ(nic_mcast_detach(m.p->s[1].ud, &g), 0, "b leaves");
	recv_on(&m, 1, m.p->s[1].ud, m.x.b, m.x.mb);
	send_one(&m);
	T_CHECK(!pair_poll(m.p, 1, false, &wc), "nothing arrives after the leave");
	nic_counters(m.p->s[1].nic, &b);
	T_EQ(b.drops[NIC_DROP_MCAST_NO_GROUP], 1, "b: counted as no group");
	T_EQ(m.p->s[1].mcast_leaves, 1, "b's port heard the leave");
	mc_done(&m);
}

/* A packet on a group's address whose BTH names a QP, not 0xFFFFFF: dropped (IBA
 * 9.6.1.1), even when that QP is attached. */
static void test_wrong_dqpn(void)
{
	struct mc m;
	struct nic_counters b;
	struct nic_wc wc;

	mc_setup(&m);
	m.wr.remote_qpn = nic_qp_num(m.p->s[1].ud);
	recv_on(&m, 1, m.p->s[1].ud, m.x.b, m.x.mb);
	send_one(&m);
	T_CHECK(!pair_poll(m.p, 1, false, &wc), "not delivered");
	nic_counters(m.p->s[1].nic, &b);
	T_EQ(b.drops[NIC_DROP_NO_QP], 1, "counted as NO_QP");
	mc_done(&m);
}

static const struct t_case cases[] = {
	{ "attach-rules", test_attach_rules },
	{ "limits", test_limits },
	{ "delivery", test_delivery },
	{ "per-qp-rules", test_per_qp_rules },
	{ "after-detach", test_after_detach },
	{ "wrong-dqpn", test_wrong_dqpn },
};

/* usage: test-mcast [--seed N] [--case NAME]; no case: all of them. */
int main(int argc, char **argv)
{
	rng.s = t_seed(argc, argv, 1);
	if (t_run_cases(argc, argv, cases, T_ARRAY_SIZE(cases)))
		return 1;
	return t_done("nic-mcast");
}
