/* SPDX-License-Identifier: MIT */
/* QP attribute conversion between odpemu.h and ipc.h (qp_attr.c). */
#ifndef ODPEMU_LIB_QP_ATTR_H
#define ODPEMU_LIB_QP_ATTR_H

#include "ipc.h"
#include "odpemu/odpemu.h"

void lib_qp_attr_to_ipc(const struct odpemu_qp_attr *a, int mask, struct ipc_qp_attr *o);
void lib_qp_attr_from_ipc(const struct ipc_qp_attr *i, struct odpemu_qp_attr *a);

#endif
