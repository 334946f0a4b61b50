/* SPDX-License-Identifier: MIT */
/* emu/wire: the knobs' parsers (good values and their formats, bad values and their
 * messages), the opcode classes (wire.h's rule, for every opcode byte), the decision
 * (repeatable per seed, rates, bursts, the filter, independent knobs and directions,
 * precedence, the corrupted bit) and the path without a socket (duplicates, corruption,
 * the delay line, holds, the queue's bound, a received packet that makes the other
 * direction send). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "headers.h"
#include "opcode.h"
#include "t.h"
#include "inject/wire.h"

#define MS 1000000ull

static struct nic_gid peer_a, peer_b;

/* A packet of len bytes (>= 16): a BTH with opcode and dqpn, then bytes of seed. */
static void make_pkt(uint8_t *p, uint8_t opcode, uint32_t dqpn, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
	memset(p, 0, ROCE_BTH_LEN);
	p[0] = opcode;
	roce_put24(p + 5, dqpn);
}

static int set(struct emu_wire_rules *r, const char *key, const char *value)
{
	char msg[320] = "";
	int rc = emu_wire_rules_set(r, key, value, msg, sizeof(msg));

	T_CHECK(rc == 0, "%s '%s' refused: %s", key, value, msg);
	return rc;
}

/* ---- parsers ---- */

static void good(const char *key, const char *value, const char *want)
{
	struct emu_wire_rules r, back;
	char got[128], again[128];

	emu_wire_rules_init(&r, 1);
	if (set(&r, key, value))
		return;
	T_EQ(emu_wire_rules_get(&r, key, got, sizeof(got)), 0, key);
	T_CHECK(!strcmp(got, want), "%s '%s' reads back '%s', want '%s'", key, value, got, want);
	/* what get gives, set takes back to the same rules */
	emu_wire_rules_init(&back, 1);
	if (set(&back, key, got))
		return;
	emu_wire_rules_get(&back, key, again, sizeof(again));
	T_CHECK(!strcmp(got, again), "%s: '%s' set again reads '%s'", key, got, again);
}

static void bad(const char *key, const char *value, const char *says)
{
	struct emu_wire_rules r;
	char msg[320] = "", before[128], after[128];

	emu_wire_rules_init(&r, 1);
	set(&r, key, !strcmp(key, "wire-match") ? "ack" : !strcmp(key, "wire-peer") ? "10.0.0.9"
		: "rx:0.25");
	emu_wire_rules_get(&r, key, before, sizeof(before));
	T_EQ(emu_wire_rules_set(&r, key, value, msg, sizeof(msg)), -EINVAL, value);
	emu_wire_rules_get(&r, key, after, sizeof(after));
	T_CHECK(!strcmp(before, after), "%s '%s': refused but changed '%s' to '%s'", key, value,
		before, after);
	T_CHECK(strstr(msg, key) && strstr(msg, value) && strstr(msg, says),
		"%s '%s': message '%s' lacks the knob, the value or '%s'", key, value, msg, says);
}

