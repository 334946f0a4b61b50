/* SPDX-License-Identifier: MIT */
/* udp — the socket's state, shared by udp.c (socket, receive) and udp_tx.c (send). */
#ifndef ODPEMU_EMU_UDP_INT_H
#define ODPEMU_EMU_UDP_INT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

#include "icrc.h"
#include "udp.h"

#define RX_BATCH 32u		/* fallback: datagrams per recvmmsg */
/* A UDP_SEGMENT send: at most this many datagrams (the kernel's UDP_MAX_SEGMENTS before
 * 6.9, and the Identifications a receiver accepts, icrc.h) and bytes (an IP datagram). */
#define GSO_MAX_SEGS ROCE_ICRC_MAX_ID
#define GSO_MAX_BYTES 65000u

union sa {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/* Room for one UDP_SEGMENT control message (send), one UDP_GRO message (receive). */
union gso_cmsg {
	char buf[CMSG_SPACE(sizeof(uint16_t))];
	struct cmsghdr align;
};
union gro_cmsg {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

struct emu_udp {
	struct emu_loop *loop;
	struct emu_udp_config cfg;
	int fd;
	int family;
	char name[INET6_ADDRSTRLEN + 16];
	bool multishot;
	bool gro;			/* UDP_GRO on: a receive may hold a run of datagrams */
	struct emu_udp_stats st;

	/* multishot recvmsg: the request, its msghdr (the kernel reads name and control
	 * lengths from it) and the buffer ring, registered under group bgid */
	struct emu_io rx_io;
	struct msghdr rx_msg;
	struct io_uring_buf_ring *br;
	uint8_t *bufs;
	unsigned rx_stride;		/* bytes per provided buffer */
	int bgid;			/* -1: not registered */
	unsigned rx_err_streak;

	/* fallback: a multishot poll; a oneshot "kick" poll when a wakeup's budget ran out
	 * with datagrams left, since the multishot poll reports only new arrivals */
	struct emu_io poll_io, kick_io;
	bool kick_armed;
	struct mmsghdr rx_mm[RX_BATCH];
	struct iovec rx_iov[RX_BATCH];
	union sa rx_names[RX_BATCH];
	union gro_cmsg rx_ctl[RX_BATCH];
	uint8_t *rx_flat;

	/* send batch: datagram i is tx_iov[i] to tx_names[i] (name length tx_namelen[i]) */
	unsigned tx_n;
	/* The transmit slot, tx_iov[tx_n].iov_base: FREE, or LENT to a builder by
	 * emu_udp_tx_slot until emu_udp_send_slot queues it in place. emu_udp_send and
	 * emu_udp_flush take a lent slot back (a copy lands in it; a flush moves it). */
	enum { TX_SLOT_FREE, TX_SLOT_LENT } tx_slot;
	struct iovec tx_iov[EMU_UDP_TX_BATCH];
	union sa tx_names[EMU_UDP_TX_BATCH];
	socklen_t tx_namelen[EMU_UDP_TX_BATCH];
	uint8_t *tx_flat;
	/* per flush: the sends (groups of datagrams), each datagram's first index and count */
	bool gso;			/* UDP_SEGMENT in use */
	unsigned tx_ng;
	struct mmsghdr tx_gm[EMU_UDP_TX_BATCH];
	unsigned tx_gfirst[EMU_UDP_TX_BATCH], tx_gcount[EMU_UDP_TX_BATCH];
	union gso_cmsg tx_ctl[EMU_UDP_TX_BATCH];
	struct roce_icrc_ids icrc_ids;	/* re-sealing IPv4 segments for their Identification */
};

#define udp_of(ptr, member) ((struct emu_udp *)((char *)(ptr) - offsetof(struct emu_udp, member)))

/* dst:port as a sockaddr of the socket's family; false if dst is of the other family. */
bool emu_udp_sockaddr(const struct emu_udp *u, const struct nic_gid *g, uint16_t port,
		      union sa *out, socklen_t *len);
/* udp_tx.c: the send batch's memory, and whether the socket takes UDP_SEGMENT. */
int emu_udp_tx_init(struct emu_udp *u);
void emu_udp_tx_probe(struct emu_udp *u);	/* after the socket is open */
void emu_udp_tx_fini(struct emu_udp *u);

#endif
