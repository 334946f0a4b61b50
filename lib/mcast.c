/* SPDX-License-Identifier: MIT */
/* UD multicast: a QP joins or leaves a group, one daemon call each (nic/mcast.c keeps the
 * groups; the daemon listens on each group's address while it has a member). */
#include <string.h>

#include "lib_int.h"

static int mcast_call(struct odpemu_qp *qp, uint16_t op, const union odpemu_gid *gid,
		      uint16_t lid)
{
	struct ipc_mcast_req req = { .lid = lid };
	struct lib_call call = { .op = op, .req = &req, .req_len = sizeof(req) };
	int rc;

	if (!qp || !gid)
		return lib_fail(EINVAL);
	memcpy(req.gid, gid->raw, sizeof(req.gid));
	call.handle = qp->handle;
	if ((rc = lib_call(lib_ctx(qp->context), &call)))
		return lib_fail(-rc);
	return 0;
}

ODPEMU_EXPORT int odpemu_attach_mcast(struct odpemu_qp *qp, const union odpemu_gid *gid,
				      uint16_t lid)
{
	return mcast_call(qp, IPC_ATTACH_MCAST, gid, lid);
}

ODPEMU_EXPORT int odpemu_detach_mcast(struct odpemu_qp *qp, const union odpemu_gid *gid,
				      uint16_t lid)
{
	return mcast_call(qp, IPC_DETACH_MCAST, gid, lid);
}
