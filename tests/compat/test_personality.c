/* SPDX-License-Identifier: MIT */
/*
 * Device personalities (odpemud --personality NAME, docs/personalities.md) as a libibverbs
 * program sees them through the drop-in, between the two daemons of the e2e harness, both
 * started with the personality given as argv[1]; host 1's daemon also has an explicit
 * --fault-policy, the opposite of the personality's default, which must win:
 *  - ibv_query_device_ex: vendor ids, ODP caps (general and per transport), some max_*,
 *    device_cap_flags and device_cap_flags_ex; ibv_query_port: max_mtu;
 *  - RDMA FLUSH and ATOMIC WRITE where the device offers them (odpemu, rxe), refused
 *    where it does not (mlx5): ibv_create_qp_ex with IBV_QP_EX_WITH_FLUSH or
 *    _WITH_ATOMIC_WRITE (EOPNOTSUPP, as rdma-core's mlx5 provider), ibv_reg_mr with FLUSH
 *    access (EOPNOTSUPP, as the kernel's ib_check_mr_access);
 *  - a QP over max_qp_wr or max_sge refused with EINVAL;
 *  - implicit ODP (ibv_reg_mr(pd, NULL, SIZE_MAX, ON_DEMAND)) refused with EINVAL where
 *    the device lacks IBV_ODP_SUPPORT_IMPLICIT (cx4, rxe), registered elsewhere;
 *  - the inline room ibv_create_qp grants: mlx5's rounded-up WQE room on cx*, exactly what
 *    is asked on odpemu and rxe; an inline RDMA WRITE of the granted size arrives, one
 *    byte more is refused;
 *  - a QP's completions left in its CQ when it is reset or destroyed: gone on odpemu and
 *    mlx5 (rdma-core's mlx5 provider cleans the CQs then), still polled on rxe (its
 *    provider and kernel driver leave the CQ alone), another QP's kept on all;
 *  - odpemu-ctl stat --json: each device's personality and its default fault policy;
 *  - on mlx5 personalities: the unmodified ibv_devinfo -v shows the device's ids;
 *  - odpemud --personality frob: exit 2 naming the known ones; --personality list.
 * The expected values are written here from the sources docs/personalities.md cites, not
 * read from nic/personality.c, so a change of the table that drifts from them fails.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "compat_run.h"
#include "harness.h"
#include "verbs_t.h"
#include "odpemu/verbs_ext.h"
#include "t.h"

#define LEN 65536u

/* What a personality must show. */
struct want {
	const char *name;
	uint32_t vendor_id, vendor_part_id;
	uint64_t general;
	uint32_t rc, uc, ud;
	int max_qp_wr, max_sge, max_cqe, max_qp_rd_atom, max_srq_sge;
	bool mlx5_inline;	/* RC 64 asked -> 124, 0 asked -> 60 */
	const char *policy;	/* the default fault policy */
	uint64_t caps_ex;	/* device_cap_flags_ex */
	bool cq_clean;		/* reset and destroy drop the QP's completions (mlx5) */
};

#define RC_MLX5 (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | \
		 IBV_ODP_SUPPORT_READ)
#define ALL_RC (RC_MLX5 | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV | \
		(1u << 6) /* FLUSH */ | (1u << 7) /* ATOMIC_WRITE */)
#define UD_RXE (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV)
/* mlx5_ib_query_device (imaicl: windows) and rxe's RXE_DEVICE_CAP_FLAGS share these, of
 * what odpemu reports; rxe adds FLUSH (both types) and ATOMIC WRITE, mlx5 has neither. */
#define CAPS_MLX5 (IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID | \
		   IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B)
#define CAPS_RXE ((uint64_t)CAPS_MLX5 | IB_UVERBS_DEVICE_FLUSH_GLOBAL | \
		  IB_UVERBS_DEVICE_FLUSH_PERSISTENT | IB_UVERBS_DEVICE_ATOMIC_WRITE)

