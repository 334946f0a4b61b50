/* SPDX-License-Identifier: MIT */
/* The CM MAD codec: every message type round trip with random field values (both
 * directions), field offsets against IBA 12.6 / 12.11 (known answers and the map of
 * reserved bits), malformed MADs and out-of-width values refused with the right errno,
 * rdma_cm's IP header and service IDs. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "bytes.h"
#include "cm_mad.h"
#include "t.h"

#define ROUNDS_PER_TYPE 2000

static const enum cm_attr supported[] = {
	CM_ATTR_REQ, CM_ATTR_MRA, CM_ATTR_REJ, CM_ATTR_REP, CM_ATTR_RTU,
	CM_ATTR_DREQ, CM_ATTR_DREP, CM_ATTR_SIDR_REQ, CM_ATTR_SIDR_REP,
};

/*
 * The test's own statement of every field's width (the offsets are checked below
 * against the spec's byte numbers): X(attr, member, width); width 0 marks a byte array.
 * It drives the random messages and the out-of-width checks.
 */
#define PATH_FIELDS(X, p) \
	X(REQ, p.local_lid, 16) X(REQ, p.remote_lid, 16) X(REQ, p.local_gid, 0) \
	X(REQ, p.remote_gid, 0) X(REQ, p.flow_label, 20) X(REQ, p.packet_rate, 6) \
	X(REQ, p.traffic_class, 8) X(REQ, p.hop_limit, 8) X(REQ, p.sl, 4) \
	X(REQ, p.subnet_local, 1) X(REQ, p.local_ack_timeout, 5)

#define FIELDS(X) \
	X(REQ, req.local_comm_id, 32) X(REQ, req.service_id, 64) \
	X(REQ, req.local_ca_guid, 64) X(REQ, req.local_qkey, 32) X(REQ, req.local_qpn, 24) \
	X(REQ, req.responder_resources, 8) X(REQ, req.local_eecn, 24) \
	X(REQ, req.initiator_depth, 8) X(REQ, req.remote_eecn, 24) \
	X(REQ, req.remote_cm_response_timeout, 5) X(REQ, req.transport_service_type, 2) \
	X(REQ, req.e2e_flow_control, 1) X(REQ, req.starting_psn, 24) \
	X(REQ, req.local_cm_response_timeout, 5) X(REQ, req.retry_count, 3) \
	X(REQ, req.pkey, 16) X(REQ, req.path_mtu, 4) X(REQ, req.rdc_exists, 1) \
	X(REQ, req.rnr_retry_count, 3) X(REQ, req.max_cm_retries, 4) X(REQ, req.srq, 1) \
	X(REQ, req.extended_transport_type, 3) PATH_FIELDS(X, req.primary) \
	PATH_FIELDS(X, req.alternate) X(REQ, req.sap_supported, 1) \
	X(REQ, req.private_data, 0) \
	X(MRA, mra.local_comm_id, 32) X(MRA, mra.remote_comm_id, 32) \
	X(MRA, mra.message_mraed, 2) X(MRA, mra.service_timeout, 5) \
	X(MRA, mra.private_data, 0) \
	X(REJ, rej.local_comm_id, 32) X(REJ, rej.remote_comm_id, 32) \
	X(REJ, rej.message_rejected, 2) X(REJ, rej.reject_info_length, 7) \
	X(REJ, rej.reason, 16) X(REJ, rej.ari, 0) X(REJ, rej.private_data, 0) \
	X(REP, rep.local_comm_id, 32) X(REP, rep.remote_comm_id, 32) \
	X(REP, rep.local_qkey, 32) X(REP, rep.local_qpn, 24) X(REP, rep.local_eecn, 24) \
	X(REP, rep.starting_psn, 24) X(REP, rep.responder_resources, 8) \
	X(REP, rep.initiator_depth, 8) X(REP, rep.target_ack_delay, 5) \
	X(REP, rep.failover_accepted, 2) X(REP, rep.e2e_flow_control, 1) \
	X(REP, rep.rnr_retry_count, 3) X(REP, rep.srq, 1) X(REP, rep.local_ca_guid, 64) \
	X(REP, rep.private_data, 0) \
	X(RTU, rtu.local_comm_id, 32) X(RTU, rtu.remote_comm_id, 32) \
	X(RTU, rtu.private_data, 0) \
	X(DREQ, dreq.local_comm_id, 32) X(DREQ, dreq.remote_comm_id, 32) \
	X(DREQ, dreq.remote_qpn_eecn, 24) X(DREQ, dreq.private_data, 0) \
	X(DREP, drep.local_comm_id, 32) X(DREP, drep.remote_comm_id, 32) \
	X(DREP, drep.private_data, 0) \
	X(SIDR_REQ, sidr_req.request_id, 32) X(SIDR_REQ, sidr_req.pkey, 16) \
	X(SIDR_REQ, sidr_req.service_id, 64) X(SIDR_REQ, sidr_req.private_data, 0) \
	X(SIDR_REP, sidr_rep.request_id, 32) X(SIDR_REP, sidr_rep.status, 8) \
	X(SIDR_REP, sidr_rep.info_length, 8) X(SIDR_REP, sidr_rep.qpn, 24) \
	X(SIDR_REP, sidr_rep.service_id, 64) X(SIDR_REP, sidr_rep.qkey, 32) \
	X(SIDR_REP, sidr_rep.info, 0) X(SIDR_REP, sidr_rep.private_data, 0)

