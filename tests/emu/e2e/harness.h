/* SPDX-License-Identifier: MIT */
/*
 * harness — two test hosts, each with a real odpemud, for the emu integration tests.
 *
 * As root: two hosts of odpemu-cluster (tools/, the one implementation of test hosts for
 * the demo, these tests and the virtual cluster): network namespaces e<pid>-h1 and -h2 on
 * a bridge of their own (MTU 9000, eth0 inside), addresses 10.201.N.1 and 10.201.N.2
 * (fd00:10:201:N::1 and ::2 with $ODPEMU_TEST_IPV6), one daemon in each, started here
 * with the test's flags. Otherwise: 127.0.0.1 and 127.0.0.2 on loopback, on a
 * UDP port of this test's own (tests run in parallel). The control sockets go to a fresh
 * run directory ($ODPEMU_RUNDIR is set to it), where unix sockets are reachable from any
 * namespace, so one test process can drive both devices.
 *
 * Everything is torn down at exit, on SIGTERM/SIGINT (meson's timeout) and on the
 * harness's own watchdog (SIGALRM); daemons also get SIGTERM if the test dies
 * (PR_SET_PDEATHSIG). Every wait is bounded.
 *
 * A test program is a struct h_test (name, seed, watchdog, daemon flags, which devices to
 * open) and a body; its main() is one call of h_main, which runs the frame around it.
 */
#ifndef ODPEMU_TESTS_HARNESS_H
#define ODPEMU_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "odpemu/odpemu.h"
#include "t.h"

struct h_host {
	char name[16];		/* device name: odpa, odpb */
	char addr[64];		/* its IP address */
	char ns[32];		/* network namespace ("" without) */
	char dev[16];		/* its interface, eth0 (namespaces only) */
	char log[256];		/* the daemon's stderr */
	pid_t pid;
};

struct h_env {
	char rundir[128];
	bool netns;
	bool ipv6;		/* $ODPEMU_TEST_IPV6: fd00:10:201:N::1 and ::2 (namespaces only) */
	int drop_pct;		/* $ODPEMU_TEST_DROP_PCT: random drop on both outputs */
	int dup_pct;		/* $ODPEMU_TEST_DUP_PCT: random duplication on both outputs */
	unsigned port;
	struct h_host host[2];
	/* Set by h_main for the body: */
	struct odpemu_context *ctx[2];	/* device i if h_test.open asked for it, else NULL */
	struct t_rng rng;		/* seeded by t_seed (h_test.seed unless --seed/$T_SEED) */
};

/* Bring up two hosts and their daemons; extra[i] are more odpemud flags for host i (NULL-
 * terminated, may be NULL). Exits the test with an error message on failure. watchdog_s
 * bounds the whole test. */
void h_up(struct h_env *e, const char *const *extra_a, const char *const *extra_b,
	  unsigned watchdog_s);
/* Packets the random drop ($ODPEMU_TEST_DROP_PCT) has dropped on both hosts so far. */
unsigned long long h_dropped(struct h_env *e);
/* Packets the random duplication ($ODPEMU_TEST_DUP_PCT) has sent twice so far. */
unsigned long long h_duplicated(struct h_env *e);
/* (Re)start host i's daemon; 0 or -1 (with the log printed). */
int h_daemon_start(struct h_env *e, int i, const char *const *extra);
/* Send sig to host i's daemon and, for SIGTERM/SIGKILL, reap it (bounded). Returns its
 * wait status or -1. */
int h_daemon_stop(struct h_env *e, int i, int sig);
/* Stop both daemons (SIGTERM), remove the hosts; the number of daemons that did not exit
 * 0 (a sanitizer report, a leak, a crash). */
int h_down(struct h_env *e);
/* Run argv (PATH searched) to completion, killed after alarm_s seconds; its stdout and
 * stderr in out (NUL-terminated, cut at outlen - 1). Returns the wait status, -1 when no
 * pipe could be made. */
int h_capture(const char *const *argv, unsigned alarm_s, char *out, size_t outlen);
/* Run odpemud with args in host i's namespace to completion (bounded: 10 s), its output in
 * out; returns the wait status. */
int h_run(struct h_env *e, int i, const char *const *args, char *out, size_t outlen);
const char *h_sock_path(struct h_env *e, int i, char *buf, size_t len);
/* The device of host i, opened. Exits on failure. */
struct odpemu_context *h_open(struct h_env *e, int i);
/* Print the tail of host i's daemon log (for failures). */
void h_show_log(struct h_env *e, int i);

/* ---- one test program ---- */

