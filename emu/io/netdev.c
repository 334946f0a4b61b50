/* SPDX-License-Identifier: MIT */
/* netdev — interface lookup and following via libnl-route-3 (link, address, route caches). */
#include "netdev.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>

#include "mtu.h"
#include "say.h"

/* The kernel's queue for our event socket: link/address storms (a container runtime
 * creating hundreds of veths) overflow libnl's 32 KiB default; an overflow costs a dump. */
#define WATCH_RCVBUF (1 << 20)

/* IF_OPER_* of linux/if.h, which cannot be included next to net/if.h. */
enum { OPER_UNKNOWN = 0, OPER_UP = 6 };

/* libnl folds kernel errnos into its own codes (nl_syserr2nlerr); map the ones a caller
 * can act on back. */
static int errno_of(int nlerr)
{
	switch (nlerr < 0 ? -nlerr : nlerr) {
	case NLE_NOMEM: return -ENOMEM;
	case NLE_OBJ_NOTFOUND:
	case NLE_NODEV: return -ENODEV;
	case NLE_NOADDR: return -EADDRNOTAVAIL;
	case NLE_PERM: return -EPERM;
	case NLE_NOACCESS: return -EACCES;
	case NLE_INVAL: return -EINVAL;
	case NLE_AGAIN: return -EAGAIN;
	case NLE_OPNOTSUPP: return -EOPNOTSUPP;
	default: return -EIO;
	}
}

static int nl_open(struct nl_sock **out, char *err, size_t errlen)
{
	struct nl_sock *sk = nl_socket_alloc();
	int rc;

	if (!sk) {
		emu_say(err, errlen, "out of memory opening a netlink socket");
		return -ENOMEM;
	}
	rc = nl_connect(sk, NETLINK_ROUTE);
	if (rc < 0) {
		emu_say(err, errlen, "cannot open a NETLINK_ROUTE socket: %s", nl_geterror(rc));
		nl_socket_free(sk);
		return errno_of(rc);
	}
	*out = sk;
	return 0;
}

/* ---- the snapshot ---- */

static bool gid_of(struct nl_addr *a, struct nic_gid *g)
{
	uint32_t v4;

	if (!a)
		return false;
	if (nl_addr_get_family(a) == AF_INET && nl_addr_get_len(a) == 4) {
		memcpy(&v4, nl_addr_get_binary_addr(a), 4);
		*g = nic_gid_from_v4(ntohl(v4));
		return true;
	}
	if (nl_addr_get_family(a) == AF_INET6 && nl_addr_get_len(a) == 16) {
		memcpy(g->raw, nl_addr_get_binary_addr(a), 16);
		return true;
	}
	return false;
}

/* IPv4 first, then IPv6, by bytes within each (by bytes alone ::1 would sort before
 * ::ffff:0:0/96). */
static int gid_cmp(const void *a, const void *b)
{
	bool va = nic_gid_is_v4(a), vb = nic_gid_is_v4(b);

	if (va != vb)
		return va ? -1 : 1;
	return memcmp(a, b, sizeof(struct nic_gid));
}

/* Addresses that can carry traffic: IPv6 ones still in (or failed) DAD cannot be bound. */
static bool addr_usable(struct rtnl_addr *a)
{
	return !(rtnl_addr_get_flags(a) & (IFA_F_TENTATIVE | IFA_F_DADFAILED));
}

static void fill_gids(struct nl_cache *addrs, int ifindex, struct emu_netdev *out)
{
	struct nl_object *o;

	out->ngids = 0;
	out->ngids_dropped = 0;
	for (o = nl_cache_get_first(addrs); o; o = nl_cache_get_next(o)) {
		struct rtnl_addr *a = (struct rtnl_addr *)o;
		struct nic_gid g;

		if (rtnl_addr_get_ifindex(a) != ifindex || !addr_usable(a) ||
		    !gid_of(rtnl_addr_get_local(a), &g))
			continue;
		if (out->ngids == EMU_NETDEV_MAX_GIDS)
			out->ngids_dropped++;
		else
			out->gids[out->ngids++] = g;
	}
	qsort(out->gids, out->ngids, sizeof(out->gids[0]), gid_cmp);
}

