/* SPDX-License-Identifier: MIT */
/*
 * The InfiniBand Communication Manager MAD (IBA vol. 1 ch. 12.6 and 13.4): the 256-byte
 * message two CMs exchange to connect and disconnect QPs. On RoCEv2 it travels as the
 * payload of a UD SEND_ONLY to QP 1 (the GSI) with Q_Key CM_GSI_QKEY. Also rdma_cm's
 * conventions on top of it: the IP private-data header and the service ID (IBA annex
 * A11, Linux cma.c).
 *
 * Pure functions: no I/O, no allocation. Host-order structs, one per message, in one
 * tagged union (struct cm_msg); cm_mad_build() and cm_mad_parse() convert it from and to
 * the wire. Every field's place comes from one table per message in cm_mad.c.
 *
 * Field offsets in the comments are bytes into the MAD data (after the 24-byte common
 * header), as the IBA tables give them; a MAD byte offset is 24 more.
 */
#ifndef ODPEMU_PROTO_CM_MAD_H
#define ODPEMU_PROTO_CM_MAD_H

#include <stddef.h>
#include <stdint.h>

struct sockaddr;
struct sockaddr_storage;

#define CM_MAD_LEN          256u
#define CM_MAD_HDR_LEN      24u
#define CM_MAD_DATA_LEN     (CM_MAD_LEN - CM_MAD_HDR_LEN)

/* The common MAD header's fixed values for the CM class (IBA 13.4.3, 13.4.4). */
#define CM_MAD_BASE_VERSION 1u
#define CM_MGMT_CLASS       0x07u
#define CM_CLASS_VERSION    2u
#define CM_METHOD_SEND      0x03u    /* every CM message is a Send (IBA 12.6) */

#define CM_GSI_QPN          1u
#define CM_GSI_QKEY         0x80010000u /* the GSI's well-known Q_Key (IBA ch. 13) */

/* Private data each message carries (IBA 12.6 message tables; Linux enum
 * ib_cm_data_size). The wire always holds all of it: there is no length field, so
 * rdma_cm's limits are these sizes (minus CM_IP_HDR_LEN in REQ and SIDR_REQ). */
#define CM_REQ_PRIVATE_LEN      92u
#define CM_MRA_PRIVATE_LEN      222u
#define CM_REJ_PRIVATE_LEN      148u
#define CM_REP_PRIVATE_LEN      196u
#define CM_RTU_PRIVATE_LEN      224u
#define CM_DREQ_PRIVATE_LEN     220u
#define CM_DREP_PRIVATE_LEN     224u
#define CM_SIDR_REQ_PRIVATE_LEN 216u
#define CM_SIDR_REP_PRIVATE_LEN 136u
#define CM_REJ_ARI_LEN          72u  /* additional reject information */
#define CM_SIDR_REP_INFO_LEN    72u  /* additional information */

/* Attribute IDs of the CM class (IBA 12.6; LAP/APR 12.8, SIDR 12.11, ClassPortInfo
 * 13.4.8.1): X(name, id). */
#define CM_ATTRS(X) \
	X(CLASS_PORT_INFO, 0x0001) \
	X(REQ,             0x0010) \
	X(MRA,             0x0011) \
	X(REJ,             0x0012) \
	X(REP,             0x0013) \
	X(RTU,             0x0014) \
	X(DREQ,            0x0015) \
	X(DREP,            0x0016) \
	X(SIDR_REQ,        0x0017) \
	X(SIDR_REP,        0x0018) \
	X(LAP,             0x0019) \
	X(APR,             0x001A)

enum cm_attr {
#define X(name, id) CM_ATTR_##name = id,
	CM_ATTRS(X)
#undef X
};

/* "REQ", "SIDR_REP", ... or "UNKNOWN" for an ID outside the class. */
const char *cm_attr_str(uint16_t attr_id);

/* REJ reasons (IBA 12.6.7, the REJ reason table; Linux enum ib_cm_rej_reason):
 * X(name, value). 34 is not assigned; 35 came with IBA 1.4 (enhanced connection
 * establishment). */
