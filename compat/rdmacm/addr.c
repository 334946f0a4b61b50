/* SPDX-License-Identifier: MIT */
/* addr — the devices, and address and route resolution (rdma_resolve_addr,
 * rdma_resolve_route, rdma_get_devices). Resolution is local, as on RoCE: the source
 * address is the one the host's routing picks for the destination, the device is the
 * odpemu device whose GID table holds it, the route is the two GIDs and the port's MTU. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cma.h"

static struct cma_dev devs[CMA_MAX_DEVS];
static int ndevs = -1;		/* -1: not opened yet */

static void find_local_devs(void);

static int open_devices(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int n = 0;

	for (int i = 0; list && list[i] && n < CMA_MAX_DEVS; i++) {
		struct cma_dev *d = &devs[n];
		struct ibv_port_attr pa;

		if (!(d->verbs = ibv_open_device(list[i])))
			continue;
		if (!(d->pd = ibv_alloc_pd(d->verbs)) || ibv_query_port(d->verbs, 1, &pa)) {
			if (d->pd)
				ibv_dealloc_pd(d->pd);
			ibv_close_device(d->verbs);
			continue;
		}
		d->mtu = pa.active_mtu;
		for (d->ngids = 0; d->ngids < CMA_MAX_GIDS && d->ngids < pa.gid_tbl_len &&
		     !ibv_query_gid(d->verbs, 1, d->ngids, &d->gid[d->ngids]); d->ngids++)
			;
		n++;
	}
	if (list)
		ibv_free_device_list(list);
	return n;
}

int cma_devices(void)
{
	int n;

	pthread_mutex_lock(&cma_lock);
	if (ndevs < 0 || ndevs == 0) {	/* none yet: a daemon may have started since */
		ndevs = open_devices();
		find_local_devs();
	}
	n = ndevs;
	pthread_mutex_unlock(&cma_lock);
	if (!n)
		errno = ENODEV;
	return n ? n : -1;
}

struct cma_dev *cma_dev(int i)
{
	return i >= 0 && i < ndevs ? &devs[i] : NULL;
}

