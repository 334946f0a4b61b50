/* SPDX-License-Identifier: MIT */
/*
 * import — ibv_import_device, ibv_import_pd and ibv_import_mr at the daemon (ipc.h,
 * IMPORT_DEVICE). A context's cmd_fd is its client end of the control connection: a dup
 * of it, or a copy passed to another process over SCM_RIGHTS, is the same open socket,
 * as a dup of a uverbs fd is the same ib_uverbs_file, and its st_dev/st_ino name it. HELLO
 * records them from the end the client shows; IMPORT_DEVICE finds the session by them and
 * makes the new connection share its handles (session.h, IMPORTS). The copies keep the
 * connection open, so the session lives while any of them does, in any process, as the
 * kernel keeps a ucontext while one of its file's descriptors is open.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "nic.h"
#include "session.h"
#include "verbs.h"

/* The session (other than s) whose client end fd is a copy of, or NULL. */
static struct emu_session *owner_of(struct emu_session *s, int fd)
{
	struct stat st;

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode))
		return NULL;
	for (struct emu_session *o = s->d->sessions; o; o = o->next)
		if (o != s && !o->dead && o->has_cmd_fd && o->cmd_dev == st.st_dev &&
		    o->cmd_ino == st.st_ino)
			return o;
	return NULL;
}

/* Is fd a socket connected to this daemon (its peer's credentials are ours)? What a
 * client's end of its control connection is. */
static bool connected_to_us(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) && cr.pid == getpid();
}

int emu_import_take_cmd_fd(struct emu_req *r, int fd)
{
	struct emu_session *s = r->s;
	struct stat st;

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode) || !connected_to_us(fd))
		return emu_reply_err(r, -EINVAL, "HELLO's cmd_fd is not a socket connected to "
				     "this daemon");
	/* The first to show an end keeps it: the opener shows its own before the
	 * application ever sees it, so nobody can claim another's. */
	for (struct emu_session *o = s->d->sessions; o; o = o->next)
		if (o != s && !o->dead && o->has_cmd_fd && o->cmd_dev == st.st_dev &&
		    o->cmd_ino == st.st_ino)
			return emu_reply_err(r, -EEXIST, "HELLO's cmd_fd is session %u's", o->id);
	s->has_cmd_fd = true;
	s->cmd_dev = st.st_dev;
	s->cmd_ino = st.st_ino;
	return 0;
}

/* IMPORT_DEVICE: HELLO for a connection that shares the handles of the session whose
 * cmd_fd came last. Root may import anyone's; others only their own uid's. */
static int op_import_device(struct emu_req *r)
{
	struct emu_session *s = r->s, *owner;
	const struct ipc_hello_req *q = r->body;
	int fd;

	EMU_WANT_BODY(r, struct ipc_hello_req);
	if (!r->nfds)
		return emu_reply_err(r, -EINVAL, "IMPORT_DEVICE without the cmd_fd to import");
	fd = r->fds[--r->nfds];
	owner = owner_of(s, fd);
	close(fd);	/* kept, it would hold the owner's connection open for ever */
	if (!owner)
		return emu_reply_err(r, -ENODEV, "IMPORT_DEVICE: the fd is no cmd_fd of a live "
				     "context of device %s", s->d->opt.name);
	if (s->uid && s->uid != owner->uid)
		return emu_reply_err(r, -EPERM, "IMPORT_DEVICE: the context is uid %u's, the "
				     "importer uid %u", (unsigned)owner->uid, (unsigned)s->uid);
	emu_session_share(s, owner);
	emu_log(EMU_LOG_INFO, "session %u (pid %d) imports session %u (pid %d)", s->id,
		(int)s->pid, owner->id, (int)owner->pid);
	return emu_hello_finish(r, q->flags);
}

static int op_import_pd(struct emu_req *r)
{
	struct ipc_handle_rep rep = { .handle = r->hdr->handle };

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "IMPORT_PD has no body");
	if (!emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_PD))
		return emu_reply_err(r, -ENOENT, "IMPORT_PD: no PD %u", r->hdr->handle);
	return emu_ctl_reply(r->s, r->hdr, 0, &rep, sizeof(rep), NULL, 0);
}

static int op_import_mr(struct emu_req *r)
{
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_MR);
	struct ipc_import_mr_rep rep = { .handle = r->hdr->handle };

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "IMPORT_MR has no body");
	if (!o)
		return emu_reply_err(r, -ENOENT, "IMPORT_MR: no MR %u", r->hdr->handle);
	rep.lkey = nic_mr_lkey(o->u.mr.mr);
	rep.rkey = nic_mr_rkey(o->u.mr.mr);
	rep.access = o->u.mr.access;
	rep.va = o->u.mr.va;
	rep.len = o->u.mr.len;
	rep.pd = o->u.mr.pd->handle;
	return emu_ctl_reply(r->s, r->hdr, 0, &rep, sizeof(rep), NULL, 0);
}

emu_op_fn emu_import_op(unsigned op)
{
	switch (op) {
	case IPC_IMPORT_DEVICE:
		return op_import_device;
	case IPC_IMPORT_PD:
		return op_import_pd;
	case IPC_IMPORT_MR:
		return op_import_mr;
	default:
		return NULL;
	}
}
