/* SPDX-License-Identifier: MIT */
/* Conformance with Wireshark: write a pcap holding one packet of every opcode, over IPv4
 * and over IPv6, with random field values and our ICRC; decode it with tshark and check
 * that every field tshark shows equals what we built. tshark 4.0 does not know FLUSH
 * (0x1C) and ATOMIC_WRITE (0x1D): for those only the BTH is compared. Skips (77) when
 * tshark is missing, unless CI=true, where that is a failure. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pcap_writer.h"
#include "roce.h"
#include "t.h"
#include "tshark_run.h"

#define PMTU 256u
#define MAX_PKTS 128

/* tshark's columns, in -e order. AtomicETH's VA and R_Key show as reth.va/r_key. */
#define COLUMNS(X) \
	X(OPCODE, "infiniband.bth.opcode") X(SE, "infiniband.bth.se") \
	X(PADCNT, "infiniband.bth.padcnt") X(PKEY, "infiniband.bth.p_key") \
	X(DQPN, "infiniband.bth.destqp") X(ACKREQ, "infiniband.bth.a") X(PSN, "infiniband.bth.psn") \
	X(VA, "infiniband.reth.va") X(RKEY, "infiniband.reth.r_key") X(DMALEN, "infiniband.reth.dmalen") \
	X(SYNDROME, "infiniband.aeth.syndrome") X(MSN, "infiniband.aeth.msn") \
	X(SWAP, "infiniband.atomiceth.swapdt") X(CMP, "infiniband.atomiceth.cmpdt") \
	X(ORIG, "infiniband.atomicacketh.origremdt") X(IMM, "infiniband.immdt") \
	X(IETH, "infiniband.ieth") X(QKEY, "infiniband.deth.q_key") X(SQPN, "infiniband.deth.srcqp") \
	X(ICRC, "infiniband.invariant.crc")

enum col {
#define X(name, field) COL_##name,
	COLUMNS(X)
#undef X
	NCOL
};

static const char *const col_field[] = {
#define X(name, field) field,
	COLUMNS(X)
#undef X
};

struct expect {
	uint8_t opcode;
	uint64_t v[NCOL];
	uint32_t has; /* bit per column that tshark must show */
};

static struct expect want[MAX_PKTS];
static unsigned npkts;

static void set(struct expect *e, enum col c, uint64_t v)
{
	e->v[c] = v;
	e->has |= 1u << c;
}

static void random_hdr(struct t_rng *r, uint8_t op, struct roce_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->bth = (struct roce_bth){ .opcode = op, .se = t_rand(r) & 1, .pkey = (uint16_t)t_rand(r),
		.dqpn = 2 + (uint32_t)t_below(r, 0xFFFFF0), .ackreq = t_rand(r) & 1,
		.psn = (uint32_t)t_rand(r) & 0xFFFFFF };
	h->reth = (struct roce_reth){ t_rand(r), (uint32_t)t_rand(r), 0 };
	h->atmeth = (struct roce_atmeth){ t_rand(r) & ~7ull, (uint32_t)t_rand(r), t_rand(r), t_rand(r) };
	h->aeth = (struct roce_aeth){ (uint8_t)(t_below(r, 2) << 5 | t_below(r, 32)),
		(uint32_t)t_rand(r) & 0xFFFFFF };
	h->atmack = t_rand(r);
	h->imm = (uint32_t)t_rand(r);
	h->ieth_rkey = (uint32_t)t_rand(r);
	h->deth = (struct roce_deth){ (uint32_t)t_rand(r), (uint32_t)t_rand(r) & 0xFFFFFF };
	h->feth = (struct roce_feth){ 0, 1 };
}

/* A legal payload length for the opcode; writes carry the message length in RETH. */
static uint32_t payload_for(struct t_rng *r, uint32_t mask, struct roce_hdr *h)
{
	uint32_t n = 0;

	if (mask & ROCE_M_PAYLOAD8)
		n = 8;
	else if ((mask & ROCE_M_MIDDLE) || (mask & ROCE_M_ONLY) == ROCE_M_FIRST)
		n = PMTU;
	else if (mask & ROCE_M_PAYLOAD)
		n = 1 + (uint32_t)t_below(r, 40);
	if (mask & ROCE_M_RETH)
		h->reth.len = (mask & ROCE_M_ONLY) == ROCE_M_FIRST ? 3 * PMTU : n;
	if (h->bth.opcode == ROCE_OP_RC_RDMA_READ_REQUEST)
		h->reth.len = (uint32_t)t_below(r, 1u << 20);
	return n;
}

