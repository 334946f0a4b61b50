/* SPDX-License-Identifier: MIT */
/* id — rdma_cm IDs: create, destroy, bind, listen, options, migrate, ports; sync IDs (made
 * without a channel) wait for their own events. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"

pthread_mutex_t cma_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cma_id *ids;

struct cma_id *cma_id(struct rdma_cm_id *id)
{
	return (struct cma_id *)id;
}

/* Found IDs come held (unacked + 1, so rdma_destroy_id waits): the event made for them
 * takes the hold over, or cma_id_release gives it back. */
/* The daemon may answer before its reply to the call that made the handle has been read
 * (a REJ comes back while rdma_connect still waits for its connection's number): an ID
 * still waiting for its handle is found by the user value the call gave the daemon, the
 * ID's address, checked against the live IDs. */
static bool awaits_handle(const struct cma_id *id, uint32_t handle, uint64_t user)
{
	return !handle && (uint64_t)(uintptr_t)id == user;
}

struct cma_id *cma_find_conn(int dev, uint32_t conn, uint64_t user)
{
	struct cma_id *id;

	pthread_mutex_lock(&cma_lock);
	for (id = ids; id; id = id->next)
		if (id->dev == dev && (id->conn == conn ||
				       (id->state == CMA_CONNECT && awaits_handle(id, id->conn, user))))
			break;
	if (id)
		id->unacked++;
	pthread_mutex_unlock(&cma_lock);
	return id;
}

struct cma_id *cma_find_listener(int dev, uint32_t listener, uint64_t user)
{
	struct cma_id *id;

	if (dev < 0 || dev >= CMA_MAX_DEVS)
		return NULL;
	pthread_mutex_lock(&cma_lock);
	for (id = ids; id; id = id->next)
		if (id->listen[dev] == listener ||
		    ((id->state == CMA_BOUND || id->state == CMA_LISTEN) &&
		     awaits_handle(id, id->listen[dev], user)))
			break;
	if (id)
		id->unacked++;
	pthread_mutex_unlock(&cma_lock);
	return id;
}

void cma_set_handle(uint32_t *where, uint32_t handle)
{
	pthread_mutex_lock(&cma_lock);
	*where = handle;
	pthread_mutex_unlock(&cma_lock);
}

void cma_id_release(struct cma_id *id)
{
	pthread_mutex_lock(&cma_lock);
	if (id->unacked && !--id->unacked)
		pthread_cond_broadcast(&id->acked);
	pthread_mutex_unlock(&cma_lock);
}

struct cma_id *cma_id_new(struct cma_channel *chan, bool sync, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct cma_id *id = calloc(1, sizeof(*id));

	if (!id)
		return errno = ENOMEM, NULL;
	if (!chan && !(chan = cma_chan(rdma_create_event_channel()))) {
		free(id);
		return NULL;
	}
	id->chan = chan;
	id->sync = sync;
	id->dev = -1;
	id->id.channel = &chan->ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	id->ack_timeout = ODPEMU_CM_ACK_TIMEOUT;	/* the QPs' local ACK timeout, as the kernel's */
	id->retry = 7;
	id->rnr_retry = 7;
	pthread_cond_init(&id->acked, NULL);
	pthread_mutex_lock(&cma_lock);
	id->next = ids;
	ids = id;
	pthread_mutex_unlock(&cma_lock);
	return id;
}

void cma_id_set_dev(struct cma_id *id, int dev)
{
	struct cma_dev *d = cma_dev(dev);

	id->dev = dev;
	id->id.verbs = d->verbs;
	id->id.pd = d->pd;
	id->id.port_num = 1;
	cma_gid_of_addr(&id->id.route.addr.src_addr, &id->id.route.addr.addr.ibaddr.sgid);
	id->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
}

static enum ibv_qp_type qp_type_of(enum rdma_port_space ps)
{
	return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
}

CMA_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			      void *context, enum rdma_port_space ps)
{
	struct cma_id *n;

	if (!id)
		return errno = EINVAL, -1;
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB && ps != RDMA_PS_UDP)
		return errno = EPROTONOSUPPORT, -1;
	if (!(n = cma_id_new(channel ? cma_chan(channel) : NULL, !channel, context, ps,
			     qp_type_of(ps))))
		return -1;
	*id = &n->id;
	return 0;
}

static void unlink_id(struct cma_id *id)
{
	for (struct cma_id **p = &ids; *p; p = &(*p)->next)
		if (*p == id) {
			*p = id->next;
			break;
		}
}