#define CM_REJ_REASONS(X) \
	X(NO_QP,                        1) \
	X(NO_EEC,                       2) \
	X(NO_RESOURCES,                 3) \
	X(TIMEOUT,                      4) \
	X(UNSUPPORTED,                  5) \
	X(INVALID_COMM_ID,              6) \
	X(INVALID_COMM_INSTANCE,        7) \
	X(INVALID_SERVICE_ID,           8) \
	X(INVALID_TRANSPORT_TYPE,       9) \
	X(STALE_CONN,                   10) \
	X(RDC_NOT_EXIST,                11) \
	X(INVALID_GID,                  12) \
	X(INVALID_LID,                  13) \
	X(INVALID_SL,                   14) \
	X(INVALID_TRAFFIC_CLASS,        15) \
	X(INVALID_HOP_LIMIT,            16) \
	X(INVALID_PACKET_RATE,          17) \
	X(INVALID_ALT_GID,              18) \
	X(INVALID_ALT_LID,              19) \
	X(INVALID_ALT_SL,               20) \
	X(INVALID_ALT_TRAFFIC_CLASS,    21) \
	X(INVALID_ALT_HOP_LIMIT,        22) \
	X(INVALID_ALT_PACKET_RATE,      23) \
	X(PORT_CM_REDIRECT,             24) \
	X(PORT_REDIRECT,                25) \
	X(INVALID_MTU,                  26) \
	X(INSUFFICIENT_RESP_RESOURCES,  27) \
	X(CONSUMER_DEFINED,             28) \
	X(INVALID_RNR_RETRY,            29) \
	X(DUPLICATE_LOCAL_COMM_ID,      30) \
	X(INVALID_CLASS_VERSION,        31) \
	X(INVALID_FLOW_LABEL,           32) \
	X(INVALID_ALT_FLOW_LABEL,       33) \
	X(VENDOR_OPTION_NOT_SUPPORTED,  35)

enum cm_rej_reason {
#define X(name, value) CM_REJ_##name = value,
	CM_REJ_REASONS(X)
#undef X
};

/* "NO_QP", "STALE_CONN", ... or "UNKNOWN". */
const char *cm_rej_reason_str(uint16_t reason);

/* MRA "message MRAed" and REJ "message rejected" (2 bits): which message is answered.
 * OTHER is a LAP for MRA and "no message" (e.g. a DREQ's peer) for REJ. */
enum cm_msg_response {
	CM_MSG_RESPONSE_REQ = 0,
	CM_MSG_RESPONSE_REP = 1,
	CM_MSG_RESPONSE_OTHER = 2,
};

/* REQ transport service type (2 bits); 3 means "see the extended transport type"
 * (XRC). */
enum cm_transport { CM_TRANSPORT_RC = 0, CM_TRANSPORT_UC = 1, CM_TRANSPORT_RD = 2 };

/* The common MAD header fields a CM message chooses. BaseVersion, MgmtClass and
 * ClassVersion are the constants above; AttributeID is struct cm_msg's attr. */
struct cm_mad_hdr {
	uint8_t method;          /* CM_METHOD_SEND; bit 7 is the response bit */
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;            /* transaction ID */
	uint32_t attr_mod;       /* attribute modifier */
};

/*
 * Fields narrower than their C type carry a "bits" comment: cm_mad_build() refuses a
 * value that does not fit (-EINVAL) rather than cutting it. Timeouts are exponents:
 * 4.096 µs * 2^n. Packet rate and path MTU use the IBA encodings (PathRecord Rate,
 * enum roce_mtu).
 */

/* A path in a REQ: 44 bytes at data offset 52 (primary) and 96 (alternate). */
struct cm_path {
	uint16_t local_lid;
	uint16_t remote_lid;
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint32_t flow_label;       /* 20 bits */
	uint8_t packet_rate;       /* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;                /* 4 bits */
	uint8_t subnet_local;      /* 1 bit */
	uint8_t local_ack_timeout; /* 5 bits */
};

