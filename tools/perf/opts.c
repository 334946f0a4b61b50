/* SPDX-License-Identifier: MIT */
/* opts — odpemu-perf's flags, as perftest spells them where perftest has them. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static void usage(FILE *f)
{
	fputs(
"usage: odpemu-perf write|read|send|atomic|flush [--bw|--lat] [options] [SERVER]\n"
"\n"
"Without SERVER: wait for a client on the TCP port, then run what it asks.\n"
"With SERVER: connect to it and run; both sides print the results. The server takes\n"
"every setting of the run from the client: it needs only -d, -p, --json, --histogram.\n"
"\n"
"  --bw | --lat          bandwidth (default) or latency (one message in flight; write and\n"
"                        send ping-pong and report half the round trip, like ib_write_lat)\n"
"  -d, --ib-dev DEV      device (default: the one whose address is on this host)\n"
"  -s, --size BYTES      message size (K, M, G suffixes; default 65536, --lat 2, atomic 8)\n"
"  -a, --all             sizes 2 B .. 8 MiB\n"
"  -n, --iters N         messages per size (default 5000, --lat 1000)\n"
"  -D, --duration SEC    run for this long instead\n"
"  -q, --qp N            QPs (default 1; --bw only)\n"
"  -t, --tx-depth N      messages in flight per QP (default 128; --lat 1)\n"
"  -I, --inline N        send messages up to N bytes inline (write, send)\n"
"  -m, --mtu BYTES       path MTU 256..4096 (default: the ports' active MTU)\n"
"  -p, --port N          TCP port (default 18515)\n"
"      --timeout SEC     connect and set-up timeout (default 5)\n"
"\n"
"ODP:\n"
"  --odp off|explicit|implicit   memory registration (default off: pinned)\n"
"  --prefetch            advise_mr(PREFETCH_WRITE, FLUSH) the buffers before the run\n"
"  --fault-policy stall|rnr      the responder's answer to a page fault, per QP\n"
"                        (default: the daemon's)\n"
"  --rnr-retry N         0..7 (7: forever; default 7)\n"
"  --min-rnr-timer CODE  0..31 (default 12: 0.64 ms)\n"
"  --cold                every message lands on untouched pages of the responder\n"
"                        (a 256 MiB region walked a fault-around window at a time)\n"
"  --churn               free and re-allocate (and re-register) each local buffer after\n"
"                        every message: the registration-cache scenario\n"
"  --regcache none|notify|lease|odp\n"
"                        --churn at the same address (write, send, read; --bw): before\n"
"                        each message munmap its buffer, mmap it again there (MAP_FIXED),\n"
"                        write the message, and take its registration from a cache:\n"
"                        none: pinned MRs, never told (the stale-registration bug);\n"
"                        notify: pinned MRs, dropped once the notifier fires; lease:\n"
"                        leased MRs, restored after MR_DECOHERENCE; odp: one ODP MR per\n"
"                        buffer, no cache. --verify counts stale messages (an earlier\n"
"                        message's bytes; READ: bytes that never arrived): expected\n"
"                        with none, a failure with the others\n"
"  --evict-rate N        set both daemons' --evict-rate for the run (0 after)\n"
"\n"
"Output:\n"
"  --verify              fill messages with a pattern of their iteration number and check\n"
"                        every byte at the receiver; a mismatch fails the run\n"
"  --json                one JSON document (counter keys as the daemon names them)\n"
"  --histogram FILE      latency / fault-latency histogram, .svg or .png (gnuplot)\n"
"\n"
"Bandwidth is in Gb/s (1e9 bit/s) and MB/s (1e6 byte/s). The ODP section shows the\n"
"daemons' counter deltas over the run; fault latency percentiles are bucket bounds of\n"
"their log2 histogram (faults answered in under N us).\n",
	      f);
}

static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PERF_PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see %s --help)\n", PERF_PROG);
	exit(2);
}

/* A whole number with an optional K/M/G (binary) suffix. */
static uint64_t parse_size(const char *flag, const char *s)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!isdigit((unsigned char)*s))
		bad("%s '%s': want a number of bytes", flag, s);
	errno = 0;
	v = strtoull(s, &end, 0);
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	default: break;
	}
	if (errno || *end || v > (UINT64_MAX >> shift))
		bad("%s '%s': want a number of bytes (K, M, G suffixes)", flag, s);
	return (uint64_t)v << shift;
}