static void test_parse(void)
{
	struct emu_wire_rules r;
	char v[128];

	good("wire-loss", "0.02", "tx:0.02 rx:0");
	good("wire-loss", "rx:0.02", "tx:0 rx:0.02");
	good("wire-loss", "both:1", "tx:1 rx:1");
	good("wire-loss", "tx:0.5@100ms/1s rx:1e-3", "tx:0.5@100ms/1s rx:0.001");
	good("wire-loss", "0.5@1500us/2s", "tx:0.5@1500us/2s rx:0");
	good("wire-loss", "0.5@0.25s/1s", "tx:0.5@250ms/1s rx:0");
	good("wire-loss", "0@100ms/1s", "tx:0 rx:0");
	good("wire-loss", "  rx:0.1   tx:0.2 ", "tx:0.2 rx:0.1");
	good("wire-dup", "both:0.01", "tx:0.01 rx:0.01");
	good("wire-corrupt", "0.001@1s/1s", "tx:0.001@1s/1s rx:0");
	good("wire-reorder", "0.05", "tx:0.05 rx:0");
	good("wire-reorder", "0.05:3", "tx:0.05:3 rx:0");
	good("wire-reorder", "rx:1:64@5us/10us", "tx:0 rx:1:64@5us/10us");
	good("wire-delay-us", "200", "tx:200 rx:0");
	good("wire-delay-us", "rx:uniform:10-20", "tx:0 rx:uniform:10-20");
	good("wire-delay-us", "both:normal:100,20@10ms/100ms",
	     "tx:normal:100,20@10ms/100ms rx:normal:100,20@10ms/100ms");
	good("wire-delay-us", "exp:0.1", "tx:exp:0.1 rx:0");
	good("wire-match", "all", "all");
	good("wire-match", "ack,write", "write,ack");
	good("wire-match", "send,write,read,read-resp,atomic,atomic-resp,atomic-write,flush,"
	     "ack,cm", "send,write,read,read-resp,atomic,atomic-resp,atomic-write,flush,ack,cm");
	good("wire-peer", "10.0.0.2", "10.0.0.2");
	good("wire-peer", "fd00::1", "fd00::1");
	good("wire-peer", "any", "any");

	bad("wire-loss", "1.5", "P a probability 0..1");
	bad("wire-loss", "-0.1", "[tx:|rx:|both:]P");
	bad("wire-loss", "0.1x", "[tx:|rx:|both:]P");
	bad("wire-loss", "nan", "[tx:|rx:|both:]P");
	bad("wire-loss", "0x1", "[tx:|rx:|both:]P");
	bad("wire-loss", "up:0.1", "[tx:|rx:|both:]P");
	bad("wire-loss", "tx:0.1 rx:2", "[tx:|rx:|both:]P");
	bad("wire-loss", "", "no setting");
	bad("wire-loss", "   ", "no setting");
	bad("wire-loss", "0.5@", "@ON/PERIOD");
	bad("wire-loss", "0.5@100ms", "@ON/PERIOD");
	bad("wire-loss", "0.5@100/1s", "@ON/PERIOD");
	bad("wire-loss", "0.5@2s/1s", "0 < ON <= PERIOD");
	bad("wire-loss", "0.5@0ms/1s", "0 < ON <= PERIOD");
	bad("wire-loss", "0.5@1s/2h", "unit");
	bad("wire-loss", "0.5@1s/3601s", "1h");
	bad("wire-loss", "0.5@1s/1s/1s", "@ON/PERIOD");
	bad("wire-dup", "2", "probability");
	bad("wire-corrupt", "0.1:2", "probability");
	bad("wire-reorder", "0.1:0", "DEPTH 1..64");
	bad("wire-reorder", "0.1:65", "DEPTH 1..64");
	bad("wire-reorder", "0.1:1.5", "DEPTH 1..64");
	bad("wire-reorder", "0.1:", "DEPTH 1..64");
	bad("wire-delay-us", "sometimes", "uniform:A-B");
	bad("wire-delay-us", "uniform:5-1", "uniform:A-B");
	bad("wire-delay-us", "-1", "uniform:A-B");
	bad("wire-match", "writes", "send, write, read, read-resp");
	bad("wire-match", "", "no opcode class");
	bad("wire-match", "write,", "no opcode class");
	bad("wire-match", ",write", "no opcode class");
	bad("wire-match", "all,write", "no opcode class");
	bad("wire-peer", "nowhere", "IPv4 or IPv6");
	bad("wire-peer", "10.0.0.256", "IPv4 or IPv6");
	bad("wire-peer", "", "or any");

	emu_wire_rules_init(&r, 1);
	T_EQ(emu_wire_rules_set(&r, "fault-delay-us", "5", NULL, 0), -ENOENT, "not a wire knob");
	T_EQ(emu_wire_rules_get(&r, "evict-rate", v, sizeof(v)), -ENOENT, "not a wire knob");
	/* a direction a value does not name keeps its setting */
	set(&r, "wire-loss", "0.02");
	set(&r, "wire-loss", "rx:0.5");
	emu_wire_rules_get(&r, "wire-loss", v, sizeof(v));
	T_CHECK(!strcmp(v, "tx:0.02 rx:0.5"), "directions kept: '%s'", v);
	T_CHECK(r.on[EMU_WIRE_TX] && r.on[EMU_WIRE_RX], "both directions on");
	set(&r, "wire-loss", "both:0");
	T_CHECK(!r.on[EMU_WIRE_TX] && !r.on[EMU_WIRE_RX], "both directions off");
	for (int i = 0; emu_wire_knob_names[i]; i++)
		T_EQ(emu_wire_rules_get(&r, emu_wire_knob_names[i], v, sizeof(v)), 0,
		     emu_wire_knob_names[i]);
}

/* ---- classes ----
 * Not a second copy of emu_wire_class_of's switch: the rule wire.h states, checked for
 * every opcode byte. A class is a BTH opcode class of proto/opcode.h, named as proto names
 * it, split into request and response ("-resp") where the proto class has both (read,
 * atomic); ack has responses only. QP1's MADs are "cm" whatever their opcode. The class
 * depends on the opcode and destination QP alone, and --wire-match selects by it. */

#define CLASS_NAME_(name, str) str,
static const char *const class_names[] = { EMU_WIRE_CLASSES(CLASS_NAME_) };
#undef CLASS_NAME_

/* The name the rule gives a defined opcode's packets to any QP but QP1. */
static void rule_name(uint8_t op, char *buf, size_t len)
{
	const struct roce_opcode_info *info = roce_opcode_info(op);
	bool resp = info->mask & ROCE_M_RESP, has_req = false;

	for (unsigned i = 0; i < roce_opcode_count; i++) {
		const struct roce_opcode_info *o = roce_opcode_info(roce_opcodes[i]);

		has_req |= o->cls == info->cls && !(o->mask & ROCE_M_RESP);
	}
	snprintf(buf, len, "%s%s", roce_class_str((enum roce_class)info->cls),
		 resp && has_req ? "-resp" : "");
	for (char *c = buf; *c; c++)
		if (*c == '_')
			*c = '-';
}

