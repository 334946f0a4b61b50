/* SPDX-License-Identifier: MIT */
/*
 * The drop-in libibverbs through its own ABI (<infiniband/verbs.h>, linked against
 * compat/verbs' libibverbs.so.1), one process driving both test hosts' devices:
 *  - the device model: ODP caps and timestamps through ibv_query_device_ex, RoCE v2 GIDs
 *    with their netdev (ibv_query_gid_ex), the link-local GID at index 0;
 *  - QP transitions INIT->INIT included; ibv_create_qp with an inline size beyond the
 *    limit (EINVAL) and within it (caps written back);
 *  - bad arguments as rdma-core documents them: posting in INIT, too many SGEs, an
 *    opcode odpemu does not model (EINVAL with *bad_wr), a bad lkey (LOC_PROT_ERR);
 *  - verbs outside the model refused, never crashing: MW type 3, XRC, dmabuf, CVLAN CQ
 *    fields;
 *  - memory windows: type 1 bound by ibv_bind_mw, type 2 by IBV_WR_BIND_MW, RDMA WRITE and
 *    READ through their rkeys, REM_ACCESS_ERR outside the window and after LOCAL_INV, an
 *    MR with a bound window refused deregistration;
 *  - the ibv_qp_ex API (WRITE, ATOMIC_WRITE, FLUSH with odpemu/verbs_ext.h) and the
 *    ibv_cq_ex API (completion timestamps, ENOENT when empty);
 *  - ibv_resize_cq with completions waiting, on an ibv_create_cq_ex CQ with a channel;
 *  - IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: an overrun loses completions, without CQ_ERR;
 *  - event fds: EAGAIN when non-blocking and empty, EINTR when a signal interrupts;
 *  - MR decoherence as an async event; the mapping-change notifier through
 *    odpemu_ibv_watch_create; a leased MR broken, acknowledged and restored
 *    (odpemu_ibv_restore_mr); DEVICE_FATAL when the daemon is killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "harness.h"
#include "verbs_t.h"
#include "odpemu/verbs_ext.h"
#include "t.h"

#define LEN	65536u
#define ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		 IBV_ACCESS_REMOTE_ATOMIC)
#define GID_IDX	RC_CONNECT_GID_IDX

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
};

static struct h_env env;
static struct ibv_mr *lease_event_mr;	/* lease_through_verbs' event thread saw it */
static struct side s[2];

static void device_model(struct ibv_context *c)
{
	struct ibv_device_attr_ex a;
	struct ibv_port_attr p;
	struct ibv_gid_entry g;
	union ibv_gid gid0;

	T_EQ(ibv_query_device_ex(c, NULL, &a), 0, "query_device_ex");
	T_CHECK((a.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
		(a.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT), "general ODP caps");
	T_CHECK((a.odp_caps.per_transport_caps.rc_odp_caps & (IBV_ODP_SUPPORT_SEND |
		 IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		 IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV)) == (IBV_ODP_SUPPORT_SEND |
		 IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		 IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV), "RC ODP caps");
	T_CHECK(a.completion_timestamp_mask && a.hca_core_clock, "completion timestamps");
	T_EQ(a.orig_attr.atomic_cap, IBV_ATOMIC_HCA, "atomic_cap");
	T_CHECK(a.orig_attr.max_qp_wr >= 4096 && a.orig_attr.max_sge >= 5 &&
		a.orig_attr.max_qp_rd_atom >= 1, "limits UCX and perftest ask for");
	T_EQ(ibv_query_port(c, 1, &p), 0, "query_port");
	T_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET, "link layer");
	T_EQ(p.state, IBV_PORT_ACTIVE, "port active");
	T_CHECK(p.gid_tbl_len >= 2, "GID table: link-local and the address");
	{	/* the last entry is empty, as on rxe and mlx5 (their tables are longer than the
		 * addresses): a zero GID from query_gid, ENODATA from query_gid_ex */
		union ibv_gid empty;
		struct ibv_gid_entry e;

		memset(&empty, 0xff, sizeof(empty));
		T_CHECK(!ibv_query_gid(c, 1, p.gid_tbl_len - 1, &empty) &&
			!empty.global.subnet_prefix && !empty.global.interface_id,
			"an empty GID entry reads as zeros");
		T_EQ(ibv_query_gid_ex(c, 1, (uint32_t)p.gid_tbl_len - 1, &e, 0), ENODATA,
		     "and query_gid_ex says ENODATA");
		T_EQ(ibv_query_gid_ex(c, 1, (uint32_t)p.gid_tbl_len, &e, 0), EINVAL,
		     "past the table: EINVAL");
	}
	T_EQ(ibv_query_gid(c, 1, 0, &gid0), 0, "GID 0");
	T_EQ(be64toh(gid0.global.subnet_prefix), 0xfe80000000000000ull, "GID 0 is link-local");
	T_EQ(ibv_query_gid_ex(c, 1, GID_IDX, &g, 0), 0, "query_gid_ex");
	T_EQ(g.gid_type, IBV_GID_TYPE_ROCE_V2, "RoCE v2");
	T_CHECK(g.ndev_ifindex > 0, "netdev index");
	T_EQ(ibv_query_gid_ex(c, 1, 99, &g, 0), EINVAL, "GID 99: beyond the table");
}

static struct ibv_qp *make_qp(struct side *x, uint32_t inline_size)
{
	struct ibv_qp_init_attr a = { .send_cq = x->cq, .recv_cq = x->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = inline_size } };

	return ibv_create_qp(x->pd, &a);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_FLUSH_GLOBAL };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS);
}

/* The tests' RC connection (verbs_t.h), with 4 READ/atomic in flight. */
static int connect_qp(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid)
{
	return rc_connect(qp, dqpn, dgid, 4);
}

/* A fresh QP on side 1 connected to qp (each RC QP has one peer). NULL on failure. */
static struct ibv_qp *peer_of(struct ibv_qp *qp)
{
	struct ibv_qp *peer = make_qp(&s[1], 0);

	if (peer && (to_init(peer) || connect_qp(peer, qp->qp_num, &s[0].gid))) {
		ibv_destroy_qp(peer);
		peer = NULL;
	}
	return peer;
}

