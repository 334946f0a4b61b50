/* SPDX-License-Identifier: MIT */
#include "tnet.h"

#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>

#include "t.h"

static struct nl_sock *nl(void)
{
	struct nl_sock *sk = nl_socket_alloc();

	if (sk && nl_connect(sk, NETLINK_ROUTE) < 0) {
		nl_socket_free(sk);
		sk = NULL;
	}
	return sk;
}

/* libnl codes are not errnos; tests only need "failed" and a readable reason. */
static int fail(const char *what, const char *name, int nlerr)
{
	fprintf(stderr, "tnet: %s %s: %s\n", what, name, nl_geterror(nlerr));
	return -EIO;
}

int t_link_set(const char *name, int up, unsigned mtu)
{
	struct nl_sock *sk = nl();
	struct rtnl_link *old = NULL, *chg = rtnl_link_alloc();
	int rc;

	if (!sk || !chg)
		return -ENOMEM;
	rc = rtnl_link_get_kernel(sk, 0, name, &old);
	if (rc >= 0) {
		if (up == 1)
			rtnl_link_set_flags(chg, IFF_UP);
		else if (up == 0)
			rtnl_link_unset_flags(chg, IFF_UP);
		if (mtu)
			rtnl_link_set_mtu(chg, mtu);
		rc = rtnl_link_change(sk, old, chg, 0);
	}
	rtnl_link_put(chg);
	if (old)
		rtnl_link_put(old);
	nl_socket_free(sk);
	return rc < 0 ? fail("link set", name, rc) : 0;
}

int t_veth_add(const char *a, const char *b)
{
	struct nl_sock *sk = nl();
	int rc;

	if (!sk)
		return -ENOMEM;
	rc = rtnl_link_veth_add(sk, a, b, getpid());
	nl_socket_free(sk);
	return rc < 0 ? fail("veth add", a, rc) : 0;
}

int t_link_del(const char *name)
{
	struct nl_sock *sk = nl();
	struct rtnl_link *link = rtnl_link_alloc();
	int rc;

	if (!sk || !link)
		return -ENOMEM;
	rtnl_link_set_name(link, name);
	rc = rtnl_link_delete(sk, link);
	rtnl_link_put(link);
	nl_socket_free(sk);
	return rc < 0 ? fail("link del", name, rc) : 0;
}

int t_addr_add(const char *name, const char *cidr)
{
	struct nl_sock *sk = nl();
	struct rtnl_link *link = NULL;
	struct rtnl_addr *addr = rtnl_addr_alloc();
	struct nl_addr *local = NULL;
	int rc;

	if (!sk || !addr)
		return -ENOMEM;
	rc = rtnl_link_get_kernel(sk, 0, name, &link);
	if (rc >= 0)
		rc = nl_addr_parse(cidr, AF_UNSPEC, &local);
	if (rc >= 0) {
		rtnl_addr_set_ifindex(addr, rtnl_link_get_ifindex(link));
		rtnl_addr_set_local(addr, local);
		rc = rtnl_addr_add(sk, addr, 0);
	}
	if (local)
		nl_addr_put(local);
	if (link)
		rtnl_link_put(link);
	rtnl_addr_put(addr);
	nl_socket_free(sk);
	return rc < 0 ? fail("addr add", cidr, rc) : 0;
}

static int child(int (*fn)(void))
{
	t_checks = t_failures = 0;	/* the child reports its own checks */
	if (unshare(CLONE_NEWNET) < 0)
		return T_SKIP;
	if (t_link_set("lo", 1, 0))
		return 1;
	fflush(stdout);
	return fn();
}

/* waitpid with a deadline: poll every 10 ms, kill the child when time is up. */
static int reap(pid_t pid, unsigned timeout_s)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	int status;

	for (unsigned i = 0; i < timeout_s * 100u; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
		if (r < 0)
			return 1;
		nanosleep(&nap, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	fprintf(stderr, "tnet: child timed out after %u s\n", timeout_s);
	return 1;
}

int t_in_netns(const char *what, int (*fn)(void), unsigned timeout_s)
{
	pid_t pid;
	int rc;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		exit(child(fn));	/* exit, not _exit: LeakSanitizer checks the child too */
	rc = reap(pid, timeout_s);
	printf("%s: %s\n", what, rc == 0 ? "pass" : rc == T_SKIP ? "skipped (no netns)" : "FAIL");
	return rc;
}