static int class_of(uint8_t op, uint32_t dqpn, size_t len, uint8_t seed)
{
	uint8_t p[64];

	make_pkt(p, op, dqpn, sizeof(p), seed);
	return emu_wire_class_of(p, len);
}

/* Every opcode byte: defined ones get the class the rule names, at every length from a
 * BTH on and with any payload and QP (QP1 aside); undefined ones and short packets -1. */
static void test_class_rule(void)
{
	unsigned seen = 0;

	for (unsigned op = 0; op < 256; op++) {
		const struct roce_opcode_info *info = roce_opcode_info((uint8_t)op);
		int c = class_of((uint8_t)op, 0x12, 64, 1);
		char want[32];

		for (size_t len = 0; len < ROCE_BTH_LEN; len++)
			T_EQ(class_of((uint8_t)op, 0x12, len, 1), -1, "shorter than a BTH: none");
		if (!info) {
			T_EQ(c, -1, "an opcode proto/opcode.h does not define has no class");
			T_EQ(class_of((uint8_t)op, ROCE_GSI_QPN, 64, 1), -1, "not even to QP1");
			continue;
		}
		rule_name((uint8_t)op, want, sizeof(want));
		T_CHECK(c >= 0 && c < EMU_WIRE_NCLASSES && !strcmp(class_names[c], want),
			"%s: class %d (%s), the rule says %s", info->name, c,
			c >= 0 && c < EMU_WIRE_NCLASSES ? class_names[c] : "none", want);
		for (size_t len = ROCE_BTH_LEN; len <= 64; len++)
			for (uint32_t dqpn = 0; dqpn < 4; dqpn++)
				if (dqpn != ROCE_GSI_QPN)
					T_EQ(class_of((uint8_t)op, dqpn, len, (uint8_t)(len + dqpn)),
					     c, "the opcode alone decides");
		T_EQ(class_of((uint8_t)op, 0xFFFFFF, 64, 9), c, "the largest QPN too");
		T_EQ(class_of((uint8_t)op, ROCE_GSI_QPN, 64, 1), EMU_WIRE_C_CM, "to QP1: cm");
		T_CHECK(c != EMU_WIRE_C_CM, "%s: cm only to QP1", info->name);
		if (c >= 0)
			seen |= 1u << c;
	}
	T_EQ(seen, (1u << EMU_WIRE_NCLASSES) - 1 - (1u << EMU_WIRE_C_CM),
	     "every class but cm has an opcode");
}

/* The classes partition the opcodes exactly as (proto class, request or response) does:
 * two opcodes share a class if and only if they share both. */
static void test_class_partition(void)
{
	unsigned pairs = 0;

	for (unsigned i = 0; i < roce_opcode_count; i++) {
		bool first = true;	/* the first opcode of its (class, resp) pair */

		for (unsigned j = 0; j < roce_opcode_count; j++) {
			const struct roce_opcode_info *a = roce_opcode_info(roce_opcodes[i]);
			const struct roce_opcode_info *b = roce_opcode_info(roce_opcodes[j]);
			bool same_op = a->cls == b->cls &&
				       !(a->mask & ROCE_M_RESP) == !(b->mask & ROCE_M_RESP);
			bool same_class = class_of(roce_opcodes[i], 7, 64, 1) ==
					  class_of(roce_opcodes[j], 7, 64, 1);

			T_CHECK(same_op == same_class, "%s and %s: %s class", a->name, b->name,
				same_class ? "one" : "two");
			first &= !(same_op && j < i);
		}
		pairs += first;
	}
	T_EQ(pairs + 1, EMU_WIRE_NCLASSES, "a class per (proto class, request or response), "
	     "and cm");
}

/* --wire-match NAME with a certain loss drops exactly the packets of that class. */
static void test_class_match(void)
{
	struct emu_wire_rules r;
	struct emu_wire_verdict v;
	uint8_t p[64];

	for (int c = 0; c < EMU_WIRE_NCLASSES; c++) {
		emu_wire_rules_init(&r, 3);
		set(&r, "wire-match", class_names[c]);
		set(&r, "wire-loss", "1");
		for (unsigned op = 0; op < 256; op++)
			for (uint32_t dqpn = 0; dqpn < 3; dqpn++) {
				make_pkt(p, (uint8_t)op, dqpn, sizeof(p), 1);
				emu_wire_decide(&r, EMU_WIRE_TX, &peer_a, p, sizeof(p), 0, &v);
				T_CHECK(v.drop == (emu_wire_class_of(p, sizeof(p)) == c),
					"wire-match %s, opcode 0x%02x to QP %u: %s", class_names[c],
					op, (unsigned)dqpn, v.drop ? "dropped" : "passed");
			}
	}
}

