/* SPDX-License-Identifier: MIT */
/* Device personalities: what a known RDMA device reports to libibverbs programs, and the
 * limits the NIC then enforces as that device (docs/personalities.md). One table entry per
 * device; the daemon picks one at start (odpemud --personality NAME), and it is fixed
 * for the daemon's life: a device does not change its caps under its clients. */
#ifndef ODPEMU_NIC_PERSONALITY_H
#define ODPEMU_NIC_PERSONALITY_H

#include <stdbool.h>

#include "device_attr.h"

struct nic_personality {
	const char *name;		/* odpemud --personality NAME */
	const char *summary;		/* one line for --personality list */
	const char *fw_ver;		/* ibv_query_device's fw_ver */
	enum odpemu_mtu max_mtu;	/* ibv_query_port's max_mtu */
	bool fault_rnr;			/* default fault policy: rnr (else stall) */
	/* Its provider drops a QP's completions from the QP's CQs when the QP is reset or
	 * destroyed (mlx5's __mlx5_cq_clean); rxe's leaves them to be polled. */
	bool cq_clean;
	void (*fill)(struct nic_device_attr *a);	/* its limits and caps */
};

/* The personality of that name, or NULL. */
const struct nic_personality *nic_personality_find(const char *name);
/* The device attributes of p (what ibv_query_device reports, what the NIC enforces). */
static inline void nic_personality_attr(const struct nic_personality *p,
					struct nic_device_attr *out)
{
	p->fill(out);
}
/* The i-th personality (0: odpemu, the default), NULL past the last. */
const struct nic_personality *nic_personality_at(unsigned i);

#endif
