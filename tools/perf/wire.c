/* SPDX-License-Identifier: MIT */
/* wire — see wire.h. */
#include "wire.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIRE_VERSION 2	/* 2: --regcache */

bool kv_str(const char *line, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);

	/* a key starts the line or follows a space */
	for (const char *p = line; p; p = strchr(p + 1, ' ')) {
		const char *k = p == line ? p : p + 1;
		size_t n;

		if (strncmp(k, key, klen) || k[klen] != '=')
			continue;
		k += klen + 1;
		n = strcspn(k, " ");
		snprintf(out, len, "%.*s", (int)n, k);
		return true;
	}
	return false;
}

uint64_t kv_u64(const char *line, const char *key, uint64_t dflt)
{
	char v[32];

	return kv_str(line, key, v, sizeof(v)) ? strtoull(v, NULL, 0) : dflt;
}

double kv_dbl(const char *line, const char *key, double dflt)
{
	char v[64];

	return kv_str(line, key, v, sizeof(v)) ? strtod(v, NULL) : dflt;
}

bool wire_is(const char *line, const char *verb)
{
	size_t n = strlen(verb);

	return !strncmp(line, verb, n) && (line[n] == ' ' || line[n] == '\0');
}

void cfg_format(const struct perf_cfg *c, char *buf, size_t len)
{
	snprintf(buf, len, "HELLO v=%d test=%d lat=%d all=%d size=%" PRIu64 " iters=%" PRIu64
		 " dur=%.17g qps=%u tx=%u inline=%u mtu=%u odp=%d prefetch=%d cold=%d churn=%d "
		 "verify=%d policy=%d rnr_retry=%u rnr_timer=%u evict=%s regcache=%d",
		 WIRE_VERSION, c->test, c->lat, c->all, c->size, c->iters, c->duration, c->qps,
		 c->tx_depth, c->inline_size, c->mtu, c->odp, c->prefetch, c->cold, c->churn,
		 c->verify, c->policy, c->rnr_retry, c->min_rnr_timer,
		 c->evict_rate[0] ? c->evict_rate : "-", c->regcache);
}

int cfg_parse(const char *line, struct perf_cfg *c, char *msg, size_t len)
{
	char evict[sizeof(c->evict_rate)];

	if (!wire_is(line, "HELLO") || kv_u64(line, "v", 0) != WIRE_VERSION) {
		snprintf(msg, len, "the peer speaks another odpemu-perf protocol (want version "
			 "%d): run the same odpemu-perf on both hosts", WIRE_VERSION);
		return -1;
	}
	*c = (struct perf_cfg){
		.test = (enum perf_test)kv_u64(line, "test", 0), .lat = kv_u64(line, "lat", 0),
		.all = kv_u64(line, "all", 0), .size = kv_u64(line, "size", 0),
		.iters = kv_u64(line, "iters", 0), .duration = kv_dbl(line, "dur", 0),
		.qps = (unsigned)kv_u64(line, "qps", 1), .tx_depth = (unsigned)kv_u64(line, "tx", 1),
		.inline_size = (unsigned)kv_u64(line, "inline", 0),
		.mtu = (unsigned)kv_u64(line, "mtu", 0), .odp = (enum perf_odp)kv_u64(line, "odp", 0),
		.prefetch = kv_u64(line, "prefetch", 0), .cold = kv_u64(line, "cold", 0),
		.churn = kv_u64(line, "churn", 0), .verify = kv_u64(line, "verify", 0),
		.policy = (enum odpemu_fault_policy)kv_u64(line, "policy", 0),
		.rnr_retry = (unsigned)kv_u64(line, "rnr_retry", 7),
		.min_rnr_timer = (unsigned)kv_u64(line, "rnr_timer", 12),
		.regcache = (enum perf_regcache)kv_u64(line, "regcache", 0),
	};
	if (kv_str(line, "evict", evict, sizeof(evict)) && strcmp(evict, "-"))
		snprintf(c->evict_rate, sizeof(c->evict_rate), "%s", evict);
	if (c->test > PERF_FLUSH || c->odp > PERF_ODP_IMPLICIT || !c->qps ||
	    c->qps > PERF_MAX_QPS || !c->tx_depth || c->policy > ODPEMU_FAULT_POLICY_RNR ||
	    c->regcache > PERF_RC_ODP) {
		snprintf(msg, len, "the client sent a configuration out of range");
		return -1;
	}
	return 0;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void unhex(const char *s, uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n && s[2 * i] && s[2 * i + 1]; i++) {
		char two[3] = { s[2 * i], s[2 * i + 1], 0 };

		b[i] = (uint8_t)strtoul(two, NULL, 16);
	}
}

/* "a,b,c" of n numbers. */
static void list_format(const uint32_t *v, unsigned n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%u", i ? "," : "", v[i]);
}

static unsigned list_parse(const char *s, uint32_t *v, unsigned max)
{
	unsigned n = 0;

	while (*s && n < max) {
		char *end;

		v[n++] = (uint32_t)strtoul(s, &end, 10);
		if (*end != ',')
			break;
		s = end + 1;
	}
	return n;
}