static void test_classes(void)
{
	uint8_t p[64];

	test_class_rule();
	test_class_partition();
	test_class_match();
	/* examples of the rule, as a reader checks it */
	make_pkt(p, ROCE_OP_RC_ACKNOWLEDGE, 7, sizeof(p), 1);
	T_EQ(emu_wire_class_of(p, sizeof(p)), EMU_WIRE_C_ACK, "ACK");
	make_pkt(p, ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, 7, sizeof(p), 1);
	T_EQ(emu_wire_class_of(p, sizeof(p)), EMU_WIRE_C_ATOMIC_RESP, "atomic ACK");
	make_pkt(p, ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE, 7, sizeof(p), 1);
	T_EQ(emu_wire_class_of(p, sizeof(p)), EMU_WIRE_C_READ_RESP, "READ response");
	make_pkt(p, ROCE_OP_UD_SEND_ONLY, ROCE_GSI_QPN, sizeof(p), 1);
	T_EQ(emu_wire_class_of(p, sizeof(p)), EMU_WIRE_C_CM, "a MAD to QP1");
	make_pkt(p, ROCE_OP_UD_SEND_ONLY, 2, sizeof(p), 1);
	T_EQ(emu_wire_class_of(p, sizeof(p)), EMU_WIRE_C_SEND, "a UD SEND");
	make_pkt(p, 0x1F, 7, sizeof(p), 1);
	T_EQ(emu_wire_class_of(p, sizeof(p)), -1, "an undefined opcode");
	T_EQ(emu_wire_class_of(p, ROCE_BTH_LEN - 1), -1, "shorter than a BTH");
}

/* ---- the decision ---- */

static void all_knobs(struct emu_wire_rules *r, uint64_t seed)
{
	emu_wire_rules_init(r, seed);
	set(r, "wire-loss", "both:0.1");
	set(r, "wire-dup", "both:0.1");
	set(r, "wire-corrupt", "both:0.1");
	set(r, "wire-reorder", "both:0.1:2");
	set(r, "wire-delay-us", "both:exp:50");
}

static bool same_verdict(const struct emu_wire_verdict *a, const struct emu_wire_verdict *b)
{
	return a->matched == b->matched && a->drop == b->drop && a->copies == b->copies &&
	       a->hold == b->hold && a->delay == b->delay && a->delay_ns == b->delay_ns &&
	       a->corrupt_bit == b->corrupt_bit;
}

static void test_repeat(uint64_t seed)
{
	struct emu_wire_rules a, b, c;
	struct emu_wire_verdict va, vb, vc;
	uint8_t p[1024];
	int same = 0, diff = 0, n = 20000;

	all_knobs(&a, seed);
	all_knobs(&b, seed);
	all_knobs(&c, seed + 1);
	for (int i = 0; i < n; i++) {
		enum emu_wire_dir d = i % 3 ? EMU_WIRE_TX : EMU_WIRE_RX;
		size_t len = 16 + (size_t)i % 1000;

		make_pkt(p, ROCE_OP_RC_RDMA_WRITE_MIDDLE, 9, len, (uint8_t)i);
		emu_wire_decide(&a, d, &peer_a, p, len, (uint64_t)i * 1000, &va);
		emu_wire_decide(&b, d, &peer_a, p, len, (uint64_t)i * 1000, &vb);
		emu_wire_decide(&c, d, &peer_a, p, len, (uint64_t)i * 1000, &vc);
		same += same_verdict(&va, &vb);
		diff += !same_verdict(&va, &vc);
		if (va.drop && (va.copies != 1 || va.hold || va.delay || va.corrupt_bit >= 0))
			T_CHECK(0, "packet %d: dropped and something else", i);
		if (va.hold && va.delay)
			T_CHECK(0, "packet %d: held and delayed", i);
	}
	T_EQ(same, n, "one seed repeats every verdict");
	T_CHECK(diff > n / 2, "another seed differs: %d of %d", diff, n);
}

/* Each knob's rate, within five standard deviations. */
static void test_rates(uint64_t seed)
{
	struct emu_wire_rules r;
	struct emu_wire_verdict v;
	uint8_t p[256];
	int n = 200000, drop = 0, dup = 0, hold = 0, corrupt = 0, delayed = 0;
	double p_loss = 0.05, p_other = 0.1;

	all_knobs(&r, seed);
	set(&r, "wire-loss", "both:0.05");
	make_pkt(p, ROCE_OP_RC_SEND_ONLY, 9, sizeof(p), 3);
	for (int i = 0; i < n; i++) {
		emu_wire_decide(&r, EMU_WIRE_TX, &peer_a, p, sizeof(p), 0, &v);
		drop += v.drop;
		dup += v.copies == 2;
		hold += v.hold == 2;
		corrupt += v.corrupt_bit >= 0;
		delayed += v.delay;
	}
	T_CHECK(fabs(drop - n * p_loss) < 5 * sqrt(n * p_loss * (1 - p_loss)),
		"loss 0.05: %d of %d", drop, n);
	/* the others act on the packets not lost */
	for (int i = 0; i < 2; i++) {
		int got = i ? dup : corrupt;
		double m = (n - drop) * p_other;

		T_CHECK(fabs(got - m) < 5 * sqrt(m * (1 - p_other)), "%s 0.1: %d of %d",
			i ? "dup" : "corrupt", got, n - drop);
	}
	T_CHECK(fabs(hold - (n - drop) * p_other) < 5 * sqrt((n - drop) * p_other),
		"reorder 0.1: %d", hold);
	T_EQ(delayed + hold + drop, n, "every packet lost, held or delayed");
}

