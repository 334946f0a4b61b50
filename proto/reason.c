/* SPDX-License-Identifier: MIT */
#include "reason.h"

static const char *const reason_names[] = {
#define X(name, text) [ROCE_R_##name] = #name,
	ROCE_REASONS(X)
#undef X
};

static const char *const reason_texts[] = {
#define X(name, text) [ROCE_R_##name] = text,
	ROCE_REASONS(X)
#undef X
};

const char *roce_reason_str(enum roce_reason r)
{
	return (unsigned)r < ROCE_R_COUNT ? reason_names[r] : "INVALID_REASON";
}

const char *roce_reason_text(enum roce_reason r)
{
	return (unsigned)r < ROCE_R_COUNT ? reason_texts[r] : "not a roce_reason value";
}