/* REQ (IBA 12.6.5, REQ message contents). */
struct cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;                  /* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;                 /* 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;                /* 24 bits */
	uint8_t remote_cm_response_timeout;  /* 5 bits */
	uint8_t transport_service_type;      /* 2 bits, enum cm_transport */
	uint8_t e2e_flow_control;            /* 1 bit */
	uint32_t starting_psn;               /* 24 bits */
	uint8_t local_cm_response_timeout;   /* 5 bits */
	uint8_t retry_count;                 /* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;                    /* 4 bits, enum roce_mtu */
	uint8_t rdc_exists;                  /* 1 bit */
	uint8_t rnr_retry_count;             /* 3 bits */
	uint8_t max_cm_retries;              /* 4 bits */
	uint8_t srq;                         /* 1 bit */
	uint8_t extended_transport_type;     /* 3 bits */
	struct cm_path primary;
	struct cm_path alternate;            /* all zero: none */
	uint8_t sap_supported;               /* 1 bit */
	uint8_t private_data[CM_REQ_PRIVATE_LEN];
};

/* MRA (IBA 12.6.6): "I got your message, the answer takes longer". */
struct cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed;               /* 2 bits, enum cm_msg_response */
	uint8_t service_timeout;             /* 5 bits */
	uint8_t private_data[CM_MRA_PRIVATE_LEN];
};

/* REJ (IBA 12.6.7). */
struct cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_rejected;            /* 2 bits, enum cm_msg_response */
	uint8_t reject_info_length;          /* 7 bits, at most CM_REJ_ARI_LEN */
	uint16_t reason;                     /* enum cm_rej_reason */
	uint8_t ari[CM_REJ_ARI_LEN];
	uint8_t private_data[CM_REJ_PRIVATE_LEN];
};

/* REP (IBA 12.6.8). */
struct cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;                  /* 24 bits */
	uint32_t local_eecn;                 /* 24 bits */
	uint32_t starting_psn;               /* 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;            /* 5 bits */
	uint8_t failover_accepted;           /* 2 bits */
	uint8_t e2e_flow_control;            /* 1 bit */
	uint8_t rnr_retry_count;             /* 3 bits */
	uint8_t srq;                         /* 1 bit */
	uint64_t local_ca_guid;
	uint8_t private_data[CM_REP_PRIVATE_LEN];
};

/* RTU (IBA 12.6.9). */
struct cm_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[CM_RTU_PRIVATE_LEN];
};

/* DREQ (IBA 12.6.10). */
struct cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn_eecn;            /* 24 bits */
	uint8_t private_data[CM_DREQ_PRIVATE_LEN];
};

/* DREP (IBA 12.6.11). */
struct cm_drep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[CM_DREP_PRIVATE_LEN];
};

/* SIDR_REQ (IBA 12.11.1): which UD QP serves this service ID? */
struct cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[CM_SIDR_REQ_PRIVATE_LEN];
};

/* SIDR_REP (IBA 12.11.2). */
struct cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;                      /* 0: the QPN and Q_Key are valid */
	uint8_t info_length;                 /* at most CM_SIDR_REP_INFO_LEN */
	uint32_t qpn;                        /* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[CM_SIDR_REP_INFO_LEN];
	uint8_t private_data[CM_SIDR_REP_PRIVATE_LEN];
};

/* One CM message: the header, the attribute (which union member is valid), the body. */
struct cm_msg {
	struct cm_mad_hdr hdr;
	enum cm_attr attr;
	union {
		struct cm_req req;
		struct cm_mra mra;
		struct cm_rej rej;
		struct cm_rep rep;
		struct cm_rtu rtu;
		struct cm_dreq dreq;
		struct cm_drep drep;
		struct cm_sidr_req sidr_req;
		struct cm_sidr_rep sidr_rep;
	} u;
};

/*
 * cm_mad_build - write m as a 256-byte CM MAD into out.
 * Reserved bits are written as zero. Checks everything before writing anything.
 * Returns 0; -EOPNOTSUPP for ClassPortInfo, LAP and APR; -EINVAL for any other
 * attribute outside the CM class, a field value that does not fit its bit width, or a
 * REJ/SIDR_REP information length above 72.
 */
int cm_mad_build(const struct cm_msg *m, uint8_t out[CM_MAD_LEN]);

