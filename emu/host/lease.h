/* SPDX-License-Identifier: MIT */
/*
 * lease — MR leases, the daemon's side (docs/regcache.md; nic.h says what the NIC does).
 * A pinned MR registered with ODPEMU_ACCESS_LEASE by a process whose seccomp listener this
 * daemon holds (watch.h). When a held call of that process will change the mapping under
 * a coherent lease, the lease breaks (the NIC stops using the MR), MR_DECOHERENCE goes to
 * the process, and the call stays held — a "hold" — until every lease it broke is
 * acknowledged (IPC_LEASE_ACK, sent by the library's odpemu_ack_async_event) or the
 * lease timeout passes, which revokes the unacknowledged ones. IPC_RESTORE_MR (verbs.c)
 * re-points a broken lease at the new pages. Loop thread only.
 */
#ifndef ODPEMU_EMU_LEASE_H
#define ODPEMU_EMU_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "session.h"
#include "verbs.h"

/* A leased MR object, just registered: into the session's index. */
void emu_lease_attach(struct emu_obj *mr);
/* The MR goes (dereg, session end): out of the index, and out of its hold (which lets
 * its call run when nothing else holds it). */
void emu_lease_detach(struct emu_obj *mr);
/* A held call (notification id) of s will change [start, end): break the coherent leases
 * there, each joining *hold (made on the first). */
void emu_lease_change(struct emu_session *s, uint64_t id, uint64_t start, uint64_t end,
		      struct emu_hold **hold);
/* The session goes: its held calls run now (a process that closed its device lives on;
 * a dead one's calls are gone) and its holds are forgotten. */
void emu_lease_session_close(struct emu_session *s);
/* Revoke what timed out; the earliest deadline of any hold (UINT64_MAX: none). */
void emu_lease_tick(struct emu_daemon *d, uint64_t now);
uint64_t emu_lease_next_deadline(struct emu_daemon *d);
/* IPC_LEASE_ACK; NULL for other ops. */
emu_op_fn emu_lease_op(unsigned op);

#endif
