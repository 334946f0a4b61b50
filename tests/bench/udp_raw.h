/* SPDX-License-Identifier: MIT */
/*
 * udp_raw — the plain-UDP baseline of emu-bench: what the kernel's UDP path between two
 * addresses gives without odpemu, with the datagram sizes odpemu puts on the wire.
 * Every function runs in the calling process, in whatever network namespace it is in (the
 * caller enters host a's or host b's first). Sockets are bound to the given address, and
 * send with DF set (IP_PMTUDISC_DO) as odpemud's do. 0 or -errno; every wait is bounded.
 */
#ifndef ODPEMU_BENCH_UDP_RAW_H
#define ODPEMU_BENCH_UDP_RAW_H

#include <stdbool.h>
#include <stdint.h>

#define UDP_RAW_BATCH 32u	/* datagrams per sendmmsg / recvmmsg, as odpemud's batches */

struct udp_bulk_rx {
	uint64_t datagrams;	/* received, the first one included */
	uint64_t bytes;		/* their UDP payload bytes */
	uint64_t first_ns, last_ns;	/* CLOCK_MONOTONIC of the first and last datagram */
};

/* Bind addr:port and announce readiness by writing one byte to ready_fd; then receive
 * until idle_ms pass without a datagram (at most start_ms for the first). */
int udp_bulk_recv(const char *addr, unsigned port, unsigned dgram, int ready_fd,
		  unsigned start_ms, unsigned idle_ms, struct udp_bulk_rx *out);
/* Send dgram-byte datagrams from src to dst:port for seconds, UDP_RAW_BATCH per
 * sendmmsg (blocking). gso: hand the kernel as many datagrams as fit in 64 KiB at once, as
 * one UDP GSO super-datagram (UDP_SEGMENT), instead. *sent: datagrams handed over. */
int udp_bulk_send(const char *src, const char *dst, unsigned port, unsigned dgram,
		  double seconds, bool gso, uint64_t *sent);

/* Echo every datagram on addr:port back to its sender until none comes for idle_ms; ready
 * byte to ready_fd once bound. busy: spin on non-blocking receives instead of sleeping. */
int udp_echo(const char *addr, unsigned port, bool busy, int ready_fd, unsigned idle_ms);
/* n ping-pongs of dgram bytes from src to dst:port (after warmup unrecorded ones); half
 * of each round trip, in ns, into half_rtt_ns[0..n). A datagram lost is resent after
 * 200 ms (that round is not recorded; *lost counts them). */
int udp_ping(const char *src, const char *dst, unsigned port, unsigned dgram, bool busy,
	     unsigned warmup, unsigned n, uint64_t *half_rtt_ns, unsigned *lost);

#endif
