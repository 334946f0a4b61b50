/* SPDX-License-Identifier: MIT */
/* bench_addr — see bench_addr.h. */
#include "bench_addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

int bench_addr_parse(const char *ip, unsigned port, struct bench_addr *a)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)&a->ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&a->ss;

	memset(a, 0, sizeof(*a));
	if (!ip || port > 65535)
		return -EINVAL;
	if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		a->len = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		a->len = sizeof(*v6);
		return 0;
	}
	return -EINVAL;
}
