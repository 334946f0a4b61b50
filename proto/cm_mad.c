/* SPDX-License-Identifier: MIT */
/* The CM MAD codec: one field table per message drives both directions, so a field's
 * place is written down once. Layouts: IBA vol. 1 ch. 12.6 and 12.11 message tables, as
 * Linux's include/rdma/ibta_vol1_c12.h and Wireshark's packet-infiniband.c also read
 * them. */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "bytes.h"
#include "cm_mad.h"

/*
 * Where one field lives: `width` bits starting at bit `bit` of MAD-data byte `byte`,
 * bits counted from the byte's most significant one (the spec's Byte[Bit] notation),
 * big-endian; and the struct cm_msg member at `off` of `size` bytes that holds it.
 * A field wider than 64 bits is a byte array (GID, ARI, private data) and starts on a
 * byte boundary.
 */
struct cm_field {
	uint8_t byte;
	uint8_t bit;
	uint16_t width;
	uint16_t off;
	uint8_t size;
};

#define CM_MEMBER_SIZE(m) sizeof(((struct cm_msg *)0)->m)
#define CM_INT(m, byte, bit, width) \
	{ (byte), (bit), (width), offsetof(struct cm_msg, m), CM_MEMBER_SIZE(m) }
#define CM_BYTES(m, byte) \
	{ (byte), 0, 8 * CM_MEMBER_SIZE(m), offsetof(struct cm_msg, m), CM_MEMBER_SIZE(m) }

/* A REQ path, 44 bytes from `at` (the REQ message table's primary and alternate rows). */
#define CM_PATH(p, at) \
	CM_INT(p.local_lid, (at) + 0, 0, 16), \
	CM_INT(p.remote_lid, (at) + 2, 0, 16), \
	CM_BYTES(p.local_gid, (at) + 4), \
	CM_BYTES(p.remote_gid, (at) + 20), \
	CM_INT(p.flow_label, (at) + 36, 0, 20), \
	CM_INT(p.packet_rate, (at) + 39, 2, 6), \
	CM_INT(p.traffic_class, (at) + 40, 0, 8), \
	CM_INT(p.hop_limit, (at) + 41, 0, 8), \
	CM_INT(p.sl, (at) + 42, 0, 4), \
	CM_INT(p.subnet_local, (at) + 42, 4, 1), \
	CM_INT(p.local_ack_timeout, (at) + 43, 0, 5)

/* IBA 12.6.5, REQ message contents. Bytes 4-7 and 24-27 are reserved (IBA 1.4 puts the
 * ECE vendor ID in 5-7; odpemu does not negotiate ECE). */
static const struct cm_field req_fields[] = {
	CM_INT(u.req.local_comm_id, 0, 0, 32),
	CM_INT(u.req.service_id, 8, 0, 64),
	CM_INT(u.req.local_ca_guid, 16, 0, 64),
	CM_INT(u.req.local_qkey, 28, 0, 32),
	CM_INT(u.req.local_qpn, 32, 0, 24),
	CM_INT(u.req.responder_resources, 35, 0, 8),
	CM_INT(u.req.local_eecn, 36, 0, 24),
	CM_INT(u.req.initiator_depth, 39, 0, 8),
	CM_INT(u.req.remote_eecn, 40, 0, 24),
	CM_INT(u.req.remote_cm_response_timeout, 43, 0, 5),
	CM_INT(u.req.transport_service_type, 43, 5, 2),
	CM_INT(u.req.e2e_flow_control, 43, 7, 1),
	CM_INT(u.req.starting_psn, 44, 0, 24),
	CM_INT(u.req.local_cm_response_timeout, 47, 0, 5),
	CM_INT(u.req.retry_count, 47, 5, 3),
	CM_INT(u.req.pkey, 48, 0, 16),
	CM_INT(u.req.path_mtu, 50, 0, 4),
	CM_INT(u.req.rdc_exists, 50, 4, 1),
	CM_INT(u.req.rnr_retry_count, 50, 5, 3),
	CM_INT(u.req.max_cm_retries, 51, 0, 4),
	CM_INT(u.req.srq, 51, 4, 1),
	CM_INT(u.req.extended_transport_type, 51, 5, 3),
	CM_PATH(u.req.primary, 52),
	CM_PATH(u.req.alternate, 96),
	CM_INT(u.req.sap_supported, 139, 5, 1),
	CM_BYTES(u.req.private_data, 140),
};

