#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""icrc_check — recompute the ICRC of every IPv4 RoCEv2 packet in a capture file.

usage: icrc_check.py [--port N] [--require-cm] CAPTURE

Each packet's last four bytes must equal two independent computations: scapy's own
(contrib.roce, BTH.compute_icrc) and a direct one as RoCEv2 (and Linux rxe) define it:
CRC-32 over 8 bytes of 0xFF, the IPv4 header with TOS, TTL and header checksum set to ones,
the UDP header with its checksum set to ones, and BTH..pad with BTH byte 4 set to ones; the
CRC goes on the wire least-significant byte first. Nothing after the BTH is masked, whatever
the transport: a UD packet's DETH (Q_Key, source QP) is covered as it is, as rxe computes
it. Both are first checked against known test vectors, an RC SEND Only (the one tshark
shows as 0xb222dce0) and a UD SEND Only with a DETH, so a scapy that disagrees with the
spec is caught before it can agree with a broken sender.

The connection manager's MADs (UD SEND Only to QP1, Q_Key 0x80010000, management class
0x07: REQ, REP, RTU, ...) are counted by attribute as they are checked.

--port N: the RoCEv2 packets are those to UDP port N (default 4791); the ICRC covers that
port as it is on the wire.
--require-cm: the capture must hold CM MADs, at least one each of REQ, REP, RTU, DREQ,
DREP and REJ, and their ICRCs must match like every other.

Exit 0 when at least one packet was checked, all matched and (--require-cm) every one of
those CM messages was among them; 1 otherwise; 2 on a usage error or a missing scapy
(Debian: python3-scapy).
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

# The IPv4 vectors, 10.0.0.1:49152 -> 10.0.0.2:4791, DF, Identification 0, TTL 64:
# RC SEND_ONLY to QP 0x11, A=1, PSN 0x123456, "hello", pad 3 (verified against rxe, scapy
# and tshark), and UD SEND_ONLY to QP1, PSN 0x123456, DETH Q_Key 0x80010000 source QP 1,
# "hello", pad 3 (as scapy's builder, IP()/UDP()/BTH()/Raw(), and odpemu's roce_icrc4
# compute it).
VECTORS = {
    "RC SEND Only": bytes.fromhex("4500003400004000401126b70a0000010a000002"
                                  "c00012b700200000"
                                  "0430ffff000000118012345668656c6c6f000000"
                                  "b222dce0"),
    "UD SEND Only with DETH": bytes.fromhex("4500003c00004000401126af0a0000010a000002"
                                            "c00012b700280000"
                                            "6430ffff0000000100123456"
                                            "8001000000000001" "68656c6c6f000000"
                                            "fc6c3693"),
}

UD_SEND_ONLY = 0x64
CM_QP, CM_QKEY, MAD_BASE_VERSION, CM_MGMT_CLASS = 1, 0x80010000, 1, 0x07
# CM attribute IDs (IBA 12.6; odpemu's proto/cm_mad.h)
CM_ATTRS = {0x0010: "REQ", 0x0011: "MRA", 0x0012: "REJ", 0x0013: "REP", 0x0014: "RTU",
            0x0015: "DREQ", 0x0016: "DREP", 0x0017: "SIDR_REQ", 0x0018: "SIDR_REP",
            0x0019: "LAP", 0x001A: "APR"}
CM_REQUIRED = ("REQ", "REP", "RTU", "DREQ", "DREP", "REJ")


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


def cm_attr(ip, ihl):
    """The attribute name of a CM MAD (UD SEND Only to QP1 with QP1's Q_Key and a MAD of
    the CM class), else None."""
    bth = ihl + 8
    deth, mad = bth + 12, bth + 12 + 8
    if ip[bth] != UD_SEND_ONLY or len(ip) < mad + 24 + 4:
        return None
    dqp = int.from_bytes(ip[bth + 5:bth + 8], "big")
    qkey = struct.unpack_from("!I", ip, deth)[0]
    if dqp != CM_QP or qkey != CM_QKEY or ip[mad] != MAD_BASE_VERSION \
            or ip[mad + 1] != CM_MGMT_CLASS:
        return None
    attr = struct.unpack_from("!H", ip, mad + 16)[0]
    return CM_ATTRS.get(attr, f"attribute {attr:#06x}")


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
    ok = True
    for name, vector in VECTORS.items():
        want = vector[-4:]
        direct, mine = icrc_direct(vector), icrc_scapy(vector)
        if direct != want or mine != want:
            print(f"icrc_check: self-test failed on the {name} vector: {want.hex()}, "
                  f"direct {direct.hex()}, scapy {mine.hex() if mine else None}",
                  file=sys.stderr)
            ok = False
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=ROCE_PORT, help="RoCEv2 UDP port")
    ap.add_argument("--require-cm", action="store_true",
                    help="fail unless REQ, REP, RTU, DREQ, DREP and REJ were all checked")
    ap.add_argument("capture")
    args = ap.parse_args()
    if args.port != ROCE_PORT:
        bind_layers(UDP, BTH, dport=args.port)
    if not self_test():
        return 1

    checked = bad = other = truncated = 0
    per_opcode, per_cm = collections.Counter(), collections.Counter()
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
        cm = cm_attr(ip, ihl)
        checked += 1
        per_opcode[opcode] += 1
        if cm:
            per_cm[cm] += 1
        if wire != direct or wire != mine:
            bad += 1
            if bad <= 20:
                print(f"icrc_check: frame {n} opcode {opcode:#04x}"
                      f"{' CM ' + cm if cm else ''} PSN "
                      f"{int.from_bytes(ip[ihl + 17:ihl + 20], 'big'):#08x}: on the wire "
                      f"{wire.hex()}, direct {direct.hex()}, "
                      f"scapy {mine.hex() if mine else 'no BTH'}", file=sys.stderr)
    reader.close()
    ops = " ".join(f"{op:#04x}:{k}" for op, k in sorted(per_opcode.items()))
    print(f"icrc_check: {checked} packets checked, {checked - bad} ICRCs match, {bad} "
          f"mismatch, {truncated} truncated, {other} other packets skipped")
    print(f"icrc_check: per opcode {ops}")
    cms = " ".join(f"{name}:{k}" for name, k in sorted(per_cm.items()))
    print(f"icrc_check: CM MADs {sum(per_cm.values())}: {cms or 'none'}")
    if checked == 0:
        print("icrc_check: no RoCEv2 packet to check", file=sys.stderr)
    missing = [name for name in CM_REQUIRED if not per_cm[name]] if args.require_cm else []
    if missing:
        print(f"icrc_check: --require-cm: no {', '.join(missing)} in the capture"
              f"{' (no CM MAD at all)' if not per_cm else ''}: their ICRCs went unchecked",
              file=sys.stderr)
    return 0 if checked and not bad and not truncated and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
