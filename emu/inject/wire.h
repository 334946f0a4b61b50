/* SPDX-License-Identifier: MIT */
/*
 * wire — seeded wire-fault injection: what happens to a RoCEv2 packet between this daemon
 * and the network, in either direction. A packet may be lost, duplicated, held back until
 * later packets to its peer have passed it (reordered), delayed, or corrupted after its
 * ICRC was sealed (the receiver then drops it as drop_icrc). docs/emu.md "Wire injection"
 * is the user's description of the knobs (--wire-loss, --wire-dup, --wire-reorder,
 * --wire-delay-us, --wire-corrupt, --wire-match, --wire-peer).
 *
 * Two parts, one header:
 *  - the RULES (wire.c): the knobs' settings per direction, their parsers and formats, the
 *    match filter (BTH opcode class, one peer) and the seeded streams. emu_wire_decide is
 *    a pure function of those, a packet's direction, peer and bytes, and the time: no
 *    socket, no clock of its own, no allocation;
 *  - the PATH (wire_path.c): the daemon's hook. emu_wire_pass applies the decision to one
 *    packet and hands it on through the out callback now, twice, later or never; delayed
 *    and held packets wait in a bounded queue that emu_wire_tick releases when due.
 *
 * The hook sits where nic/ meets the socket (ports.c's send, daemon.c's deliver), one
 * RoCE packet at a time: before the send batch groups packets into UDP segmentation
 * offload sends, and after a UDP_GRO buffer was cut back into its packets. So an offload
 * never hides a packet from it, and a GSO send carries only the packets that survived.
 *
 * RANDOMNESS. Each knob draws from a stream of its own per direction (inject.h: stream
 * EMU_STREAM_WIRE, sub-stream knob * 2 + direction + 1 in the upper 32 bits), and a fixed
 * number of draws per matched packet whether the knob fires or not and whether its burst
 * window is open or not: the n-th matched packet of a direction meets the n-th draws of
 * every knob that is on, whatever the clock says, and turning a knob on or off never moves
 * another knob's decisions. Draws per matched packet: loss, dup, reorder 1; corrupt 2 (the
 * chance, the bit); delay what emu_delay_draw_ns takes (0, 1 or 2). Packets the filter
 * does not match draw nothing.
 *
 * THREADING. The loop thread's alone: parsers and setters (the control socket is served
 * on the loop), decisions, the queue.
 */
#ifndef ODPEMU_EMU_WIRE_H
#define ODPEMU_EMU_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject.h"
#include "nic.h"

enum emu_wire_dir { EMU_WIRE_TX, EMU_WIRE_RX, EMU_WIRE_NDIRS };

/* The knobs that act on packets, in the order a packet meets them (their draws too). */
#define EMU_WIRE_KNOBS(X) \
	X(LOSS, "wire-loss") \
	X(CORRUPT, "wire-corrupt") \
	X(DUP, "wire-dup") \
	X(REORDER, "wire-reorder") \
	X(DELAY, "wire-delay-us")
enum emu_wire_knob {
#define EMU_WIRE_KNOB_ENUM_(name, str) EMU_WIRE_##name,
	EMU_WIRE_KNOBS(EMU_WIRE_KNOB_ENUM_)
#undef EMU_WIRE_KNOB_ENUM_
	EMU_WIRE_NKNOBS
};

/* What --wire-match names: a class of BTH opcodes (proto/opcode.h). QP1's MADs (UD SENDs
 * to QP 1) are "cm", not "send". Responders' packets: read-resp, atomic-resp, ack (ACKs
 * and NAKs). odpemu sends no CNP (it has no congestion control), so there is no class for
 * one. */
#define EMU_WIRE_CLASSES(X) \
	X(SEND, "send") \
	X(WRITE, "write") \
	X(READ, "read") \
	X(READ_RESP, "read-resp") \
	X(ATOMIC, "atomic") \
	X(ATOMIC_RESP, "atomic-resp") \
	X(ATOMIC_WRITE, "atomic-write") \
	X(FLUSH, "flush") \
	X(ACK, "ack") \
	X(CM, "cm")
enum emu_wire_class {
#define EMU_WIRE_CLASS_ENUM_(name, str) EMU_WIRE_C_##name,
	EMU_WIRE_CLASSES(EMU_WIRE_CLASS_ENUM_)
#undef EMU_WIRE_CLASS_ENUM_
	EMU_WIRE_NCLASSES
};

