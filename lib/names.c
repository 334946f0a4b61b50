/* SPDX-License-Identifier: MIT */
/* Names of the numbers a user meets in completions and port attributes. */
#include "lib_int.h"

/* ODPEMU_VENDOR_ERRS (odpemu/verbs_types.h): the value is the index. */
static const char *const vendor_errs[] = {
#define VENDOR_ERR_NAME_(n) #n,
	ODPEMU_VENDOR_ERRS(VENDOR_ERR_NAME_)
#undef VENDOR_ERR_NAME_
};

ODPEMU_EXPORT const char *odpemu_vendor_err_str(uint32_t vendor_err)
{
	return vendor_err < sizeof(vendor_errs) / sizeof(vendor_errs[0]) ?
	       vendor_errs[vendor_err] : "UNKNOWN";
}

ODPEMU_EXPORT const char *odpemu_mtu_str(enum odpemu_mtu mtu)
{
	switch (mtu) {
	case ODPEMU_MTU_256: return "256";
	case ODPEMU_MTU_512: return "512";
	case ODPEMU_MTU_1024: return "1024";
	case ODPEMU_MTU_2048: return "2048";
	case ODPEMU_MTU_4096: return "4096";
	default: return "UNKNOWN";
	}
}

/* 256 << (mtu - 1), or -1 for a value that is not an MTU. */
ODPEMU_EXPORT int odpemu_mtu_to_bytes(enum odpemu_mtu mtu)
{
	return mtu >= ODPEMU_MTU_256 && mtu <= ODPEMU_MTU_4096 ? 256 << (mtu - 1) : -1;
}
