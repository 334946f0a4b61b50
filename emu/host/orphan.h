/* SPDX-License-Identifier: MIT */
/*
 * orphan — a client's seccomp listener (watch.h) that outlives its session: the process
 * closed the device whose daemon supervises it, and lives on. Nothing can remove its
 * filter, so somebody must keep answering its held calls, and it must not be a thread of
 * the process itself: a process that stops all its threads (LeakSanitizer at exit, a
 * debugger) and then unmaps from another task would wait for itself. So the daemon keeps
 * the listener and lets every held call run at once, until the process exits (its
 * pidfd). Loop thread only.
 */
#ifndef ODPEMU_EMU_ORPHAN_H
#define ODPEMU_EMU_ORPHAN_H

#include <sys/types.h>

struct emu_daemon;

/* Keep answering listener (taken) until process pid exits. Without a pidfd (the process
 * is gone already) or memory, the listener is closed: nobody is left to answer. */
void emu_orphan_adopt(struct emu_daemon *d, int listener, pid_t pid);
/* Daemon stop: close every orphan (the library's fallback answers once we are gone). */
void emu_orphan_close_all(struct emu_daemon *d);

#endif
