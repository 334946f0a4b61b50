/* SPDX-License-Identifier: MIT */
/* PSN modulo-2^24 arithmetic and the path-MTU rules (REFERENCE.md "Timers and retries"). */
#include "mtu.h"
#include "psn.h"
#include "t.h"

static void test_psn(void)
{
	T_EQ(roce_psn_add(0xFFFFFF, 1), 0, "wrap add");
	T_EQ(roce_psn_add(0xFFFFF0, 0x20), 0x10, "wrap add 0x20");
	T_CHECK(roce_psn_cmp(0, 0xFFFFFF) > 0, "0 is after 0xFFFFFF");
	T_CHECK(roce_psn_cmp(0xFFFFFF, 0) < 0, "0xFFFFFF is before 0");
	T_CHECK(roce_psn_cmp(5, 5) == 0, "equal");
	T_EQ((uint32_t)roce_psn_diff(0x000010, 0xFFFFF0), 0x20, "diff across wrap");
	T_CHECK(roce_psn_diff(0x7FFFFF, 0) > 0, "half window minus one is ahead");
	T_CHECK(roce_psn_diff(0x800000, 0) < 0, "half window is behind");
	/* Only the low 24 bits matter, even if a caller passes garbage above them. */
	T_CHECK(roce_psn_cmp(0xAB000001, 0x00000001) == 0, "high bits ignored");
}

static void test_mtu(void)
{
	static const struct { unsigned netdev; unsigned ib; } rule[] = {
		{ 0, 256 }, { 300, 256 }, { 576, 256 }, { 1000, 512 }, { 1500, 1024 },
		{ 2128, 2048 }, { 4175, 2048 }, { 4176, 4096 }, { 9000, 4096 }, { 65536, 4096 },
	};

	for (enum roce_mtu m = ROCE_MTU_256; m <= ROCE_MTU_4096; m++)
		T_EQ(roce_mtu_from_bytes(roce_mtu_bytes(m)), m, "mtu enum round trip");
	T_EQ(roce_mtu_bytes(ROCE_MTU_256), 256, "256");
	T_EQ(roce_mtu_bytes(ROCE_MTU_4096), 4096, "4096");
	T_EQ(roce_mtu_bytes(0), 0, "enum 0 invalid");
	T_EQ(roce_mtu_bytes(6), 0, "enum 6 invalid");
	T_EQ(roce_mtu_from_bytes(1500), ROCE_MTU_INVALID, "1500 is not an IB MTU");
	for (size_t i = 0; i < sizeof(rule) / sizeof(rule[0]); i++)
		T_EQ(roce_mtu_bytes(roce_mtu_from_netdev(rule[i].netdev)), rule[i].ib, "netdev rule");
}

int main(void)
{
	test_psn();
	test_mtu();
	return t_done("mtu-psn");
}
