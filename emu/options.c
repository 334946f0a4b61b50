/* SPDX-License-Identifier: MIT */
/* options — odpemud's flags. Every flag is documented in usage(); unknown, missing or
 * contradictory flags are one clear line on stderr. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"
#include "log.h"
#include "rundir.h"
#include "inject/wire.h"

/* --personality list / --list-personalities: a line per personality. */
static void list_personalities(void)
{
	const struct nic_personality *p;

	for (unsigned i = 0; (p = nic_personality_at(i)); i++)
		printf("%-8s %s\n", p->name, p->summary);
}

/* What --help prints (and a usage error points to). */
static const char usage_text[] =
"usage: odpemud --name NAME (--netdev IFNAME | --addr IP) [options]\n"
"       odpemud --check [--json]\n"
"\n"
"odpemud is one soft RDMA NIC with On-Demand Paging (RoCEv2 over UDP). Applications reach\n"
"it through libodpemu and its control socket <rundir>/NAME.sock.\n"
"\n"
"  --name NAME            device name (letters, digits, '-', '_'; default odp0)\n"
"  --netdev IFNAME        use this interface: its addresses are the GID table, its MTU the\n"
"                         port MTU; the first IPv4 address (else IPv6) is the source address\n"
"  --addr IP              use this address (IPv4 or IPv6) and the interface that owns it\n"
"  --port N               UDP port (default 4791, the RoCEv2 port)\n"
"  --personality NAME     look and behave like this device (default odpemu): odpemu,\n"
"                         cx4, cx5, cx6 (Mellanox ConnectX) or rxe (Linux soft-RoCE): its\n"
"                         ids, limits, ODP caps and default fault policy; fixed at start.\n"
"                         --personality list (or --list-personalities) describes them\n"
"  --fault-policy P       responder on an ODP page fault: rnr (RNR NAK, as ConnectX) or\n"
"                         stall (hold the packets until the page is in); default: the\n"
"                         personality's (rnr; stall for rxe)\n"
"  --fault-delay-us SPEC  extra latency of each page fault: N | uniform:A-B | exp:MEAN |\n"
"                         normal:MEAN,SD (microseconds; default 0)\n"
"  --fault-fail-rate P    probability 0..1 that a page fault fails (access error)\n"
"  --evict-rate N/s       drop N random present ODP pages per second (faults in steady\n"
"                         traffic; default 0)\n"
"  --wire-loss [DIR:]P[@ON/PERIOD]\n"
"                         lose packets with probability P (0..1). DIR: tx (packets this\n"
"                         daemon sends, the default), rx (packets it receives) or both;\n"
"                         @ON/PERIOD: only during the first ON of each PERIOD, e.g.\n"
"                         0.5@100ms/1s (units ns, us, ms, s). The flag may be repeated:\n"
"                         --wire-loss tx:0.02 --wire-loss rx:0.01\n"
"  --wire-dup [DIR:]P[@ON/PERIOD]\n"
"                         send (or deliver) a packet twice\n"
"  --wire-reorder [DIR:]P[:DEPTH][@ON/PERIOD]\n"
"                         hold a packet until DEPTH (1..64, default 1) later packets to\n"
"                         its peer have passed it, 1 ms at most\n"
"  --wire-delay-us [DIR:]SPEC[@ON/PERIOD]\n"
"                         delay every packet: SPEC as --fault-delay-us\n"
"  --wire-corrupt [DIR:]P[@ON/PERIOD]\n"
"                         flip one bit after the ICRC was sealed: the receiver drops\n"
"                         the packet (drop_icrc)\n"
"  --wire-match CLASS,... only packets of these opcode classes: send, write, read,\n"
"                         read-resp, atomic, atomic-resp, atomic-write, flush, ack, cm\n"
"                         (QP1's MADs); default all\n"
"  --wire-peer ADDR       only packets to and from this peer (default any)\n"
"  --seed S               seed of every injected delay, failure, eviction and wire fault\n"
"                         (default 1)\n"
"  --fault-thread         resolve every page fault on the fault thread (default: on the\n"
"                         data path, in microseconds, where PROCMAP_QUERY allows)\n"
"  --fault-around BYTES   fault-around window of ODP MRs (power of two >= 4096; default\n"
"                         65536; 4096 turns it off)\n"
"  --poll-us N|adaptive   busy-poll N us after the last work before sleeping; adaptive\n"
"                         (the default): four times the learned idle gap between\n"
"                         bursts, 50..1000 us, and 50 when the gaps are longer\n"
"  --lease-timeout-ms N   how long a mapping change under an MR lease waits for the\n"
"                         holder's acknowledgement before the MR is revoked (1..600000;\n"
"                         default 1000; docs/regcache.md)\n"
"  --no-gso               send datagram by datagram, without UDP segmentation offload\n"
"                         (a capture then shows one RoCEv2 packet per frame)\n"
"  --no-gro               receive datagram by datagram, without UDP_GRO coalescing\n"
"  --rundir DIR           where the control socket goes (default $ODPEMU_RUNDIR, else\n"
"                         /run/odpemu as root, $XDG_RUNTIME_DIR/odpemu otherwise)\n"
"  --group GROUP          give the control socket (mode 0660) to this group, a name or a\n"
"                         numeric gid: its members may use the device (default the\n"
"                         daemon's own group; root and the daemon's user always may)\n"
"  --foreground           stay in the foreground, log to stderr (default: detach once\n"
"                         ready, log to <rundir>/NAME.log)\n"
"  --log-level L          err, warn, info (default) or debug\n"
"  --io auto|uring|epoll  the event loop: io_uring, or epoll where io_uring is refused\n"
"                         or too old (auto, the default, picks by what --check finds;\n"
"                         uring exits when it cannot set one up)\n"
"  --check                probe what this host gives odpemud and its clients (io_uring\n"
"                         and its features, UDP offloads, PROCMAP_QUERY, userfaultfd,\n"
"                         seccomp, ptrace access, ...), print a row per feature with its\n"
"                         fallback and remedy, and exit: 0 when odpemud can run (maybe\n"
"                         degraded), 1 when it cannot. ODPEMU_MASK=name,... reports the\n"
"                         named features as absent (a test switch)\n"
"  --json                 with --check: the report as one JSON document\n"
"  --help, --version\n"
"\n"
"Injection knobs can also be changed at run time (odpemu_set_inject, odpemu-ctl inject).\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

