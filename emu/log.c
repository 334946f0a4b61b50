/* SPDX-License-Identifier: MIT */
/* log — one line per event on stderr: time since start, level, message. */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"
#include "io/loop.h"

int emu_log_level = EMU_LOG_INFO;

void emu_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	static uint64_t t0;
	uint64_t now = emu_now_ns();
	va_list ap;

	if (level > emu_log_level)
		return;
	if (!t0)
		t0 = now;
	fprintf(stderr, "odpemud [%8.3f] %s: ", (double)(now - t0) / 1e9, names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
