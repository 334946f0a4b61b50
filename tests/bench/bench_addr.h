/* SPDX-License-Identifier: MIT */
/* bench_addr — an IPv4 or IPv6 address and port as a socket address, for the benchmark's
 * anchors (udp_raw.c, tcp_raw.c, relay_anchor.c). */
#ifndef ODPEMU_BENCH_ADDR_H
#define ODPEMU_BENCH_ADDR_H

#include <sys/socket.h>

struct bench_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

/* ip ("10.0.0.1", "fd00::1") and port into *a: 0, or -EINVAL for no address, one that is
 * neither family, or a port over 65535. */
int bench_addr_parse(const char *ip, unsigned port, struct bench_addr *a);

#endif