/* The corrupted bit: inside the packet, never in BTH byte 4, every other byte reached. */
static void test_corrupt_bit(uint64_t seed)
{
	struct emu_wire_rules r;
	struct emu_wire_verdict v;
	uint8_t p[20];
	unsigned hits[20] = { 0 };
	bool ok = true;

	emu_wire_rules_init(&r, seed);
	set(&r, "wire-corrupt", "1");
	make_pkt(p, ROCE_OP_RC_ACKNOWLEDGE, 9, sizeof(p), 3);
	for (int i = 0; i < 20000; i++) {
		emu_wire_decide(&r, EMU_WIRE_TX, &peer_a, p, sizeof(p), 0, &v);
		ok &= v.corrupt_bit >= 0 && v.corrupt_bit < (long)sizeof(p) * 8;
		if (v.corrupt_bit >= 0 && v.corrupt_bit < (long)sizeof(p) * 8)
			hits[v.corrupt_bit / 8]++;
	}
	T_CHECK(ok, "every corrupt bit inside the packet");
	T_EQ(hits[4], 0, "BTH byte 4 (masked out of the ICRC) never corrupted");
	for (int i = 0; i < 20; i++)
		if (i != 4)
			T_CHECK(hits[i] > 500, "byte %d corrupted %u times of 20000", i, hits[i]);
}

/* Turning knobs on or off, and the burst window, never move another knob's decisions. */
static void test_independence(uint64_t seed)
{
	struct emu_wire_rules only, all, burst;
	struct emu_wire_verdict a, b, c;
	uint8_t p[128];
	int same = 0, windowed = 0, n = 20000;

	emu_wire_rules_init(&only, seed);
	set(&only, "wire-loss", "0.2");
	all_knobs(&all, seed);
	set(&all, "wire-loss", "0.2");
	emu_wire_rules_init(&burst, seed);
	set(&burst, "wire-loss", "0.2@100ms/1s");
	make_pkt(p, ROCE_OP_RC_SEND_ONLY, 9, sizeof(p), 3);
	for (int i = 0; i < n; i++) {
		uint64_t now = (uint64_t)i * 37 * MS;	/* in and out of the window */
		bool open = now % (1000 * MS) < 100 * MS;

		emu_wire_decide(&only, EMU_WIRE_TX, &peer_a, p, sizeof(p), now, &a);
		emu_wire_decide(&all, EMU_WIRE_TX, &peer_a, p, sizeof(p), now, &b);
		emu_wire_decide(&burst, EMU_WIRE_TX, &peer_a, p, sizeof(p), now, &c);
		same += a.drop == b.drop;
		windowed += c.drop == (a.drop && open);
		/* the other direction's stream is the other's: RX packets do not shift TX ones */
		emu_wire_decide(&all, EMU_WIRE_RX, &peer_a, p, sizeof(p), now, &b);
	}
	T_EQ(same, n, "loss decisions with and without the other knobs");
	T_EQ(windowed, n, "a burst drops what the plain knob drops, inside its window");
}

static void test_burst(uint64_t seed)
{
	struct emu_wire_rules r;
	struct emu_wire_verdict v;
	uint8_t p[64];
	static const struct {
		uint64_t now;
		bool drop;
	} at[] = { { 0, true }, { 99 * MS, true }, { 100 * MS, false }, { 999 * MS, false },
		   { 1000 * MS, true }, { 7050 * MS, true }, { 7500 * MS, false } };

	emu_wire_rules_init(&r, seed);
	set(&r, "wire-loss", "1@100ms/1s");
	make_pkt(p, ROCE_OP_RC_SEND_ONLY, 9, sizeof(p), 3);
	for (size_t i = 0; i < T_ARRAY_SIZE(at); i++) {
		emu_wire_decide(&r, EMU_WIRE_TX, &peer_a, p, sizeof(p), at[i].now, &v);
		T_CHECK(v.drop == at[i].drop && v.matched, "loss 1@100ms/1s at %llu ms: drop %d",
			(unsigned long long)(at[i].now / MS), v.drop);
	}
}

