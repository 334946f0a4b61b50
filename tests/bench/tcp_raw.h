/* SPDX-License-Identifier: MIT */
/*
 * tcp_raw — the kernel-TCP anchor of emu-bench: what the kernel's TCP path between two
 * addresses gives without odpemu, bulk (as iperf3 -l 64K) and ping-pong.
 * Every function runs in the calling process, in whatever network namespace it is in (the
 * caller enters host a's or host b's first). Buffer sizes are left to the kernel's
 * autotuning, as ordinary TCP applications do. 0 or -errno; every wait is bounded.
 */
#ifndef ODPEMU_BENCH_TCP_RAW_H
#define ODPEMU_BENCH_TCP_RAW_H

#include <stdint.h>

#define TCP_RAW_CHUNK (64u << 10)	/* bytes per read()/write() of the bulk stream */
#define TCP_RAW_MAX_MSG (1u << 20)	/* largest ping-pong message */

struct tcp_stream_rx {
	uint64_t bytes;			/* received */
	uint64_t first_ns, last_ns;	/* CLOCK_MONOTONIC of the first and last read */
};

/* Listen on addr:port (SO_REUSEADDR) and announce readiness by writing one byte to
 * ready_fd; accept one connection (at most start_ms) and read it until EOF or idle_ms
 * pass without data. -ETIMEDOUT if nothing came. */
int tcp_stream_recv(const char *addr, unsigned port, int ready_fd, unsigned start_ms,
		    unsigned idle_ms, struct tcp_stream_rx *out);
/* Connect from src (any port) to dst:port and write TCP_RAW_CHUNK-byte buffers for
 * seconds, then close. *sent: bytes handed to the kernel. */
int tcp_stream_send(const char *src, const char *dst, unsigned port, double seconds,
		    uint64_t *sent);

/* Listen on addr:port, ready byte to ready_fd, accept one connection (at most idle_ms)
 * and echo it msg bytes at a time (TCP_NODELAY) until EOF or idle_ms without data. */
int tcp_echo(const char *addr, unsigned port, unsigned msg, int ready_fd, unsigned idle_ms);
/* Connect from src to dst:port (TCP_NODELAY); warmup + n round trips of msg bytes, each
 * written whole and read back whole; half of each of the last n, in ns, into
 * half_rtt_ns[0..n). A reply not complete within 5 s: -ETIMEDOUT. */
int tcp_ping(const char *src, const char *dst, unsigned port, unsigned msg, unsigned warmup,
	     unsigned n, uint64_t *half_rtt_ns);

#endif