/* The daemon's objects of this ID go (a connection still up is disconnected by it). */
static void release_ports(struct cma_id *id);

static void release_daemon(struct cma_id *id)
{
	release_ports(id);
	if (id->conn && cma_dev(id->dev))
		odpemu_cm_destroy(odpemu_compat_context(cma_dev(id->dev)->verbs), id->conn);
}

CMA_EXPORT int rdma_destroy_id(struct rdma_cm_id *cid)
{
	struct cma_id *id = cma_id(cid);

	if (!cid)
		return errno = EINVAL, -1;
	pthread_mutex_lock(&cma_lock);
	while (id->unacked)	/* as librdmacm: every event of the ID acked first */
		pthread_cond_wait(&id->acked, &cma_lock);
	unlink_id(id);
	pthread_mutex_unlock(&cma_lock);
	cma_leave_all(id);
	release_daemon(id);
	if (id->sync)
		rdma_destroy_event_channel(&id->chan->ch);
	pthread_cond_destroy(&id->acked);
	free(id);
	return 0;
}

/* The AFONLY an ID gets at bind unless rdma_set_option gave one: IPv4 only hears IPv4;
 * IPv6 follows net.ipv6.bindv6only (0 unless changed: it hears IPv4 too), as the kernel's
 * rdma_bind_addr. */
static bool default_afonly(int family)
{
	FILE *f;
	int v6only = 0;

	if (family != AF_INET6)
		return true;
	if ((f = fopen("/proc/sys/net/ipv6/bindv6only", "re"))) {
		if (fscanf(f, "%d", &v6only) != 1)
			v6only = 0;
		fclose(f);
	}
	return v6only != 0;
}

static struct odpemu_cm_port_opts port_opts(const struct cma_id *id)
{
	return (struct odpemu_cm_port_opts){ .family = id->id.route.addr.src_addr.sa_family,
					     .reuseaddr = id->reuseaddr, .afonly = id->afonly };
}

/* The address a reservation or listener of id takes on a device: its own GID when bound
 * to a device, the loopback address when bound to one no daemon runs on, else any. */
static void taken_addr(const struct cma_id *id, struct odpemu_cm_addr *a)
{
	union ibv_gid loopback;

	memset(a, 0, sizeof(*a));
	if (id->dev >= 0) {
		memcpy(a->gid.raw, id->id.route.addr.addr.ibaddr.sgid.raw, 16);
	} else if (cma_is_loopback(&id->id.route.addr.src_addr)) {
		cma_gid_of_addr(&id->id.route.addr.src_addr, &loopback);
		memcpy(a->gid.raw, loopback.raw, 16);
	}
}

static void release_ports(struct cma_id *id)
{
	for (int i = 0; i < CMA_MAX_DEVS; i++)
		if (id->listen[i] && cma_dev(i))
			odpemu_cm_destroy(odpemu_compat_context(cma_dev(i)->verbs), id->listen[i]);
	memset(id->listen, 0, sizeof(id->listen));
}

/* One reservation on each device the ID takes (its own, or all of them), of one port: the
 * one asked for, or one the first device picks. A pick a later device has taken is tried
 * again from the next port, a few times. */
static int reserve_ports(struct cma_id *id, int ndevs)
{
	struct sockaddr *src = &id->id.route.addr.src_addr;
	struct odpemu_cm_port_opts o = port_opts(id);
	uint16_t want = cma_port_of(src);
	struct odpemu_cm_addr a;
	int rc = 0;

	taken_addr(id, &a);
	for (int tries = 0; tries < 16; tries++) {
		a.port = want;
		rc = 0;
		for (int i = 0; i < ndevs && !rc; i++) {
			struct odpemu_cm_channel *och;

			if (id->dev >= 0 && i != id->dev)
				continue;
			if (!(och = cma_channel_for(id->chan, i)))
				rc = errno;
			else
				rc = odpemu_cm_bind(och, (enum odpemu_cm_ps)id->id.ps, &a, &o,
						    &id->listen[i], &a.port);
		}
		if (!rc) {
			cma_set_port(src, a.port);
			return 0;
		}
		release_ports(id);
		if (want || (rc != EADDRINUSE && rc != EADDRNOTAVAIL) || a.port == 65535)
			break;
		want = (uint16_t)(a.port + 1);	/* an explicit port from now on */
	}
	return errno = rc, -1;
}

