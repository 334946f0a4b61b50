/* SPDX-License-Identifier: MIT */
/* mask — see mask.h. */
#include "mask.h"

#include <string.h>

bool ipc_mask_has(const char *spec, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = spec; p && *p; p += strcspn(p, ",")) {
		p += *p == ',';
		if (!strncmp(p, word, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}
