/* SPDX-License-Identifier: MIT */
/* Device, port, GID and P_Key queries: the daemon's answers in rdma-core's structs.
 *
 * The GID table is rxe's shape: index 0 is the link-local default GID (fe80::, then the
 * node GUID as interface id, IBA 4.1.1), then the daemon's table (its sending address
 * first, then the interface's others), all reported as RoCE v2. So `-g 1` names the
 * IPv4-mapped address as it does on rxe and mlx5. Like theirs, the table is longer than
 * its entries (CV_GID_TBL_LEN): the rest are empty, which ibv_query_gid_ex answers with
 * ENODATA and ibv_query_gid with a zero GID, as rdma-core does for an empty sysfs entry
 * (rdma-core's test_query_gid_ex_bad_flow looks for one). */
#include <string.h>

#include "compat.h"

#define CV_MAX_MSG		(1u << 31)	/* IBA 9.4.3 */
#define CV_CORE_CLOCK_KHZ	1000000		/* completion timestamps count nanoseconds */
#define CV_LOCAL_ACK_DELAY	15		/* as rxe */
#define CV_PORT_CAPS		(IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS)
#define CV_PHYS_LINK_UP		5		/* ibv_devinfo: "LINK_UP" */
#define CV_GID_TBL_LEN		32		/* entries a port reports: mlx5 256, rxe 1024 */

/* The device's capability flags are the personality's (nic/personality.c), in the kernel
 * ABI's values (odpemu/verbs_types.h): device_cap_flags takes their low 32 bits, as
 * ib_uverbs_query_device does, device_cap_flags_ex all of them. */
static_assert(ODPEMU_DEVICE_PORT_ACTIVE_EVENT == IBV_DEVICE_PORT_ACTIVE_EVENT &&
	      ODPEMU_DEVICE_SYS_IMAGE_GUID == IBV_DEVICE_SYS_IMAGE_GUID &&
	      ODPEMU_DEVICE_RC_RNR_NAK_GEN == IBV_DEVICE_RC_RNR_NAK_GEN &&
	      ODPEMU_DEVICE_MEM_WINDOW == IBV_DEVICE_MEM_WINDOW &&
	      ODPEMU_DEVICE_MEM_WINDOW_TYPE_2B == IBV_DEVICE_MEM_WINDOW_TYPE_2B, "device caps");
static_assert(ODPEMU_DEVICE_FLUSH_GLOBAL == IB_UVERBS_DEVICE_FLUSH_GLOBAL &&
	      ODPEMU_DEVICE_FLUSH_PERSISTENT == IB_UVERBS_DEVICE_FLUSH_PERSISTENT &&
	      ODPEMU_DEVICE_ATOMIC_WRITE == IB_UVERBS_DEVICE_ATOMIC_WRITE, "device caps ex");

static void device_attr(const struct odpemu_device_attr *o, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->fw_ver, o->fw_ver, sizeof(a->fw_ver));
	a->fw_ver[sizeof(a->fw_ver) - 1] = '\0';
	a->node_guid = o->node_guid;
	a->sys_image_guid = o->node_guid;
	a->max_mr_size = o->max_mr_size;
	a->page_size_cap = o->page_size_cap;
	a->vendor_id = o->vendor_id;
	a->vendor_part_id = o->vendor_part_id;
	a->hw_ver = o->hw_ver;
	a->max_qp = o->max_qp;
	a->max_qp_wr = o->max_qp_wr;
	a->device_cap_flags = (unsigned)(o->device_cap_flags & UINT32_MAX);
	a->max_sge = o->max_sge;
	a->max_sge_rd = o->max_sge;
	a->max_cq = o->max_cq;
	a->max_cqe = o->max_cqe;
	a->max_mr = o->max_mr;
	a->max_pd = o->max_pd;
	a->max_mw = o->max_mw;
	a->max_mcast_grp = o->max_mcast_grp;
	a->max_mcast_qp_attach = o->max_mcast_qp_attach;
	a->max_total_mcast_qp_attach = o->max_total_mcast_qp_attach;
	a->max_qp_rd_atom = o->max_qp_rd_atom;
	a->max_res_rd_atom = o->max_qp_rd_atom * o->max_qp;
	a->max_qp_init_rd_atom = o->max_qp_init_rd_atom;
	a->atomic_cap = IBV_ATOMIC_HCA;	/* atomics are one step of the responder's engine */
	a->max_ah = o->max_qp;
	a->max_srq = o->max_srq;
	a->max_srq_wr = o->max_srq_wr;
	a->max_srq_sge = o->max_srq_sge;
	a->max_pkeys = o->max_pkeys;
	a->local_ca_ack_delay = CV_LOCAL_ACK_DELAY;
	a->phys_port_cnt = o->phys_port_cnt;
}