/* A wildcard address, or a loopback address no daemon runs on, binds no device (id->verbs
 * stays NULL): the device is chosen by rdma_resolve_addr, or each device listens. A
 * loopback-bound listener hears only connections to the loopback address, as the kernel
 * matches the IP header's destination (cma_match_private_data). libfabric's verbs
 * provider relies on this: its passive fi_getinfo binds "localhost" and, finding no
 * device on the ID, offers the devices' own addresses (vrb_fill_addr).
 * The port is reserved on the devices the address takes, as the kernel reserves it in
 * the namespace (cma_get_port): REUSEADDR and AFONLY decide who may share it. */
CMA_EXPORT int rdma_bind_addr(struct rdma_cm_id *cid, struct sockaddr *addr)
{
	struct cma_id *id = cma_id(cid);
	socklen_t len;
	int dev, n;

	if (!cid || !addr || !(len = cma_addr_len(addr)) || id->state != CMA_IDLE)
		return errno = EINVAL, -1;
	memcpy(&cid->route.addr.src_storage, addr, len);
	if (cma_is_any(addr)) {
		dev = -1;	/* no device yet: see above */
	} else if ((dev = cma_dev_of_addr(addr)) < 0 &&
		   (!cma_is_loopback(addr) || cma_devices() <= 0)) {
		return errno = EADDRNOTAVAIL, -1;	/* no odpemu device has this address */
	}	/* else a loopback address (a daemon on 127.0.0.2 owns that one) */
	if ((n = cma_devices()) < 0)
		return -1;
	if (!id->afonly_set)
		id->afonly = default_afonly(addr->sa_family);
	if (dev >= 0)
		cma_id_set_dev(id, dev);
	if (reserve_ports(id, n)) {
		int err = errno;

		id->dev = -1;	/* as rdma_create_id left it */
		cid->verbs = NULL;
		cid->pd = NULL;
		cid->port_num = 0;
		memset(&cid->route.addr, 0, sizeof(cid->route.addr));
		return errno = err, -1;
	}
	id->state = CMA_BOUND;
	return 0;
}

static int listen_on(struct cma_id *id, int dev, uint16_t *port, unsigned backlog)
{
	struct odpemu_cm_channel *och = cma_channel_for(id->chan, dev);
	struct odpemu_cm_port_opts o = port_opts(id);
	struct odpemu_cm_addr a;
	uint32_t handle;
	int rc;

	if (!och)
		return -1;
	taken_addr(id, &a);
	a.port = *port;
	rc = odpemu_cm_listen_ex(och, (enum odpemu_cm_ps)id->id.ps, &a, &o, id->listen[dev],
				 backlog, (uint64_t)(uintptr_t)id, &handle, port);
	if (rc)
		return errno = rc, -1;
	cma_set_handle(&id->listen[dev], handle);	/* requests may be arriving already */
	return 0;
}

/* The reservations of rdma_bind_addr start listening (a device that came since listens
 * afresh on the same port). A listener must be alone on its port: one that shares it
 * through REUSEADDR fails with EADDRINUSE, as the kernel's rdma_listen; a failure leaves
 * the ID bound with no reservation left. */
CMA_EXPORT int rdma_listen(struct rdma_cm_id *cid, int backlog)
{
	struct cma_id *id = cma_id(cid);
	struct sockaddr *src = &cid->route.addr.src_addr;
	uint16_t port;
	int n = cma_devices();

	if (!cid || id->state != CMA_BOUND || n < 0)
		return errno = EINVAL, -1;
	port = cma_port_of(src);
	/* This host's devices first: a peer that connects as soon as it learns we are about to
	 * listen (perftest -R's second connection) then finds the listener sooner. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			if ((id->dev >= 0 && i != id->dev) || cma_dev(i)->local != !pass)
				continue;
			if (listen_on(id, i, &port, backlog > 0 ? (unsigned)backlog : 0)) {
				int err = errno;

				release_ports(id);
				return errno = err, -1;
			}
		}
	cma_set_port(src, port);	/* the port the daemon picked, for rdma_get_src_port */
	id->state = CMA_LISTEN;
	return 0;
}

/* Options as the kernel's ucma_set_option_id takes them: a wrong optlen is EINVAL, an
 * unknown option ENOSYS; REUSEADDR may be set while idle or turned on until listening
 * (rdma_set_reuseaddr), AFONLY until listening (rdma_set_afonly). Both shape rdma_bind_addr's
 * reservation, so set them before binding. */
