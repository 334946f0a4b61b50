/* SPDX-License-Identifier: MIT */
/* Path MTU: the IB enum (1..5 = 256..4096 bytes) and the netdev-MTU → IB-MTU rule. */
#ifndef ODPEMU_PROTO_MTU_H
#define ODPEMU_PROTO_MTU_H

#include <stdint.h>

enum roce_mtu {
	ROCE_MTU_INVALID = 0,
	ROCE_MTU_256 = 1,
	ROCE_MTU_512 = 2,
	ROCE_MTU_1024 = 3,
	ROCE_MTU_2048 = 4,
	ROCE_MTU_4096 = 5,
};

/* Bytes of an MTU enum, or 0 for a value outside 1..5. */
unsigned roce_mtu_bytes(enum roce_mtu mtu);

/* The enum of an exact IB MTU size (256, 512, ... 4096), or ROCE_MTU_INVALID. */
enum roce_mtu roce_mtu_from_bytes(unsigned bytes);

/* The IB MTU a netdev of this MTU carries: RoCEv2 spends up to 80 bytes on
 * Ethernet/IP/UDP/BTH/ICRC headroom, the rest is rounded down to an IB size and
 * clamped to 256..4096 (as rxe does: 1500 → 1024, 9000 or loopback → 4096). */
enum roce_mtu roce_mtu_from_netdev(unsigned netdev_mtu);

#define ROCE_NETDEV_MTU_OVERHEAD 80u

#endif
