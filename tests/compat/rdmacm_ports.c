/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm's port space through the drop-in librdmacm, linked against it (nothing else of
 * odpemu's: test_rdmacm_ports.c runs it between the two daemons of the e2e harness, with
 * host 0's and host 1's addresses as arguments): what rdma_bind_addr reserves and who may
 * share it, as the kernel's cma.c decides (cma_check_port, cma_match_private_data,
 * ucma_set_option_id):
 *  - a bound port is taken (EADDRINUSE for the same address), port 0 picks one at bind,
 *    rdma_destroy_id gives it back;
 *  - RDMA_OPTION_ID_REUSEADDR: two IDs that both set it share a bound port; one of them
 *    cannot listen while the other holds it (EADDRINUSE); a listener shares with nobody;
 *  - RDMA_OPTION_ID_AFONLY: an IPv4 and an IPv6 wildcard bind of one port clash
 *    (EADDRNOTAVAIL) unless the IPv6 one is AFONLY; then an IPv4 connection reaches the
 *    IPv4 listener, and an AFONLY IPv6 listener alone hears no IPv4 connection while one
 *    without AFONLY does;
 *  - the options' errors: a wrong optlen EINVAL, an unknown option ENOSYS, AFONLY on a
 *    listener and REUSEADDR off on a bound ID EINVAL.
 */
#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "t.h"

static const char *host_addr[2];
static struct rdma_event_channel *ch;

static struct sockaddr_storage addr_of(int host, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	inet_pton(AF_INET, host_addr[host], &s4->sin_addr);
	return ss;
}

static struct sockaddr_storage any_of(int family, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };

	if (family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons(port);
	} else {
		((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
	}
	return ss;
}

static struct rdma_cm_id *new_id(void)
{
	struct rdma_cm_id *id = NULL;

	T_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0, "create_id");
	return id;
}

/* rdma_bind_addr's result: 0 or its errno. */
static int bind_to(struct rdma_cm_id *id, struct sockaddr_storage ss)
{
	return rdma_bind_addr(id, (struct sockaddr *)&ss) ? errno : 0;
}

static int set_int(struct rdma_cm_id *id, int optname, int v)
{
	return rdma_set_option(id, RDMA_OPTION_ID, optname, &v, sizeof(v)) ? errno : 0;
}

/* The next event on ch within 5 s (acked), its type and listen_id; -1 if none came. */
static int next_event(struct rdma_cm_id **listen_id, struct rdma_cm_id **id)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int type;

	if (poll(&p, 1, 5000) != 1 || rdma_get_cm_event(ch, &ev))
		return -1;
	type = ev->event;
	if (listen_id)
		*listen_id = ev->listen_id;
	if (id)
		*id = ev->id;
	if (type == RDMA_CM_EVENT_CONNECT_REQUEST)
		rdma_reject(ev->id, NULL, 0);
	rdma_ack_cm_event(ev);
	return type;
}

/* A connection attempt from host 1 to host 0's address at port: the event it ends in
 * on the client's side after the server side's own (returned in *heard, with the
 * listener that heard it in *by; RDMA_CM_EVENT_REJECTED on the client when nobody does). */
static int connect_to(struct sockaddr_storage dst, int *heard, struct rdma_cm_id **by)
{
	struct rdma_cm_id *c = new_id(), *evid = NULL, *lid = NULL;
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 1, .max_recv_wr = 1,
		.max_send_sge = 1, .max_recv_sge = 1 }, .qp_type = IBV_QPT_RC };
	struct rdma_conn_param cp = { .retry_count = 1 };
	int type = -1;

	*heard = -1;
	*by = NULL;
	if (!c || rdma_resolve_addr(c, NULL, (struct sockaddr *)&dst, 2000) ||
	    next_event(NULL, NULL) != RDMA_CM_EVENT_ADDR_RESOLVED ||
	    rdma_resolve_route(c, 2000) || next_event(NULL, NULL) != RDMA_CM_EVENT_ROUTE_RESOLVED ||
	    rdma_create_qp(c, NULL, &qa) || rdma_connect(c, &cp)) {
		T_CHECK(0, "connect to port %u: %m", ntohs(((struct sockaddr_in *)&dst)->sin_port));
		goto out;
	}
	/* Both sides' events come on ch: the server's CONNECT_REQUEST (rejected at once), then
	 * the client's REJECTED; or the client's REJECTED alone. */
	for (int i = 0; i < 2 && type < 0; i++) {
		int t = next_event(&lid, &evid);

		if (t == RDMA_CM_EVENT_CONNECT_REQUEST) {
			*heard = t;
			*by = lid;
		} else if (evid == c) {
			type = t;
		}
	}
