/* SPDX-License-Identifier: MIT */
/*
 * odpemu-perf's pure parts, without daemons: the capability checks (every "not supported"
 * and "over the limit" message, which the real daemon, supporting everything, cannot
 * provoke), the --verify pattern, the buffer layout's invariants, and the side channel's
 * encodings.
 */
#include <string.h>

#include "layout.h"
#include "pattern.h"
#include "perf.h"
#include "t.h"
#include "wire.h"

static void full_caps(struct odpemu_device_attr *a, struct odpemu_port_attr *p)
{
	memset(a, 0, sizeof(*a));
	memset(p, 0, sizeof(*p));
	a->max_mr_size = UINT64_MAX;
	a->max_qp = 1 << 16;
	a->max_qp_wr = 1 << 14;
	a->max_cqe = (1 << 15) - 1;
	a->max_inline_data = 160;
	a->odp_caps.general_caps = ODPEMU_ODP_SUPPORT | ODPEMU_ODP_SUPPORT_IMPLICIT;
	a->odp_caps.per_transport_caps.rc_odp_caps = 0xff;
	p->state = ODPEMU_PORT_ACTIVE;
	p->active_mtu = ODPEMU_MTU_1024;
	p->netdev_mtu = 1500;
	snprintf(p->netdev, sizeof(p->netdev), "eth0");
}

static struct perf_cfg base_cfg(void)
{
	return (struct perf_cfg){ .test = PERF_WRITE, .size = 65536, .iters = 10, .qps = 1,
		.tx_depth = 128, .rnr_retry = 7, .min_rnr_timer = 12 };
}

/* check_caps fails with a message holding `want`. */
static void refused(const struct perf_cfg *c, const struct odpemu_device_attr *a,
		    const struct odpemu_port_attr *p, const char *want)
{
	char msg[512] = "";

	T_CHECK(perf_check_caps(c, "odp9", a, p, msg, sizeof(msg)) == -1, "accepted, want '%s'",
		want);
	T_CHECK(strstr(msg, want) != NULL, "message '%s' lacks '%s'", msg, want);
}

static void test_caps(void)
{
	struct odpemu_device_attr a;
	struct odpemu_port_attr p;
	struct perf_cfg c = base_cfg();
	char msg[512];

	full_caps(&a, &p);
	T_CHECK(perf_check_caps(&c, "odp9", &a, &p, msg, sizeof(msg)) == 0, "plain write: %s", msg);
	c.odp = PERF_ODP_IMPLICIT;
	T_CHECK(perf_check_caps(&c, "odp9", &a, &p, msg, sizeof(msg)) == 0, "implicit: %s", msg);

	a.odp_caps.general_caps = ODPEMU_ODP_SUPPORT;
	refused(&c, &a, &p, "does not support implicit ODP: use --odp explicit");
	c.odp = PERF_ODP_EXPLICIT;
	a.odp_caps.general_caps = 0;
	refused(&c, &a, &p, "does not support ODP: run with --odp off");
	a.odp_caps.general_caps = ODPEMU_ODP_SUPPORT;
	a.odp_caps.per_transport_caps.rc_odp_caps = ODPEMU_ODP_SEND | ODPEMU_ODP_RECV;
	refused(&c, &a, &p, "does not support ODP for RC write");
	c.test = PERF_SEND;
	T_CHECK(perf_check_caps(&c, "odp9", &a, &p, msg, sizeof(msg)) == 0, "send: %s", msg);
	c.test = PERF_ATOMIC;
	refused(&c, &a, &p, "ODP for RC atomic");
	c.odp = PERF_ODP_OFF;
	T_CHECK(perf_check_caps(&c, "odp9", &a, &p, msg, sizeof(msg)) == 0, "ODP off: %s", msg);

	full_caps(&a, &p);
	c = base_cfg();
	c.size = 1ull << 32;
	refused(&c, &a, &p, "is over the largest message");
	c = base_cfg();
	c.inline_size = 200;
	refused(&c, &a, &p, "--inline 200 is over odp9's max_inline_data 160");
	c = base_cfg();
	c.tx_depth = 1 << 15;
	refused(&c, &a, &p, "is over odp9's max_qp_wr");
	c = base_cfg();
	c.mtu = 4096;
	refused(&c, &a, &p, "--mtu 4096 is over the active MTU 1024 of odp9");
	c = base_cfg();
	p.state = ODPEMU_PORT_DOWN;
	refused(&c, &a, &p, "bring the interface up");
}