static void fill_link(struct rtnl_link *link, struct emu_netdev *out)
{
	const char *name = rtnl_link_get_name(link);
	uint8_t oper = rtnl_link_get_operstate(link);

	out->ifindex = rtnl_link_get_ifindex(link);
	snprintf(out->name, sizeof(out->name), "%s", name ? name : "?");
	out->mtu = rtnl_link_get_mtu(link);
	out->active_mtu = (enum odpemu_mtu)roce_mtu_from_netdev(out->mtu);
	out->up = (rtnl_link_get_flags(link) & IFF_UP) &&
		  (oper == OPER_UP || oper == OPER_UNKNOWN);
}

/* The interface ifindex (or called name) and its addresses, read from the kernel now. */
static int read_dev(struct nl_sock *sk, int ifindex, const char *name, struct emu_netdev *out,
		    char *err, size_t errlen)
{
	struct rtnl_link *link = NULL;
	struct nl_cache *addrs = NULL;
	int rc;

	rc = rtnl_link_get_kernel(sk, ifindex, name, &link);
	if (rc < 0 || !link) {
		rc = rc < 0 ? errno_of(rc) : -ENODEV;
		if (rc == -ENODEV && name)
			emu_say(err, errlen, "no interface named '%s' (see `ip link`)", name);
		else
			emu_say(err, errlen, "cannot read interface %s: %s", name ? name : "by index",
			    strerror(-rc));
		return rc;
	}
	memset(out, 0, sizeof(*out));
	fill_link(link, out);
	rtnl_link_put(link);
	rc = rtnl_addr_alloc_cache(sk, &addrs);
	if (rc < 0) {
		emu_say(err, errlen, "cannot list the addresses of %s: %s", out->name, nl_geterror(rc));
		return errno_of(rc);
	}
	fill_gids(addrs, out->ifindex, out);
	nl_cache_free(addrs);
	return 0;
}

int emu_netdev_by_name(const char *ifname, struct emu_netdev *out, char *err, size_t errlen)
{
	struct nl_sock *sk;
	int rc;

	if (!ifname || !*ifname || strlen(ifname) >= IF_NAMESIZE) {
		emu_say(err, errlen, "'%s' is not an interface name (1 to %d characters, see `ip link`)",
		    ifname ? ifname : "", IF_NAMESIZE - 1);
		return -EINVAL;
	}
	rc = nl_open(&sk, err, errlen);
	if (rc)
		return rc;
	rc = read_dev(sk, 0, ifname, out, err, errlen);
	nl_socket_free(sk);
	return rc;
}

/* ---- by address ---- */

/* An --addr argument: an address, maybe '%' and an interface name. */
#define IP_ARG_MAX (INET6_ADDRSTRLEN + IF_NAMESIZE + 1)

struct ip_want {
	int family;
	uint8_t bytes[16];
	int scope;			/* ifindex named after '%', 0 none */
	char text[IP_ARG_MAX];		/* the address without the scope, for messages */
};

static int parse_scope(struct nl_sock *sk, const char *name, struct ip_want *w,
		       const char *ip, char *err, size_t errlen)
{
	struct rtnl_link *link = NULL;
	int rc = rtnl_link_get_kernel(sk, 0, name, &link);

	if (rc < 0 || !link) {
		emu_say(err, errlen, "no interface named '%s' (the scope of '%s'; see `ip link`)",
		    name, ip);
		return -EINVAL;
	}
	w->scope = rtnl_link_get_ifindex(link);
	rtnl_link_put(link);
	return 0;
}