void ep_format(const struct perf_ep *e, char *buf, size_t len)
{
	char gid[33], qpn[PERF_MAX_QPS * 11 + 1], psn[PERF_MAX_QPS * 11 + 1];

	hex(e->gid.raw, 16, gid);
	list_format(e->qpn, e->nqp, qpn, sizeof(qpn));
	list_format(e->psn, e->nqp, psn, sizeof(psn));
	snprintf(buf, len, "addr=0x%" PRIx64 " rkey=0x%x slots=%u stride=%" PRIu64 " mtu=%u "
		 "gid=%s qpn=%s psn=%s iters=%" PRIu64 " dev=%s", e->addr, e->rkey, e->slots,
		 e->stride, e->mtu, gid, qpn, psn, e->iters, e->dev);
}

int ep_parse(const char *line, struct perf_ep *e)
{
	char gid[40] = "", qpn[PERF_MAX_QPS * 11 + 1] = "", psn[sizeof(qpn)] = "";

	*e = (struct perf_ep){ .addr = kv_u64(line, "addr", 0),
		.rkey = (uint32_t)kv_u64(line, "rkey", 0), .slots = (unsigned)kv_u64(line, "slots", 0),
		.stride = kv_u64(line, "stride", 0), .mtu = (unsigned)kv_u64(line, "mtu", 0),
		.iters = kv_u64(line, "iters", 0) };
	kv_str(line, "dev", e->dev, sizeof(e->dev));
	if (!kv_str(line, "gid", gid, sizeof(gid)) || strlen(gid) != 32 ||
	    !kv_str(line, "qpn", qpn, sizeof(qpn)) || !kv_str(line, "psn", psn, sizeof(psn)))
		return -1;
	unhex(gid, e->gid.raw, 16);
	e->nqp = list_parse(qpn, e->qpn, PERF_MAX_QPS);
	return list_parse(psn, e->psn, PERF_MAX_QPS) == e->nqp && e->nqp ? 0 : -1;
}

void result_format(const struct perf_result *r, char *buf, size_t len)
{
	const struct perf_rc_figs *f = &r->rc;

	snprintf(buf, len, "RESULT size=%" PRIu64 " iters=%" PRIu64 " secs=%.17g peak=%.17g "
		 "avg=%.17g rate=%.17g tmin=%.17g tmed=%.17g tavg=%.17g tp99=%.17g tp999=%.17g "
		 "tmax=%.17g rc_remaps=%" PRIu64 " rc_munmap=%.17g rc_mmap=%.17g rc_gets=%" PRIu64
		 " rc_get=%.17g rc_regs=%" PRIu64 " rc_hits=%" PRIu64 " rc_misses=%" PRIu64
		 " rc_restores=%" PRIu64 " rc_drops=%" PRIu64 " rc_events=%" PRIu64, r->size,
		 r->iters, r->secs, r->bw_peak, r->bw_avg, r->msg_rate, r->t_min, r->t_med,
		 r->t_avg, r->t_p99, r->t_p999, r->t_max, f->remaps, f->munmap_secs, f->mmap_secs,
		 f->gets, f->get_secs, f->registrations, f->hits, f->misses, f->restores,
		 f->stale_drops, f->decoherence);
}

void result_parse(const char *line, struct perf_result *r)
{
	*r = (struct perf_result){ .size = kv_u64(line, "size", 0),
		.iters = kv_u64(line, "iters", 0), .secs = kv_dbl(line, "secs", 0),
		.bw_peak = kv_dbl(line, "peak", 0), .bw_avg = kv_dbl(line, "avg", 0),
		.msg_rate = kv_dbl(line, "rate", 0), .t_min = kv_dbl(line, "tmin", 0),
		.t_med = kv_dbl(line, "tmed", 0), .t_avg = kv_dbl(line, "tavg", 0),
		.t_p99 = kv_dbl(line, "tp99", 0), .t_p999 = kv_dbl(line, "tp999", 0),
		.t_max = kv_dbl(line, "tmax", 0) };
	r->rc = (struct perf_rc_figs){ .remaps = kv_u64(line, "rc_remaps", 0),
		.munmap_secs = kv_dbl(line, "rc_munmap", 0),
		.mmap_secs = kv_dbl(line, "rc_mmap", 0), .gets = kv_u64(line, "rc_gets", 0),
		.get_secs = kv_dbl(line, "rc_get", 0), .registrations = kv_u64(line, "rc_regs", 0),
		.hits = kv_u64(line, "rc_hits", 0), .misses = kv_u64(line, "rc_misses", 0),
		.restores = kv_u64(line, "rc_restores", 0),
		.stale_drops = kv_u64(line, "rc_drops", 0),
		.decoherence = kv_u64(line, "rc_events", 0) };
}

void ctrs_format(const struct ctrs *s, char *buf, size_t len)
{
	size_t off = (size_t)snprintf(buf, len, "CTRS");

	for (int i = 0; i < s->n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, " %s=%" PRIu64, s->c[i].name,
					s->c[i].value);
}

void ctrs_parse(const char *line, struct ctrs *s)
{
	s->n = 0;
	for (const char *p = strchr(line, ' '); p; p = strchr(p + 1, ' ')) {
		const char *eq = strchr(p + 1, '=');
		size_t n = eq ? (size_t)(eq - p - 1) : 0;
		char name[sizeof(s->c[0].name)];

		if (!eq || !n || n >= sizeof(name) || memchr(p + 1, ' ', n))
			continue;
		memcpy(name, p + 1, n);
		name[n] = '\0';
		ctrs_set(s, name, strtoull(eq + 1, NULL, 10));
	}
}
