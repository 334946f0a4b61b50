/* SPDX-License-Identifier: MIT */
/*
 * daemon — start, run and stop one odpemud. Start is a table of stages (resolve the
 * interface, the event loop, create the NIC, listen on the control socket, open the UDP
 * socket, start the fault thread, ...), each with its undo; stop undoes the stages done,
 * last first. In between, the loop:
 *
 *   dispatch io_uring completions (packets, requests, doorbells, fault answers, notifier),
 *   look by look, the loop's step before each (drain the clients' work rings into nic/,
 *   deliver due fault answers; due answers again before each datagram)
 *   -> a round: drain the rings -> deliver due fault answers -> release the packets the
 *   wire injector delayed or held -> run nic/'s timers -> CQ arms and notifications ->
 *   flush the UDP batch (nic/ writes each completion straight into its CQ ring:
 *   ports.cq_write).
 *
 * Then spin while there is work (spin.h: --poll-us, adaptive by default), else announce
 * sleep on the status page and wait in io_uring until a completion or the next deadline
 * (nic/ timers, fault delays, evictions, delayed packets). SIGTERM/SIGINT stop it: every QP goes to ERR
 * (clients get their flush completions), clients get DEVICE_FATAL, the socket is removed.
 * SIGUSR1 writes the device counters to the log.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "host/answers.h"
#include "check.h"
#include "counters.h"
#include "ctl.h"
#include "daemon.h"
#include "devnode.h"
#include "host/lease.h"
#include "host/orphan.h"
#include "host/persist.h"
#include "log.h"
#include "mtu.h"
#include "ports.h"
#include "rings.h"
#include "session.h"
#include "io/spin.h"

static void set_port(struct emu_daemon *d, bool up)
{
	if (d->port_up == up)
		return;
	d->port_up = up;
	emu_log(EMU_LOG_INFO, "port %s (%s)", up ? "ACTIVE" : "DOWN", d->netdev.name);
	for (struct emu_session *s = d->sessions; s; s = s->next)
		emu_session_event(s, up ? ODPEMU_EVENT_PORT_ACTIVE : ODPEMU_EVENT_PORT_ERR, 1);
}

static void on_netdev(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_daemon *d = (struct emu_daemon *)((char *)io - offsetof(struct emu_daemon, watch_io));
	int ch = emu_netdev_watch_process(d->watch, &d->netdev);

	if (ch > 0 && (ch & EMU_NETDEV_LINK_CHANGED))
		set_port(d, d->netdev.up);
	if (ch > 0 && (ch & EMU_NETDEV_ADDR_CHANGED)) {
		emu_log(EMU_LOG_INFO, "addresses of %s changed", d->netdev.name);
		for (struct emu_session *s = d->sessions; s; s = s->next)
			emu_session_event(s, ODPEMU_EVENT_GID_CHANGE, 1);
	}
	if (ch > 0 && (ch & EMU_NETDEV_MTU_CHANGED)) {
		/* ibv_query_port reads d->netdev; nic/ checks RTR against its own copy */
		nic_set_active_mtu(d->nic, (enum odpemu_mtu)d->netdev.active_mtu);
		emu_log(EMU_LOG_INFO, "MTU of %s is now %u, active MTU %u (QPs set up from now on "
			"see it)", d->netdev.name, d->netdev.mtu,
			roce_mtu_bytes((enum roce_mtu)d->netdev.active_mtu));
	}
	if (!(cqe->flags & IORING_CQE_F_MORE))
		emu_loop_poll_in(&d->loop, emu_netdev_watch_fd(d->watch), &d->watch_io);
}

static void on_signal(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_daemon *d = (struct emu_daemon *)((char *)io - offsetof(struct emu_daemon, signal_io));
	struct signalfd_siginfo si;

	if (read(d->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			emu_counters_dump(d);
		} else {
			emu_log(EMU_LOG_INFO, "signal %u: stopping", si.ssi_signo);
			d->loop.stop = true;
		}
	}
	if (!(cqe->flags & IORING_CQE_F_MORE))
		emu_loop_poll_in(&d->loop, d->signal_fd, &d->signal_io);
}

