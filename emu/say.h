/* SPDX-License-Identifier: MIT */
/* say — the error line a failing emu/ call hands back in the caller's buffer (err, errlen:
 * may be NULL/0, then nothing is written). */
#ifndef ODPEMU_EMU_SAY_H
#define ODPEMU_EMU_SAY_H

#include <stddef.h>

void emu_say(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