/* One completion on cq within 20 s: its status, or -1. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	for (int i = 0; i < 2000000; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n < 0 ? -1 : (int)wc->status;
		if (i % 1000 == 999)
			usleep(10);
	}
	return -1;
}

static void bad_arguments(struct ibv_mr *mr, void *buf)
{
	struct ibv_sge sge[3] = { { (uintptr_t)buf, 8, mr->lkey }, { (uintptr_t)buf, 8, mr->lkey },
				  { (uintptr_t)buf, 8, mr->lkey } };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad = NULL;
	struct ibv_qp *qp = make_qp(&s[0], 0), *peer;
	struct ibv_wc wc;

	T_CHECK(qp != NULL, "a second QP: %m");
	if (!qp)
		return;
	T_EQ(to_init(qp), 0, "RESET->INIT");
	T_EQ(ibv_post_send(qp, &wr, &bad), EINVAL, "post_send in INIT");
	T_CHECK(bad == &wr, "bad_wr names it");
	T_EQ(to_init(qp), 0, "INIT->INIT (librdmacm does it)");
	peer = peer_of(qp);
	T_CHECK(peer && !connect_qp(qp, peer->qp_num, &s[1].gid), "INIT->RTR->RTS");
	wr.num_sge = 3;
	bad = NULL;
	T_EQ(ibv_post_send(qp, &wr, &bad), EINVAL, "3 SGEs on a QP of 2");
	T_CHECK(bad == &wr, "bad_wr names it");
	wr.num_sge = 1;
	wr.opcode = IBV_WR_BIND_MW;
	T_EQ(ibv_post_send(qp, &wr, &bad), EINVAL, "BIND_MW naming no window");
	wr.opcode = IBV_WR_LOCAL_INV;
	T_EQ(ibv_post_send(qp, &wr, &bad), EINVAL, "LOCAL_INV with an SGE");
	wr.opcode = IBV_WR_SEND;
	sge[0].lkey = 0xdead00u;
	T_EQ(ibv_post_send(qp, &wr, &bad), 0, "a SEND with a bad lkey is posted");
	T_EQ(wait_wc(s[0].cq, &wc), IBV_WC_LOC_PROT_ERR, "and completes LOC_PROT_ERR");
	T_EQ(ibv_destroy_qp(qp), 0, "destroy");
	if (peer)
		ibv_destroy_qp(peer);
}

/* qp on side 0 connected to *peer on side 1; NULL (nothing left) on failure. */
static struct ibv_qp *qp_pair(struct ibv_qp **peer)
{
	struct ibv_qp *qp = make_qp(&s[0], 0);

	*peer = NULL;
	if (!qp || to_init(qp) || !(*peer = peer_of(qp)) ||
	    connect_qp(qp, (*peer)->qp_num, &s[1].gid)) {
		T_CHECK(0, "a QP pair: %m");
		if (*peer)
			ibv_destroy_qp(*peer);
		if (qp)
			ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

static void qp_pair_free(struct ibv_qp *qp, struct ibv_qp *peer)
{
	ibv_destroy_qp(qp);
	ibv_destroy_qp(peer);
}

/* An RDMA op of len bytes from side 0's buf to raddr through rkey: its status. */
static int rdma_via(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *mr, void *buf,
		    uint32_t len, void *raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 31, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)raddr, .rkey = rkey } }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, &wr, &bad))
		return -1;
	return wait_wc(s[0].cq, &wc);
}

/* A signaled BIND_MW or LOCAL_INV on side 1: its status, the opcode checked. */
static int local_op(struct ibv_qp *peer, struct ibv_send_wr *wr, enum ibv_wc_opcode want)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int st;

	wr->send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(peer, wr, &bad))
		return -1;
	st = wait_wc(s[1].cq, &wc);
	T_EQ(wc.opcode, want, "local operation's completion opcode");
	return st;
}

