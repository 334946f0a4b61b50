/* SPDX-License-Identifier: MIT */
/* Opening a device: connect to the daemon's control socket and say HELLO, handing over the
 * process's userfaultfd and a relay socket (or the relay socket alone: the seccomp route,
 * watch.c) and our end of the socket (the context's cmd_fd, which import.c's
 * IMPORT_DEVICE names); the reply brings the async event pipe, the doorbell eventfd, the
 * daemon's status page and the session's doorbell page. Closing the socket (every copy of
 * it: a dup made for an import holds it) ends the session: the daemon frees all its
 * objects, whether we close cleanly or crash. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib_int.h"

int lib_connect(const struct odpemu_device *dev)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	int err;

	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, dev->path, sizeof(dev->path));
	if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return fd;
	err = errno;
	close(fd);
	if (err == ECONNREFUSED || err == ENOENT)
		return -ENODEV;		/* nobody serves the socket: odpemud is not running */
	return -(err == EPERM ? EACCES : err);
}

static int map_status(struct lib_context *c, int fd)
{
	struct ipc_status_page *p = mmap(NULL, sizeof(*p), PROT_READ, MAP_SHARED, fd, 0);

	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	if (p->magic != IPC_STATUS_MAGIC || p->version != IPC_VERSION) {
		munmap(p, sizeof(*p));
		return -EPROTO;
	}
	c->status = p;
	return 0;
}

/* The session's doorbell page (ipc_db.h), read-write. */
static int map_db(struct lib_context *c, int fd)
{
	struct ipc_db_page *p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	c->db = p;
	return 0;
}

/* The process's userfaultfd and a relay socket go to the daemon (relay.c), or the relay
 * socket alone for the seccomp route (watch.c, lib_seccomp_route): every device of the
 * process learns of every unmap. Then the cmd_fd: HELLO's our own end, IMPORT_DEVICE's
 * the one to import. */
static int hello(struct lib_context *c, uint16_t op, int cmd_fd)
{
	struct ipc_hello_req req = { .client_version = IPC_VERSION };
	struct ipc_hello_rep rep;
	int send[3], fds[4];
	unsigned nnotifier = 0;
	struct lib_call call = {
		.op = op, .req = &req, .req_len = sizeof(req), .fds = send,
		.rep = &rep, .rep_min = sizeof(rep), .rep_cap = sizeof(rep),
		.rfds = fds, .nrfds = 4,
	};
	int rc;

	if (!lib_relay_join(&send[0], &send[1], &c->relay_peer)) {
		bool uffd = send[0] >= 0;

		req.flags = uffd ? IPC_HELLO_HAS_UFFD : IPC_HELLO_HAS_RELAY;
		if (!uffd)
			send[0] = send[1];
		nnotifier = uffd ? 2 : 1;
	}
	if (op == IPC_HELLO)
		req.flags |= IPC_HELLO_HAS_CMD_FD;
	send[nnotifier] = cmd_fd;
	call.nfds = nnotifier + 1;
	rc = lib_call(c, &call);
	for (unsigned i = 0; i < nnotifier; i++)
		close(send[i]);
	if (rc)
		return rc;
	c->pub.async_fd = fds[0];
	c->doorbell_fd = fds[1];
	c->session = rep.session;
	c->daemon_pid = rep.daemon_pid;
	c->notifier = rep.notifier ? IPC_NOTIFIER_UFFD : IPC_NOTIFIER_NONE;
	c->cq_clean = rep.traits & IPC_TRAIT_CQ_CLEAN;
	rc = map_status(c, fds[2]);
	if (!rc)
		rc = map_db(c, fds[3]);
	else
		close(fds[3]);
	/* Yama (ptrace_scope 1): every daemon this process opens must be able to read it;
	 * then what we could give it, its read of our memory included (clients.c). */
	if (!rc) {
		lib_tracer_allow((pid_t)rep.daemon_pid);
		rc = lib_client_info(c);
	}
	return rc;
}

static void ctx_close_fds(struct lib_context *c)
{
	if (c->status)
		munmap(c->status, sizeof(*c->status));
	c->status = NULL;
	if (c->db)
		munmap(c->db, sizeof(*c->db));
	c->db = NULL;
	if (c->pub.async_fd >= 0)
		close(c->pub.async_fd);
	if (c->doorbell_fd >= 0)
		close(c->doorbell_fd);
	if (c->sock >= 0)
		close(c->sock);
	if (c->cmd_fd >= 0)
		close(c->cmd_fd);
	lib_relay_leave(c->relay_peer);
	c->pub.async_fd = c->doorbell_fd = c->sock = c->cmd_fd = c->relay_peer = -1;
}

struct odpemu_context *lib_open(const struct odpemu_device *device, int import_fd)
{
	struct lib_context *c = lib_ctx_alloc();
	int rc;

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->dev = *device;
	rc = lib_connect(device);
	if (rc >= 0) {
		c->sock = rc;
		rc = import_fd >= 0 ? hello(c, IPC_IMPORT_DEVICE, import_fd)
				    : hello(c, IPC_HELLO, c->sock);
	}
	if (rc >= 0)
		rc = lib_fork_track(c);
	if (rc < 0) {
		ctx_close_fds(c);
		lib_ctx_free(c);
		errno = -rc;
		return NULL;
	}
	c->cmd_fd = import_fd;	/* ours now: odpemu_close_device closes it */
	return &c->pub;
}

ODPEMU_EXPORT struct odpemu_context *odpemu_open_device(struct odpemu_device *device)
{
	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	return lib_open(device, -1);
}

ODPEMU_EXPORT int odpemu_close_device(struct odpemu_context *context)
{
	struct lib_context *c;

	if (!context)
		return lib_fail(EINVAL);
	c = lib_ctx(context);
	lib_fork_untrack(c);
	lib_watch_closing(context);
	ctx_close_fds(c);
	lib_ctx_free(c);
	return 0;
}