static const struct want wants[] = {
	{ "odpemu", 0xFFFFFF, 0x0D9E, IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT, ALL_RC,
	  IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE, UD_RXE,
	  1 << 14, 32, (1 << 22) - 1, 128, 27, false, "rnr", CAPS_RXE, true },
	{ "cx4", 0x02c9, 4115, IBV_ODP_SUPPORT, RC_MLX5, 0, IBV_ODP_SUPPORT_SEND,
	  32768, 30, 4194303, 16, 31, true, "rnr", CAPS_MLX5, true },
	{ "cx5", 0x02c9, 4119, IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT,
	  RC_MLX5 | IBV_ODP_SUPPORT_SRQ_RECV, 0, IBV_ODP_SUPPORT_SEND,
	  32768, 30, 4194303, 16, 31, true, "rnr", CAPS_MLX5, true },
	{ "cx6", 0x02c9, 4123, IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT,
	  RC_MLX5 | IBV_ODP_SUPPORT_SRQ_RECV, 0, IBV_ODP_SUPPORT_SEND,
	  32768, 30, 4194303, 16, 31, true, "rnr", CAPS_MLX5, true },
	{ "rxe", 0xFFFFFF, 0, IBV_ODP_SUPPORT, ALL_RC, 0, UD_RXE,
	  1 << 16, 32, (1 << 15) - 1, 128, 27, false, "stall", CAPS_RXE, false },
};

static struct h_env env;
static const struct want *w;

static struct verbs_side s[2];

static void device_caps(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex a;
	struct ibv_port_attr p;

	T_CHECK(!ibv_query_device_ex(ctx, NULL, &a), "query_device_ex: %m");
	T_CHECK(a.orig_attr.vendor_id == w->vendor_id, "%s: vendor_id %#x, want %#x", w->name,
		a.orig_attr.vendor_id, w->vendor_id);
	T_CHECK(a.orig_attr.vendor_part_id == w->vendor_part_id, "%s: vendor_part_id %u, want %u",
		w->name, a.orig_attr.vendor_part_id, w->vendor_part_id);
	T_CHECK(a.odp_caps.general_caps == w->general, "%s: general_odp_caps %#llx, want %#llx",
		w->name, (unsigned long long)a.odp_caps.general_caps,
		(unsigned long long)w->general);
	T_CHECK(a.odp_caps.per_transport_caps.rc_odp_caps == w->rc &&
		a.odp_caps.per_transport_caps.uc_odp_caps == w->uc &&
		a.odp_caps.per_transport_caps.ud_odp_caps == w->ud,
		"%s: rc/uc/ud odp caps %#x/%#x/%#x, want %#x/%#x/%#x", w->name,
		a.odp_caps.per_transport_caps.rc_odp_caps,
		a.odp_caps.per_transport_caps.uc_odp_caps,
		a.odp_caps.per_transport_caps.ud_odp_caps, w->rc, w->uc, w->ud);
	T_CHECK(a.orig_attr.max_qp_wr == w->max_qp_wr && a.orig_attr.max_sge == w->max_sge &&
		a.orig_attr.max_cqe == w->max_cqe &&
		a.orig_attr.max_qp_rd_atom == w->max_qp_rd_atom &&
		a.orig_attr.max_srq_sge == w->max_srq_sge,
		"%s: max_qp_wr %d max_sge %d max_cqe %d max_qp_rd_atom %d max_srq_sge %d",
		w->name, a.orig_attr.max_qp_wr, a.orig_attr.max_sge, a.orig_attr.max_cqe,
		a.orig_attr.max_qp_rd_atom, a.orig_attr.max_srq_sge);
	T_CHECK(a.orig_attr.atomic_cap == IBV_ATOMIC_HCA, "%s: atomic_cap", w->name);
	T_CHECK(a.device_cap_flags_ex == w->caps_ex &&
		a.orig_attr.device_cap_flags == (unsigned)(w->caps_ex & UINT32_MAX),
		"%s: device_cap_flags %#x, _ex %#llx, want %#llx", w->name,
		a.orig_attr.device_cap_flags, (unsigned long long)a.device_cap_flags_ex,
		(unsigned long long)w->caps_ex);
	T_CHECK(!ibv_query_port(ctx, 1, &p) && p.max_mtu == IBV_MTU_4096,
		"%s: port max_mtu %d, want 4096 (5)", w->name, p.max_mtu);
}

