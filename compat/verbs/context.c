/* SPDX-License-Identifier: MIT */
/* Contexts: a libodpemu session dressed as a whole struct verbs_context, so the header
 * inlines (verbs_get_ctx_op) find the extended slots, and the ops table every object's
 * ->context dispatches the data path through. */
#include <stdlib.h>
#include <string.h>

#include "compat.h"

static_assert(offsetof(struct verbs_context, context) + sizeof(struct ibv_context) ==
	      sizeof(struct verbs_context), "the ibv_context ends the verbs_context");

/* Slots left NULL make the inlines answer EOPNOTSUPP (verbs.h's verbs_get_ctx_op): XRC,
 * DM, flow steering, counters, WQ/RSS, TD and parent domains, CQ moderation. Only
 * close_xrcd is called without a check, so it gets the shared refusal. */
void cv_set_ops(struct verbs_context *v)
{
	v->context.ops.poll_cq = cv_poll_cq;
	v->context.ops.req_notify_cq = cv_req_notify_cq;
	v->context.ops.post_send = cv_post_send;
	v->context.ops.post_recv = cv_post_recv;
	v->context.ops.post_srq_recv = cv_post_srq_recv;
	v->context.ops.alloc_mw = cv_alloc_mw;
	v->context.ops.dealloc_mw = cv_dealloc_mw;
	v->context.ops.bind_mw = cv_bind_mw;
	v->query_port = cv_query_port;
	v->query_device_ex = cv_query_device_ex;
	v->advise_mr = cv_advise_mr;
	v->create_cq_ex = cv_create_cq_ex;
	v->create_qp_ex = cv_create_qp_ex;
	v->create_srq_ex = cv_create_srq_ex;
	v->close_xrcd = cv_close_xrcd;
}

/* The libodpemu device of that name, opened. NULL with errno (ENODEV: the daemon is gone). */
static struct odpemu_context *open_by_name(const char *name)
{
	struct odpemu_device **list = odpemu_get_device_list(NULL);
	struct odpemu_context *ctx = NULL;

	if (!list)
		return NULL;
	errno = ENODEV;
	for (int i = 0; list[i]; i++)
		if (!strcmp(odpemu_get_device_name(list[i]), name)) {
			ctx = odpemu_open_device(list[i]);
			break;
		}
	odpemu_free_device_list(list);
	return ctx;
}

/* UD completions report sl 2 when the packet came over IPv4 (mlx5's RoCEv2 convention,
 * which UCX's ud_verbs relies on); the daemon's sending address (GID 0) says which. */
static bool device_is_ipv4(struct odpemu_context *odp)
{
	static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };
	union odpemu_gid gid;

	return !odpemu_query_gid(odp, 1, 0, &gid) && !memcmp(gid.raw, v4_prefix, 12);
}

/* libibverbs.map ODPEMU_PRIVATE_1: for compat/rdmacm (the odpemu context behind a context
 * of ours; NULL for any other). */
CV_EXPORT struct odpemu_context *odpemu_compat_context(struct ibv_context *verbs)
{
	return verbs ? cv_odp(verbs) : NULL;
}

/* The cmd_fd is the context's end of its daemon connection: what ibv_import_device takes
 * a dup of (import.c), as rdma-core's is the uverbs file. */
struct ibv_context *cv_context_wrap(struct ibv_device *device, struct odpemu_context *odp)
{
	struct cv_context *c;

	if (!(c = calloc(1, sizeof(*c)))) {
		odpemu_close_device(odp);
		return cv_fail_null(ENOMEM);
	}
	c->odp = odp;
	c->dev = cv_dev(device);
	c->ipv4 = device_is_ipv4(odp);
	pthread_mutex_init(&c->lock, NULL);
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.context.device = device;
	c->vctx.context.cmd_fd = odpemu_context_cmd_fd(odp);
	c->vctx.context.async_fd = odp->async_fd;
	c->vctx.context.num_comp_vectors = odp->num_comp_vectors;
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	cv_set_ops(&c->vctx);
	return &c->vctx.context;
}

CV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct odpemu_context *odp;

	if (!device)
		return cv_fail_null(EINVAL);
	if (!(odp = open_by_name(device->name)))
		return NULL;
	return cv_context_wrap(device, odp);
}

/* libodpemu frees every object still open (the daemon drops them with the session); the
 * client's wrappers of those objects are the client's leak, as with rdma-core. */
CV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct cv_context *c;

	if (!context)
		return cv_fail(EINVAL);
	c = cv_ctx(context);
	odpemu_close_device(c->odp);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&context->mutex);
	free(c);
	return 0;
}

int cv_close_xrcd(struct ibv_xrcd *xrcd)
{
	(void)xrcd;
	return cv_fail(EOPNOTSUPP);
}