/* Side 1 owns the MR and the windows; side 0 reaches them. */
static void memory_windows(struct ibv_mr *lmr, uint8_t *lbuf)
{
	uint8_t *rbuf = h_cold(LEN);
	struct ibv_mr *rmr = ibv_reg_mr(s[1].pd, rbuf, LEN, ACCESS | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw1 = ibv_alloc_mw(s[1].pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(s[1].pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind b1 = { .wr_id = 21, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { rmr, (uintptr_t)rbuf + 4096, 8192,
			       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ } };
	struct ibv_send_wr b2 = { .wr_id = 22, .opcode = IBV_WR_BIND_MW };
	struct ibv_send_wr inv = { .wr_id = 23, .opcode = IBV_WR_LOCAL_INV };
	struct ibv_device_attr da;
	struct ibv_qp *qp, *peer;
	struct ibv_wc wc;
	uint32_t old;

	T_CHECK(!ibv_query_device(s[1].ctx, &da) && (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
		(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && da.max_mw > 0,
		"query_device reports memory windows");
	T_CHECK(rmr && mw1 && mw2, "MR with MW_BIND and windows of type 1 and 2: %m");
	if (!rmr || !mw1 || !mw2 || !(qp = qp_pair(&peer)))
		return;
	T_EQ(mw1->type, IBV_MW_TYPE_1, "mw1 type");
	old = mw1->rkey;
	T_EQ(ibv_bind_mw(peer, mw1, &b1), 0, "ibv_bind_mw");
	T_EQ(mw1->rkey, ibv_inc_rkey(old), "ibv_bind_mw moved the rkey");
	T_EQ(wait_wc(s[1].cq, &wc), IBV_WC_SUCCESS, "type 1 bind completes");
	T_EQ(wc.opcode, IBV_WC_BIND_MW, "as BIND_MW");
	memset(lbuf, 0x5a, 256);
	T_EQ(rdma_via(qp, IBV_WR_RDMA_WRITE, lmr, lbuf, 256, rbuf + 4096 + 100, mw1->rkey),
	     IBV_WC_SUCCESS, "WRITE through the type 1 window");
	T_CHECK(!memcmp(rbuf + 4096 + 100, lbuf, 256), "the write landed");
	T_EQ(rdma_via(qp, IBV_WR_RDMA_READ, lmr, lbuf + 1024, 256, rbuf + 4096 + 8192 - 256,
		      mw1->rkey), IBV_WC_SUCCESS, "READ through the type 1 window");

	b2.bind_mw.mw = mw2;
	b2.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
	b2.bind_mw.bind_info = (struct ibv_mw_bind_info){ rmr, (uintptr_t)rbuf, 4096,
		IBV_ACCESS_REMOTE_WRITE };
	T_EQ(local_op(peer, &b2, IBV_WC_BIND_MW), IBV_WC_SUCCESS, "type 2 bind by WR");
	T_EQ(rdma_via(qp, IBV_WR_RDMA_WRITE, lmr, lbuf, 64, rbuf, b2.bind_mw.rkey),
	     IBV_WC_SUCCESS, "WRITE through the type 2 window");
	T_EQ(ibv_dereg_mr(rmr), EINVAL, "an MR with bound windows is not deregistered");
	inv.invalidate_rkey = b2.bind_mw.rkey;
	T_EQ(local_op(peer, &inv, IBV_WC_LOCAL_INV), IBV_WC_SUCCESS, "LOCAL_INV");
	T_EQ(rdma_via(qp, IBV_WR_RDMA_WRITE, lmr, lbuf, 64, rbuf, b2.bind_mw.rkey),
	     IBV_WC_REM_ACCESS_ERR, "WRITE after LOCAL_INV");
	qp_pair_free(qp, peer);

	if ((qp = qp_pair(&peer))) {
		T_EQ(rdma_via(qp, IBV_WR_RDMA_WRITE, lmr, lbuf, 256, rbuf + 4096 + 8192 - 128,
			      mw1->rkey), IBV_WC_REM_ACCESS_ERR, "WRITE past the window's end");
		qp_pair_free(qp, peer);
	}
	while (ibv_poll_cq(s[1].cq, 1, &wc) > 0)
		;	/* the peers' flushed receives, if any */
	T_EQ(ibv_dealloc_mw(mw1), 0, "dealloc a bound type 1 window");
	T_EQ(ibv_dealloc_mw(mw2), 0, "dealloc a type 2 window");
	T_EQ(ibv_dereg_mr(rmr), 0, "then the MR goes");
}

static void refused(struct ibv_context *c, struct ibv_pd *pd)
{
	struct ibv_cq_init_attr_ex cqa = { .cqe = 4, .wc_flags = IBV_WC_EX_WITH_CVLAN };
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
		IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1, .oflags = O_CREAT };
	struct ibv_qp *qp;

	errno = 0;
	T_CHECK(!ibv_alloc_mw(pd, (enum ibv_mw_type)3) && errno == EINVAL, "alloc_mw type 3");
	errno = 0;
	T_CHECK(!ibv_create_cq_ex(c, &cqa) && errno == EOPNOTSUPP, "CVLAN completions");
	errno = 0;
	T_CHECK(!ibv_open_xrcd(c, &xa) && errno == EOPNOTSUPP, "open_xrcd");
	errno = 0;
	T_CHECK(!ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, ACCESS) && errno == EOPNOTSUPP, "dmabuf");
	errno = 0;
	T_CHECK(!make_qp(&s[0], 1u << 20) && errno == EINVAL, "inline beyond the limit: EINVAL");
	{
		struct ibv_qp_init_attr a = { .send_cq = s[0].cq, .recv_cq = s[0].cq,
			.qp_type = IBV_QPT_RC, .cap = { 8, 8, 1, 1, 64 } };

		qp = ibv_create_qp(pd, &a);
		T_CHECK(qp && a.cap.max_inline_data >= 64, "inline 64 granted and written back");
		if (qp)
			ibv_destroy_qp(qp);
	}
}

/* Queue limits as the kernel and rxe give them (rdma-core's test_cq, test_qpex): a
 * completion vector per possible CPU and EINVAL beyond; cqe beyond max_cqe EINVAL; a QP of
 * no send or no receive WRs is made, and a post to that queue is ENOMEM; MR-only access
 * bits on a QP are ignored. */
static void queue_limits(struct ibv_context *c, struct ibv_pd *pd, struct ibv_mr *mr,
			 uint8_t *buf)
{
	struct ibv_device_attr da;
	struct ibv_cq *cq;
	struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND }, *sbad;
	struct ibv_qp_init_attr a = { .send_cq = s[0].cq, .recv_cq = s[0].cq,
		.qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 4, .max_recv_wr = 0,
		.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_ON_DEMAND };
	struct ibv_qp *qp;
	long cpus = sysconf(_SC_NPROCESSORS_CONF);

	T_EQ(c->num_comp_vectors, (int)(cpus > 0 ? cpus : 1), "a completion vector per CPU");
	cq = ibv_create_cq(c, 4, NULL, NULL, c->num_comp_vectors - 1);
	T_CHECK(cq != NULL, "the last vector: %m");
	if (cq)
		ibv_destroy_cq(cq);
	errno = 0;
	T_CHECK(!ibv_create_cq(c, 4, NULL, NULL, c->num_comp_vectors) && errno == EINVAL,
		"vector num_comp_vectors: EINVAL (%m)");
	T_EQ(ibv_query_device(c, &da), 0, "query_device");
	errno = 0;
	T_CHECK(!ibv_create_cq(c, da.max_cqe + 1, NULL, NULL, 0) && errno == EINVAL,
		"max_cqe + 1: EINVAL (%m)");
	qp = ibv_create_qp(pd, &a);
	T_CHECK(qp != NULL, "a send-only QP (max_recv_wr 0): %m");
	if (qp) {
		T_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS), 0, "INIT with ON_DEMAND among the access bits");
		T_EQ(ibv_post_recv(qp, &rwr, &rbad), ENOMEM, "a receive on it: ENOMEM");
		ibv_destroy_qp(qp);
	}
	a.cap.max_send_wr = 0;
	a.cap.max_recv_wr = 4;
	qp = ibv_create_qp(pd, &a);
	T_CHECK(qp != NULL, "a receive-only QP (max_send_wr 0): %m");
	if (qp) {
		T_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS), 0, "INIT");
		struct ibv_qp *peer = peer_of(qp);

		T_EQ(ibv_post_recv(qp, &rwr, &rbad), 0, "a receive on it");
		T_CHECK(peer && !connect_qp(qp, peer->qp_num, &s[1].gid), "INIT->RTR->RTS");
		T_EQ(ibv_post_send(qp, &swr, &sbad), ENOMEM, "a send on it in RTS: ENOMEM");
		ibv_destroy_qp(qp);
		if (peer)
			ibv_destroy_qp(peer);
	}
}

/* A QP's completions still in its CQ when it is reset leave the CQ, as mlx5's cq_clean
 * does (rdma-core's test_mr_rereg_pd brings a QP back from ERR and polls for new work): a
 * receive flushed by ERR, not polled, is gone after RESET; a completion of another QP on
 * the same CQ stays. */
