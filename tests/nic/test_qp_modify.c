/* SPDX-License-Identifier: MIT */
/* Modify-QP rules: the normal RESET → INIT → RTR → RTS path per QP type with exactly the
 * required attributes; each missing required attribute and each foreign attribute is
 * refused; only the transitions of IBA table 91 exist; every value range is enforced at
 * and just past its bound. */
#include <errno.h>
#include <string.h>

#include "qp_attr.h"
#include "t.h"

#define S(x) ODPEMU_QPS_##x
#define A(x) ODPEMU_QP_##x

static struct nic_device_attr dev;
static const struct nic_port_limits port = { ODPEMU_MTU_4096, 4 };

/* Attribute values that pass every range check. */
static struct nic_qp_attr good(void)
{
	struct nic_qp_attr a = {
		.path_mtu = ODPEMU_MTU_1024, .qkey = 0x11111111, .rq_psn = 1, .sq_psn = 2,
		.dest_qp_num = 0x12, .qp_access_flags = ODPEMU_ACCESS_REMOTE_WRITE,
		.ah_attr = { .dgid = { [10] = 0xFF, [11] = 0xFF, [12] = 10, [15] = 2 },
			     .is_global = 1, .port_num = 1, .hop_limit = 64 },
		.max_rd_atomic = 16, .max_dest_rd_atomic = 16, .min_rnr_timer = 12,
		.port_num = 1, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
	};
	return a;
}

static int modify(enum odpemu_qp_type type, enum odpemu_qp_state cur, enum odpemu_qp_state next,
		  struct nic_qp_attr a, unsigned mask, const char **why)
{
	a.qp_state = next;
	return nic_qp_check_modify(type, cur, &a, mask | A(STATE), &dev, &port, why);
}

static const enum odpemu_qp_type types[] = { ODPEMU_QPT_RC, ODPEMU_QPT_UC, ODPEMU_QPT_UD };

/* The normal bring-up path: required attributes only succeed; each one missing fails. */
static void test_bring_up(void)
{
	static const enum odpemu_qp_state path[] = { S(RESET), S(INIT), S(RTR), S(RTS) };
	const char *why;

	for (unsigned t = 0; t < 3; t++) {
		for (unsigned i = 0; i + 1 < 4; i++) {
			unsigned req, opt;
			T_EQ(nic_qp_transition_masks(types[t], path[i], path[i + 1], &req, &opt), 0, "exists");
			T_EQ(modify(types[t], path[i], path[i + 1], good(), req, &why), 0,
			     odpemu_qp_state_str(path[i + 1]));
			for (unsigned bit = 0; bit < 32; bit++) {
				if (!(req & (1u << bit)))
					continue;
				T_EQ(modify(types[t], path[i], path[i + 1], good(), req & ~(1u << bit), &why),
				     -EINVAL, "missing required attribute");
				T_CHECK(why && strstr(why, "required"), "reason names the missing attribute: %s",
					why ? why : "(none)");
			}
		}
	}
}

/* The required sets written out independently of the table (IBA table 91). */
static void test_required_sets(void)
{
	static const struct { enum odpemu_qp_type type; enum odpemu_qp_state from, to; unsigned req; } want[] = {
		{ ODPEMU_QPT_RC, S(RESET), S(INIT), A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS) },
		{ ODPEMU_QPT_UC, S(RESET), S(INIT), A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS) },
		{ ODPEMU_QPT_UD, S(RESET), S(INIT), A(PKEY_INDEX) | A(PORT) | A(QKEY) },
		{ ODPEMU_QPT_RC, S(INIT), S(RTR), A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN)
			| A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER) },
		{ ODPEMU_QPT_UC, S(INIT), S(RTR), A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) },
		{ ODPEMU_QPT_UD, S(INIT), S(RTR), 0 },
		{ ODPEMU_QPT_RC, S(RTR), S(RTS), A(SQ_PSN) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY)
			| A(MAX_QP_RD_ATOMIC) },
		{ ODPEMU_QPT_UC, S(RTR), S(RTS), A(SQ_PSN) },
		{ ODPEMU_QPT_UD, S(RTR), S(RTS), A(SQ_PSN) },
		{ ODPEMU_QPT_RC, S(RTS), S(SQD), 0 },
		{ ODPEMU_QPT_RC, S(SQD), S(RTS), 0 },
	};

	for (unsigned i = 0; i < T_ARRAY_SIZE(want); i++) {
		unsigned req = ~0u, opt;
		nic_qp_transition_masks(want[i].type, want[i].from, want[i].to, &req, &opt);
		T_CHECK(req == want[i].req, "%s %s -> %s requires 0x%x, want 0x%x",
			odpemu_qp_type_str(want[i].type), odpemu_qp_state_str(want[i].from),
			odpemu_qp_state_str(want[i].to), req, want[i].req);
	}
}

