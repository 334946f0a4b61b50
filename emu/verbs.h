/* SPDX-License-Identifier: MIT */
/*
 * verbs — the handlers of the control ops (verbs.c: HELLO, queries, PD, MR, advise,
 * channels, CQs, injection; verbs_qp.c: SRQs and QPs; counters.h: COUNTERS; cm_ctl.c: the
 * connection manager's). Each checks
 * its body (exact size, handles of this session, values) and replies exactly once; the
 * return value is 0 or the error it replied.
 *
 * THREADING. The loop thread only.
 */
#ifndef ODPEMU_EMU_VERBS_H
#define ODPEMU_EMU_VERBS_H

#include <stdbool.h>

#include "ctl.h"

struct emu_obj;

typedef int (*emu_op_fn)(struct emu_req *r);

/* Is fd (received from a client) an anonymous inode of this kind ("[userfaultfd]",
 * "seccomp notify"), as /proc/self/fd names it? */
bool emu_fd_is_anon(int fd, const char *name);
/* The handler of an ipc op, or NULL for an unknown op. */
emu_op_fn emu_op_handler(unsigned op);

/* Destroy o and its nic/ object, dropping the refs it holds: 0, -EBUSY (another object
 * names it), or nic/'s error (o then stays). */
int emu_obj_destroy(struct emu_obj *o);
/* emu_obj_destroy's part for SRQs and QPs (verbs_qp.c). */
int emu_qp_srq_destroy(struct emu_obj *o);

/* verbs_qp.c */
int emu_op_create_srq(struct emu_req *r);
int emu_op_modify_srq(struct emu_req *r);
int emu_op_destroy_srq(struct emu_req *r);
int emu_op_create_qp(struct emu_req *r);
int emu_op_modify_qp(struct emu_req *r);
int emu_op_query_qp(struct emu_req *r);
int emu_op_destroy_qp(struct emu_req *r);
int emu_op_attach_mcast(struct emu_req *r);
int emu_op_detach_mcast(struct emu_req *r);

/* HELLO's work after its checks (IMPORT_DEVICE's too): the notifier fds of flags, the
 * doorbell page, the event pipe, the reply. */
int emu_hello_finish(struct emu_req *r, uint32_t flags);

/* import.c: the IMPORT_* ops (NULL for any other op), and HELLO's IPC_HELLO_HAS_CMD_FD:
 * record fd (the client's end) as s's identity, 0, or reply the error and return it. */
emu_op_fn emu_import_op(unsigned op);
int emu_import_take_cmd_fd(struct emu_req *r, int fd);

/* cm_ctl.c: the CM_* ops (NULL for any other op), and emu_obj_destroy's part for the CM
 * objects (a connection that is up is disconnected, one being set up rejected). */
emu_op_fn emu_cm_op(unsigned op);
void emu_cm_obj_destroy(struct emu_obj *o);

#endif
