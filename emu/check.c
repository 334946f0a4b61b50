/* SPDX-License-Identifier: MIT */
/* check — the host feature report (see check.h): the rows, ODPEMU_MASK, the run, the
 * table, the JSON document and the start log. The probes are in check_probe.c. */
#include "check.h"
#include "check_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "log.h"
#include "say.h"

/* Each row says what odpemu does today without the feature, read from the code named. */
/* Without io_uring, or without a feature its loop needs, odpemud runs this one. */
#define EPOLL_LOOP "the epoll loop (emu/io/loop_epoll.c; logged 'event loop: epoll'): " \
	"epoll_wait, recvmmsg and sendmmsg, UDP GSO and GRO kept; a system call per wait " \
	"and per receive batch"

static const struct emu_check_row rows[] = {
	{ .name = "udp_socket", .needs = "socket(2)", .who = EMU_CHECK_DAEMON,
	  .used_for = "the RoCEv2 socket (emu/io/udp.c)",
	  .absent = EMU_CHECK_MISSING, .fatal = true,
	  .without = "none: odpemud cannot open its socket and exits 1 ('cannot create a UDP "
		"socket')",
	  .remedy = "allow socket(AF_INET or AF_INET6, SOCK_DGRAM): a seccomp profile or "
		"systemd's RestrictAddressFamilies= refuses it",
	  .probe = emu_check_probe_udp_socket },
	{ .name = "io_uring", .needs = "Linux 5.1", .who = EMU_CHECK_DAEMON,
	  .used_for = "the event loop: every socket, eventfd, signal and client (emu/io/loop.c)",
	  .absent = EMU_CHECK_FALLBACK,
	  .without = EPOLL_LOOP,
	  .remedy = "sysctl -w kernel.io_uring_disabled=0 (the switch of Linux 6.6+ and RHEL 9, "
		"which sets 2); in Docker 25+ or containerd, whose default seccomp profiles "
		"refuse io_uring: docker run --security-opt seccomp=unconfined, or a profile "
		"that allows io_uring_setup, io_uring_enter and io_uring_register",
	  .probe = emu_check_probe_io_uring },
	{ .name = "io_uring_poll_multishot", .needs = "Linux 5.13", .who = EMU_CHECK_DAEMON,
	  .used_for = "every wait of the loop: control socket, sessions, doorbells, signals "
		"(emu_loop_poll_in)",
	  .absent = EMU_CHECK_FALLBACK, .after = "io_uring",
	  .without = EPOLL_LOOP,
	  .remedy = "Linux 5.13 or later",
	  .probe = emu_check_probe_poll_multishot },
	{ .name = "io_uring_coop_taskrun", .needs = "Linux 5.19", .who = EMU_CHECK_DAEMON,
	  .used_for = "IORING_SETUP_COOP_TASKRUN | TASKRUN_FLAG: an arriving packet does not "
		"interrupt the busy loop (emu_loop_init)",
	  .absent = EMU_CHECK_FALLBACK, .after = "io_uring",
	  .without = "the ring is set up without them: completions may interrupt the loop "
		"with an IPI, which costs a spinning loop some throughput",
	  .remedy = "Linux 5.19 or later",
	  .probe = emu_check_probe_coop_taskrun },
	{ .name = "io_uring_buf_ring", .needs = "Linux 5.19", .who = EMU_CHECK_DAEMON,
	  .used_for = "the provided-buffer ring UDP receive fills (emu/io/udp.c)",
	  .absent = EMU_CHECK_FALLBACK, .after = "io_uring",
	  .without = "receive by recvmmsg batches on a multishot poll (logged 'UDP receive: "
		"recvmmsg batch (fallback)'): a system call per batch",
	  .remedy = "Linux 5.19 or later",
	  .probe = emu_check_probe_buf_ring },
	{ .name = "io_uring_recvmsg_multishot", .needs = "Linux 6.0", .who = EMU_CHECK_DAEMON,
	  .used_for = "one receive request for many datagrams (emu/io/udp.c)",
	  .absent = EMU_CHECK_FALLBACK, .after = "io_uring_buf_ring",
	  .without = "receive by recvmmsg batches on a multishot poll (logged 'UDP receive: "
		"recvmmsg batch (fallback)'): a system call per batch",
	  .remedy = "Linux 6.0 or later",
	  .probe = emu_check_probe_recvmsg_multishot },
	{ .name = "io_uring_sync_cancel", .needs = "Linux 6.0", .who = EMU_CHECK_DAEMON,
	  .used_for = "IORING_REGISTER_SYNC_CANCEL: a closing session's polls, the UDP "
		"socket's and the persist thread's requests end before their memory goes "
		"(emu_loop_cancel)",
	  .absent = EMU_CHECK_FALLBACK, .after = "io_uring",
	  .without = EPOLL_LOOP,
	  .remedy = "Linux 6.0 or later",
	  .probe = emu_check_probe_sync_cancel },
	{ .name = "udp_gso", .needs = "Linux 4.18", .who = EMU_CHECK_DAEMON,
	  .used_for = "UDP_SEGMENT: one send per run of equal datagrams to a peer "
		"(emu/io/udp_tx.c)",
	  .absent = EMU_CHECK_FALLBACK, .after = "udp_socket",
	  .without = "sendmmsg datagram by datagram, as with --no-gso: more kernel work per "
		"packet",
	  .remedy = "Linux 4.18 or later",
	  .probe = emu_check_probe_udp_gso },
	{ .name = "udp_gro", .needs = "Linux 5.0", .who = EMU_CHECK_DAEMON,
	  .used_for = "UDP_GRO: a run of datagrams from one peer in one receive (emu/io/udp.c)",
	  .absent = EMU_CHECK_FALLBACK, .after = "udp_socket",
	  .without = "one datagram per receive, as with --no-gro",
	  .remedy = "Linux 5.0 or later",
	  .probe = emu_check_probe_udp_gro },
	{ .name = "udp_buffers", .needs = "rmem/wmem_max", .who = EMU_CHECK_DAEMON,
	  .used_for = "8 MiB socket buffers each way, so bursts are not dropped (emu/io/udp.c: "
		"SO_RCVBUFFORCE, else SO_RCVBUF)",
	  .absent = EMU_CHECK_FALLBACK, .after = "udp_socket",
	  .without = "the kernel caps them at net.core.rmem_max and wmem_max: a burst beyond "
		"is dropped by the kernel (RcvbufErrors in /proc/net/snmp) and retransmitted: "
		"less throughput under load",
	  .remedy = "sysctl -w net.core.rmem_max=8388608 net.core.wmem_max=8388608, or "
		"CAP_NET_ADMIN for odpemud (SO_RCVBUFFORCE)",
	  .probe = emu_check_probe_udp_buffers },
	{ .name = "procmap_query", .needs = "Linux 6.11", .who = EMU_CHECK_BOTH,
	  .used_for = "a client's VMAs one ioctl each (ipc/maps.c): page faults resolved "
		"inline on the loop, in microseconds",
	  .absent = EMU_CHECK_FALLBACK,
	  .without = "the text of /proc/PID/maps (0.3 us a line): page faults resolved inline "
		"while a walk parses at most 128 lines, else on the fault thread, as with "
		"--fault-thread (a wake-up of 50-150 us, and hundreds of us of text in a large "
		"address space)",
	  .remedy = "Linux 6.11 or later",
	  .probe = emu_check_probe_procmap_query },
	{ .name = "process_vm", .needs = "ptrace access", .who = EMU_CHECK_DAEMON,
	  .used_for = "reading and writing client memory of ODP MRs and MRs registered by "
		"address (emu/ports.c), the client naming odpemud its tracer as libodpemu does",
	  .absent = EMU_CHECK_MISSING,
	  .without = "none: those accesses fail (EFAULT, counted in mem_read_errors and "
		"mem_write_errors) and RDMA on such MRs completes in error; pinned MRs whose "
		"pages odpemud maps still work",
	  .remedy = "run odpemud as the clients' user, or give it CAP_SYS_PTRACE; "
		"kernel.yama.ptrace_scope 0 or 1 (2 needs CAP_SYS_PTRACE, 3 refuses everyone); "
		"in a container, odpemud and its clients in one PID namespace",
	  .probe = emu_check_probe_process_vm },
	{ .name = "ptrace_scope", .needs = "Yama scope 0", .who = EMU_CHECK_DAEMON,
	  .used_for = "reaching a client that has not named odpemud its tracer",
	  .absent = EMU_CHECK_FALLBACK, .after = "process_vm",
	  .without = "libodpemu names the daemon of the device it opens its tracer "
		"(PR_SET_PTRACER); a process that opens devices of two daemons declares "
		"PR_SET_PTRACER_ANY instead (lib/tracer.c): every process of its uid may "
		"then attach to it",
	  .remedy = "sysctl -w kernel.yama.ptrace_scope=0, or CAP_SYS_PTRACE for odpemud "
		"(setcap cap_sys_ptrace+ep, systemd AmbientCapabilities=CAP_SYS_PTRACE, docker "
		"run --cap-add SYS_PTRACE)",
	  .probe = emu_check_probe_ptrace_scope },
	{ .name = "userfaultfd", .needs = "Linux 5.7", .who = EMU_CHECK_BOTH,
	  .used_for = "the MMU notifier: libodpemu's userfaultfd relays unmaps, discards and "
		"remaps of MR memory to odpemud (emu/host/notifier.c)",
	  .absent = EMU_CHECK_FALLBACK,
	  .without = "the seccomp route: libodpemu's seccomp filter holds each munmap, mremap, "
		"discarding madvise, MAP_FIXED mmap, brk and shmdt for the first device's "
		"daemon, which invalidates before the call runs and relays the range to the "
		"process's other devices (docs/emu.md); each such call costs a round trip (tens of "
		"us) and the process gets no_new_privs. Without seccomp_notify too: no "
		"invalidation at all (ODP data stays right: every access walks the live page "
		"tables)",
	  .remedy = "Linux 5.11 or later, whose UFFD_USER_MODE_ONLY needs no privilege "
		"(before: sysctl -w vm.unprivileged_userfaultfd=1 or CAP_SYS_PTRACE); Docker's "
		"default seccomp profile refuses userfaultfd: docker run --security-opt "
		"seccomp=unconfined, or a profile that allows it",
	  .probe = emu_check_probe_userfaultfd },
	{ .name = "uffd_wp_shmem", .needs = "Linux 5.19", .who = EMU_CHECK_BOTH,
	  .used_for = "UFFD_FEATURE_WP_HUGETLBFS_SHMEM: watching memfds, shared anonymous "
		"memory and the memfd a pinned MR is moved into",
	  .absent = EMU_CHECK_FALLBACK, .after = "userfaultfd",
	  .without = "libodpemu's userfaultfd goes without it: such ranges cannot be watched "
		"(a pinned MR's memfd logs 'cannot watch ... unmaps there will not be seen'; "
		"ODP faults there are answered all the same): their unmaps raise no "
		"invalidation and no MR_DECOHERENCE",
	  .remedy = "Linux 5.19 or later",
	  .probe = emu_check_probe_uffd_wp_shmem },
	{ .name = "uffd_wp_async", .needs = "Linux 6.7", .who = EMU_CHECK_BOTH,
	  .used_for = "UFFD_FEATURE_WP_ASYNC: watching regular files' mappings",
	  .absent = EMU_CHECK_FALLBACK, .after = "userfaultfd",
	  .without = "libodpemu's userfaultfd goes without it; a process that registers an MR "
		"over a file mapping (or an implicit ODP MR) takes the seccomp route as well: "
		"its munmap, mremap, discarding madvise, MAP_FIXED mmap and brk are held for "
		"the daemon (a round trip each), which invalidates before they run",
	  .remedy = "Linux 6.7 or later",
	  .probe = emu_check_probe_uffd_wp_async },
	{ .name = "seccomp_notify", .needs = "Linux 5.7", .who = EMU_CHECK_BOTH,
	  .used_for = "watches and MR leases: libodpemu's seccomp filter holds mapping "
		"changes for odpemud (emu/host/watch.c, docs/regcache.md)",
	  .absent = EMU_CHECK_MISSING,
	  .without = "none: odpemu_watch_create (and its verbs twin) and registrations with "
		"ODPEMU_ACCESS_LEASE fail with the error of seccomp(2); the rest works",
	  .remedy = "Linux 5.7 or later (SECCOMP_FILTER_FLAG_TSYNC_ESRCH); a seccomp profile "
		"that allows seccomp(2), as Docker's default does",
	  .probe = emu_check_probe_seccomp_notify },
	{ .name = "pidfd_open", .needs = "Linux 5.3", .who = EMU_CHECK_BOTH,
	  .used_for = "following a process whose seccomp listener outlives its session or its "
		"daemon (emu/host/orphan.c, lib/watch.c)",
	  .absent = EMU_CHECK_MISSING,
	  .without = "none: when a process with watches or leases closes its device, or its "
		"daemon dies, and it lives on, nobody answers its held calls: munmap, mremap, "
		"discarding madvise, MAP_FIXED mmap, brk and shmdt fail with ENOSYS",
	  .remedy = "Linux 5.3 or later; a seccomp profile that allows pidfd_open, as "
		"Docker's default does",
	  .probe = emu_check_probe_pidfd_open },
	{ .name = "map_files", .needs = "CAP_SYS_ADMIN", .who = EMU_CHECK_BOTH,
	  .used_for = "opening the file behind a shared mapping: the persistent FLUSH's "
		"fdatasync (emu/host/persist.c), pinning shared memory (lib/pin.c)",
	  .absent = EMU_CHECK_FALLBACK,
	  .without = "by path: a persistent FLUSH over a deleted file, or one whose path "
		"odpemud cannot open (another mount namespace), fails; a pin "
		"of shared memory uses its path or a descriptor the process holds, else the MR "
		"is registered by address (the weaker guarantee)",
	  .remedy = "CAP_CHECKPOINT_RESTORE (Linux 5.9+) or CAP_SYS_ADMIN for odpemud and "
		"the clients (setcap, systemd AmbientCapabilities=, docker run --cap-add "
		"SYS_ADMIN), or keep a descriptor open on shared files",
	  .probe = emu_check_probe_map_files },
	{ .name = "cachestat", .needs = "Linux 6.5", .who = EMU_CHECK_TESTS,
	  .used_for = "tests only: e2e-persist checks that a persistent FLUSH left no dirty "
		"page (cachestat(2), x86-64 syscall 451)",
	  .absent = EMU_CHECK_FALLBACK,
	  .without = "e2e-persist reads the mapping's dirty pages in /proc/self/smaps instead "
		"(writeback cleans them too); odpemud and libodpemu do not use it",
	  .remedy = "Linux 6.5 or later; a seccomp profile that allows cachestat",
	  .probe = emu_check_probe_cachestat },
	{ .name = "netns", .needs = "root", .who = EMU_CHECK_TESTS,
	  .used_for = "tests only: as root the e2e and security suites put their two hosts in "
		"network namespaces joined by veth; the netdev tests change interfaces in one",
	  .absent = EMU_CHECK_FALLBACK,
	  .without = "not root, or with ODPEMU_TEST_NO_NETNS=1, the two hosts are 127.0.0.1 "
		"and 127.0.0.2 and the tests that change interfaces skip; as root where "
		"namespaces are refused the e2e tests stop at 'cannot create the test hosts': "
		"set ODPEMU_TEST_NO_NETNS=1",
	  .remedy = "docker run --privileged (Docker's seccomp and AppArmor profiles refuse "
		"unshare and the mounts of ip netns without it); a kernel with veth",
	  .probe = emu_check_probe_netns },
};

