/* SPDX-License-Identifier: MIT */
/* Small pieces: names (vendor errors as nic/ raises them, MTUs), the handle table, the
 * QP attribute conversion both ways. */
#include <string.h>

#include "nic.h"
#include "qp_attr.h"
#include "t_lib.h"

static void test_names(void)
{
	unsigned i = 0;

#define T_VERR_(n) T_CHECK(!strcmp(odpemu_vendor_err_str(i), #n), "vendor err %u: %s", i, \
			   odpemu_vendor_err_str(i)); i++;
	NIC_VENDOR_ERRS(T_VERR_)
#undef T_VERR_
	T_CHECK(!strcmp(odpemu_vendor_err_str(i), "UNKNOWN"), "past the list");
	T_CHECK(!strcmp(odpemu_mtu_str(ODPEMU_MTU_256), "256"), "256");
	T_CHECK(!strcmp(odpemu_mtu_str(ODPEMU_MTU_4096), "4096"), "4096");
	T_CHECK(!strcmp(odpemu_mtu_str((enum odpemu_mtu)9), "UNKNOWN"), "bad mtu");
	T_EQ(odpemu_mtu_to_bytes(ODPEMU_MTU_256), 256, "256 bytes");
	T_EQ(odpemu_mtu_to_bytes(ODPEMU_MTU_2048), 2048, "2048 bytes");
	T_EQ(odpemu_mtu_to_bytes((enum odpemu_mtu)0), -1, "mtu 0");
}

static void test_table(void)
{
	struct lib_table t = { 0 };
	int objs[100];

	for (int i = 0; i < 100; i++)
		T_EQ(lib_table_add(&t, (uint32_t)((i * 37) % 100 + 1), &objs[i]), 0, "add");
	T_EQ(lib_table_add(&t, 5, &objs[0]), -EEXIST, "duplicate");
	for (int i = 0; i < 100; i++)
		T_CHECK(lib_table_find(&t, (uint32_t)((i * 37) % 100 + 1)) == &objs[i], "find %d", i);
	T_CHECK(!lib_table_find(&t, 0) && !lib_table_find(&t, 101), "absent");
	T_CHECK(lib_table_remove(&t, 38) == &objs[1], "remove");
	T_CHECK(!lib_table_find(&t, 38) && !lib_table_remove(&t, 38), "removed");
	T_EQ(t.n, 99, "count");
	lib_table_free(&t);
}

static void test_qp_attr(void)
{
	struct odpemu_qp_attr a, b;
	struct ipc_qp_attr i;

	memset(&a, 0, sizeof(a));
	a.qp_state = ODPEMU_QPS_RTR;
	a.cur_qp_state = ODPEMU_QPS_INIT;
	a.path_mtu = ODPEMU_MTU_1024;
	a.qkey = 0x11111111;
	a.rq_psn = 0x123;
	a.sq_psn = 0x456;
	a.dest_qp_num = 0x789;
	a.qp_access_flags = ODPEMU_ACCESS_REMOTE_WRITE;
	for (int k = 0; k < 16; k++)
		a.ah_attr.grh.dgid.raw[k] = (uint8_t)k;
	a.ah_attr.grh.flow_label = 5;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = 3;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.port_num = 1;
	a.en_sqd_async_notify = 1;
	a.max_rd_atomic = 4;
	a.max_dest_rd_atomic = 5;
	a.min_rnr_timer = 12;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 6;
	a.pkey_index = 0;
	lib_qp_attr_to_ipc(&a, ODPEMU_QP_STATE | ODPEMU_QP_AV, &i);
	T_EQ(i.dgid[15], 15, "dgid");
	T_EQ(i.min_rnr_timer, 12, "min_rnr_timer");
	lib_qp_attr_from_ipc(&i, &b);
	T_CHECK(!memcmp(&a, &b, sizeof(a)), "round trip");
	a.port_num = 2;
	a.ah_attr.port_num = 1;
	lib_qp_attr_to_ipc(&a, ODPEMU_QP_PORT, &i);
	T_EQ(i.port_num, 2, "QP port with ODPEMU_QP_PORT");
}

int main(void)
{
	test_names();
	test_table();
	test_qp_attr();
	return t_done("misc");
}