static struct ibv_qp *rc_qp(struct verbs_side *x, uint32_t wr, uint32_t sge, uint32_t inl)
{
	struct ibv_qp_init_attr a = { .send_cq = x->cq, .recv_cq = x->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = 4, .max_send_sge = sge,
			 .max_recv_sge = 1, .max_inline_data = inl } };
	return ibv_create_qp(x->pd, &a);
}

/* ibv_create_qp beyond max_qp_wr or max_sge: NULL with EINVAL. */
static void limits(void)
{
	struct ibv_qp *qp;

	errno = 0;
	qp = rc_qp(&s[0], (uint32_t)w->max_qp_wr + 1, 1, 0);
	T_CHECK(!qp && errno == EINVAL, "%s: max_send_wr %d + 1: %p, %m", w->name, w->max_qp_wr,
		(void *)qp);
	if (qp)
		ibv_destroy_qp(qp);
	errno = 0;
	qp = rc_qp(&s[0], 4, (uint32_t)w->max_sge + 1, 0);
	T_CHECK(!qp && errno == EINVAL, "%s: max_send_sge %d + 1: %p, %m", w->name, w->max_sge,
		(void *)qp);
	if (qp)
		ibv_destroy_qp(qp);
	/* mlx5: 30 SGEs fit the 1024-byte WQE of an RC QP ((1024 - 192) / 16 = 52) */
	qp = rc_qp(&s[0], 4, (uint32_t)w->max_sge, 0);
	T_CHECK(qp != NULL, "%s: max_send_sge %d: %m", w->name, w->max_sge);
	if (qp)
		ibv_destroy_qp(qp);
}