_Static_assert(sizeof(rows) / sizeof(rows[0]) <= EMU_CHECK_MAX, "rows fit a report");
_Static_assert(sizeof(rows) / sizeof(rows[0]) <= sizeof(unsigned long) * 8,
	       "a mask bit per row");

#define NROWS ((unsigned)(sizeof(rows) / sizeof(rows[0])))

const struct emu_check_row *emu_check_rows(unsigned *n)
{
	*n = NROWS;
	return rows;
}

const char *emu_check_verdict_str(enum emu_check_verdict v)
{
	return v == EMU_CHECK_AVAILABLE ? "available" : v == EMU_CHECK_FALLBACK ? "fallback"
										: "missing";
}

static const char *who_str(enum emu_check_who w)
{
	static const char *const names[] = { "daemon", "daemon+lib", "tests" };

	return names[w];
}

static int row_index(const char *name, size_t len)
{
	for (unsigned i = 0; i < NROWS; i++)
		if (strlen(rows[i].name) == len && !strncmp(rows[i].name, name, len))
			return (int)i;
	return -1;
}

int emu_check_mask_parse(const char *spec, unsigned long *mask, char *err, size_t errlen)
{
	*mask = 0;
	for (const char *p = spec; p && *p; p += *p == ',') {
		size_t len = strcspn(p, ",");
		int i = row_index(p, len);

		if (len && i < 0) {
			size_t at;

			emu_say(err, errlen, "ODPEMU_MASK: unknown feature '%.*s'; the features "
				"are", (int)len, p);
			for (unsigned k = 0; k < NROWS && (at = strlen(err)) < errlen; k++)
				emu_say(err + at, errlen - at, "%s %s", k ? "," : "", rows[k].name);
			return -EINVAL;
		}
		if (len)
			*mask |= 1ul << i;
		p += len;
	}
	return 0;
}

