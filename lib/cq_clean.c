/* SPDX-License-Identifier: MIT */
/* A QP's completions still in its CQs when it is reset or destroyed are dropped, as the
 * mlx5 and mlx4 providers do (their modify_qp to RESET and destroy_qp clean the CQs of
 * the QP's entries), on devices whose personality says so (IPC_TRAIT_CQ_CLEAN: all but
 * rxe, whose CQ keeps them). Without it, the flushes of a QP that went to ERR meet the
 * program after it brought the QP back (RESET, INIT, RTR, RTS) and polled for its new
 * work (rdma-core's test_mr_rereg_pd and _addr do so), and a destroyed QP's completions
 * reach a poll whose owner already freed what their wr_ids point to (libfabric 1.17's
 * rxm closes a connection's endpoint before it drains the CQ: docs/known-bugs.md).
 * The ring's slots between the consumer and the producer are the client's to read and the
 * daemon no longer writes them: each of the QP's is marked, and poll_cq passes over marks. */
#include <string.h>

#include "lib_int.h"

static void clean(struct odpemu_cq *pub, uint32_t qp_num)
{
	struct lib_cq *cq = (struct lib_cq *)pub;
	uint32_t prod, mark = LIB_CQE_CLEANED;

	if (!pub)
		return;
	pthread_spin_lock(&cq->lock);
	prod = atomic_load_explicit(&cq->ring.hdr->prod, memory_order_acquire);
	for (uint32_t i = cq->ring.head; i != prod; i++) {
		char *slot = lib_ring_slot(&cq->ring, i);
		uint32_t qpn;

		memcpy(&qpn, slot + offsetof(struct ipc_cqe, qp_num), sizeof(qpn));
		if (qpn == qp_num)
			memcpy(slot + offsetof(struct ipc_cqe, opcode), &mark, sizeof(mark));
	}
	pthread_spin_unlock(&cq->lock);
}

void lib_cq_clean_qp(struct lib_qp *qp)
{
	clean(qp->pub.send_cq, qp->pub.qp_num);
	if (qp->pub.recv_cq != qp->pub.send_cq)
		clean(qp->pub.recv_cq, qp->pub.qp_num);
}
