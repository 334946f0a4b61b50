/* SPDX-License-Identifier: MIT */
/*
 * mask — ODPEMU_MASK, the environment profiles' test switch (emu/check.h): a comma list
 * of the host report's row names that the daemon and the library treat as absent. Both
 * sides read it with this one parser; the daemon's report (emu/check.c) also checks the
 * names are known.
 */
#ifndef ODPEMU_IPC_MASK_H
#define ODPEMU_IPC_MASK_H

#include <stdbool.h>

/* Does the comma list spec (NULL: empty) hold word as a whole item? */
bool ipc_mask_has(const char *spec, const char *word);

#endif
