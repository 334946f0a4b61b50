/* SPDX-License-Identifier: MIT */
#include "opcode.h"

#include "headers.h"

/* A compile-time header length, so the table needs no initialisation at run time. */
#define HDRS_LEN(m) (ROCE_BTH_LEN \
	+ (((m) & ROCE_M_DETH) ? ROCE_DETH_LEN : 0) \
	+ (((m) & ROCE_M_FETH) ? ROCE_FETH_LEN : 0) \
	+ (((m) & ROCE_M_RETH) ? ROCE_RETH_LEN : 0) \
	+ (((m) & ROCE_M_ATMETH) ? ROCE_ATMETH_LEN : 0) \
	+ (((m) & ROCE_M_AETH) ? ROCE_AETH_LEN : 0) \
	+ (((m) & ROCE_M_ATMACK) ? ROCE_ATMACK_LEN : 0) \
	+ (((m) & ROCE_M_IMMDT) ? ROCE_IMMDT_LEN : 0) \
	+ (((m) & ROCE_M_IETH) ? ROCE_IETH_LEN : 0))

const struct roce_opcode_info roce_opcode_table[256] = {
#define X(op_, val_, cls_, m_) [val_] = { \
		.name = #op_, .mask = (m_), .cls = ROCE_CLASS_##cls_, \
		.hdr_len = HDRS_LEN(m_), .valid = 1 },
	ROCE_OPCODES(X)
#undef X
};

const uint8_t roce_opcodes[] = {
#define X(op_, val_, cls_, m_) val_,
	ROCE_OPCODES(X)
#undef X
};

const unsigned roce_opcode_count = sizeof(roce_opcodes);

unsigned roce_hdrs_len(uint32_t mask)
{
	return HDRS_LEN(mask);
}

const char *roce_opcode_str(uint8_t opcode)
{
	const struct roce_opcode_info *info = roce_opcode_info(opcode);

	return info ? info->name : "UNKNOWN";
}

const char *roce_class_str(enum roce_class cls)
{
	static const char *const names[] = {
#define X(cls_, str_) [ROCE_CLASS_##cls_] = str_,
		ROCE_CLASSES(X)
#undef X
	};

	if ((unsigned)cls >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[cls];
}