#define EMU_WIRE_REORDER_MAX_DEPTH 64u	/* --wire-reorder P:DEPTH, DEPTH 1..64 (1 default) */
#define EMU_WIRE_PERIOD_MAX_NS 3600000000000ull	/* a burst's period: one hour at most */

/* P@ON/PERIOD: the knob acts while the daemon's monotonic clock modulo period_ns is below
 * on_ns. period_ns 0: always. */
struct emu_wire_burst {
	uint64_t on_ns, period_ns;
};

/* One knob in one direction. Off: p == 0 (loss, corrupt, dup, reorder), a fixed delay of 0
 * (delay). */
struct emu_wire_setting {
	double p;
	unsigned depth;		/* reorder: later packets to the peer that pass a held one */
	struct emu_delay delay;	/* delay */
	struct emu_wire_burst burst;
};

/* The knobs, the filter and the streams. */
struct emu_wire_rules {
	struct emu_wire_setting set[EMU_WIRE_NKNOBS][EMU_WIRE_NDIRS];
	uint32_t match;			/* bits of enum emu_wire_class; 0: every packet */
	bool one_peer;			/* --wire-peer ADDR (else any peer) */
	struct nic_gid peer;
	bool on[EMU_WIRE_NDIRS];	/* any knob on in this direction */
	struct emu_rng rng[EMU_WIRE_NKNOBS][EMU_WIRE_NDIRS];
};

/* Every knob off, no filter, the streams seeded from seed. */
void emu_wire_rules_init(struct emu_wire_rules *r, uint64_t seed);

/*
 * emu_wire_rules_set — set a knob from its flag's name and value (without "--"):
 *   wire-loss, wire-dup, wire-corrupt   [DIR:]P[@ON/PERIOD]
 *   wire-reorder                        [DIR:]P[:DEPTH][@ON/PERIOD]
 *   wire-delay-us                       [DIR:]DELAY[@ON/PERIOD], DELAY as --fault-delay-us
 *   wire-match                          CLASS[,CLASS...] | all
 *   wire-peer                           ADDR (IPv4 or IPv6) | any
 * DIR is tx (the default: packets this daemon sends), rx (packets it receives) or both; a
 * value may hold several settings separated by one space ("tx:0.02 rx:0.01", what
 * emu_wire_rules_get gives), applied in order; a direction the value does not name keeps
 * its setting. P is a probability 0..1; ON and PERIOD are durations with a unit (ns, us,
 * ms, s), 0 < ON <= PERIOD <= 1 h. The streams are not reseeded.
 * Returns 0; -ENOENT if key is no wire knob (msg untouched: the caller may try others);
 * -EINVAL with a message naming the knob, the value and the syntax (nothing changed).
 */
int emu_wire_rules_set(struct emu_wire_rules *r, const char *key, const char *value,
		       char *msg, size_t msglen);
/* The knob's value in its flag's syntax (knobs: "tx:0.02 rx:0", each direction named),
 * which emu_wire_rules_set takes back: 0, or -ENOENT. */
int emu_wire_rules_get(const struct emu_wire_rules *r, const char *key, char *value,
		       size_t len);
/* The wire knobs' flag names, the five of EMU_WIRE_KNOBS then wire-match and wire-peer;
 * NULL-terminated. */
extern const char *const emu_wire_knob_names[];

/* The class of a packet (the UDP payload, BTH first), or -1: too short or an opcode
 * proto/opcode.h does not define. */
int emu_wire_class_of(const uint8_t *pkt, size_t len);

struct emu_wire_verdict {
	bool matched;		/* it met a knob that is on and drew */
	bool drop;		/* lost: nothing else applies */
	unsigned copies;	/* 1, or 2 when duplicated (the copy right behind it) */
	unsigned hold;		/* reordered: released after this many later packets to its
				 * peer (or EMU_WIRE_HOLD_NS); 0: not held. A held packet is
				 * not also delayed */
	bool delay;		/* through the delay line, leaving delay_ns from now */
	uint64_t delay_ns;
	long corrupt_bit;	/* -1, or the bit to flip: byte bit / 8, mask 1 << bit % 8 */
};

