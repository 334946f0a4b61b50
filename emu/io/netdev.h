/* SPDX-License-Identifier: MIT */
/*
 * netdev — the network interface a device runs on, read and followed through libnl-route-3.
 *
 * A device is one address on one interface (DESIGN.md "Addressing"). odpemud finds that
 * interface from --netdev IFNAME or --addr IP, takes its MTU, link state and GID table, and
 * then follows changes while it runs: a link going down, an MTU change, an address added or
 * removed. Everything here is a snapshot (struct emu_netdev) that the caller owns; the watch
 * updates it in place and says what changed.
 *
 * ERRORS. Functions return 0 (or a change mask) or a negative errno, and the lookups write
 * one human line into err naming the thing and the fix. Kernel errors that libnl reports as
 * its own codes are mapped back to the nearest errno.
 */
#ifndef ODPEMU_EMU_NETDEV_H
#define ODPEMU_EMU_NETDEV_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

#include "nic.h"

#define EMU_NETDEV_MAX_GIDS 16

struct emu_netdev {
	int ifindex;
	char name[IF_NAMESIZE];
	unsigned mtu;			/* netdev MTU */
	enum odpemu_mtu active_mtu;	/* roce_mtu_from_netdev(mtu): (mtu - 80) as an IB size */
	/* The link carries packets: IFF_UP and operational state UP, or UNKNOWN, which is
	 * what loopback and drivers without carrier reporting show when up. */
	bool up;
	/*
	 * GID table, sorted so that two snapshots compare with memcmp: every IPv4 address
	 * as IPv4-mapped (::ffff:a.b.c.d) first, then the IPv6 ones, link-local fe80::
	 * included (as rxe does); by bytes within each group. Tentative (DAD not done) and DAD-failed
	 * IPv6 addresses are left out: nothing can bind to them. At most EMU_NETDEV_MAX_GIDS;
	 * the rest are dropped and ngids_dropped says how many.
	 */
	unsigned ngids;
	unsigned ngids_dropped;
	struct nic_gid gids[EMU_NETDEV_MAX_GIDS];
};

/*
 * emu_netdev_by_name — the interface called ifname (--netdev IFNAME).
 * Returns 0 and fills *out. Errors: -ENODEV no such interface; -EINVAL ifname empty or
 * too long; -EACCES/-EPERM/-EIO netlink failed; -ENOMEM.
 */
int emu_netdev_by_name(const char *ifname, struct emu_netdev *out, char *err, size_t errlen);

/*
 * emu_netdev_by_addr — the interface that owns the address ip (--addr IP): an IPv4 or IPv6
 * literal; IPv6 link-local takes its interface as a scope, "fe80::1%eth0"; "::ffff:a.b.c.d"
 * means the IPv4 address. The owner is the interface the address is assigned to, or, for an
 * address only covered by a local route (127.0.0.2 under lo's 127.0.0.0/8, AnyIP routes),
 * the interface of the longest such route. *gid is the address as a GID (IPv4-mapped for
 * IPv4); it need not be in out->gids (127.0.0.2 is not).
 * Returns 0. Errors: -EINVAL not an IP literal, or an unknown %scope; -EADDRNOTAVAIL no
 * interface owns it; -ENOTUNIQ more than one interface does (name the scope); as
 * emu_netdev_by_name for netlink failures.
 */
int emu_netdev_by_addr(const char *ip, struct emu_netdev *out, struct nic_gid *gid,
		       char *err, size_t errlen);

/* What emu_netdev_watch_process saw change. */
enum {
	EMU_NETDEV_LINK_CHANGED = 1 << 0,	/* up flipped, the interface vanished or came back,
						 * or was renamed */
	EMU_NETDEV_ADDR_CHANGED = 1 << 1,	/* the GID table differs */
	EMU_NETDEV_MTU_CHANGED = 1 << 2,	/* mtu (and maybe active_mtu) differs */
};

struct emu_netdev_watch;

/*
 * emu_netdev_watch_open — start following the interface dev->ifindex: a libnl cache
 * manager on a non-blocking NETLINK_ROUTE socket subscribed to link and IPv4/IPv6 address
 * events, with link and address caches filled once (a blocking dump, here only). Changes
 * made between the lookup that filled dev and this dump are in the caches, not on the
 * socket: call emu_netdev_watch_process once right after opening to catch them. The
 * interface is followed by ifindex: one deleted and created again is a new interface.
 * Returns 0 and *out. Errors: -ENOMEM; -errno of the netlink socket or the dump.
 */
int emu_netdev_watch_open(const struct emu_netdev *dev, struct emu_netdev_watch **out);

/* The event socket: poll it for POLLIN, then call emu_netdev_watch_process. */
int emu_netdev_watch_fd(const struct emu_netdev_watch *w);

/*
 * emu_netdev_watch_process — read every pending event without blocking, then rebuild the
 * snapshot of dev->ifindex from the caches into *dev. An interface that disappeared reads as
 * not up, with no GIDs, its name and MTU kept.
 * Returns the mask of what changed (0: nothing relevant), or -errno when the socket failed.
 * After lost events (-ENOBUFS: the kernel's queue overflowed) the caches are dumped again
 * and the snapshot is still right; the call returns the mask as usual.
 */
int emu_netdev_watch_process(struct emu_netdev_watch *w, struct emu_netdev *dev);

/* Stop following and free w (NULL is fine). Remove the fd from any poll set first. */
void emu_netdev_watch_close(struct emu_netdev_watch *w);

/* "up"/"down", for logs. */
const char *emu_netdev_state_str(const struct emu_netdev *dev);

#endif
