/* SPDX-License-Identifier: MIT */
/* What odpemu does not model, refused the verbs way (docs/verbs.md lists it), and
 * IBVERBS_PRIVATE_34: the interface between libibverbs and its kernel-backed providers.
 * Debian's perftest, UCX and libfabric load libmlx5 and libefa, which import it, so it must
 * exist (BIND_NOW resolves every import at load) although no odpemu device ever reaches
 * a provider: each ibv_cmd_* call refuses with EOPNOTSUPP, the constructors' register
 * call does nothing, and the log call works. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "compat.h"

/* ---- public verbs outside the model ---- */

/* Layer-2 addresses never matter: the daemon's UDP socket routes by IP. */
CV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					  uint8_t eth_mac[6], uint16_t *vid)
{
	(void)context; (void)attr; (void)eth_mac; (void)vid;
	return cv_fail(EOPNOTSUPP);
}

/* Device memory is ConnectX's: there is none to import. */
CV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context; (void)dm_handle;
	return cv_fail_null(EOPNOTSUPP);
}

CV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm) { (void)dm; }

/* Enhanced connection establishment is a ConnectX feature. */
CV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp; (void)ece;
	return cv_fail(EOPNOTSUPP);
}

CV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp; (void)ece;
	return cv_fail(EOPNOTSUPP);
}

/* ---- IBVERBS_PRIVATE_34 ---- */

/* Every ibv_cmd_* and execute_ioctl: a kernel command, never reachable here. */
#define PRIVATE_INT_CALLS(X) \
	X(execute_ioctl) X(ibv_cmd_advise_mr) X(ibv_cmd_alloc_dm) X(ibv_cmd_alloc_mw) \
	X(ibv_cmd_alloc_pd) X(ibv_cmd_attach_mcast) X(ibv_cmd_close_xrcd) X(ibv_cmd_create_ah) \
	X(ibv_cmd_create_counters) X(ibv_cmd_create_cq) X(ibv_cmd_create_cq_ex) \
	X(ibv_cmd_create_flow) X(ibv_cmd_create_flow_action_esp) X(ibv_cmd_create_qp) \
	X(ibv_cmd_create_qp_ex) X(ibv_cmd_create_qp_ex2) X(ibv_cmd_create_rwq_ind_table) \
	X(ibv_cmd_create_srq) X(ibv_cmd_create_srq_ex) X(ibv_cmd_create_wq) \
	X(ibv_cmd_dealloc_mw) X(ibv_cmd_dealloc_pd) X(ibv_cmd_dereg_mr) X(ibv_cmd_destroy_ah) \
	X(ibv_cmd_destroy_counters) X(ibv_cmd_destroy_cq) X(ibv_cmd_destroy_flow) \
	X(ibv_cmd_destroy_flow_action) X(ibv_cmd_destroy_qp) X(ibv_cmd_destroy_rwq_ind_table) \
	X(ibv_cmd_destroy_srq) X(ibv_cmd_destroy_wq) X(ibv_cmd_detach_mcast) X(ibv_cmd_free_dm) \
	X(ibv_cmd_get_context) X(ibv_cmd_modify_cq) X(ibv_cmd_modify_flow_action_esp) \
	X(ibv_cmd_modify_qp) X(ibv_cmd_modify_qp_ex) X(ibv_cmd_modify_srq) X(ibv_cmd_modify_wq) \
	X(ibv_cmd_open_qp) X(ibv_cmd_open_xrcd) X(ibv_cmd_poll_cq) X(ibv_cmd_post_recv) \
	X(ibv_cmd_post_send) X(ibv_cmd_post_srq_recv) X(ibv_cmd_query_context) \
	X(ibv_cmd_query_device_any) X(ibv_cmd_query_mr) X(ibv_cmd_query_port) X(ibv_cmd_query_qp) \
	X(ibv_cmd_query_srq) X(ibv_cmd_read_counters) X(ibv_cmd_reg_dm_mr) \
	X(ibv_cmd_reg_dmabuf_mr) X(ibv_cmd_reg_mr) X(ibv_cmd_req_notify_cq) X(ibv_cmd_rereg_mr) \
	X(ibv_cmd_resize_cq)
/* Those that return an object: NULL. */
#define PRIVATE_PTR_CALLS(X) X(_verbs_init_and_alloc_context) X(verbs_open_device)
/* Those that return nothing: a provider's own bookkeeping, nothing to do. */
#define PRIVATE_VOID_CALLS(X) \
	X(verbs_register_driver_34) X(verbs_set_ops) X(verbs_init_cq) X(verbs_uninit_context)

int cv_private_refuse(void);
void *cv_private_null(void);
void cv_private_nothing(void);

CV_EXPORT int cv_private_refuse(void)
{
	return cv_fail(EOPNOTSUPP);
}

CV_EXPORT void *cv_private_null(void)
{
	return cv_fail_null(EOPNOTSUPP);
}

CV_EXPORT void cv_private_nothing(void)
{
}

#define ALIAS(name, target, type) \
	type name(void); \
	CV_EXPORT type name(void) __attribute__((alias(#target)));
#define INT_ALIAS(name) ALIAS(name, cv_private_refuse, int)
#define PTR_ALIAS(name) ALIAS(name, cv_private_null, void *)
#define VOID_ALIAS(name) ALIAS(name, cv_private_nothing, void)
PRIVATE_INT_CALLS(INT_ALIAS)
PRIVATE_PTR_CALLS(PTR_ALIAS)
PRIVATE_VOID_CALLS(VOID_ALIAS)

/* ibv_read_ibdev_sysfs_file: a provider's sysfs read; no odpemu device has sysfs. */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs, const char *fmt, ...);
CV_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs, const char *fmt, ...)
{
	(void)buf; (void)size; (void)sysfs; (void)fmt;
	errno = ENOENT;
	return -1;
}

/* The number of attributes an ioctl buffer holds: none, there are no ioctls. */
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link);
CV_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	(void)link;
	return num_attrs;
}

/* A provider's "destroy after disassociation may succeed" switch (a 1-byte object). */
CV_EXPORT bool verbs_allow_disassociate_destroy;

/* The providers' log: libefa calls it on its "not an EFA device" path for our contexts.
 * Printed to stderr when VERBS_LOG_LEVEL (as rdma-core's) is at least the level. */
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...);
CV_EXPORT void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
	const char *env = getenv("VERBS_LOG_LEVEL");
	va_list ap;

	(void)ctx;
	if (!env || strtoul(env, NULL, 0) < level)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
