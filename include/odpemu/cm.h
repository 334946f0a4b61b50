/* SPDX-License-Identifier: MIT */
/*
 * odpemu's connection manager calls: rdma_cm's wire protocol (IB CM MADs on QP1), run by
 * the daemon for the device (emu/cm/). The drop-in librdmacm is built on these; a test
 * or a tool can use them directly. Addresses are GIDs (IPv4-mapped for IPv4) and ports;
 * QPs are described as the CM messages describe them, and moving a QP through its states
 * stays the caller's job (as librdmacm does it with ibv_modify_qp).
 *
 * A CM channel is a socket the daemon writes one event record to per event: poll its fd
 * (non-blocking if the caller sets O_NONBLOCK), read events with odpemu_cm_get_event.
 * Listeners and connections are numbers (handles) of the context's session; they go with
 * odpemu_cm_destroy or when the process ends, as with the kernel's rdma_cm: a connection
 * that is up is then disconnected (the peer gets DISCONNECTED), one being set up rejected.
 *
 * Every call: 0 or an errno value (also in errno); odpemu_last_error() says more.
 */
#ifndef ODPEMU_CM_H
#define ODPEMU_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "odpemu/odpemu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Port spaces (rdma_cma.h enum rdma_port_space). */
enum odpemu_cm_ps { ODPEMU_CM_PS_IB = 0x013F, ODPEMU_CM_PS_TCP = 0x0106,
		    ODPEMU_CM_PS_UDP = 0x0111 };

/* Events, with rdma_cm's numbering (enum rdma_cm_event_type). */
enum odpemu_cm_event_type {
	ODPEMU_CM_EVENT_CONNECT_REQUEST = 4,
	ODPEMU_CM_EVENT_CONNECT_RESPONSE = 5,
	ODPEMU_CM_EVENT_CONNECT_ERROR = 6,
	ODPEMU_CM_EVENT_UNREACHABLE = 7,
	ODPEMU_CM_EVENT_REJECTED = 8,
	ODPEMU_CM_EVENT_ESTABLISHED = 9,
	ODPEMU_CM_EVENT_DISCONNECTED = 10,
	ODPEMU_CM_EVENT_DEVICE_REMOVAL = 11,	/* made by the library: the daemon is gone */
	ODPEMU_CM_EVENT_TIMEWAIT_EXIT = 15,
};
const char *odpemu_cm_event_str(enum odpemu_cm_event_type type);

#define ODPEMU_CM_PRIVATE_MAX 224

/*
 * The local ACK timeout of a connection (4.096 us * 2^17 = 537 ms), as the kernel's rdma_cm
 * gives a RoCE one: cma.c sets a RoCE route's packet lifetime to CMA_IBOE_PACKET_LIFETIME
 * (16) and cm.c makes the QPs' timeout the packet lifetime + 1. With retry_cnt 7 a peer
 * that stops answering fails the requester's WQE (RETRY_EXC_ERR) after about 4.3 s, as on
 * rxe or ConnectX. The daemon's CM puts it in its REQs' primary path; the drop-in
 * librdmacm moves connected QPs to RTS with it unless RDMA_OPTION_ID_ACK_TIMEOUT says
 * otherwise.
 */
#define ODPEMU_CM_ACK_TIMEOUT 17

struct odpemu_cm_addr {
	union odpemu_gid gid;		/* all zero in a listener: any address */
	uint16_t port;
};

/* A QP as the CM messages carry it. */
struct odpemu_cm_qp {
	uint32_t qpn, psn;		/* 24 bits each; psn: the starting PSN */
	uint32_t qkey;			/* UD */
	enum odpemu_qp_type qp_type;
	uint8_t responder_resources;	/* max_dest_rd_atomic the peer may use */
	uint8_t initiator_depth;	/* max_rd_atomic wanted */
	uint8_t retry_count, rnr_retry_count;	/* 3 bits each */
	uint8_t srq, flow_control;
	enum odpemu_mtu mtu;
};

struct odpemu_cm_event {
	enum odpemu_cm_event_type type;
	int status;			/* REJECTED: the IB reject reason; else 0 or -errno */
	uint32_t conn;			/* the connection (a new one for CONNECT_REQUEST) */
	uint32_t listener;		/* CONNECT_REQUEST: whose */
	uint64_t user;			/* the connection's (CONNECT_REQUEST: the listener's) */
	struct odpemu_cm_addr src, dst;	/* CONNECT_REQUEST: the peer's, ours */
	struct odpemu_cm_qp peer;	/* CONNECT_REQUEST, CONNECT_RESPONSE: the peer's QP */
	uint16_t private_len;
	uint8_t private_data[ODPEMU_CM_PRIVATE_MAX];
};

