/* SPDX-License-Identifier: MIT */
/*
 * cm_claim — rdma_cm's ports are the network namespace's, not one device's: the kernel
 * keeps one port space per namespace (cma_ps_find/cma_ps_alloc on the net's IDRs), so two
 * RDMA devices of one host never hand out the same port. odpemu runs one daemon per
 * device; daemons in one namespace (two test hosts on 127.0.0.1 and 127.0.0.2) would
 * otherwise each allocate from the same first ephemeral port, and a client connecting to
 * "any address" (0.0.0.0, which resolves to its own device) on its peer's port reached its
 * own listener and talked to itself.
 *
 * A daemon claims each port it reserves in its namespace by binding an abstract unix
 * socket named after the port space and port: abstract names are per network namespace,
 * need no privilege or file, and go when the daemon dies. The ephemeral pick (port 0)
 * takes only a port nobody in the namespace claimed; a reservation of a given port claims
 * it when it is free and goes ahead when it is not, because the kernel lets two devices
 * share a port for two specific addresses (cma_check_port), and the drop-in librdmacm
 * reserves a wildcard bind's port on every device it sees. Within one daemon the kernel's
 * sharing rules (cm_port.c) decide; the first reservation of a port holds the claim and
 * hands it to another of the same port when it goes.
 *
 * Not the kernel's, still: a wildcard reservation on one daemon does not stop a specific
 * one of the same port on another daemon of the namespace (docs/rdmacm.md).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cm.h"

/* The first reservation of this daemon on sid, other than `self`, or NULL. */
static struct emu_cm_listener *holder(const struct emu_cm *cm,
				      const struct emu_cm_listener *self, uint64_t sid)
{
	for (struct emu_cm_listener *l = cm->listeners; l; l = l->next)
		if (l != self && l->service_id == sid && l->claimed)
			return l;
	return NULL;
}

/* Bind "\0odpemu-cm/<service id>": the socket, or -EADDRINUSE when another daemon of this
 * namespace holds the port. */
static int claim_socket(uint64_t sid)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, n, err;

	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "odpemu-cm/%016llx",
		     (unsigned long long)sid);
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int emu_cm_claim(const struct emu_cm *cm, struct emu_cm_listener *l, bool picked)
{
	int fd;

	l->claimed = false;
	if (holder(cm, l, l->service_id))
		return 0;	/* this daemon's already: cm_port.c's rules decided */
	fd = claim_socket(l->service_id);
	if (fd == -EADDRINUSE && picked)
		return fd;	/* another daemon took it since the pick: pick again */
	if (fd < 0)
		return 0;	/* a given port: shared with another device, as for two
				 * specific addresses; or no socket to claim it with */
	l->claim_fd = fd;
	l->claimed = true;
	return 0;
}

bool emu_cm_claim_free(const struct emu_cm *cm, uint64_t sid)
{
	int fd;

	if (holder(cm, NULL, sid))
		return true;
	if ((fd = claim_socket(sid)) < 0)
		return false;
	close(fd);
	return true;
}

void emu_cm_claim_drop(const struct emu_cm *cm, struct emu_cm_listener *l)
{
	struct emu_cm_listener *heir;

	if (!l->claimed)
		return;
	l->claimed = false;
	for (heir = cm->listeners; heir; heir = heir->next)
		if (heir != l && heir->service_id == l->service_id)
			break;
	if (heir) {
		heir->claim_fd = l->claim_fd;
		heir->claimed = true;
	} else {
		close(l->claim_fd);
	}
}