static void reset_cleans_cq(struct ibv_context *c, struct ibv_pd *pd, struct ibv_mr *mr,
			    uint8_t *buf)
{
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR }, reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 11, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_qp *qp[2] = { NULL, NULL };
	struct ibv_wc wc[4];
	int n = -1;

	T_CHECK(cq != NULL, "a CQ: %m");
	a.send_cq = a.recv_cq = cq;
	for (int i = 0; cq && i < 2; i++) {
		qp[i] = ibv_create_qp(pd, &a);
		T_CHECK(qp[i] && !to_init(qp[i]) && !ibv_post_recv(qp[i], &rwr, &bad) &&
			!ibv_modify_qp(qp[i], &err, IBV_QP_STATE), "QP %d: INIT, a receive, ERR: %m",
			i);
	}
	if (qp[0] && qp[1]) {
		usleep(20000);	/* both flushes are in the ring */
		T_EQ(ibv_modify_qp(qp[0], &reset, IBV_QP_STATE), 0, "QP 0 to RESET");
		n = ibv_poll_cq(cq, 4, wc);
		T_EQ(n, 1, "one completion left: QP 1's flush");
		T_CHECK(n == 1 && wc[0].qp_num == qp[1]->qp_num && wc[0].status == IBV_WC_WR_FLUSH_ERR,
			"QP 1's flush, QP 0's gone");
	}
	for (int i = 0; i < 2; i++)
		if (qp[i])
			ibv_destroy_qp(qp[i]);
	if (cq)
		ibv_destroy_cq(cq);
}

/* ibv_qp_ex: WRITE, ATOMIC_WRITE and FLUSH into side 1's MR; ibv_cq_ex: timestamps. */
static void extended_api(uint8_t *lbuf, struct ibv_mr *lmr, uint8_t *rbuf, struct ibv_mr *rmr)
{
	struct ibv_cq_init_attr_ex cqa = { .cqe = 64,
		.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(s[0].ctx, &cqa);
	struct ibv_qp_init_attr_ex qa = { .send_cq = ibv_cq_ex_to_cq(cqx),
		.recv_cq = ibv_cq_ex_to_cq(cqx), .qp_type = IBV_QPT_RC,
		.cap = { 16, 16, 1, 1, 0 }, .pd = s[0].pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE |
				  IBV_QP_EX_WITH_FLUSH };
	struct ibv_poll_cq_attr pa = { 0 };
	uint64_t word = 0x0123456789abcdefull, ts[3] = { 0 };
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp, *peer = NULL;
	int n = 0, rc;

	T_CHECK(cqx != NULL, "create_cq_ex with timestamps: %m");
	if (!cqx || !(qp = ibv_create_qp_ex(s[0].ctx, &qa))) {
		T_CHECK(0, "create_qp_ex: %m");
		return;
	}
	qpx = ibv_qp_to_qp_ex(qp);
	T_CHECK(qpx != NULL, "qp_to_qp_ex");
	T_EQ(to_init(qp), 0, "INIT");
	peer = peer_of(qp);
	T_CHECK(peer && !connect_qp(qp, peer->qp_num, &s[1].gid), "RTS");
	memset(lbuf, 0x5c, 4096);
	ibv_wr_start(qpx);
	qpx->wr_id = 10;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, rmr->rkey, (uintptr_t)rbuf);
	ibv_wr_set_sge(qpx, lmr->lkey, (uintptr_t)lbuf, 4096);
	qpx->wr_id = 11;
	ibv_wr_atomic_write(qpx, rmr->rkey, (uintptr_t)rbuf + 8192, &word);
	qpx->wr_id = 12;
	ibv_wr_flush(qpx, rmr->rkey, (uintptr_t)rbuf, 8200, IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE);
	T_EQ(ibv_wr_complete(qpx), 0, "wr_complete posts three");
	for (int tries = 0; n < 3 && tries < 2000000; tries++) {
		if ((rc = ibv_start_poll(cqx, &pa)) == ENOENT)
			continue;
		T_EQ(rc, 0, "start_poll");
		T_EQ(cqx->status, IBV_WC_SUCCESS, "completion status");
		T_EQ(cqx->wr_id, 10u + (unsigned)n, "wr_id in order");
		if (n == 2)
			T_EQ(ibv_wc_read_opcode(cqx), IBV_WC_FLUSH, "FLUSH completes as IBV_WC_FLUSH");
		ts[n++] = ibv_wc_read_completion_ts(cqx);
		ibv_end_poll(cqx);
	}
	T_EQ(n, 3, "three completions");
	T_CHECK(ts[0] && ts[0] <= ts[1] && ts[1] <= ts[2], "timestamps run forward");
	T_CHECK(rbuf[0] == 0x5c && rbuf[4095] == 0x5c, "the WRITE landed");
	T_CHECK(!memcmp(rbuf + 8192, &word, 8), "the ATOMIC_WRITE landed");
	T_EQ(ibv_start_poll(cqx, &pa), ENOENT, "an empty CQ: ENOENT");
	ibv_destroy_qp(qp);
	if (peer)
		ibv_destroy_qp(peer);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void event_fds(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(s[0].ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(s[0].ctx, 4, NULL, ch, 0) : NULL, *got;
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART, as qperf */
	struct itimerval t = { .it_value = { 0, 100000 } };
	struct ibv_async_event ev;
	void *ctx;
	int fl;

	T_CHECK(ch && cq, "channel and CQ: %m");
	if (!ch || !cq)
		return;
	fl = fcntl(ch->fd, F_GETFL);
	fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	errno = 0;
	T_EQ(ibv_get_cq_event(ch, &got, &ctx), -1, "non-blocking channel, nothing armed");
	T_EQ(errno, EAGAIN, "EAGAIN");
	fcntl(ch->fd, F_SETFL, fl);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &t, NULL);
	errno = 0;
	T_EQ(ibv_get_cq_event(ch, &got, &ctx), -1, "a blocking wait a signal interrupts");
	T_EQ(errno, EINTR, "EINTR");
	fl = fcntl(s[0].ctx->async_fd, F_GETFL);
	fcntl(s[0].ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	/* events already there (GID_CHANGE when the veth's IPv6 address settles) first */
	for (int i = 0; i < 8 && !ibv_get_async_event(s[0].ctx, &ev); i++)
		ibv_ack_async_event(&ev);
	errno = 0;
	T_EQ(ibv_get_async_event(s[0].ctx, &ev), -1, "non-blocking async fd, no event");
	T_EQ(errno, EAGAIN, "EAGAIN");
	fcntl(s[0].ctx->async_fd, F_SETFL, fl);
	ibv_destroy_cq(cq);
	T_EQ(ibv_destroy_comp_channel(ch), 0, "destroy channel");
}

/* An async event of type within timeout_ms: true when it came (acknowledged). */
static bool wait_event(struct ibv_context *c, enum ibv_event_type type, void **elem,
		       int timeout_ms)
{
	struct pollfd p = { .fd = c->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	while (poll(&p, 1, timeout_ms) == 1) {
		if (ibv_get_async_event(c, &ev))
			return false;
		if (elem)
			*elem = type == ODPEMU_IBV_EVENT_MR_DECOHERENCE ?
				(void *)odpemu_ibv_event_mr(&ev) : NULL;
		ibv_ack_async_event(&ev);
		if (ev.event_type == type)
			return true;
	}
	return false;
}

/* A pinned MR whose pages the process replaces: odpemu's decoherence event names it. */
static void decoherence(void)
{
	uint8_t *p = h_cold(LEN);
	struct ibv_mr *mr = ibv_reg_mr(s[0].pd, p, LEN, ACCESS);
	void *which = NULL;

	T_CHECK(mr != NULL, "pinned MR: %m");
	if (!mr)
		return;
	T_CHECK(mmap(p, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		     0) == p, "remap: %m");
	T_CHECK(wait_event(s[0].ctx, ODPEMU_IBV_EVENT_MR_DECOHERENCE, &which, 5000),
		"MR_DECOHERENCE event");
	T_CHECK(which == mr, "it names the MR");
	T_EQ(ibv_dereg_mr(mr), 0, "dereg");
}

/* The notifier through the drop-in (odpemu/verbs_ext.h), in a child: its seccomp filter
 * stays on the process that installs it. A watched page unmapped: Z set when munmap
 * returns; an ibv_context that is not one of odpemu's: EINVAL. */
static void watch_through_verbs(void)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		static uint64_t z __attribute__((aligned(8)));
		struct ibv_device **list = ibv_get_device_list(NULL);
		struct ibv_context *c = list && list[0] ? ibv_open_device(list[0]) : NULL;
		struct odpemu_watch *w = NULL;
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		int ok = c && p != MAP_FAILED &&
			 odpemu_ibv_watch_create(c, p, 4096, &z, &w) == 0 &&
			 munmap(p, 4096) == 0 && __atomic_load_n(&z, __ATOMIC_ACQUIRE) == 1 &&
			 odpemu_ibv_watch_destroy(w) == 0 &&
			 odpemu_ibv_watch_create(NULL, &z, 8, &z, &w) == EINVAL;

		_exit(ok ? 0 : 1);
	}
	T_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0, "odpemu_ibv_watch_create: Z set before munmap returned "
		"(child status %#x)", status);
}

