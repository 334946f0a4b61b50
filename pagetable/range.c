/* SPDX-License-Identifier: MIT */
/* Argument checks at the API boundary: a byte range inside the domain's window. */
#include "iopt_int.h"

/* [va, va+len) rounded out to pages into [*s, *e). -EINVAL for len 0 or wrap-around,
 * -ERANGE outside the window. */
int iopt_check_range(const struct iopt *d, uint64_t va, uint64_t len, uint64_t *s, uint64_t *e)
{
	if (len == 0 || va + len < va)
		return -EINVAL;
	if (va < d->start || va + len > d->end)
		return -ERANGE;
	*s = va & ~IOPT_PAGE_MASK;
	*e = (va + len + IOPT_PAGE_MASK) & ~IOPT_PAGE_MASK;
	return 0;
}
