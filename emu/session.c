/* SPDX-License-Identifier: MIT */
/*
 * session — one client process on the control socket: its credentials, doorbell, event
 * pipe, userfaultfd, and the table of objects it created. When the socket closes (exit or
 * crash) every object is destroyed in dependency order, as the kernel does for a dead
 * process's verbs objects: its QPs vanish, so their peers time out (RETRY_EXC_ERR).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "host/notifier.h"
#include "session.h"
#include "host/lease.h"
#include "host/orphan.h"
#include "host/watch.h"
#include "verbs.h"
#include "nic.h"

/* Every armed multishot poll of a session counts; the struct is freed only when the session
 * is dead and the last poll has posted its final completion (one without F_MORE), since
 * io_uring hands back the emu_io pointer until then. */
void emu_session_arm(struct emu_session *s, int fd, struct emu_io *io)
{
	s->polls++;
	emu_loop_poll_in(&s->d->loop, fd, io);
}

/* A poll completion of s: false when s must not be touched any more (freed). */
static bool poll_done(struct emu_session *s, const struct io_uring_cqe *cqe, int fd,
		      struct emu_io *io)
{
	if (cqe->flags & IORING_CQE_F_MORE)
		return !s->dead;
	s->polls--;
	if (s->dead) {
		if (!s->polls) {
			s->d->closing_sessions--;
			free(s);
		}
		return false;
	}
	emu_session_arm(s, fd, io);
	return true;
}

static void on_sock(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_session *s = (struct emu_session *)((char *)io - offsetof(struct emu_session, sock_io));

	if (!s->dead && cqe->res > 0)
		emu_ctl_serve(s);
	poll_done(s, cqe, s->sock, io);
}

static void on_doorbell(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_session *s = (struct emu_session *)((char *)io - offsetof(struct emu_session, db_io));
	uint64_t v;

	/* The rings are drained by the loop after every dispatch; just reset the counter. */
	if (!s->dead && cqe->res > 0 && read(s->doorbell, &v, sizeof(v)) < 0 && errno != EAGAIN)
		emu_log(EMU_LOG_WARN, "session %u: doorbell read: %s", s->id, strerror(errno));
	poll_done(s, cqe, s->doorbell, io);
}

static void on_uffd(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_session *s = (struct emu_session *)((char *)io - offsetof(struct emu_session, uffd_io));

	if (!s->dead && cqe->res > 0)
		emu_uffd_read(s);
	poll_done(s, cqe, s->uffd_relay, io);
}

void emu_session_set_uffd(struct emu_session *s, int uffd, int relay)
{
	s->uffd = uffd;
	s->uffd_relay = relay;
	s->uffd_io.fn = on_uffd;
	emu_session_arm(s, relay, &s->uffd_io);
}

static void on_supervise(struct emu_io *io, const struct io_uring_cqe *cqe)
{
	struct emu_session *s = (struct emu_session *)((char *)io - offsetof(struct emu_session, sup_io));

	if (s->sup_cancelling && !s->dead) {	/* let go: not armed again */
		if (!(cqe->flags & IORING_CQE_F_MORE)) {
			s->polls--;
			s->sup_cancelling = false;
		}
		return;
	}
	if (!s->dead && cqe->res > 0)
		emu_watch_serve(s);
	poll_done(s, cqe, s->supervise, io);
}

int emu_session_unsupervise(struct emu_session *s)
{
	int rc;

	if (s->supervise < 0)
		return -ENOENT;
	if ((rc = emu_loop_cancel_sync(&s->d->loop, &s->sup_io)))
		return rc;
	s->sup_cancelling = true;
	close(s->supervise);
	s->supervise = -1;
	return 0;
}

void emu_session_set_supervise(struct emu_session *s, int listener)
{
	s->supervise = listener;
	s->sup_io.fn = on_supervise;
	emu_session_arm(s, listener, &s->sup_io);
}

/* Is gid among the peer's supplementary groups (as they were at connect)? */
static bool peer_in_group(int fd, gid_t gid)
{
	gid_t small[64], *g = small;
	socklen_t len = sizeof(small);
	bool in = false;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
		if (errno != ERANGE || !(g = malloc(len)))
			return false;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len))
			len = 0;
	}
	for (size_t i = 0; i < len / sizeof(gid_t) && !in; i++)
		in = g[i] == gid;
	if (g != small)
		free(g);
	return in;
}

/* Root, the daemon's user and the members of the socket's group (--group, else the
 * daemon's) may use the device: whom the socket's mode 0660 lets connect, checked again
 * on the connection in case the file's mode or owner was changed. A member is one by
 * primary or supplementary group. */
