/* SPDX-License-Identifier: MIT */
/* net — the TCP side channel between client and server: one text line per message
 * (as perftest trades "0000:000000:..." lines), with bounded waits. */
#ifndef ODPEMU_TOOLS_PERF_NET_H
#define ODPEMU_TOOLS_PERF_NET_H

#include <stddef.h>

#define NET_LINE 16384

struct perf_conn {
	int fd;
	size_t have;
	char buf[4 * NET_LINE];
};

/* Listen on every address (IPv6 and IPv4), accept one client, close the listener.
 * 0, or -1 with an error printed. */
int net_serve_one(unsigned port, const char *test, struct perf_conn *c);
/* Connect within timeout seconds; 0, or -1 with an error naming the fix printed. */
int net_connect(const char *host, unsigned port, double timeout, const char *test,
		struct perf_conn *c);
void net_close(struct perf_conn *c);
/* Send one line (no newline in fmt); 0 or -1. */
int net_send(struct perf_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The next line (without its newline): 1, 0 when timeout seconds passed (< 0: wait
 * forever), -1 when the peer closed or failed. */
int net_recv(struct perf_conn *c, char *line, size_t len, double timeout);

#endif
