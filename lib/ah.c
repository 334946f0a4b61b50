/* SPDX-License-Identifier: MIT */
/* Address handles (UD): purely local. A UD send copies the destination GID into its WQE,
 * so the daemon never needs to know the AH. */
#include <stdlib.h>

#include "lib_int.h"

ODPEMU_EXPORT struct odpemu_ah *odpemu_create_ah(struct odpemu_pd *pd, struct odpemu_ah_attr *attr)
{
	struct odpemu_ah *ah;

	if (!pd || !attr || !attr->is_global) {	/* RoCE routes by GID only */
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->context = pd->context;
	ah->pd = pd;
	ah->attr = *attr;
	return ah;
}

ODPEMU_EXPORT int odpemu_destroy_ah(struct odpemu_ah *ah)
{
	if (!ah)
		return lib_fail(EINVAL);
	free(ah);
	return 0;
}