/* What tshark must show for a packet built from h. */
static void expect_fields(struct expect *e, const struct roce_hdr *h, uint32_t mask,
			  uint32_t n, const uint8_t *wire, size_t len)
{
	e->opcode = h->bth.opcode;
	set(e, COL_OPCODE, h->bth.opcode); set(e, COL_SE, h->bth.se);
	set(e, COL_PADCNT, roce_pad(n)); set(e, COL_PKEY, h->bth.pkey);
	set(e, COL_DQPN, h->bth.dqpn); set(e, COL_ACKREQ, h->bth.ackreq); set(e, COL_PSN, h->bth.psn);
	if (h->bth.opcode == ROCE_OP_RC_FLUSH || h->bth.opcode == ROCE_OP_RC_ATOMIC_WRITE)
		return; /* unknown to tshark 4.0: it decodes the BTH only */
	if (mask & ROCE_M_RETH) {
		set(e, COL_VA, h->reth.va); set(e, COL_RKEY, h->reth.rkey); set(e, COL_DMALEN, h->reth.len);
	}
	if (mask & ROCE_M_ATMETH) {
		set(e, COL_VA, h->atmeth.va); set(e, COL_RKEY, h->atmeth.rkey);
		set(e, COL_SWAP, h->atmeth.swap_add); set(e, COL_CMP, h->atmeth.compare);
	}
	if (mask & ROCE_M_AETH) { set(e, COL_SYNDROME, h->aeth.syndrome); set(e, COL_MSN, h->aeth.msn); }
	if (mask & ROCE_M_ATMACK) set(e, COL_ORIG, h->atmack);
	if (mask & ROCE_M_IMMDT) set(e, COL_IMM, h->imm);
	if (mask & ROCE_M_IETH) set(e, COL_IETH, h->ieth_rkey);
	if (mask & ROCE_M_DETH) { set(e, COL_QKEY, h->deth.qkey); set(e, COL_SQPN, h->deth.sqpn); }
	/* tshark reads the ICRC's four bytes as a big-endian number. */
	set(e, COL_ICRC, roce_get32(wire + len - ROCE_ICRC_LEN));
}

static int write_capture(const char *path, uint64_t seed)
{
	struct t_rng r = { seed };
	struct roce_flow4 f4 = { htonl(0xC0A80001), htonl(0xC0A80002), 49152, ROCE_UDP_PORT };
	struct roce_flow6 f6 = { .sport = 49153, .dport = ROCE_UDP_PORT };
	FILE *f = t_pcap_open(path);
	uint8_t wire[PMTU + 128];

	if (!f)
		return -1;
	inet_pton(AF_INET6, "fd00::1", f6.saddr);
	inet_pton(AF_INET6, "fd00::2", f6.daddr);
	for (int v6 = 0; v6 < 2; v6++) {
		for (unsigned i = 0; i < roce_opcode_count; i++) {
			const struct roce_opcode_info *info = roce_opcode_info(roce_opcodes[i]);
			struct roce_hdr h;
			uint32_t n;
			long len;

			random_hdr(&r, roce_opcodes[i], &h);
			n = payload_for(&r, info->mask, &h);
			len = roce_build(wire, sizeof(wire), &h, NULL, n);
			if (len < 0)
				return -1;
			t_fill(&r, wire + info->hdr_len, n);
			if (v6)
				roce_icrc6_seal(&f6, wire, (size_t)len);
			else
				roce_icrc4_seal(&f4, wire, (size_t)len);
			if ((v6 ? t_pcap_put6(f, &f6, wire, (size_t)len) : t_pcap_put4(f, &f4, wire, (size_t)len)))
				return -1;
			expect_fields(&want[npkts++], &h, info->mask, n, wire, (size_t)len);
		}
	}
	return fclose(f);
}

/* tshark prints numbers in decimal or 0x-hex, and byte fields (ImmDt, IETH) as hex
 * digits without a prefix. */
static uint64_t field_value(enum col c, const char *s)
{
	return strtoull(s, NULL, (c == COL_IMM || c == COL_IETH) ? 16 : 0);
}

static void compare_line(char *line)
{
	char *fields[NCOL + 1], *save = NULL, *tok;
	unsigned nf = 0, frame;
	struct expect *e;

	line[strcspn(line, "\n")] = '\0';
	/* strtok would merge empty fields: split on each tab by hand. */
	for (tok = line; nf < NCOL + 1; nf++) {
		fields[nf] = tok;
		save = strchr(tok, '\t');
		if (!save) { nf++; break; }
		*save = '\0';
		tok = save + 1;
	}
	frame = (unsigned)strtoul(fields[0], NULL, 10);
	T_CHECK(nf == NCOL + 1 && frame >= 1 && frame <= npkts, "tshark line for frame %u has %u fields", frame, nf);
	if (nf != NCOL + 1 || frame < 1 || frame > npkts)
		return;
	e = &want[frame - 1];
	for (unsigned c = 0; c < NCOL; c++) {
		const char *got = fields[c + 1];
		if (!(e->has & (1u << c))) {
			T_CHECK(c == COL_ICRC || c == COL_VA || c == COL_RKEY || c == COL_DMALEN || !*got,
				"frame %u (%s): tshark shows %s = '%s' we did not send", frame,
				roce_opcode_str(e->opcode), col_field[c], got);
			continue;
		}
		T_CHECK(*got && field_value(c, got) == e->v[c], "frame %u (%s): %s = '%s', we built 0x%llx",
			frame, roce_opcode_str(e->opcode), col_field[c], got, (unsigned long long)e->v[c]);
	}
}

static int run_tshark(const char *pcap)
{
	return tshark_fields(pcap, "--disable-protocol rpcordma", col_field, NCOL, compare_line, npkts);
}

int main(int argc, char **argv)
{
	return tshark_test("tshark", "all-opcodes.pcap", t_seed(argc, argv, 3), write_capture, run_tshark);
}