struct field {
	enum cm_attr attr;
	const char *name;
	size_t off, size;
	unsigned width; /* 0: byte array */
};

static const struct field fields[] = {
#define X(attr, m, width) { CM_ATTR_##attr, #m, offsetof(struct cm_msg, u.m), \
	sizeof(((struct cm_msg *)0)->u.m), width },
	FIELDS(X)
#undef X
};

/* Values for a message: random, or every bit a field may hold set ("max"). */
struct gen {
	struct t_rng *r;
	int max;
};

static uint64_t width_mask(unsigned width)
{
	return width >= 64 ? ~0ull : (1ull << width) - 1;
}

static void member_put(struct cm_msg *m, const struct field *f, uint64_t v)
{
	uint8_t *p = (uint8_t *)m + f->off;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	if (f->size == 1) memcpy(p, &v8, 1);
	else if (f->size == 2) memcpy(p, &v16, 2);
	else if (f->size == 4) memcpy(p, &v32, 4);
	else memcpy(p, &v, 8);
}

/* The information lengths may not exceed their 72-byte arrays. */
static uint64_t length_limit(const struct field *f)
{
	if (!strcmp(f->name, "rej.reject_info_length"))
		return CM_REJ_ARI_LEN;
	if (!strcmp(f->name, "sidr_rep.info_length"))
		return CM_SIDR_REP_INFO_LEN;
	return 0;
}

static void gen_msg(struct gen *g, enum cm_attr attr, struct cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->attr = attr;
	if (g->max)
		m->hdr = (struct cm_mad_hdr){ 0xFF, 0xFFFF, 0xFFFF, ~0ull, ~0u };
	else
		m->hdr = (struct cm_mad_hdr){ CM_METHOD_SEND, (uint16_t)t_rand(g->r),
			(uint16_t)t_rand(g->r), t_rand(g->r), (uint32_t)t_rand(g->r) };
	for (size_t i = 0; i < T_ARRAY_SIZE(fields); i++) {
		const struct field *f = &fields[i];
		uint64_t limit = length_limit(f);

		if (f->attr != attr)
			continue;
		if (!f->width && g->max)
			memset((uint8_t *)m + f->off, 0xFF, f->size);
		else if (!f->width)
			t_fill(g->r, (uint8_t *)m + f->off, f->size);
		else if (limit)
			member_put(m, f, g->max ? limit : t_below(g->r, limit + 1));
		else
			member_put(m, f, g->max ? width_mask(f->width) : t_rand(g->r) & width_mask(f->width));
	}
}

/* struct → wire → struct gives the same struct (padding is zero on both sides). */
static void test_roundtrip(struct t_rng *r)
{
	struct gen g = { r, 0 };

	for (size_t t = 0; t < T_ARRAY_SIZE(supported); t++) {
		for (int round = 0; round < ROUNDS_PER_TYPE; round++) {
			struct cm_msg a, b;
			uint8_t wire[CM_MAD_LEN];
			int err;

			gen_msg(&g, supported[t], &a);
			err = cm_mad_build(&a, wire);
			T_EQ(err, 0, cm_attr_str(supported[t]));
			memset(&b, 0, sizeof(b));
			if (!err)
				err = cm_mad_parse(wire, sizeof(wire), &b);
			T_EQ(err, 0, "parse what we built");
			T_CHECK(!memcmp(&a, &b, sizeof(a)), "%s: round trip differs",
				cm_attr_str(supported[t]));
		}
	}
}

/* The reserved bits of each message, (MAD-data byte, mask), from the IBA tables. */
struct reserved { uint8_t byte, mask; };

static const struct reserved req_reserved[] = {
	{ 4, 0xFF }, { 5, 0xFF }, { 6, 0xFF }, { 7, 0xFF },
	{ 24, 0xFF }, { 25, 0xFF }, { 26, 0xFF }, { 27, 0xFF },
	{ 90, 0x0F }, { 91, 0xC0 }, { 94, 0x07 }, { 95, 0x07 },    /* primary path */
	{ 134, 0x0F }, { 135, 0xC0 }, { 138, 0x07 }, { 139, 0x03 }, /* alternate path */
};
static const struct reserved mra_reserved[] = { { 8, 0x3F }, { 9, 0x07 } };
static const struct reserved rej_reserved[] = { { 8, 0x3F }, { 9, 0x01 } };
static const struct reserved rep_reserved[] = {
	{ 15, 0xFF }, { 19, 0xFF }, { 23, 0xFF }, { 27, 0x0F },
};
static const struct reserved dreq_reserved[] = { { 11, 0xFF } };
static const struct reserved sidr_req_reserved[] = { { 6, 0xFF }, { 7, 0xFF } };
static const struct reserved sidr_rep_reserved[] = { { 6, 0xFF }, { 7, 0xFF }, { 11, 0xFF } };