/* Without a userfaultfd, this process took the seccomp route at its first MR: a fork child
 * inherits its filter and cannot install its own listener (EBUSY; docs/emu.md). With one,
 * the child watches as any process. The host report says which. */
static void child_of_seccomp_route(void)
{
	struct odpemu_context *ctx = h_open(&env, 0);
	bool route = ctx && h_host_verdict(ctx, "userfaultfd") != ODPEMU_HOST_AVAILABLE;
	int status = -1, want = route ? EBUSY : 0;
	pid_t pid;

	if (ctx)
		odpemu_close_device(ctx);
	if ((pid = fork()) == 0) {
		static uint64_t z __attribute__((aligned(8)));
		struct ibv_device **list = ibv_get_device_list(NULL);
		struct ibv_context *c = list && list[0] ? ibv_open_device(list[0]) : NULL;
		struct odpemu_watch *w = NULL;

		_exit(c && odpemu_ibv_watch_create(c, &z, 8, &z, &w) == want ? 0 : 1);
	}
	T_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0, "a fork child's watch: %s (child status %#x)",
		route ? "EBUSY, the parent's seccomp route" : "made", status);
}

/* The lease holder of lease_through_verbs: acknowledges the first decoherence event. */
static void *ack_one(void *arg)
{
	struct ibv_context *c = arg;
	struct ibv_async_event ev;

	if (ibv_get_async_event(c, &ev) == 0) {
		if (ev.event_type == ODPEMU_IBV_EVENT_MR_DECOHERENCE)
			__atomic_store_n(&lease_event_mr, odpemu_ibv_event_mr(&ev), __ATOMIC_RELEASE);
		ibv_ack_async_event(&ev);
	}
	return NULL;
}

/* MR leases through the drop-in, in a child (the filter stays on its process): a leased
 * MR's page unmapped while a thread acknowledges the event; mapped again and restored,
 * keys unchanged; a restore of a coherent lease is EINVAL. */
static bool lease_child(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *c = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_pd *pd = c ? ibv_alloc_pd(c) : NULL;
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = pd && p != MAP_FAILED ?
		ibv_reg_mr(pd, p, 4096, IBV_ACCESS_LOCAL_WRITE | ODPEMU_IBV_ACCESS_LEASE) : NULL;
	uint32_t lkey = mr ? mr->lkey : 0;
	pthread_t t;

	if (!mr || pthread_create(&t, NULL, ack_one, c))
		return false;
	if (munmap(p, 4096) || pthread_join(t, NULL) ||
	    __atomic_load_n(&lease_event_mr, __ATOMIC_ACQUIRE) != mr)
		return false;
	if (mmap(p, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		 0) != p)
		return false;
	return odpemu_ibv_restore_mr(mr) == 0 && mr->lkey == lkey &&
	       odpemu_ibv_restore_mr(mr) == EINVAL && odpemu_ibv_restore_mr(NULL) == EINVAL &&
	       ibv_dereg_mr(mr) == 0;
}

static void lease_through_verbs(void)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0)
		_exit(lease_child() ? 0 : 1);
	T_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0, "a leased MR through the drop-in: broken, acknowledged, "
		"restored with the same keys (child status %#x)", status);
}

/* UD both ways: the reply's AH comes from the request's completion and GRH. */
static struct ibv_qp *ud_qp(struct side *x)
{
	struct ibv_qp_init_attr a = { .send_cq = x->cq, .recv_cq = x->cq, .qp_type = IBV_QPT_UD,
		.cap = { 8, 8, 1, 1, 0 } };
	struct ibv_qp *qp = ibv_create_qp(x->pd, &a);
	struct ibv_qp_attr q = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111 };

	if (!qp || ibv_modify_qp(qp, &q, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				 IBV_QP_QKEY))
		return NULL;
	q.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &q, IBV_QP_STATE))
		return NULL;
	q.qp_state = IBV_QPS_RTS;
	q.sq_psn = 7;
	return ibv_modify_qp(qp, &q, IBV_QP_STATE | IBV_QP_SQ_PSN) ? NULL : qp;
}

