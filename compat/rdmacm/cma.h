/* SPDX-License-Identifier: MIT */
/*
 * compat/rdmacm — the drop-in librdmacm.so.1: rdma-core 44's public librdmacm ABI
 * (<rdma/rdma_cma.h>, <rdma/rdma_verbs.h>) over odpemu's drop-in libibverbs and the
 * daemons' connection managers (include/odpemu/cm.h, reached through libibverbs.so.1's
 * private ODPEMU_PRIVATE_1 node, so one copy of libodpemu serves both libraries).
 *
 * Every object a client holds is the ABI struct embedded first in ours:
 *  - struct cma_channel { struct rdma_event_channel ch; ... }: ch.fd is an epoll fd over a
 *    pipe of events the library makes itself (address and route resolution, DEVICE_REMOVAL)
 *    and one odpemu CM channel per device the channel's IDs use; pollable, and
 *    rdma_get_cm_event honours O_NONBLOCK on it (EAGAIN);
 *  - struct cma_id { struct rdma_cm_id id; ... }: one rdma_cm ID: its state, device, the
 *    daemon's listener(s) or connection, the peer's QP as the CM carried it;
 *  - struct cma_event { struct rdma_cm_event ev; ... }: an event and the private data it
 *    points at, freed by rdma_ack_cm_event.
 * Devices: one ibv_context per odpemu device per process, opened on first use and shared
 * by every ID (rdma_get_devices returns them), with one PD each (id->pd).
 *
 * The files: channel.c (channels, events), id.c (IDs, bind, listen, options), addr.c
 * (address and route resolution, devices), conn.c (QPs, connect, accept, reject,
 * disconnect, establish), mcast.c (multicast joins), addrinfo.c (rdma_getaddrinfo),
 * ep.c (rdma_create_ep),
 * rsocket.c (the rsocket calls: ENOSYS), names.c (rdma_event_str).
 */
#ifndef ODPEMU_COMPAT_RDMACM_H
#define ODPEMU_COMPAT_RDMACM_H

#include <pthread.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "odpemu/cm.h"

/* Definitions of exported symbols carry this (librdmacm.map assigns their versions). */
#define CMA_EXPORT __attribute__((visibility("default")))

/* From libibverbs.so.1's ODPEMU_PRIVATE_1 node (compat/verbs/context.c). */
struct odpemu_context *odpemu_compat_context(struct ibv_context *verbs);

#define CMA_MAX_DEVS 16

/* ---- devices (addr.c) ---- */
#define CMA_MAX_GIDS 16
struct cma_dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	union ibv_gid gid[CMA_MAX_GIDS];	/* the port's GID table (addresses of its netdev) */
	int ngids;
	enum ibv_mtu mtu;		/* the port's active MTU */
	bool local;			/* holds an address of this host (when opened): not
					 * another namespace's, seen through a shared rundir */
};
/* Open every odpemu device once (later calls return the count). -1/errno if none. */
int cma_devices(void);
struct cma_dev *cma_dev(int i);
/* The device whose GID table holds the address (IPv4-mapped for IPv4) nearest its start
 * (a daemon's own address comes before the rest of its interface's); -1 if none. A
 * loopback address is no device's (rdma_resolve_addr maps a loopback destination to a
 * local device; rdma_bind_addr fails with ENODEV, as the kernel's). */
int cma_dev_of_addr(const struct sockaddr *sa);
bool cma_is_loopback(const struct sockaddr *sa);
/* 0.0.0.0 or :: */
bool cma_is_any(const struct sockaddr *sa);
void cma_gid_of_addr(const struct sockaddr *sa, union ibv_gid *gid);
uint16_t cma_port_of(const struct sockaddr *sa);
void cma_set_port(struct sockaddr *sa, uint16_t port);
socklen_t cma_addr_len(const struct sockaddr *sa);

/* ---- channels and events (channel.c) ---- */
struct cma_event {
	struct rdma_cm_event ev;
	struct cma_event *next;
	uint8_t priv[ODPEMU_CM_PRIVATE_MAX];
};
struct cma_channel {
	struct rdma_event_channel ch;	/* ch.fd: the epoll fd clients poll */
	pthread_mutex_t lock;
	int pipe[2];			/* a byte per local event: keeps ch.fd readable */
	struct cma_event *head, *tail;	/* local events, oldest first */
	struct odpemu_cm_channel *dev_ch[CMA_MAX_DEVS];	/* per device, made on first use */
	unsigned waiters;		/* threads inside rdma_get_cm_event */
	bool closing;			/* destroyed: a waiter parks on `parked` for good */
	pthread_cond_t parked;		/* never signalled */
};
struct cma_channel *cma_chan(struct rdma_event_channel *ch);
/* The device's CM channel of c (created and added to the epoll set on first use). */
struct odpemu_cm_channel *cma_channel_for(struct cma_channel *c, int dev);
/* An event the library makes (resolution results, DEVICE_REMOVAL): delivered in order. */
void cma_queue(struct cma_channel *c, struct cma_event *e);
/* The same with c->lock already held (from inside rdma_get_cm_event). */
void cma_queue_locked(struct cma_channel *c, struct cma_event *e);
struct cma_event *cma_event_new(void);