/* IBA 12.6.6, MRA message contents. */
static const struct cm_field mra_fields[] = {
	CM_INT(u.mra.local_comm_id, 0, 0, 32),
	CM_INT(u.mra.remote_comm_id, 4, 0, 32),
	CM_INT(u.mra.message_mraed, 8, 0, 2),
	CM_INT(u.mra.service_timeout, 9, 0, 5),
	CM_BYTES(u.mra.private_data, 10),
};

/* IBA 12.6.7, REJ message contents. */
static const struct cm_field rej_fields[] = {
	CM_INT(u.rej.local_comm_id, 0, 0, 32),
	CM_INT(u.rej.remote_comm_id, 4, 0, 32),
	CM_INT(u.rej.message_rejected, 8, 0, 2),
	CM_INT(u.rej.reject_info_length, 9, 0, 7),
	CM_INT(u.rej.reason, 10, 0, 16),
	CM_BYTES(u.rej.ari, 12),
	CM_BYTES(u.rej.private_data, 84),
};

/* IBA 12.6.8, REP message contents. Bytes 15, 19 and 23 are reserved (IBA 1.4: the ECE
 * vendor ID). */
static const struct cm_field rep_fields[] = {
	CM_INT(u.rep.local_comm_id, 0, 0, 32),
	CM_INT(u.rep.remote_comm_id, 4, 0, 32),
	CM_INT(u.rep.local_qkey, 8, 0, 32),
	CM_INT(u.rep.local_qpn, 12, 0, 24),
	CM_INT(u.rep.local_eecn, 16, 0, 24),
	CM_INT(u.rep.starting_psn, 20, 0, 24),
	CM_INT(u.rep.responder_resources, 24, 0, 8),
	CM_INT(u.rep.initiator_depth, 25, 0, 8),
	CM_INT(u.rep.target_ack_delay, 26, 0, 5),
	CM_INT(u.rep.failover_accepted, 26, 5, 2),
	CM_INT(u.rep.e2e_flow_control, 26, 7, 1),
	CM_INT(u.rep.rnr_retry_count, 27, 0, 3),
	CM_INT(u.rep.srq, 27, 3, 1),
	CM_INT(u.rep.local_ca_guid, 28, 0, 64),
	CM_BYTES(u.rep.private_data, 36),
};

/* IBA 12.6.9, RTU message contents. */
static const struct cm_field rtu_fields[] = {
	CM_INT(u.rtu.local_comm_id, 0, 0, 32),
	CM_INT(u.rtu.remote_comm_id, 4, 0, 32),
	CM_BYTES(u.rtu.private_data, 8),
};

/* IBA 12.6.10, DREQ message contents. */
static const struct cm_field dreq_fields[] = {
	CM_INT(u.dreq.local_comm_id, 0, 0, 32),
	CM_INT(u.dreq.remote_comm_id, 4, 0, 32),
	CM_INT(u.dreq.remote_qpn_eecn, 8, 0, 24),
	CM_BYTES(u.dreq.private_data, 12),
};

/* IBA 12.6.11, DREP message contents. */
static const struct cm_field drep_fields[] = {
	CM_INT(u.drep.local_comm_id, 0, 0, 32),
	CM_INT(u.drep.remote_comm_id, 4, 0, 32),
	CM_BYTES(u.drep.private_data, 8),
};

