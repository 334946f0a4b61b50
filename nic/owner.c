/* SPDX-License-Identifier: MIT */
/* Owners: the object of nic/'s owner (the daemon's emu_obj) behind each nic/ object that
 * ports and events name, so the owner finds its own without a scan. nic/ never reads it. */
#include "nic_int.h"

#define NIC_OWNER_FNS(type) \
	void nic_##type##_set_owner(struct nic_##type *o, void *owner) { o->owner = owner; } \
	void *nic_##type##_owner(const struct nic_##type *o) { return o ? o->owner : NULL; }

NIC_OWNER_FNS(qp)
NIC_OWNER_FNS(cq)
NIC_OWNER_FNS(srq)
NIC_OWNER_FNS(mr)

void *nic_qp_owner_by_num(struct nic *nic, uint32_t qpn)
{
	return nic_qp_owner(nic_qp_lookup(nic, qpn));
}

void *nic_mr_owner_by_key(struct nic *nic, uint32_t key)
{
	return nic_mr_owner(nic_mr_lookup(nic, key));
}
