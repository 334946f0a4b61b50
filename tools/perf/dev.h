/* SPDX-License-Identifier: MIT */
/* dev — one side's device objects: the context and PD for the whole run, the QPs and
 * CQs of one message size. */
#ifndef ODPEMU_TOOLS_PERF_DEV_H
#define ODPEMU_TOOLS_PERF_DEV_H

#include "perf.h"
#include "wire.h"

struct perf_dev {
	struct odpemu_context *ctx;
	const char *name;
	struct odpemu_device_attr attr;
	struct odpemu_port_attr port;
	union odpemu_gid gid;
	struct odpemu_pd *pd;
	struct odpemu_mr *implicit;	/* --odp implicit: one MR over the address space */
};

struct perf_qps {
	struct odpemu_cq *scq, *rcq;
	unsigned n;
	struct odpemu_qp *qp[PERF_MAX_QPS];
	uint32_t psn[PERF_MAX_QPS];
};

/* The access of every buffer's MR: all the remote operations, and FLUSH where the device
 * has it (a device without RDMA FLUSH refuses FLUSH access: ib_check_mr_access). */
int dev_mr_access(const struct perf_dev *d);

/* Open (NULL name: this host's device), query, allocate the PD. Exits with a message on
 * failure: no daemon, no such device. */
void dev_open(struct perf_dev *d, const char *name);
/* Register the implicit MR when cfg asks for one; 0 or -1 (printed). */
int dev_prepare(struct perf_dev *d, const struct perf_cfg *cfg);
void dev_close(struct perf_dev *d);
/* Fill in our endpoint's QP part (QPNs, PSNs, GID, MTU, device name). */
void dev_ep(const struct perf_dev *d, const struct perf_qps *q, struct perf_ep *e);

/* CQs and cfg->qps RC QPs in INIT, with depths tx and rx; 0 or -1 (printed). */
int qps_create(struct perf_dev *d, const struct perf_cfg *cfg, unsigned tx, unsigned rx,
	       struct perf_qps *q);
/* Move every QP to RTS against the peer's (same count); 0 or -1 (printed). */
int qps_connect(struct perf_dev *d, const struct perf_cfg *cfg, struct perf_qps *q,
		const struct perf_ep *peer);
void qps_destroy(struct perf_qps *q);
/* Index of the QP with this number, or -1. */
int qps_index(const struct perf_qps *q, uint32_t qp_num);

#endif