struct reserved_map { enum cm_attr attr; const struct reserved *r; size_t n; };

#define MAP(a, t) { CM_ATTR_##a, t, T_ARRAY_SIZE(t) }
static const struct reserved_map reserved_maps[] = {
	MAP(REQ, req_reserved), MAP(MRA, mra_reserved), MAP(REJ, rej_reserved),
	MAP(REP, rep_reserved), { CM_ATTR_RTU, NULL, 0 }, MAP(DREQ, dreq_reserved),
	{ CM_ATTR_DREP, NULL, 0 }, MAP(SIDR_REQ, sidr_req_reserved),
	MAP(SIDR_REP, sidr_rep_reserved),
};

/* What a message with every field at its maximum looks like on the wire: all ones but
 * the reserved bits, and 72 in the information lengths. */
static void expected_max(const struct reserved_map *map, uint8_t data[CM_MAD_DATA_LEN])
{
	memset(data, 0xFF, CM_MAD_DATA_LEN);
	for (size_t i = 0; i < map->n; i++)
		data[map->r[i].byte] &= (uint8_t)~map->r[i].mask;
	if (map->attr == CM_ATTR_REJ)
		data[9] = CM_REJ_ARI_LEN << 1;
	if (map->attr == CM_ATTR_SIDR_REP)
		data[5] = CM_SIDR_REP_INFO_LEN;
}

/* Every field at its maximum sets exactly the non-reserved bits (so no field strays
 * into another or into a reserved bit, and none is missing); and a MAD whose reserved
 * bits are all set parses to the same message (they are ignored). */
static void test_reserved_bits(void)
{
	struct gen g = { NULL, 1 };

	for (size_t t = 0; t < T_ARRAY_SIZE(reserved_maps); t++) {
		const struct reserved_map *map = &reserved_maps[t];
		const char *name = cm_attr_str(map->attr);
		uint8_t want[CM_MAD_DATA_LEN], wire[CM_MAD_LEN];
		struct cm_msg m, back;

		gen_msg(&g, map->attr, &m);
		T_EQ(cm_mad_build(&m, wire), 0, name);
		expected_max(map, want);
		for (unsigned i = 0; i < CM_MAD_DATA_LEN; i++)
			T_CHECK(wire[CM_MAD_HDR_LEN + i] == want[i], "%s: data byte %u is 0x%02x, want 0x%02x",
				name, i, wire[CM_MAD_HDR_LEN + i], want[i]);
		T_EQ(roce_get16(wire + 18), 0, "header reserved bytes 18-19");
		memset(wire + CM_MAD_HDR_LEN, 0xFF, CM_MAD_DATA_LEN);
		memset(wire + 18, 0xFF, 2);
		if (map->attr == CM_ATTR_REJ)
			wire[CM_MAD_HDR_LEN + 9] = CM_REJ_ARI_LEN << 1 | 1;
		if (map->attr == CM_ATTR_SIDR_REP)
			wire[CM_MAD_HDR_LEN + 5] = CM_SIDR_REP_INFO_LEN;
		memset(&back, 0, sizeof(back));
		T_EQ(cm_mad_parse(wire, sizeof(wire), &back), 0, name);
		T_CHECK(!memcmp(&m, &back, sizeof(m)), "%s: reserved bits not ignored", name);
	}
}

/* wire → struct → wire: random MAD data comes back with its reserved bits cleared. */
static void test_wire_roundtrip(struct t_rng *r)
{
	for (size_t t = 0; t < T_ARRAY_SIZE(reserved_maps); t++) {
		const struct reserved_map *map = &reserved_maps[t];

		for (int round = 0; round < ROUNDS_PER_TYPE; round++) {
			uint8_t in[CM_MAD_LEN], out[CM_MAD_LEN];
			struct cm_msg m;
			int err;

			t_fill(r, in, sizeof(in));
			in[0] = CM_MAD_BASE_VERSION;
			in[1] = CM_MGMT_CLASS;
			in[2] = CM_CLASS_VERSION;
			roce_put16(in + 16, (uint16_t)map->attr);
			in[18] = in[19] = 0;
			if (map->attr == CM_ATTR_REJ)
				in[CM_MAD_HDR_LEN + 9] = (uint8_t)(t_below(r, 73) << 1);
			if (map->attr == CM_ATTR_SIDR_REP)
				in[CM_MAD_HDR_LEN + 5] = (uint8_t)t_below(r, 73);
			for (size_t i = 0; i < map->n; i++)
				in[CM_MAD_HDR_LEN + map->r[i].byte] &= (uint8_t)~map->r[i].mask;
			err = cm_mad_parse(in, sizeof(in), &m);
			T_EQ(err, 0, cm_attr_str(map->attr));
			if (!err)
				err = cm_mad_build(&m, out);
			T_EQ(err, 0, "build what we parsed");
			T_CHECK(!memcmp(in, out, sizeof(in)), "%s: wire round trip differs",
				cm_attr_str(map->attr));
		}
	}
}

