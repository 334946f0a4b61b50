/* SPDX-License-Identifier: MIT */
/*
 * mcast — the device's multicast group sockets: while a QP of the device is attached to
 * a group (nic/mcast.c, ports.mcast_member), a UDP socket bound to the group's address and
 * the daemon's port, joined on the device's interface (the host's IGMP/MLD membership, as
 * rxe's device joins the group's link-layer address) and read by the loop like the
 * device's own socket (udp.h, cfg.group). Several daemons of one host each have their own
 * (SO_REUSEADDR): each gets every datagram sent to the group, the sender's own included
 * (IP_MULTICAST_LOOP on the sending socket).
 *
 * THREADING. The loop thread only.
 */
#ifndef ODPEMU_EMU_MCAST_H
#define ODPEMU_EMU_MCAST_H

#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "nic.h"

/* A datagram src:sport sent to group (valid during the call). */
typedef void (*emu_mcast_deliver_fn)(void *arg, const uint8_t *pkt, size_t len,
				     const struct nic_gid *src, uint16_t sport,
				     const struct nic_gid *group);

struct emu_mcast_config {
	struct nic_gid iface;	/* the device's address: the interface to join on */
	int ifindex;		/* its index (0: unknown; IPv6 groups need it) */
	uint16_t port;		/* the daemon's UDP port */
	emu_mcast_deliver_fn deliver;
	void *deliver_arg;
};

struct emu_mcast;

/* 0 and *out, or -ENOMEM. */
int emu_mcast_new(struct emu_loop *loop, const struct emu_mcast_config *cfg,
		  struct emu_mcast **out);
/* Close every group's socket and free m (NULL is fine). Not from inside a deliver. */
void emu_mcast_free(struct emu_mcast *m);
/* Listen on group: 0 (also when listening already), or -errno with one line in err
 * (-ENOMEM, the socket's, the membership's: -ENODEV no such interface, -ENOBUFS the
 * host's igmp_max_memberships reached). */
int emu_mcast_join(struct emu_mcast *m, const struct nic_gid *group, char *err, size_t errlen);
/* Stop listening on group (its socket closed: the host leaves the group). Not from inside
 * that group's deliver. Unknown groups are ignored. */
void emu_mcast_leave(struct emu_mcast *m, const struct nic_gid *group);
/* Groups listened on now. */
unsigned emu_mcast_groups(const struct emu_mcast *m);

#endif