/* ---- IDs (id.c) ---- */
enum cma_state { CMA_IDLE, CMA_BOUND, CMA_ADDR_RESOLVED, CMA_ROUTE_RESOLVED, CMA_LISTEN,
		 CMA_CONNECT, CMA_REQ_RCVD, CMA_ACCEPT, CMA_CONNECTED, CMA_DISCONNECTED };
struct cma_id {
	struct rdma_cm_id id;
	struct cma_id *next;		/* every live ID (cma_find_*) */
	struct cma_channel *chan;
	bool sync;			/* created without a channel: calls wait for their event */
	enum cma_state state;
	int dev;			/* -1: not bound to a device (wildcard) */
	uint32_t conn;			/* the daemon's connection (0: none) */
	uint32_t listen[CMA_MAX_DEVS];	/* the daemons' listeners, or the port reservations
					 * of rdma_bind_addr that become them (0: none) */
	struct odpemu_cm_qp peer;	/* the peer's QP as the CM carried it */
	uint32_t psn;			/* our starting PSN */
	uint8_t resp_res, init_depth, retry, rnr_retry;
	uint8_t tos, ack_timeout;
	bool reuseaddr, afonly;		/* RDMA_OPTION_ID_REUSEADDR, _AFONLY */
	bool afonly_set;		/* by rdma_set_option: else the bound family's default */
	unsigned unacked;		/* events handed out and not yet acked */
	pthread_cond_t acked;
	struct ibv_sa_path_rec path;	/* route.path_rec points here */
	bool own_send_cq, own_recv_cq;	/* made by rdma_create_qp: it destroys them */
	struct ibv_qp_init_attr *ep_attr;	/* a passive rdma_create_ep's: each request's
					 * new ID gets a QP like it (rdma_get_request) */
	struct ibv_pd *ep_pd;
	struct cma_mc *mc;		/* multicast memberships, newest first (mcast.c) */
};
struct cma_id *cma_id(struct rdma_cm_id *id);
/* The global lock of the ID list, the devices and the events' unacked counts. */
extern pthread_mutex_t cma_lock;
/* The ID of a daemon connection or listener, held (see id.c); NULL if none. */
struct cma_id *cma_find_conn(int dev, uint32_t conn, uint64_t user);
struct cma_id *cma_find_listener(int dev, uint32_t listener, uint64_t user);
/* Store a daemon handle the event thread may be looking for (under cma_lock). */
void cma_set_handle(uint32_t *where, uint32_t handle);
/* Give back a hold no event took over. */
void cma_id_release(struct cma_id *id);
/* A new ID like rdma_create_id's (on chan, or its own channel when sync). */
struct cma_id *cma_id_new(struct cma_channel *chan, bool sync, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qp_type);
/* Put id on device dev: verbs, PD, port, and the source GID of its bound address. */
void cma_id_set_dev(struct cma_id *id, int dev);
/* Sync IDs: wait for the next event on the ID's own channel, which must be want. */
int cma_sync_wait(struct cma_id *id, enum rdma_cm_event_type want);

/* ---- multicast (mcast.c) ---- */
struct cma_mc {
	struct cma_mc *next;
	struct sockaddr_storage addr;	/* the group as joined */
	union ibv_gid mgid;		/* its GID (IPv4-mapped) */
	void *context;			/* the join's: the event's ud.private_data */
	uint32_t flags;			/* enum rdma_cm_mc_join_flags */
};
/* rdma_destroy_id: leave every group still joined (the QP, if any, is detached). */
void cma_leave_all(struct cma_id *id);

/* ---- connections (conn.c) ---- */
/* rdma_create_qp's work with the PD and attributes given (CQs made when attr has none). */
int cma_create_qp(struct cma_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int cma_create_qp_ex(struct cma_id *id, struct ibv_qp_init_attr_ex *attr);
/* A daemon event for an ID: what the client sees (NULL: consumed, or queued for another
 * channel). Called with the channel's lock held. */
struct cma_event *cma_translate(struct cma_channel *c, int dev, const struct odpemu_cm_event *e);
/* Every ID on device dev gets a DEVICE_REMOVAL (its daemon is gone). */
void cma_device_removed(struct cma_channel *c, int dev);

#endif