static void implicit_odp(void)
{
	bool want_ok = w->general & IBV_ODP_SUPPORT_IMPLICIT;
	struct ibv_mr *mr;
	uint8_t *buf = h_cold(LEN);

	errno = 0;
	mr = ibv_reg_mr(s[0].pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	if (want_ok)
		T_CHECK(mr != NULL, "%s: implicit ODP MR refused: %m", w->name);
	else
		T_CHECK(!mr && errno == EINVAL, "%s: implicit ODP MR: %p, %m, want EINVAL",
			w->name, (void *)mr);
	if (mr)
		ibv_dereg_mr(mr);
	/* explicit ODP works on every personality */
	mr = ibv_reg_mr(s[0].pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	T_CHECK(mr != NULL, "%s: explicit ODP MR: %m", w->name);
	if (mr)
		ibv_dereg_mr(mr);
	munmap(buf, LEN + 4096);
}

/* ibv_create_qp_ex with those send ops: NULL with EOPNOTSUPP unless the device has the
 * cap the op needs. */
static void qp_ex_ops(uint64_t ops, uint64_t cap, const char *what)
{
	struct ibv_qp_init_attr_ex a = { .send_cq = s[0].cq, .recv_cq = s[0].cq,
		.qp_type = IBV_QPT_RC, .cap = { 4, 4, 1, 1, 0 }, .pd = s[0].pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | ops };
	bool want_ok = w->caps_ex & cap;
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp_ex(s[0].ctx, &a);
	if (want_ok)
		T_CHECK(qp != NULL, "%s: create_qp_ex WITH_%s refused: %m", w->name, what);
	else
		T_CHECK(!qp && errno == EOPNOTSUPP, "%s: create_qp_ex WITH_%s: %p, %m, want "
			"EOPNOTSUPP", w->name, what, (void *)qp);
	if (qp)
		ibv_destroy_qp(qp);
}

/* FLUSH and ATOMIC WRITE: a QP may be made with them, and an MR grant FLUSH access, only
 * where the device has them. */
static void op_caps(void)
{
	uint8_t *buf = h_cold(LEN);
	struct ibv_mr *mr;

	qp_ex_ops(IBV_QP_EX_WITH_FLUSH, IB_UVERBS_DEVICE_FLUSH_GLOBAL, "FLUSH");
	qp_ex_ops(IBV_QP_EX_WITH_ATOMIC_WRITE, IB_UVERBS_DEVICE_ATOMIC_WRITE, "ATOMIC_WRITE");
	for (int i = 0; i < 2; i++) {
		unsigned access = i ? IBV_ACCESS_FLUSH_PERSISTENT : IBV_ACCESS_FLUSH_GLOBAL;
		uint64_t cap = i ? IB_UVERBS_DEVICE_FLUSH_PERSISTENT : IB_UVERBS_DEVICE_FLUSH_GLOBAL;

		errno = 0;
		mr = ibv_reg_mr(s[0].pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE | access);
		if (w->caps_ex & cap)
			T_CHECK(mr != NULL, "%s: reg_mr FLUSH access %#x: %m", w->name, access);
		else
			T_CHECK(!mr && errno == EOPNOTSUPP, "%s: reg_mr FLUSH access %#x: %p, %m, "
				"want EOPNOTSUPP", w->name, access, (void *)mr);
		if (mr)
			ibv_dereg_mr(mr);
	}
	munmap(buf, LEN + 4096);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS);
}

/* Two QPs on one CQ, each with a receive flushed by ERR and not polled; then QP 0 is
 * reset (how) or destroyed: its flush is gone where the provider cleans CQs, still there
 * on rxe; QP 1's is there on every device. */
static void cq_clean_after(bool destroy)
{
	const char *how = destroy ? "destroy" : "RESET";
	struct ibv_cq *cq = ibv_create_cq(s[0].ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR }, reset = { .qp_state = IBV_QPS_RESET };
	static uint8_t buf[64];
	struct ibv_mr *mr = ibv_reg_mr(s[0].pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)buf, 8, mr ? mr->lkey : 0 };
	struct ibv_recv_wr rwr = { .wr_id = 11, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_qp *qp[2] = { NULL, NULL };
	struct ibv_wc wc[4];
	uint32_t qpn0 = 0, qpn1;
	int n, want = w->cq_clean ? 1 : 2;

	T_CHECK(cq && mr, "%s: a CQ and an MR: %m", how);
	a.send_cq = a.recv_cq = cq;
	for (int i = 0; cq && mr && i < 2; i++) {
		qp[i] = ibv_create_qp(s[0].pd, &a);
		T_CHECK(qp[i] && !to_init(qp[i]) && !ibv_post_recv(qp[i], &rwr, &bad) &&
			!ibv_modify_qp(qp[i], &err, IBV_QP_STATE), "%s: QP %d: INIT, a receive, "
			"ERR: %m", how, i);
	}
	if (qp[0] && qp[1]) {
		usleep(20000);	/* both flushes are in the ring */
		qpn0 = qp[0]->qp_num;
		qpn1 = qp[1]->qp_num;
		if (destroy) {
			T_EQ(ibv_destroy_qp(qp[0]), 0, "destroy QP 0");
			qp[0] = NULL;
		} else {
			T_EQ(ibv_modify_qp(qp[0], &reset, IBV_QP_STATE), 0, "QP 0 to RESET");
		}
		n = ibv_poll_cq(cq, 4, wc);
		T_CHECK(n == want && wc[n - 1].qp_num == qpn1 &&
			wc[n - 1].status == IBV_WC_WR_FLUSH_ERR &&
			(n == 1 || (wc[0].qp_num == qpn0 && wc[0].status == IBV_WC_WR_FLUSH_ERR)),
			"%s %s of QP 0: %d completion(s) left (want %d: %s)", w->name, how, n, want,
			w->cq_clean ? "QP 1's flush" : "QP 0's flush, then QP 1's");
	}
	for (int i = 0; i < 2; i++)
		if (qp[i])
			ibv_destroy_qp(qp[i]);
	if (cq)
		ibv_destroy_cq(cq);
	if (mr)
		ibv_dereg_mr(mr);
}

/* An inline RDMA WRITE of len bytes from qp to rbuf/rmr: 0, or post_send's error. */
static int write_inline(struct ibv_qp *qp, const uint8_t *src, uint32_t len, uint8_t *rbuf,
			struct ibv_mr *rmr)
{
	struct ibv_sge sge = { (uintptr_t)src, len, 0 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)rbuf, rmr->rkey } }, *bad;
	struct ibv_wc wc;
	int rc = ibv_post_send(qp, &wr, &bad), n = 0;

	if (rc)
		return rc;
	for (int k = 0; k < 5000 && !(n = ibv_poll_cq(s[0].cq, 1, &wc)); k++)
		usleep(1000);
	T_CHECK(n == 1 && wc.status == IBV_WC_SUCCESS, "%s: inline write of %u: n %d status %s",
		w->name, len, n, n == 1 ? ibv_wc_status_str(wc.status) : "-");
	return 0;
}

