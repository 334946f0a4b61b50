/* SPDX-License-Identifier: MIT */
/* log — odpemud's log: one line per event on stderr (the log file once detached), with the
 * time since the first line and the level. Lines above emu_log_level (--log-level) are
 * dropped. For the loop thread (the first line's time is kept unlocked). */
#ifndef ODPEMU_EMU_LOG_H
#define ODPEMU_EMU_LOG_H

enum { EMU_LOG_ERR = 0, EMU_LOG_WARN = 1, EMU_LOG_INFO = 2, EMU_LOG_DEBUG = 3 };
extern int emu_log_level;

void emu_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