void cma_gid_of_addr(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

uint16_t cma_port_of(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

void cma_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

socklen_t cma_addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	       sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : 0;
}

/* The device whose GID table holds gid nearest its start; -1 if none. */
static int dev_of_gid(const union ibv_gid *gid)
{
	int best = -1, best_at = CMA_MAX_GIDS;

	for (int i = 0; i < ndevs; i++)
		for (int k = 0; k < devs[i].ngids && k < best_at; k++)
			if (!memcmp(&devs[i].gid[k], gid, sizeof(*gid))) {
				best = i;
				best_at = k;
			}
	return best;
}

bool cma_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

bool cma_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* Mark the devices that hold an address of this host (cma_dev.local); the others are
 * devices of other hosts, listed because network namespaces share the run directory. */
static void find_local_devs(void)
{
	struct ifaddrs *ifs, *a;

	if (getifaddrs(&ifs))
		return;
	for (a = ifs; a; a = a->ifa_next) {
		union ibv_gid gid;
		int d;

		if (!a->ifa_addr || cma_is_loopback(a->ifa_addr) ||
		    (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6))
			continue;
		cma_gid_of_addr(a->ifa_addr, &gid);
		if ((d = dev_of_gid(&gid)) >= 0)
			devs[d].local = true;
	}
	freeifaddrs(ifs);
}

/* A loopback destination: the first device with an address of this host (the kernel's
 * cma_bind_loopback, used by address resolution only). */
static int local_dev(void)
{
	for (int i = 0; i < ndevs; i++)
		if (devs[i].local)
			return i;
	return -1;
}

int cma_dev_of_addr(const struct sockaddr *sa)
{
	union ibv_gid gid;
	int dev;

	if (cma_devices() < 0)
		return -1;
	cma_gid_of_addr(sa, &gid);
	dev = dev_of_gid(&gid);
	return dev;
}

/* The source address the host's routing picks for dst (a connected UDP socket's name). */
static int route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	struct sockaddr_storage to;
	int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	memcpy(&to, dst, cma_addr_len(dst));
	if (!cma_port_of((struct sockaddr *)&to))
		cma_set_port((struct sockaddr *)&to, 4791);	/* any: connect needs one */
	if (connect(fd, (struct sockaddr *)&to, cma_addr_len(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &len))
		rc = -errno;
	close(fd);
	return rc;
}

/* A source port for the REQ's IP header when the ID was bound without one. */
static uint16_t ephemeral_port(void)
{
	return (uint16_t)(32768 + (unsigned)random() % 28232);
}

static void resolved(struct cma_id *id, enum rdma_cm_event_type type, int status)
{
	struct cma_event *e = cma_event_new();

	if (!e)
		return;
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	pthread_mutex_lock(&cma_lock);
	id->unacked++;
	pthread_mutex_unlock(&cma_lock);
	cma_queue(id->chan, e);
}

static int resolve_source(struct cma_id *id, const struct sockaddr *src, const struct sockaddr *dst)
{
	struct sockaddr_storage s;
	int dev, rc;

	if (src && src->sa_family) {
		memcpy(&s, src, cma_addr_len(src));
	} else if (id->dev >= 0) {
		return 0;	/* bound already */
	} else if ((rc = route_source(dst, &s))) {
		return rc;
	}
	dev = cma_dev_of_addr((struct sockaddr *)&s);
	if (dev < 0 && !(src && src->sa_family) && cma_is_loopback((struct sockaddr *)&s))
		dev = local_dev();	/* the routing picked lo: the destination is this host */
	if (dev < 0)
		return -EADDRNOTAVAIL;
	if (!cma_port_of((struct sockaddr *)&s))
		cma_set_port((struct sockaddr *)&s, ephemeral_port());
	memcpy(&id->id.route.addr.src_storage, &s, cma_addr_len((struct sockaddr *)&s));
	cma_id_set_dev(id, dev);
	return 0;
}

CMA_EXPORT int rdma_resolve_addr(struct rdma_cm_id *cid, struct sockaddr *src_addr,
				 struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id *id = cma_id(cid);
	int rc;

	(void)timeout_ms;	/* local: answered at once */
	if (!cid || !dst_addr || !cma_addr_len(dst_addr))
		return errno = EINVAL, -1;
	memcpy(&cid->route.addr.dst_storage, dst_addr, cma_addr_len(dst_addr));
	rc = resolve_source(id, src_addr, dst_addr);
	if (!rc) {
		/* "any address" is this host: the kernel's cma_resolve_loopback sends to the
		 * source's own GID */
		cma_gid_of_addr(cma_is_any(dst_addr) ? (struct sockaddr *)&cid->route.addr.src_storage
						     : dst_addr,
				&cid->route.addr.addr.ibaddr.dgid);
		id->state = CMA_ADDR_RESOLVED;
	}
	/* As the kernel: the call succeeds, the outcome is an event (ADDR_ERROR carries why:
	 * -EADDRNOTAVAIL when no odpemu device holds the source address). */
	resolved(id, rc ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED, rc);
	return id->sync ? cma_sync_wait(id, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

CMA_EXPORT int rdma_resolve_route(struct rdma_cm_id *cid, int timeout_ms)
{
	struct cma_id *id = cma_id(cid);
	struct cma_dev *d;

	(void)timeout_ms;
	if (!cid || id->state != CMA_ADDR_RESOLVED || !(d = cma_dev(id->dev)))
		return errno = EINVAL, -1;
	memset(&id->path, 0, sizeof(id->path));
	id->path.sgid = cid->route.addr.addr.ibaddr.sgid;
	id->path.dgid = cid->route.addr.addr.ibaddr.dgid;
	id->path.pkey = htons(0xffff);
	id->path.hop_limit = 64;
	id->path.mtu = (uint8_t)d->mtu;
	id->path.numb_path = 1;
	id->path.reversible = htonl(1);
	cid->route.path_rec = &id->path;
	cid->route.num_paths = 1;
	id->state = CMA_ROUTE_RESOLVED;
	resolved(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return id->sync ? cma_sync_wait(id, RDMA_CM_EVENT_ROUTE_RESOLVED) : 0;
}

CMA_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	int n = cma_devices();
	struct ibv_context **list;

	if (n < 0)
		n = 0;
	if (!(list = calloc((size_t)n + 1, sizeof(*list))))
		return NULL;
	for (int i = 0; i < n; i++)
		list[i] = devs[i].verbs;
	if (num_devices)
		*num_devices = n;
	return list;
}

CMA_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