/* Fault answers due go to nic/ before the next packet: an answer resolved inline for an
 * earlier packet is due at once, and until nic/ has it the QP holds its packets behind the
 * fault (stall policy). A look can carry a window of 64 KiB messages, and one completion
 * of the socket a run of them (GRO): so before each datagram, not only before each look. */
static void deliver_due_answers(struct emu_daemon *d)
{
	if (d->answers.head)
		emu_answers_deliver(d, emu_now_ns());
}

/*
 * The loop's step (emu_loop_set_step), before each look at its completions: what nic/ must
 * have before the events of the look, packets among them, reach it.
 *  - The clients' work rings. A work request posted before a packet was sent may still be
 *    in its ring, its doorbell in this very look (or none: the loop did not sleep), and a
 *    UD receive posted in time must not find nic/ without its WQE and drop the datagram.
 *    The loop runs the step after the look's completions were posted, so whatever a client
 *    posted before the peer sent a packet of the look is taken here, once per look.
 *  - Fault answers due (deliver_due_answers).
 */
static void loop_step(void *arg)
{
	struct emu_daemon *d = arg;

	emu_rings_drain(d);
	deliver_due_answers(d);
}

/* The socket's deliver callback. Each datagram is an event of its own for the answers'
 * half of the loop's step; then it goes in, and only goes in (ports.h). */
static void on_datagram(void *arg, const uint8_t *pkt, size_t len, const struct nic_gid *src,
			uint16_t sport)
{
	struct emu_daemon *d = arg;

	deliver_due_answers(d);
	emu_ports_wire_in(d, pkt, len, src, sport, NULL);
}

/* A multicast group socket's deliver callback (io/mcast.h): the same, with the group. */
static void on_group_datagram(void *arg, const uint8_t *pkt, size_t len,
			      const struct nic_gid *src, uint16_t sport, const struct nic_gid *group)
{
	struct emu_daemon *d = arg;

	deliver_due_answers(d);
	emu_ports_wire_in(d, pkt, len, src, sport, group);
}

/* Resolve --netdev/--addr into the interface and this device's GID. */
static int resolve_netdev(struct emu_daemon *d)
{
	char err[256] = "";
	int rc;

	if (d->opt.addr)
		rc = emu_netdev_by_addr(d->opt.addr, &d->netdev, &d->gid, err, sizeof(err));
	else if ((rc = emu_netdev_by_name(d->opt.netdev, &d->netdev, err, sizeof(err))) == 0) {
		if (!d->netdev.ngids) {
			snprintf(err, sizeof(err), "%s has no address: add one with `ip addr add`",
				 d->netdev.name);
			rc = -EADDRNOTAVAIL;
		} else {
			d->gid = d->netdev.gids[0];	/* IPv4-mapped sort first */
		}
	}
	if (rc)
		emu_log(EMU_LOG_ERR, "%s", err);
	return rc;
}

/* Where this daemon's CM communication IDs start: random, so a restarted daemon does not
 * hand out IDs its predecessor's peers still remember (IBA 12.9.8 time-wait). */
static uint32_t comm_id_seed(void)
{
	uint32_t seed = 0;

	if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
		seed = (uint32_t)emu_now_ns() ^ (uint32_t)getpid() << 16;
	return seed;
}

static int create_nic(struct emu_daemon *d)
{
	struct nic_config cfg = { .gid = d->gid, .udp_sport = d->opt.port, .udp_dport = d->opt.port,
		.active_mtu = d->netdev.active_mtu, .fault_around = d->opt.fault_around };
	int rc;

	nic_personality_attr(d->opt.personality, &cfg.attr);
	emu_ports_init(d, &cfg.ports);
	if ((rc = nic_create(&cfg, &d->nic))) {
		emu_log(EMU_LOG_ERR, "cannot create the NIC: %s", strerror(-rc));
		return rc;
	}
	emu_cm_init(&d->cm, d->nic, &d->gid, comm_id_seed());
	return 0;
}

static void destroy_nic(struct emu_daemon *d)
{
	emu_cm_free(&d->cm);	/* the orphans' DREQs left with the socket's last flush */
	if (nic_destroy(d->nic))
		emu_log(EMU_LOG_WARN, "NIC objects left at exit");
	d->nic = NULL;
}

