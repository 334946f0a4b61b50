/* SPDX-License-Identifier: MIT */
/*
 * The send queue caps a device grants (nic/sq_caps.c): mlx5's WQE sizing for the cx*
 * personalities (rdma-core providers/mlx5/verbs.c mlx5_calc_send_wqe: overhead 192 for an
 * RC/UC QP, 64 for UD; WQE rounded up to 64 bytes, at most 1024; granted inline = WQE -
 * overhead - 4), exactly what is asked for odpemu and rxe; and each personality's table
 * entry consistent with what its NIC then accepts (its max_sge fits one WQE, its
 * max_inline_data is grantable).
 */
#include <errno.h>
#include <string.h>

#include "personality.h"
#include "t.h"

struct sq_case {
	enum odpemu_qp_type type;
	unsigned wr, sge, inl;
	int rc;
	unsigned granted;
};

static const struct sq_case mlx5_cases[] = {
	{ ODPEMU_QPT_RC, 16, 1, 64, 0, 124 },	/* 192 + align16(68) = 272 -> 320 */
	{ ODPEMU_QPT_RC, 16, 1, 0, 0, 60 },	/* 192 + 16 = 208 -> 256 */
	{ ODPEMU_QPT_RC, 16, 4, 124, 0, 124 },	/* granting a grant changes nothing */
	{ ODPEMU_QPT_RC, 16, 1, 828, 0, 828 },	/* the whole 1024-byte WQE */
	{ ODPEMU_QPT_RC, 16, 1, 829, -EINVAL, 0 },
	{ ODPEMU_QPT_RC, 16, 52, 0, 0, 828 },	/* (1024 - 192) / 16 SGEs */
	{ ODPEMU_QPT_RC, 16, 53, 0, -EINVAL, 0 },
	{ ODPEMU_QPT_UC, 16, 1, 64, 0, 124 },
	{ ODPEMU_QPT_UD, 16, 1, 64, 0, 124 },	/* 64 + 80 = 144 -> 192 */
	{ ODPEMU_QPT_UD, 16, 1, 0, 0, 60 },	/* 64 + 16 = 80 -> 128 */
	{ ODPEMU_QPT_UD, 16, 1, 956, 0, 956 },
	{ ODPEMU_QPT_UD, 16, 1, 957, -EINVAL, 0 },
	{ ODPEMU_QPT_RC, 0, 1, 64, 0, 64 },	/* no send queue: as asked */
};

static void mlx5_rule(void)
{
	struct nic_device_attr a;

	nic_personality_attr(nic_personality_find("cx5"), &a);
	for (size_t i = 0; i < sizeof(mlx5_cases) / sizeof(mlx5_cases[0]); i++) {
		const struct sq_case *c = &mlx5_cases[i];
		unsigned inl = c->inl;
		int rc = nic_sq_caps(&a, c->type, c->wr, c->sge, &inl);

		T_CHECK(rc == c->rc && (rc || inl == c->granted),
			"case %zu (type %d, %u SGEs, %u inline): rc %d granted %u, want %d %u", i,
			c->type, c->sge, c->inl, rc, inl, c->rc, c->granted);
	}
}

/* Every personality: its limits grantable by its own rule. */
static void table_consistent(void)
{
	const struct nic_personality *p;

	for (unsigned i = 0; (p = nic_personality_at(i)); i++) {
		struct nic_device_attr a;
		unsigned inl = 0, big;

		nic_personality_attr(p, &a);
		T_CHECK(a.max_qp && a.max_qp_wr && a.max_sge && p->summary && p->fw_ver,
			"%s: empty entry", p->name);
		T_CHECK(!nic_sq_caps(&a, ODPEMU_QPT_RC, 1, a.max_sge, &inl), "%s: max_sge %u does "
			"not fit an RC send WQE", p->name, a.max_sge);
		big = a.max_inline_data;
		T_CHECK(!nic_sq_caps(&a, ODPEMU_QPT_UD, 1, 1, &big) && big == a.max_inline_data,
			"%s: max_inline_data %u not grantable on UD (%u)", p->name,
			a.max_inline_data, big);
		T_CHECK(nic_personality_find(p->name) == p, "%s: find", p->name);
	}
	T_CHECK(!nic_personality_find("frob"), "unknown name found");
	T_CHECK(!strcmp(nic_personality_at(0)->name, "odpemu"), "the default is not first");
}

/* odpemu and rxe grant what is asked. */
static void exact_rule(void)
{
	const char *names[] = { "odpemu", "rxe" };

	for (int i = 0; i < 2; i++) {
		struct nic_device_attr a;
		unsigned inl = 64;

		nic_personality_attr(nic_personality_find(names[i]), &a);
		T_CHECK(!nic_sq_caps(&a, ODPEMU_QPT_RC, 16, 1, &inl) && inl == 64,
			"%s: 64 inline granted %u", names[i], inl);
	}
}

int main(void)
{
	mlx5_rule();
	exact_rule();
	table_consistent();
	return t_done("nic-sq-caps");
}
