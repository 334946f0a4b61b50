/* SPDX-License-Identifier: MIT */
/* Every *_str() of libibverbs with rdma-core's words (clients print them), and the rate
 * conversions, each generated from one table. */
#include "compat.h"

#define STR_CASE(value, text) case value: return text;

#define NODE_TYPES(X) \
	X(IBV_NODE_CA, "InfiniBand channel adapter") X(IBV_NODE_SWITCH, "InfiniBand switch") \
	X(IBV_NODE_ROUTER, "InfiniBand router") X(IBV_NODE_RNIC, "iWARP NIC") \
	X(IBV_NODE_USNIC, "usNIC") X(IBV_NODE_USNIC_UDP, "usNIC UDP")

#define PORT_STATES(X) \
	X(IBV_PORT_NOP, "no state change (NOP)") X(IBV_PORT_DOWN, "down") X(IBV_PORT_INIT, "init") \
	X(IBV_PORT_ARMED, "armed") X(IBV_PORT_ACTIVE, "active") \
	X(IBV_PORT_ACTIVE_DEFER, "active defer")

#define EVENT_TYPES(X) \
	X(IBV_EVENT_CQ_ERR, "CQ error") \
	X(IBV_EVENT_QP_FATAL, "local work queue catastrophic error") \
	X(IBV_EVENT_QP_REQ_ERR, "invalid request local work queue error") \
	X(IBV_EVENT_QP_ACCESS_ERR, "local access violation work queue error") \
	X(IBV_EVENT_COMM_EST, "communication established") \
	X(IBV_EVENT_SQ_DRAINED, "send queue drained") X(IBV_EVENT_PATH_MIG, "path migrated") \
	X(IBV_EVENT_PATH_MIG_ERR, "path migration request error") \
	X(IBV_EVENT_DEVICE_FATAL, "local catastrophic error") \
	X(IBV_EVENT_PORT_ACTIVE, "port active") X(IBV_EVENT_PORT_ERR, "port error") \
	X(IBV_EVENT_LID_CHANGE, "LID change") X(IBV_EVENT_PKEY_CHANGE, "P_Key change") \
	X(IBV_EVENT_SM_CHANGE, "SM change") X(IBV_EVENT_SRQ_ERR, "SRQ catastrophic error") \
	X(IBV_EVENT_SRQ_LIMIT_REACHED, "SRQ limit reached") \
	X(IBV_EVENT_QP_LAST_WQE_REACHED, "last WQE reached") \
	X(IBV_EVENT_CLIENT_REREGISTER, "client reregistration") \
	X(IBV_EVENT_GID_CHANGE, "GID table change") X(IBV_EVENT_WQ_FATAL, "WQ fatal") \
	X(ODPEMU_IBV_EVENT_MR_DECOHERENCE, "MR decoherence (odpemu)")

#define WC_STATUSES(X) \
	X(IBV_WC_SUCCESS, "success") X(IBV_WC_LOC_LEN_ERR, "local length error") \
	X(IBV_WC_LOC_QP_OP_ERR, "local QP operation error") \
	X(IBV_WC_LOC_EEC_OP_ERR, "local EE context operation error") \
	X(IBV_WC_LOC_PROT_ERR, "local protection error") \
	X(IBV_WC_WR_FLUSH_ERR, "Work Request Flushed Error") \
	X(IBV_WC_MW_BIND_ERR, "memory management operation error") \
	X(IBV_WC_BAD_RESP_ERR, "bad response error") X(IBV_WC_LOC_ACCESS_ERR, "local access error") \
	X(IBV_WC_REM_INV_REQ_ERR, "remote invalid request error") \
	X(IBV_WC_REM_ACCESS_ERR, "remote access error") X(IBV_WC_REM_OP_ERR, "remote operation error") \
	X(IBV_WC_RETRY_EXC_ERR, "transport retry counter exceeded") \
	X(IBV_WC_RNR_RETRY_EXC_ERR, "RNR retry counter exceeded") \
	X(IBV_WC_LOC_RDD_VIOL_ERR, "local RDD violation error") \
	X(IBV_WC_REM_INV_RD_REQ_ERR, "remote invalid RD request") \
	X(IBV_WC_REM_ABORT_ERR, "aborted error") X(IBV_WC_INV_EECN_ERR, "invalid EE context number") \
	X(IBV_WC_INV_EEC_STATE_ERR, "invalid EE context state") X(IBV_WC_FATAL_ERR, "fatal error") \
	X(IBV_WC_RESP_TIMEOUT_ERR, "response timeout error") X(IBV_WC_GENERAL_ERR, "general error")

