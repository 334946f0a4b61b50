/* SPDX-License-Identifier: MIT */
/* wire — the wire injector's rules: knobs, their syntax, the filter and the decision
 * (see wire.h). */
#include "wire.h"
#include "say.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "headers.h"
#include "opcode.h"

#define KNOB_NAME_(name, str) str,
#define CLASS_NAME_(name, str) str,
const char *const emu_wire_knob_names[] = { EMU_WIRE_KNOBS(KNOB_NAME_) "wire-match",
	"wire-peer", NULL };
static const char *const class_names[] = { EMU_WIRE_CLASSES(CLASS_NAME_) };
#undef KNOB_NAME_
#undef CLASS_NAME_
static_assert(sizeof(class_names) / sizeof(class_names[0]) == EMU_WIRE_NCLASSES,
	      "one name per class");
static_assert(EMU_WIRE_NCLASSES <= 32, "classes fit the match mask");

static const char *const dir_names[EMU_WIRE_NDIRS] = { "tx", "rx" };

#define TOKEN_MAX 128	/* one setting, as typed */
#define BYTE_MASKED 4	/* BTH byte 4 (FECN/BECN): the ICRC covers it as ones */

/* ---- classes ---- */

int emu_wire_class_of(const uint8_t *pkt, size_t len)
{
	const struct roce_opcode_info *info;
	bool resp;

	if (len < ROCE_BTH_LEN || !(info = roce_opcode_info(roce_bth_opcode_raw(pkt))))
		return -1;
	if (roce_bth_dqpn_raw(pkt) == ROCE_GSI_QPN)
		return EMU_WIRE_C_CM;
	resp = info->mask & ROCE_M_RESP;
	switch ((enum roce_class)info->cls) {
	case ROCE_CLASS_SEND: return EMU_WIRE_C_SEND;
	case ROCE_CLASS_WRITE: return EMU_WIRE_C_WRITE;
	case ROCE_CLASS_READ: return resp ? EMU_WIRE_C_READ_RESP : EMU_WIRE_C_READ;
	case ROCE_CLASS_ATOMIC: return resp ? EMU_WIRE_C_ATOMIC_RESP : EMU_WIRE_C_ATOMIC;
	case ROCE_CLASS_ATOMIC_WRITE: return EMU_WIRE_C_ATOMIC_WRITE;
	case ROCE_CLASS_FLUSH: return EMU_WIRE_C_FLUSH;
	case ROCE_CLASS_ACK: return EMU_WIRE_C_ACK;
	}
	return -1;
}

/* ---- the rules ---- */

static bool setting_on(enum emu_wire_knob k, const struct emu_wire_setting *s)
{
	if (k == EMU_WIRE_DELAY)
		return s->delay.kind != EMU_DELAY_FIXED || s->delay.a_us > 0;
	return s->p > 0;
}

static void update_on(struct emu_wire_rules *r)
{
	for (int d = 0; d < EMU_WIRE_NDIRS; d++) {
		r->on[d] = false;
		for (int k = 0; k < EMU_WIRE_NKNOBS; k++)
			r->on[d] |= setting_on((enum emu_wire_knob)k, &r->set[k][d]);
	}
}

void emu_wire_rules_init(struct emu_wire_rules *r, uint64_t seed)
{
	memset(r, 0, sizeof(*r));
	for (int k = 0; k < EMU_WIRE_NKNOBS; k++)
		for (int d = 0; d < EMU_WIRE_NDIRS; d++) {
			r->set[k][d].delay.kind = EMU_DELAY_FIXED;
			emu_rng_seed(&r->rng[k][d], seed,
				     EMU_STREAM_WIRE | (uint64_t)(k * 2 + d + 1) << 32);
		}
}

/* ---- durations and bursts ---- */

static const struct {
	const char *unit;
	double ns;
} units[] = { { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 } };

/* A duration with its unit at *p ("100ms", "1.5s"), at most EMU_WIRE_PERIOD_MAX_NS. */
static int parse_duration(const char **p, uint64_t *ns)
{
	const char *q = *p;
	double v;

	if (emu_number_parse(&q, 1e18, &v))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].unit);
		double t = v * units[i].ns + 0.5;

		if (strncmp(q, units[i].unit, n) || (q[n] && q[n] != '/'))
			continue;
		if (t > (double)EMU_WIRE_PERIOD_MAX_NS)
			return -EINVAL;
		*ns = (uint64_t)t;
		*p = q + n;
		return 0;
	}
	return -EINVAL;
}

/* "ON/PERIOD" (after the '@'). */
static int parse_burst(const char *s, struct emu_wire_burst *b)
{
	if (parse_duration(&s, &b->on_ns) || *s++ != '/' || parse_duration(&s, &b->period_ns) ||
	    *s || !b->on_ns || b->on_ns > b->period_ns)
		return -EINVAL;
	return 0;
}

