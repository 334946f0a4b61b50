/* SPDX-License-Identifier: MIT */
/* devnode — the device node clients' accessibility checks look for (ipc.h:
 * IPC_DEVNODE_NAME), made once per host at start. */
#ifndef ODPEMU_EMU_DEVNODE_H
#define ODPEMU_EMU_DEVNODE_H

/* Make sure IPC_DEVNODE_DIR/IPC_DEVNODE_NAME exists (a warning if it cannot). */
void emu_devnode_ensure(void);

#endif
