/* SPDX-License-Identifier: MIT */
/*
 * udp — the device's RoCEv2 UDP socket, driven by the daemon's io_uring loop.
 *
 * One unconnected socket bound to the device's address and port (REFERENCE.md "ICRC"):
 * IPv4 with IP_PMTUDISC_DO, so every datagram leaves with DF=1 and IP ID 0, the values the
 * ICRC was computed over; datagrams must therefore fit the path MTU (EMSGSIZE otherwise,
 * counted). SO_REUSEADDR stays off: a second daemon on the same address and port fails.
 * Datagrams to a multicast group leave by the device's interface (IP_MULTICAST_IF by
 * address, IPV6_MULTICAST_IF by index), looped back to this host's members too
 * (IP_MULTICAST_LOOP), with TTL (hop limit) 64, the hop limit rdma_cm's join gives the
 * group's address handle; a group's datagrams come in on a socket of the group's own
 * (cfg.group, emu/io/mcast.c).
 *
 * RECEIVE. Multishot recvmsg into a ring of provided buffers (one SQE serves many
 * datagrams; buffers go back to the ring as soon as deliver returns), or, where the kernel
 * lacks it, a multishot poll on the socket drained with recvmmsg batches. With UDP_GRO (the
 * default where the kernel has it) one receive may hold a run of datagrams from one peer
 * (a GSO send arrives whole), cut back into its datagrams by the segment size the kernel
 * reports. Either way each datagram reaches cfg->deliver once, from inside
 * emu_loop_run_once. Datagrams larger than EMU_UDP_MAX_DATAGRAM are dropped and counted
 * (rx_truncated).
 *
 * SEND. emu_udp_send copies the datagram into a batch, or the caller builds it in the
 * batch's next slot (emu_udp_tx_slot lends it, emu_udp_send_slot queues it there: no copy);
 * emu_udp_flush (or a full batch) sends the batch with one sendmmsg, where runs of
 * datagrams to one peer of one length go as one UDP_SEGMENT (GSO) send each (udp_tx.c;
 * IPv4 segments re-sealed for the Identification the cut gives them). A send never
 * blocks: what the socket cannot take now is dropped and counted, as a NIC drops on a full
 * queue (the transport retransmits). Where the kernel or the device refuses GSO, it is
 * turned off (logged once) and the run goes one by one.
 *
 * THREADING. Everything runs on the loop's thread.
 */
#ifndef ODPEMU_EMU_UDP_H
#define ODPEMU_EMU_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "nic.h"

#define EMU_UDP_PORT 4791
/* The largest datagram received whole: a 4096-byte payload plus BTH, RETH/DETH/AtomicETH,
 * ImmDt, pad and ICRC is under 4200; the rest is headroom. */
#define EMU_UDP_MAX_DATAGRAM 4544u
/* Datagrams queued (emu_udp_send, emu_udp_send_slot) before the batch flushes by itself. */
#define EMU_UDP_TX_BATCH 64

typedef void (*emu_udp_deliver_fn)(void *arg, const uint8_t *pkt, size_t len,
				   const struct nic_gid *src, uint16_t sport);

struct emu_udp_config {
	struct nic_gid local;	/* bind address: IPv4-mapped → AF_INET socket, else AF_INET6 */
	uint16_t port;		/* 0: EMU_UDP_PORT */
	/* Optional (0: none): the interface that owns local; the scope of a link-local
	 * IPv6 address (required for one). */
	int ifindex;
	/* SO_BINDTODEVICE to ifindex: packets leave and are taken only by this port. Off by
	 * default because traffic between two addresses of one host arrives on lo, which a
	 * socket bound to another device does not see (two daemons on one machine). */
	bool bind_device;
	unsigned rcvbuf, sndbuf;	/* bytes; 0: 8 MiB asked (SO_*BUFFORCE as root, else
					 * SO_*BUF, which the kernel caps at rmem_max/wmem_max) */
	/* A multicast group's socket (emu/io/mcast.c): local is the group, bound with
	 * SO_REUSEADDR (every daemon of the host that joined it gets each datagram) and
	 * joined on the interface of iface (its address; ifindex too when set), receiving
	 * that group's datagrams only (IP_MULTICAST_ALL off). It sends nothing. */
	bool group;
	struct nic_gid iface;
	bool force_fallback;	/* tests: use the recvmmsg path even if multishot works */
	bool no_gso;		/* send datagram by datagram (--no-gso: captures show packets) */
	bool no_gro;		/* receive datagram by datagram (--no-gro) */
	/* Each received datagram (the UDP payload), its source address (IPv4-mapped for
	 * IPv4) and source port. pkt is valid only during the call. May call emu_udp_send. */
	emu_udp_deliver_fn deliver;
	void *deliver_arg;
};

struct emu_udp;