/* The granted inline room, and that it is room indeed. */
static void inline_room(void)
{
	uint32_t want = w->mlx5_inline ? 124 : 64, got;
	struct ibv_qp_init_attr a = { .send_cq = s[0].cq, .recv_cq = s[0].cq,
		.qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 16, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 64 } };
	struct ibv_qp *qp = ibv_create_qp(s[0].pd, &a), *peer = rc_qp(&s[1], 4, 1, 0);
	uint8_t src[1024], *rbuf = h_cold(LEN);
	struct ibv_mr *rmr = ibv_reg_mr(s[1].pd, rbuf, LEN, IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE);

	got = a.cap.max_inline_data;
	T_CHECK(qp && got == want, "%s: RC max_inline_data 64 granted %u, want %u", w->name,
		got, want);
	a.cap.max_inline_data = 0;
	{
		struct ibv_qp *q0 = ibv_create_qp(s[0].pd, &a);

		T_CHECK(q0 && a.cap.max_inline_data == (w->mlx5_inline ? 60u : 0u),
			"%s: RC max_inline_data 0 granted %u", w->name, a.cap.max_inline_data);
		if (q0)
			ibv_destroy_qp(q0);
	}
	if (!qp || !peer || !rmr || to_init(qp) || to_init(peer) ||
	    rc_connect(qp, peer->qp_num, &s[1].gid, 1) ||
	    rc_connect(peer, qp->qp_num, &s[0].gid, 1)) {
		T_CHECK(0, "%s: inline QP pair: %m", w->name);
		goto out;
	}
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	T_CHECK(!write_inline(qp, src, got, rbuf, rmr), "%s: inline write of %u refused",
		w->name, got);
	T_CHECK(!memcmp(rbuf, src, got), "%s: inline write of %u: data differ", w->name, got);
	T_CHECK(write_inline(qp, src, got + 1, rbuf, rmr) == EINVAL,
		"%s: inline write of %u past the granted %u not refused", w->name, got + 1, got);
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (peer)
		ibv_destroy_qp(peer);
	if (rmr)
		ibv_dereg_mr(rmr);
	munmap(rbuf, LEN + 4096);
}

/* odpemu-ctl stat --json: the personality, and the fault policy: the personality's on
 * host 0, the explicit --fault-policy on host 1. */
static void stat_json(const char *explicit_policy)
{
	for (int i = 0; i < 2; i++) {
		const char *argv[] = { tr_ctl(), "stat", "-d", env.host[i].name, "--json", NULL };
		const char *policy = i ? explicit_policy : w->policy;
		char *out = NULL, got[32] = "", pol[32] = "";
		int rc = tr_run(&env, -1, argv, NULL, &out, 20);

		T_CHECK(rc == 0 && out, "odpemu-ctl stat -d %s --json: exit %d", env.host[i].name,
			rc);
		if (!out)
			continue;
		tr_json(out, "d[\"devices\"][0][\"personality\"]", got, sizeof(got));
		tr_json(out, "d[\"devices\"][0][\"fault_policy\"]", pol, sizeof(pol));
		T_CHECK(!strcmp(got, w->name) && !strcmp(pol, policy),
			"%s: personality '%s' fault_policy '%s', want %s %s:\n%s", env.host[i].name,
			got, pol, w->name, policy, out);
		free(out);
	}
}

