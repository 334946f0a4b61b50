/* SPDX-License-Identifier: MIT */
/* proto-bench: parse and ICRC-verify throughput on one core, for 64-byte and 4 KiB
 * RoCEv2 packets, and the raw CRC-32 speed of the two libraries considered for the ICRC
 * (ISA-L, used; zlib, measured for comparison). Prints packets/s and GB/s (median of 5
 * runs of --ms milliseconds each). Not a test: it never fails on time. */
#include <arpa/inet.h>
#include <isa-l/crc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "bench.h"
#include "roce.h"

#define NPKT 256  /* distinct packets cycled through, like a receive ring */
#define RUNS 5

struct ring {
	uint8_t *pkt[NPKT];
	size_t len;
	unsigned pmtu;
};

static const struct roce_flow4 flow = { 0x0100000A, 0x0200000A, 49152, ROCE_UDP_PORT };
static unsigned run_ms = 300;

/* NPKT sealed RC SEND_ONLY packets whose UDP payload is `wire_len` bytes. */
static void ring_init(struct ring *r, size_t wire_len, unsigned pmtu)
{
	uint32_t payload = (uint32_t)(wire_len - ROCE_BTH_LEN - ROCE_ICRC_LEN);

	r->len = wire_len;
	r->pmtu = pmtu;
	for (unsigned i = 0; i < NPKT; i++) {
		struct roce_hdr h = { .bth = { .opcode = ROCE_OP_RC_SEND_ONLY, .pkey = 0xFFFF,
					       .dqpn = 0x11 + i, .ackreq = 1, .psn = i } };
		r->pkt[i] = malloc(wire_len);
		memset(r->pkt[i], (int)i, wire_len);
		if (!r->pkt[i] || roce_build(r->pkt[i], wire_len, &h, NULL, payload) != (long)wire_len)
			abort();
		roce_icrc4_seal(&flow, r->pkt[i], wire_len);
	}
}

typedef uint64_t (*bench_fn)(const struct ring *r, unsigned i);

static uint64_t do_parse(const struct ring *r, unsigned i)
{
	struct roce_pkt p;

	return roce_parse(r->pkt[i], r->len, r->pmtu, &p) == ROCE_R_OK ? p.payload_len : 0;
}

static uint64_t do_verify(const struct ring *r, unsigned i)
{
	return roce_icrc4_ok(&flow, r->pkt[i], r->len);
}

static uint64_t do_parse_verify(const struct ring *r, unsigned i)
{
	return do_parse(r, i) + do_verify(r, i);
}

static uint64_t do_isal(const struct ring *r, unsigned i)
{
	return crc32_gzip_refl(0, r->pkt[i], r->len);
}

static uint64_t do_zlib(const struct ring *r, unsigned i)
{
	return crc32(0, r->pkt[i], (uInt)r->len);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median packets per second over RUNS timed runs. */
static double measure(const struct ring *r, bench_fn fn)
{
	double pps[RUNS];
	uint64_t sink = 0;

	for (int run = 0; run < RUNS; run++) {
		uint64_t start = bench_now_ns(), end, n = 0;
		do {
			for (unsigned i = 0; i < NPKT; i++)
				sink += fn(r, i);
			n += NPKT;
			end = bench_now_ns();
		} while (end - start < run_ms * 1000000ull);
		pps[run] = (double)n * 1e9 / (double)(end - start);
	}
	bench_keep(sink);
	qsort(pps, RUNS, sizeof(pps[0]), cmp_double);
	return pps[RUNS / 2];
}

static void report(const char *what, const struct ring *r, bench_fn fn)
{
	double pps = measure(r, fn);

	printf("%-34s %5zu B  %8.2f Mpkt/s  %7.2f GB/s  %7.1f ns/pkt\n", what, r->len,
	       pps / 1e6, pps * (double)r->len / 1e9, 1e9 / pps);
}

int main(int argc, char **argv)
{
	static struct ring small, big;

	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--ms"))
			run_ms = (unsigned)atoi(argv[i + 1]);
	ring_init(&small, 64, 1024);
	ring_init(&big, ROCE_BTH_LEN + 4096 + ROCE_ICRC_LEN, 4096);
	printf("proto-bench: one core, median of %d runs of %u ms, %d packets in rotation\n",
	       RUNS, run_ms, NPKT);
	report("parse", &small, do_parse);
	report("ICRC verify (IPv4)", &small, do_verify);
	report("parse + ICRC verify", &small, do_parse_verify);
	report("parse", &big, do_parse);
	report("ICRC verify (IPv4)", &big, do_verify);
	report("parse + ICRC verify", &big, do_parse_verify);
	report("CRC-32 ISA-L crc32_gzip_refl", &small, do_isal);
	report("CRC-32 zlib crc32", &small, do_zlib);
	report("CRC-32 ISA-L crc32_gzip_refl", &big, do_isal);
	report("CRC-32 zlib crc32", &big, do_zlib);
	return 0;
}