static bool peer_allowed(struct emu_daemon *d, int fd, const struct ucred *cr)
{
	gid_t group = d->opt.group ? (gid_t)d->opt.group_gid : getegid();

	return cr->uid == 0 || cr->uid == geteuid() || cr->gid == group ||
	       peer_in_group(fd, group);
}

int emu_session_accept(struct emu_daemon *d, int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct emu_session *s;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) || !peer_allowed(d, fd, &cr)) {
		emu_log(EMU_LOG_WARN, "refused a client (uid %u): not root, the daemon's user "
			"or a member of the socket's group", (unsigned)cr.uid);
		return -EPERM;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->d = d;
	s->sock = fd;
	s->pid = cr.pid;
	s->uid = cr.uid;
	s->uffd = s->uffd_relay = s->event_wr = s->supervise = -1;
	s->doorbell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->id = d->next_client++;
	if (s->doorbell < 0 || !(s->tab = calloc(1, sizeof(*s->tab)))) {
		int e = s->doorbell < 0 ? -errno : -ENOMEM;

		if (s->doorbell >= 0)
			close(s->doorbell);
		free(s);
		return e;
	}
	s->tab->users = 1;
	s->sock_io.fn = on_sock;
	s->db_io.fn = on_doorbell;
	emu_session_arm(s, fd, &s->sock_io);
	emu_session_arm(s, s->doorbell, &s->db_io);
	s->next = d->sessions;
	d->sessions = s;
	d->nsessions++;
	d->ctr.sessions_total++;
	emu_log(EMU_LOG_INFO, "session %u: pid %d connected", s->id, (int)s->pid);
	return 0;
}