/* Which devices h_main opens before the body (and closes after it). */
enum h_open { H_OPEN_NONE = 0, H_OPEN_A = 1, H_OPEN_B = 2, H_OPEN_BOTH = 3 };

struct h_test {
	const char *name;		/* in t_done's summary line: "emu-verbs" */
	uint64_t seed;			/* t_seed's default; 0: no random numbers, no seed */
	unsigned watchdog_s;		/* bounds the whole test (h_up); 0: 300 */
	const char *const *daemon_args[2];	/* more odpemud flags for host 0 and 1 (h_up) */
	enum h_open open;		/* devices in e->ctx before the body */
	void (*body)(struct h_env *e);
};

/* The frame of every e2e test, as main's return value: seed, h_up, open the devices of
 * t->open, run t->body, close every device still in e->ctx (a body that closes one
 * itself sets it NULL), print both daemon logs if a check failed, h_down (checked: the
 * daemons must stop cleanly), t_done. A body gives up on a failed check by returning. */
int h_main(int argc, char **argv, const struct h_test *t);
/* In a body: the test cannot run on this machine. Prints the message (what is missing and
 * how to get it), tears the hosts down and exits 77. */
void h_skip(struct h_env *e, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* A fresh, never-touched buffer of len bytes (page multiple) followed by a PROT_NONE guard
 * page, so its VMA is its own (the kernel cannot merge it with a neighbour, and each
 * device's notifier watches its own buffers). Free with munmap(p, len + 4096). Exits on
 * failure. */
uint8_t *h_cold(size_t len);

/* ---- a connected RC (or UD) QP pair across the two hosts ---- */
struct h_side {
	struct odpemu_context *ctx;
	struct odpemu_pd *pd;
	struct odpemu_cq *cq;
	struct odpemu_qp *qp;
	union odpemu_gid gid;
};
struct h_pair {
	struct h_side s[2];
};
struct h_qp_opts {
	enum odpemu_qp_type type;	/* 0: RC */
	enum odpemu_fault_policy policy;
	int rnr_retry;			/* -1: 7 */
	int retry_cnt;			/* -1: 7 */
	int timeout;			/* -1: 14 (67 ms) */
	int min_rnr_timer;		/* -1: 1 (10 µs) */
	unsigned depth;			/* 0: 256 */
};
void h_qp_opts_default(struct h_qp_opts *o);
/* Create PD, CQ, QP on both hosts (contexts opened if NULL) and connect them (RTS).
 * 0 or -1 with a message. */
int h_pair_up(struct h_env *e, struct h_pair *p, const struct h_qp_opts *o);
void h_pair_down(struct h_pair *p);
/* The halves of h_pair_up, for pairs split across processes: create PD/CQ/QP on s->ctx,
 * then connect to the peer's QP (RTS). 0 or -1. */
int h_side_up(struct h_side *s, const struct h_qp_opts *o);
int h_side_connect(struct h_side *s, uint32_t peer_qpn, const union odpemu_gid *peer_gid,
		   const struct h_qp_opts *o);
/* Poll cq until n completions are in wc or timeout_ms passes; returns how many came. */
int h_poll(struct odpemu_cq *cq, struct odpemu_wc *wc, int n, int timeout_ms);
/* Another address on host i, where no daemon listens (for a test that plays a peer on
 * the wire): added to its interface in the namespaces, 127.0.0.3 (host 0) / 127.0.0.4
 * without them. Written into addr; exits the test if it cannot be added. */
void h_extra_addr(struct h_env *e, int i, char *addr, size_t len);
/* The GID of an IP address ("10.0.0.1": IPv4-mapped; "fd00::1"). 0 or -1. */
int h_gid_of(const char *addr, union odpemu_gid *gid);
/* A socket(domain, type, 0) in host i's network namespace (the caller's without
 * namespaces); -errno on failure. The caller stays in its own namespace. */
int h_socket_in(struct h_env *e, int i, int domain, int type);
/* One device counter by name (device scope), or UINT64_MAX if missing. */
unsigned long long h_counter(struct odpemu_context *ctx, enum odpemu_counter_scope scope,
			     uint32_t id, const char *name);
/* Run fn(e) in a forked child and check that its checks passed (they print their own
 * failures): for what stays on the process that does it, a seccomp filter above all. */
void h_checks_in_child(struct h_env *e, void (*fn)(struct h_env *e), const char *what);
/* What the daemon's host report says of one feature (odpemu_query_host; ODPEMU_MASK
 * included): ODPEMU_HOST_AVAILABLE, _FALLBACK or _MISSING; -1 if the row is not there.
 * Tests assert the behaviour the report promises, not that of this machine. */
int h_host_verdict(struct odpemu_context *ctx, const char *feature);

#endif