static int parse_ip(struct nl_sock *sk, const char *ip, struct ip_want *w, char *err,
		    size_t errlen)
{
	char buf[IP_ARG_MAX];
	char *pct;

	memset(w, 0, sizeof(*w));
	if (!ip || strlen(ip) >= sizeof(buf))
		goto bad;
	strcpy(buf, ip);
	pct = strchr(buf, '%');
	if (pct)
		*pct++ = '\0';
	snprintf(w->text, sizeof(w->text), "%s", buf);
	if (!pct && inet_pton(AF_INET, buf, w->bytes) == 1) {
		w->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, buf, w->bytes) != 1)
		goto bad;
	w->family = AF_INET6;
	if (IN6_IS_ADDR_V4MAPPED((struct in6_addr *)w->bytes)) {
		/* ::ffff:a.b.c.d is how a GID writes an IPv4 address: mean that address. */
		memmove(w->bytes, w->bytes + 12, 4);
		w->family = AF_INET;
		inet_ntop(AF_INET, w->bytes, w->text, sizeof(w->text));
	}
	return pct ? parse_scope(sk, pct, w, ip, err, errlen) : 0;
bad:
	emu_say(err, errlen, "'%s' is not an IPv4 or IPv6 address (e.g. 192.0.2.1, fd00::1, "
	    "fe80::1%%eth0)", ip ? ip : "");
	return -EINVAL;
}

static bool addr_is(struct nl_addr *a, const struct ip_want *w)
{
	size_t len = w->family == AF_INET ? 4 : 16;

	return a && nl_addr_get_family(a) == w->family && nl_addr_get_len(a) == len &&
	       memcmp(nl_addr_get_binary_addr(a), w->bytes, len) == 0;
}

/* The interfaces the address is assigned to: the first in *ifindex, a second one (a
 * different interface) in *other. */
static void find_assigned(struct nl_cache *addrs, const struct ip_want *w, int *ifindex,
			  int *other)
{
	struct nl_object *o;

	*ifindex = *other = 0;
	for (o = nl_cache_get_first(addrs); o; o = nl_cache_get_next(o)) {
		struct rtnl_addr *a = (struct rtnl_addr *)o;
		int idx = rtnl_addr_get_ifindex(a);

		if (!addr_is(rtnl_addr_get_local(a), w) || (w->scope && idx != w->scope))
			continue;
		if (!*ifindex)
			*ifindex = idx;
		else if (idx != *ifindex && !*other)
			*other = idx;
	}
}

/* The interface of the longest local route covering the address: the kernel delivers
 * locally every address of a local route (all of 127.0.0.0/8 on lo), not only the
 * addresses assigned. 0 if none. */
static int find_local_route(struct nl_sock *sk, const struct ip_want *w)
{
	struct nl_cache *routes = NULL;
	struct nl_addr *want;
	struct nl_object *o;
	int best = -1, ifindex = 0;

	want = nl_addr_build(w->family, w->bytes, w->family == AF_INET ? 4 : 16);
	if (!want)
		return 0;
	if (rtnl_route_alloc_cache(sk, w->family, 0, &routes) < 0)
		routes = NULL;
	for (o = routes ? nl_cache_get_first(routes) : NULL; o; o = nl_cache_get_next(o)) {
		struct rtnl_route *r = (struct rtnl_route *)o;
		struct nl_addr *dst = rtnl_route_get_dst(r);
		struct rtnl_nexthop *nh = rtnl_route_nexthop_n(r, 0);
		int plen = dst ? (int)nl_addr_get_prefixlen(dst) : -1;

		if (rtnl_route_get_type(r) != RTN_LOCAL || !dst || !nh || plen <= best ||
		    nl_addr_cmp_prefix(dst, want) != 0)
			continue;
		if (w->scope && rtnl_route_nh_get_ifindex(nh) != w->scope)
			continue;
		best = plen;
		ifindex = rtnl_route_nh_get_ifindex(nh);
	}
	if (routes)
		nl_cache_free(routes);
	nl_addr_put(want);
	return ifindex;
}

