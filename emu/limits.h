/* SPDX-License-Identifier: MIT */
/*
 * limits — the words for a limit a request ran into, so the client's errno comes with a
 * line that names it (odpemu_last_error) and the daemon's log says it once per session:
 *  - the device's own (nic/ refuses with -ENOSPC): max_qp, max_mr, max_cq, max_pd,
 *    max_srq (odpemu-ctl devinfo -v prints them), and the handles of one session;
 *  - the host's, met when the daemon maps or creates a file for an object: every ring
 *    and every pinned MR is a mapping of the daemon's (vm.max_map_count), every ring a
 *    memfd while it is handed over (RLIMIT_NOFILE).
 * The client sees ENOMEM for all of them, as ibv_create_qp and ibv_reg_mr report a
 * device out of resources.
 *
 * THREADING. The loop thread only.
 */
#ifndef ODPEMU_EMU_LIMITS_H
#define ODPEMU_EMU_LIMITS_H

#include "ctl.h"

enum emu_limit {
	EMU_LIMIT_QP, EMU_LIMIT_MR, EMU_LIMIT_CQ, EMU_LIMIT_PD, EMU_LIMIT_SRQ, EMU_LIMIT_MW,
	EMU_LIMIT_HANDLES, EMU_LIMIT_MAPS, EMU_LIMIT_FILES,
};

/* Reply to r that `op` ran into limit l (logged once per session): returns -ENOMEM. */
int emu_reply_limit(struct emu_req *r, const char *op, enum emu_limit l);
/* Reply to r that `op` found no handle for a new object (emu_obj_new returned NULL):
 * the session's limit, or the daemon out of memory. Returns -ENOMEM. */
int emu_reply_no_obj(struct emu_req *r, const char *op);
/* emu_reply_limit for nic/'s -ENOSPC (a device limit), else the error with nic/'s words
 * (why, or the errno's): returns the error replied. */
int emu_reply_nic(struct emu_req *r, const char *op, int err, enum emu_limit l,
		  const char *why);
/* Reply to r that `op` failed creating or mapping a file (what: "ring", "pinned pages")
 * with -err: a host limit if it is one (vm.max_map_count for ENOMEM from mmap,
 * RLIMIT_NOFILE for EMFILE), else the error as it is. Returns the error replied. */
int emu_reply_host_err(struct emu_req *r, const char *op, const char *what, int err);

#endif
