/* SPDX-License-Identifier: MIT */
/*
 * fi_anchor — libfabric's own tcp provider as an emu-bench anchor: its fi_pingpong program
 * (Debian package libfabric-bin) run as server and client, the client's usec/xfer read
 * back. Both run as child processes, each in a named network namespace (ip netns exec) or,
 * for a NULL name, in the caller's. 0 or -errno; every wait is bounded.
 */
#ifndef ODPEMU_BENCH_FI_ANCHOR_H
#define ODPEMU_BENCH_FI_ANCHOR_H

#include <stdbool.h>

/* fi_pingpong is on PATH and executable. */
bool fi_pingpong_available(void);

/* One fi_pingpong run over the tcp provider, MSG endpoints, msg-byte transfers, iters
 * iterations: the server in server_ns, the client in client_ns connecting to server_addr.
 * fi_pingpong 1.17's server cannot be bound to an address: it listens on every address of
 * its namespace (control port 47592). *usec_per_xfer: the client's figure (one-way time
 * per transfer, i.e. half a round trip). -EPROTO if its output has no result table;
 * -ETIMEDOUT if no run finished within about 30 s. Both processes are reaped on return. */
int fi_pingpong_run(const char *server_ns, const char *client_ns, const char *server_addr,
		    unsigned msg, unsigned iters, double *usec_per_xfer);

#endif
