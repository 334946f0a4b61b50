/* SPDX-License-Identifier: MIT */
/*
 * wire — the messages on the TCP side channel, as "VERB key=value ..." lines:
 *
 *   client                                   server
 *   HELLO <cfg>                       ->
 *                                     <-     OK dev=NAME | ERR <why>
 *   per size:
 *                                     <-     READY <endpoint>      (QPs in INIT)
 *   GO <endpoint> iters=N             ->                            (client's QPs RTS)
 *                                     <-     START                  (server's QPs RTS)
 *   PASS n=N (recycle/verify, bw)     ->     PASSED | FAIL <why>
 *   DONE n=N, RESULT <figures>, CTRS <deltas>
 *                                     <-     VERIFY ok n=N stale=S |
 *                                            VERIFY fail n=N stale=S <why>, CTRS <deltas>
 *   BYE                               ->
 */
#ifndef ODPEMU_TOOLS_PERF_WIRE_H
#define ODPEMU_TOOLS_PERF_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctrs.h"
#include "perf.h"
#include "stats.h"

/* What one side tells the other to reach it. */
struct perf_ep {
	uint64_t addr, stride;	/* the target area: where the peer's operations land */
	uint32_t rkey;
	unsigned slots;
	unsigned mtu;		/* the port's active MTU, bytes */
	union odpemu_gid gid;
	unsigned nqp;
	uint32_t qpn[PERF_MAX_QPS], psn[PERF_MAX_QPS];
	uint64_t iters;		/* GO only: messages of this size (0: -D) */
	char dev[64];
};

/* "key=value" of a line: true and the value in out, or false. */
bool kv_str(const char *line, const char *key, char *out, size_t len);
uint64_t kv_u64(const char *line, const char *key, uint64_t dflt);
double kv_dbl(const char *line, const char *key, double dflt);
/* Does the line start with this verb (followed by a space or its end)? */
bool wire_is(const char *line, const char *verb);

void cfg_format(const struct perf_cfg *c, char *buf, size_t len);
/* 0, or -1 with msg when the line is not a configuration this version runs. */
int cfg_parse(const char *line, struct perf_cfg *c, char *msg, size_t len);

void ep_format(const struct perf_ep *e, char *buf, size_t len);
int ep_parse(const char *line, struct perf_ep *e);

void result_format(const struct perf_result *r, char *buf, size_t len);
void result_parse(const char *line, struct perf_result *r);

void ctrs_format(const struct ctrs *s, char *buf, size_t len);
void ctrs_parse(const char *line, struct ctrs *s);

#endif