/*
 * cm_mad_parse - read the CM MAD at buf[0..len) into *m (meaningful only on success).
 * Reads the first CM_MAD_LEN bytes; reserved bits are ignored; the method, status and
 * attribute modifier are returned as found (which to answer is the CM's decision).
 * Returns 0; -EINVAL for len < CM_MAD_LEN, a BaseVersion, MgmtClass or ClassVersion
 * other than the CM's, an attribute ID outside the CM class, or a REJ/SIDR_REP
 * information length above 72; -EOPNOTSUPP for ClassPortInfo, LAP and APR.
 */
int cm_mad_parse(const uint8_t *buf, size_t len, struct cm_msg *m);

/*
 * rdma_cm's IP header: the first CM_IP_HDR_LEN bytes of a REQ's (and SIDR_REQ's)
 * private data when the service ID is an rdma_cm IP one (IBA annex A11; Linux cma.c
 * struct cma_hdr). Byte 0: version 0; byte 1: IP version in bits 7:4; bytes 2-3: the
 * source port; then the source and the destination address, 16 bytes each, an IPv4
 * address in the last 4 of them with zeros before. The destination port is not in it:
 * it is the service ID's port.
 */
#define CM_IP_HDR_LEN     36u
#define CM_IP_HDR_VERSION 0x00u
#define CM_REQ_USER_PRIVATE_LEN      (CM_REQ_PRIVATE_LEN - CM_IP_HDR_LEN)
#define CM_SIDR_REQ_USER_PRIVATE_LEN (CM_SIDR_REQ_PRIVATE_LEN - CM_IP_HDR_LEN)

/* Write the header for a connection from src to dst (both AF_INET or both AF_INET6;
 * src's port goes in, dst's port does not). Returns 0, -EINVAL if the families differ,
 * -EAFNOSUPPORT for another family. */
int cm_ip_hdr_encode(uint8_t out[CM_IP_HDR_LEN], const struct sockaddr *src,
		     const struct sockaddr *dst);

/* Read a header into src (address and port) and dst (address; port 0: take it from the
 * service ID). The zeros before an IPv4 address are not checked, as Linux does not.
 * Returns 0, -EINVAL for len < CM_IP_HDR_LEN or a version other than 0,
 * -EAFNOSUPPORT for an IP version other than 4 and 6. */
int cm_ip_hdr_decode(const uint8_t *buf, size_t len, struct sockaddr_storage *src,
		     struct sockaddr_storage *dst);

/*
 * rdma_cm service IDs (IBA annex A11.2; rdma-core rdma_cma.h RDMA_IB_IP_PS_*): the port
 * space in bits 31:16 under the prefix 0x0000000001, the port in bits 15:0.
 * X(name, port space).
 */
#define CM_PORT_SPACES(X) \
	X(TCP, 0x0106) \
	X(UDP, 0x0111) \
	X(IB,  0x013F)

enum cm_port_space {
#define X(name, ps) CM_PS_##name = ps,
	CM_PORT_SPACES(X)
#undef X
};

#define CM_IP_PS_MASK 0xFFFFFFFFFFFF0000ull /* = RDMA_IB_IP_PS_MASK */
#define CM_IP_PS_TCP  0x0000000001060000ull /* = RDMA_IB_IP_PS_TCP */
#define CM_IP_PS_UDP  0x0000000001110000ull /* = RDMA_IB_IP_PS_UDP */
#define CM_IP_PS_IB   0x00000000013F0000ull /* = RDMA_IB_IP_PS_IB */

/* "TCP", "UDP", "IB" or "UNKNOWN". */
const char *cm_port_space_str(enum cm_port_space ps);

/* The service ID of a port in a port space; 0 (never an rdma_cm ID) for an unknown
 * port space. */
uint64_t cm_service_id(enum cm_port_space ps, uint16_t port);

/* Split an rdma_cm service ID. Returns 0, or -EINVAL for an ID outside the three port
 * spaces above (*ps and *port untouched). */
int cm_service_id_split(uint64_t sid, enum cm_port_space *ps, uint16_t *port);

#endif
