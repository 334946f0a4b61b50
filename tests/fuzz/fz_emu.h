/* SPDX-License-Identifier: MIT */
/*
 * fz_emu — what the daemon's fuzz targets (fuzz_ctl.c, fuzz_rings.c) share: a struct
 * emu_daemon as odpemud's start leaves it, with a real NIC behind ports that stand in for
 * the world, in-process and deterministic:
 *  - the wire: every packet the NIC sends is counted and must parse, with a good ICRC;
 *  - host memory: a client's memory is what fz_client_mem() registered for its id (ODP and
 *    by-address MRs, the host address being the client's own address as through
 *    process_vm_readv), or the daemon's mapping of a pinned MR's pages (PIN_TAG, as
 *    ports.c); any access outside both traps: the daemon reached memory that is not the
 *    client's;
 *  - page faults become jobs as ports.c makes them (a synchronous advise_mr counts them)
 *    and wait until fz_answer_faults() answers them through the daemon's own answer queue
 *    (answers.c), which replies to the advise;
 *  - events, CQ notifications and CQ writes (and QP1's MADs) go through odpemud's own
 *    ports (ports.c: session pipes, rings.c, the CM); a persistent FLUSH is answered as a
 *    global one (no persist port).
 * No thread, no socket to the network, no fault thread, no timers unless a target ticks.
 */
#ifndef ODPEMU_TESTS_FUZZ_FZ_EMU_H
#define ODPEMU_TESTS_FUZZ_FZ_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"

#define FZ_MAX_CLIENTS 4

/* Packets the NIC has sent since the start. */
extern uint64_t fz_sent;

/* The daemon's fields a running odpemud has (name, GID, status page, UDP statistics,
 * injection knobs): once per process. The loop (io_uring) only when with_loop: sessions
 * made by emu_session_accept need it to be closed. */
void fz_daemon_init(struct emu_daemon *d, bool with_loop);
/* A new NIC (and connection manager) on d; every input starts from one, so QP numbers and
 * keys repeat. */
void fz_nic_up(struct emu_daemon *d);
/* Fail what waits for an answer, then free the NIC: every object must be gone (traps if
 * the NIC refuses: something the sessions made outlived them). */
void fz_nic_down(struct emu_daemon *d);
/* The injection knobs back to their defaults (an INJECT request changes them). */
void fz_knobs_reset(struct emu_daemon *d);

/* Client id's memory, [base, base+len): the only host range outside pinned pages the NIC
 * may touch for it, and what page faults of its ODP MRs resolve to (identity). */
void fz_client_mem(uint32_t client, void *base, size_t len);
/* Answer every page request handed out (fail: all with -EFAULT; else those inside the
 * client's memory with its pages, the others -EFAULT), delivering through answers.c; the
 * NIC's resumed work may fault again: a bounded number of rounds. */
void fz_answer_faults(struct emu_daemon *d, bool fail);
/* Page requests handed out and not answered. */
unsigned fz_faults_pending(void);

/* Open file descriptors of the process (below a bound well above what the targets use),
 * and a list of them on stderr (what a leak check prints before it traps). */
#define FZ_MAX_FD 256
unsigned fz_count_fds(void);
void fz_list_fds(void);

#endif