static unsigned parse_uint(const char *flag, const char *s, unsigned min, unsigned max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!isdigit((unsigned char)*s) || errno || *end || v < min || v > max)
		bad("%s '%s': want a whole number %u..%u", flag, s, min, max);
	return (unsigned)v;
}

static int pick(const char *flag, const char *s, const char *const *names, int n)
{
	char all[128];
	size_t off = 0;

	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	for (int i = 0; i < n && off < sizeof(all); i++)
		off += (size_t)snprintf(all + off, sizeof(all) - off, "%s%s", i == 0 ? "" :
					i + 1 < n ? ", " : " or ", names[i]);
	bad("%s '%s': want %s", flag, s, all);
}

static const char *const test_names[] = { "write", "read", "send", "atomic", "flush" };
static const char *const odp_names[] = { "off", "explicit", "implicit" };
/* --regcache's words, in enum perf_regcache order after PERF_RC_OFF */
static const char *const regcache_names[] = { "none", "notify", "lease", "odp" };

const char *perf_test_name(enum perf_test t)
{
	return t <= PERF_FLUSH ? test_names[t] : "?";
}

const char *perf_odp_name(enum perf_odp o)
{
	return o <= PERF_ODP_IMPLICIT ? odp_names[o] : "?";
}

const char *perf_regcache_name(enum perf_regcache m)
{
	return m == PERF_RC_OFF ? "off" : m <= PERF_RC_ODP ? regcache_names[m - 1] : "?";
}

enum {
	O_BW = 256, O_LAT, O_ODP, O_PREFETCH, O_POLICY, O_RNR_RETRY, O_RNR_TIMER, O_COLD,
	O_CHURN, O_VERIFY, O_JSON, O_HIST, O_EVICT, O_TIMEOUT, O_REGCACHE,
};

static const struct option longopts[] = {
	{ "bw", no_argument, NULL, O_BW }, { "lat", no_argument, NULL, O_LAT },
	{ "ib-dev", required_argument, NULL, 'd' }, { "size", required_argument, NULL, 's' },
	{ "all", no_argument, NULL, 'a' }, { "iters", required_argument, NULL, 'n' },
	{ "duration", required_argument, NULL, 'D' }, { "qp", required_argument, NULL, 'q' },
	{ "tx-depth", required_argument, NULL, 't' }, { "inline", required_argument, NULL, 'I' },
	{ "mtu", required_argument, NULL, 'm' }, { "port", required_argument, NULL, 'p' },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "odp", required_argument, NULL, O_ODP }, { "prefetch", no_argument, NULL, O_PREFETCH },
	{ "fault-policy", required_argument, NULL, O_POLICY },
	{ "rnr-retry", required_argument, NULL, O_RNR_RETRY },
	{ "min-rnr-timer", required_argument, NULL, O_RNR_TIMER },
	{ "cold", no_argument, NULL, O_COLD }, { "churn", no_argument, NULL, O_CHURN },
	{ "regcache", required_argument, NULL, O_REGCACHE },
	{ "verify", no_argument, NULL, O_VERIFY }, { "json", no_argument, NULL, O_JSON },
	{ "histogram", required_argument, NULL, O_HIST },
	{ "evict-rate", required_argument, NULL, O_EVICT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Flags that were given, for the defaults that depend on --lat and the test. */
struct given {
	bool size, depth;
};

static double parse_seconds(const char *flag, const char *s, double max)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || !(v > 0 && v <= max))
		bad("%s '%s': want seconds, 0 < s <= %g", flag, s, max);
	return v;
}

