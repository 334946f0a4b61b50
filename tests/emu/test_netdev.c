/* SPDX-License-Identifier: MIT */
/* emu/netdev: lookups by name and address on lo, their errors, and the watch following a
 * veth through up/down, carrier, MTU, address and removal (in a private network namespace). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/loop.h"
#include "io/netdev.h"
#include "t.h"
#include "tnet.h"

static bool has_gid(const struct emu_netdev *d, const struct nic_gid *g)
{
	for (unsigned i = 0; i < d->ngids; i++)
		if (!memcmp(&d->gids[i], g, sizeof(*g)))
			return true;
	return false;
}

static struct nic_gid gid6(const char *s)
{
	struct nic_gid g;

	memset(&g, 0, sizeof(g));
	inet_pton(AF_INET6, s, g.raw);
	return g;
}

static void test_lo(void)
{
	struct emu_netdev d;
	struct nic_gid lo4 = nic_gid_from_v4(0x7f000001), g;
	char err[256] = "";

	T_EQ(emu_netdev_by_name("lo", &d, err, sizeof(err)), 0, "by_name lo");
	T_CHECK(!strcmp(d.name, "lo"), "name %s", d.name);
	T_CHECK(d.up, "lo is up");
	T_EQ(d.mtu, 65536, "lo mtu");
	T_EQ(d.active_mtu, ODPEMU_MTU_4096, "lo active mtu");
	T_CHECK(has_gid(&d, &lo4), "lo has ::ffff:127.0.0.1 (%u gids)", d.ngids);
	for (unsigned i = 1; i < d.ngids; i++) {
		bool v4a = nic_gid_is_v4(&d.gids[i - 1]), v4b = nic_gid_is_v4(&d.gids[i]);

		T_CHECK(v4a > v4b || (v4a == v4b && memcmp(&d.gids[i - 1], &d.gids[i], 16) < 0),
			"gids sorted: IPv4 first, then by bytes (%u)", i);
	}

	T_EQ(emu_netdev_by_addr("127.0.0.1", &d, &g, err, sizeof(err)), 0, "by_addr 127.0.0.1");
	T_CHECK(!strcmp(d.name, "lo") && !memcmp(&g, &lo4, 16), "127.0.0.1 is lo's (%s)", err);
	/* Not assigned, but local through lo's 127.0.0.0/8 route: the second daemon's address. */
	T_EQ(emu_netdev_by_addr("127.0.0.2", &d, &g, err, sizeof(err)), 0, "by_addr 127.0.0.2");
	T_CHECK(!strcmp(d.name, "lo"), "127.0.0.2 is lo's: %s", err);
	T_CHECK(!memcmp(&g, (struct nic_gid[]){ nic_gid_from_v4(0x7f000002) }, 16), "gid .2");
	T_EQ(emu_netdev_by_addr("::ffff:127.0.0.1", &d, &g, err, sizeof(err)), 0, "mapped form");
	T_CHECK(!memcmp(&g, &lo4, 16), "::ffff:127.0.0.1 means 127.0.0.1");
	if (emu_netdev_by_addr("::1", &d, &g, err, sizeof(err)) == 0) {
		struct nic_gid one = gid6("::1");

		T_CHECK(!strcmp(d.name, "lo") && !memcmp(&g, &one, 16), "::1 is lo's");
		T_CHECK(has_gid(&d, &one), "lo has ::1");
	} else {
		printf("IPv6 off here: %s\n", err);
	}
}

static void test_errors(void)
{
	struct emu_netdev d;
	struct nic_gid g;
	char err[256];

	err[0] = 0;
	T_EQ(emu_netdev_by_name("odpnosuch0", &d, err, sizeof(err)), -ENODEV, "no such name");
	T_CHECK(strstr(err, "odpnosuch0"), "message names it: '%s'", err);
	err[0] = 0;
	T_EQ(emu_netdev_by_name("a-name-much-too-long-for-linux", &d, err, sizeof(err)),
	     -EINVAL, "long name");
	T_CHECK(err[0], "message for a long name");
	err[0] = 0;
	T_EQ(emu_netdev_by_addr("10.9.9.9", &d, &g, err, sizeof(err)), -EADDRNOTAVAIL,
	     "unassigned address");
	T_CHECK(strstr(err, "10.9.9.9") && strstr(err, "ip addr add"), "message: '%s'", err);
	err[0] = 0;
	T_EQ(emu_netdev_by_addr("10.9.9", &d, &g, err, sizeof(err)), -EINVAL, "not an address");
	T_CHECK(strstr(err, "10.9.9"), "message: '%s'", err);
	err[0] = 0;
	T_EQ(emu_netdev_by_addr("fe80::1%odpnosuch0", &d, &g, err, sizeof(err)), -EINVAL,
	     "unknown scope");
	T_CHECK(strstr(err, "odpnosuch0"), "message: '%s'", err);
}