/* Unmatched packets pass untouched and draw nothing; directions are apart. */
static void test_filter(uint64_t seed)
{
	struct emu_wire_rules f, twin;
	struct emu_wire_verdict v, w;
	uint8_t wr[64], ack[32], cm[64];
	int same = 0, n = 5000;

	all_knobs(&f, seed);
	all_knobs(&twin, seed);
	set(&f, "wire-match", "write,read");
	set(&f, "wire-peer", "10.0.0.2");
	make_pkt(wr, ROCE_OP_RC_RDMA_WRITE_FIRST, 9, sizeof(wr), 1);
	make_pkt(ack, ROCE_OP_RC_ACKNOWLEDGE, 9, sizeof(ack), 1);
	make_pkt(cm, ROCE_OP_UD_SEND_ONLY, ROCE_GSI_QPN, sizeof(cm), 1);
	for (int i = 0; i < n; i++) {
		emu_wire_decide(&f, EMU_WIRE_TX, &peer_a, ack, sizeof(ack), 0, &v);
		T_CHECK(!v.matched && !v.drop && v.copies == 1 && !v.delay && !v.hold &&
			v.corrupt_bit < 0, "an ACK passes a write,read filter");
		emu_wire_decide(&f, EMU_WIRE_TX, &peer_a, cm, sizeof(cm), 0, &v);
		T_CHECK(!v.matched, "a MAD passes a write,read filter");
		emu_wire_decide(&f, EMU_WIRE_TX, &peer_b, wr, sizeof(wr), 0, &v);
		T_CHECK(!v.matched, "another peer's WRITE passes");
		emu_wire_decide(&f, EMU_WIRE_TX, &peer_a, wr, sizeof(wr), 0, &v);
		emu_wire_decide(&twin, EMU_WIRE_TX, &peer_a, wr, sizeof(wr), 0, &w);
		same += same_verdict(&v, &w);
		if (t_failures)
			break;
	}
	T_EQ(same, n, "the matched packets meet the draws of an unfiltered injector");
	emu_wire_rules_init(&f, seed);
	set(&f, "wire-loss", "1");
	emu_wire_decide(&f, EMU_WIRE_RX, &peer_a, wr, sizeof(wr), 0, &v);
	T_CHECK(!v.matched && !v.drop, "a tx knob leaves received packets alone");
	emu_wire_decide(&f, EMU_WIRE_TX, &peer_a, wr, sizeof(wr), 0, &v);
	T_CHECK(v.matched && v.drop, "and acts on sent ones");
}

static void test_precedence(void)
{
	struct emu_wire_rules r;
	struct emu_wire_verdict v;
	uint8_t p[64];

	make_pkt(p, ROCE_OP_RC_SEND_ONLY, 9, sizeof(p), 3);
	emu_wire_rules_init(&r, 5);
	set(&r, "wire-loss", "1");
	set(&r, "wire-dup", "1");
	set(&r, "wire-corrupt", "1");
	set(&r, "wire-delay-us", "10");
	emu_wire_decide(&r, EMU_WIRE_TX, &peer_a, p, sizeof(p), 0, &v);
	T_CHECK(v.drop && v.copies == 1 && v.corrupt_bit < 0 && !v.delay, "lost is lost");
	set(&r, "wire-loss", "0");
	set(&r, "wire-reorder", "1:4");
	emu_wire_decide(&r, EMU_WIRE_TX, &peer_a, p, sizeof(p), 0, &v);
	T_CHECK(!v.drop && v.copies == 2 && v.corrupt_bit >= 0 && v.hold == 4 && !v.delay,
		"held, duplicated, corrupted, not delayed: drop %d copies %u bit %ld hold %u "
		"delay %d", v.drop, v.copies, v.corrupt_bit, v.hold, v.delay);
	set(&r, "wire-reorder", "0");
	emu_wire_decide(&r, EMU_WIRE_TX, &peer_a, p, sizeof(p), 0, &v);
	T_CHECK(v.delay && v.delay_ns == 10000, "delayed 10 us: %llu ns",
		(unsigned long long)v.delay_ns);
}

/* ---- the path ---- */

struct rec {
	unsigned n;
	enum emu_wire_dir dir[256];
	uint8_t tag[256];		/* pkt[ROCE_BTH_LEN]: which packet */
	size_t len[256];
	uint8_t first[256][64];
	bool has_to[256];		/* the multicast group came with it */
	struct nic_gid to[256];
	struct emu_wire *w;		/* answer: RX packets make a TX packet */
	bool answer;
};

static struct rec rec;

static void rec_out(void *arg, enum emu_wire_dir dir, const struct nic_gid *peer,
		    uint16_t sport, const struct nic_gid *to, const uint8_t *pkt, size_t len)
{
	struct rec *r = arg;
	uint8_t ack[32];

	(void)sport;
	if (r->n < 256) {
		r->has_to[r->n] = to != NULL;
		if (to)
			r->to[r->n] = *to;
		r->dir[r->n] = dir;
		r->tag[r->n] = pkt[ROCE_BTH_LEN];
		r->len[r->n] = len;
		memcpy(r->first[r->n], pkt, len < 64 ? len : 64);
		r->n++;
	}
	if (r->answer && dir == EMU_WIRE_RX) {	/* nic/ answers at once */
		make_pkt(ack, ROCE_OP_RC_ACKNOWLEDGE, 9, sizeof(ack), 0);
		ack[ROCE_BTH_LEN] = (uint8_t)(0x80 | pkt[ROCE_BTH_LEN]);
		emu_wire_pass(r->w, EMU_WIRE_TX, peer, 0, NULL, ack, sizeof(ack), 0);
	}
}

static void pass(struct emu_wire *w, enum emu_wire_dir dir, const struct nic_gid *peer,
		 uint8_t tag, uint64_t now)
{
	uint8_t p[48];

	make_pkt(p, ROCE_OP_RC_SEND_MIDDLE, 9, sizeof(p), tag);
	p[ROCE_BTH_LEN] = tag;
	emu_wire_pass(w, dir, peer, 4791, NULL, p, sizeof(p), now);
}