static int set_id_option(struct cma_id *id, int optname, void *optval, size_t optlen)
{
	size_t want = optname == RDMA_OPTION_ID_REUSEADDR || optname == RDMA_OPTION_ID_AFONLY ?
		      sizeof(int) : sizeof(uint8_t);
	int v = optlen == sizeof(int) ? *(int *)optval : 0;

	if (optname != RDMA_OPTION_ID_TOS && optname != RDMA_OPTION_ID_REUSEADDR &&
	    optname != RDMA_OPTION_ID_AFONLY && optname != RDMA_OPTION_ID_ACK_TIMEOUT)
		return errno = ENOSYS, -1;
	if (optlen != want)
		return errno = EINVAL, -1;
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		id->tos = *(uint8_t *)optval;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		id->ack_timeout = *(uint8_t *)optval;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		if (!(v && id->state != CMA_LISTEN) && id->state != CMA_IDLE)
			return errno = EINVAL, -1;
		id->reuseaddr = v != 0;
		return 0;
	default:	/* AFONLY */
		if (id->state != CMA_IDLE && id->state != CMA_BOUND)
			return errno = EINVAL, -1;
		id->afonly = v != 0;
		id->afonly_set = true;
		return 0;
	}
}

CMA_EXPORT int rdma_set_option(struct rdma_cm_id *cid, int level, int optname, void *optval,
			       size_t optlen)
{
	if (!cid || !optval)
		return errno = EINVAL, -1;
	if (level == RDMA_OPTION_ID)
		return set_id_option(cma_id(cid), optname, optval, optlen);
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
		return 0;	/* RoCE: the route is ours to build; a path record changes nothing */
	return errno = ENOSYS, -1;
}

CMA_EXPORT int rdma_migrate_id(struct rdma_cm_id *cid, struct rdma_event_channel *channel)
{
	struct cma_id *id = cma_id(cid);
	struct cma_channel *to = channel ? cma_chan(channel) :
				 cma_chan(rdma_create_event_channel());

	if (!cid || !to)
		return -1;
	pthread_mutex_lock(&cma_lock);
	while (id->unacked)
		pthread_cond_wait(&id->acked, &cma_lock);
	if (id->sync && id->chan != to)
		rdma_destroy_event_channel(&id->chan->ch);
	id->chan = to;		/* the daemon's events for it are passed on (conn.c) */
	id->sync = !channel;
	cid->channel = &to->ch;
	pthread_mutex_unlock(&cma_lock);
	return 0;
}

CMA_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *cid)
{
	return cid ? htons(cma_port_of(&cid->route.addr.src_addr)) : 0;
}

CMA_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *cid)
{
	return cid ? htons(cma_port_of(&cid->route.addr.dst_addr)) : 0;
}

int cma_sync_wait(struct cma_id *id, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(&id->chan->ch, &ev))
		return -1;
	if (ev->event != want) {
		int status = ev->status;

		rdma_ack_cm_event(ev);
		errno = status < 0 ? -status : ECONNREFUSED;
		return -1;
	}
	id->id.event = ev;	/* librdmacm's sync IDs keep it for the caller to look at */
	rdma_ack_cm_event(ev);
	id->id.event = NULL;
	return 0;
}

CMA_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev;

	if (!listen || !id)
		return errno = EINVAL, -1;
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(ev);
		return errno = EINVAL, -1;
	}
	*id = ev->id;
	rdma_ack_cm_event(ev);
	return 0;
}

CMA_EXPORT int rdma_notify(struct rdma_cm_id *cid, enum ibv_event_type event)
{
	(void)cid;
	(void)event;
	return 0;	/* the daemon's CM learns of the first packet by the RTU alone */
}

/* Called with c->lock held (from rdma_get_cm_event): the events go straight on c's queue. */
void cma_device_removed(struct cma_channel *c, int dev)
{
	pthread_mutex_lock(&cma_lock);
	for (struct cma_id *id = ids; id; id = id->next) {
		struct cma_event *e;

		if (id->dev != dev || id->chan != c || !(e = cma_event_new()))
			continue;
		e->ev.id = &id->id;
		e->ev.event = RDMA_CM_EVENT_DEVICE_REMOVAL;
		e->ev.status = -ENODEV;
		id->unacked++;
		cma_queue_locked(c, e);
	}
	pthread_mutex_unlock(&cma_lock);
}
