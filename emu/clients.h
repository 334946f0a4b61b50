/* SPDX-License-Identifier: MIT */
/*
 * clients — what each client process could give the daemon (CLIENT_INFO, ipc.h: its
 * userfaultfd's features, and whether the daemon can read its memory, tested at open the
 * way the DMA reads it) and the list of those records (CLIENTS: odpemu_query_clients,
 * `odpemu-ctl stat clients`). A failed test read is logged once with its remedy: the
 * client's ODP MRs would otherwise fail later as mem_read_errors with no word why.
 */
#ifndef ODPEMU_EMU_CLIENTS_H
#define ODPEMU_EMU_CLIENTS_H

#include "ctl.h"

int emu_op_client_info(struct emu_req *r);
int emu_op_clients(struct emu_req *r);

#endif
