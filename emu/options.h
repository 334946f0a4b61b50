/* SPDX-License-Identifier: MIT */
/* options — odpemud's command line: parsed and checked before anything starts. */
#ifndef ODPEMU_EMU_OPTIONS_H
#define ODPEMU_EMU_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "personality.h"

#define EMU_OPT_WIRE_MAX 32	/* --wire-* flags on one command line */

/* --io: which event loop (io/loop.h KINDS) */
enum emu_io_choice { EMU_IO_AUTO, EMU_IO_URING, EMU_IO_EPOLL };

struct emu_options {
	const char *name;		/* --name: device name, socket <rundir>/<name>.sock */
	const char *netdev;		/* --netdev IFNAME */
	const char *addr;		/* --addr IP */
	uint16_t port;			/* --port (4791) */
	const struct nic_personality *personality; /* --personality (default odpemu) */
	const char *fault_policy;	/* --fault-policy stall|rnr (NULL: the personality's) */
	const char *fault_delay;	/* --fault-delay-us SPEC (checked by inject.c) */
	const char *fault_fail_rate;	/* --fault-fail-rate P */
	const char *evict_rate;		/* --evict-rate N/s */
	/* --wire-*: the wire injector's flags in the order given (checked by wire.c) */
	struct {
		const char *key, *value;	/* "wire-loss", "0.02" */
	} wire[EMU_OPT_WIRE_MAX];
	unsigned nwire;
	uint64_t seed;			/* --seed */
	bool foreground;		/* --foreground */
	int log_level;			/* --log-level err|warn|info|debug */
	const char *rundir;		/* --rundir (else $ODPEMU_RUNDIR or the default) */
	const char *group;		/* --group as given (NULL: the daemon's own group) */
	uint32_t group_gid;		/* --group: the control socket's group */
	int poll_us;			/* --poll-us: spin this long before sleeping; -1:
					 * adaptive (the default, poll.h) */
	uint64_t fault_around;		/* --fault-around BYTES (0: nic default) */
	uint64_t lease_timeout_ms;	/* --lease-timeout-ms: how long a change waits */
	bool no_gso;			/* --no-gso: no UDP segmentation offload */
	bool no_gro;			/* --no-gro: no UDP_GRO on receive */
	bool fault_thread;		/* --fault-thread: no inline fault resolution */
	enum emu_io_choice io;		/* --io auto|uring|epoll */
	bool check;			/* --check: print the host feature report, exit */
	bool json;			/* --json: that report as JSON (with --check only) */
};

/* Parse argv. 0: run; 1: done (--help/--version printed, exit 0); -1: error printed to
 * stderr (exit 2). */
int emu_options_parse(int argc, char **argv, struct emu_options *o);
/* The run directory of the control sockets: --rundir, $ODPEMU_RUNDIR, /run/odpemu as
 * root, $XDG_RUNTIME_DIR/odpemu otherwise (/tmp/odpemu-UID without XDG_RUNTIME_DIR). */
const char *emu_rundir(const struct emu_options *o, char *buf, unsigned len);

#endif