/* IBA 12.11.1, SIDR_REQ message contents. */
static const struct cm_field sidr_req_fields[] = {
	CM_INT(u.sidr_req.request_id, 0, 0, 32),
	CM_INT(u.sidr_req.pkey, 4, 0, 16),
	CM_INT(u.sidr_req.service_id, 8, 0, 64),
	CM_BYTES(u.sidr_req.private_data, 16),
};

/* IBA 12.11.2, SIDR_REP message contents. */
static const struct cm_field sidr_rep_fields[] = {
	CM_INT(u.sidr_rep.request_id, 0, 0, 32),
	CM_INT(u.sidr_rep.status, 4, 0, 8),
	CM_INT(u.sidr_rep.info_length, 5, 0, 8),
	CM_INT(u.sidr_rep.qpn, 8, 0, 24),
	CM_INT(u.sidr_rep.service_id, 12, 0, 64),
	CM_INT(u.sidr_rep.qkey, 20, 0, 32),
	CM_BYTES(u.sidr_rep.info, 24),
	CM_BYTES(u.sidr_rep.private_data, 96),
};

struct cm_layout {
	const struct cm_field *fields;
	size_t count;
};

#define CM_LAYOUT(t) { t, sizeof(t) / sizeof((t)[0]) }

/* By attribute ID; ClassPortInfo, LAP and APR have none (not supported). */
static const struct cm_layout layouts[] = {
	[CM_ATTR_REQ] = CM_LAYOUT(req_fields),
	[CM_ATTR_MRA] = CM_LAYOUT(mra_fields),
	[CM_ATTR_REJ] = CM_LAYOUT(rej_fields),
	[CM_ATTR_REP] = CM_LAYOUT(rep_fields),
	[CM_ATTR_RTU] = CM_LAYOUT(rtu_fields),
	[CM_ATTR_DREQ] = CM_LAYOUT(dreq_fields),
	[CM_ATTR_DREP] = CM_LAYOUT(drep_fields),
	[CM_ATTR_SIDR_REQ] = CM_LAYOUT(sidr_req_fields),
	[CM_ATTR_SIDR_REP] = CM_LAYOUT(sidr_rep_fields),
};

/* Every private data area ends the MAD: the tables above cover all 232 bytes. */
_Static_assert(140 + CM_REQ_PRIVATE_LEN == CM_MAD_DATA_LEN, "REQ private data");
_Static_assert(10 + CM_MRA_PRIVATE_LEN == CM_MAD_DATA_LEN, "MRA private data");
_Static_assert(84 + CM_REJ_PRIVATE_LEN == CM_MAD_DATA_LEN, "REJ private data");
_Static_assert(36 + CM_REP_PRIVATE_LEN == CM_MAD_DATA_LEN, "REP private data");
_Static_assert(8 + CM_RTU_PRIVATE_LEN == CM_MAD_DATA_LEN, "RTU private data");
_Static_assert(12 + CM_DREQ_PRIVATE_LEN == CM_MAD_DATA_LEN, "DREQ private data");
_Static_assert(8 + CM_DREP_PRIVATE_LEN == CM_MAD_DATA_LEN, "DREP private data");
_Static_assert(16 + CM_SIDR_REQ_PRIVATE_LEN == CM_MAD_DATA_LEN, "SIDR_REQ private data");
_Static_assert(96 + CM_SIDR_REP_PRIVATE_LEN == CM_MAD_DATA_LEN, "SIDR_REP private data");

static bool attr_known(unsigned attr)
{
	switch (attr) {
#define X(name, id) case id:
	CM_ATTRS(X)
#undef X
		return true;
	default:
		return false;
	}
}

/* The layout of a known attribute, NULL for one this codec does not support. */
static const struct cm_layout *layout_of(unsigned attr)
{
	if (attr >= sizeof(layouts) / sizeof(layouts[0]) || !layouts[attr].fields)
		return NULL;
	return &layouts[attr];
}