/* Bytes at MAD offset `at` (header included) equal `want`. */
#define T_BYTES(wire, at, want, what) \
	T_CHECK(!memcmp((wire) + (at), (want), sizeof(want) - 1), "%s: bytes at MAD offset %d", \
		(what), (at))

static void known_answer_header(void)
{
	struct cm_msg m = { .hdr = { CM_METHOD_SEND, 0x1234, 0x5678, 0x0102030405060708ull,
				      0xA1B2C3D4 }, .attr = CM_ATTR_RTU };
	uint8_t w[CM_MAD_LEN];

	T_EQ(cm_mad_build(&m, w), 0, "RTU");
	T_BYTES(w, 0, "\x01\x07\x02\x03\x12\x34\x56\x78", "base/class/version/method/status/class-specific");
	T_BYTES(w, 8, "\x01\x02\x03\x04\x05\x06\x07\x08", "transaction ID");
	T_BYTES(w, 16, "\x00\x14\x00\x00\xA1\xB2\xC3\xD4", "attribute ID, reserved, modifier");
}

/* IBA 12.6.5 REQ: a field per spec row, at MAD offset = 24 + the table's byte. */
static void known_answer_req(void)
{
	struct cm_msg m = { .hdr = { .method = CM_METHOD_SEND }, .attr = CM_ATTR_REQ };
	struct cm_req *q = &m.u.req;
	uint8_t w[CM_MAD_LEN];

	q->local_comm_id = 0x11223344;
	q->service_id = CM_IP_PS_TCP | 4791;
	q->local_ca_guid = 0xA0A1A2A3A4A5A6A7ull;
	q->local_qkey = 0xB0B1B2B3;
	q->local_qpn = 0xABCDEF;
	q->responder_resources = 0x42;
	q->local_eecn = 0x010203;
	q->initiator_depth = 0x43;
	q->remote_eecn = 0x040506;
	q->remote_cm_response_timeout = 0x15;
	q->transport_service_type = 2;
	q->e2e_flow_control = 1;
	q->starting_psn = 0x123456;
	q->local_cm_response_timeout = 0x0A;
	q->retry_count = 5;
	q->pkey = 0xFFFF;
	q->path_mtu = 5;
	q->rdc_exists = 1;
	q->rnr_retry_count = 6;
	q->max_cm_retries = 0xF;
	q->srq = 1;
	q->extended_transport_type = 3;
	q->primary.local_lid = 0xC0C1;
	q->primary.remote_lid = 0xC2C3;
	memcpy(q->primary.local_gid, "\xfe\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01", 16);
	memcpy(q->primary.remote_gid, "\xfe\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02", 16);
	q->primary.flow_label = 0xABCDE;
	q->primary.packet_rate = 0x2A;
	q->primary.traffic_class = 0x60;
	q->primary.hop_limit = 0x40;
	q->primary.sl = 0x9;
	q->primary.subnet_local = 1;
	q->primary.local_ack_timeout = 0x13;
	q->alternate.local_lid = 0xD0D1;
	q->alternate.local_gid[0] = 0xEE;
	q->alternate.flow_label = 0x12345;
	q->alternate.local_ack_timeout = 0x1F;
	q->sap_supported = 1;
	memcpy(q->private_data, "\x00\x40\x12\xb7", 4);
	q->private_data[CM_REQ_PRIVATE_LEN - 1] = 0x99;

	T_EQ(cm_mad_build(&m, w), 0, "REQ");
	T_BYTES(w, 24, "\x11\x22\x33\x44\x00\x00\x00\x00", "local comm ID, reserved");
	T_BYTES(w, 32, "\x00\x00\x00\x00\x01\x06\x12\xb7", "service ID");
	T_BYTES(w, 40, "\xA0\xA1\xA2\xA3\xA4\xA5\xA6\xA7", "local CA GUID");
	T_BYTES(w, 48, "\x00\x00\x00\x00\xB0\xB1\xB2\xB3", "reserved, local Q_Key");
	T_BYTES(w, 56, "\xAB\xCD\xEF\x42\x01\x02\x03\x43", "local QPN, resp. resources, local EECN, init. depth");
	/* remote CM response timeout 0x15 << 3 | transport 2 << 1 | flow control 1 */
	T_BYTES(w, 64, "\x04\x05\x06\xAD", "remote EECN, timeout/transport/flow control");
	T_BYTES(w, 68, "\x12\x34\x56\x55", "starting PSN, local CM timeout 0x0A << 3 | retry 5");
	/* MTU 5 << 4 | RDC 1 << 3 | RNR 6; max CM retries 0xF << 4 | SRQ 1 << 3 | ext 3 */
	T_BYTES(w, 72, "\xFF\xFF\x5E\xFB", "P_Key, MTU/RDC/RNR retry, max retries/SRQ/ext.");
	T_BYTES(w, 76, "\xC0\xC1\xC2\xC3\xfe\x80", "primary LIDs, local GID");
	T_BYTES(w, 95, "\x01\xfe\x80", "primary local GID ends at 95, remote GID at 96");
	T_BYTES(w, 111, "\x02", "primary remote GID ends at 111");
	/* flow label in 112..114 (top 20 bits), packet rate in the low 6 bits of 115 */
	T_BYTES(w, 112, "\xAB\xCD\xE0\x2A\x60\x40\x98\x98", "primary flow label … ACK timeout");
	T_BYTES(w, 120, "\xD0\xD1\x00\x00\xEE", "alternate LIDs, local GID");
	T_BYTES(w, 156, "\x12\x34\x50\x00", "alternate flow label");
	T_BYTES(w, 163, "\xFC", "alternate ACK timeout 0x1F << 3 | SAP supported 1 << 2");
	T_BYTES(w, 164, "\x00\x40\x12\xb7", "private data at MAD offset 164");
	T_EQ(w[CM_MAD_LEN - 1], 0x99, "private data ends the MAD");
}

