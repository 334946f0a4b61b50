/* SPDX-License-Identifier: MIT */
/*
 * odpemu-perf — perftest-shaped benchmarks (ib_write_bw, ib_read_lat, ...) over odpemu,
 * with an ODP section taken from the daemons' counters.
 *
 * Shape of a run: the server waits on a TCP port; the client connects and sends the run's
 * configuration (struct perf_cfg), so the server needs no flags but -d and -p. For every
 * message size both sides build fresh QPs and buffers, trade QPNs, PSNs, GIDs, addresses
 * and rkeys over TCP (wire.c), connect, snapshot their device counters, run, and trade
 * results and counter deltas; both print the same table.
 *
 * Files: opts.c (flags), caps.c (what the device allows), net.c (TCP lines), wire.c (the
 * messages), dev.c (PD/CQ/QP), mem.c (buffers: cold, churn, --regcache, prefetch),
 * pattern.c (--verify data), bw.c and lat.c (the timed loops), pass.c (server side of
 * recycling/verify), odp.c (counter deltas), stats.c (figures), report.c (table, JSON),
 * plot.c (gnuplot), progress.c (live line), client.c and server.c (the two roles), main.c.
 */
#ifndef ODPEMU_TOOLS_PERF_H
#define ODPEMU_TOOLS_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctrs.h"
#include "odpemu/odpemu.h"

#define PERF_PROG "odpemu-perf"
#define PERF_DEFAULT_PORT 18515		/* perftest's */
#define PERF_MAX_QPS 64
#define PERF_MAX_MSG (1ull << 31)	/* RETH DMA length */
#define PERF_ALL_MAX (8u << 20)		/* -a: 2 B .. 8 MiB, as perftest */
/* --cold walks a region this large, a fault-around window per message. */
#define PERF_COLD_REGION (256u << 20)
#define PERF_COLD_ALIGN (64u << 10)	/* odpemud's default --fault-around */

enum perf_test { PERF_WRITE, PERF_READ, PERF_SEND, PERF_ATOMIC, PERF_FLUSH };
enum perf_odp { PERF_ODP_OFF, PERF_ODP_EXPLICIT, PERF_ODP_IMPLICIT };
/* --regcache: how the churned local buffers are registered (mem.h). OFF: plain --churn
 * (deregister, free, allocate anywhere, register). The others free and map each buffer
 * again at the same address before every message: NONE, NOTIFY, LEASE look it up in the
 * reference cache (odpemu/regcache.h) of that back-end over pinned MRs; ODP registers one
 * ON_DEMAND MR per buffer, once. */
enum perf_regcache { PERF_RC_OFF, PERF_RC_NONE, PERF_RC_NOTIFY, PERF_RC_LEASE, PERF_RC_ODP };

const char *perf_test_name(enum perf_test t);
const char *perf_odp_name(enum perf_odp o);
const char *perf_regcache_name(enum perf_regcache m);

/* The run's shape: chosen by the client and sent to the server. */
struct perf_cfg {
	enum perf_test test;
	bool lat;		/* --lat; else --bw */
	bool all;		/* -a */
	uint64_t size;
	uint64_t iters;		/* -n; 0 when -D */
	double duration;	/* -D seconds; 0 when -n */
	unsigned qps, tx_depth, inline_size;
	unsigned mtu;		/* bytes; 0: the smaller active MTU of the two ports */
	enum perf_odp odp;
	bool prefetch, cold, churn, verify;
	enum perf_regcache regcache;	/* implies churn */
	enum odpemu_fault_policy policy;
	unsigned rnr_retry, min_rnr_timer;
	char evict_rate[32];	/* --evict-rate; "" leaves the daemons' knob alone */
};

/* Everything from the command line. */
struct perf_opts {
	struct perf_cfg cfg;
	const char *dev;	/* NULL: the device of this host */
	const char *connect_to;	/* client: the server's address; NULL: we are the server */
	const char *histogram;	/* --histogram FILE.svg|png */
	unsigned port;
	double timeout;		/* seconds: TCP connect and set-up messages */
	bool json;
	bool iters_given;
};

/* Parse argv; exits with status 2 and one line on a usage error, 0 after --help. */
void perf_opts_parse(int argc, char **argv, struct perf_opts *o);
/* Sizes to run: -s, or 2..8 MiB with -a (8 only for atomic); returns the count. */
int perf_sizes(const struct perf_cfg *c, uint64_t *sizes, int max);
/* Iterations for one size (-n, or with -a and no -n fewer for big messages). */
uint64_t perf_iters_for(const struct perf_opts *o, uint64_t size);
/* The receive queue depth of send tests. */
unsigned perf_rx_depth(const struct perf_cfg *c);

/* Can this device run cfg (ODP caps, limits, port)? 0, or -1 with msg set to one line
 * naming the fix. */
int perf_check_caps(const struct perf_cfg *c, const char *devname,
		    const struct odpemu_device_attr *a, const struct odpemu_port_attr *p,
		    char *msg, size_t len);

/* The two roles (client.c, server.c): the exit status. */
int perf_client(const struct perf_opts *o);
int perf_server(const struct perf_opts *o);

/* One-line error on stderr, "odpemu-perf: ..."; perf_die exits 1. */
void perf_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void perf_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Monotonic time in seconds. */
double perf_now(void);
/* One turn of a wait loop: spin a little, then give the CPU away (two cores are shared
 * with the daemons, which must run for anything to complete). */
void perf_idle(unsigned *spins);

#endif