static int open_udp(struct emu_daemon *d)
{
	struct emu_udp_config cfg = { .local = d->gid, .port = d->opt.port,
		.ifindex = d->netdev.ifindex, .no_gso = d->opt.no_gso, .no_gro = d->opt.no_gro,
		.deliver = on_datagram, .deliver_arg = d };
	struct emu_mcast_config mc = { .iface = d->gid, .ifindex = d->netdev.ifindex,
		.port = d->opt.port, .deliver = on_group_datagram, .deliver_arg = d };
	char err[256] = "";
	int rc = emu_udp_open(&d->loop, &cfg, &d->udp, err, sizeof(err));

	if (!rc && (rc = emu_mcast_new(&d->loop, &mc, &d->mcast)))
		snprintf(err, sizeof(err), "out of memory for the multicast groups");
	if (rc)
		emu_log(EMU_LOG_ERR, "%s", err);
	else
		emu_log(EMU_LOG_INFO, "UDP receive: %s%s; send: %s", emu_udp_rx_path(d->udp),
			emu_udp_gro(d->udp) ? " with UDP_GRO" : "",
			emu_udp_gso(d->udp) ? "sendmmsg with UDP segmentation offload"
					    : "sendmmsg, datagram by datagram");
	return rc;
}

static void close_udp(struct emu_daemon *d)
{
	emu_mcast_free(d->mcast);
	d->mcast = NULL;
	emu_udp_flush(d->udp);
	emu_udp_close(d->udp);
	d->udp = NULL;
}

/* The status page clients map read-only: the sleeping flag of the doorbell protocol. */
static int create_status_page(struct emu_daemon *d)
{
	int rc;

	d->status_fd = memfd_create("odpemu-status", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (d->status_fd < 0 || ftruncate(d->status_fd, 4096) ||
	    (d->status = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, d->status_fd,
			      0)) == MAP_FAILED) {
		rc = -errno;
		emu_log(EMU_LOG_ERR, "cannot create the status page: %s", strerror(-rc));
		if (d->status_fd >= 0)
			close(d->status_fd);
		d->status_fd = -1;
		d->status = NULL;
		return rc;
	}
	d->status->magic = IPC_STATUS_MAGIC;
	d->status->version = IPC_VERSION;
	return 0;
}

static void remove_status_page(struct emu_daemon *d)
{
	munmap(d->status, 4096);
	close(d->status_fd);
	d->status = NULL;
	d->status_fd = -1;
}

static int block_signals(struct emu_daemon *d)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);	/* dump the counters to the log */
	if (sigprocmask(SIG_BLOCK, &set, NULL) == 0) {
		signal(SIGPIPE, SIG_IGN);
		d->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	}
	if (d->signal_fd < 0) {
		int rc = -errno;

		emu_log(EMU_LOG_ERR, "cannot take signals through a signalfd: %s", strerror(-rc));
		return rc;
	}
	d->signal_io.fn = on_signal;
	emu_loop_poll_in(&d->loop, d->signal_fd, &d->signal_io);
	return 0;
}

/* The mask stays: unblocked, a signal still pending would end the stopping daemon. */
static void close_signals(struct emu_daemon *d)
{
	close(d->signal_fd);
	d->signal_fd = -1;
}

#define KNOBS_KNOWN "fault-delay-us, fault-fail-rate, evict-rate, fault-policy, wire-loss, " \
	"wire-dup, wire-reorder, wire-delay-us, wire-corrupt, wire-match or wire-peer"