enum { OPT_NAME = 256, OPT_NETDEV, OPT_ADDR, OPT_PORT, OPT_POLICY, OPT_DELAY, OPT_FAIL,
	OPT_EVICT, OPT_SEED, OPT_FG, OPT_LOG, OPT_RUNDIR, OPT_POLL, OPT_AROUND, OPT_NO_GSO, OPT_NO_GRO,
	OPT_FAULT_THREAD, OPT_LEASE_TIMEOUT, OPT_GROUP, OPT_HELP, OPT_VERSION, OPT_WIRE,
	OPT_CHECK, OPT_JSON, OPT_IO, OPT_PERSONALITY, OPT_LIST_PERSONALITIES };

static const struct option longopts[] = {
	{ "name", required_argument, NULL, OPT_NAME },
	{ "netdev", required_argument, NULL, OPT_NETDEV },
	{ "addr", required_argument, NULL, OPT_ADDR },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "personality", required_argument, NULL, OPT_PERSONALITY },
	{ "list-personalities", no_argument, NULL, OPT_LIST_PERSONALITIES },
	{ "fault-policy", required_argument, NULL, OPT_POLICY },
	{ "fault-delay-us", required_argument, NULL, OPT_DELAY },
	{ "fault-fail-rate", required_argument, NULL, OPT_FAIL },
	{ "evict-rate", required_argument, NULL, OPT_EVICT },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "foreground", no_argument, NULL, OPT_FG },
	{ "log-level", required_argument, NULL, OPT_LOG },
	{ "io", required_argument, NULL, OPT_IO },
	{ "rundir", required_argument, NULL, OPT_RUNDIR },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ "poll-us", required_argument, NULL, OPT_POLL },
	{ "fault-around", required_argument, NULL, OPT_AROUND },
	{ "no-gso", no_argument, NULL, OPT_NO_GSO },
	{ "no-gro", no_argument, NULL, OPT_NO_GRO },
	{ "fault-thread", no_argument, NULL, OPT_FAULT_THREAD },
	{ "lease-timeout-ms", required_argument, NULL, OPT_LEASE_TIMEOUT },
	/* every --wire-* flag is OPT_WIRE: one() finds its name through longindex */
	{ "wire-loss", required_argument, NULL, OPT_WIRE },
	{ "wire-dup", required_argument, NULL, OPT_WIRE },
	{ "wire-reorder", required_argument, NULL, OPT_WIRE },
	{ "wire-delay-us", required_argument, NULL, OPT_WIRE },
	{ "wire-corrupt", required_argument, NULL, OPT_WIRE },
	{ "wire-match", required_argument, NULL, OPT_WIRE },
	{ "wire-peer", required_argument, NULL, OPT_WIRE },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "odpemud: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see odpemud --help)\n");
	return -1;
}