struct emu_session *emu_session_by_id(struct emu_daemon *d, uint32_t id)
{
	for (struct emu_session *s = d->sessions; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

struct emu_obj *emu_obj_get(struct emu_session *s, uint32_t handle, enum emu_obj_type type)
{
	struct emu_obj *o;

	if (handle == 0 || handle >= s->tab->nobjs)
		return NULL;
	o = s->tab->objs[handle];
	return o && o->type == type ? o : NULL;
}

/* Append o to its type's list (creation order). */
static void link_type(struct emu_session *s, struct emu_obj *o)
{
	struct emu_obj_list *l = &s->of_type[o->type];

	o->type_prev = l->last;
	o->type_next = NULL;
	if (l->last)
		l->last->type_next = o;
	else
		l->first = o;
	l->last = o;
	l->n++;
}

static void unlink_type(struct emu_session *s, struct emu_obj *o)
{
	struct emu_obj_list *l = &s->of_type[o->type];

	if (o->type_prev)
		o->type_prev->type_next = o->type_next;
	else
		l->first = o->type_next;
	if (o->type_next)
		o->type_next->type_prev = o->type_prev;
	else
		l->last = o->type_prev;
	l->n--;
}

static void mark_used(struct emu_table *t, uint32_t h, bool used)
{
	uint32_t w = h / 64;

	if (used)
		t->used[w] |= 1ull << (h % 64);
	else
		t->used[w] &= ~(1ull << (h % 64));
	if (t->used[w] == UINT64_MAX)
		t->full[w / 64] |= 1ull << (w % 64);
	else
		t->full[w / 64] &= ~(1ull << (w % 64));
}

/* Double the table (64 handles at first); handle 0 is never given. */
static int grow_table(struct emu_table *t)
{
	uint32_t old = t->nobjs, n = old ? old * 2 : 64;
	uint32_t ow = old / 64, nw = n / 64, ofw = (ow + 63) / 64, nfw = (nw + 63) / 64;
	struct emu_obj **o;
	uint64_t *u, *f;

	if (n > IPC_DB_HANDLES)
		return -ENOSPC;
	if (!(o = realloc(t->objs, n * sizeof(*o))))
		return -ENOMEM;
	t->objs = o;
	if (!(u = realloc(t->used, nw * sizeof(*u))))
		return -ENOMEM;
	t->used = u;
	if (!(f = realloc(t->full, nfw * sizeof(*f))))
		return -ENOMEM;
	t->full = f;
	memset(o + old, 0, (n - old) * sizeof(*o));
	memset(u + ow, 0, (nw - ow) * sizeof(*u));
	memset(f + ofw, 0, (nfw - ofw) * sizeof(*f));
	t->nobjs = n;
	if (!old)
		mark_used(t, 0, true);
	return 0;
}

/* The lowest free handle, or t->nobjs when the table is full. */
static uint32_t first_free(const struct emu_table *t)
{
	uint32_t words = t->nobjs / 64;

	for (uint32_t i = 0; i < (words + 63) / 64; i++) {
		uint64_t room = ~t->full[i];

		if (words - i * 64 < 64)
			room &= (1ull << (words - i * 64)) - 1;
		if (room) {
			uint32_t w = i * 64 + (uint32_t)__builtin_ctzll(room);

			return w * 64 + (uint32_t)__builtin_ctzll(~t->used[w]);
		}
	}
	return t->nobjs;
}

const char *emu_obj_new_why(const struct emu_session *s)
{
	const struct emu_table *t = s->tab;

	return t->nobjs >= IPC_DB_HANDLES && first_free(t) >= t->nobjs ?
		"the session holds 1,048,575 objects, the most one process may have on a "
		"device (close some, or open the device again)" : "the daemon is out of memory";
}

struct emu_obj *emu_obj_new(struct emu_session *s, enum emu_obj_type type)
{
	struct emu_table *t = s->tab;
	uint32_t h = first_free(t);
	struct emu_obj *o;

	if (h >= t->nobjs && (grow_table(t) || (h = first_free(t)) >= t->nobjs))
		return NULL;
	if (!(o = calloc(1, sizeof(*o))))
		return NULL;
	o->type = type;
	o->handle = h;
	o->s = s;
	t->objs[h] = o;
	mark_used(t, h, true);
	link_type(s, o);
	return o;
}

void emu_obj_free(struct emu_obj *o)
{
	unlink_type(o->s, o);
	o->s->tab->objs[o->handle] = NULL;
	mark_used(o->s->tab, o->handle, false);
	free(o);
}

int emu_session_db(struct emu_session *s, int *fd_out)
{
	int fd = memfd_create("odpemu-doorbells", MFD_CLOEXEC);
	void *p;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, sizeof(*s->db)) ||
	    (p = mmap(NULL, sizeof(*s->db), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
	    MAP_FAILED) {
		int e = -errno;

		close(fd);
		return e;
	}
	s->db = p;
	*fd_out = fd;
	return 0;
}

int emu_session_cq_notify(struct emu_obj *cq)
{
	struct emu_session *s = cq->s;

	if (s->ncq_notify == s->cq_notify_cap) {
		uint32_t cap = s->cq_notify_cap ? s->cq_notify_cap * 2 : 16;
		uint32_t *t = realloc(s->cq_notify, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		s->cq_notify = t;
		s->cq_notify_cap = cap;
	}
	s->cq_notify[s->ncq_notify++] = cq->handle;
	return 0;
}

void emu_session_event(struct emu_session *s, enum odpemu_event_type type, uint32_t handle)
{
	struct ipc_event ev = { .type = type, .handle = handle };

	if (s->event_wr < 0 || s->dead)
		return;
	/* Records are smaller than PIPE_BUF, so each write is whole or fails. */
	if (write(s->event_wr, &ev, sizeof(ev)) != sizeof(ev)) {
		s->events_dropped++;
		s->d->ctr.events_dropped++;
		return;
	}
	s->d->ctr.events_sent++;
}

/* Destroy every object: CM connections and listeners first (they hold CM channels; a
 * connection that is up sends its DREQ), then memory windows (they hold MRs), QPs (they
 * hold CQs, SRQs, PDs), SRQs, CQs, MRs, channels, PDs. */
static void destroy_all(struct emu_session *s)
{
	static const enum emu_obj_type order[] = { EMU_OBJ_WATCH, EMU_OBJ_CM_CONN, EMU_OBJ_CM_LISTEN,
		EMU_OBJ_CM_CHANNEL, EMU_OBJ_MW, EMU_OBJ_QP, EMU_OBJ_SRQ, EMU_OBJ_CQ, EMU_OBJ_MR,
		EMU_OBJ_CHANNEL, EMU_OBJ_PD };

	for (unsigned k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		for (struct emu_obj *o = s->of_type[order[k]].first, *next; o; o = next) {
			next = o->type_next;	/* o goes */
			if (emu_obj_destroy(o))
				emu_log(EMU_LOG_ERR, "session %u: object %u would not go", s->id,
					o->handle);
		}
}

/* A session that shares s's table, to take s's objects (IMPORTS): one of s's process if
 * there is one (the memory of s's MRs stays reachable through its id), else any. */
static struct emu_session *heir_of(struct emu_session *s)
{
	struct emu_session *any = NULL;

	for (struct emu_session *h = s->d->sessions; h; h = h->next) {
		if (h == s || h->dead || h->tab != s->tab)
			continue;
		if (h->pid == s->pid)
			return h;
		any = any ? any : h;
	}
	return any;
}

/* o (of s) becomes heir's: its lists, its doorbell page, its pending notification. An
 * MR's memory stays its registering process's (nic/'s client) unless heir is that process
 * too; a lease is its process's watch, so in another process it is revoked. */
static void hand_over(struct emu_obj *o, struct emu_session *heir)
{
	bool same = heir->pid == o->s->pid;

	if (o->type == EMU_OBJ_MR && o->u.mr.lease.on) {
		emu_lease_detach(o);
		if (!same && !nic_mr_lease_revoke(o->u.mr.mr))
			heir->d->ctr.lease_revocations++;
	}
	unlink_type(o->s, o);
	o->s = heir;
	link_type(heir, o);
	if (o->type == EMU_OBJ_MR && same) {
		nic_mr_set_client(o->u.mr.mr, heir->id);
		if (o->u.mr.access & ODPEMU_ACCESS_LEASE)
			emu_lease_attach(o);
	}
	if (o->type == EMU_OBJ_CQ && o->u.cq.notify_pending && heir->db &&
	    emu_session_cq_notify(o))
		o->u.cq.notify_pending = false;	/* no room: the next completion notifies */
}

/* s closes while others share its table: what is its process's alone goes (watches, CM
 * objects: the kernel's rdma_cm ids belong to a file of their own), the rest is the
 * heir's. */
static void leave_table(struct emu_session *s, struct emu_session *heir)
{
	static const enum emu_obj_type own[] = { EMU_OBJ_WATCH, EMU_OBJ_CM_CONN,
		EMU_OBJ_CM_LISTEN, EMU_OBJ_CM_CHANNEL };

	for (unsigned k = 0; k < sizeof(own) / sizeof(own[0]); k++)
		for (struct emu_obj *o = s->of_type[own[k]].first, *next; o; o = next) {
			next = o->type_next;
			if (emu_obj_destroy(o))
				emu_log(EMU_LOG_ERR, "session %u: object %u would not go", s->id,
					o->handle);
		}
	for (unsigned t = 1; t < EMU_OBJ_TYPES; t++)
		while (s->of_type[t].first)
			hand_over(s->of_type[t].first, heir);
	emu_log(EMU_LOG_INFO, "session %u: its objects live on with session %u (pid %d), which "
		"shares its table", s->id, heir->id, (int)heir->pid);
}

void emu_session_share(struct emu_session *s, struct emu_session *owner)
{
	free(s->tab->objs);
	free(s->tab->used);
	free(s->tab->full);
	free(s->tab);
	s->tab = owner->tab;
	s->tab->users++;
}

/* The last user frees the table; its objects are gone by then. */
static void table_put(struct emu_session *s)
{
	struct emu_table *t = s->tab;

	s->tab = NULL;
	if (--t->users)
		return;
	free(t->objs);
	free(t->used);
	free(t->full);
	free(t);
}

static void unlink_session(struct emu_session *s)
{
	for (struct emu_session **p = &s->d->sessions; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	s->d->nsessions--;
}

/* Closing an fd does not end a poll armed on it (the request holds the file): cancel
 * them, synchronously (an asynchronous poll_remove can miss a multishot poll that is in
 * the middle of completing, and the session would then wait for it forever). Each posts
 * its final completion, and the last one frees the session (poll_done). */
static void cancel_polls(struct emu_session *s)
{
	struct emu_io *ios[] = { &s->sock_io, &s->db_io, &s->uffd_io, &s->sup_io };
	bool armed[] = { true, true, s->uffd_relay >= 0, s->supervise >= 0 };

	for (unsigned i = 0; i < sizeof(ios) / sizeof(ios[0]); i++) {
		int rc = armed[i] ? emu_loop_cancel_sync(&s->d->loop, ios[i]) : 0;

		if (rc)
			emu_log(EMU_LOG_WARN, "session %u: cancelling a poll: %s", s->id,
				strerror(-rc));
	}
}

void emu_session_close(struct emu_session *s)
{
	struct emu_session *heir;

	if (s->dead)
		return;
	s->dead = true;
	s->d->closing_sessions++;
	if (s->d->last_session == s)
		s->d->last_session = NULL;
	emu_log(EMU_LOG_INFO, "session %u: pid %d gone; freeing its objects", s->id, (int)s->pid);
	emu_lease_session_close(s);
	if ((heir = heir_of(s)))
		leave_table(s, heir);
	else
		destroy_all(s);
	table_put(s);
	unlink_session(s);
	if (s->d->fault)
		emu_fault_forget(s->d->fault, s->id);
	cancel_polls(s);
	close(s->sock);
	close(s->doorbell);
	if (s->uffd >= 0)
		close(s->uffd);
	if (s->uffd_relay >= 0)
		close(s->uffd_relay);
	if (s->supervise >= 0)		/* its process may live on: someone must answer */
		emu_orphan_adopt(s->d, s->supervise, s->pid);
	if (s->event_wr >= 0)
		close(s->event_wr);
	free(s->cq_notify);
	if (s->db)
		munmap(s->db, sizeof(*s->db));
	s->cq_notify = NULL;
	s->db = NULL;
	s->ncq_notify = s->cq_notify_cap = 0;
}