static void one(struct perf_opts *o, struct given *g, int c, const char *arg)
{
	struct perf_cfg *cfg = &o->cfg;

	switch (c) {
	case O_BW: cfg->lat = false; break;
	case O_LAT: cfg->lat = true; break;
	case 'd': o->dev = arg; break;
	case 's': cfg->size = parse_size("-s", arg); g->size = true; break;
	case 'a': cfg->all = true; break;
	case 'n': cfg->iters = parse_uint("-n", arg, 1, 1000000000); o->iters_given = true; break;
	case 'D': cfg->duration = parse_seconds("-D", arg, 86400); break;
	case 'q': cfg->qps = parse_uint("-q", arg, 1, PERF_MAX_QPS); break;
	case 't': cfg->tx_depth = parse_uint("--tx-depth", arg, 1, 1u << 16); g->depth = true; break;
	case 'I': cfg->inline_size = parse_uint("--inline", arg, 0, 1u << 16); break;
	case 'm': cfg->mtu = parse_uint("--mtu", arg, 256, 4096); break;
	case 'p': o->port = parse_uint("-p", arg, 1, 65535); break;
	case O_TIMEOUT: o->timeout = parse_seconds("--timeout", arg, 3600); break;
	case O_ODP: cfg->odp = (enum perf_odp)pick("--odp", arg, odp_names, 3); break;
	case O_PREFETCH: cfg->prefetch = true; break;
	case O_POLICY: {
		static const char *const pol[] = { "stall", "rnr" };

		cfg->policy = pick("--fault-policy", arg, pol, 2) ? ODPEMU_FAULT_POLICY_RNR :
			      ODPEMU_FAULT_POLICY_STALL;
		break;
	}
	case O_RNR_RETRY: cfg->rnr_retry = parse_uint("--rnr-retry", arg, 0, 7); break;
	case O_RNR_TIMER: cfg->min_rnr_timer = parse_uint("--min-rnr-timer", arg, 0, 31); break;
	case O_COLD: cfg->cold = true; break;
	case O_CHURN: cfg->churn = true; break;
	case O_REGCACHE:
		cfg->regcache = (enum perf_regcache)(1 + pick("--regcache", arg, regcache_names,
							      4));
		cfg->churn = true;
		break;
	case O_VERIFY: cfg->verify = true; break;
	case O_JSON: o->json = true; break;
	case O_HIST: o->histogram = arg; break;
	case O_EVICT:
		if (strlen(arg) >= sizeof(cfg->evict_rate) || strchr(arg, ' ') || !*arg)
			bad("--evict-rate '%s': want a rate in pages per second", arg);
		snprintf(cfg->evict_rate, sizeof(cfg->evict_rate), "%s", arg);
		break;
	case 'h': usage(stdout); exit(0);
	default: bad("unknown or incomplete option");
	}
}

/* --regcache churns the client's local buffers, one registration per message in flight:
 * what has no such buffer, or does not read it through its registration, cannot run. */
static void check_regcache(const struct perf_cfg *c)
{
	const char *rc;

	if (!c->regcache)
		return;
	rc = perf_regcache_name(c->regcache);
	if (c->test != PERF_WRITE && c->test != PERF_SEND && c->test != PERF_READ)
		bad("--regcache %s: %s carries no message bytes that could go stale; run write, "
		    "send or read", rc, perf_test_name(c->test));
	if (c->lat)
		bad("--regcache %s runs with --bw only (add -t 1 for one message in flight)", rc);
	if (c->inline_size)
		bad("--regcache %s and --inline: inline data is copied at post time, through no "
		    "registration; drop --inline", rc);
	if (c->prefetch)
		bad("--regcache %s and --prefetch: the churned buffers are registered by the "
		    "back-end, not prefetched; drop --prefetch", rc);
}