/* In the largest unit that keeps it whole. */
static int format_duration(uint64_t ns, char *buf, size_t len)
{
	for (size_t i = sizeof(units) / sizeof(units[0]); i-- > 1; ) {
		uint64_t u = (uint64_t)units[i].ns;

		if (ns % u == 0)
			return snprintf(buf, len, "%llu%s", (unsigned long long)(ns / u),
					units[i].unit);
	}
	return snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

static bool burst_open(const struct emu_wire_burst *b, uint64_t now)
{
	return !b->period_ns || now % b->period_ns < b->on_ns;
}

/* ---- one setting: [DIR:]BODY[@ON/PERIOD] ---- */

static const char *const syntax[EMU_WIRE_NKNOBS] = {
	[EMU_WIRE_LOSS] = "want [tx:|rx:|both:]P[@ON/PERIOD], P a probability 0..1 "
		"(e.g. 0.02, rx:0.02, both:0.5@100ms/1s)",
	[EMU_WIRE_CORRUPT] = "want [tx:|rx:|both:]P[@ON/PERIOD], P a probability 0..1 "
		"(e.g. 0.001, rx:0.01)",
	[EMU_WIRE_DUP] = "want [tx:|rx:|both:]P[@ON/PERIOD], P a probability 0..1 "
		"(e.g. 0.02, rx:0.02)",
	[EMU_WIRE_REORDER] = "want [tx:|rx:|both:]P[:DEPTH][@ON/PERIOD], P a probability "
		"0..1, DEPTH 1..64 later packets (e.g. 0.01, 0.05:3)",
	[EMU_WIRE_DELAY] = "want [tx:|rx:|both:]DELAY[@ON/PERIOD], DELAY in microseconds: N, "
		"uniform:A-B, exp:MEAN or normal:MEAN,SD (e.g. 200, rx:exp:50)",
};

/* The direction prefix: the bits of the directions it names (tx when none), *s past it. */
static unsigned parse_dirs(const char **s)
{
	static const struct {
		const char *prefix;
		unsigned dirs;
	} pre[] = { { "tx:", 1u << EMU_WIRE_TX }, { "rx:", 1u << EMU_WIRE_RX },
		    { "both:", 1u << EMU_WIRE_TX | 1u << EMU_WIRE_RX } };

	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		if (!strncmp(*s, pre[i].prefix, strlen(pre[i].prefix))) {
			*s += strlen(pre[i].prefix);
			return pre[i].dirs;
		}
	return 1u << EMU_WIRE_TX;
}

static int parse_body(enum emu_wire_knob k, const char *s, struct emu_wire_setting *out)
{
	double v;

	if (k == EMU_WIRE_DELAY)
		return emu_delay_parse(s, &out->delay, NULL, 0);
	if (emu_number_parse(&s, 1.0, &out->p))
		return -EINVAL;
	if (k == EMU_WIRE_REORDER) {
		out->depth = 1;
		if (*s == ':') {
			s++;
			if (emu_number_parse(&s, EMU_WIRE_REORDER_MAX_DEPTH, &v) || v < 1 ||
			    v != (double)(unsigned)v)
				return -EINVAL;
			out->depth = (unsigned)v;
		}
	}
	return *s ? -EINVAL : 0;
}

/* One setting of knob k from tok (NUL-terminated, writable): its directions in *dirs. */
static int parse_setting(enum emu_wire_knob k, const char *value, char *tok,
			 struct emu_wire_setting *out, unsigned *dirs, char *msg, size_t msglen)
{
	const char *body = tok;
	char *at;

	memset(out, 0, sizeof(*out));
	out->delay.kind = EMU_DELAY_FIXED;
	*dirs = parse_dirs(&body);
	if ((at = strchr(body, '@')))
		*at++ = '\0';
	if (parse_body(k, body, out)) {
		emu_say(msg, msglen, "%s '%s': %s", emu_wire_knob_names[k], value, syntax[k]);
		return -EINVAL;
	}
	if (at && parse_burst(at, &out->burst)) {
		emu_say(msg, msglen, "%s '%s': the burst '@%s' is not @ON/PERIOD: give durations "
			"with a unit (ns, us, ms, s), 0 < ON <= PERIOD <= 1h, e.g. @100ms/1s",
			emu_wire_knob_names[k], value, at);
		return -EINVAL;
	}
	if (!setting_on(k, out)) {	/* off is off: no burst, no depth to remember */
		memset(out, 0, sizeof(*out));
		out->delay.kind = EMU_DELAY_FIXED;
	}
	return 0;
}

static int set_knob(struct emu_wire_rules *r, enum emu_wire_knob k, const char *value,
		    char *msg, size_t msglen)
{
	struct emu_wire_setting next[EMU_WIRE_NDIRS], one;
	char tok[TOKEN_MAX];
	unsigned dirs, ntok = 0;

	memcpy(next, r->set[k], sizeof(next));
	for (const char *p = value, *end; *p; p = end) {
		while (*p == ' ')
			p++;
		end = p + strcspn(p, " ");
		if (end == p)
			break;
		if ((size_t)(end - p) >= sizeof(tok)) {
			emu_say(msg, msglen, "%s '%s': a setting of %zu characters is too long: %s",
				emu_wire_knob_names[k], value, (size_t)(end - p), syntax[k]);
			return -EINVAL;
		}
		memcpy(tok, p, (size_t)(end - p));
		tok[end - p] = '\0';
		if (parse_setting(k, value, tok, &one, &dirs, msg, msglen))
			return -EINVAL;
		for (int d = 0; d < EMU_WIRE_NDIRS; d++)
			if (dirs & 1u << d)
				next[d] = one;
		ntok++;
	}
	if (!ntok) {
		emu_say(msg, msglen, "%s '%s': no setting: %s", emu_wire_knob_names[k], value,
			syntax[k]);
		return -EINVAL;
	}
	memcpy(r->set[k], next, sizeof(next));
	update_on(r);
	return 0;
}

static int format_setting(enum emu_wire_knob k, const struct emu_wire_setting *s, char *buf,
			  size_t len)
{
	char body[96], on[32], period[32];
	int n;

	if (k == EMU_WIRE_DELAY)
		emu_delay_format(&s->delay, body, sizeof(body));
	else
		emu_number_format(s->p, body, sizeof(body));
	n = (int)strlen(body);
	if (k == EMU_WIRE_REORDER && s->depth > 1)
		snprintf(body + n, sizeof(body) - (size_t)n, ":%u", s->depth);
	if (!s->burst.period_ns)
		return snprintf(buf, len, "%s", body);
	format_duration(s->burst.on_ns, on, sizeof(on));
	format_duration(s->burst.period_ns, period, sizeof(period));
	return snprintf(buf, len, "%s@%s/%s", body, on, period);
}

/* ---- the filter: --wire-match, --wire-peer ---- */

static void class_list(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int c = 0; c < EMU_WIRE_NCLASSES && n < len; c++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", c ? ", " : "", class_names[c]);
}

static int set_match(struct emu_wire_rules *r, const char *value, char *msg, size_t msglen)
{
	uint32_t mask = 0;
	char names[160];
	const char *p = value;
	size_t n;

	if (!strcmp(value, "all")) {
		r->match = 0;
		return 0;
	}
	do {
		int c;

		n = strcspn(p, ",");
		for (c = 0; c < EMU_WIRE_NCLASSES; c++)
			if (strlen(class_names[c]) == n && !strncmp(p, class_names[c], n))
				break;
		if (c == EMU_WIRE_NCLASSES) {
			class_list(names, sizeof(names));
			emu_say(msg, msglen, "wire-match '%s': '%.*s' is no opcode class: give all or "
				"a comma-separated list of %s", value, (int)n, p, names);
			return -EINVAL;
		}
		mask |= 1u << c;
		p += n;
	} while (*p++ == ',');
	r->match = mask;
	return 0;
}

static void format_match(const struct emu_wire_rules *r, char *buf, size_t len)
{
	size_t n = 0;

	if (!r->match) {
		snprintf(buf, len, "all");
		return;
	}
	buf[0] = '\0';
	for (int c = 0; c < EMU_WIRE_NCLASSES && n < len; c++)
		if (r->match & 1u << c)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
					      class_names[c]);
}