struct odpemu_cm_channel {
	struct odpemu_context *context;
	int fd;				/* readable when an event waits */
	uint32_t handle;
};
struct odpemu_cm_channel *odpemu_cm_create_channel(struct odpemu_context *context);
/* EBUSY while a listener or connection still uses it. */
int odpemu_cm_destroy_channel(struct odpemu_cm_channel *channel);
/* The next event. EAGAIN: none (non-blocking fd); ENODEV: the daemon is gone (ev then
 * holds a DEVICE_REMOVAL); EINTR. */
int odpemu_cm_get_event(struct odpemu_cm_channel *channel, struct odpemu_cm_event *ev);

/* REQs for (port space, addr.port) on addr (or any of the device's) become
 * CONNECT_REQUEST events with `user`. Port 0: the daemon picks a free one. *listener and
 * *port (may be NULL) say which. EADDRINUSE: that service is listened on already
 * (EADDRNOTAVAIL when for any address); odpemu_cm_listen_ex's rules, family unknown. */
int odpemu_cm_listen(struct odpemu_cm_channel *channel, enum odpemu_cm_ps ps,
		     const struct odpemu_cm_addr *addr, unsigned backlog, uint64_t user,
		     uint32_t *listener, uint16_t *port);
/* How a port reservation shares its port with others (rdma_set_option's
 * RDMA_OPTION_ID_REUSEADDR and _AFONLY, by the kernel's rules, cma_check_port): two
 * reservations of one port in one port space clash unless both allow reuse and neither
 * listens, or both are afonly and of different families; the clash is EADDRNOTAVAIL when
 * either takes any address, EADDRINUSE when both take the same one. A listener for any
 * address hears every family unless afonly. family: AF_INET, AF_INET6, or 0 when unknown
 * (heard as not afonly; odpemu_cm_listen's). */
struct odpemu_cm_port_opts {
	int family;
	bool reuseaddr, afonly;
};
/* rdma_bind_addr: reserve (ps, addr.port) on addr (all zero: any of the device's); port
 * 0: the daemon picks one. *bound is the reservation (odpemu_cm_destroy frees it), *port
 * its port. Nothing is heard on it before odpemu_cm_listen_ex names it. */
int odpemu_cm_bind(struct odpemu_cm_channel *channel, enum odpemu_cm_ps ps,
		   const struct odpemu_cm_addr *addr, const struct odpemu_cm_port_opts *opts,
		   uint32_t *bound, uint16_t *port);
/* odpemu_cm_listen with port options; with bound (an odpemu_cm_bind reservation, not 0)
 * that reservation listens (its address and port: ps and addr are not used; *listener
 * is bound) and must then be alone on its port, reuse or not (rdma_listen). */
int odpemu_cm_listen_ex(struct odpemu_cm_channel *channel, enum odpemu_cm_ps ps,
			const struct odpemu_cm_addr *addr, const struct odpemu_cm_port_opts *opts,
			uint32_t bound, unsigned backlog, uint64_t user, uint32_t *listener,
			uint16_t *port);
/* Send a REQ from src (this device's address, and a source port) to dst, for our qp, with
 * up to 56 bytes of private data. Events of *conn follow on the channel. */
int odpemu_cm_connect(struct odpemu_cm_channel *channel, enum odpemu_cm_ps ps,
		      const struct odpemu_cm_addr *src, const struct odpemu_cm_addr *dst,
		      const struct odpemu_cm_qp *qp, const void *priv, size_t priv_len,
		      uint64_t user, uint32_t *conn);
/* Answer a CONNECT_REQUEST with a REP (up to 196 bytes of private data); its events go to
 * channel from now on (NULL: where they went). ESTABLISHED follows the RTU. */
int odpemu_cm_accept(struct odpemu_context *context, uint32_t conn,
		     struct odpemu_cm_channel *channel, const struct odpemu_cm_qp *qp,
		     const void *priv, size_t priv_len, uint64_t user);
/* REJ (reason CONSUMER_DEFINED, up to 148 bytes of private data) to a CONNECT_REQUEST. */
int odpemu_cm_reject(struct odpemu_context *context, uint32_t conn, const void *priv,
		     size_t priv_len);
/* After CONNECT_RESPONSE: the RTU (up to 224 bytes). The connection is up. */
int odpemu_cm_establish(struct odpemu_context *context, uint32_t conn, const void *priv,
			size_t priv_len);
/* DREQ (or the DREP to the peer's DREQ); DISCONNECTED and TIMEWAIT_EXIT follow. */
int odpemu_cm_disconnect(struct odpemu_context *context, uint32_t conn, const void *priv,
			 size_t priv_len);
/* A listener or connection goes (see above). */
int odpemu_cm_destroy(struct odpemu_context *context, uint32_t handle);

#ifdef __cplusplus
}
#endif

#endif
