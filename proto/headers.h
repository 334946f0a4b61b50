/* SPDX-License-Identifier: MIT */
/* RoCEv2 transport headers (IBA vol. 1 ch. 9.2–9.3, RoCEv2 annex A17): sizes, host-order
 * field structs, and the two accessor layers — raw decode/encode at a byte pointer, used
 * by parse/build and by cheap peeks on the receive path. All fields big-endian on the
 * wire; byte order is converted only here (via bytes.h). */
#ifndef ODPEMU_PROTO_HEADERS_H
#define ODPEMU_PROTO_HEADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bytes.h"

#define ROCE_UDP_PORT     4791u
#define ROCE_DEFAULT_PKEY 0xFFFFu
#define ROCE_QPN_MASK     0xFFFFFFu
#define ROCE_GSI_QPN      1u
#define ROCE_MCAST_QPN    0xFFFFFFu	/* IBA 9.6.1.1: the destination QP of every multicast */
#define ROCE_TVER         0u       /* IBA 9.2: transport header version 0 */
#define ROCE_RETH_MAX_LEN (1u << 31) /* IBA 9.4.3: DMA length at most 2^31 */

enum roce_hdr_len {
	ROCE_BTH_LEN = 12,
	ROCE_RETH_LEN = 16,
	ROCE_AETH_LEN = 4,
	ROCE_ATMETH_LEN = 28,
	ROCE_ATMACK_LEN = 8,
	ROCE_IMMDT_LEN = 4,
	ROCE_IETH_LEN = 4,
	ROCE_DETH_LEN = 8,
	ROCE_FETH_LEN = 4,
	ROCE_ICRC_LEN = 4,
};

/* Base Transport Header, host order. */
struct roce_bth {
	uint8_t opcode;
	bool se;        /* solicited event */
	bool migreq;
	uint8_t padcnt; /* 0..3 bytes of pad after the payload */
	uint8_t tver;
	uint16_t pkey;
	uint8_t resv8a; /* FECN/BECN byte: masked in the ICRC */
	uint32_t dqpn;  /* 24 bits */
	bool ackreq;
	uint32_t psn;   /* 24 bits */
};

struct roce_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
};

struct roce_aeth {
	uint8_t syndrome; /* see aeth.h */
	uint32_t msn;     /* 24 bits */
};

struct roce_atmeth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
};

struct roce_deth {
	uint32_t qkey;
	uint32_t sqpn; /* 24 bits */
};

/* FLUSH extended transport header (IBA Memory Placement Extensions): selectivity says
 * what is flushed, placement type the required visibility. */
enum roce_flush_sel { ROCE_FLUSH_SEL_RANGE = 0, ROCE_FLUSH_SEL_MR = 1 };
enum roce_flush_plt { ROCE_FLUSH_GLOBAL = 1 << 0, ROCE_FLUSH_PERSISTENT = 1 << 1 };
#define ROCE_FETH_SEL_MAX ROCE_FLUSH_SEL_MR
#define ROCE_FETH_PLT_MASK 0x3u

struct roce_feth {
	uint8_t sel; /* enum roce_flush_sel, bits 5:4 */
	uint8_t plt; /* enum roce_flush_plt bits, bits 3:0 */
};

/* ---- raw layer: decode/encode one header at p ---- */

static inline uint8_t roce_bth_opcode_raw(const uint8_t *bth) { return bth[0]; }
static inline uint32_t roce_bth_dqpn_raw(const uint8_t *bth) { return roce_get24(bth + 5); }
static inline uint32_t roce_bth_psn_raw(const uint8_t *bth) { return roce_get24(bth + 9); }

static inline void roce_bth_decode(const uint8_t *p, struct roce_bth *b)
{
	b->opcode = p[0];
	b->se = p[1] >> 7;
	b->migreq = (p[1] >> 6) & 1;
	b->padcnt = (p[1] >> 4) & 3;
	b->tver = p[1] & 0xF;
	b->pkey = roce_get16(p + 2);
	b->resv8a = p[4];
	b->dqpn = roce_get24(p + 5);
	b->ackreq = p[8] >> 7;
	b->psn = roce_get24(p + 9);
}

static inline void roce_bth_encode(uint8_t *p, const struct roce_bth *b)
{
	p[0] = b->opcode;
	p[1] = (uint8_t)(b->se << 7 | b->migreq << 6 | (b->padcnt & 3) << 4 | (b->tver & 0xF));
	roce_put16(p + 2, b->pkey);
	p[4] = b->resv8a;
	roce_put24(p + 5, b->dqpn & ROCE_QPN_MASK);
	p[8] = (uint8_t)(b->ackreq << 7); /* bits 6:0 reserved, sent as 0 */
	roce_put24(p + 9, b->psn & 0xFFFFFFu);
}

static inline void roce_reth_decode(const uint8_t *p, struct roce_reth *r)
{
	r->va = roce_get64(p);
	r->rkey = roce_get32(p + 8);
	r->len = roce_get32(p + 12);
}

static inline void roce_reth_encode(uint8_t *p, const struct roce_reth *r)
{
	roce_put64(p, r->va);
	roce_put32(p + 8, r->rkey);
	roce_put32(p + 12, r->len);
}

static inline void roce_aeth_decode(const uint8_t *p, struct roce_aeth *a)
{
	a->syndrome = p[0];
	a->msn = roce_get24(p + 1);
}

static inline void roce_aeth_encode(uint8_t *p, const struct roce_aeth *a)
{
	p[0] = a->syndrome;
	roce_put24(p + 1, a->msn & 0xFFFFFFu);
}

static inline void roce_atmeth_decode(const uint8_t *p, struct roce_atmeth *a)
{
	a->va = roce_get64(p);
	a->rkey = roce_get32(p + 8);
	a->swap_add = roce_get64(p + 12);
	a->compare = roce_get64(p + 20);
}

static inline void roce_atmeth_encode(uint8_t *p, const struct roce_atmeth *a)
{
	roce_put64(p, a->va);
	roce_put32(p + 8, a->rkey);
	roce_put64(p + 12, a->swap_add);
	roce_put64(p + 20, a->compare);
}

static inline void roce_deth_decode(const uint8_t *p, struct roce_deth *d)
{
	d->qkey = roce_get32(p);
	d->sqpn = roce_get24(p + 5); /* byte 4 reserved */
}

static inline void roce_deth_encode(uint8_t *p, const struct roce_deth *d)
{
	roce_put32(p, d->qkey);
	p[4] = 0;
	roce_put24(p + 5, d->sqpn & ROCE_QPN_MASK);
}

static inline void roce_feth_decode(const uint8_t *p, struct roce_feth *f)
{
	uint32_t bits = roce_get32(p);

	f->sel = (bits >> 4) & 3;
	f->plt = bits & 0xF;
}

static inline void roce_feth_encode(uint8_t *p, const struct roce_feth *f)
{
	roce_put32(p, (uint32_t)(f->sel & 3) << 4 | (f->plt & 0xFu));
}

#endif
