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