static void test_pattern(void)
{
	uint8_t buf[9000], got, want;
	static const uint64_t lens[] = { 1, 2, 7, 8, 9, 63, 64, 4096, 8999 };

	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		uint64_t len = lens[k];

		pattern_fill(buf, len, 77);
		T_EQ(pattern_check(buf, len, 77, &got, &want), -1, "own pattern");
		T_EQ(buf[len - 1], pattern_marker(77), "last byte is the marker");
		if (len > 1)
			T_CHECK(pattern_check(buf, len, 78, &got, &want) >= 0, "len %llu: iteration "
				"78 accepted 77's data", (unsigned long long)len);
		buf[len / 2] ^= 0x10;
		T_EQ(pattern_check(buf, len, 77, &got, &want), len / 2, "flipped byte found");
	}
	T_CHECK(pattern_marker(0) != 0 && pattern_marker(254) != pattern_marker(255) &&
		pattern_marker(255) != 0, "markers are never 0 and change every iteration");
}

/* --regcache's stale messages: a buffer holding an earlier iteration's pattern is named
 * (by its first word from 9 bytes on; by the marker and a bounded search below, where
 * only some earlier iteration with the same bytes can be asked for); one holding this or
 * a later iteration's, zeros, or a damaged pattern is not. */
static void test_pattern_earlier(void)
{
	static uint8_t buf[9000];
	static const uint64_t lens[] = { 1, 2, 7, 8, 9, 63, 64, 4096, 8999 };
	static const uint64_t iters[] = { 0, 1, 254, 255, 256, 1000, 123456, 1ull << 40 };
	uint64_t it;

	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		for (size_t n = 0; n < sizeof(iters) / sizeof(iters[0]); n++) {
			uint64_t len = lens[k], j = iters[n];
			uint8_t got, want;

			it = ~0ull;
			pattern_fill(buf, len, j);
			T_CHECK(pattern_earlier(buf, len, j + 1, &it) && it <= j &&
				pattern_check(buf, len, it, &got, &want) < 0, "len %llu: iteration "
				"%llu's data not seen as earlier than %llu (got %llu)",
				(unsigned long long)len, (unsigned long long)j,
				(unsigned long long)j + 1, (unsigned long long)it);
			/* up to 8 bytes an earlier iteration may have the very same bytes */
			if (len <= 8)
				continue;
			T_CHECK(pattern_earlier(buf, len, j + 5000, &it) && it == j,
				"len %llu: iteration %llu named %llu", (unsigned long long)len,
				(unsigned long long)j, (unsigned long long)it);
			T_CHECK(!pattern_earlier(buf, len, j, &it), "len %llu: iteration %llu "
				"counted as earlier than itself", (unsigned long long)len,
				(unsigned long long)j);
			buf[len / 2] ^= 0x10;
			T_CHECK(!pattern_earlier(buf, len, j + 1, &it), "len %llu: a damaged "
				"message is stale", (unsigned long long)len);
		}
		memset(buf, 0, lens[k]);
		T_CHECK(!pattern_earlier(buf, lens[k], 1000000, &it), "len %llu: zeros are a "
			"message", (unsigned long long)lens[k]);
	}
}

/* The invariants of one layout: within the caps, slots wide enough, --cold receives
 * recyclable a quarter at a time, cold slots one fault-around window apart. */