static int ud_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn, struct ibv_mr *mr,
		   void *buf, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = 0x11111111 } }, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static int ud_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static void ud_reply(uint8_t *b0, struct ibv_mr *m0, uint8_t *b1, struct ibv_mr *m1)
{
	struct ibv_qp *q0 = ud_qp(&s[0]), *q1 = ud_qp(&s[1]);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
		.grh = { .dgid = s[1].gid, .sgid_index = GID_IDX, .hop_limit = 1 } };
	struct ibv_ah *ah = ibv_create_ah(s[0].pd, &aa), *back = NULL;
	struct ibv_wc wc;

	T_CHECK(q0 && q1 && ah, "UD QPs and AH: %m");
	if (!q0 || !q1 || !ah)
		return;
	memset(b0, 0x31, 64);
	T_EQ(ud_recv(q1, m1, b1, 40 + 64), 0, "post_recv with room for the GRH");
	T_EQ(ud_recv(q0, m0, b0 + 4096, 40 + 64), 0, "post_recv on side 0");
	T_EQ(ud_send(q0, ah, q1->qp_num, m0, b0, 64), 0, "UD send");
	T_EQ(wait_wc(s[0].cq, &wc), IBV_WC_SUCCESS, "send completion");
	T_EQ(wait_wc(s[1].cq, &wc), IBV_WC_SUCCESS, "receive completion");
	T_CHECK(wc.wc_flags & IBV_WC_GRH, "IBV_WC_GRH");
	T_EQ(wc.byte_len, 40 + 64, "byte_len counts the GRH area");
	T_EQ(wc.src_qp, q0->qp_num, "src_qp");
	T_EQ(wc.sl, 2, "sl 2: RoCEv2 over IPv4, as mlx5 says it");
	T_CHECK(b1[20] == 0x45 && b1[40] == 0x31, "IPv4 header at +20, data at +40");
	back = ibv_create_ah_from_wc(s[1].pd, &wc, (struct ibv_grh *)b1, 1);
	T_CHECK(back != NULL, "create_ah_from_wc: %m");
	if (back) {
		T_EQ(ud_send(q1, back, wc.src_qp, m1, b1 + 40, 64), 0, "the reply");
		T_EQ(wait_wc(s[1].cq, &wc), IBV_WC_SUCCESS, "reply sent");
		T_EQ(wait_wc(s[0].cq, &wc), IBV_WC_SUCCESS, "reply received");
		T_CHECK(b0[4096 + 40] == 0x31, "the reply carried the bytes back");
		ibv_destroy_ah(back);
	}
	ibv_destroy_ah(ah);
	ibv_destroy_qp(q0);
	ibv_destroy_qp(q1);
}

/* rereg, resize, fork rules, names: the smaller verbs, as rdma-core defines them. */
static void small_verbs(struct ibv_mr *lmr, struct ibv_cq *cq)
{
	uint32_t lkey = lmr->lkey;

	T_EQ(ibv_rereg_mr(lmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ), 0, "rereg access");
	T_EQ(lmr->lkey, lkey, "the keys stay across rereg, as on rxe and mlx5");
	T_EQ(ibv_rereg_mr(lmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, ACCESS), 0,
	     "rereg back");
	T_EQ(ibv_rereg_mr(lmr, 0x80, NULL, NULL, 0, ACCESS), IBV_REREG_MR_ERR_INPUT,
	     "rereg: unknown flag");
	T_EQ(ibv_resize_cq(cq, 16), 0, "resize down");
	T_EQ(cq->cqe, 16, "cqe written back");
	T_EQ(ibv_resize_cq(cq, 300), 0, "resize up");
	T_EQ(cq->cqe, 512, "cqe: the size granted");
	T_EQ(ibv_fork_init(), EINVAL, "fork_init after MRs exist: too late, as rdma-core");
	T_EQ(ibv_is_fork_initialized(), IBV_FORK_DISABLED, "fork support off");
	T_CHECK(!strcmp(ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), "remote access error"),
		"wc_status_str");
	T_CHECK(!strcmp(ibv_event_type_str(IBV_EVENT_DEVICE_FATAL), "local catastrophic error"),
		"event_type_str");
	T_CHECK(!strcmp(ibv_port_state_str(IBV_PORT_ACTIVE), "active"), "port_state_str");
	T_CHECK(!strcmp(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter"),
		"node_type_str");
	T_EQ(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125, "rate_to_mbps");
	T_EQ(mult_to_ibv_rate(4), IBV_RATE_10_GBPS, "mult_to_ibv_rate");
}

/* count signalled UD SENDs of 8 bytes through ah (to a QPN nobody has: a UD send completes
 * as it goes out), wr_id first.. */
static int post_ud_sends(struct ibv_qp *qp, struct ibv_ah *ah, struct ibv_mr *mr, uint8_t *buf,
			 uint64_t first, int count)
{
	for (int i = 0; i < count; i++) {
		struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = first + (uint64_t)i, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = ah, .remote_qpn = 0xabcde, .remote_qkey = 0x11111111 } }, *bad;

		if (ibv_post_send(qp, &wr, &bad))
			return -1;
	}
	return 0;
}

/* One event for cq on ch within 5 s, acknowledged. */
static bool got_event(struct ibv_comp_channel *ch, struct ibv_cq *cq)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ctx;

	if (poll(&p, 1, 5000) != 1 || ibv_get_cq_event(ch, &ev_cq, &ctx) || ev_cq != cq)
		return false;
	ibv_ack_cq_events(cq, 1);
	return true;
}

/* The completions first.. (count of them) in order through the ibv_cq_ex API, then none. */
static void expect_wr_ids(struct ibv_cq_ex *cqx, uint64_t first, int count, const char *what)
{
	struct ibv_poll_cq_attr pa = { 0 };
	int n = 0, rc;

	for (int tries = 0; n < count && tries < 2000000; tries++) {
		if ((rc = ibv_start_poll(cqx, &pa)) == ENOENT)
			continue;
		T_CHECK(!rc && cqx->status == IBV_WC_SUCCESS && cqx->wr_id == first + (uint64_t)n,
			"%s: completion %d: rc %d status %d wr_id %llu", what, n, rc,
			(int)cqx->status, (unsigned long long)cqx->wr_id);
		if (!rc)
			ibv_end_poll(cqx);
		n++;
	}
	T_CHECK(n == count, "%s: %d completions, want %d", what, n, count);
	T_CHECK(ibv_start_poll(cqx, &pa) == ENOENT, "%s: then none", what);
}