int emu_daemon_set_knob(struct emu_daemon *d, const char *key, const char *value, char *err,
			size_t errlen)
{
	int rc = emu_wire_rules_set(&d->wire.rules, key, value, err, errlen);

	if (rc != -ENOENT)
		return rc;
	if (!strcmp(key, "fault-policy")) {
		if (strcmp(value, "rnr") && strcmp(value, "stall")) {
			snprintf(err, errlen, "fault-policy '%s': want stall or rnr", value);
			return -EINVAL;
		}
		/* QPs keep the policy they were created with, as a QP attribute would. */
		d->default_policy = !strcmp(value, "rnr") ? NIC_FAULT_RNR : NIC_FAULT_STALL;
		return 0;
	}
	if (!strcmp(key, "fault-delay-us")) {
		struct emu_delay dl;

		rc = emu_delay_parse(value, &dl, err, errlen);

		if (!rc)
			emu_inject_set_delay(&d->inject, &dl);
		return rc;
	}
	if (!strcmp(key, "fault-fail-rate")) {
		double p;

		rc = emu_prob_parse(value, &p, err, errlen);

		if (!rc)
			emu_inject_set_fail_rate(&d->inject, p);
		return rc;
	}
	if (!strcmp(key, "evict-rate")) {
		double per_s;

		rc = emu_rate_parse(value, &per_s, err, errlen);

		if (!rc)
			emu_inject_set_evict_rate(&d->inject, per_s);
		return rc;
	}
	snprintf(err, errlen, "unknown knob '%s': " KNOBS_KNOWN, key);
	return -EINVAL;
}

int emu_daemon_get_knob(struct emu_daemon *d, const char *key, char *value, size_t len,
			char *err, size_t errlen)
{
	struct emu_delay dl;
	double fail;

	if (!emu_wire_rules_get(&d->wire.rules, key, value, len))
		return 0;
	emu_inject_get(&d->inject, &dl, &fail);
	if (!strcmp(key, "fault-policy"))
		snprintf(value, len, "%s", d->default_policy == NIC_FAULT_RNR ? "rnr" : "stall");
	else if (!strcmp(key, "fault-delay-us"))
		emu_delay_format(&dl, value, len);
	else if (!strcmp(key, "fault-fail-rate"))
		snprintf(value, len, "%g", fail);
	else if (!strcmp(key, "evict-rate"))
		snprintf(value, len, "%g/s", d->inject.evict_per_s);	/* loop thread's field */
	else {
		snprintf(err, errlen, "unknown knob '%s': " KNOBS_KNOWN, key);
		return -EINVAL;
	}
	return 0;
}

static int init_inject(struct emu_daemon *d)
{
	emu_inject_init(&d->inject, d->opt.seed);
	return 0;
}

static void fini_inject(struct emu_daemon *d)
{
	emu_inject_fini(&d->inject);
}

static int init_wire(struct emu_daemon *d)
{
	int rc = emu_wire_init(&d->wire, d->opt.seed, emu_ports_wire_out, d);

	if (rc)
		emu_log(EMU_LOG_ERR, "no memory for the wire injector");
	return rc;
}

static void fini_wire(struct emu_daemon *d)
{
	emu_wire_fini(&d->wire);	/* packets still delayed or held are lost */
}

/* The injection flags; a bad value is a usage error (exit 2, like a bad flag). */
static int apply_knobs(struct emu_daemon *d)
{
	const char *keys[] = { "fault-delay-us", "fault-fail-rate", "evict-rate", "fault-policy" };
	/* An explicit --fault-policy wins over the personality's default. */
	const char *policy = d->opt.fault_policy ? d->opt.fault_policy :
		d->opt.personality->fault_rnr ? "rnr" : "stall";
	const char *vals[] = { d->opt.fault_delay, d->opt.fault_fail_rate, d->opt.evict_rate,
		policy };

	char err[320];

	for (unsigned i = 0; i < 4; i++)
		if (vals[i] && emu_daemon_set_knob(d, keys[i], vals[i], err, sizeof(err))) {
			emu_log(EMU_LOG_ERR, "--%s: %s", keys[i], err);
			d->usage_error = true;
			return -EINVAL;
		}
	/* The wire flags in the order given: a later one may change another direction. */
	for (unsigned i = 0; i < d->opt.nwire; i++) {
		if (emu_daemon_set_knob(d, d->opt.wire[i].key, d->opt.wire[i].value, err,
					sizeof(err))) {
			emu_log(EMU_LOG_ERR, "--%s", err);
			d->usage_error = true;
			return -EINVAL;
		}
		emu_log(EMU_LOG_INFO, "wire injection: --%s %s", d->opt.wire[i].key,
			d->opt.wire[i].value);
	}
	return 0;
}

