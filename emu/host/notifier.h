/* SPDX-License-Identifier: MIT */
/*
 * notifier — the MMU notifier of odpemud: the client's userfaultfd events (UNMAP, REMOVE,
 * REMAP), relayed by its library, invalidate the NIC's translations of that range (ODP MRs
 * drop it, pinned MRs raise MR_DECOHERENCE). notifier.c says how and why.
 *
 * THREADING. The loop thread only.
 */
#ifndef ODPEMU_EMU_NOTIFIER_H
#define ODPEMU_EMU_NOTIFIER_H

#include <stdint.h>

struct emu_session;

/* Track unmaps/remaps of [va, va+len) of s: register its pages on the client's
 * userfaultfd (a warning when the kernel refuses; nothing without a userfaultfd). */
void emu_notifier_watch(struct emu_session *s, uint64_t va, uint64_t len);
/* The seccomp route (no userfaultfd: ipc.h IPC_HELLO_HAS_RELAY), for a call of s's
 * process that will change [start, end): invalidate our translations of it now, and send
 * the range back on s's relay socket for the library to forward to the process's other
 * devices. */
void emu_notifier_held_change(struct emu_session *s, uint64_t start, uint64_t end);
/* Apply the events relayed on s's socket so far (non-blocking). */
void emu_uffd_read(struct emu_session *s);

#endif
