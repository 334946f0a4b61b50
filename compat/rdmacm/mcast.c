/* SPDX-License-Identifier: MIT */
/*
 * multicast — rdma_join_multicast(_ex) and rdma_leave_multicast on RoCE v2, as the kernel's
 * cma (cma_iboe_join_multicast) and librdmacm (ucma_process_join) give them: the join
 * needs an ID with a device in ADDR_BOUND or ADDR_RESOLVED and a UD QP type (EINVAL), an
 * IPv4 group (IPv6: the kernel's -ENOTSUPP on RoCE v2, errno 524), and is answered by a
 * MULTICAST_JOIN event whose ud.ah_attr addresses the group: DGID the group's address
 * IPv4-mapped (cma_iboe_set_mgid), hop limit 64 (IPV6_DEFAULT_HOPLIMIT), QPN 0xFFFFFF, Q_Key
 * RDMA_UDP_QKEY for RDMA_PS_UDP. The ID's QP is attached to the group unless the join is
 * send-only (librdmacm); an attach the device refuses (a GID not multicast: EINVAL) turns
 * the event into MULTICAST_ERROR with status -1 and errno set, as librdmacm does. Joining
 * one address twice is two memberships of one attachment, as on a kernel (uverbs makes
 * the second attach a no-op).
 * The daemon does the rest (nic/mcast.c, emu/io/mcast.c): there is no SA on RoCE, and the
 * daemon's group socket stands for the kernel's IGMP join. The attach happens at the join
 * call (librdmacm does it when the event is read): the event then only reports it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"

#define CMA_ENOTSUPP 524	/* the kernel's ENOTSUPP: no user-space name */

/* The kernel's rdma_join_multicast and cma_iboe_join_multicast checks: 0 or an errno. */
static int join_check(const struct cma_id *id, const struct sockaddr *addr)
{
	if (id->dev < 0 || (id->state != CMA_BOUND && id->state != CMA_ADDR_RESOLVED))
		return EINVAL;
	if (id->id.qp_type != IBV_QPT_UD || cma_is_any(addr))
		return EINVAL;
	return addr->sa_family == AF_INET ? 0 : CMA_ENOTSUPP;
}

static void join_event(struct cma_id *id, struct cma_mc *mc, int attach_err)
{
	struct cma_event *e = cma_event_new();
	struct rdma_ud_param *p;

	if (!e)
		return;
	e->ev.id = &id->id;
	e->ev.event = attach_err ? RDMA_CM_EVENT_MULTICAST_ERROR : RDMA_CM_EVENT_MULTICAST_JOIN;
	e->ev.status = attach_err ? -1 : 0;
	p = &e->ev.param.ud;
	p->private_data = mc->context;	/* librdmacm: the join's context */
	p->qp_num = 0xFFFFFF;		/* IBA 9.6.1.1 */
	p->qkey = id->id.ps == RDMA_PS_UDP ? RDMA_UDP_QKEY : 0;
	p->ah_attr = (struct ibv_ah_attr){ .is_global = 1, .port_num = id->id.port_num,
		.grh = { .dgid = mc->mgid, .sgid_index = 0, .hop_limit = 64 } };
	pthread_mutex_lock(&cma_lock);
	id->unacked++;
	pthread_mutex_unlock(&cma_lock);
	cma_queue(id->chan, e);
}

static int join(struct rdma_cm_id *cid, struct sockaddr *addr, uint32_t flags, void *context)
{
	struct cma_id *id = cma_id(cid);
	struct cma_mc *mc;
	int rc, attach_err = 0;

	if (!cid || !addr || !cma_addr_len(addr))
		return errno = EINVAL, -1;
	if ((rc = join_check(id, addr)))
		return errno = rc, -1;
	if (!(mc = calloc(1, sizeof(*mc))))
		return errno = ENOMEM, -1;
	memcpy(&mc->addr, addr, cma_addr_len(addr));
	cma_gid_of_addr(addr, &mc->mgid);
	mc->context = context;
	mc->flags = flags;
	if (cid->qp && flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		attach_err = ibv_attach_mcast(cid->qp, &mc->mgid, 0);
	pthread_mutex_lock(&cma_lock);
	mc->next = id->mc;
	id->mc = mc;
	pthread_mutex_unlock(&cma_lock);
	join_event(id, mc, attach_err);
	if (attach_err)
		errno = attach_err;
	return id->sync ? cma_sync_wait(id, RDMA_CM_EVENT_MULTICAST_JOIN) : 0;
}

CMA_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	return join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

/* librdmacm's checks of the attributes, then the join. */
CMA_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc,
				      void *context)
{
	if (!mc)
		return errno = EINVAL, -1;
	if (mc->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return errno = EOPNOTSUPP, -1;
	if (!(mc->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(mc->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return errno = EINVAL, -1;
	return join(id, mc->addr, mc->join_flags, context);
}

/* The first membership of addr, unlinked; NULL if none. */
static struct cma_mc *take(struct cma_id *id, const struct sockaddr *addr)
{
	socklen_t len = cma_addr_len(addr);
	struct cma_mc *mc = NULL;

	pthread_mutex_lock(&cma_lock);
	for (struct cma_mc **p = &id->mc; *p; p = &(*p)->next)
		if (!memcmp(&(*p)->addr, addr, len)) {
			mc = *p;
			*p = mc->next;
			break;
		}
	pthread_mutex_unlock(&cma_lock);
	return mc;
}

static void leave(struct cma_id *id, struct cma_mc *mc)
{
	/* librdmacm ignores the detach's result: a second membership of one address finds
	 * the QP detached already */
	if (id->id.qp && mc->flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		(void)ibv_detach_mcast(id->id.qp, &mc->mgid, 0);
	free(mc);
}

CMA_EXPORT int rdma_leave_multicast(struct rdma_cm_id *cid, struct sockaddr *addr)
{
	struct cma_mc *mc;

	if (!cid || !addr || !cma_addr_len(addr))
		return errno = EINVAL, -1;
	if (!(mc = take(cma_id(cid), addr)))
		return errno = EADDRNOTAVAIL, -1;
	leave(cma_id(cid), mc);
	return 0;
}

void cma_leave_all(struct cma_id *id)
{
	struct cma_mc *mc;

	pthread_mutex_lock(&cma_lock);
	mc = id->mc;
	id->mc = NULL;
	pthread_mutex_unlock(&cma_lock);
	while (mc) {
		struct cma_mc *next = mc->next;

		leave(id, mc);
		mc = next;
	}
}