/* Exactly these transitions exist besides "any → RESET" and "any → ERR". */
static void test_transition_set(void)
{
	static const struct { enum odpemu_qp_state from, to; bool rc; } valid[] = {
		{ S(RESET), S(INIT), 1 }, { S(INIT), S(INIT), 1 }, { S(INIT), S(RTR), 1 },
		{ S(RTR), S(RTS), 1 }, { S(RTS), S(RTS), 1 }, { S(RTS), S(SQD), 1 },
		{ S(SQD), S(RTS), 1 }, { S(SQD), S(SQD), 1 }, { S(SQE), S(RTS), 0 },
	};

	for (unsigned t = 0; t < 3; t++)
		for (int from = 0; from < ODPEMU_QPS_COUNT; from++)
			for (int to = 0; to < ODPEMU_QPS_COUNT; to++) {
				bool want = to == S(RESET) || to == S(ERR);
				unsigned req, opt;
				for (unsigned v = 0; v < T_ARRAY_SIZE(valid); v++)
					if (valid[v].from == (enum odpemu_qp_state)from && valid[v].to == (enum odpemu_qp_state)to)
						want = types[t] != ODPEMU_QPT_RC || valid[v].rc;
				int rc = nic_qp_transition_masks(types[t], from, to, &req, &opt);
				T_CHECK((rc == 0) == want, "%s %s -> %s: %s", odpemu_qp_type_str(types[t]),
					odpemu_qp_state_str(from), odpemu_qp_state_str(to),
					want ? "must exist" : "must not exist");
			}
}

static void test_foreign_and_reset(void)
{
	const char *why;

	T_EQ(modify(ODPEMU_QPT_RC, S(RTS), S(ERR), good(), 0, &why), 0, "RTS -> ERR");
	T_EQ(modify(ODPEMU_QPT_RC, S(ERR), S(RESET), good(), 0, &why), 0, "ERR -> RESET");
	T_EQ(modify(ODPEMU_QPT_RC, S(RTS), S(RESET), good(), A(PKEY_INDEX), &why), -EINVAL,
	     "RESET takes no attributes");
	T_EQ(modify(ODPEMU_QPT_UD, S(RESET), S(INIT), good(), A(PKEY_INDEX) | A(PORT) | A(QKEY) | A(AV),
		    &why), -EINVAL, "UD takes no AV at INIT");
	T_EQ(modify(ODPEMU_QPT_RC, S(RESET), S(INIT), good(), A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS)
		    | A(QKEY), &why), -EINVAL, "RC has no Q_Key");
	T_EQ(modify(ODPEMU_QPT_RC, S(INIT), S(RTR), good(), A(AV) | A(PATH_MTU) | A(DEST_QPN)
		    | A(RQ_PSN) | A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER) | A(ALT_PATH), &why),
	     -EINVAL, "APM unsupported");
	T_CHECK(why && strstr(why, "path migration"), "APM reason: %s", why ? why : "");
	T_EQ(modify(ODPEMU_QPT_RC, S(RESET), S(RTR), good(), 0, &why), -EINVAL, "RESET -> RTR");
	T_EQ(modify(ODPEMU_QPT_RC, S(SQE), S(RTS), good(), 0, &why), -EINVAL, "RC has no SQE");
	T_EQ(modify(ODPEMU_QPT_UD, S(SQE), S(RTS), good(), 0, &why), 0, "UD SQE -> RTS");

	struct nic_qp_attr a = good();
	a.cur_qp_state = S(RTR);
	T_EQ(modify(ODPEMU_QPT_RC, S(RTS), S(RTS), a, A(CUR_STATE), &why), -EINVAL, "cur_qp_state mismatch");
	a.cur_qp_state = S(RTS);
	T_EQ(modify(ODPEMU_QPT_RC, S(RTS), S(RTS), a, A(CUR_STATE), &why), 0, "cur_qp_state match");
	a.qp_state = 9;
	T_EQ(nic_qp_check_modify(ODPEMU_QPT_RC, S(RTS), &a, A(STATE), &dev, &port, &why), -EINVAL,
	     "state 9");
	T_EQ(nic_qp_check_modify(7, S(RESET), &a, 0, &dev, &port, &why), -EINVAL, "type 7");
}

/* One attribute at a time in SQD → SQD (RC), which accepts almost all of them. */
static void range(const char *what, unsigned attr, void (*set)(struct nic_qp_attr *, int), int ok_v,
		  int bad_v)
{
	struct nic_qp_attr a = good();
	const char *why;

	set(&a, ok_v);
	T_CHECK(modify(ODPEMU_QPT_RC, S(SQD), S(SQD), a, attr, &why) == 0, "%s = %d accepted (%s)",
		what, ok_v, why ? why : "");
	a = good();
	set(&a, bad_v);
	T_CHECK(modify(ODPEMU_QPT_RC, S(SQD), S(SQD), a, attr, &why) == -EINVAL, "%s = %d refused", what,
		bad_v);
}