/* -EINVAL for an attribute outside the class, -EOPNOTSUPP for one without a layout. */
static int find_layout(unsigned attr, const struct cm_layout **layout)
{
	if (!attr_known(attr))
		return -EINVAL;
	*layout = layout_of(attr);
	return *layout ? 0 : -EOPNOTSUPP;
}

/* ---- fields: host member <-> 64-bit value <-> wire bits ---- */

static uint64_t member_get(const struct cm_msg *m, const struct cm_field *f)
{
	const uint8_t *p = (const uint8_t *)m + f->off;
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (f->size) {
	case 1: memcpy(&v8, p, 1); return v8;
	case 2: memcpy(&v16, p, 2); return v16;
	case 4: memcpy(&v32, p, 4); return v32;
	default: memcpy(&v64, p, 8); return v64;
	}
}

static void member_set(struct cm_msg *m, const struct cm_field *f, uint64_t v)
{
	uint8_t *p = (uint8_t *)m + f->off;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (f->size) {
	case 1: memcpy(p, &v8, 1); break;
	case 2: memcpy(p, &v16, 2); break;
	case 4: memcpy(p, &v32, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

static bool is_bytes(const struct cm_field *f)
{
	return f->width > 64;
}

static uint64_t width_mask(unsigned width)
{
	return width >= 64 ? ~0ull : (1ull << width) - 1;
}

/* The bytes a field touches, as one big-endian number (at most 8 bytes: every integer
 * field has bit + width <= 64). */
static unsigned span_bytes(const struct cm_field *f)
{
	return (f->bit + f->width + 7u) / 8u;
}

static uint64_t span_load(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static void span_store(uint8_t *p, unsigned n, uint64_t v)
{
	for (unsigned i = n; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t bits_get(const uint8_t *data, const struct cm_field *f)
{
	unsigned n = span_bytes(f), shift = 8 * n - f->bit - f->width;

	return span_load(data + f->byte, n) >> shift & width_mask(f->width);
}

/* Other fields may share the bytes: read, replace this field's bits, write back. */
static void bits_put(uint8_t *data, const struct cm_field *f, uint64_t v)
{
	unsigned n = span_bytes(f), shift = 8 * n - f->bit - f->width;
	uint64_t mask = width_mask(f->width) << shift;
	uint64_t span = span_load(data + f->byte, n);

	span_store(data + f->byte, n, (span & ~mask) | (v << shift & mask));
}

/* ---- checks that go beyond the bit widths ---- */

/* The information lengths say how much of a 72-byte array is meaningful; a receiver
 * copies that much, so no more than 72 may pass either way. */
static int check_lengths(const struct cm_msg *m)
{
	if (m->attr == CM_ATTR_REJ && m->u.rej.reject_info_length > CM_REJ_ARI_LEN)
		return -EINVAL;
	if (m->attr == CM_ATTR_SIDR_REP && m->u.sidr_rep.info_length > CM_SIDR_REP_INFO_LEN)
		return -EINVAL;
	return 0;
}

static int check_widths(const struct cm_msg *m, const struct cm_layout *l)
{
	for (size_t i = 0; i < l->count; i++) {
		const struct cm_field *f = &l->fields[i];

		if (!is_bytes(f) && (member_get(m, f) & ~width_mask(f->width)))
			return -EINVAL;
	}
	return 0;
}

/* ---- the common MAD header (IBA 13.4.3) ---- */

static void hdr_encode(uint8_t *p, const struct cm_msg *m)
{
	p[0] = CM_MAD_BASE_VERSION;
	p[1] = CM_MGMT_CLASS;
	p[2] = CM_CLASS_VERSION;
	p[3] = m->hdr.method;
	roce_put16(p + 4, m->hdr.status);
	roce_put16(p + 6, m->hdr.class_specific);
	roce_put64(p + 8, m->hdr.tid);
	roce_put16(p + 16, (uint16_t)m->attr);
	roce_put16(p + 18, 0); /* reserved */
	roce_put32(p + 20, m->hdr.attr_mod);
}

static int hdr_decode(const uint8_t *p, struct cm_msg *m)
{
	if (p[0] != CM_MAD_BASE_VERSION || p[1] != CM_MGMT_CLASS || p[2] != CM_CLASS_VERSION)
		return -EINVAL;
	m->hdr.method = p[3];
	m->hdr.status = roce_get16(p + 4);
	m->hdr.class_specific = roce_get16(p + 6);
	m->hdr.tid = roce_get64(p + 8);
	m->attr = (enum cm_attr)roce_get16(p + 16);
	m->hdr.attr_mod = roce_get32(p + 20);
	return 0;
}

/* ---- build and parse ---- */

int cm_mad_build(const struct cm_msg *m, uint8_t out[CM_MAD_LEN])
{
	const struct cm_layout *l;
	uint8_t *data = out + CM_MAD_HDR_LEN;
	int err = find_layout((unsigned)m->attr, &l);

	if (!err)
		err = check_widths(m, l);
	if (!err)
		err = check_lengths(m);
	if (err)
		return err;
	memset(out, 0, CM_MAD_LEN); /* reserved bits are zero */
	hdr_encode(out, m);
	for (size_t i = 0; i < l->count; i++) {
		const struct cm_field *f = &l->fields[i];

		if (is_bytes(f))
			memcpy(data + f->byte, (const uint8_t *)m + f->off, f->size);
		else
			bits_put(data, f, member_get(m, f));
	}
	return 0;
}

int cm_mad_parse(const uint8_t *buf, size_t len, struct cm_msg *m)
{
	const struct cm_layout *l;
	const uint8_t *data = buf + CM_MAD_HDR_LEN;
	int err;

	if (len < CM_MAD_LEN)
		return -EINVAL;
	err = hdr_decode(buf, m);
	if (!err)
		err = find_layout((unsigned)m->attr, &l);
	if (err)
		return err;
	memset(&m->u, 0, sizeof(m->u));
	for (size_t i = 0; i < l->count; i++) {
		const struct cm_field *f = &l->fields[i];

		if (is_bytes(f))
			memcpy((uint8_t *)m + f->off, data + f->byte, f->size);
		else
			member_set(m, f, bits_get(data, f));
	}
	return check_lengths(m);
}

/* ---- names ---- */

const char *cm_attr_str(uint16_t attr_id)
{
	switch (attr_id) {
#define X(name, id) case id: return #name;
	CM_ATTRS(X)
#undef X
	default: return "UNKNOWN";
	}
}

const char *cm_rej_reason_str(uint16_t reason)
{
	switch (reason) {
#define X(name, value) case value: return #name;
	CM_REJ_REASONS(X)
#undef X
	default: return "UNKNOWN";
	}
}

/* ---- rdma_cm's IP private-data header (IBA annex A11; Linux cma.c struct cma_hdr) ---- */

enum { IP_HDR_SPORT = 2, IP_HDR_SRC = 4, IP_HDR_DST = 20, IP_ADDR_LEN = 16, IP4_AT = 12 };

/* Copy the address of sa (AF_INET or AF_INET6) into a 16-byte header field. */
static void ip_addr_put(uint8_t *field, const struct sockaddr *sa)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;

	if (sa->sa_family == AF_INET) {
		memcpy(&sin, sa, sizeof(sin));
		memcpy(field + IP4_AT, &sin.sin_addr, 4);
	} else {
		memcpy(&sin6, sa, sizeof(sin6));
		memcpy(field, &sin6.sin6_addr, IP_ADDR_LEN);
	}
}

/* The port of sa as its wire bytes (sin_port is already in network order). */
static void ip_port_put(uint8_t *at, const struct sockaddr *sa)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;

	if (sa->sa_family == AF_INET) {
		memcpy(&sin, sa, sizeof(sin));
		memcpy(at, &sin.sin_port, 2);
	} else {
		memcpy(&sin6, sa, sizeof(sin6));
		memcpy(at, &sin6.sin6_port, 2);
	}
}

int cm_ip_hdr_encode(uint8_t out[CM_IP_HDR_LEN], const struct sockaddr *src,
		     const struct sockaddr *dst)
{
	unsigned ip_version;

	if (src->sa_family != dst->sa_family)
		return -EINVAL;
	if (src->sa_family == AF_INET)
		ip_version = 4;
	else if (src->sa_family == AF_INET6)
		ip_version = 6;
	else
		return -EAFNOSUPPORT;
	memset(out, 0, CM_IP_HDR_LEN);
	out[0] = CM_IP_HDR_VERSION;
	out[1] = (uint8_t)(ip_version << 4);
	ip_port_put(out + IP_HDR_SPORT, src);
	ip_addr_put(out + IP_HDR_SRC, src);
	ip_addr_put(out + IP_HDR_DST, dst);
	return 0;
}

/* Fill *ss from a 16-byte header field and a port in wire order. */
static void ip_addr_get(struct sockaddr_storage *ss, unsigned ip_version,
			const uint8_t *field, const uint8_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };

	memset(ss, 0, sizeof(*ss));
	if (ip_version == 4) {
		memcpy(&sin.sin_addr, field + IP4_AT, 4);
		if (port)
			memcpy(&sin.sin_port, port, 2);
		memcpy(ss, &sin, sizeof(sin));
	} else {
		memcpy(&sin6.sin6_addr, field, IP_ADDR_LEN);
		if (port)
			memcpy(&sin6.sin6_port, port, 2);
		memcpy(ss, &sin6, sizeof(sin6));
	}
}

int cm_ip_hdr_decode(const uint8_t *buf, size_t len, struct sockaddr_storage *src,
		     struct sockaddr_storage *dst)
{
	unsigned ip_version;

	if (len < CM_IP_HDR_LEN || buf[0] != CM_IP_HDR_VERSION)
		return -EINVAL;
	ip_version = buf[1] >> 4;
	if (ip_version != 4 && ip_version != 6)
		return -EAFNOSUPPORT;
	ip_addr_get(src, ip_version, buf + IP_HDR_SRC, buf + IP_HDR_SPORT);
	ip_addr_get(dst, ip_version, buf + IP_HDR_DST, NULL);
	return 0;
}

/* ---- rdma_cm service IDs (IBA annex A11.2) ---- */

_Static_assert((uint64_t)CM_PS_TCP << 16 == CM_IP_PS_TCP, "TCP port space");
_Static_assert((uint64_t)CM_PS_UDP << 16 == CM_IP_PS_UDP, "UDP port space");
_Static_assert((uint64_t)CM_PS_IB << 16 == CM_IP_PS_IB, "IB port space");

static bool port_space_known(uint64_t ps)
{
	switch (ps) {
#define X(name, value) case value:
	CM_PORT_SPACES(X)
#undef X
		return true;
	default:
		return false;
	}
}

const char *cm_port_space_str(enum cm_port_space ps)
{
	switch (ps) {
#define X(name, value) case CM_PS_##name: return #name;
	CM_PORT_SPACES(X)
#undef X
	default: return "UNKNOWN";
	}
}

uint64_t cm_service_id(enum cm_port_space ps, uint16_t port)
{
	return port_space_known((uint64_t)ps) ? (uint64_t)ps << 16 | port : 0;
}

int cm_service_id_split(uint64_t sid, enum cm_port_space *ps, uint16_t *port)
{
	uint64_t space = (sid & CM_IP_PS_MASK) >> 16;

	if (!port_space_known(space))
		return -EINVAL;
	*ps = (enum cm_port_space)space;
	*port = (uint16_t)sid;
	return 0;
}
