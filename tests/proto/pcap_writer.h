/* SPDX-License-Identifier: MIT */
/* A minimal pcap file writer for tests: LINKTYPE_RAW records (an IPv4 or IPv6 packet
 * per record), with synthesized IP and UDP headers around a RoCEv2 UDP payload. */
#ifndef ODPEMU_TESTS_PCAP_WRITER_H
#define ODPEMU_TESTS_PCAP_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "icrc.h"

FILE *t_pcap_open(const char *path);
/* Append one packet: IPv4 (ID 0, DF, TTL 64, real header checksum) + UDP + roce[0..len). */
int t_pcap_put4(FILE *f, const struct roce_flow4 *flow, const uint8_t *roce, size_t len);
/* Append one packet: IPv6 (flow label 0x12345, hop limit 64) + UDP + roce[0..len). */
int t_pcap_put6(FILE *f, const struct roce_flow6 *flow, const uint8_t *roce, size_t len);

#endif