/* A whole unsigned number in [min, max]. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static bool name_ok(const char *n)
{
	size_t len = strlen(n);

	if (!len || len >= IPC_NAME_LEN)
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
			return false;
	return true;
}

/* --group: a numeric gid, else a group name the system knows. (gid_t)-1 is not a gid:
 * chown takes it as "leave the group". */
static int parse_group(const char *s, uint32_t *gid)
{
	struct group *g;
	uint64_t v;

	if (!parse_u64(s, 0, UINT32_MAX - 1, &v)) {
		*gid = (uint32_t)v;
		return 0;
	}
	if (!(g = getgrnam(s)))	/* parsed before any thread starts */
		return -1;
	*gid = (uint32_t)g->gr_gid;
	return 0;
}

static int parse_io(const char *s)
{
	static const char *const names[] = { [EMU_IO_AUTO] = "auto", [EMU_IO_URING] = "uring",
					     [EMU_IO_EPOLL] = "epoll" };

	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static int parse_level(const char *s)
{
	static const char *const names[] = { "err", "warn", "info", "debug" };

	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

/* A --wire-* flag: checked now, so a bad value is one line and exit 2 like any bad flag;
 * applied in order at start (daemon.c). */
static int wire_flag(struct emu_options *o, const char *key, const char *arg)
{
	struct emu_wire_rules check;
	char msg[320];

	emu_wire_rules_init(&check, 0);
	if (emu_wire_rules_set(&check, key, arg, msg, sizeof(msg)))
		return bad("--%s", msg);
	if (o->nwire == EMU_OPT_WIRE_MAX)
		return bad("--%s: more than %d --wire-* flags: give both directions in one "
			   "(--wire-loss 'tx:0.02 rx:0.01')", key, EMU_OPT_WIRE_MAX);
	o->wire[o->nwire].key = key;
	o->wire[o->nwire++].value = arg;
	return 0;
}

/* The options of the data path and of fault handling. */
static int one_engine(struct emu_options *o, int c, const char *name, const char *arg)
{
	uint64_t v;

	switch (c) {
	case OPT_POLICY:
		if (strcmp(arg, "stall") && strcmp(arg, "rnr"))
			return bad("--fault-policy '%s': want stall or rnr", arg);
		o->fault_policy = arg;
		return 0;
	case OPT_DELAY: o->fault_delay = arg; return 0;
	case OPT_FAIL: o->fault_fail_rate = arg; return 0;
	case OPT_EVICT: o->evict_rate = arg; return 0;
	case OPT_NO_GSO: o->no_gso = true; return 0;
	case OPT_NO_GRO: o->no_gro = true; return 0;
	case OPT_FAULT_THREAD: o->fault_thread = true; return 0;
	case OPT_POLL:
		if (!strcmp(arg, "adaptive")) {
			o->poll_us = -1;
			return 0;
		}
		if (parse_u64(arg, 0, 1000000, &v))
			return bad("--poll-us '%s': want adaptive or 0..1000000", arg);
		o->poll_us = (int)v;
		return 0;
	case OPT_LEASE_TIMEOUT:
		if (parse_u64(arg, 1, 600000, &o->lease_timeout_ms))
			return bad("--lease-timeout-ms '%s': want 1..600000", arg);
		return 0;
	case OPT_WIRE: return wire_flag(o, name, arg);
	case OPT_AROUND:
		if (parse_u64(arg, 4096, 1ull << 30, &v) || (v & (v - 1)))
			return bad("--fault-around '%s': want a power of two 4096..1073741824", arg);
		o->fault_around = v;
		return 0;
	}
	return -1;
}

/* --personality NAME: one of the table's (nic/personality.c). */
static int parse_personality(struct emu_options *o, const char *arg)
{
	char names[128] = "";
	const struct nic_personality *p;

	if ((o->personality = nic_personality_find(arg)))
		return 0;
	for (unsigned i = 0; (p = nic_personality_at(i)); i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 i ? ", " : "", p->name);
	return bad("--personality '%s': want one of %s (--personality list describes them)",
		   arg, names);
}

/* The device's identity, its address and the process; the rest: one_engine. */
static int one(struct emu_options *o, int c, const char *name, const char *arg)
{
	uint64_t v;

	switch (c) {
	case OPT_NAME:
		if (!name_ok(arg))
			return bad("--name '%s': use 1-63 letters, digits, '-' or '_'", arg);
		o->name = arg;
		return 0;
	case OPT_PERSONALITY: return parse_personality(o, arg);
	case OPT_NETDEV: o->netdev = arg; return 0;
	case OPT_ADDR: o->addr = arg; return 0;
	case OPT_PORT:
		if (parse_u64(arg, 1, 65535, &v))
			return bad("--port '%s': want a UDP port 1..65535", arg);
		o->port = (uint16_t)v;
		return 0;
	case OPT_SEED:
		if (parse_u64(arg, 0, UINT64_MAX, &o->seed))
			return bad("--seed '%s': want an unsigned number", arg);
		return 0;
	case OPT_FG: o->foreground = true; return 0;
	case OPT_CHECK: o->check = true; return 0;
	case OPT_JSON: o->json = true; return 0;
	case OPT_LOG:
		if ((o->log_level = parse_level(arg)) < 0)
			return bad("--log-level '%s': want err, warn, info or debug", arg);
		return 0;
	case OPT_IO:
		if (parse_io(arg) < 0)
			return bad("--io '%s': want auto, uring or epoll", arg);
		o->io = (enum emu_io_choice)parse_io(arg);
		return 0;
	case OPT_RUNDIR: o->rundir = arg; return 0;
	case OPT_GROUP:
		if (parse_group(arg, &o->group_gid))
			return bad("--group '%s': no such group (give a group name from the "
				   "group database, getent group, or a numeric gid)", arg);
		o->group = arg;
		return 0;
	}
	return one_engine(o, c, name, arg);
}

int emu_options_parse(int argc, char **argv, struct emu_options *o)
{
	int c, idx = 0;

	memset(o, 0, sizeof(*o));
	o->name = "odp0";
	o->port = 4791;
	o->personality = nic_personality_at(0);
	o->seed = 1;
	o->log_level = EMU_LOG_INFO;
	o->poll_us = -1;	/* adaptive */
	o->lease_timeout_ms = 1000;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
		if (c == OPT_HELP) {
			usage(stdout);
			return 1;
		}
		if (c == OPT_LIST_PERSONALITIES ||
		    (c == OPT_PERSONALITY && !strcmp(optarg, "list"))) {
			list_personalities();
			return 1;
		}
		if (c == OPT_VERSION) {
			printf("odpemud 0.1.0 (ipc %d)\n", IPC_VERSION);
			return 1;
		}
		if (c == '?' || c == ':')
			return bad("unknown option or missing value: '%s'", argv[optind - 1]);
		if (one(o, c, longopts[idx].name, optarg))
			return -1;
	}
	if (optind < argc)
		return bad("unexpected argument '%s'", argv[optind]);
	if (o->json && !o->check)
		return bad("--json: it goes with --check");
	if (o->check)
		return 0;	/* a report of the host: no device, no address */
	if (o->netdev && o->addr)
		return bad("%s: give --netdev or --addr, not both", "contradictory flags");
	if (!o->netdev && !o->addr)
		return bad("%s: say which interface to use with --netdev IFNAME or --addr IP",
			   "no address");
	return 0;
}

const char *emu_rundir(const struct emu_options *o, char *buf, unsigned len)
{
	if (o && o->rundir)
		snprintf(buf, len, "%s", o->rundir);
	else
		ipc_rundir(buf, len);
	return buf;
}