/* The loop --io asks for; auto: io_uring when the host report says its loop can run
 * (check.h emu_check_loop_uring, ODPEMU_MASK included), else epoll, and epoll too when the
 * ring cannot be set up after all. The choice and its reason are logged. */
static int init_loop(struct emu_daemon *d)
{
	bool uring = d->opt.io != EMU_IO_EPOLL;
	char why[600] = "--io epoll";
	int rc = 0;

	if (d->opt.io == EMU_IO_AUTO)
		uring = emu_check_loop_uring(&d->host, why, sizeof(why));
	if (uring && (rc = emu_loop_init(&d->loop, 256, EMU_LOOP_URING))) {
		emu_check_io_uring_reason(rc, why, sizeof(why));
		if (d->opt.io == EMU_IO_URING) {
			emu_log(EMU_LOG_ERR, "%s (--io uring: no other loop)", why);
			return rc;
		}
		uring = false;
	}
	if (!uring && (rc = emu_loop_init(&d->loop, 256, EMU_LOOP_EPOLL))) {
		emu_log(EMU_LOG_ERR, "the epoll event loop: %s", strerror(-rc));
		return rc;
	}
	if (uring)
		emu_log(EMU_LOG_INFO, "event loop: io_uring");
	else
		emu_log(EMU_LOG_INFO, "event loop: epoll (%s)", why);
	emu_loop_set_step(&d->loop, loop_step, d);
	return 0;
}

/* What the host gives and what degrades, once in the log (check.h); a bad ODPEMU_MASK is
 * a usage error like a bad flag. Before any thread starts: the probes fork. */
static int log_host_features(struct emu_daemon *d)
{
	int rc = emu_check_log_start(&d->host);

	if (rc)
		d->usage_error = true;
	return rc;
}

static void fini_loop(struct emu_daemon *d)
{
	emu_loop_fini(&d->loop);
}

static int start_persist(struct emu_daemon *d)
{
	int rc = emu_persist_start(d, &d->persist);

	if (rc)
		emu_log(EMU_LOG_ERR, "cannot start the persist thread: %s", strerror(-rc));
	return rc;
}

static void stop_persist(struct emu_daemon *d)
{
	emu_persist_stop(d->persist);
	d->persist = NULL;
}

static int start_fault_thread(struct emu_daemon *d)
{
	int rc = emu_fault_start(&d->inject, &d->fault);

	if (rc) {
		emu_log(EMU_LOG_ERR, "cannot start the fault handler: %s", strerror(-rc));
		return rc;
	}
	emu_fault_set_inline(d->fault, !d->opt.fault_thread);
	if (!emu_check_available(&d->host, "procmap_query"))
		emu_fault_set_text_maps(d->fault, true);	/* as before Linux 6.11 */
	d->fault_io.fn = emu_answers_rx;
	emu_loop_poll_in(&d->loop, emu_fault_eventfd(d->fault), &d->fault_io);
	return 0;
}

/* Every answer the thread gave goes to nic/, delay or not, so it can let its lingering MRs
 * go (what nic/ sends meanwhile leaves with the socket's last flush). */
static void stop_fault_thread(struct emu_daemon *d)
{
	emu_fault_stop(d->fault);
	emu_answers_drain_all(d);
	emu_fault_destroy(d->fault);
	d->fault = NULL;
}

/* Optional: without it the port state is the one read at start. */
static int follow_netdev(struct emu_daemon *d)
{
	if (emu_netdev_watch_open(&d->netdev, &d->watch) == 0) {
		d->watch_io.fn = on_netdev;
		emu_loop_poll_in(&d->loop, emu_netdev_watch_fd(d->watch), &d->watch_io);
	} else {
		emu_log(EMU_LOG_WARN, "cannot follow link changes of %s", d->netdev.name);
	}
	d->port_up = d->netdev.up;
	return 0;
}

static void unfollow_netdev(struct emu_daemon *d)
{
	if (d->watch)
		emu_netdev_watch_close(d->watch);
	d->watch = NULL;
}

static void close_ctl(struct emu_daemon *d)
{
	emu_ctl_unlink(d);
	close(d->listen_fd);
	d->listen_fd = -1;
}