static void name_of(struct nl_sock *sk, int ifindex, char *buf, size_t len)
{
	struct rtnl_link *link = NULL;

	snprintf(buf, len, "ifindex %d", ifindex);
	if (rtnl_link_get_kernel(sk, ifindex, NULL, &link) >= 0 && link) {
		snprintf(buf, len, "%s", rtnl_link_get_name(link));
		rtnl_link_put(link);
	}
}

static int not_unique(struct nl_sock *sk, const struct ip_want *w, int a, int b, char *err,
		      size_t errlen)
{
	char na[IF_NAMESIZE + 16], nb[IF_NAMESIZE + 16];

	name_of(sk, a, na, sizeof(na));
	name_of(sk, b, nb, sizeof(nb));
	if (w->family == AF_INET6)
		emu_say(err, errlen, "address %s is on both %s and %s: name the interface, e.g. "
		    "--addr %s%%%s", w->text, na, nb, w->text, na);
	else
		emu_say(err, errlen, "address %s is assigned to both %s and %s: odpemud needs it on "
		    "one interface (`ip addr del` one)", w->text, na, nb);
	return -ENOTUNIQ;
}

static int owner_of(struct nl_sock *sk, const struct ip_want *w, int *ifindex, char *err,
		    size_t errlen)
{
	struct nl_cache *addrs = NULL;
	int rc, other;

	rc = rtnl_addr_alloc_cache(sk, &addrs);
	if (rc < 0) {
		emu_say(err, errlen, "cannot list addresses: %s", nl_geterror(rc));
		return errno_of(rc);
	}
	find_assigned(addrs, w, ifindex, &other);
	nl_cache_free(addrs);
	if (other)
		return not_unique(sk, w, *ifindex, other, err, errlen);
	if (!*ifindex)
		*ifindex = find_local_route(sk, w);
	if (!*ifindex) {
		emu_say(err, errlen, "address %s is not assigned to any interface%s: add it with "
		    "`ip addr add` or pick another --addr", w->text,
		    w->scope ? " of that scope" : "");
		return -EADDRNOTAVAIL;
	}
	return 0;
}

static struct nic_gid gid_of_want(const struct ip_want *w)
{
	struct nic_gid g;
	uint32_t v4;

	if (w->family == AF_INET6) {
		memcpy(g.raw, w->bytes, 16);
		return g;
	}
	memcpy(&v4, w->bytes, 4);
	return nic_gid_from_v4(ntohl(v4));
}

int emu_netdev_by_addr(const char *ip, struct emu_netdev *out, struct nic_gid *gid,
		       char *err, size_t errlen)
{
	struct nl_sock *sk;
	struct ip_want w;
	int rc, ifindex = 0;

	rc = nl_open(&sk, err, errlen);
	if (rc)
		return rc;
	rc = parse_ip(sk, ip, &w, err, errlen);
	if (!rc)
		rc = owner_of(sk, &w, &ifindex, err, errlen);
	if (!rc)
		rc = read_dev(sk, ifindex, NULL, out, err, errlen);
	if (!rc && gid)
		*gid = gid_of_want(&w);
	nl_socket_free(sk);
	return rc;
}

const char *emu_netdev_state_str(const struct emu_netdev *dev)
{
	return dev->up ? "up" : "down";
}

/* ---- the watch ---- */

struct emu_netdev_watch {
	struct nl_cache_mngr *mngr;	/* owns the event socket and the two caches */
	struct nl_cache *links, *addrs;
	int ifindex;
	bool present;			/* the interface was in the link cache last time */
};

/* The interface's own entry. Not rtnl_link_get(): the cache also keeps per-protocol
 * entries of the same ifindex (IPv6 announces its link info as an AF_INET6 RTM_NEWLINK)
 * that never see later flag or MTU changes, and rtnl_link_get may return one of those. */
static struct rtnl_link *find_link(struct nl_cache *links, int ifindex)
{
	struct nl_object *o;

