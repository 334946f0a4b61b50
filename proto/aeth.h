/* SPDX-License-Identifier: MIT */
/* The AETH syndrome (IBA 9.3.5): ACK with a credit code, RNR NAK with a timer code, or
 * NAK with an error code; and the RNR timer and credit tables. */
#ifndef ODPEMU_PROTO_AETH_H
#define ODPEMU_PROTO_AETH_H

#include <stdbool.h>
#include <stdint.h>

/* Bits 6:5 of the syndrome. */
enum roce_aeth_type {
	ROCE_AETH_ACK = 0,
	ROCE_AETH_RNR_NAK = 1,
	ROCE_AETH_RESERVED = 2,
	ROCE_AETH_NAK = 3,
};

/* NAK codes, bits 4:0 of a NAK syndrome (IBA table 45). */
#define ROCE_NAK_CODES(X) \
	X(PSN_SEQ_ERR,     0, "PSN sequence error") \
	X(INVALID_REQ,     1, "invalid request") \
	X(REMOTE_ACCESS,   2, "remote access error") \
	X(REMOTE_OP,       3, "remote operational error") \
	X(INVALID_RD_REQ,  4, "invalid RD request")

enum roce_nak_code {
#define X(name, value, text) ROCE_NAK_##name = value,
	ROCE_NAK_CODES(X)
#undef X
};

#define ROCE_CREDIT_INVALID 31u /* credit code 31: no end-to-end credits are advertised */
#define ROCE_RNR_CODE_MAX 31u

static inline enum roce_aeth_type roce_syndrome_type(uint8_t syn)
{
	return (enum roce_aeth_type)((syn >> 5) & 3);
}

/* Credit code, RNR timer code or NAK code, by type. */
static inline uint8_t roce_syndrome_value(uint8_t syn)
{
	return syn & 0x1F;
}

/* A syndrome is well formed if bit 7 is clear and the type is not reserved. */
static inline bool roce_syndrome_valid(uint8_t syn)
{
	return !(syn & 0x80) && roce_syndrome_type(syn) != ROCE_AETH_RESERVED;
}

static inline uint8_t roce_syndrome_ack(uint8_t credit_code)
{
	return credit_code & 0x1F;
}

static inline uint8_t roce_syndrome_rnr_nak(uint8_t timer_code)
{
	return (uint8_t)(ROCE_AETH_RNR_NAK << 5 | (timer_code & 0x1F));
}

static inline uint8_t roce_syndrome_nak(enum roce_nak_code code)
{
	return (uint8_t)(ROCE_AETH_NAK << 5 | (code & 0x1F));
}

/* RNR timer code → microseconds (IBA table 45: code 0 is the longest, 655.36 ms);
 * 0 for a code above 31. */
uint32_t roce_rnr_timer_us(uint8_t code);

/* The code of the shortest RNR timer that lasts at least `us` microseconds (a wait
 * longer than 491.52 ms gets code 0 = 655.36 ms). */
uint8_t roce_rnr_code_for_us(uint32_t us);

/* Credit code → number of receive WQEs (IBA table 44); -1 for code 31 (invalid). */
int32_t roce_credit_count(uint8_t code);

/* The largest credit code whose count is at most `credits`. */
uint8_t roce_credit_code(uint32_t credits);

/* "ACK", "RNR_NAK", "RESERVED", "NAK" */
const char *roce_aeth_type_str(enum roce_aeth_type t);
/* "PSN_SEQ_ERR", … or "RESERVED" */
const char *roce_nak_str(uint8_t code);

#endif