/* ibv_resize_cq on a CQ of ibv_create_cq_ex with a completion channel, completions waiting
 * in it (rdma-core's test_resize_cq, rxe_cq_chk_attr's rules): they survive a grow and a
 * shrink in order, a shrink below them and a size beyond max_cqe are EINVAL, new ones land
 * and events keep firing. UD sends complete as they go out, and the daemon takes what was
 * posted before it counts the completions waiting: no sleeps. */
static void resize_cq(uint8_t *buf, struct ibv_mr *mr)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(s[0].ctx);
	struct ibv_cq_init_attr_ex a = { .cqe = 4, .channel = ch, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_cq_ex *cqx = ch ? ibv_create_cq_ex(s[0].ctx, &a) : NULL;
	struct side x = { .ctx = s[0].ctx, .pd = s[0].pd, .cq = cqx ? ibv_cq_ex_to_cq(cqx) : NULL };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
		.grh = { .dgid = s[1].gid, .sgid_index = GID_IDX, .hop_limit = 1 } };
	struct ibv_ah *ah = ibv_create_ah(s[0].pd, &aa);
	struct ibv_qp *qp = x.cq ? ud_qp(&x) : NULL;
	struct ibv_cq *cq = x.cq;
	struct ibv_device_attr da;

	if (!qp || !ah) {
		T_CHECK(0, "resize_cq: channel, CQ, UD QP, AH: %m");
		return;
	}
	T_EQ(cq->cqe, 4, "resize_cq: created with 4");
	T_EQ(ibv_req_notify_cq(cq, 0), 0, "arm");
	T_EQ(post_ud_sends(qp, ah, mr, buf, 100, 3), 0, "three sends");
	T_EQ(ibv_resize_cq(cq, 2), EINVAL, "shrink below the 3 waiting: EINVAL");
	T_EQ(cq->cqe, 4, "a refused resize leaves cqe");
	T_EQ(ibv_resize_cq(cq, 100), 0, "grow with 3 waiting");
	T_EQ(cq->cqe, 128, "grown: the size granted, at least the one asked");
	T_CHECK(got_event(ch, cq), "the event of the arm made before the resize");
	T_EQ(post_ud_sends(qp, ah, mr, buf, 103, 2), 0, "two more sends");
	T_EQ(ibv_resize_cq(cq, 4), EINVAL, "shrink below the 5 waiting: EINVAL");
	T_EQ(ibv_resize_cq(cq, 5), 0, "shrink to the 5 waiting");
	T_EQ(cq->cqe, 8, "shrunk");
	T_EQ(ibv_query_device(s[0].ctx, &da), 0, "query_device");
	T_EQ(ibv_resize_cq(cq, da.max_cqe + 1), EINVAL, "beyond max_cqe: EINVAL");
	T_EQ(ibv_resize_cq(cq, 0), EINVAL, "cqe 0: EINVAL");
	T_EQ(cq->cqe, 8, "refusals leave cqe");
	expect_wr_ids(cqx, 100, 5, "after grow and shrink");
	T_EQ(ibv_req_notify_cq(cq, 0), 0, "arm again");
	T_EQ(post_ud_sends(qp, ah, mr, buf, 105, 8), 0, "eight sends fill the shrunk CQ");
	T_CHECK(got_event(ch, cq), "an event after the resize");
	expect_wr_ids(cqx, 105, 8, "after the resize");
	T_EQ(ibv_destroy_qp(qp), 0, "destroy the QP");
	ibv_destroy_ah(ah);
	T_EQ(ibv_destroy_cq(cq), 0, "destroy the resized CQ");
	T_EQ(ibv_destroy_comp_channel(ch), 0, "and its channel");
}

/* Device counter `name` of host 0 through a context of its own. */
static unsigned long long dev_counter(const char *name)
{
	struct odpemu_context *ctx = h_open(&env, 0);
	unsigned long long v = ctx ? h_counter(ctx, ODPEMU_COUNTERS_DEVICE, 0, name) : UINT64_MAX;

	if (ctx)
		odpemu_close_device(ctx);
	return v;
}

/* The counter reaches want within 5 s. */
static bool counter_reaches(const char *name, unsigned long long want)
{
	for (int i = 0; i < 500; i++) {
		if (dev_counter(name) == want)
			return true;
		usleep(10000);
	}
	return false;
}

/* IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN as mlx5 gives it: six completions into a CQ of four
 * lose two (counted), no CQ_ERR, and the CQ and its QP go on; without the flag the same
 * overrun raises CQ_ERR (IBA 11.4.2.1). */
static void cq_overrun(uint8_t *buf, struct ibv_mr *mr)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 4, .wc_flags = IBV_WC_STANDARD_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS, .flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN };
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(s[0].ctx, &a);
	struct side x = { .ctx = s[0].ctx, .pd = s[0].pd, .cq = cqx ? ibv_cq_ex_to_cq(cqx) : NULL };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
		.grh = { .dgid = s[1].gid, .sgid_index = GID_IDX, .hop_limit = 1 } };
	struct ibv_ah *ah = ibv_create_ah(s[0].pd, &aa);
	struct ibv_qp *qp = x.cq ? ud_qp(&x) : NULL;
	unsigned long long lost = dev_counter("cq_overruns_ignored");
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	if (!qp || !ah || lost == UINT64_MAX) {
		T_CHECK(0, "cq_overrun: CQ, UD QP, AH, counter: %m");
		return;
	}
	a.flags = 1u << 7;
	T_CHECK(!ibv_create_cq_ex(s[0].ctx, &a) && errno == EOPNOTSUPP,
		"an unknown CQ flag: EOPNOTSUPP (%m)");
	T_EQ(x.cq->cqe, 4, "cq_overrun: created with 4");
	T_EQ(post_ud_sends(qp, ah, mr, buf, 300, 6), 0, "six sends");
	T_CHECK(counter_reaches("cq_overruns_ignored", lost + 2), "two completions lost, counted");
	T_CHECK(!wait_event(s[0].ctx, IBV_EVENT_CQ_ERR, NULL, 100), "no CQ_ERR");
	expect_wr_ids(cqx, 300, 4, "the four that fitted");
	T_EQ(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), 0, "query the QP");
	T_EQ(qa.qp_state, IBV_QPS_RTS, "the QP goes on");
	T_EQ(post_ud_sends(qp, ah, mr, buf, 310, 3), 0, "three more sends");
	expect_wr_ids(cqx, 310, 3, "after the overrun");
	T_EQ(ibv_destroy_qp(qp), 0, "destroy the QP");
	T_EQ(ibv_destroy_cq(x.cq), 0, "destroy the CQ");

	x.cq = ibv_create_cq(s[0].ctx, 4, NULL, NULL, 0);
	qp = x.cq ? ud_qp(&x) : NULL;
	T_CHECK(qp != NULL, "a CQ without the flag, its QP: %m");
	if (qp) {
		T_EQ(post_ud_sends(qp, ah, mr, buf, 320, 6), 0, "six sends");
		T_CHECK(wait_event(s[0].ctx, IBV_EVENT_CQ_ERR, NULL, 5000), "CQ_ERR without the flag");
		T_EQ(ibv_destroy_qp(qp), 0, "destroy the QP");
	}
	ibv_destroy_cq(x.cq);
	ibv_destroy_ah(ah);
}

