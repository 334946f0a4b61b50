/* SPDX-License-Identifier: MIT */
/* proto/: the RoCEv2 wire layer. One include for users of the whole layer. */
#ifndef ODPEMU_PROTO_ROCE_H
#define ODPEMU_PROTO_ROCE_H

#include "aeth.h"
#include "headers.h"
#include "icrc.h"
#include "mtu.h"
#include "opcode.h"
#include "packet.h"
#include "psn.h"
#include "reason.h"

#endif
