#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""icrc_check — recompute the ICRC of every IPv4 RoCEv2 packet in a capture file.

usage: icrc_check.py [--port N] CAPTURE

Each packet's last four bytes must equal two independent computations: scapy's own
(contrib.roce, BTH.compute_icrc) and a direct one as RoCEv2 (and Linux rxe) define it:
CRC-32 over 8 bytes of 0xFF, the IPv4 header with TOS, TTL and header checksum set to ones,
the UDP header with its checksum set to ones, and BTH..pad with BTH byte 4 set to ones; the
CRC goes on the wire least-significant byte first. Both are first checked against a known
test vector (the one tshark shows as 0xb222dce0), so a scapy that disagrees with the spec is
caught before it can agree with a broken sender.

--port N: the RoCEv2 packets are those to UDP port N (default 4791); the ICRC covers that
port as it is on the wire.

Exit 0 when at least one packet was checked and all matched; 1 on any mismatch or when no
packet was checked; 2 on a usage error or a missing scapy (Debian: python3-scapy).
"""
import argparse
import collections
import struct
import sys
import zlib

try:
    from scapy.layers.inet import IP, UDP
    from scapy.packet import bind_layers
    from scapy.utils import RawPcapReader
    from scapy.contrib.roce import BTH
except ImportError as err:
    print(f"icrc_check: scapy is missing ({err}); install python3-scapy", file=sys.stderr)
    sys.exit(2)

ROCE_PORT = 4791
LINKTYPE_ETHERNET = 1
ETH_P_IP, ETH_P_8021Q = 0x0800, 0x8100

# The IPv4 vector (verified against rxe, scapy and tshark): RC SEND_ONLY to QP 0x11,
# PSN 0x123456, "hello", pad 3.
VECTOR_IP = bytes.fromhex("4500003400004000401126b70a0000010a000002" "c00012b700200000"
                          "0430ffff000000118012345668656c6c6f000000" "b222dce0")


def icrc_direct(ip):
    """The ICRC of an IPv4 RoCEv2 datagram (whose last 4 bytes are its ICRC)."""
    ihl = (ip[0] & 0x0F) * 4
    b = bytearray(ip[:-4])
    b[1] = 0xFF                   # TOS
    b[8] = 0xFF                   # TTL
    b[10:12] = b"\xff\xff"        # header checksum
    b[ihl + 6:ihl + 8] = b"\xff\xff"  # UDP checksum
    b[ihl + 8 + 4] = 0xFF         # BTH byte 4: FECN, BECN, reserved
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF)


def icrc_scapy(ip):
    """The ICRC scapy computes for the same datagram (None if it does not see a BTH)."""
    bth = IP(ip).getlayer(BTH)
    return None if bth is None else bytes(bth.compute_icrc(None))


def ip_of_frame(linktype, frame):
    """The IPv4 datagram in an Ethernet frame (trimmed to its total length) or None."""
    if linktype != LINKTYPE_ETHERNET or len(frame) < 14:
        return None
    off, etype = 14, struct.unpack_from("!H", frame, 12)[0]
    while etype == ETH_P_8021Q and len(frame) >= off + 4:
        etype = struct.unpack_from("!H", frame, off + 2)[0]
        off += 4
    if etype != ETH_P_IP or len(frame) < off + 20 or frame[off] >> 4 != 4:
        return None
    total = struct.unpack_from("!H", frame, off + 2)[0]
    return frame[off:off + total] if len(frame) >= off + total else None


def self_test():
    want = VECTOR_IP[-4:]
    direct, mine = icrc_direct(VECTOR_IP), icrc_scapy(VECTOR_IP)
    if direct != want or mine != want:
        print(f"icrc_check: self-test failed: vector {want.hex()}, direct "
              f"{direct.hex()}, scapy {mine.hex() if mine else None}", file=sys.stderr)
        return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=ROCE_PORT, help="RoCEv2 UDP port")
    ap.add_argument("capture")
    args = ap.parse_args()
    if args.port != ROCE_PORT:
        bind_layers(UDP, BTH, dport=args.port)
    if not self_test():
        return 1

    checked = bad = other = truncated = 0
    per_opcode = collections.Counter()
    reader = RawPcapReader(args.capture)
    linktype = getattr(reader, "linktype", LINKTYPE_ETHERNET)
    for n, (frame, meta) in enumerate(reader, 1):
        caplen, wirelen = len(frame), getattr(meta, "wirelen", len(frame))
        ip = ip_of_frame(linktype, frame)
        if ip is None or ip[9] != 17:
            other += 1    # IPv6 (scapy 2.5 has no IPv6 ICRC) or not UDP
            continue
        ihl = (ip[0] & 0x0F) * 4
        sport, dport = struct.unpack_from("!HH", ip, ihl)
        if dport != args.port:
            other += 1
            continue
        if caplen < wirelen or len(ip) < ihl + 8 + 12 + 4:
            truncated += 1
            continue
        wire, direct, mine = ip[-4:], icrc_direct(ip), icrc_scapy(ip)
        opcode = ip[ihl + 8]
        checked += 1
        per_opcode[opcode] += 1
        if wire != direct or wire != mine:
            bad += 1
            if bad <= 20:
                print(f"icrc_check: frame {n} opcode {opcode:#04x} PSN "
                      f"{int.from_bytes(ip[ihl + 17:ihl + 20], 'big'):#08x}: on the wire "
                      f"{wire.hex()}, direct {direct.hex()}, "
                      f"scapy {mine.hex() if mine else 'no BTH'}", file=sys.stderr)
    reader.close()
    ops = " ".join(f"{op:#04x}:{k}" for op, k in sorted(per_opcode.items()))
    print(f"icrc_check: {checked} packets checked, {checked - bad} ICRCs match, {bad} "
          f"mismatch, {truncated} truncated, {other} other packets skipped")
    print(f"icrc_check: per opcode {ops}")
    if checked == 0:
        print("icrc_check: no RoCEv2 packet to check", file=sys.stderr)
    return 0 if checked and not bad and not truncated else 1


if __name__ == "__main__":
    sys.exit(main())
