/* SPDX-License-Identifier: MIT */
#include "mtu.h"

unsigned roce_mtu_bytes(enum roce_mtu mtu)
{
	if (mtu < ROCE_MTU_256 || mtu > ROCE_MTU_4096)
		return 0;
	return 128u << mtu;
}

enum roce_mtu roce_mtu_from_bytes(unsigned bytes)
{
	for (enum roce_mtu m = ROCE_MTU_256; m <= ROCE_MTU_4096; m++)
		if (roce_mtu_bytes(m) == bytes)
			return m;
	return ROCE_MTU_INVALID;
}

enum roce_mtu roce_mtu_from_netdev(unsigned netdev_mtu)
{
	unsigned room = netdev_mtu > ROCE_NETDEV_MTU_OVERHEAD
		? netdev_mtu - ROCE_NETDEV_MTU_OVERHEAD : 0;
	enum roce_mtu best = ROCE_MTU_256;

	for (enum roce_mtu m = ROCE_MTU_256; m <= ROCE_MTU_4096; m++)
		if (roce_mtu_bytes(m) <= room)
			best = m;
	return best;
}
