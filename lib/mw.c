/* SPDX-License-Identifier: MIT */
/* Memory windows (IBA 10.6.7): a daemon call each way. Binding and invalidation are work
 * requests (post.c), carried out by the NIC in queue order. */
#include <stdlib.h>

#include "lib_int.h"

ODPEMU_EXPORT struct odpemu_mw *odpemu_alloc_mw(struct odpemu_pd *pd, enum odpemu_mw_type type)
{
	struct ipc_alloc_mw_req req = { .type = (uint32_t)type };
	struct ipc_alloc_mw_rep rep;
	struct lib_call call = { .op = IPC_ALLOC_MW, .req = &req, .req_len = sizeof(req),
				 .rep = &rep, .rep_min = sizeof(rep), .rep_cap = sizeof(rep) };
	struct odpemu_mw *mw;
	int rc;

	if (!pd || (type != ODPEMU_MW_TYPE_1 && type != ODPEMU_MW_TYPE_2)) {
		errno = EINVAL;
		return NULL;
	}
	if (!(mw = calloc(1, sizeof(*mw)))) {
		errno = ENOMEM;
		return NULL;
	}
	req.pd = pd->handle;
	if ((rc = lib_call(lib_ctx(pd->context), &call))) {
		free(mw);
		errno = -rc;
		return NULL;
	}
	*mw = (struct odpemu_mw){ .context = pd->context, .pd = pd, .handle = rep.handle,
		.rkey = rep.rkey, .type = type };
	return mw;
}

ODPEMU_EXPORT int odpemu_dealloc_mw(struct odpemu_mw *mw)
{
	int rc;

	if (!mw)
		return lib_fail(EINVAL);
	rc = lib_call_destroy(lib_ctx(mw->context), IPC_DEALLOC_MW, mw->handle);
	if (rc)
		return lib_fail(-rc);
	free(mw);
	return 0;
}