/* Clients come once the loop runs; a stop ends them before anything else: the socket
 * removed (no new client finds it), every QP to ERR so clients get their flush
 * completions, DEVICE_FATAL to every client, their sessions closed and collected. */
static void end_clients(struct emu_daemon *d)
{
	struct nic_qp_attr err = { .qp_state = ODPEMU_QPS_ERR };

	emu_ctl_unlink(d);
	for (struct emu_session *s = d->sessions; s; s = s->next)
		emu_for_each_obj(qp, s, EMU_OBJ_QP)
			nic_qp_modify(qp->u.qp.qp, &err, ODPEMU_QP_STATE, emu_now_ns(), NULL);
	emu_rings_service_cqs(d);
	atomic_store(&d->status->fatal, 1);
	for (struct emu_session *s = d->sessions; s; s = s->next)
		emu_session_event(s, ODPEMU_EVENT_DEVICE_FATAL, 1);
	while (d->sessions)
		emu_session_close(d->sessions);
	emu_orphan_close_all(d);
	/* Closed sessions are freed by their polls' final completions: collect them, for up
	 * to two seconds (a loaded machine under a sanitizer can take well over 100 ms). */
	for (int i = 0; i < 200 && (d->closing_sessions || d->closing_orphans); i++)
		emu_loop_run_once(&d->loop, emu_now_ns() + 10000000);
	if (d->closing_sessions)
		emu_log(EMU_LOG_WARN, "%u closed sessions still wait for their polls at exit",
			d->closing_sessions);
}

/*
 * The start, in order, each stage with its undo. d->started counts the stages done, and
 * emu_daemon_stop undoes those, last first: a failed start undoes exactly what it did (a
 * stage that fails leaves nothing of its own behind). The control socket is claimed
 * before the UDP port, so a second daemon of the same name says so rather than that the
 * address is taken. The persist thread comes after the fault handler and goes before it,
 * once no QP waits on it; the fault handler's last answers go out with the UDP socket's
 * last flush; the NIC goes when nothing can call into it any more.
 */
static const struct start_stage {
	const char *name;
	int (*start)(struct emu_daemon *d);	/* 0 or -errno (logged); NULL: nothing to do */
	void (*undo)(struct emu_daemon *d);	/* NULL: nothing to undo */
} start_stages[] = {
	{ "fault injection", init_inject, fini_inject },
	{ "wire injection", init_wire, fini_wire },
	{ "injection flags", apply_knobs, NULL },
	{ "host features", log_host_features, NULL },
	{ "interface", resolve_netdev, NULL },
	{ "event loop", init_loop, fini_loop },
	{ "status page", create_status_page, remove_status_page },
	{ "signals", block_signals, close_signals },
	{ "NIC", create_nic, destroy_nic },
	{ "control socket", emu_ctl_listen, close_ctl },
	{ "UDP socket", open_udp, close_udp },
	{ "fault handler", start_fault_thread, stop_fault_thread },
	{ "persist thread", start_persist, stop_persist },
	{ "link watch", follow_netdev, unfollow_netdev },
	{ "clients", NULL, end_clients },
};

int emu_daemon_start(struct emu_daemon *d, const struct emu_options *opt)
{
	const size_t nstages = sizeof(start_stages) / sizeof(start_stages[0]);
	int rc;

	memset(d, 0, sizeof(*d));
	d->opt = *opt;
	d->listen_fd = d->signal_fd = d->status_fd = -1;
	d->next_client = 1;
	for (; d->started < nstages; d->started++) {
		const struct start_stage *st = &start_stages[d->started];

		if (st->start && (rc = st->start(d))) {
			emu_log(EMU_LOG_DEBUG, "start: %s failed", st->name);
			return rc;
		}
	}
	d->evict_last_ns = emu_now_ns();
	emu_devnode_ensure();
	emu_log(EMU_LOG_INFO, "%s ready: %s on %s, MTU %u (active %d), port %s, fault policy %s, "
		"personality %s", opt->name, d->sock_path, d->netdev.name, d->netdev.mtu,
		roce_mtu_bytes((enum roce_mtu)d->netdev.active_mtu),
		d->port_up ? "ACTIVE" : "DOWN", d->default_policy == NIC_FAULT_RNR ? "rnr" : "stall",
		opt->personality->name);
	return 0;
}

