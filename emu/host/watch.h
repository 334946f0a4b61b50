/* SPDX-License-Identifier: MIT */
/*
 * watch — the mapping-change notifier ("if anything in X..Y changes, write 1 to Z";
 * docs/regcache.md). A client process that creates a watch installs a seccomp filter
 * that holds its mapping-changing calls (munmap, mremap, discarding madvise, mmap with
 * MAP_FIXED, brk, shmdt, shmat with SHM_REMAP) as user notifications, and hands the filter's listener to its daemon
 * (IPC_SUPERVISE). For each held call this daemon computes the range it will change,
 * writes a non-zero word to the Z of every watch of that process the range touches, and
 * only then lets the call run (SECCOMP_USER_NOTIF_FLAG_CONTINUE): Z is set before the
 * call returns, for every thread of the process. Loop thread only.
 */
#ifndef ODPEMU_EMU_WATCH_H
#define ODPEMU_EMU_WATCH_H

#include "session.h"
#include "verbs.h"

/* IPC_SUPERVISE, IPC_WATCH_CREATE, IPC_WATCH_DESTROY; NULL for other ops. */
emu_op_fn emu_watch_op(unsigned op);
/* The listener is readable: answer the held calls (or hold them: lease.h). */
void emu_watch_serve(struct emu_session *s);
/* Let held call `id` run (SECCOMP_USER_NOTIF_FLAG_CONTINUE). */
void emu_watch_answer(struct emu_session *s, uint64_t id);

#endif
