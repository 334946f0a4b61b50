/* SPDX-License-Identifier: MIT */
#include "aeth.h"

/* IBA table 45 "encoding for RNR NAK timer field", in microseconds. */
static const uint32_t rnr_timer_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* IBA table 44 "encoding for the end-to-end credit field" (code 31 invalid). */
static const uint16_t credit_count[31] = {
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
	24576, 32768,
};

uint32_t roce_rnr_timer_us(uint8_t code)
{
	return code <= ROCE_RNR_CODE_MAX ? rnr_timer_us[code] : 0;
}

uint8_t roce_rnr_code_for_us(uint32_t us)
{
	/* Codes 1..31 are increasing; code 0 is the longest of all. */
	for (uint8_t code = 1; code <= ROCE_RNR_CODE_MAX; code++)
		if (rnr_timer_us[code] >= us)
			return code;
	return 0;
}

int32_t roce_credit_count(uint8_t code)
{
	return code < ROCE_CREDIT_INVALID ? credit_count[code] : -1;
}

uint8_t roce_credit_code(uint32_t credits)
{
	uint8_t code = 0;

	while (code + 1u < ROCE_CREDIT_INVALID && credit_count[code + 1] <= credits)
		code++;
	return code;
}

const char *roce_aeth_type_str(enum roce_aeth_type t)
{
	static const char *const names[] = { "ACK", "RNR_NAK", "RESERVED", "NAK" };

	return (unsigned)t < 4 ? names[t] : "INVALID";
}

const char *roce_nak_str(uint8_t code)
{
	switch (code) {
#define X(name, value, text) case value: return #name;
	ROCE_NAK_CODES(X)
#undef X
	default: return "RESERVED";
	}
}
