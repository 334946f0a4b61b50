/* SPDX-License-Identifier: MIT */
/* Memory windows: ibv_alloc_mw, ibv_dealloc_mw and ibv_bind_mw (the verbs.h inlines reach
 * them through ctx->ops), and the conversion of a BIND_MW work request, whose window and
 * MR are the client's ibv objects, into libodpemu's. A type 1 bind is a BIND_MW posted on
 * the QP, as rdma-core's providers do, so it is ordered with the QP's other work. */
#include <stdlib.h>

#include "compat.h"

static_assert(IBV_MW_TYPE_1 == (int)ODPEMU_MW_TYPE_1 && IBV_MW_TYPE_2 == (int)ODPEMU_MW_TYPE_2,
	      "mw types");
static_assert(IBV_WR_BIND_MW == (int)ODPEMU_WR_BIND_MW && IBV_WR_LOCAL_INV ==
	      (int)ODPEMU_WR_LOCAL_INV && IBV_WC_BIND_MW == (int)ODPEMU_WC_BIND_MW &&
	      IBV_WC_LOCAL_INV == (int)ODPEMU_WC_LOCAL_INV &&
	      IBV_WC_MW_BIND_ERR == (int)ODPEMU_WC_MW_BIND_ERR, "mw opcodes");
static_assert(IBV_ACCESS_MW_BIND == (int)ODPEMU_ACCESS_MW_BIND &&
	      IBV_ACCESS_ZERO_BASED == (int)ODPEMU_ACCESS_ZERO_BASED, "mw access");

struct ibv_mw *cv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct cv_mw *m;

	if (!pd)
		return cv_fail_null(EINVAL);
	if (!(m = calloc(1, sizeof(*m))))
		return cv_fail_null(ENOMEM);
	if (!(m->odp = odpemu_alloc_mw(cv_pd(pd)->odp, (enum odpemu_mw_type)type))) {
		free(m);
		return NULL;
	}
	m->mw = (struct ibv_mw){ .context = pd->context, .pd = pd, .rkey = m->odp->rkey,
		.handle = m->odp->handle, .type = type };
	return &m->mw;
}

int cv_dealloc_mw(struct ibv_mw *mw)
{
	int rc;

	if (!mw)
		return cv_fail(EINVAL);
	if ((rc = odpemu_dealloc_mw(cv_mw(mw)->odp)))
		return rc;
	free(mw);
	return 0;
}

/* ibv_bind_mw (type 1): a BIND_MW with the next key byte; on success the window's rkey is
 * the new one at once (rdma-core: the caller undoes it on an error completion). */
int cv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = { .wr_id = mw_bind->wr_id, .opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags };
	struct ibv_send_wr *bad;
	int rc;

	if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;		/* as rxe: windows are addressed by virtual address */
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	if ((rc = cv_post_send(qp, &wr, &bad)))
		return rc;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

void cv_bind_to_odp(struct odpemu_send_wr *o, const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

	o->bind_mw.mw = wr->bind_mw.mw ? cv_mw(wr->bind_mw.mw)->odp : NULL;
	o->bind_mw.rkey = wr->bind_mw.rkey;
	o->bind_mw.bind_info = (struct odpemu_mw_bind_info){
		.mr = b->mr ? cv_mr(b->mr)->odp : NULL, .addr = b->addr, .length = b->length,
		.mw_access_flags = b->mw_access_flags };
}