CV_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	struct odpemu_device_attr o;
	int rc;

	if (!context || !attr)
		return cv_fail(EINVAL);
	if ((rc = odpemu_query_device(cv_odp(context), &o)))
		return cv_fail(rc);
	device_attr(&o, attr);
	return 0;
}

/* Only the fields below attr_size are written: a client built on older headers passes a
 * smaller struct (verbs.h: ibv_query_device_ex). */
int cv_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *in,
		       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct odpemu_device_attr o;
	struct ibv_device_attr_ex a;
	int rc;

	if (in && in->comp_mask)
		return cv_fail(EINVAL);
	if (attr_size < sizeof(a.orig_attr))
		return cv_fail(EINVAL);
	if ((rc = odpemu_query_device(cv_odp(context), &o)))
		return cv_fail(rc);
	memset(&a, 0, sizeof(a));
	device_attr(&o, &a.orig_attr);
	a.odp_caps.general_caps = o.odp_caps.general_caps;
	a.odp_caps.per_transport_caps.rc_odp_caps = o.odp_caps.per_transport_caps.rc_odp_caps;
	a.odp_caps.per_transport_caps.uc_odp_caps = o.odp_caps.per_transport_caps.uc_odp_caps;
	a.odp_caps.per_transport_caps.ud_odp_caps = o.odp_caps.per_transport_caps.ud_odp_caps;
	a.completion_timestamp_mask = UINT64_MAX;
	a.hca_core_clock = CV_CORE_CLOCK_KHZ;
	a.device_cap_flags_ex = o.device_cap_flags;
	a.phys_port_cnt_ex = o.phys_port_cnt;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

static void port_attr(const struct odpemu_port_attr *o, struct ibv_port_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->state = (enum ibv_port_state)o->state;
	a->max_mtu = (enum ibv_mtu)o->max_mtu;
	a->active_mtu = (enum ibv_mtu)o->active_mtu;
	/* the link-local GID in front, empty entries after the daemon's */
	a->gid_tbl_len = o->gid_tbl_len + 1 > CV_GID_TBL_LEN ? o->gid_tbl_len + 1 : CV_GID_TBL_LEN;
	a->port_cap_flags = CV_PORT_CAPS;
	a->max_msg_sz = CV_MAX_MSG;
	a->pkey_tbl_len = 1;
	a->max_vl_num = 1;
	a->active_width = 1;	/* 1X at 10 Gb/s (QDR code): a veth's nominal speed */
	a->active_speed = 4;
	a->phys_state = o->state == ODPEMU_PORT_ACTIVE ? CV_PHYS_LINK_UP : 3 /* disabled */;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
}

/* The verbs_context slot: writes port_attr_len bytes (52 in rdma-core 44). */
int cv_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		  size_t port_attr_len)
{
	struct odpemu_port_attr o;
	struct ibv_port_attr a;
	int rc;

	if ((rc = odpemu_query_port(cv_odp(context), port_num, &o)))
		return cv_fail(rc);
	port_attr(&o, &a);
	memcpy(attr, &a, port_attr_len < sizeof(a) ? port_attr_len : sizeof(a));
	return 0;
}

/* The exported symbol serves binaries that call it directly: the 2006 struct, which ends
 * at `flags` (rdma-core verbs.c: _compat_ibv_port_attr). */
#undef ibv_query_port
CV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			     struct _compat_ibv_port_attr *port_attr)
{
	if (!context || !port_attr)
		return cv_fail(EINVAL);
	return cv_query_port(context, port_num, (struct ibv_port_attr *)(void *)port_attr,
			     offsetof(struct ibv_port_attr, flags) + 1);
}