/* fork: the child gets its own copy of pinned memory, as Linux 5.13+ gives with rdma-core
 * (odpemu pins by moving pages into shared memory: without a copy a child's malloc and
 * writes would land in the parent's heap). A malloc'd buffer, sharing its page with the
 * heap, pinned on side 1; the child writes it and churns the heap; the parent's bytes stay,
 * and side 0's RDMA WRITE still lands in the parent's. */
static void fork_copy(uint8_t *lbuf, struct ibv_mr *lmr)
{
	uint8_t *b = malloc(256);
	struct ibv_mr *mr;
	struct ibv_sge sge = { (uintptr_t)lbuf, 256, lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int st = -1;
	bool same = true;
	pid_t pid;

	if (!b || !(mr = ibv_reg_mr(s[1].pd, b, 256, ACCESS))) {
		T_CHECK(0, "a pinned MR over malloc'd memory: %m");
		free(b);
		return;
	}
	memset(b, 'p', 256);
	pid = fork();
	if (pid == 0) {
		bool seen = b[0] == 'p' && b[255] == 'p';

		memset(b, 'c', 256);
		for (int i = 1; i < 2000; i++)
			free(malloc((size_t)i * 8));
		_exit(seen ? 0 : 1);
	}
	T_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
		"the child saw the parent's bytes and exited (status %d)", st);
	for (int i = 0; i < 256; i++)
		same &= b[i] == 'p';
	T_CHECK(same, "the child's writes stayed in the child");
	memset(lbuf, 'w', 256);
	wr.wr.rdma.remote_addr = (uintptr_t)b;
	wr.wr.rdma.rkey = mr->rkey;
	T_EQ(ibv_post_send(s[0].qp, &wr, &bad), 0, "RDMA WRITE into the pinned buffer");
	T_EQ(wait_wc(s[0].cq, &wc), IBV_WC_SUCCESS, "completes");
	T_CHECK(b[0] == 'w' && b[255] == 'w', "and lands in the parent's pages");
	ibv_dereg_mr(mr);
	free(b);
}

static int setup(void)
{
	for (int i = 0; i < 2; i++) {
		if (!(s[i].ctx = open_dev(env.host[i].name)) || !(s[i].pd = ibv_alloc_pd(s[i].ctx)) ||
		    !(s[i].cq = ibv_create_cq(s[i].ctx, 256, NULL, NULL, 0)) ||
		    !(s[i].qp = make_qp(&s[i], 64)) || ibv_query_gid(s[i].ctx, 1, GID_IDX, &s[i].gid))
			return -1;
		if (to_init(s[i].qp))
			return -1;
	}
	for (int i = 0; i < 2; i++)
		if (connect_qp(s[i].qp, s[!i].qp->qp_num, &s[!i].gid))
			return -1;
	return 0;
}

int main(void)
{
	uint8_t *lbuf, *rbuf;
	struct ibv_mr *lmr, *rmr;
	struct ibv_wc wc;

	h_up(&env, NULL, NULL, 180);
	if (setup()) {
		T_CHECK(0, "setup: %m");
		h_down(&env);
		return t_done("compat-verbs");
	}
	device_model(s[0].ctx);
	/* first, while this process has registered no memory (docs/emu.md "Without a
	 * userfaultfd": a process that did, with no userfaultfd, has the filter its children
	 * inherit) */
	watch_through_verbs();
	lease_through_verbs();
	lbuf = h_cold(LEN);
	rbuf = h_cold(LEN);
	lmr = ibv_reg_mr(s[0].pd, lbuf, LEN, ACCESS);
	rmr = ibv_reg_mr(s[1].pd, rbuf, LEN, ACCESS | IBV_ACCESS_FLUSH_GLOBAL | IBV_ACCESS_ON_DEMAND);
	T_CHECK(lmr && rmr, "MRs: %m");
	refused(s[0].ctx, s[0].pd);
	memory_windows(lmr, lbuf);
	queue_limits(s[0].ctx, s[0].pd, lmr, lbuf);
	reset_cleans_cq(s[0].ctx, s[0].pd, lmr, lbuf);
	extended_api(lbuf, lmr, rbuf, rmr);
	{
		uint8_t *u0 = h_cold(LEN), *u1 = h_cold(LEN);
		struct ibv_mr *m0 = ibv_reg_mr(s[0].pd, u0, LEN, ACCESS);
		struct ibv_mr *m1 = ibv_reg_mr(s[1].pd, u1, LEN, ACCESS);

		if (m0 && m1)
			ud_reply(u0, m0, u1, m1);
		ibv_dereg_mr(m0);
		ibv_dereg_mr(m1);
	}
	fork_copy(lbuf, lmr);
	resize_cq(lbuf, lmr);
	cq_overrun(lbuf, lmr);
	small_verbs(lmr, s[0].cq);
	event_fds();
	decoherence();
	child_of_seccomp_route();
	bad_arguments(lmr, lbuf);
	ibv_dereg_mr(lmr);
	ibv_dereg_mr(rmr);

	/* the daemon of host 1 dies: its context hears DEVICE_FATAL, its CQ poll fails */
	h_daemon_stop(&env, 1, SIGKILL);
	T_CHECK(wait_event(s[1].ctx, IBV_EVENT_DEVICE_FATAL, NULL, 5000), "DEVICE_FATAL");
	T_CHECK(ibv_poll_cq(s[1].cq, 1, &wc) < 0, "poll_cq on a dead device fails");
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	for (int i = 0; i < 2; i++) {
		ibv_destroy_qp(s[i].qp);
		ibv_destroy_cq(s[i].cq);
		ibv_dealloc_pd(s[i].pd);
		ibv_close_device(s[i].ctx);
	}
	h_down(&env);
	return t_done("compat-verbs");
}