static void set_timeout(struct nic_qp_attr *a, int v) { a->timeout = (uint8_t)v; }
static void set_retry(struct nic_qp_attr *a, int v) { a->retry_cnt = (uint8_t)v; }
static void set_rnr(struct nic_qp_attr *a, int v) { a->rnr_retry = (uint8_t)v; }
static void set_timer(struct nic_qp_attr *a, int v) { a->min_rnr_timer = (uint8_t)v; }
static void set_rd(struct nic_qp_attr *a, int v) { a->max_rd_atomic = (uint8_t)v; }
static void set_dest_rd(struct nic_qp_attr *a, int v) { a->max_dest_rd_atomic = (uint8_t)v; }
static void set_port(struct nic_qp_attr *a, int v) { a->port_num = (uint8_t)v; }
static void set_pkey(struct nic_qp_attr *a, int v) { a->pkey_index = (uint16_t)v; }
static void set_access(struct nic_qp_attr *a, int v) { a->qp_access_flags = (unsigned)v; }
static void set_sgid(struct nic_qp_attr *a, int v) { a->ah_attr.sgid_index = (uint8_t)v; }
static void set_global(struct nic_qp_attr *a, int v) { a->ah_attr.is_global = (uint8_t)v; }
static void set_dgid(struct nic_qp_attr *a, int v) { memset(a->ah_attr.dgid, 0, 16); a->ah_attr.dgid[15] = (uint8_t)v; }

static void test_ranges(void)
{
	struct nic_qp_attr a = good();
	const char *why;

	range("timeout", A(TIMEOUT), set_timeout, 31, 32);
	range("retry_cnt", A(RETRY_CNT), set_retry, 7, 8);
	range("rnr_retry", A(RNR_RETRY), set_rnr, 7, 8);
	range("min_rnr_timer", A(MIN_RNR_TIMER), set_timer, 31, 32);
	range("max_rd_atomic", A(MAX_QP_RD_ATOMIC), set_rd, 128, 129);
	range("max_dest_rd_atomic", A(MAX_DEST_RD_ATOMIC), set_dest_rd, 128, 129);
	range("port_num", A(PORT), set_port, 1, 2);
	range("pkey_index", A(PKEY_INDEX), set_pkey, 0, 1);
	/* access flags: MR-only bits (ON_DEMAND, LOCAL_WRITE) and unknown ones are ignored on a
	 * QP, as the kernel, rxe and mlx5 do (rdma-core's test_odp sets ON_DEMAND there) */
	set_access(&a, ODPEMU_ACCESS_ALL_QP | ODPEMU_ACCESS_ON_DEMAND | ODPEMU_ACCESS_LOCAL_WRITE |
		   (1 << 20));
	T_EQ(modify(ODPEMU_QPT_RC, S(SQD), S(SQD), a, A(ACCESS_FLAGS), &why), 0,
	     "MR-only and unknown access bits accepted on a QP");
	a = good();
	range("sgid_index", A(AV), set_sgid, 3, 4);
	range("is_global", A(AV), set_global, 1, 0);
	range("dgid", A(AV), set_dgid, 1, 0);

	/* INIT → RTR values: PSN width, QPN 0, path MTU above the port's. */
	unsigned rtr = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) | A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER);
	a.rq_psn = 0xFFFFFF;
	T_EQ(modify(ODPEMU_QPT_RC, S(INIT), S(RTR), a, rtr, &why), 0, "rq_psn 0xFFFFFF");
	a.rq_psn = 0x1000000;
	T_EQ(modify(ODPEMU_QPT_RC, S(INIT), S(RTR), a, rtr, &why), -EINVAL, "rq_psn 2^24");
	a = good();
	a.dest_qp_num = 0;
	T_EQ(modify(ODPEMU_QPT_RC, S(INIT), S(RTR), a, rtr, &why), -EINVAL, "dest QPN 0");
	a = good();
	a.path_mtu = ODPEMU_MTU_4096;
	T_EQ(modify(ODPEMU_QPT_RC, S(INIT), S(RTR), a, rtr, &why), 0, "path MTU = active MTU");
	struct nic_port_limits small = { ODPEMU_MTU_1024, 4 };
	a.qp_state = S(RTR);
	T_EQ(nic_qp_check_modify(ODPEMU_QPT_RC, S(INIT), &a, rtr | A(STATE), &dev, &small, &why),
	     -EINVAL, "path MTU above the port's");
	a = good();
	a.sq_psn = 0x1000000;
	T_EQ(modify(ODPEMU_QPT_UD, S(RTR), S(RTS), a, A(SQ_PSN), &why), -EINVAL, "sq_psn 2^24");
}

int main(void)
{
	nic_device_attr_default(&dev);
	test_bring_up();
	test_required_sets();
	test_transition_set();
	test_foreign_and_reset();
	test_ranges();
	return t_done("qp-modify");
}
