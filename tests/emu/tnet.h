/* SPDX-License-Identifier: MIT */
/* Test helpers for emu/: a private network namespace per test, and interface changes made
 * through libnl (no `ip` binary needed). Each returns 0 or a negative errno. */
#ifndef ODPEMU_TESTS_EMU_TNET_H
#define ODPEMU_TESTS_EMU_TNET_H

/* Run fn in a forked child inside a fresh network namespace whose lo is up (127.0.0.1/8,
 * ::1), so tests neither see nor disturb the host's interfaces and ports. Returns fn's
 * exit code, T_SKIP when the namespace cannot be made (not root), or 1 when the child
 * failed to finish within timeout_s (it is killed). */
int t_in_netns(const char *what, int (*fn)(void), unsigned timeout_s);

/* Set an interface up (1) or down (0) or leave it (-1), and its MTU (0: leave it). */
int t_link_set(const char *name, int up, unsigned mtu);
/* A veth pair a <-> b (this kernel has no dummy driver; veth is also what test hosts use). */
int t_veth_add(const char *a, const char *b);
int t_link_del(const char *name);
/* Add an address with prefix, "10.77.0.1/24" or "fd77::1/64", to an interface. */
int t_addr_add(const char *name, const char *cidr);

#endif