const struct emu_check_result *emu_check_find(const struct emu_check_report *rep,
					      const char *name)
{
	for (unsigned i = 0; i < rep->n; i++)
		if (!strcmp(rep->r[i].row->name, name))
			return &rep->r[i];
	return NULL;
}

/* One row: masked, or its prerequisite absent (then it is absent too: nothing to probe
 * it on), or probed. */
static void run_row(const struct emu_check_report *rep, struct emu_check_result *r,
		    const struct emu_check_row *row, bool masked)
{
	const struct emu_check_result *pre = row->after ? emu_check_find(rep, row->after) : NULL;

	r->row = row;
	r->masked = masked;
	if (masked) {
		emu_say(r->detail, sizeof(r->detail), "masked by ODPEMU_MASK");
		r->verdict = row->absent;
	} else if (pre && pre->verdict != EMU_CHECK_AVAILABLE) {
		emu_say(r->detail, sizeof(r->detail), "not probed: needs %s", row->after);
		r->verdict = row->absent;
	} else {
		r->verdict = row->probe(r->detail, sizeof(r->detail)) ? EMU_CHECK_AVAILABLE
								      : row->absent;
	}
}

int emu_check_run(struct emu_check_report *rep, const char *mask_spec, bool with_tests,
		  char *err, size_t errlen)
{
	unsigned long mask;

	memset(rep, 0, sizeof(*rep));
	rep->fatal = -1;
	if (emu_check_mask_parse(mask_spec, &mask, err, errlen))
		return -EINVAL;
	for (unsigned i = 0; i < NROWS; i++) {
		struct emu_check_result *r = &rep->r[rep->n];

		if (rows[i].who == EMU_CHECK_TESTS && !with_tests)
			continue;
		run_row(rep, r, &rows[i], mask >> i & 1);
		if (r->verdict != EMU_CHECK_AVAILABLE && rows[i].fatal && rep->fatal < 0)
			rep->fatal = (int)rep->n;
		rep->n++;
	}
	return 0;
}