static void wire_up(struct emu_wire *w, uint64_t seed)
{
	memset(&rec, 0, sizeof(rec));
	rec.w = w;
	T_EQ(emu_wire_init(w, seed, rec_out, &rec), 0, "emu_wire_init");
}

static void order_is(const char *what, const uint8_t *tags, unsigned n)
{
	bool ok = rec.n == n;

	for (unsigned i = 0; ok && i < n; i++)
		ok = rec.tag[i] == tags[i];
	T_CHECK(ok, "%s: %u packets out, want %u in order", what, rec.n, n);
	for (unsigned i = 0; !ok && i < rec.n && i < 16; i++)
		printf("  out %u: tag %u\n", i, rec.tag[i]);
}

static void test_path_dup_corrupt(void)
{
	static struct emu_wire w;
	uint8_t p[48];
	int bits = 0;

	wire_up(&w, 3);
	T_CHECK(!emu_wire_active(&w, EMU_WIRE_TX) && !emu_wire_active(&w, EMU_WIRE_RX), "off");
	set(&w.rules, "wire-dup", "1");
	T_CHECK(emu_wire_active(&w, EMU_WIRE_TX) && !emu_wire_active(&w, EMU_WIRE_RX),
		"tx on, rx off");
	pass(&w, EMU_WIRE_TX, &peer_a, 1, 0);
	T_EQ(rec.n, 2, "a duplicate: two out");
	T_CHECK(rec.n == 2 && !memcmp(rec.first[0], rec.first[1], 48), "the same bytes twice");
	T_EQ(w.st.duplicated, 1, "wire_duplicated");
	set(&w.rules, "wire-dup", "0");
	set(&w.rules, "wire-corrupt", "1");
	rec.n = 0;
	make_pkt(p, ROCE_OP_RC_SEND_MIDDLE, 9, sizeof(p), 1);
	p[ROCE_BTH_LEN] = 1;
	emu_wire_pass(&w, EMU_WIRE_TX, &peer_a, 0, NULL, p, sizeof(p), 0);
	T_EQ(rec.n, 1, "a corrupted packet goes out");
	for (size_t i = 0; i < sizeof(p); i++)
		bits += __builtin_popcount(p[i] ^ rec.first[0][i]);
	T_EQ(bits, 1, "one bit flipped");
	T_CHECK(p[ROCE_BTH_LEN] == 1 && p[0] == ROCE_OP_RC_SEND_MIDDLE, "the caller's bytes untouched");
	T_EQ(w.st.corrupted, 1, "wire_corrupted");
	T_EQ(w.st.matched, 2, "wire_matched");
	emu_wire_fini(&w);
}

/* A datagram a multicast group's socket received keeps its group through the delay line
 * (nic_rx_mcast needs it); one that came to the device's address has none. */
static void test_path_group(void)
{
	static struct emu_wire w;
	struct nic_gid g = nic_gid_from_v4(0xE6010203u);
	uint8_t p[48];

	wire_up(&w, 3);
	set(&w.rules, "wire-delay-us", "rx:100");
	make_pkt(p, ROCE_OP_UD_SEND_ONLY, 0xFFFFFF, sizeof(p), 1);
	p[ROCE_BTH_LEN] = 1;
	emu_wire_pass(&w, EMU_WIRE_RX, &peer_a, 4791, &g, p, sizeof(p), 0);
	pass(&w, EMU_WIRE_RX, &peer_a, 2, 0);
	T_EQ(rec.n, 0, "both delayed");
	T_EQ(emu_wire_tick(&w, 1000000), 2, "both out");
	T_CHECK(rec.n == 2 && rec.has_to[0] && !memcmp(&rec.to[0], &g, sizeof(g)),
		"the group's datagram leaves with its group");
	T_CHECK(rec.n == 2 && !rec.has_to[1], "a unicast one with none");
	emu_wire_fini(&w);
}

static void test_path_delay(void)
{
	static struct emu_wire w;
	static const uint8_t fifo[] = { 1, 2, 3 };

	wire_up(&w, 3);
	set(&w.rules, "wire-delay-us", "100");
	pass(&w, EMU_WIRE_TX, &peer_a, 1, 0);
	pass(&w, EMU_WIRE_TX, &peer_a, 2, 10000);
	pass(&w, EMU_WIRE_RX, &peer_a, 9, 10000);	/* rx is off: at once */
	pass(&w, EMU_WIRE_TX, &peer_a, 3, 20000);
	T_EQ(rec.n, 1, "only the received packet left at once");
	T_EQ(emu_wire_next_due(&w), 100000, "due after 100 us");
	T_EQ(emu_wire_tick(&w, 99999), 0, "nothing before");
	rec.n = 0;
	T_EQ(emu_wire_tick(&w, 100000), 1, "the first at 100 us");
	T_EQ(emu_wire_tick(&w, 1000000), 2, "the rest later");
	order_is("a fixed delay keeps the order", fifo, 3);
	T_EQ(emu_wire_next_due(&w), UINT64_MAX, "nothing waits");
	T_EQ(w.st.delayed, 3, "wire_delayed");

	/* a spread delay: every packet comes out, in due order, some overtaken */
	set(&w.rules, "wire-delay-us", "uniform:0-1000");
	rec.n = 0;
	for (int i = 0; i < 200; i++)
		pass(&w, EMU_WIRE_TX, &peer_a, (uint8_t)i, 0);
	T_EQ(emu_wire_tick(&w, 2000000), 200, "200 released");
	{
		int overtaken = 0;

		for (unsigned i = 1; i < rec.n; i++)
			overtaken += rec.tag[i] < rec.tag[i - 1];
		T_CHECK(rec.n == 200 && overtaken > 10, "jitter reorders: %d", overtaken);
	}

	/* the bound: a full line drops */
	set(&w.rules, "wire-delay-us", "1000000");
	for (unsigned i = 0; i < EMU_WIRE_QUEUE_MAX + 5; i++)
		pass(&w, EMU_WIRE_TX, &peer_a, 1, 0);
	T_EQ(w.st.overflow, 5, "wire_overflow past EMU_WIRE_QUEUE_MAX");
	emu_wire_fini(&w);	/* frees what waits (ASan: no leak) */
}

