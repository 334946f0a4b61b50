/* SPDX-License-Identifier: MIT */
/* Protection domains: one per client allocation; every MR, QP and SRQ belongs to one, and
 * a key only works for QPs of the same PD (IBA 10.6.3.2). */
#include "nic_int.h"

int nic_pd_alloc(struct nic *nic, uint32_t client, struct nic_pd **out)
{
	struct nic_pd *pd;

	if (!nic || !out)
		return -EINVAL;
	if (nic->ctr.pds >= nic->attr.max_pd)
		return -ENOSPC;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->nic = nic;
	pd->client = client;
	nic->ctr.pds++;
	*out = pd;
	return 0;
}

int nic_pd_dealloc(struct nic_pd *pd)
{
	if (!pd)
		return -EINVAL;
	if (pd->users)
		return -EBUSY;
	pd->nic->ctr.pds--;
	free(pd);
	return 0;
}
