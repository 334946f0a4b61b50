/* SPDX-License-Identifier: MIT */
/* ibv_import_device(3), ibv_import_pd(3), ibv_import_mr(3) and their unimports over
 * libodpemu's (lib/import.c): the cmd_fd is a context's end of its daemon connection, and
 * the imported context shares its session's objects, which live until the last context of
 * the session closes, in whatever process. Unimporting frees our structs only. */
#include <stdlib.h>

#include "compat.h"

CV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct odpemu_context *odp = odpemu_import_device(cmd_fd);
	struct ibv_device *device;

	if (!odp)
		return NULL;
	if (!(device = cv_device_named(odpemu_get_device_name(odp->device)))) {
		odpemu_close_device(odp);
		return cv_fail_null(ENOMEM);
	}
	return cv_context_wrap(device, odp);
}

CV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	struct cv_pd *p;

	if (!context)
		return cv_fail_null(EINVAL);
	if (!(p = calloc(1, sizeof(*p))))
		return cv_fail_null(ENOMEM);
	if (!(p->odp = odpemu_import_pd(cv_odp(context), pd_handle))) {
		free(p);
		return NULL;
	}
	p->pd.context = context;
	p->pd.handle = pd_handle;
	return &p->pd;
}

CV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (!pd)
		return;
	odpemu_unimport_pd(cv_pd(pd)->odp);
	free(pd);
}

/* The MR's addr is NULL (ibv_import_mr(3)); its access is unknown to ibv_rereg_mr, which
 * needs the address anyway. */
CV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct cv_mr *m;

	if (!pd)
		return cv_fail_null(EINVAL);
	if (!(m = calloc(1, sizeof(*m))))
		return cv_fail_null(ENOMEM);
	if (!(m->odp = odpemu_import_mr(cv_pd(pd)->odp, mr_handle))) {
		free(m);
		return NULL;
	}
	cv_mr_fill(m, pd);
	cv_mr_track(cv_ctx(pd->context), m);
	return &m->mr;
}

CV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	struct cv_mr *m = cv_mr(mr);

	if (!mr)
		return;
	cv_mr_untrack(cv_ctx(mr->context), m);
	odpemu_unimport_mr(m->odp);
	free(m);
}