static int set_peer(struct emu_wire_rules *r, const char *value, char *msg, size_t msglen)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (!strcmp(value, "any")) {
		r->one_peer = false;
		return 0;
	}
	if (inet_pton(AF_INET, value, &a4) == 1) {
		r->peer = nic_gid_from_v4(ntohl(a4.s_addr));
	} else if (inet_pton(AF_INET6, value, &a6) == 1) {
		memcpy(r->peer.raw, &a6, sizeof(r->peer.raw));
	} else {
		emu_say(msg, msglen, "wire-peer '%s': want the IPv4 or IPv6 address of a peer "
			"daemon (e.g. 10.0.0.2) or any", value);
		return -EINVAL;
	}
	r->one_peer = true;
	return 0;
}

static void format_peer(const struct emu_wire_rules *r, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (!r->one_peer)
		snprintf(ip, sizeof(ip), "any");
	else if (nic_gid_is_v4(&r->peer))
		inet_ntop(AF_INET, r->peer.raw + 12, ip, sizeof(ip));
	else
		inet_ntop(AF_INET6, r->peer.raw, ip, sizeof(ip));
	snprintf(buf, len, "%s", ip);
}

/* ---- set and get by name ---- */

static int knob_of(const char *key)
{
	for (int k = 0; emu_wire_knob_names[k]; k++)
		if (!strcmp(key, emu_wire_knob_names[k]))
			return k;
	return -1;
}

