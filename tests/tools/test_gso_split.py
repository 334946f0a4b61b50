#!/usr/bin/env python3
"""test_gso_split.py GSO_SPLIT — odpemu-gso-split on synthetic captures.

Three RoCEv2 packets of one length to one peer, written as
 - one GSO super-frame: segment k sealed for IPv4 Identification base + k (as odpemud
   reseals a UDP_SEGMENT run);
 - one frame the receiver's GRO merged: every datagram sealed for its own Identification,
   0 (odpemud's unconnected DF sends);
 - three single frames;
each must come out as one frame per packet with every ICRC right, and a frame whose
ICRC is wrong for every split as "not splittable". Exit 0, or 1 naming the case."""
import importlib.machinery
import importlib.util
import os
import struct
import subprocess
import sys
import tempfile

tool = sys.argv[1]
loader = importlib.machinery.SourceFileLoader("gso_split", tool)
spec = importlib.util.spec_from_loader("gso_split", loader)
g = importlib.util.module_from_spec(spec)
loader.exec_module(g)

SRC, DST, PORT = bytes([10, 9, 0, 1]), bytes([10, 9, 0, 2]), 4791


def ip4(total, ident):
    h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, ident, 0x4000, 64, 17, 0,
                              SRC, DST))
    struct.pack_into("!H", h, 10, g.ip_checksum(bytes(h)))
    return bytes(h)


def packet(psn, ident):
    """BTH (SEND Only, dest QP 0x30) + 64 bytes + ICRC sealed for ident."""
    bth = struct.pack("!BBHII", 0x04, 0, 0xFFFF, 0x30, psn & 0xFFFFFF)
    body = bth + bytes((psn + i) & 0xFF for i in range(64))
    udp_len = 8 + len(body) + 4
    udp = struct.pack("!HHHH", 49152, PORT, udp_len, 0)
    crc = g.icrc(g.masked_ip4(ip4(20 + udp_len, ident), 20 + udp_len, ident),
                 g.masked_udp(udp, udp_len), body)
    return body + struct.pack("<I", crc)


def frame(payload, ident):
    udp = struct.pack("!HHHH", 49152, PORT, 8 + len(payload), 0)
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
    return eth + ip4(20 + len(udp) + len(payload), ident) + udp + payload


def run(frames):
    with tempfile.TemporaryDirectory() as d:
        inp, out = os.path.join(d, "in.pcap"), os.path.join(d, "out.pcap")
        with open(inp, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
            for fr in frames:
                f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)) + fr)
        r = subprocess.run([sys.executable, tool, inp, out], capture_output=True, text=True)
        return r.returncode, r.stdout.strip()


def expect(name, frames, rc, words):
    got_rc, line = run(frames)
    ok = got_rc == rc and all(w in line for w in words)
    print(f"{'ok' if ok else 'FAIL'}: {name}: exit {got_rc}: {line}")
    return ok


base = 0x1234
gso = b"".join(packet(100 + k, base + k) for k in range(3))
gro = b"".join(packet(200 + k, 0) for k in range(3))
bad = bytearray(gso)
bad[-1] ^= 0xFF
bad[len(packet(0, 0)) - 1] ^= 0xFF       # the first segment's ICRC too: no size fits
oks = [
    expect("GSO super-frame", [frame(gso, base)], 0,
           ["1 super-frames split into 3 packets", "0 not splittable", "0 segments"]),
    expect("GRO-merged frame", [frame(gro, 0)], 0,
           ["1 super-frames split into 3 packets", "0 not splittable", "0 segments"]),
    expect("single frames", [frame(packet(300 + k, 0), 0) for k in range(3)], 0,
           ["3 frames read, 0 super-frames", "0 not splittable"]),
    expect("no length fits", [frame(bytes(bad), base)], 1, ["1 not splittable"]),
]
sys.exit(0 if all(oks) else 1)
