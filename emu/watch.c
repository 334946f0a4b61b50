/* SPDX-License-Identifier: MIT */
/* watch — the mapping-change notifier's daemon side (see watch.h, docs/regcache.md). */
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ctl.h"
#include "daemon.h"
#include "log.h"

#define PAGE 4096ull
#define MAX_WATCHES (1u << 15)	/* per session (of its 65,535 objects): bounded memory */

/* madvise advices that discard pages (the filter holds only these; uapi mman-common.h). */
#define ADV_DONTNEED 4
#define ADV_FREE 8
#define ADV_REMOVE 9
#define ADV_DONTNEED_LOCKED 24

static int ok(struct emu_req *r, const void *body, size_t len)
{
	return emu_ctl_reply(r->s, r->hdr, 0, body, len, NULL, 0);
}

static int op_supervise(struct emu_req *r)
{
	if (r->nfds != 1 || !emu_fd_is_anon(r->fds[0], "seccomp notify"))
		return emu_reply_err(r, -EINVAL, "supervise: want the seccomp listener fd");
	if (r->s->supervise >= 0)
		return emu_reply_err(r, -EBUSY, "supervise: this session has a listener already");
	emu_session_set_supervise(r->s, r->fds[0]);
	r->fds[0] = -1;
	return ok(r, NULL, 0);
}

static int op_watch_create(struct emu_req *r)
{
	const struct ipc_watch_req *q = r->body;
	struct ipc_handle_rep rep = { 0 };
	struct emu_obj *o;

	EMU_WANT_BODY(r, struct ipc_watch_req);
	if (!q->len || q->addr + q->len < q->addr || !q->z || (q->z & 7))
		return emu_reply_err(r, -EINVAL, "watch: empty or wrapping range, or a Z word "
				     "that is not 8-byte aligned");
	if (r->s->nwatches >= MAX_WATCHES)
		return emu_reply_err(r, -ENOSPC, "watch: %u watches per process at most",
				     MAX_WATCHES);
	if (!(o = emu_obj_new(r->s, EMU_OBJ_WATCH)))
		return emu_reply_err(r, -ENOMEM, "too many objects");
	o->u.watch.node.start = (uintptr_t)q->addr;
	o->u.watch.node.end = (uintptr_t)(q->addr + q->len);
	o->u.watch.z = q->z;
	interval_insert(&r->s->watches, &o->u.watch.node);
	r->s->nwatches++;
	rep.handle = o->handle;
	return ok(r, &rep, sizeof(rep));
}

static int op_watch_destroy(struct emu_req *r)
{
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_WATCH);

	if (!o)
		return emu_reply_err(r, -ENOENT, "watch_destroy: no watch %u", r->hdr->handle);
	emu_obj_destroy(o);
	return ok(r, NULL, 0);
}

emu_op_fn emu_watch_op(unsigned op)
{
	switch (op) {
	case IPC_SUPERVISE: return op_supervise;
	case IPC_WATCH_CREATE: return op_watch_create;
	case IPC_WATCH_DESTROY: return op_watch_destroy;
	default: return NULL;
	}
}

/* ---- the held calls ---- */

struct range {
	uint64_t start, end;
};

static struct range pages(uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len;

	if (end < addr)
		end = UINT64_MAX;
	return (struct range){ addr & ~(PAGE - 1), end > UINT64_MAX - (PAGE - 1) ? UINT64_MAX :
			       (end + PAGE - 1) & ~(PAGE - 1) };
}

/* The ranges a held call will change (at most two: mremap's old and new places). */
static unsigned changed(const struct seccomp_data *d, struct range out[2])
{
	const __u64 *a = d->args;

	switch (d->nr) {
	case __NR_munmap:
	case __NR_madvise:	/* the filter holds only the discarding advices */
	case __NR_mmap:		/* the filter holds only MAP_FIXED */
		out[0] = pages(a[0], a[1]);
		return a[1] ? 1 : 0;
	case __NR_mremap:
		out[0] = pages(a[0], a[1]);
		if (a[3] & MREMAP_FIXED) {
			out[1] = pages(a[4], a[2]);
			return 2;
		}
		return 1;
	default:
		return 0;
	}
}

/* Held calls of other processes (a forked child inherits the filter) just run. */
static bool ours(const struct emu_session *s, pid_t tid)
{
	char path[64];
	struct stat st;

	if (tid == s->pid)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)s->pid, (int)tid);
	return stat(path, &st) == 0;
}

static void set_z(struct emu_session *s, uint64_t z)
{
	static const uint64_t one = 1;
	struct iovec l = { (void *)&one, sizeof(one) }, rm = { (void *)(uintptr_t)z, sizeof(one) };

	if (process_vm_writev(s->pid, &l, 1, &rm, 1, 0) == (ssize_t)sizeof(one))
		s->d->ctr.watch_fired++;
	else
		s->d->ctr.watch_errors++;
}

/* Set the Z word of every watch that meets r: each found is taken out of the index so
 * the next search finds the next one (O(k log n)), then all are put back. */
static void fire(struct emu_session *s, struct range r)
{
	struct emu_obj *hits = NULL;
	struct interval_node *node;

	if (r.start >= r.end)
		return;
	while ((node = interval_find_overlap(&s->watches, (uintptr_t)r.start, (uintptr_t)r.end))) {
		struct emu_obj *o = (struct emu_obj *)((char *)node -
						       offsetof(struct emu_obj, u.watch.node));

		interval_remove(&s->watches, node);
		set_z(s, o->u.watch.z);
		o->u.watch.hit = hits;
		hits = o;
	}
	for (; hits; hits = hits->u.watch.hit)
		interval_insert(&s->watches, &hits->u.watch.node);
}

static void notify(struct emu_session *s, const struct seccomp_notif *n)
{
	struct range r[2];
	unsigned k = changed(&n->data, r);

	s->d->ctr.watch_changes++;
	if (!ours(s, (pid_t)n->pid))
		return;
	for (unsigned i = 0; i < k; i++)
		fire(s, r[i]);
}

static void serve_one(struct emu_session *s)
{
	/* room for a kernel whose records outgrew our headers (SECCOMP_GET_NOTIF_SIZES) */
	union {
		struct seccomp_notif n;
		uint8_t room[512];
	} in;
	union {
		struct seccomp_notif_resp r;
		uint8_t room[512];
	} out;

	memset(&in, 0, sizeof(in));
	/* The poll said readable; RECV fails with ENOENT when the caller went meanwhile. */
	if (ioctl(s->supervise, SECCOMP_IOCTL_NOTIF_RECV, &in.n))
		return;
	notify(s, &in.n);
	memset(&out, 0, sizeof(out));
	out.r.id = in.n.id;
	out.r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	if (ioctl(s->supervise, SECCOMP_IOCTL_NOTIF_SEND, &out.r) && errno != ENOENT)
		emu_log(EMU_LOG_WARN, "session %u: answering a held call: %s", s->id,
			strerror(errno));
}

/* One poll completion may stand for several held calls (io_uring coalesces wakeups):
 * answer every one pending now, a bounded number per round. */
void emu_watch_serve(struct emu_session *s)
{
	for (int n = 0; n < 256; n++) {
		struct pollfd pf = { .fd = s->supervise, .events = POLLIN };

		if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLIN))
			return;
		serve_one(s);
	}
}
