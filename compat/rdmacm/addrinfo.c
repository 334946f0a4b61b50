/* SPDX-License-Identifier: MIT */
/*
 * rdma_getaddrinfo and rdma_freeaddrinfo, as rdma-core 44's librdmacm answers when no
 * ib_acm service is running (odpemu has none, and without one rdma-core only resolves
 * names with getaddrinfo(3); RAI_NOROUTE changes nothing then, it only tells ib_acm not to
 * wait for a path):
 *  - hints become getaddrinfo hints: RAI_PASSIVE -> AI_PASSIVE, RAI_NUMERICHOST ->
 *    AI_NUMERICHOST, the family unless it is AF_IB, the socket type from the QP type (RC,
 *    UC, XRC stream; UD datagram), the protocol from the port space (TCP; UDP and IPoIB
 *    UDP; IB by the socket type). No hints at all means getaddrinfo's own defaults;
 *  - one result, from getaddrinfo's first answer (rdma-core never chains ai_next): the QP
 *    type and port space of the hints, else those of the answer's socket type and protocol
 *    (so RC with RDMA_PS_TCP by default, UD with RDMA_PS_UDP for datagrams), the answer's
 *    family and address, as ai_src_addr with RAI_PASSIVE (ai_flags is then RAI_PASSIVE,
 *    else 0), as ai_dst_addr without, plus a copy of hints->ai_src_addr as the source;
 *  - RAI_FAMILY with AF_IB and RAI_NUMERICHOST: the node is a GID written as an IPv6
 *    address, returned as a struct sockaddr_ib whose service ID carries the port space
 *    and port (<rdma/rdma_cma.h> RDMA_IB_IP_*);
 *  - neither node nor service: the hints themselves (flags, family, QP type, port space,
 *    destination and source addresses) copied into the result.
 * Canonical names: rdma-core never asks getaddrinfo for one (there is no RAI_CANONNAME),
 * but copies one it gets into ai_src_canonname / ai_dst_canonname; so do we.
 *
 * Returns 0; getaddrinfo's EAI_* code as it is (clients print gai_strerror(ret)); or -1
 * with errno EINVAL (no node, service nor hints) or ENOMEM. Unlike rdma-core, this does
 * not first look for RDMA devices (rdma-core fails with ENODEV when there are none).
 */
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <infiniband/ib.h>

#include "cma.h"

static const struct rdma_addrinfo no_hints;	/* what NULL hints mean for the result */

static int rai_fail(int err)
{
	errno = err;
	return -1;
}

