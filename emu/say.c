/* SPDX-License-Identifier: MIT */
/* say — see say.h. */
#include "say.h"

#include <stdarg.h>
#include <stdio.h>

void emu_say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