void emu_check_reason(const struct emu_check_result *r, char *buf, size_t len)
{
	emu_say(buf, len, "%s: %s; remedy: %s", r->row->name, r->detail, r->row->remedy);
}

/* ---- output ---- */

/* label and text from column indent on, words wrapped before column 92 (the next lines
 * indented 4 more) */
static void wrapped(FILE *f, unsigned indent, const char *label, const char *text)
{
	unsigned col = indent + (unsigned)strlen(label);
	bool first = true;

	fprintf(f, "%*s%s", (int)indent, "", label);
	while (*text) {
		size_t w = strcspn(text, " ");

		if (!first && col + 1 + w > 92) {
			fprintf(f, "\n%*s", (int)indent + 4, "");
			col = indent + 4;
		} else if (!first) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", (int)w, text);
		col += (unsigned)w;
		text += w + (text[w] == ' ');
		first = false;
	}
	fputc('\n', f);
}

/* The names of the rows not available ("a, b"), and how many there are. */
static unsigned absent_names(const struct emu_check_report *rep, char *buf, size_t len)
{
	unsigned n = 0;
	size_t at;

	buf[0] = '\0';
	for (unsigned i = 0; i < rep->n; i++)
		if (rep->r[i].verdict != EMU_CHECK_AVAILABLE && (at = strlen(buf)) < len)
			emu_say(buf + at, len - at, "%s%s (%s)", n++ ? ", " : "",
				rep->r[i].row->name, emu_check_verdict_str(rep->r[i].verdict));
	return n;
}