static void check_layout(const struct perf_cfg *c)
{
	struct perf_layout sv, cl;

	perf_layout(c, c->size, true, &sv);
	perf_layout(c, c->size, false, &cl);
	T_CHECK(sv.target_stride >= c->size && cl.local_stride >= c->size,
		"stride below the message size");
	T_CHECK((uint64_t)sv.target_slots * sv.target_stride <= PERF_AREA_CAP + sv.target_stride,
		"target over the cap");
	T_CHECK((uint64_t)cl.local_slots * cl.local_stride <= PERF_AREA_CAP + cl.local_stride,
		"local over the cap");
	T_CHECK(sv.target_slots >= 1, "a server without a target");
	T_CHECK(cl.tx_depth >= 1 && cl.tx_depth <= c->tx_depth, "depth");
	if (c->test == PERF_SEND && !c->lat && c->cold)
		T_CHECK(sv.per_qp >= 4 * sv.rx_depth && sv.per_qp % 4 == 0,
			"cold receives: a quarter must hold rx_depth");
	if (c->cold)
		T_CHECK(sv.target_stride % PERF_COLD_ALIGN == 0,
			"cold slots not one fault-around window apart");
}

/* Layout invariants over a grid of settings. */
static void test_layout(void)
{
	static const uint64_t sizes[] = { 1, 8, 4096, 65536, 1 << 20, 8 << 20 };
	static const unsigned depths[] = { 1, 16, 128, 1024 };

	for (int t = PERF_WRITE; t <= PERF_FLUSH; t++)
		for (int k = 0; k < 6 * 4 * 8; k++) {
			struct perf_cfg c = base_cfg();
			int flags = k % 8;

			c.test = (enum perf_test)t;
			c.size = sizes[k / 32];
			c.tx_depth = depths[k / 8 % 4];
			c.cold = flags & 1;
			c.lat = flags & 2;
			c.qps = flags & 4 ? 3 : 1;
			if (c.lat)
				c.qps = c.tx_depth = 1;
			check_layout(&c);
		}
}

static void test_wire(void)
{
	struct perf_cfg c = base_cfg(), back;
	struct perf_ep e = { .addr = 0x7f0012345000ull, .stride = 65536, .rkey = 0x1234,
		.slots = 4096, .mtu = 4096, .nqp = 3, .qpn = { 17, 18, 19 },
		.psn = { 1, 0xffffff, 5 }, .iters = 99 }, eb;
	char line[4096], msg[256];

	c.odp = PERF_ODP_IMPLICIT;
	c.cold = c.verify = true;
	c.policy = ODPEMU_FAULT_POLICY_RNR;
	c.duration = 1.5;
	c.regcache = PERF_RC_LEASE;
	snprintf(c.evict_rate, sizeof(c.evict_rate), "1000");
	cfg_format(&c, line, sizeof(line));
	T_CHECK(cfg_parse(line, &back, msg, sizeof(msg)) == 0, "cfg round trip: %s", msg);
	T_CHECK(c.test == back.test && c.lat == back.lat && c.all == back.all &&
		c.size == back.size && c.iters == back.iters && c.duration == back.duration &&
		c.qps == back.qps && c.tx_depth == back.tx_depth && c.odp == back.odp &&
		c.cold == back.cold && c.verify == back.verify && c.policy == back.policy &&
		c.rnr_retry == back.rnr_retry && c.min_rnr_timer == back.min_rnr_timer &&
		c.regcache == back.regcache && !strcmp(c.evict_rate, back.evict_rate), "cfg changed on the way");
	T_CHECK(cfg_parse("HELLO v=99", &back, msg, sizeof(msg)) == -1 &&
		strstr(msg, "same odpemu-perf"), "another version is refused: %s", msg);
	memset(e.gid.raw, 0xab, 16);
	ep_format(&e, line, sizeof(line));
	T_CHECK(ep_parse(line, &eb) == 0, "endpoint parses");
	T_CHECK(e.addr == eb.addr && e.stride == eb.stride && e.rkey == eb.rkey &&
		e.slots == eb.slots && e.mtu == eb.mtu && e.nqp == eb.nqp && e.iters == eb.iters &&
		!memcmp(e.gid.raw, eb.gid.raw, 16) && !memcmp(e.qpn, eb.qpn, sizeof(e.qpn)) &&
		!memcmp(e.psn, eb.psn, sizeof(e.psn)), "endpoint changed on the way");
}

int main(void)
{
	test_caps();
	test_pattern();
	test_pattern_earlier();
	test_layout();
	test_wire();
	return t_done("tools-perf-units");
}
