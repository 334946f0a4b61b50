/* SPDX-License-Identifier: MIT */
/*
 * relay_anchor — the "zero-work relay" anchor of emu-bench: the latency floor of odpemu's
 * daemon design on this machine, with no NIC work at all. It is shaped as the 8-byte RDMA
 * WRITE ping-pong: an application posts into a shared-memory slot, its host's relay (a
 * separate process spinning on the slot and its UDP socket, sched_yield when a round of
 * looks finds nothing) sends one RELAY_DGRAM-byte datagram to the other host's relay,
 * which writes the 8 bytes into its application's shared slot, where that application is
 * spinning (sched_yield between looks). The reply comes back the same way. Whatever
 * odpemu's figure adds to this one is the work odpemu does; this is what processes,
 * sched_yield and the kernel's UDP path cost by themselves.
 * 0 or -errno; every wait is bounded.
 */
#ifndef ODPEMU_BENCH_RELAY_ANCHOR_H
#define ODPEMU_BENCH_RELAY_ANCHOR_H

#include <stdint.h>

#define RELAY_DGRAM (12u + 16u + 8u + 4u)	/* UDP payload of odpemu's 8 B WRITE_ONLY */
#define RELAY_BUDGET_MS 30000u			/* the whole run, start to reaping */

/* Four processes forked here: app a and relay a in network namespace ns_a (as
 * /var/run/netns/NAME; NULL: the caller's), relay b and app b in ns_b. Relay a is bound to
 * addr_a:port, relay b to addr_b:port+1. After warm unrecorded round trips, half of each
 * of the next n, in ns (CLOCK_MONOTONIC in app a), into half_rtt_ns[0..n). Every process
 * is reaped on return, killed first if need be (and killed with the caller, by
 * PR_SET_PDEATHSIG). -EINVAL for a bad address, port, or n == 0; -ENOENT etc. for a
 * namespace that cannot be opened; a child's -errno (bind, setns) if one failed;
 * -ETIMEDOUT if the ping-pong did not finish within RELAY_BUDGET_MS (a datagram lost is
 * not resent: with one in flight and a spinning receiver none is lost on veth or lo). */
int relay_pingpong(const char *ns_a, const char *ns_b, const char *addr_a, const char *addr_b,
		   unsigned port, unsigned warm, unsigned n, uint64_t *half_rtt_ns);

#endif
