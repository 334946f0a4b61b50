/* SPDX-License-Identifier: MIT */
/*
 * verbs_t — what the compat tests that link the drop-in libibverbs share: opening a device
 * by name, and the one way they bring an RC QP (in INIT) to RTS towards a peer QP: RoCE v2
 * (global route, GID index 1: the host's address), path MTU 1024, PSN 1 both ways,
 * timeout 14, retry 7, RNR retry 7.
 */
#ifndef ODPEMU_TESTS_VERBS_T_H
#define ODPEMU_TESTS_VERBS_T_H

#include <infiniband/verbs.h>

#define RC_CONNECT_GID_IDX 1

/* INIT -> RTR -> RTS towards dqpn at dgid with rd_atomic READs/atomics in flight each way;
 * 0, or ibv_modify_qp's error. */
int rc_connect(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid, uint8_t rd_atomic);
/* The device of that name opened, or NULL. */
struct ibv_context *open_dev(const char *name);

/* One host's verbs objects, as the two-host compat tests hold them. */
struct verbs_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;		/* 64 entries */
	union ibv_gid gid;		/* RC_CONNECT_GID_IDX's */
};
/* Open device name with a PD, a CQ and its GID into s: 0, or -1. */
int verbs_side_open(struct verbs_side *s, const char *name);
/* Release what verbs_side_open made (any part of it). */
void verbs_side_close(struct verbs_side *s);

#endif