CV_EXPORT const char *ibv_node_type_str(enum ibv_node_type v)
{
	switch ((int)v) { NODE_TYPES(STR_CASE) default: return "unknown"; }
}

CV_EXPORT const char *ibv_port_state_str(enum ibv_port_state v)
{
	switch ((int)v) { PORT_STATES(STR_CASE) default: return "unknown"; }
}

CV_EXPORT const char *ibv_event_type_str(enum ibv_event_type v)
{
	switch ((int)v) { EVENT_TYPES(STR_CASE) default: return "unknown"; }
}

CV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status v)
{
	switch ((int)v) { WC_STATUSES(STR_CASE) default: return "unknown"; }
}

/* Static rates: the enum, the multiple of 2.5 Gb/s (0: not a multiple), Mb/s. */
#define RATES(X) \
	X(IBV_RATE_2_5_GBPS, 1, 2500) X(IBV_RATE_5_GBPS, 2, 5000) X(IBV_RATE_10_GBPS, 4, 10000) \
	X(IBV_RATE_20_GBPS, 8, 20000) X(IBV_RATE_30_GBPS, 12, 30000) \
	X(IBV_RATE_40_GBPS, 16, 40000) X(IBV_RATE_60_GBPS, 24, 60000) \
	X(IBV_RATE_80_GBPS, 32, 80000) X(IBV_RATE_120_GBPS, 48, 120000) \
	X(IBV_RATE_14_GBPS, 0, 14062) X(IBV_RATE_56_GBPS, 0, 56250) \
	X(IBV_RATE_112_GBPS, 0, 112500) X(IBV_RATE_168_GBPS, 0, 168750) \
	X(IBV_RATE_25_GBPS, 0, 25781) X(IBV_RATE_100_GBPS, 0, 103125) \
	X(IBV_RATE_200_GBPS, 0, 206250) X(IBV_RATE_300_GBPS, 0, 309375) \
	X(IBV_RATE_28_GBPS, 0, 28125) X(IBV_RATE_50_GBPS, 0, 53125) \
	X(IBV_RATE_400_GBPS, 0, 425000) X(IBV_RATE_600_GBPS, 0, 637500) \
	X(IBV_RATE_800_GBPS, 0, 850000) X(IBV_RATE_1200_GBPS, 0, 1275000)

#define RATE_MULT(rate, mult, mbps) case rate: return (mult) ? (mult) : -1;
#define MULT_RATE(rate, mult, mbps) if ((mult) && (mult) == m) return rate;
#define RATE_MBPS(rate, mult, mbps) case rate: return mbps;
#define MBPS_RATE(rate, mult, mbps) if ((mbps) == v) return rate;

CV_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	switch ((int)rate) { RATES(RATE_MULT) default: return -1; }
}

CV_EXPORT enum ibv_rate mult_to_ibv_rate(int m)
{
	RATES(MULT_RATE)
	return IBV_RATE_MAX;
}

CV_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	switch ((int)rate) { RATES(RATE_MBPS) default: return -1; }
}

CV_EXPORT enum ibv_rate mbps_to_ibv_rate(int v)
{
	RATES(MBPS_RATE)
	return IBV_RATE_MAX;
}