/*
 * emu_udp_open — create, configure and bind the socket and arm its receive on loop.
 * The receive path is chosen here: multishot recvmsg with a provided-buffer ring when the
 * kernel takes both (probed by registering the ring and arming the request), else the
 * recvmmsg fallback; emu_udp_rx_path says which. Give the loop >= 128 entries (a CQ of
 * >= 256): a burst can complete all 256 buffers at once, and a smaller CQ overflows, which
 * ends the multishot request (it is re-armed: correct, but slower).
 * Returns 0 and *out. Errors, each with one line in err: -EINVAL bad config (no deliver);
 * -EINVAL a link-local address without ifindex; -EADDRINUSE the address and port are
 * taken ("127.0.0.1:4791 is in use — is another odpemud running on this address? ...");
 * -EADDRNOTAVAIL the address is not local; -ENODEV bad ifindex with bind_device; -ENOMEM;
 * -errno of socket/bind.
 */
int emu_udp_open(struct emu_loop *loop, const struct emu_udp_config *cfg, struct emu_udp **out,
		 char *err, size_t errlen);

/*
 * emu_udp_close — flush nothing (queued datagrams are dropped), cancel the socket's
 * io_uring requests (emu_loop_cancel: none of their completions is dispatched afterwards),
 * then free the buffers and close the socket. Must not be called from inside this socket's
 * deliver callback. NULL is fine. If the loop cannot confirm the cancel (a kernel older than
 * 6.0), the buffers are leaked rather than freed under the kernel.
 */
void emu_udp_close(struct emu_udp *u);

/* "multishot recvmsg + provided buffer ring" or "recvmmsg batch (fallback)". */
const char *emu_udp_rx_path(const struct emu_udp *u);

/* Whether sends use UDP segmentation offload now (off: cfg.no_gso, or refused), and whether
 * receives take coalesced runs (UDP_GRO; off: cfg.no_gro, or a kernel without it). */
bool emu_udp_gso(const struct emu_udp *u);
bool emu_udp_gro(const struct emu_udp *u);

/* The bound address and port, "127.0.0.1:4791" or "[fd00::1]:4791", for logs. */
const char *emu_udp_name(const struct emu_udp *u);

/*
 * emu_udp_send — queue a copy of one datagram to dst:dport (0: EMU_UDP_PORT). It leaves at
 * the next emu_udp_flush, or now when the batch is full. dst must be of the socket's family
 * (IPv4-mapped for an IPv4 socket); otherwise it is dropped and counted in tx_errors. A
 * datagram longer than EMU_UDP_MAX_DATAGRAM is sent on its own, in order. pkt must not be
 * the lent slot (the copy lands there): a slot goes by emu_udp_send_slot.
 */
void emu_udp_send(struct emu_udp *u, const struct nic_gid *dst, uint16_t dport,
		  const uint8_t *pkt, size_t len);

/*
 * The transmit slot: zero-copy sending for a caller that builds its datagram in place.
 * emu_udp_tx_slot LENDS the batch's next slot (EMU_UDP_MAX_DATAGRAM bytes; asked again while
 * lent, the same one); emu_udp_send_slot SEALS it: its first len bytes are the datagram, to
 * dst:dport, queued as emu_udp_send would queue a copy, and the slot is the socket's again.
 * A lent slot the caller gives up on needs nothing: it is built over, or taken back by the
 * next emu_udp_send or emu_udp_flush, after which it must be lent again before a send_slot.
 * A send_slot of a slot not lent is a bug: dropped, counted in tx_errors, logged.
 */
uint8_t *emu_udp_tx_slot(struct emu_udp *u);
void emu_udp_send_slot(struct emu_udp *u, const struct nic_gid *dst, uint16_t dport,
		       size_t len);

/* Send the batch with one sendmmsg (more only after a failure), never blocking. Failures
 * are counted per datagram (tx_errors; EMSGSIZE also in tx_err_emsgsize, a full socket
 * buffer in tx_err_again) and the datagram is dropped. */
void emu_udp_flush(struct emu_udp *u);

/* The socket's counters, one list: the struct and the device counters "udp_<name>"
 * (emu/counters.c) are generated from it, so none goes unexported. */
#define EMU_UDP_STATS(X) \
	X(rx_pkts)		/* delivered */ \
	X(rx_bytes) \
	X(rx_truncated)		/* larger than EMU_UDP_MAX_DATAGRAM: dropped */ \
	X(rx_errors)		/* receive errors and unreadable source addresses */ \
	X(rx_rearms)		/* multishot re-armed (buffer ring ran dry, CQ overflow) */ \
	X(rx_gro_bufs)		/* receives holding 2 or more datagrams (UDP_GRO) */ \
	X(tx_pkts)		/* accepted by the kernel */ \
	X(tx_bytes) \
	X(tx_errors)		/* datagrams dropped on send, for any reason */ \
	X(tx_err_emsgsize)	/* ... because larger than the path MTU (DF) */ \
	X(tx_err_again)		/* ... because the socket's send buffer was full */ \
	X(tx_gso_sends)		/* UDP_SEGMENT sends of 2 or more datagrams */ \
	X(tx_gso_refused)	/* ... refused by the kernel or device: GSO turned off */
#define EMU_UDP_STAT_FIELD_(name) uint64_t name;
struct emu_udp_stats {
	EMU_UDP_STATS(EMU_UDP_STAT_FIELD_)
};

void emu_udp_stats(const struct emu_udp *u, struct emu_udp_stats *out);

#endif
