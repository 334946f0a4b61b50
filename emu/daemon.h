/* SPDX-License-Identifier: MIT */
/*
 * daemon — odpemud's state: one soft-HCA (struct nic) bound to the real world, and its
 * lifecycle: start (a list of stages), run (the loop's rounds), stop.
 *
 * One thread (the loop) owns everything here and is the only one that enters nic/. The
 * fault handler thread (fault.h) only resolves page requests and hands answers back
 * through its queue; the loop delivers them when their injected delay is over.
 *
 * The modules around it: sessions and their objects (session.h) on the control socket
 * (ctl.h, verbs.h); shared-memory rings (rings.h); nic/'s ports (ports.h); the MMU notifier
 * (notifier.h); the fault answers' scheduler (answers.h); eviction (evict.h); wire
 * injection (wire.h); counters (counters.h); the log (log.h).
 */
#ifndef ODPEMU_EMU_DAEMON_H
#define ODPEMU_EMU_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/answers.h"
#include "check.h"
#include "cm/cm.h"
#include "host/evict.h"
#include "host/fault.h"
#include "inject/inject.h"
#include "ipc.h"
#include "lathist.h"
#include "io/loop.h"
#include "io/netdev.h"
#include "nic.h"
#include "options.h"
#include "rings.h"
#include "io/mcast.h"
#include "io/udp.h"
#include "inject/wire.h"

struct emu_session;

struct emu_orphan;
struct emu_persist;

struct emu_daemon {
	struct emu_options opt;
	struct emu_loop loop;
	struct emu_check_report host;	/* what the host gives (check.h), probed at start */
	struct nic *nic;
	struct emu_udp *udp;
	struct emu_mcast *mcast;	/* multicast group sockets (io/mcast.h) */
	int mcast_err;			/* the last group join's result (ports.c) */
	struct emu_netdev netdev;
	struct emu_netdev_watch *watch;
	struct emu_io watch_io, listen_io, fault_io, signal_io;
	struct nic_gid gid;
	struct emu_inject inject;
	struct emu_wire wire;		/* wire injection: --wire-* (wire.h) */
	struct emu_fault *fault;
	struct emu_answers answers;	/* answered jobs waiting for their injected delay */
	struct emu_cm cm;		/* the connection manager on QP1 */
	int listen_fd, signal_fd, status_fd;
	struct ipc_status_page *status;
	char sock_path[256];
	struct emu_session *sessions;
	struct emu_orphan *orphans;	/* listeners of closed sessions (orphan.h) */
	struct emu_persist *persist;	/* persistent FLUSHes (persist.h) */
	unsigned closing_orphans;	/* closed, waiting for their polls to end */
	uint32_t next_client;
	unsigned nsessions;
	unsigned closing_sessions;	/* closed, waiting for their polls to end */
	struct emu_session *last_session;	/* ports.c's lookup cache */
	bool port_up;
	bool usage_error;		/* start failed on a bad flag value (exit 2) */
	unsigned started;		/* stages of the start done: what a stop undoes
					 * (daemon.c, start_stages) */
	enum nic_fault_policy default_policy;
	uint64_t evict_last_ns;
	struct emu_fill fills[EMU_FILLS];
	unsigned nfills;
	struct emu_drain_scratch drain;	/* rings.c's, for one send queue at a time */
	/* counters of the daemon itself (nic/ and udp keep their own) */
	struct {
		uint64_t sessions_total, requests, request_errors, ring_bad_wqe;
		uint64_t mem_read_errors, mem_write_errors, evictions, uffd_events;
		uint64_t invalidations_host, events_sent, events_dropped;
		uint64_t mrs_pinned_shared, mrs_pinned_by_address;
		uint64_t fault_deliver_wait_ns;	/* answer due -> delivered to nic/ */
		uint64_t loop_sleeps;		/* the loop stopped spinning and waited */
		uint64_t watch_changes;		/* mapping changes held for the notifier */
		/* the seccomp route (notifier.h): held changes applied here; ranges that could
		 * not be sent back for the process's other devices */
		uint64_t seccomp_invalidations, seccomp_relay_drops;
		uint64_t watch_fired, watch_errors;	/* Z words written; writes that failed */
		uint64_t lease_breaks, lease_acks;	/* leases broken; broken ones acknowledged */
		uint64_t lease_revocations, lease_restores;	/* timed out; restored */
		uint64_t fault_lat_us[24];	/* fault submit -> answer delivered, log2 µs */
		struct emu_lathist fault_lat_ns;	/* the same, log-linear ns (lathist.h) */
	} ctr;
	/* What destroyed MRs and QPs had counted, so device counters never go down. */
	struct iopt_counters retired_mr;
	struct nic_qp_counters retired_qp;
};

/* Start the daemon of opt, stage by stage (each logs its failure with the fix): 0 or
 * -errno; then d->usage_error says whether a flag value was bad. Call emu_daemon_stop
 * either way: it undoes the stages that were done, in reverse. */
int emu_daemon_start(struct emu_daemon *d, const struct emu_options *opt);
/* Loop until SIGTERM/SIGINT: 0, or -errno of the event loop. */
int emu_daemon_run(struct emu_daemon *d);
/* Undo the start's stages, last first. After a start that succeeded that is a graceful
 * stop: the socket removed, QPs to ERR (clients get their flush completions), DEVICE_FATAL
 * to every client; then the rest freed. */
void emu_daemon_stop(struct emu_daemon *d);

/* Change an injection knob ("fault-delay-us", ..., "wire-loss", ...): 0 or -EINVAL with
 * err. */
int emu_daemon_set_knob(struct emu_daemon *d, const char *key, const char *value, char *err,
			size_t errlen);
/* The current value of a knob in its flag's syntax: 0 or -EINVAL with err. */
int emu_daemon_get_knob(struct emu_daemon *d, const char *key, char *value, size_t len,
			char *err, size_t errlen);

#endif
