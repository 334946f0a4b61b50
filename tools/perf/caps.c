/* SPDX-License-Identifier: MIT */
/* caps — may this device run this configuration? Capabilities are checked before a
 * feature is used (as rdma-core asks of applications), so a user reads "no implicit ODP:
 * use --odp explicit" instead of an EINVAL from reg_mr halfway through. */
#include <stdio.h>

#include "perf.h"

/* The RC ODP capability bits the test's operation needs on both sides. */
static uint32_t odp_bits(enum perf_test t)
{
	switch (t) {
	case PERF_WRITE: return ODPEMU_ODP_WRITE;
	case PERF_READ: return ODPEMU_ODP_READ;
	case PERF_SEND: return ODPEMU_ODP_SEND | ODPEMU_ODP_RECV;
	case PERF_ATOMIC: return ODPEMU_ODP_ATOMIC;
	case PERF_FLUSH: return ODPEMU_ODP_FLUSH;
	}
	return 0;
}

static int check_odp(const struct perf_cfg *c, const char *dev,
		     const struct odpemu_device_attr *a, char *msg, size_t len)
{
	uint32_t need = odp_bits(c->test), have = a->odp_caps.per_transport_caps.rc_odp_caps;
	bool rc_odp = c->regcache == PERF_RC_ODP;

	if (c->odp == PERF_ODP_OFF && !rc_odp)
		return 0;
	if (!(a->odp_caps.general_caps & ODPEMU_ODP_SUPPORT))
		snprintf(msg, len, "device %s does not support ODP: run with %s", dev,
			 rc_odp ? "another --regcache back-end" : "--odp off");
	else if (c->odp == PERF_ODP_IMPLICIT &&
		 !(a->odp_caps.general_caps & ODPEMU_ODP_SUPPORT_IMPLICIT))
		snprintf(msg, len, "device %s does not support implicit ODP: use --odp explicit "
			 "(or off)", dev);
	else if ((have & need) != need)
		snprintf(msg, len, "device %s does not support ODP for RC %s (rc_odp_caps 0x%x): "
			 "run with %s", dev, perf_test_name(c->test), have,
			 rc_odp ? "another --regcache back-end" : "--odp off");
	else
		return 0;
	return -1;
}

static int check_sizes(const struct perf_cfg *c, const char *dev,
		       const struct odpemu_device_attr *a, char *msg, size_t len)
{
	uint64_t size = c->all ? PERF_ALL_MAX : c->size;
	uint64_t max = a->max_mr_size < PERF_MAX_MSG ? a->max_mr_size : PERF_MAX_MSG;
	unsigned rx = c->test == PERF_SEND ? perf_rx_depth(c) : 1;

	if (size > max)
		snprintf(msg, len, "-s %llu is over the largest message, %llu bytes (RoCE's DMA "
			 "length; %s's max_mr_size): use a smaller -s", (unsigned long long)size,
			 (unsigned long long)max, dev);
	else if (c->inline_size > a->max_inline_data)
		snprintf(msg, len, "--inline %u is over %s's max_inline_data %u: use --inline %u "
			 "or less", c->inline_size, dev, a->max_inline_data, a->max_inline_data);
	else if (c->qps > (unsigned)a->max_qp)
		snprintf(msg, len, "-q %u is over %s's max_qp %d", c->qps, dev, a->max_qp);
	else if (c->tx_depth > (unsigned)a->max_qp_wr || rx > (unsigned)a->max_qp_wr)
		snprintf(msg, len, "--tx-depth %u is over %s's max_qp_wr %d: use a smaller "
			 "--tx-depth", c->tx_depth, dev, a->max_qp_wr);
	else if ((uint64_t)c->qps * (c->tx_depth > rx ? c->tx_depth : rx) > (uint64_t)a->max_cqe)
		snprintf(msg, len, "-q %u x --tx-depth %u is over %s's max_cqe %d: use fewer QPs "
			 "or a smaller --tx-depth", c->qps, c->tx_depth, dev, a->max_cqe);
	else
		return 0;
	return -1;
}

static int check_port(const struct perf_cfg *c, const char *dev,
		      const struct odpemu_port_attr *p, char *msg, size_t len)
{
	int active = odpemu_mtu_to_bytes(p->active_mtu);

	if (p->state != ODPEMU_PORT_ACTIVE)
		snprintf(msg, len, "the port of %s is %s (netdev %s): bring the interface up",
			 dev, odpemu_port_state_str(p->state), p->netdev);
	else if (c->mtu && (int)c->mtu > active)
		snprintf(msg, len, "--mtu %u is over the active MTU %d of %s (netdev %s, MTU %u): "
			 "use --mtu %d or less, or raise the interface's MTU", c->mtu, active, dev,
			 p->netdev, p->netdev_mtu, active);
	else
		return 0;
	return -1;
}

int perf_check_caps(const struct perf_cfg *c, const char *devname,
		    const struct odpemu_device_attr *a, const struct odpemu_port_attr *p,
		    char *msg, size_t len)
{
	if (check_odp(c, devname, a, msg, len) || check_sizes(c, devname, a, msg, len) ||
	    check_port(c, devname, p, msg, len))
		return -1;
	return 0;
}
