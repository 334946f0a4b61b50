/* SPDX-License-Identifier: MIT */
/*
 * cm_port — the port space of a device's rdma_cm: which reservations (rdma_bind_addr's,
 * and the listeners they become) may share a port, and which listener hears a request.
 * The rules are the kernel's (drivers/infiniband/core/cma.c): cma_check_port for sharing,
 * cma_match_private_data for hearing, both shaped by rdma_set_option's REUSEADDR and
 * AFONLY.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "cm.h"

static const struct nic_gid any_gid;

static bool gid_eq(const struct nic_gid *a, const struct nic_gid *b)
{
	return !memcmp(a, b, sizeof(*a));
}

bool emu_cm_gid_any(const struct nic_gid *g)
{
	return gid_eq(g, &any_gid);
}

/* An IPv4-mapped GID (::ffff:a.b.c.d) is an IPv4 address; any other, IPv6. */
static uint16_t gid_family(const struct nic_gid *g)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(g->raw, v4mapped, sizeof(v4mapped)) ? AF_INET6 : AF_INET;
}

/* Whether a new reservation (sid, addr, family, reuse, afonly) may join `sid`'s owners,
 * `self` (a reservation becoming a listener) excepted: 0, -EADDRNOTAVAIL when it or an
 * owner takes any address, -EADDRINUSE when both take the same one. Owners that both
 * allow reuse pass (a listener never does: it loses REUSEADDR when it listens), and so do
 * owners of different families that are both AFONLY (cma_check_port). */
int emu_cm_port_check(const struct emu_cm *cm, const struct emu_cm_listener *self,
		      uint64_t sid, const struct nic_gid *addr, uint16_t family, bool reuse,
		      bool afonly)
{
	for (const struct emu_cm_listener *l = cm->listeners; l; l = l->next) {
		if (l == self || l->service_id != sid)
			continue;
		if (reuse && l->reuseaddr)
			continue;
		if (afonly && l->afonly && family && l->family && family != l->family)
			continue;
		if (emu_cm_gid_any(addr) || emu_cm_gid_any(&l->addr))
			return -EADDRNOTAVAIL;
		if (gid_eq(addr, &l->addr))
			return -EADDRINUSE;
	}
	return 0;
}

/* Port 0: the first port from IPC_CM_EPHEMERAL_FIRST the reservation may take, as the
 * kernel's ephemeral range (cma_alloc_any_port, which starts at a random one), and free in
 * the network namespace (cm_claim.c). */
int emu_cm_port_pick(const struct emu_cm *cm, enum cm_port_space ps, const struct nic_gid *addr,
		     uint16_t family, bool reuse, bool afonly)
{
	for (unsigned p = IPC_CM_EPHEMERAL_FIRST; p <= 65535; p++) {
		uint64_t sid = cm_service_id(ps, (uint16_t)p);

		if (!emu_cm_port_check(cm, NULL, sid, addr, family, reuse, afonly) &&
		    emu_cm_claim_free(cm, sid))
			return (int)p;
	}
	return -EADDRNOTAVAIL;
}

/* Does listener l hear a request for `dst` (the rdma_cm header's destination)? One for
 * any address hears every family unless AFONLY (family 0, unknown, counts as not); one
 * for an address hears that address only (cma_match_private_data). */
bool emu_cm_port_hears(const struct emu_cm_listener *l, uint64_t sid, const struct nic_gid *dst)
{
	if (l->state != EMU_CM_PORT_LISTEN || l->service_id != sid)
		return false;
	if (!emu_cm_gid_any(&l->addr))
		return gid_eq(&l->addr, dst);
	return !l->afonly || !l->family || gid_family(dst) == l->family;
}
