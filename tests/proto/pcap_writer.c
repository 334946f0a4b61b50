/* SPDX-License-Identifier: MIT */
#include "pcap_writer.h"

#include <string.h>

#include "bytes.h"

#define LINKTYPE_RAW 101u /* the record is an IP packet; version from its first nibble */

/* pcap headers are in the writer's byte order; readers detect it by the magic. */
struct pcap_file_hdr { uint32_t magic; uint16_t major, minor; int32_t zone; uint32_t sigfigs, snaplen, linktype; };
struct pcap_rec_hdr { uint32_t sec, usec, caplen, len; };

FILE *t_pcap_open(const char *path)
{
	struct pcap_file_hdr h = { 0xA1B2C3D4u, 2, 4, 0, 0, 65535, LINKTYPE_RAW };
	FILE *f = fopen(path, "wb");

	if (f && fwrite(&h, sizeof(h), 1, f) != 1) {
		fclose(f);
		return NULL;
	}
	return f;
}

static int put_record(FILE *f, const uint8_t *pkt, size_t len)
{
	static uint32_t usec;
	struct pcap_rec_hdr r = { 1700000000u, usec++, (uint32_t)len, (uint32_t)len };

	return fwrite(&r, sizeof(r), 1, f) == 1 && fwrite(pkt, len, 1, f) == 1 ? 0 : -1;
}

static uint16_t ip4_checksum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += roce_get16(h + i);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put_udp(uint8_t *p, uint16_t sport, uint16_t dport, size_t len)
{
	roce_put16(p, sport);
	roce_put16(p + 2, dport);
	roce_put16(p + 4, (uint16_t)(8 + len));
	roce_put16(p + 6, 0); /* no UDP checksum: allowed for IPv4, and RoCE's ICRC covers it */
}

int t_pcap_put4(FILE *f, const struct roce_flow4 *flow, const uint8_t *roce, size_t len)
{
	uint8_t pkt[70000] = { 0x45, 0 };

	if (len > sizeof(pkt) - 28)
		return -1;
	roce_put16(pkt + 2, (uint16_t)(28 + len));
	roce_put16(pkt + 6, 0x4000);
	pkt[8] = 64;
	pkt[9] = 17;
	memcpy(pkt + 12, &flow->saddr, 4);
	memcpy(pkt + 16, &flow->daddr, 4);
	roce_put16(pkt + 10, ip4_checksum(pkt));
	put_udp(pkt + 20, flow->sport, flow->dport, len);
	memcpy(pkt + 28, roce, len);
	return put_record(f, pkt, 28 + len);
}

int t_pcap_put6(FILE *f, const struct roce_flow6 *flow, const uint8_t *roce, size_t len)
{
	uint8_t pkt[70000] = { 0 };

	if (len > sizeof(pkt) - 48)
		return -1;
	roce_put32(pkt, 6u << 28 | 0x12345u);
	roce_put16(pkt + 4, (uint16_t)(8 + len));
	pkt[6] = 17;
	pkt[7] = 64;
	memcpy(pkt + 8, flow->saddr, 16);
	memcpy(pkt + 24, flow->daddr, 16);
	put_udp(pkt + 40, flow->sport, flow->dport, len);
	/* IPv6 requires a UDP checksum, but tshark does not verify it by default and the
	 * ICRC masks it; 0 keeps the writer simple. */
	memcpy(pkt + 48, roce, len);
	return put_record(f, pkt, 48 + len);
}