static int copy_addr(struct sockaddr **dst, socklen_t *dst_len,
		     const struct sockaddr *src, socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return rai_fail(ENOMEM);
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

static int copy_name(char **dst, const char *name)
{
	if (!name)
		return 0;
	*dst = strdup(name);
	return *dst ? 0 : rai_fail(ENOMEM);
}

/* The getaddrinfo hints an rdma_addrinfo's hints stand for. */
static void to_ai_hints(struct addrinfo *ai, const struct rdma_addrinfo *hints)
{
	memset(ai, 0, sizeof(*ai));
	if (hints->ai_flags & RAI_PASSIVE)
		ai->ai_flags |= AI_PASSIVE;
	if (hints->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (hints->ai_family != AF_IB)
		ai->ai_family = hints->ai_family;

	switch (hints->ai_qp_type) {
	case IBV_QPT_RC: case IBV_QPT_UC: case IBV_QPT_XRC_SEND: case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	}

	switch (hints->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_UDP: case RDMA_PS_IPOIB:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	}
}

static bool wants_af_ib(const struct rdma_addrinfo *hints)
{
	return (hints->ai_flags & RAI_FAMILY) && (hints->ai_flags & RAI_NUMERICHOST) &&
	       hints->ai_family == AF_IB;
}

/* A GID written as an IPv6 address, as an AF_IB address of port space ps: the service ID
 * is the port space above the port, each masked in only when set. */
static int gid_to_sib(int ps, struct sockaddr **dst, socklen_t *dst_len,
		      const struct sockaddr_in6 *in6)
{
	struct sockaddr_ib *sib = calloc(1, sizeof(*sib));
	uint16_t port = be16toh(in6->sin6_port);

	if (!sib)
		return rai_fail(ENOMEM);
	sib->sib_family = AF_IB;
	sib->sib_pkey = htobe16(0xffff);		/* the default full-member P_Key */
	sib->sib_flowinfo = in6->sin6_flowinfo;
	memcpy(&sib->sib_addr, &in6->sin6_addr, sizeof(sib->sib_addr));
	sib->sib_sid = htobe64(((uint64_t)ps << 16) + port);
	if (ps)
		sib->sib_sid_mask = htobe64(RDMA_IB_IP_PS_MASK);
	if (port)
		sib->sib_sid_mask |= htobe64(RDMA_IB_IP_PORT_MASK);
	sib->sib_scope_id = in6->sin6_scope_id;
	*dst = (struct sockaddr *)sib;
	*dst_len = sizeof(*sib);
	return 0;
}

/* Fill rai from getaddrinfo's answer ai to the hints. */
static int from_ai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints,
		   const struct addrinfo *ai)
{
	bool passive = hints->ai_flags & RAI_PASSIVE;	/* getaddrinfo echoes AI_PASSIVE */
	struct sockaddr **addr = passive ? &rai->ai_src_addr : &rai->ai_dst_addr;
	socklen_t *len = passive ? &rai->ai_src_len : &rai->ai_dst_len;

	rai->ai_qp_type = hints->ai_qp_type;
	if (!rai->ai_qp_type && ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (!rai->ai_qp_type && ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;

	rai->ai_port_space = hints->ai_port_space;
	if (!rai->ai_port_space && ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (!rai->ai_port_space && ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;

	rai->ai_flags = passive ? RAI_PASSIVE : 0;
	if (copy_name(passive ? &rai->ai_src_canonname : &rai->ai_dst_canonname,
		      ai->ai_canonname))
		return -1;

	/* rdma-core reads any answer as IPv6 here; an IPv4 one is kept as it is. */
	if (wants_af_ib(hints) && ai->ai_family == AF_INET6) {
		rai->ai_family = AF_IB;
		return gid_to_sib(rai->ai_port_space, addr, len,
				  (const struct sockaddr_in6 *)ai->ai_addr);
	}
	rai->ai_family = ai->ai_family;
	return copy_addr(addr, len, ai->ai_addr, ai->ai_addrlen);
}

/* Resolve node and service: 0, an EAI_* code, or -1 with errno. */
static int resolve(const char *node, const char *service,
		   const struct rdma_addrinfo *hints, struct rdma_addrinfo *rai)
{
	struct addrinfo ai_hints, *ai;
	int ret;

	if (hints) {
		to_ai_hints(&ai_hints, hints);
		ret = getaddrinfo(node, service, &ai_hints, &ai);
	} else {
		ret = getaddrinfo(node, service, NULL, &ai);
	}
	if (ret)
		return ret;
	ret = from_ai(rai, hints ? hints : &no_hints, ai);
	freeaddrinfo(ai);
	return ret;
}

/* Neither node nor service: the result is the hints. */
static int from_hints(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints)
{
	rai->ai_flags = hints->ai_flags;
	rai->ai_family = hints->ai_family;
	rai->ai_qp_type = hints->ai_qp_type;
	rai->ai_port_space = hints->ai_port_space;
	if (!hints->ai_dst_len)
		return 0;
	return copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
			 hints->ai_dst_addr, hints->ai_dst_len);
}

CMA_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				const struct rdma_addrinfo *hints,
				struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *rai;
	int ret;

	if (!node && !service && !hints)
		return rai_fail(EINVAL);
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return rai_fail(ENOMEM);

	if (node || service)
		ret = resolve(node, service, hints, rai);
	else
		ret = from_hints(rai, hints);
	if (!ret && !rai->ai_src_len && hints && hints->ai_src_len)
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
				hints->ai_src_addr, hints->ai_src_len);
	if (ret) {
		rdma_freeaddrinfo(rai);
		return ret;
	}
	*res = rai;
	return 0;
}

CMA_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}