out:
	if (c) {
		rdma_destroy_qp(c);
		rdma_destroy_id(c);
	}
	return type;
}

static int connect_from_host1(uint16_t port, int *heard, struct rdma_cm_id **by)
{
	return connect_to(addr_of(0, port), heard, by);
}

/* connect_from_host1's, to "any address" (0.0.0.0) at port */
static int connect_any(uint16_t port, int *heard, struct rdma_cm_id **by)
{
	return connect_to(any_of(AF_INET, port), heard, by);
}

static void bound_ports(void)
{
	struct rdma_cm_id *a = new_id(), *b = new_id();
	uint16_t port;

	T_EQ(bind_to(a, addr_of(0, 0)), 0, "bind host 0's address, port 0");
	port = ntohs(rdma_get_src_port(a));
	T_CHECK(port >= 49152, "a port picked at bind: %u", port);
	T_EQ(bind_to(b, addr_of(0, port)), EADDRINUSE, "the same address and port: EADDRINUSE");
	T_EQ(bind_to(b, any_of(AF_INET, port)), EADDRNOTAVAIL,
	     "any address on that port: EADDRNOTAVAIL");
	rdma_destroy_id(b);
	rdma_destroy_id(a);
	b = new_id();
	T_EQ(bind_to(b, addr_of(0, port)), 0, "free again once its ID is destroyed");
	rdma_destroy_id(b);
}

static void reuseaddr(uint16_t port)
{
	struct rdma_cm_id *a = new_id(), *b = new_id(), *c = new_id();

	T_EQ(set_int(a, RDMA_OPTION_ID_REUSEADDR, 1), 0, "REUSEADDR on a");
	T_EQ(set_int(b, RDMA_OPTION_ID_REUSEADDR, 1), 0, "REUSEADDR on b");
	T_EQ(bind_to(a, addr_of(0, port)), 0, "a binds");
	T_EQ(bind_to(c, addr_of(0, port)), EADDRINUSE, "c without REUSEADDR: EADDRINUSE");
	T_EQ(bind_to(b, addr_of(0, port)), 0, "b shares the port: both REUSEADDR");
	T_EQ(set_int(b, RDMA_OPTION_ID_REUSEADDR, 0), EINVAL, "REUSEADDR off once bound: EINVAL");
	T_CHECK(rdma_listen(a, 4) && errno == EADDRINUSE, "a cannot listen while b shares (%m)");
	rdma_destroy_id(b);
	T_EQ(rdma_listen(a, 4), 0, "a listens once alone");
	b = new_id();
	T_EQ(set_int(b, RDMA_OPTION_ID_REUSEADDR, 1), 0, "REUSEADDR on a new b");
	T_EQ(bind_to(b, addr_of(0, port)), EADDRINUSE, "a listener shares with nobody");
	T_EQ(set_int(a, RDMA_OPTION_ID_AFONLY, 1), EINVAL, "AFONLY on a listener: EINVAL");
	rdma_destroy_id(a);
	rdma_destroy_id(b);
	rdma_destroy_id(c);
}

static void afonly(uint16_t port)
{
	struct rdma_cm_id *v4 = new_id(), *v6 = new_id(), *by;
	int heard;

	T_EQ(bind_to(v4, any_of(AF_INET, port)), 0, "IPv4 any");
	T_EQ(bind_to(v6, any_of(AF_INET6, port)), EADDRNOTAVAIL,
	     "IPv6 any, not AFONLY (bindv6only 0): EADDRNOTAVAIL");
	rdma_destroy_id(v6);
	v6 = new_id();
	T_EQ(set_int(v6, RDMA_OPTION_ID_AFONLY, 1), 0, "AFONLY on the IPv6 ID");
	T_EQ(bind_to(v6, any_of(AF_INET6, port)), 0, "then both bind");
	T_EQ(rdma_listen(v4, 4), 0, "IPv4 listens");
	T_EQ(rdma_listen(v6, 4), 0, "IPv6 listens");
	T_EQ(connect_from_host1(port, &heard, &by), RDMA_CM_EVENT_REJECTED, "rejected");
	T_CHECK(heard == RDMA_CM_EVENT_CONNECT_REQUEST && by == v4,
		"an IPv4 connection reaches the IPv4 listener (event %d)", heard);
	rdma_destroy_id(v4);
	T_EQ(connect_from_host1(port, &heard, &by), RDMA_CM_EVENT_REJECTED,
	     "no listener: REJECTED");
	T_CHECK(heard < 0, "the AFONLY IPv6 listener hears no IPv4 connection (event %d)", heard);
	rdma_destroy_id(v6);
	v6 = new_id();
	T_EQ(set_int(v6, RDMA_OPTION_ID_AFONLY, 0), 0, "AFONLY 0 on a new IPv6 ID");
	T_EQ(bind_to(v6, any_of(AF_INET6, port)), 0, "it binds");
	T_EQ(rdma_listen(v6, 4), 0, "and listens");
	T_EQ(connect_from_host1(port, &heard, &by), RDMA_CM_EVENT_REJECTED, "rejected");
	T_CHECK(heard == RDMA_CM_EVENT_CONNECT_REQUEST && by == v6,
		"an IPv6 listener without AFONLY hears IPv4 (event %d)", heard);
	rdma_destroy_id(v6);
}

