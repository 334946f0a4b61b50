/* SPDX-License-Identifier: MIT */
/*
 * UD multicast between two real daemons (nic/mcast.c, emu/io/mcast.c): both hosts' UD QPs
 * attach to 230.9.8.7; host 0 sends to the group (QPN 0xFFFFFF); host 1's QP receives it
 * with a GRH whose destination is the group, and host 0's own QP, attached too, gets its
 * copy back as rxe delivers it (no self-loopback block). A detached QP gets nothing more
 * and its daemon stops listening on the group. The errors of the ops as a kernel gives
 * them: a unicast GID EINVAL, a second detach EINVAL, destroying an attached QP EBUSY.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "t.h"

#define QKEY 0x11111111u	/* h_pair_up's UD Q_Key */
#define LEN 256

static bool v6;	/* the hosts' addresses are IPv6 (ODPEMU_TEST_IPV6): group ff0e::9:8:7 */

static union odpemu_gid group(void)
{
	union odpemu_gid g4 = { .raw = { [10] = 0xff, [11] = 0xff, 230, 9, 8, 7 } };
	union odpemu_gid g6 = { .raw = { 0xff, 0x0e, [11] = 9, [13] = 8, [15] = 7 } };

	return v6 ? g6 : g4;
}

struct side {
	struct odpemu_mr *mr;
	uint8_t *buf;
};

static bool side_mem(struct h_side *s, struct side *m)
{
	m->buf = h_cold(8192);
	m->mr = odpemu_reg_mr(s->pd, m->buf, 8192, ODPEMU_ACCESS_LOCAL_WRITE);
	T_CHECK(m->mr != NULL, "reg_mr: %s", strerror(errno));
	return m->mr != NULL;
}

static void post_recv(struct h_side *s, struct side *m)
{
	struct odpemu_sge sge = { (uint64_t)(uintptr_t)(m->buf + 4096), 4096, m->mr->lkey };
	struct odpemu_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;

	T_EQ(odpemu_post_recv(s->qp, &wr, &bad), 0, "post_recv");
}

static bool send_to_group(struct h_side *s, struct side *m, struct odpemu_ah *ah)
{
	struct odpemu_sge sge = { (uint64_t)(uintptr_t)m->buf, LEN, m->mr->lkey };
	struct odpemu_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = ODPEMU_WR_SEND, .send_flags = ODPEMU_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = 0xFFFFFF, .remote_qkey = QKEY } }, *bad;
	struct odpemu_wc wc;

	T_EQ(odpemu_post_send(s->qp, &wr, &bad), 0, "post_send to the group");
	return h_poll(s->cq, &wc, 1, 5000) == 1 && wc.wr_id == 1 &&
	       wc.status == ODPEMU_WC_SUCCESS;
}

/* A receive on side s: the sender's data after a GRH naming the group. */
static void check_recv(struct h_side *s, struct side *m, const struct side *from,
		       uint32_t src_qp, const char *who)
{
	struct odpemu_wc wc = { 0 };
	union odpemu_gid g = group();

	T_CHECK(h_poll(s->cq, &wc, 1, 5000) == 1, "%s: the datagram arrived", who);
	T_CHECK(wc.status == ODPEMU_WC_SUCCESS && wc.byte_len == 40 + LEN &&
		wc.src_qp == src_qp && (wc.wc_flags & ODPEMU_WC_GRH), "%s: status %d, %u bytes, "
		"from QP %u", who, wc.status, wc.byte_len, wc.src_qp);
	/* RoCE v2's GRH (IBA A17.4.5.1): an IPv4 header at 20, or the IPv6 header */
	T_CHECK(v6 ? !memcmp(m->buf + 4096 + 24, g.raw, 16) :
		!memcmp(m->buf + 4096 + 36, g.raw + 12, 4), "%s: GRH destination = group", who);
	T_CHECK(!memcmp(m->buf + 4096 + 40, from->buf, LEN), "%s: the data", who);
}

static void body(struct h_env *e)
{
	struct h_pair p = { 0 };
	struct h_qp_opts o;
	struct side m[2];
	union odpemu_gid g, uni;
	struct odpemu_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 64 } };
	struct odpemu_ah *ah;
	struct odpemu_wc wc;

	v6 = e->ipv6;
	g = aa.grh.dgid = group();

	h_qp_opts_default(&o);
	o.type = ODPEMU_QPT_UD;
	if (h_pair_up(e, &p, &o) || !side_mem(&p.s[0], &m[0]) || !side_mem(&p.s[1], &m[1]))
		return;
	memset(m[0].buf, 0x5a, LEN);
	h_gid_of(e->host[1].addr, &uni);
	T_EQ(odpemu_attach_mcast(p.s[0].qp, &uni, 0), EINVAL, "attach to a unicast GID");
	T_EQ(odpemu_attach_mcast(p.s[0].qp, &g, 0), 0, "host 0 attaches");
	T_EQ(odpemu_attach_mcast(p.s[1].qp, &g, 0), 0, "host 1 attaches");
	T_EQ(h_counter(p.s[1].ctx, ODPEMU_COUNTERS_DEVICE, 0, "mcast_groups"), 1,
	     "host 1's daemon listens on the group");
	T_EQ(odpemu_destroy_qp(p.s[1].qp), EBUSY, "destroy an attached QP (uverbs: EBUSY)");
	ah = odpemu_create_ah(p.s[0].pd, &aa);
	T_CHECK(ah != NULL, "AH to the group");
	if (!ah)
		goto out;
	post_recv(&p.s[0], &m[0]);
	post_recv(&p.s[1], &m[1]);
	T_CHECK(send_to_group(&p.s[0], &m[0], ah), "the send completes");
	check_recv(&p.s[1], &m[1], &m[0], p.s[0].qp->qp_num, "host 1");
	check_recv(&p.s[0], &m[0], &m[0], p.s[0].qp->qp_num, "host 0's own QP (rxe: looped)");
	/* host 1 leaves: nothing more reaches it, its daemon stops listening */
	T_EQ(odpemu_detach_mcast(p.s[1].qp, &g, 0), 0, "host 1 detaches");
	T_EQ(odpemu_detach_mcast(p.s[1].qp, &g, 0), EINVAL, "a second detach");
	T_EQ(h_counter(p.s[1].ctx, ODPEMU_COUNTERS_DEVICE, 0, "mcast_groups"), 0,
	     "host 1's daemon left the group");
	post_recv(&p.s[1], &m[1]);
	T_CHECK(send_to_group(&p.s[0], &m[0], ah), "the second send completes");
	T_EQ(h_poll(p.s[1].cq, &wc, 1, 300), 0, "nothing reaches host 1 after its leave");
	T_EQ(odpemu_destroy_ah(ah), 0, "destroy AH");
out:
	odpemu_detach_mcast(p.s[0].qp, &g, 0);
	odpemu_dereg_mr(m[0].mr);
	odpemu_dereg_mr(m[1].mr);
	munmap(m[0].buf, 8192 + 4096);
	munmap(m[1].buf, 8192 + 4096);
	h_pair_down(&p);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "e2e-mcast", .body = body };

	return h_main(argc, argv, &t);
}