static void print_header(FILE *f)
{
	struct utsname u;

	if (uname(&u))
		strcpy(u.release, "?");
	fprintf(f, "odpemud --check: what this host gives odpemud, libodpemu's clients and the "
		"tests\n(Linux %s, uid %u)\n\n", u.release, (unsigned)geteuid());
	fprintf(f, "%-26s %-9s %-10s %-13s %s\n", "FEATURE", "VERDICT", "FOR", "NEEDS", "SEEN");
}

void emu_check_print(FILE *f, const struct emu_check_report *rep)
{
	char names[1024], reason[1024];

	print_header(f);
	for (unsigned i = 0; i < rep->n; i++) {
		const struct emu_check_result *r = &rep->r[i];

		fprintf(f, "%-26s %-9s %-10s %-13s %s\n", r->row->name,
			emu_check_verdict_str(r->verdict), who_str(r->row->who), r->row->needs,
			r->detail);
	}
	if (absent_names(rep, names, sizeof(names)))
		fprintf(f, "\nNot available here:\n");
	for (unsigned i = 0; i < rep->n; i++) {
		const struct emu_check_result *r = &rep->r[i];

		if (r->verdict == EMU_CHECK_AVAILABLE)
			continue;
		fprintf(f, "  %s (%s)\n", r->row->name, emu_check_verdict_str(r->verdict));
		wrapped(f, 4, "used for: ", r->row->used_for);
		wrapped(f, 4, "without it: ", r->row->without);
		wrapped(f, 4, "remedy: ", r->row->remedy);
	}
	if (rep->fatal >= 0) {
		emu_check_reason(&rep->r[rep->fatal], reason, sizeof(reason));
		fprintf(f, "\nodpemud cannot run: %s\n", reason);
	} else {
		fprintf(f, "\nodpemud can run%s%s\n", names[0] ? ", degraded: " : ": every host "
			"feature is available", names);
	}
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_row(FILE *f, const struct emu_check_result *r)
{
	const char *keys[] = { "name", "verdict", "for", "needs", "seen", "used_for",
		"without", "remedy" };
	const char *vals[] = { r->row->name, emu_check_verdict_str(r->verdict),
		who_str(r->row->who), r->row->needs, r->detail, r->row->used_for,
		r->row->without, r->row->remedy };

	fputc('{', f);
	for (unsigned k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		fprintf(f, "%s\"%s\": ", k ? ", " : "", keys[k]);
		json_str(f, vals[k]);
	}
	fprintf(f, ", \"masked\": %s, \"fatal\": %s}", r->masked ? "true" : "false",
		r->row->fatal ? "true" : "false");
}

void emu_check_print_json(FILE *f, const struct emu_check_report *rep)
{
	char reason[1024] = "";
	struct utsname u;

	if (uname(&u))
		strcpy(u.release, "?");
	if (rep->fatal >= 0)
		emu_check_reason(&rep->r[rep->fatal], reason, sizeof(reason));
	fprintf(f, "{\"kernel\": ");
	json_str(f, u.release);
	fprintf(f, ", \"uid\": %u, \"can_run\": %s, \"reason\": ", (unsigned)geteuid(),
		rep->fatal < 0 ? "true" : "false");
	json_str(f, reason);
	fprintf(f, ", \"features\": [");
	for (unsigned i = 0; i < rep->n; i++) {
		fprintf(f, "%s\n  ", i ? "," : "");
		json_row(f, &rep->r[i]);
	}
	fprintf(f, "\n]}\n");
}

int emu_check_main(bool json)
{
	struct emu_check_report rep;
	char err[1024];

	if (emu_check_run(&rep, getenv("ODPEMU_MASK"), true, err, sizeof(err))) {
		fprintf(stderr, "odpemud: %s\n", err);
		return 2;
	}
	if (json)
		emu_check_print_json(stdout, &rep);
	else
		emu_check_print(stdout, &rep);
	fflush(stdout);
	if (rep.fatal >= 0) {
		emu_check_reason(&rep.r[rep.fatal], err, sizeof(err));
		fprintf(stderr, "odpemud: cannot run: %s\n", err);
		return 1;
	}
	return 0;
}

bool emu_check_available(const struct emu_check_report *rep, const char *name)
{
	const struct emu_check_result *r = emu_check_find(rep, name);

	return r && r->verdict == EMU_CHECK_AVAILABLE;
}

bool emu_check_loop_uring(const struct emu_check_report *rep, char *why, size_t len)
{
	static const char *const needs[] = { "io_uring", "io_uring_poll_multishot",
					     "io_uring_sync_cancel" };

	for (unsigned i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
		const struct emu_check_result *r = emu_check_find(rep, needs[i]);

		if (r && r->verdict != EMU_CHECK_AVAILABLE) {
			emu_check_reason(r, why, len);
			return false;
		}
	}
	return true;
}

int emu_check_log_start(struct emu_check_report *rep_out)
{
	struct emu_check_report *rep = rep_out, local;
	const char *mask = getenv("ODPEMU_MASK");
	char err[1024];
	unsigned n;

	if (!rep)
		rep = &local;
	if (emu_check_run(rep, mask, false, err, sizeof(err))) {
		emu_log(EMU_LOG_ERR, "%s", err);
		return -EINVAL;
	}
	if (!(n = absent_names(rep, err, sizeof(err))))
		emu_log(EMU_LOG_INFO, "host features: all available (odpemud --check: the table)");
	else
		emu_log(EMU_LOG_INFO, "host features: %u of %u not available: %s (odpemud "
			"--check: the table)", n, rep->n, err);
	for (unsigned i = 0; i < rep->n; i++) {
		const struct emu_check_result *r = &rep->r[i];

		if (r->verdict != EMU_CHECK_AVAILABLE)
			emu_log(r->verdict == EMU_CHECK_MISSING ? EMU_LOG_WARN : EMU_LOG_INFO,
				"%s: %s (%s): %s; remedy: %s", emu_check_verdict_str(r->verdict),
				r->row->name, r->detail, r->row->without, r->row->remedy);
	}
	if (mask && *mask)
		emu_log(EMU_LOG_INFO, "ODPEMU_MASK=%s: reported absent above; odpemud acts on "
			"the io_uring rows (the event loop) and procmap_query (check.h), not yet "
			"on the others", mask);
	return 0;
}