/* One port space per network namespace (the kernel's): two hosts in one namespace (test
 * hosts on 127.0.0.x) never pick the same port, whichever device; a given port is shared
 * by two devices' specific addresses (cma_check_port). A client connecting to "any
 * address" (0.0.0.0: its own device) on host 1's listening port is refused, never heard by
 * a listener of host 0's: the one namespace case only (with namespaces of their own, the
 * program sits in host 0's and sees host 1's device too). */
static void namespace_ports(bool shared)
{
	struct rdma_cm_id *a = new_id(), *b = new_id(), *l1 = new_id(), *by;
	uint16_t pa, pb;
	int heard, type;

	T_EQ(bind_to(a, addr_of(0, 0)), 0, "host 0, port 0");
	T_EQ(bind_to(b, addr_of(1, 0)), 0, "host 1, port 0");
	pa = ntohs(rdma_get_src_port(a));
	pb = ntohs(rdma_get_src_port(b));
	if (shared)
		T_CHECK(pa != pb, "one namespace: hosts 0 and 1 picked different ports (%u, %u)",
			pa, pb);
	rdma_destroy_id(b);
	b = new_id();
	T_EQ(bind_to(b, addr_of(1, pa)), 0, "host 1's address on host 0's port: shared");
	rdma_destroy_id(b);
	rdma_destroy_id(a);
	if (!shared) {
		rdma_destroy_id(l1);
		return;
	}
	a = new_id();
	T_EQ(bind_to(a, addr_of(0, 0)), 0, "host 0 listener bound");
	T_EQ(bind_to(l1, addr_of(1, 0)), 0, "host 1 listener bound");
	T_EQ(rdma_listen(a, 4), 0, "host 0 listens");
	T_EQ(rdma_listen(l1, 4), 0, "host 1 listens");
	type = connect_any(ntohs(rdma_get_src_port(l1)), &heard, &by);
	T_CHECK(by != a, "a connection to any address on host 1's port reached host 0's listener");
	T_CHECK(type == RDMA_CM_EVENT_REJECTED, "its client ends REJECTED (event %d, heard %d by %s)",
		type, heard, by == l1 ? "host 1" : by ? "?" : "nobody");
	rdma_destroy_id(l1);
	rdma_destroy_id(a);
}

static void option_errors(void)
{
	struct rdma_cm_id *a = new_id();
	uint8_t tos = 0;
	int v = 1;

	T_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v, 1) &&
		errno == EINVAL, "REUSEADDR with optlen 1: EINVAL (%m)");
	T_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(int)) &&
		errno == EINVAL, "TOS with optlen 4: EINVAL (%m)");
	T_CHECK(rdma_set_option(a, RDMA_OPTION_ID, 99, &v, sizeof(v)) && errno == ENOSYS,
		"an unknown option: ENOSYS (%m)");
	T_CHECK(rdma_set_option(a, 77, RDMA_OPTION_ID_TOS, &tos, 1) && errno == ENOSYS,
		"an unknown level: ENOSYS (%m)");
	T_EQ(set_int(a, RDMA_OPTION_ID_REUSEADDR, 0), 0, "REUSEADDR 0 while idle");
	rdma_destroy_id(a);
}

int main(int argc, char **argv)
{
	uint16_t base = (uint16_t)(20000 + getpid() % 10000);

	if (argc != 4 || (strcmp(argv[3], "shared") && strcmp(argv[3], "separate"))) {
		fprintf(stderr, "usage: %s HOST0-ADDR HOST1-ADDR shared|separate (IPv4; whether "
			"the hosts share a network namespace)\n", argv[0]);
		return 2;
	}
	host_addr[0] = argv[1];
	host_addr[1] = argv[2];
	if (!(ch = rdma_create_event_channel())) {
		T_CHECK(0, "event channel: %m");
		return t_done("rdmacm-ports");
	}
	bound_ports();
	reuseaddr(base);
	afonly((uint16_t)(base + 1));
	option_errors();
	namespace_ports(!strcmp(argv[3], "shared"));
	rdma_destroy_event_channel(ch);
	return t_done("rdmacm-ports");
}