static void test_path_reorder(void)
{
	static struct emu_wire w;
	static const uint8_t swapped[] = { 2, 9, 3, 1, 4 }, late[] = { 5 };

	wire_up(&w, 3);
	set(&w.rules, "wire-reorder", "1:2");
	pass(&w, EMU_WIRE_TX, &peer_a, 1, 0);		/* held */
	set(&w.rules, "wire-reorder", "0");
	pass(&w, EMU_WIRE_TX, &peer_a, 2, 0);		/* passes it: 1 to go */
	pass(&w, EMU_WIRE_TX, &peer_b, 9, 0);		/* another peer: does not count */
	pass(&w, EMU_WIRE_TX, &peer_a, 3, 0);		/* passes it: 1 leaves after 3 */
	pass(&w, EMU_WIRE_TX, &peer_a, 4, 0);
	order_is("held behind two later packets to its peer", swapped, 5);
	T_EQ(w.st.reordered, 1, "wire_reordered");
	set(&w.rules, "wire-reorder", "1:64");
	rec.n = 0;
	pass(&w, EMU_WIRE_TX, &peer_a, 5, 0);
	T_EQ(emu_wire_next_due(&w), EMU_WIRE_HOLD_NS, "a hold ends after 1 ms");
	T_EQ(emu_wire_tick(&w, EMU_WIRE_HOLD_NS - 1), 0, "not before");
	T_EQ(emu_wire_tick(&w, EMU_WIRE_HOLD_NS), 1, "then it leaves alone");
	order_is("released by its deadline", late, 1);
	/* the hold list is bounded: past it, packets go on in order */
	rec.n = 0;
	for (unsigned i = 0; i < EMU_WIRE_HOLD_MAX + 3; i++)
		pass(&w, EMU_WIRE_TX, &peer_a, (uint8_t)i, 0);
	T_EQ(rec.n, 3, "three went on unheld");
	T_EQ(emu_wire_tick(&w, 10 * MS), EMU_WIRE_HOLD_MAX, "the held ones leave");
	emu_wire_fini(&w);
}

/* A received packet released late makes nic/ answer through the other direction, which
 * is delayed itself: nothing is lost or freed twice (ASan), every answer leaves. */
static void test_path_reentry(void)
{
	static struct emu_wire w;
	unsigned rx = 0, tx = 0;

	wire_up(&w, 3);
	rec.answer = true;
	set(&w.rules, "wire-delay-us", "rx:50");
	set(&w.rules, "wire-reorder", "rx:0.3");
	set(&w.rules, "wire-dup", "both:0.3");
	set(&w.rules, "wire-corrupt", "0.3");
	set(&w.rules, "wire-delay-us", "tx:uniform:0-20");
	for (int i = 0; i < 40; i++)
		pass(&w, EMU_WIRE_RX, &peer_a, (uint8_t)i, (uint64_t)i * 1000);
	for (uint64_t t = 0; t < 100 * MS && emu_wire_next_due(&w) != UINT64_MAX; t += 10000)
		emu_wire_tick(&w, t);
	T_EQ(emu_wire_next_due(&w), UINT64_MAX, "everything left");
	for (unsigned i = 0; i < rec.n; i++) {
		rx += rec.dir[i] == EMU_WIRE_RX;
		tx += rec.dir[i] == EMU_WIRE_TX;
	}
	T_CHECK(rx >= 40 && tx >= rx, "%u received, %u answers", rx, tx);
	emu_wire_fini(&w);
}

int main(int argc, char **argv)
{
	uint64_t seed = t_seed(argc, argv, 7);

	peer_a = nic_gid_from_v4(0x0a000002);	/* 10.0.0.2 */
	peer_b = nic_gid_from_v4(0x0a000003);
	test_parse();
	test_classes();
	test_repeat(seed);
	test_rates(seed);
	test_corrupt_bit(seed);
	test_independence(seed);
	test_burst(seed);
	test_filter(seed);
	test_precedence();
	test_path_dup_corrupt();
	test_path_delay();
	test_path_group();
	test_path_reorder();
	test_path_reentry();
	return t_done("emu-wire");
}
