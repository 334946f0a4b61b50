/* SPDX-License-Identifier: MIT */
/*
 * ports — nic/'s four ports (nic.h) bound to the real world: the wire is the UDP socket,
 * host memory is the clients' (or the daemon's mapping of pinned pages), the fault handler
 * is the fault thread (fault.h), and events go to the sessions' pipes (session.h).
 *
 * THREADING. nic/ calls the ports on the loop thread only.
 */
#ifndef ODPEMU_EMU_PORTS_H
#define ODPEMU_EMU_PORTS_H

#include <stddef.h>
#include <stdint.h>

#include "inject/wire.h"

struct emu_daemon;
struct nic_ports;

/* Host addresses of pinned MRs are the daemon's own mapping of the client's pages,
 * tagged: PIN_TAG, touched with memcpy (memfds sealed against shrinking, which cannot
 * fault), or PIN_TAG | PIN_GUARD_TAG, touched through process_vm_readv/writev on the
 * daemon itself (files the client could truncate: a page gone is EFAULT, not SIGBUS). */
#define PIN_TAG		(1ull << 62)
#define PIN_GUARD_TAG	(1ull << 61)
#define PIN_ADDR(host)	((host) & ~(PIN_TAG | PIN_GUARD_TAG))

/* Fill p with the daemon's ports (ctx = d), for nic_create. */
void emu_ports_init(struct emu_daemon *d, struct nic_ports *p);
/* The wire, inbound: one datagram the socket received (arg = d), to nic/, or to the wire
 * injector when one of its RX knobs is on; group: NULL, or the multicast group it was sent
 * to (it came on the group's socket, io/mcast.h); nothing else happens here (what nic/ must have
 * before a packet is the loop's step, daemon.c). */
void emu_ports_wire_in(void *arg, const uint8_t *pkt, size_t len, const struct nic_gid *src,
		       uint16_t sport, const struct nic_gid *group);
/* The wire injector's way out (emu_wire_out_fn, arg = d), and emu_ports_wire_in's when the
 * injector is off: a packet to the socket (TX) or to nic/ (RX; the one call of
 * nic_rx_from, and of nic_rx_mcast for a group's). */
void emu_ports_wire_out(void *arg, enum emu_wire_dir dir, const struct nic_gid *peer,
			uint16_t sport, const struct nic_gid *group, const uint8_t *pkt, size_t len);

#endif