/*
 * emu_wire_decide — the fate of one packet of direction dir to (TX) or from (RX) peer,
 * its bytes pkt[0..len) (the UDP payload, BTH .. ICRC) at time now (the daemon's
 * monotonic clock, for bursts). Draws from r's streams (see RANDOMNESS). A corrupted bit
 * is never in BTH byte 4, which the ICRC covers as ones (the FECN/BECN byte, masked:
 * proto/icrc.c), so every corrupted packet fails the receiver's ICRC check.
 */
void emu_wire_decide(struct emu_wire_rules *r, enum emu_wire_dir dir,
		     const struct nic_gid *peer, const uint8_t *pkt, size_t len, uint64_t now,
		     struct emu_wire_verdict *v);

/* ---- the path ---- */

#define EMU_WIRE_QUEUE_MAX 4096u	/* delayed packets waiting; more are dropped */
#define EMU_WIRE_HOLD_MAX 64u		/* packets held for reordering at once */
#define EMU_WIRE_HOLD_NS 1000000ull	/* a held packet leaves after 1 ms at the latest */
#define EMU_WIRE_PKT_MAX 4544u		/* the largest packet it copies (EMU_UDP_MAX_DATAGRAM) */

/* The counters, one list: the struct and the device counters "wire_<name>" come from it.
 * Both directions summed. */
#define EMU_WIRE_STATS(X) \
	X(matched)	/* packets that met a knob that was on (they drew) */ \
	X(dropped)	/* lost */ \
	X(duplicated)	/* extra copies sent */ \
	X(reordered)	/* held until later packets passed them */ \
	X(delayed)	/* sent through the delay line */ \
	X(corrupted)	/* copies sent with one bit flipped */ \
	X(overflow)	/* dropped because the delay line was full (EMU_WIRE_QUEUE_MAX) */
#define EMU_WIRE_STAT_FIELD_(name) uint64_t name;
struct emu_wire_stats {
	EMU_WIRE_STATS(EMU_WIRE_STAT_FIELD_)
};
#undef EMU_WIRE_STAT_FIELD_

/* Where a packet goes once the injector lets it: dir TX, to peer (sport unused); dir RX,
 * from peer:sport, to nic/; to: NULL, or for RX the multicast group it was sent to (it
 * came on the group's socket, emu/io/mcast.c). pkt is valid during the call only. The callback may pass
 * packets of the other direction through emu_wire_pass (a received packet makes nic/
 * answer), never of its own. */
typedef void (*emu_wire_out_fn)(void *arg, enum emu_wire_dir dir, const struct nic_gid *peer,
				uint16_t sport, const struct nic_gid *to, const uint8_t *pkt,
				size_t len);

struct emu_wire_entry;

struct emu_wire {
	struct emu_wire_rules rules;
	emu_wire_out_fn out;
	void *out_arg;
	struct emu_wire_stats st;
	/* the delay line: a min-heap on (due, seq) */
	struct emu_wire_entry **heap;
	unsigned nheap;
	uint64_t seq;
	/* reordering: held packets, in the order they were held */
	struct emu_wire_entry *holds[EMU_WIRE_HOLD_MAX];
	unsigned nholds;
	uint8_t scratch[EMU_WIRE_NDIRS][EMU_WIRE_PKT_MAX];	/* corrupted or duplicated */
};

/* Rules off and seeded, an empty queue. 0 or -ENOMEM (the delay line's index). */
int emu_wire_init(struct emu_wire *w, uint64_t seed, emu_wire_out_fn out, void *out_arg);
/* Drop (free) whatever still waits. */
void emu_wire_fini(struct emu_wire *w);

/* Whether packets of dir must go through emu_wire_pass: some knob is on. When not, the
 * caller hands them on itself: the injector costs one test when it is off. */
static inline bool emu_wire_active(const struct emu_wire *w, enum emu_wire_dir dir)
{
	return w->rules.on[dir];
}

/* One packet of dir through the injector at now (see emu_wire_out_fn for the rest). */
void emu_wire_pass(struct emu_wire *w, enum emu_wire_dir dir, const struct nic_gid *peer,
		   uint16_t sport, const struct nic_gid *to, const uint8_t *pkt, size_t len,
		   uint64_t now);
/* Release what is due at now: delayed packets in due order (equal dues in the order they
 * came), then held packets whose 1 ms is over. Bounded by what waited when it was called.
 * Returns the number of packets released. */
unsigned emu_wire_tick(struct emu_wire *w, uint64_t now);
/* The earliest time emu_wire_tick has work, or UINT64_MAX. */
uint64_t emu_wire_next_due(const struct emu_wire *w);

#endif