/* The client's GID index into a GID: 0 or errno (ENODATA for an empty entry, EINVAL past
 * the table). */
static int gid_at(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct odpemu_device_attr dev;
	union odpemu_gid g;
	int rc;

	if (index < 0)
		return EINVAL;
	if (index > 0) {
		rc = odpemu_query_gid(cv_odp(context), port_num, index - 1, &g);
		if (rc == EINVAL && port_num == 1 && index < CV_GID_TBL_LEN)
			return ENODATA;
		if (rc)
			return rc;
		memcpy(gid->raw, g.raw, sizeof(gid->raw));
		return 0;
	}
	if (port_num != 1)
		return EINVAL;
	if ((rc = odpemu_query_device(cv_odp(context), &dev)))
		return rc;
	gid->global.subnet_prefix = htobe64(0xfe80000000000000ull);
	gid->global.interface_id = dev.node_guid;
	return 0;
}

CV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
			    union ibv_gid *gid)
{
	int rc;

	if (!context || !gid)
		return cv_fail(EINVAL);
	if ((rc = gid_at(context, port_num, index, gid)) == ENODATA) {
		memset(gid, 0, sizeof(*gid));	/* an empty entry: rdma-core's answer */
		return 0;
	}
	if (rc)
		return cv_fail(rc);
	return 0;
}

/* rdma-core's private enum: IB_ROCE_V1 0 ("IB/RoCE v1"), ROCE_V2 1. */
CV_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				 unsigned int index, enum cv_gid_type_sysfs *type)
{
	union ibv_gid gid;
	int rc;

	if (!context || !type || index > INT32_MAX)
		return cv_fail(EINVAL);
	rc = gid_at(context, port_num, (int)index, &gid);
	if (rc && rc != ENODATA)
		return cv_fail(EINVAL);
	/* an empty entry: rdma-core answers IB/RoCE v1 */
	*type = rc ? CV_GID_TYPE_SYSFS_IB_ROCE_V1 : CV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

static int gid_entry(struct ibv_context *context, uint32_t port_num, uint32_t index,
		     struct ibv_gid_entry *e)
{
	struct odpemu_port_attr port;
	int rc;

	if (port_num > UINT8_MAX || index > INT32_MAX)
		return EINVAL;
	memset(e, 0, sizeof(*e));
	if ((rc = gid_at(context, (uint8_t)port_num, (int)index, &e->gid)))
		return rc;
	if ((rc = odpemu_query_port(cv_odp(context), (uint8_t)port_num, &port)))
		return rc;
	e->gid_index = index;
	e->port_num = port_num;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = port.netdev_ifindex;	/* the daemon's: it knows its namespace */
	return 0;
}

CV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
				uint32_t gid_index, struct ibv_gid_entry *entry, uint32_t flags,
				size_t entry_size)
{
	struct ibv_gid_entry e;
	int rc;

	if (!context || !entry || flags || entry_size < sizeof(e))
		return cv_fail(EINVAL);
	if ((rc = gid_entry(context, port_num, gid_index, &e)))
		return cv_fail(rc);
	memcpy(entry, &e, sizeof(e));
	return 0;
}

/* Every valid GID of every port, entries entry_size apart: the count or a negative errno. */
CV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
				       size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct ibv_port_attr port;
	size_t n = 0;
	int rc;

	if (!context || (!entries && max_entries) || flags || entry_size < sizeof(*entries))
		return -EINVAL;
	if ((rc = cv_query_port(context, 1, &port, sizeof(port))))
		return -rc;
	for (int i = 0; i < port.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (gid_entry(context, 1, (uint32_t)i, &e))
			continue;
		if (n == max_entries)
			return -EINVAL;
		memcpy((char *)entries + n * entry_size, &e, sizeof(e));
		n++;
	}
	return (ssize_t)n;
}

/* RoCE has the default partition only (IBA A17: P_Key 0xFFFF). */
CV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
			     __be16 *pkey)
{
	if (!context || !pkey || port_num != 1 || index != 0)
		return cv_fail(EINVAL);
	*pkey = htobe16(0xffff);
	return 0;
}

CV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!context || port_num != 1)
		return -EINVAL;
	return (be16toh(pkey) & 0x7fff) == 0x7fff ? 0 : -ENOENT;
}