/* Rules between flags; sizes against the device come later (caps.c). */
static void check(struct perf_opts *o, const struct given *g)
{
	struct perf_cfg *c = &o->cfg;

	check_regcache(c);
	if (c->mtu && (c->mtu & (c->mtu - 1)))
		bad("--mtu %u: want 256, 512, 1024, 2048 or 4096", c->mtu);
	if (c->iters && c->duration > 0)
		bad("-n and -D: give one of them");
	if (c->all && g->size)
		bad("-a and -s: give one of them");
	if (c->test == PERF_ATOMIC && g->size && c->size != 8)
		bad("-s %llu: atomics move 8 bytes; drop -s", (unsigned long long)c->size);
	if (g->size && c->size == 0)
		bad("-s 0: want at least 1 byte");
	if (c->lat && c->qps > 1)
		bad("-q %u: --lat runs one QP", c->qps);
	if (c->lat && g->depth && c->tx_depth != 1)
		bad("--tx-depth %u: --lat keeps one message in flight", c->tx_depth);
	if (c->prefetch && c->odp == PERF_ODP_OFF)
		bad("--prefetch needs ODP memory: add --odp explicit or --odp implicit");
	if (c->verify && c->test == PERF_FLUSH)
		bad("--verify: flush moves no data to check");
	if (c->inline_size && c->test != PERF_WRITE && c->test != PERF_SEND)
		bad("--inline: only write and send carry inline data");
	if (o->histogram && ((!strstr(o->histogram, ".svg") && !strstr(o->histogram, ".png")) ||
			     strchr(o->histogram, '\'')))
		bad("--histogram '%s': want a file name ending in .svg or .png (no quotes)",
		    o->histogram);
}

static void defaults(struct perf_opts *o, const struct given *g)
{
	struct perf_cfg *c = &o->cfg;

	if (!g->size)
		c->size = c->test == PERF_ATOMIC ? 8 : c->lat ? 2 : 65536;
	if (!g->depth)
		c->tx_depth = c->lat ? 1 : 128;
	if (!c->iters && !(c->duration > 0))
		c->iters = c->lat ? 1000 : 5000;
}

void perf_opts_parse(int argc, char **argv, struct perf_opts *o)
{
	struct given g = { false, false };
	int c;

	*o = (struct perf_opts){ .port = PERF_DEFAULT_PORT, .timeout = 5 };
	o->cfg = (struct perf_cfg){ .qps = 1, .rnr_retry = 7, .min_rnr_timer = 12 };
	while ((c = getopt_long(argc, argv, "d:s:an:D:q:t:I:m:p:h", longopts, NULL)) != -1)
		one(o, &g, c, optarg);
	if (optind >= argc)
		bad("which test? write, read, send, atomic or flush");
	o->cfg.test = (enum perf_test)pick("test", argv[optind++], test_names, 5);
	if (optind < argc)
		o->connect_to = argv[optind++];
	if (optind < argc)
		bad("unexpected argument '%s'", argv[optind]);
	check(o, &g);
	defaults(o, &g);
}

int perf_sizes(const struct perf_cfg *c, uint64_t *sizes, int max)
{
	int n = 0;

	if (c->test == PERF_ATOMIC || !c->all) {
		sizes[0] = c->test == PERF_ATOMIC ? 8 : c->size;
		return 1;
	}
	for (uint64_t s = 2; s <= PERF_ALL_MAX && n < max; s <<= 1)
		sizes[n++] = s;
	return n;
}

uint64_t perf_iters_for(const struct perf_opts *o, uint64_t size)
{
	uint64_t cap;

	if (!o->cfg.iters || !o->cfg.all || o->iters_given)
		return o->cfg.iters;
	/* -a without -n: move at most ~1 GiB per size, so the 8 MiB row takes seconds */
	cap = (1ull << 30) / size;
	if (cap < 64)
		cap = 64;
	return o->cfg.iters < cap ? o->cfg.iters : cap;
}

unsigned perf_rx_depth(const struct perf_cfg *c)
{
	unsigned d = 2 * c->tx_depth;

	return c->lat ? 2 : d < 16 ? 16 : d > 512 ? 512 : d;
}