/* One round of work; true if anything moved. */
static bool work_round(struct emu_daemon *d)
{
	bool work;
	uint64_t now;

	emu_fault_forget_vmas(d->fault);
	work = emu_rings_drain(d);
	work |= emu_answers_poll(d);
	/* The clock after draining: a fault the drain raised was answered inline (due now),
	 * and must not wait for the next round, behind a yield to the other tasks. */
	now = emu_now_ns();
	if (emu_answers_next_due(d) <= now) {
		emu_answers_deliver(d, now);
		work = true;
	}
	if (emu_wire_next_due(&d->wire) <= now && emu_wire_tick(&d->wire, now))
		work = true;
	if (nic_next_deadline(d->nic) <= now)
		nic_tick(d->nic, now);
	if (emu_cm_next_deadline(&d->cm) <= now)
		emu_cm_tick(&d->cm, now);
	if (emu_lease_next_deadline(d) <= now)
		emu_lease_tick(d, now);
	emu_evict_tick(d, now);
	emu_rings_service_cqs(d);
	emu_udp_flush(d->udp);
	return work;
}

static uint64_t next_deadline(struct emu_daemon *d)
{
	uint64_t t = nic_next_deadline(d->nic), f = emu_answers_next_due(d);
	uint64_t e = emu_evict_next(d), c = emu_cm_next_deadline(&d->cm);
	uint64_t l = emu_lease_next_deadline(d), w = emu_wire_next_due(&d->wire);

	if (w < t)
		t = w;
	if (f < t)
		t = f;
	if (l < t)
		t = l;
	if (c < t)
		t = c;
	return e < t ? e : t;
}

/* Tell the clients (the status page) and the fault thread whether the loop is about to
 * sleep: then they must wake it (a doorbell, the thread's eventfd); else it will look. */
static void set_sleeping(struct emu_daemon *d, bool sleeping)
{
	atomic_store(&d->status->sleeping, sleeping ? 1 : 0);
	emu_fault_set_polling(d->fault, !sleeping);
}

int emu_daemon_run(struct emu_daemon *d)
{
	struct emu_spin spin;
	uint64_t busy_until = 0;

	emu_spin_init(&spin, d->opt.poll_us);
	while (!d->loop.stop) {
		uint64_t now = emu_now_ns(), deadline;
		int rc;

		if (work_round(d))
			busy_until = emu_spin_work(&spin, now);
		if (now < busy_until) {
			rc = emu_loop_run_once(&d->loop, 0);	/* peek, no sleep */
			/* Spinning: give the CPU to a runnable client or peer daemon first
			 * (two vCPUs, three busy tasks in a ping-pong). */
			if (rc == 0)
				sched_yield();
		} else {
			set_sleeping(d, true);
			/* Dekker with the client and the fault thread: they store their work,
			 * then look at whether we sleep; we store that we sleep, then look at
			 * their work again. */
			if (emu_rings_drain(d) || emu_fault_answers_waiting(d->fault)) {
				set_sleeping(d, false);
				busy_until = emu_spin_work(&spin, emu_now_ns());
				continue;
			}
			deadline = next_deadline(d);
			d->ctr.loop_sleeps++;
			rc = emu_loop_run_once(&d->loop, deadline);
			set_sleeping(d, false);
		}
		if (rc < 0) {
			emu_log(EMU_LOG_ERR, "event loop: %s", strerror(-rc));
			return rc;
		}
		if (rc > 0)
			busy_until = emu_spin_work(&spin, emu_now_ns());
	}
	return 0;
}

/* Undo the stages start got through, last first (the table above): a graceful stop once
 * the daemon ran (clients first), the cleanup of a failed start otherwise. */
void emu_daemon_stop(struct emu_daemon *d)
{
	while (d->started) {
		const struct start_stage *st = &start_stages[--d->started];

		if (st->undo) {
			emu_log(EMU_LOG_DEBUG, "stop: %s", st->name);
			st->undo(d);
		}
	}
}