	for (o = nl_cache_get_first(links); o; o = nl_cache_get_next(o)) {
		struct rtnl_link *link = (struct rtnl_link *)o;

		if (rtnl_link_get_ifindex(link) == ifindex &&
		    rtnl_link_get_family(link) == AF_UNSPEC)
			return link;
	}
	return NULL;
}

int emu_netdev_watch_open(const struct emu_netdev *dev, struct emu_netdev_watch **out)
{
	struct emu_netdev_watch *w = calloc(1, sizeof(*w));
	int rc, fd, rcvbuf = WATCH_RCVBUF;

	if (!w)
		return -ENOMEM;
	w->ifindex = dev->ifindex;
	/* Flags 0, not NL_AUTO_PROVIDE: our caches stay ours, not libnl's global ones. */
	rc = nl_cache_mngr_alloc(NULL, NETLINK_ROUTE, 0, &w->mngr);
	if (rc >= 0)
		rc = nl_cache_mngr_add(w->mngr, "route/link", NULL, NULL, &w->links);
	if (rc >= 0)
		rc = nl_cache_mngr_add(w->mngr, "route/addr", NULL, NULL, &w->addrs);
	if (rc < 0) {
		emu_netdev_watch_close(w);
		return errno_of(rc);
	}
	w->present = find_link(w->links, w->ifindex) != NULL;
	fd = nl_cache_mngr_get_fd(w->mngr);
	/* Best effort: without it an overflow costs a resync, nothing worse. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	*out = w;
	return 0;
}

int emu_netdev_watch_fd(const struct emu_netdev_watch *w)
{
	return nl_cache_mngr_get_fd(w->mngr);
}

/* Events were lost (the socket's queue overflowed): dump both caches again. */
static int resync(struct emu_netdev_watch *w)
{
	struct nl_sock *sk;
	int rc = nl_open(&sk, NULL, 0);

	if (rc)
		return rc;
	rc = nl_cache_refill(sk, w->links);
	if (rc >= 0)
		rc = nl_cache_refill(sk, w->addrs);
	nl_socket_free(sk);
	return rc < 0 ? errno_of(rc) : 0;
}

static int diff(const struct emu_netdev *a, const struct emu_netdev *b)
{
	int mask = 0;

	if (a->up != b->up || strcmp(a->name, b->name))
		mask |= EMU_NETDEV_LINK_CHANGED;
	if (a->mtu != b->mtu)
		mask |= EMU_NETDEV_MTU_CHANGED;
	if (a->ngids != b->ngids || a->ngids_dropped != b->ngids_dropped ||
	    memcmp(a->gids, b->gids, a->ngids * sizeof(a->gids[0])))
		mask |= EMU_NETDEV_ADDR_CHANGED;
	return mask;
}

int emu_netdev_watch_process(struct emu_netdev_watch *w, struct emu_netdev *dev)
{
	struct emu_netdev next = *dev;
	struct rtnl_link *link;
	int rc, mask;

	rc = nl_cache_mngr_data_ready(w->mngr);
	/* -NLE_NOMEM is also how libnl reports ENOBUFS, the kernel's "events were dropped";
	 * a dump fixes both that and a stale cache after any other receive error. */
	if (rc < 0) {
		rc = resync(w);
		if (rc)
			return rc;
	}
	link = find_link(w->links, w->ifindex);
	if (link)
		fill_link(link, &next);
	else
		next.up = false;
	fill_gids(w->addrs, w->ifindex, &next);
	mask = diff(dev, &next);
	if (w->present != (link != NULL))
		mask |= EMU_NETDEV_LINK_CHANGED;
	w->present = link != NULL;
	*dev = next;
	return mask;
}

void emu_netdev_watch_close(struct emu_netdev_watch *w)
{
	if (!w)
		return;
	/* The manager frees the caches it holds (nl_cache_mngr_add frees one it refuses). */
	nl_cache_mngr_free(w->mngr);
	free(w);
}
