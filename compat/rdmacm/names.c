/* SPDX-License-Identifier: MIT */
/* rdma_event_str with rdma-core's words: each event's enumerator name, "UNKNOWN EVENT"
 * for any other value (clients print them). The string is the enumerator itself, so the
 * one table cannot drift from <rdma/rdma_cma.h>. */
#include "cma.h"

#define CM_EVENT_TYPES(X) \
	X(RDMA_CM_EVENT_ADDR_RESOLVED) X(RDMA_CM_EVENT_ADDR_ERROR) \
	X(RDMA_CM_EVENT_ROUTE_RESOLVED) X(RDMA_CM_EVENT_ROUTE_ERROR) \
	X(RDMA_CM_EVENT_CONNECT_REQUEST) X(RDMA_CM_EVENT_CONNECT_RESPONSE) \
	X(RDMA_CM_EVENT_CONNECT_ERROR) X(RDMA_CM_EVENT_UNREACHABLE) \
	X(RDMA_CM_EVENT_REJECTED) X(RDMA_CM_EVENT_ESTABLISHED) \
	X(RDMA_CM_EVENT_DISCONNECTED) X(RDMA_CM_EVENT_DEVICE_REMOVAL) \
	X(RDMA_CM_EVENT_MULTICAST_JOIN) X(RDMA_CM_EVENT_MULTICAST_ERROR) \
	X(RDMA_CM_EVENT_ADDR_CHANGE) X(RDMA_CM_EVENT_TIMEWAIT_EXIT)

#define EVENT_CASE(event) case event: return #event;

CMA_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	switch ((int)event) { CM_EVENT_TYPES(EVENT_CASE) default: return "UNKNOWN EVENT"; }
}