static void known_answer_rep(void)
{
	struct cm_msg m = { .attr = CM_ATTR_REP };
	struct cm_rep *p = &m.u.rep;
	uint8_t w[CM_MAD_LEN];

	*p = (struct cm_rep){ .local_comm_id = 0x01020304, .remote_comm_id = 0x05060708,
		.local_qkey = 0x090A0B0C, .local_qpn = 0x0D0E0F, .local_eecn = 0x101112,
		.starting_psn = 0x131415, .responder_resources = 0x16, .initiator_depth = 0x17,
		.target_ack_delay = 0x1F, .failover_accepted = 1, .e2e_flow_control = 1,
		.rnr_retry_count = 7, .srq = 1, .local_ca_guid = 0x18191A1B1C1D1E1Full };
	p->private_data[0] = 0x77;
	T_EQ(cm_mad_build(&m, w), 0, "REP");
	T_BYTES(w, 24, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0A\x0B\x0C", "comm IDs, Q_Key");
	T_BYTES(w, 36, "\x0D\x0E\x0F\x00\x10\x11\x12\x00\x13\x14\x15\x00", "QPN, EECN, PSN");
	/* delay 0x1F << 3 | failover 1 << 1 | flow control 1; RNR 7 << 5 | SRQ 1 << 4 */
	T_BYTES(w, 48, "\x16\x17\xFB\xF0", "resources, depth, delay/failover/fc, RNR/SRQ");
	T_BYTES(w, 52, "\x18\x19\x1A\x1B\x1C\x1D\x1E\x1F\x77", "local CA GUID, private data at 60");
}

static void known_answer_rej_mra(void)
{
	struct cm_msg m = { .attr = CM_ATTR_REJ };
	uint8_t w[CM_MAD_LEN];

	m.u.rej = (struct cm_rej){ .local_comm_id = 0xA1A2A3A4, .remote_comm_id = 0xB1B2B3B4,
		.message_rejected = CM_MSG_RESPONSE_REP, .reject_info_length = 16,
		.reason = CM_REJ_CONSUMER_DEFINED };
	m.u.rej.ari[0] = 0xAA;
	m.u.rej.private_data[0] = 0xBB;
	T_EQ(cm_mad_build(&m, w), 0, "REJ");
	T_BYTES(w, 24, "\xA1\xA2\xA3\xA4\xB1\xB2\xB3\xB4\x40\x20\x00\x1C\xAA",
		"comm IDs, rejected 1 << 6, info length 16 << 1, reason 28, ARI at 36");
	T_EQ(w[108], 0xBB, "REJ private data at MAD offset 108");

	m = (struct cm_msg){ .attr = CM_ATTR_MRA };
	m.u.mra = (struct cm_mra){ 1, 2, CM_MSG_RESPONSE_OTHER, 0x11, { 0xCC } };
	T_EQ(cm_mad_build(&m, w), 0, "MRA");
	T_BYTES(w, 24, "\x00\x00\x00\x01\x00\x00\x00\x02\x80\x88\xCC",
		"comm IDs, MRAed 2 << 6, timeout 0x11 << 3, private data at 34");
}

static void known_answer_others(void)
{
	struct cm_msg m = { .attr = CM_ATTR_DREQ };
	uint8_t w[CM_MAD_LEN];

	m.u.dreq = (struct cm_dreq){ 1, 2, 0xFEDCBA, { 0xDD } };
	T_EQ(cm_mad_build(&m, w), 0, "DREQ");
	T_BYTES(w, 32, "\xFE\xDC\xBA\x00\xDD", "remote QPN at 32, private data at 36");

	m = (struct cm_msg){ .attr = CM_ATTR_DREP };
	m.u.drep = (struct cm_drep){ 3, 4, { 0xEE } };
	T_EQ(cm_mad_build(&m, w), 0, "DREP");
	T_BYTES(w, 24, "\x00\x00\x00\x03\x00\x00\x00\x04\xEE", "DREP private data at 32");

	m = (struct cm_msg){ .attr = CM_ATTR_SIDR_REQ };
	m.u.sidr_req = (struct cm_sidr_req){ 0x01020304, 0x8001, CM_IP_PS_UDP | 7, { 0x5A } };
	T_EQ(cm_mad_build(&m, w), 0, "SIDR_REQ");
	T_BYTES(w, 24, "\x01\x02\x03\x04\x80\x01\x00\x00\x00\x00\x00\x00\x01\x11\x00\x07\x5A",
		"request ID, P_Key, service ID, private data at 40");

	m = (struct cm_msg){ .attr = CM_ATTR_SIDR_REP };
	m.u.sidr_rep = (struct cm_sidr_rep){ 0x01020304, 3, 72, 0x0A0B0C, 0x1122334455667788ull,
		0x80010000, { 0x6B }, { 0x7C } };
	T_EQ(cm_mad_build(&m, w), 0, "SIDR_REP");
	T_BYTES(w, 24, "\x01\x02\x03\x04\x03\x48\x00\x00\x0A\x0B\x0C\x00", "request ID, status, length, QPN");
	T_BYTES(w, 36, "\x11\x22\x33\x44\x55\x66\x77\x88\x80\x01\x00\x00\x6B", "service ID, Q_Key, info at 48");
	T_EQ(w[120], 0x7C, "SIDR_REP private data at MAD offset 120");
}

static void valid_mad(uint8_t w[CM_MAD_LEN], enum cm_attr attr)
{
	struct cm_msg m = { .hdr = { .method = CM_METHOD_SEND }, .attr = attr };

	T_EQ(cm_mad_build(&m, w), 0, cm_attr_str(attr));
}

static void test_malformed(void)
{
	uint8_t w[CM_MAD_LEN + 8];
	struct cm_msg m;

	valid_mad(w, CM_ATTR_REQ);
	T_EQ(cm_mad_parse(w, CM_MAD_LEN, &m), 0, "valid REQ");
	T_EQ(cm_mad_parse(w, sizeof(w), &m), 0, "a longer buffer: the MAD is its first 256 bytes");
	T_EQ(cm_mad_parse(w, CM_MAD_LEN - 1, &m), -EINVAL, "255 bytes");
	T_EQ(cm_mad_parse(w, 0, &m), -EINVAL, "0 bytes");
	w[0] = 2;
	T_EQ(cm_mad_parse(w, CM_MAD_LEN, &m), -EINVAL, "base version 2");
	w[0] = 0x80;
	T_EQ(cm_mad_parse(w, CM_MAD_LEN, &m), -EINVAL, "base version 0x80 (OPA)");
	valid_mad(w, CM_ATTR_REQ);
	w[1] = 0x03;
	T_EQ(cm_mad_parse(w, CM_MAD_LEN, &m), -EINVAL, "class 0x03 (SA)");
	valid_mad(w, CM_ATTR_REQ);
	w[2] = 1;
	T_EQ(cm_mad_parse(w, CM_MAD_LEN, &m), -EINVAL, "class version 1");
	static const struct { uint16_t id; int err; } attrs[] = {
		{ 0x0000, -EINVAL }, { 0x000F, -EINVAL }, { 0x001B, -EINVAL }, { 0xFFFF, -EINVAL },
		{ 0x0001, -EOPNOTSUPP }, { 0x0019, -EOPNOTSUPP }, { 0x001A, -EOPNOTSUPP },
	};
	for (size_t i = 0; i < T_ARRAY_SIZE(attrs); i++) {
		valid_mad(w, CM_ATTR_REQ);
		roce_put16(w + 16, attrs[i].id);
		T_CHECK(cm_mad_parse(w, CM_MAD_LEN, &m) == attrs[i].err, "attribute 0x%04x: want %d",
			attrs[i].id, attrs[i].err);
	}
	valid_mad(w, CM_ATTR_REJ);
	w[CM_MAD_HDR_LEN + 9] = 73 << 1;
	T_EQ(cm_mad_parse(w, CM_MAD_LEN, &m), -EINVAL, "REJ info length 73");
	w[CM_MAD_HDR_LEN + 9] = 72 << 1;
	T_EQ(cm_mad_parse(w, CM_MAD_LEN, &m), 0, "REJ info length 72");
	valid_mad(w, CM_ATTR_SIDR_REP);
	w[CM_MAD_HDR_LEN + 5] = 0xFF;
	T_EQ(cm_mad_parse(w, CM_MAD_LEN, &m), -EINVAL, "SIDR_REP info length 255");
}

/* Build refuses, before writing a byte, a value one past its field's width; the
 * largest value that fits passes. */
static void test_out_of_width(struct t_rng *r)
{
	struct gen g = { r, 0 };

	for (size_t i = 0; i < T_ARRAY_SIZE(fields); i++) {
		const struct field *f = &fields[i];
		uint64_t limit = length_limit(f);
		uint8_t w[CM_MAD_LEN];
		struct cm_msg m;

		if (!f->width || f->width == 8 * f->size)
			continue;
		gen_msg(&g, f->attr, &m);
		member_put(&m, f, limit ? limit + 1 : 1ull << f->width);
		memset(w, 0xA5, sizeof(w));
		T_CHECK(cm_mad_build(&m, w) == -EINVAL, "%s: one past the width", f->name);
		T_CHECK(w[0] == 0xA5 && w[CM_MAD_LEN - 1] == 0xA5, "%s: nothing written", f->name);
		member_put(&m, f, limit ? limit : width_mask(f->width));
		T_CHECK(cm_mad_build(&m, w) == 0, "%s: the largest value", f->name);
	}
}

static void test_build_errors(void)
{
	struct cm_msg m = { .attr = CM_ATTR_LAP };
	uint8_t w[CM_MAD_LEN];

	T_EQ(cm_mad_build(&m, w), -EOPNOTSUPP, "LAP");
	m.attr = CM_ATTR_APR;
	T_EQ(cm_mad_build(&m, w), -EOPNOTSUPP, "APR");
	m.attr = CM_ATTR_CLASS_PORT_INFO;
	T_EQ(cm_mad_build(&m, w), -EOPNOTSUPP, "ClassPortInfo");
	m.attr = (enum cm_attr)0x0020;
	T_EQ(cm_mad_build(&m, w), -EINVAL, "attribute 0x20");
	m.attr = (enum cm_attr)0x10010;
	T_EQ(cm_mad_build(&m, w), -EINVAL, "attribute wider than 16 bits");
}

static void test_names(void)
{
	T_CHECK(!strcmp(cm_attr_str(0x0010), "REQ"), "REQ name");
	T_CHECK(!strcmp(cm_attr_str(0x0018), "SIDR_REP"), "SIDR_REP name");
	T_CHECK(!strcmp(cm_attr_str(0x001A), "APR"), "APR name");
	T_CHECK(!strcmp(cm_attr_str(0x0020), "UNKNOWN"), "unknown attribute");
	T_EQ(CM_REJ_INVALID_ALT_PACKET_RATE, 23, "REJ 23");
	T_EQ(CM_REJ_INVALID_MTU, 26, "REJ 26");
	T_EQ(CM_REJ_CONSUMER_DEFINED, 28, "REJ 28");
	T_EQ(CM_REJ_INVALID_ALT_FLOW_LABEL, 33, "REJ 33");
	T_CHECK(!strcmp(cm_rej_reason_str(1), "NO_QP"), "REJ 1 name");
	T_CHECK(!strcmp(cm_rej_reason_str(10), "STALE_CONN"), "REJ 10 name");
	T_CHECK(!strcmp(cm_rej_reason_str(28), "CONSUMER_DEFINED"), "REJ 28 name");
	T_CHECK(!strcmp(cm_rej_reason_str(34), "UNKNOWN"), "REJ 34 is not assigned");
	T_CHECK(!strcmp(cm_rej_reason_str(0), "UNKNOWN"), "REJ 0");
	T_EQ(CM_REQ_PRIVATE_LEN + CM_SIDR_REP_PRIVATE_LEN + CM_MRA_PRIVATE_LEN, 92 + 136 + 222,
	     "private data sizes");
}

static void sin4(struct sockaddr_in *s, const char *addr, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	inet_pton(AF_INET, addr, &s->sin_addr);
}

static void sin6(struct sockaddr_in6 *s, const char *addr, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin6_family = AF_INET6;
	s->sin6_port = htons(port);
	inet_pton(AF_INET6, addr, &s->sin6_addr);
}

static void test_ip_hdr4(void)
{
	struct sockaddr_in src, dst, got_src, got_dst;
	struct sockaddr_storage ss, ds;
	uint8_t h[CM_IP_HDR_LEN];

	sin4(&src, "192.168.1.2", 49152);
	sin4(&dst, "10.0.0.1", 4791);
	T_EQ(cm_ip_hdr_encode(h, (struct sockaddr *)&src, (struct sockaddr *)&dst), 0, "IPv4 encode");
	T_BYTES(h, 0, "\x00\x40\xC0\x00", "version 0, IP version 4 << 4, source port");
	T_BYTES(h, 4, "\0\0\0\0\0\0\0\0\0\0\0\0\xC0\xA8\x01\x02", "source: zeros, then IPv4");
	T_BYTES(h, 20, "\0\0\0\0\0\0\0\0\0\0\0\0\x0A\x00\x00\x01", "destination");
	T_EQ(cm_ip_hdr_decode(h, sizeof(h), &ss, &ds), 0, "IPv4 decode");
	memcpy(&got_src, &ss, sizeof(got_src));
	memcpy(&got_dst, &ds, sizeof(got_dst));
	T_EQ(ss.ss_family, AF_INET, "source family");
	T_EQ(ds.ss_family, AF_INET, "destination family");
	T_EQ(got_src.sin_addr.s_addr, src.sin_addr.s_addr, "source address");
	T_EQ(got_src.sin_port, src.sin_port, "source port");
	T_EQ(got_dst.sin_addr.s_addr, dst.sin_addr.s_addr, "destination address");
	T_EQ(got_dst.sin_port, 0, "destination port: the service ID's");
}

static void test_ip_hdr6(void)
{
	struct sockaddr_in6 src, dst, got_src, got_dst;
	struct sockaddr_in src4;
	struct sockaddr_storage ss, ds;
	uint8_t h[CM_IP_HDR_LEN];

	sin6(&src, "fd00::1:2", 18515);
	sin6(&dst, "fe80::abcd", 1);
	T_EQ(cm_ip_hdr_encode(h, (struct sockaddr *)&src, (struct sockaddr *)&dst), 0, "IPv6 encode");
	T_BYTES(h, 0, "\x00\x60\x48\x53\xfd\x00", "IP version 6, port 18515, source");
	T_BYTES(h, 16, "\x00\x01\x00\x02\xfe\x80", "source ends at 19, destination at 20");
	T_EQ(cm_ip_hdr_decode(h, sizeof(h), &ss, &ds), 0, "IPv6 decode");
	memcpy(&got_src, &ss, sizeof(got_src));
	memcpy(&got_dst, &ds, sizeof(got_dst));
	T_EQ(ss.ss_family, AF_INET6, "family");
	T_CHECK(!memcmp(&got_src.sin6_addr, &src.sin6_addr, 16), "source address");
	T_CHECK(!memcmp(&got_dst.sin6_addr, &dst.sin6_addr, 16), "destination address");
	T_EQ(ntohs(got_src.sin6_port), 18515, "source port");

	sin4(&src4, "1.2.3.4", 1);
	T_EQ(cm_ip_hdr_encode(h, (struct sockaddr *)&src4, (struct sockaddr *)&dst), -EINVAL,
	     "mixed families");
	src.sin6_family = AF_UNIX;
	dst.sin6_family = AF_UNIX;
	T_EQ(cm_ip_hdr_encode(h, (struct sockaddr *)&src, (struct sockaddr *)&dst), -EAFNOSUPPORT,
	     "AF_UNIX");
	h[0] = 1;
	T_EQ(cm_ip_hdr_decode(h, sizeof(h), &ss, &ds), -EINVAL, "cma version 1");
	h[0] = 0;
	h[1] = 0x50;
	T_EQ(cm_ip_hdr_decode(h, sizeof(h), &ss, &ds), -EAFNOSUPPORT, "IP version 5");
	h[1] = 0x60;
	T_EQ(cm_ip_hdr_decode(h, CM_IP_HDR_LEN - 1, &ss, &ds), -EINVAL, "35 bytes");
}

static void test_service_id(void)
{
	enum cm_port_space ps = CM_PS_IB;
	uint16_t port = 0;

	T_EQ(CM_IP_PS_MASK, 0xFFFFFFFFFFFF0000ull, "mask");
	T_EQ(cm_service_id(CM_PS_TCP, 4791), 0x00000000010612B7ull, "TCP 4791");
	T_EQ(cm_service_id(CM_PS_UDP, 0), CM_IP_PS_UDP, "UDP 0");
	T_EQ(cm_service_id(CM_PS_IB, 0xFFFF), CM_IP_PS_IB | 0xFFFF, "IB 65535");
	T_EQ(cm_service_id((enum cm_port_space)0x0002, 1), 0, "IPoIB is not an IP port space here");
	T_EQ(cm_service_id_split(0x00000000010612B7ull, &ps, &port), 0, "split TCP");
	T_EQ(ps, CM_PS_TCP, "TCP");
	T_EQ(port, 4791, "port 4791");
	T_EQ(cm_service_id_split(CM_IP_PS_UDP | 9, &ps, &port), 0, "split UDP");
	T_EQ(ps, CM_PS_UDP, "UDP");
	T_EQ(port, 9, "port 9");
	T_EQ(cm_service_id_split(0x0000000001070000ull, &ps, &port), -EINVAL, "port space 0x107");
	T_EQ(cm_service_id_split(0x1000000001060000ull, &ps, &port), -EINVAL, "bits above the prefix");
	T_EQ(cm_service_id_split(0x0200000000000001ull, &ps, &port), -EINVAL, "a CM-assigned ID");
	T_EQ(ps, CM_PS_UDP, "untouched on error");
	T_CHECK(!strcmp(cm_port_space_str(CM_PS_IB), "IB"), "port space name");
}

int main(int argc, char **argv)
{
	struct t_rng rng = { t_seed(argc, argv, 12) };

	test_names();
	known_answer_header();
	known_answer_req();
	known_answer_rep();
	known_answer_rej_mra();
	known_answer_others();
	test_reserved_bits();
	test_malformed();
	test_build_errors();
	test_out_of_width(&rng);
	test_roundtrip(&rng);
	test_wire_roundtrip(&rng);
	test_ip_hdr4();
	test_ip_hdr6();
	test_service_id();
	return t_done("cm-mad");
}
