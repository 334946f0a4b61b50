/* SPDX-License-Identifier: MIT */
/* host_op — the daemon's host feature report over the control socket (HOST_REPORT). */
#ifndef ODPEMU_EMU_HOST_OP_H
#define ODPEMU_EMU_HOST_OP_H

#include "ctl.h"

int emu_op_host_report(struct emu_req *r);

#endif