int emu_wire_rules_set(struct emu_wire_rules *r, const char *key, const char *value,
		       char *msg, size_t msglen)
{
	int k = key ? knob_of(key) : -1;

	if (k < 0)
		return -ENOENT;
	if (!value) {
		emu_say(msg, msglen, "%s: no value", key);
		return -EINVAL;
	}
	if (k < EMU_WIRE_NKNOBS)
		return set_knob(r, (enum emu_wire_knob)k, value, msg, msglen);
	return k == EMU_WIRE_NKNOBS ? set_match(r, value, msg, msglen)
				    : set_peer(r, value, msg, msglen);
}

int emu_wire_rules_get(const struct emu_wire_rules *r, const char *key, char *value,
		       size_t len)
{
	int k = key ? knob_of(key) : -1;
	char one[EMU_WIRE_NDIRS][TOKEN_MAX];

	if (k < 0)
		return -ENOENT;
	if (k == EMU_WIRE_NKNOBS) {
		format_match(r, value, len);
	} else if (k > EMU_WIRE_NKNOBS) {
		format_peer(r, value, len);
	} else {
		for (int d = 0; d < EMU_WIRE_NDIRS; d++)
			format_setting((enum emu_wire_knob)k, &r->set[k][d], one[d], sizeof(one[d]));
		snprintf(value, len, "%s:%s %s:%s", dir_names[EMU_WIRE_TX], one[EMU_WIRE_TX],
			 dir_names[EMU_WIRE_RX], one[EMU_WIRE_RX]);
	}
	return 0;
}

/* ---- the decision ---- */

static bool matches(const struct emu_wire_rules *r, const struct nic_gid *peer,
		    const uint8_t *pkt, size_t len)
{
	int c;

	if (r->one_peer && memcmp(peer->raw, r->peer.raw, sizeof(peer->raw)))
		return false;
	if (!r->match)
		return true;
	c = emu_wire_class_of(pkt, len);
	return c >= 0 && (r->match & 1u << c);
}

/* A bit of the packet from the draw x, never in the masked byte. */
static long pick_bit(uint64_t x, size_t len)
{
	uint64_t bits = (uint64_t)len * 8;

	if (len <= BYTE_MASKED)
		return len ? (long)(x % bits) : -1;
	x %= bits - 8;
	return (long)(x >= BYTE_MASKED * 8 ? x + 8 : x);
}

void emu_wire_decide(struct emu_wire_rules *r, enum emu_wire_dir dir,
		     const struct nic_gid *peer, const uint8_t *pkt, size_t len, uint64_t now,
		     struct emu_wire_verdict *v)
{
	*v = (struct emu_wire_verdict){ .copies = 1, .corrupt_bit = -1 };
	if (!r->on[dir] || !matches(r, peer, pkt, len))
		return;
	v->matched = true;
	for (int k = 0; k < EMU_WIRE_NKNOBS; k++) {
		const struct emu_wire_setting *s = &r->set[k][dir];
		struct emu_rng *g = &r->rng[k][dir];
		bool hit;
		uint64_t x;

		if (!setting_on((enum emu_wire_knob)k, s))
			continue;
		/* Draw first, whatever the window says (wire.h RANDOMNESS). */
		switch ((enum emu_wire_knob)k) {
		case EMU_WIRE_LOSS:
			hit = emu_prob_draw(s->p, g);
			v->drop = hit && burst_open(&s->burst, now);
			break;
		case EMU_WIRE_CORRUPT:
			hit = emu_prob_draw(s->p, g);
			x = emu_rng_next(g);
			if (hit && burst_open(&s->burst, now))
				v->corrupt_bit = pick_bit(x, len);
			break;
		case EMU_WIRE_DUP:
			hit = emu_prob_draw(s->p, g);
			if (hit && burst_open(&s->burst, now))
				v->copies = 2;
			break;
		case EMU_WIRE_REORDER:
			hit = emu_prob_draw(s->p, g);
			if (hit && burst_open(&s->burst, now))
				v->hold = s->depth;
			break;
		case EMU_WIRE_DELAY:
			x = emu_delay_draw_ns(&s->delay, g);
			if (burst_open(&s->burst, now)) {
				v->delay = true;
				v->delay_ns = x;
			}
			break;
		case EMU_WIRE_NKNOBS:
			break;
		}
	}
	if (v->drop)		/* a lost packet is nothing else */
		*v = (struct emu_wire_verdict){ .matched = true, .drop = true, .copies = 1,
						.corrupt_bit = -1 };
	if (v->hold) {		/* held, then released: not delayed as well */
		v->delay = false;
		v->delay_ns = 0;
	}
}
