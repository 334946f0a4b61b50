/* SPDX-License-Identifier: MIT */
/* AETH syndrome codec, RNR timer table (REFERENCE.md "Timers and retries") and credit
 * codes. */
#include <string.h>

#include "roce.h"
#include "t.h"

static void test_syndrome(void)
{
	for (uint8_t v = 0; v < 32; v++) {
		uint8_t ack = roce_syndrome_ack(v), rnr = roce_syndrome_rnr_nak(v);
		T_EQ(roce_syndrome_type(ack), ROCE_AETH_ACK, "ACK type");
		T_EQ(roce_syndrome_value(ack), v, "ACK credit code");
		T_EQ(roce_syndrome_type(rnr), ROCE_AETH_RNR_NAK, "RNR type");
		T_EQ(roce_syndrome_value(rnr), v, "RNR timer code");
		T_CHECK(roce_syndrome_valid(ack) && roce_syndrome_valid(rnr), "valid");
	}
	T_EQ(roce_syndrome_nak(ROCE_NAK_PSN_SEQ_ERR), 0x60, "NAK PSN sequence error");
	T_EQ(roce_syndrome_nak(ROCE_NAK_INVALID_REQ), 0x61, "NAK invalid request");
	T_EQ(roce_syndrome_nak(ROCE_NAK_REMOTE_ACCESS), 0x62, "NAK remote access");
	T_EQ(roce_syndrome_nak(ROCE_NAK_REMOTE_OP), 0x63, "NAK remote operational");
	T_EQ(roce_syndrome_rnr_nak(14), 0x2E, "RNR NAK timer 14");
	T_EQ(roce_syndrome_ack(ROCE_CREDIT_INVALID), 0x1F, "ACK, no credits");
	T_CHECK(!roce_syndrome_valid(0x40) && !roce_syndrome_valid(0x80), "reserved syndromes");
	T_CHECK(!strcmp(roce_nak_str(2), "REMOTE_ACCESS"), "NAK name");
	T_CHECK(!strcmp(roce_nak_str(9), "RESERVED"), "reserved NAK name");
	T_CHECK(!strcmp(roce_aeth_type_str(ROCE_AETH_RNR_NAK), "RNR_NAK"), "type name");
}

/* REFERENCE.md's RNR table, in hundredths of a millisecond. */
static void test_rnr_timer(void)
{
	static const uint32_t ms100[32] = {
		65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
		256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
		24576, 32768, 49152,
	};

	for (uint8_t code = 0; code < 32; code++) {
		T_EQ(roce_rnr_timer_us(code), ms100[code] * 10, "RNR timer");
		if (code)
			T_EQ(roce_rnr_code_for_us(roce_rnr_timer_us(code)), code, "exact timer → code");
	}
	T_EQ(roce_rnr_timer_us(32), 0, "code 32 is not a code");
	T_EQ(roce_rnr_code_for_us(0), 1, "shortest");
	T_EQ(roce_rnr_code_for_us(11), 2, "11 µs rounds up to 20 µs");
	T_EQ(roce_rnr_code_for_us(491520), 31, "491.52 ms");
	T_EQ(roce_rnr_code_for_us(491521), 0, "longer: 655.36 ms");
}

static void test_credits(void)
{
	T_EQ(roce_credit_count(0), 0, "code 0");
	T_EQ(roce_credit_count(5), 6, "code 5");
	T_EQ(roce_credit_count(30), 32768, "code 30");
	T_EQ(roce_credit_count(31), (uint64_t)-1, "code 31 invalid");
	T_EQ(roce_credit_code(0), 0, "0 credits");
	T_EQ(roce_credit_code(7), 5, "7 credits → 6");
	T_EQ(roce_credit_code(100000), 30, "many credits → 32768");
	for (uint8_t c = 0; c < 31; c++)
		T_EQ(roce_credit_code((uint32_t)roce_credit_count(c)), c, "credit round trip");
}

int main(void)
{
	test_syndrome();
	test_rnr_timer();
	test_credits();
	return t_done("aeth");
}
