/* SPDX-License-Identifier: MIT */
/* Device and port queries: the daemon's answer, field by field into the verbs structs.
 * GIDs come with the port answer (the daemon's addresses), so query_gid asks for the port. */
#include <string.h>

#include "lib_int.h"

static int query(struct lib_context *c, uint16_t op, void *rep, size_t len)
{
	struct lib_call call = { .op = op, .rep = rep, .rep_min = len, .rep_cap = len };

	return lib_call(c, &call);
}

static void copy_str(char *dst, size_t cap, const char *src, size_t src_cap)
{
	size_t n = strnlen(src, src_cap);

	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void fill_device_attr(struct odpemu_device_attr *a, const struct ipc_device_rep *r)
{
	memset(a, 0, sizeof(*a));
	copy_str(a->fw_ver, sizeof(a->fw_ver), r->fw_ver, sizeof(r->fw_ver));
	a->node_guid = r->node_guid;
	a->max_mr_size = r->max_mr_size;
	a->page_size_cap = r->page_size_cap;
	a->vendor_id = r->vendor_id;
	a->vendor_part_id = r->vendor_part_id;
	a->hw_ver = r->hw_ver;
	a->max_qp = (int)r->max_qp;
	a->max_qp_wr = (int)r->max_qp_wr;
	a->max_sge = (int)r->max_sge;
	a->max_cq = (int)r->max_cq;
	a->max_cqe = (int)r->max_cqe;
	a->max_mr = (int)r->max_mr;
	a->max_pd = (int)r->max_pd;
	a->max_srq = (int)r->max_srq;
	a->max_srq_wr = (int)r->max_srq_wr;
	a->max_srq_sge = (int)r->max_srq_sge;
	a->max_mw = (int)r->max_mw;
	a->max_mcast_grp = (int)r->max_mcast_grp;
	a->max_mcast_qp_attach = (int)r->max_mcast_qp_attach;
	a->max_total_mcast_qp_attach = (int)r->max_total_mcast_qp_attach;
	a->max_qp_rd_atom = (int)r->max_qp_rd_atom;
	a->max_qp_init_rd_atom = (int)r->max_qp_init_rd_atom;
	a->max_inline_data = r->max_inline_data;
	a->max_pkeys = (uint16_t)r->max_pkeys;
	a->phys_port_cnt = 1;
	a->odp_caps.general_caps = r->odp_general_caps;
	a->odp_caps.per_transport_caps.rc_odp_caps = r->odp_rc_caps;
	a->odp_caps.per_transport_caps.uc_odp_caps = r->odp_uc_caps;
	a->odp_caps.per_transport_caps.ud_odp_caps = r->odp_ud_caps;
	a->device_cap_flags = r->device_cap_flags;
}

ODPEMU_EXPORT int odpemu_query_device(struct odpemu_context *context,
				      struct odpemu_device_attr *attr)
{
	struct ipc_device_rep rep;
	int rc;

	if (!context || !attr)
		return lib_fail(EINVAL);
	rc = query(lib_ctx(context), IPC_QUERY_DEVICE, &rep, sizeof(rep));
	if (rc)
		return lib_fail(-rc);
	fill_device_attr(attr, &rep);
	return 0;
}

static int port_rep(struct odpemu_context *context, uint8_t port_num, struct ipc_port_rep *rep)
{
	if (!context || port_num != 1)
		return -EINVAL;
	return query(lib_ctx(context), IPC_QUERY_PORT, rep, sizeof(*rep));
}

ODPEMU_EXPORT int odpemu_query_port(struct odpemu_context *context, uint8_t port_num,
				    struct odpemu_port_attr *attr)
{
	struct ipc_port_rep rep;
	int rc = attr ? port_rep(context, port_num, &rep) : -EINVAL;

	if (rc)
		return lib_fail(-rc);
	memset(attr, 0, sizeof(*attr));
	attr->state = (enum odpemu_port_state)rep.state;
	attr->max_mtu = (enum odpemu_mtu)rep.max_mtu;
	attr->active_mtu = (enum odpemu_mtu)rep.active_mtu;
	attr->gid_tbl_len = (int)(rep.gid_tbl_len > IPC_MAX_GIDS ? IPC_MAX_GIDS : rep.gid_tbl_len);
	attr->link_layer = ODPEMU_LINK_LAYER_ETHERNET;
	attr->netdev_mtu = rep.netdev_mtu;
	copy_str(attr->netdev, sizeof(attr->netdev), rep.netdev, sizeof(rep.netdev));
	attr->netdev_ifindex = rep.netdev_ifindex;
	attr->fault_policy = (enum odpemu_fault_policy)rep.fault_policy;
	attr->fault_around = rep.fault_around;
	copy_str(attr->personality, sizeof(attr->personality), rep.personality,
		 sizeof(rep.personality));
	return 0;
}

ODPEMU_EXPORT int odpemu_query_gid(struct odpemu_context *context, uint8_t port_num, int index,
				   union odpemu_gid *gid)
{
	struct ipc_port_rep rep;
	int rc = gid ? port_rep(context, port_num, &rep) : -EINVAL;

	if (rc)
		return lib_fail(-rc);
	if (index < 0 || (uint32_t)index >= rep.gid_tbl_len || index >= IPC_MAX_GIDS)
		return lib_fail(EINVAL);
	memcpy(gid->raw, rep.gids[index], sizeof(gid->raw));
	return 0;
}

ODPEMU_EXPORT int odpemu_query_host(struct odpemu_context *context,
				    struct odpemu_host_feature *out, int max)
{
	struct {
		struct ipc_host_rep rep;
		struct ipc_host_row row[IPC_MAX_HOST_ROWS];
	} page;		/* 6 KiB */
	struct lib_call call = { .op = IPC_HOST_REPORT, .rep = &page, .rep_min = sizeof(page.rep),
		.rep_cap = sizeof(page) };
	int rc, n = 0;

	if (!context || max < 0 || (max && !out)) {
		errno = EINVAL;
		return -1;
	}
	rc = lib_call(lib_ctx(context), &call);
	if (!rc && (page.rep.n > IPC_MAX_HOST_ROWS ||
		    call.rep_len != sizeof(page.rep) + page.rep.n * sizeof(page.row[0])))
		rc = -EPROTO;
	if (rc) {
		errno = -rc;
		return -1;
	}
	for (uint32_t i = 0; i < page.rep.n && n < max; i++, n++) {
		memset(&out[n], 0, sizeof(out[n]));
		memcpy(out[n].name, page.row[i].name, sizeof(out[n].name) - 1);
		memcpy(out[n].detail, page.row[i].detail, sizeof(out[n].detail) - 1);
		out[n].verdict = (enum odpemu_host_verdict)page.row[i].verdict;
		out[n].masked = page.row[i].masked;
	}
	return n;
}