/* The unmodified ibv_devinfo -v sees the mlx5 ids. */
static void devinfo(void)
{
	struct cr_args a = { 0 };
	char part[64], *out = NULL;
	int rc;

	if (!w->mlx5_inline)
		return;
	cr_need("ibv_devinfo", "ibverbs-utils");
	cr_push(&a, "ibv_devinfo", "-v", "-d", env.host[0].name, NULL);
	rc = cr_run(&env, 0, &a, NULL, &out, 30);
	snprintf(part, sizeof(part), "vendor_part_id:\t\t\t%u\n", w->vendor_part_id);
	T_CHECK(rc == 0 && strstr(out, "vendor_id:\t\t\t0x02c9\n") && strstr(out, part) &&
		strstr(out, "max_sge:\t\t\t30\n") && strstr(out, "max_qp_wr:\t\t\t32768\n") &&
		strstr(out, "max_mtu:\t\t4096 (5)\n"),
		"ibv_devinfo -v -d %s (%s): exit %d:\n%s", env.host[0].name, w->name, rc, out);
	T_CHECK(!strstr(out, "ODP_SUPPORT_IMPLICIT") == !(w->general & IBV_ODP_SUPPORT_IMPLICIT),
		"ibv_devinfo -v: ODP_SUPPORT_IMPLICIT shown %s", strstr(out, "ODP_SUPPORT_IMPLICIT")
		? "on a device without it" : "missing");
	free(out);
}

/* odpemud's flag itself: an unknown name is a usage error (exit 2) that lists the known
 * ones; --personality list names each, with a line about it, and exits 0. */
static void flag(void)
{
	static const char *const bad[] = { "--personality", "frob", NULL };
	static const char *const list[] = { "--personality", "list", NULL };
	static const char *const names[] = { "odpemu", "cx4", "cx5", "cx6", "rxe" };
	char out[4096];
	int st = h_run(&env, 0, bad, out, sizeof(out));

	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, "--personality 'frob'") &&
		strstr(out, "odpemu, cx4, cx5, cx6, rxe"), "--personality frob: status %#x:\n%s",
		st, out);
	st = h_run(&env, 0, list, out, sizeof(out));
	T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--personality list: status %#x", st);
	for (int i = 0; i < 5; i++) {
		char line[32];

		snprintf(line, sizeof(line), "%-8s ", names[i]);
		T_CHECK(strstr(out, line) != NULL, "--personality list lacks %s:\n%s", names[i],
			out);
	}
}

static int setup(void)
{
	for (int i = 0; i < 2; i++)
		if (verbs_side_open(&s[i], env.host[i].name))
			return -1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *explicit_policy;

	for (size_t i = 0; argc == 2 && i < sizeof(wants) / sizeof(wants[0]); i++)
		if (!strcmp(argv[1], wants[i].name))
			w = &wants[i];
	if (!w) {
		fprintf(stderr, "usage: %s odpemu|cx4|cx5|cx6|rxe\n", argv[0]);
		return 2;
	}
	explicit_policy = strcmp(w->policy, "rnr") ? "rnr" : "stall";
	{
		const char *a[] = { "--personality", w->name, NULL };
		const char *b[] = { "--personality", w->name, "--fault-policy", explicit_policy,
				    NULL };

		h_up(&env, a, b, 150);
	}
	if (setup()) {
		T_CHECK(0, "setup: %m");
	} else {
		device_caps(s[0].ctx);
		limits();
		implicit_odp();
		op_caps();
		inline_room();
		cq_clean_after(false);
		cq_clean_after(true);
		stat_json(explicit_policy);
		devinfo();
		flag();
	}
	if (t_failures) {
		h_show_log(&env, 0);
		h_show_log(&env, 1);
	}
	for (int i = 0; i < 2; i++)
		verbs_side_close(&s[i]);
	T_CHECK(h_down(&env) == 0, "the daemons did not stop cleanly");
	return t_done("compat-personality");
}