/* Process events until every bit of want was reported or ms passed: returns what was seen. */
static int wait_for(struct emu_netdev_watch *w, struct emu_netdev *d, int want, unsigned ms)
{
	uint64_t end = emu_now_ns() + ms * 1000000ull;
	int seen = 0;

	while ((seen & want) != want && emu_now_ns() < end) {
		struct pollfd p = { .fd = emu_netdev_watch_fd(w), .events = POLLIN };
		int rc;

		if (poll(&p, 1, 50) <= 0)
			continue;
		rc = emu_netdev_watch_process(w, d);
		if (getenv("T_VERBOSE"))
			printf("  event: mask %d, %s %s mtu %u, %u gids\n", rc, d->name,
			       emu_netdev_state_str(d), d->mtu, d->ngids);
		T_CHECK(rc >= 0, "process: %d", rc);
		if (rc > 0)
			seen |= rc;
	}
	return seen;
}

static int wait_change(struct emu_netdev_watch *w, struct emu_netdev *d, int want)
{
	return wait_for(w, d, want, 3000);
}

static int watch_body(void)
{
	struct emu_netdev d, d2;
	struct emu_netdev_watch *w = NULL;
	struct nic_gid a4 = nic_gid_from_v4(0x0a4d0001), g;
	char err[256] = "";

	if (t_veth_add("odpt0", "odpt1"))
		return T_SKIP;
	T_EQ(emu_netdev_by_name("odpt0", &d, err, sizeof(err)), 0, "by_name odpt0");
	T_CHECK(!d.up && d.mtu == 1500 && d.active_mtu == ODPEMU_MTU_1024,
		"new veth: down, 1500 → 1024 (%d %u %d)", d.up, d.mtu, d.active_mtu);
	T_EQ(emu_netdev_watch_open(&d, &w), 0, "watch open");
	T_EQ(emu_netdev_watch_process(w, &d), 0, "nothing yet");

	/* Up with the peer down has no carrier: still not usable. */
	T_EQ(t_link_set("odpt0", 1, 0), 0, "odpt0 up");
	wait_for(w, &d, EMU_NETDEV_LINK_CHANGED, 300);
	T_CHECK(!d.up, "no carrier while the peer is down");
	T_EQ(t_link_set("odpt1", 1, 0), 0, "odpt1 up");
	T_CHECK(wait_change(w, &d, EMU_NETDEV_LINK_CHANGED) & EMU_NETDEV_LINK_CHANGED,
		"carrier reported");
	T_CHECK(d.up, "up with carrier");

	T_EQ(t_addr_add("odpt0", "10.77.0.1/24"), 0, "addr add");
	T_CHECK(wait_change(w, &d, EMU_NETDEV_ADDR_CHANGED) & EMU_NETDEV_ADDR_CHANGED,
		"address reported");
	T_CHECK(has_gid(&d, &a4), "GID ::ffff:10.77.0.1 (%u gids)", d.ngids);
	T_EQ(emu_netdev_by_addr("10.77.0.1", &d2, &g, err, sizeof(err)), 0, "by_addr");
	T_CHECK(d2.ifindex == d.ifindex && !memcmp(&g, &a4, 16), "10.77.0.1 is odpt0's");

	/* IPv6 appears once DAD is done (about a second): tentative addresses cannot be bound. */
	struct nic_gid a6 = gid6("fd77::1");

	T_EQ(t_addr_add("odpt0", "fd77::1/64"), 0, "addr add v6");
	for (int i = 0; i < 3 && !has_gid(&d, &a6); i++)
		wait_change(w, &d, EMU_NETDEV_ADDR_CHANGED);
	T_CHECK(has_gid(&d, &a6), "GID fd77::1 after DAD (%u gids)", d.ngids);
	T_CHECK(nic_gid_is_v4(&d.gids[0]), "IPv4 first");
	T_EQ(emu_netdev_by_addr("fd77::1", &d2, &g, err, sizeof(err)), 0, "by_addr v6");
	T_CHECK(d2.ifindex == d.ifindex && !memcmp(&g, &a6, 16), "fd77::1 is odpt0's");

	T_EQ(t_link_set("odpt0", -1, 9000), 0, "mtu 9000");
	T_CHECK(wait_change(w, &d, EMU_NETDEV_MTU_CHANGED) & EMU_NETDEV_MTU_CHANGED,
		"mtu reported");
	T_CHECK(d.mtu == 9000 && d.active_mtu == ODPEMU_MTU_4096, "9000 → 4096 (%u)", d.mtu);

	T_EQ(t_link_set("odpt0", 0, 0), 0, "odpt0 down");
	T_CHECK(wait_change(w, &d, EMU_NETDEV_LINK_CHANGED) & EMU_NETDEV_LINK_CHANGED,
		"down reported");
	T_CHECK(!d.up, "down");

	T_EQ(t_link_del("odpt0"), 0, "delete");
	T_CHECK(wait_change(w, &d, EMU_NETDEV_ADDR_CHANGED | EMU_NETDEV_LINK_CHANGED) ==
		(EMU_NETDEV_ADDR_CHANGED | EMU_NETDEV_LINK_CHANGED), "removal reported");
	T_CHECK(!d.up && d.ngids == 0, "gone: down, no GIDs (%u)", d.ngids);
	T_CHECK(!strcmp(d.name, "odpt0"), "name kept");
	emu_netdev_watch_close(w);
	return t_done("netdev-watch");
}

int main(void)
{
	int rc;

	test_lo();
	test_errors();
	rc = t_in_netns("watch (veth in a private netns)", watch_body, 60);
	T_CHECK(rc == 0 || rc == T_SKIP, "watch child failed (%d)", rc);
	return t_done("netdev");
}
