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
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ctl.h"
#include "daemon.h"
#include "lease.h"
#include "log.h"
#include "maps.h"
#include "notifier.h"

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
	const struct ipc_supervise_req *q = r->body;

	EMU_WANT_BODY(r, struct ipc_supervise_req);
	if (!q->held || (q->held & 7))
		return emu_reply_err(r, -EINVAL, "supervise: the held-call words must be 8-byte "
				     "aligned");
	if (r->nfds != 1 || !emu_fd_is_anon(r->fds[0], "seccomp notify"))
		return emu_reply_err(r, -EINVAL, "supervise: want the seccomp listener fd");
	if (r->s->supervise >= 0 || r->s->sup_cancelling)
		return emu_reply_err(r, -EBUSY, "supervise: this session has a listener already");
	emu_session_set_supervise(r->s, r->fds[0]);
	r->s->held_at = q->held;
	r->fds[0] = -1;
	return ok(r, NULL, 0);
}

/* The library moves the listener to the daemon of its first watch or lease (ipc.h): this
 * one took it for the seccomp route only, and answers no more held calls from now on. */
static int op_unsupervise(struct emu_req *r)
{
	struct emu_session *s = r->s;
	int rc;

	if (s->supervise < 0)
		return emu_reply_err(r, -ENOENT, "unsupervise: no listener here");
	if (s->nwatches || s->leases.count || s->holds)
		return emu_reply_err(r, -EBUSY, "unsupervise: watches or leases need the "
				     "listener here");
	if ((rc = emu_session_unsupervise(s)))
		return emu_reply_err(r, rc, "unsupervise: %s", strerror(-rc));
	emu_log(EMU_LOG_INFO, "session %u: pid %d moves its seccomp listener to the daemon of "
		"its first watch or lease", s->id, (int)s->pid);
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
	case IPC_UNSUPERVISE: return op_unsupervise;
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

static uint64_t page_up(uint64_t a)
{
	return a > UINT64_MAX - (PAGE - 1) ? UINT64_MAX : (a + PAGE - 1) & ~(PAGE - 1);
}

/* A task's VMAs come from ipc/maps.c, the reader the fault path and the library share
 * (PROCMAP_QUERY, or the text on kernels before 6.11, to which a walk turns by itself).
 * Its state (12 KiB) is on the stack: only a held brk or shmdt reads it, on the loop
 * thread, which is the daemon's main thread. Each walk starts on PROCMAP_QUERY: on an
 * older kernel one refused ioctl per held call, not worth state kept between calls. */
static int maps_open(pid_t tid)
{
	char path[64];

	if (tid <= 0)
		return -1;	/* not in our PID namespace: nothing to read */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)tid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* The name as the kernel shows it ("[heap]", a path...) is not NUL-terminated. */
static bool name_is(const struct ipc_vma *v, const char *name)
{
	return v->name_len == strlen(name) && !memcmp(v->name, name, v->name_len);
}

static bool name_starts(const struct ipc_vma *v, const char *prefix)
{
	return v->name_len >= strlen(prefix) && !memcmp(v->name, prefix, strlen(prefix));
}

/* brk(want): a shrink frees [PAGE_ALIGN(want), PAGE_ALIGN(old break)) (mm/mmap.c); brk(0)
 * (which the filter lets run anyway) and a growth change no mapping. There is no file that
 * gives a process's break; the heap VMA ends at the page-aligned break, and /proc/PID/maps
 * labels [heap] each VMA between the heap's start and the break, so the old break is the
 * end of the last [heap] VMA. Conservative where that VMA reaches further (an anonymous
 * mapping merged with the heap, or one starting right at the break): the range then
 * covers it too, a Z word set for nothing, never one missed. A break below the heap's
 * first VMA is refused by the kernel: nothing. The walk stops past the heap, a few VMAs
 * from the bottom (the executable's). */
static unsigned brk_change(pid_t tid, uint64_t want, struct range *out)
{
	uint64_t start = 0, end = 0;
	struct ipc_maps m;
	struct ipc_vma v;
	int fd;

	if (!want || (fd = maps_open(tid)) < 0)
		return 0;
	m.text = false;
	ipc_maps_begin(&m, fd, 0, UINT64_MAX);
	while (ipc_maps_next(&m, &v) > 0) {
		if (!name_is(&v, "[heap]")) {
			if (end)
				break;	/* past the heap */
			continue;
		}
		if (!end)
			start = v.start;
		end = v.end;
	}
	close(fd);
	if (want < start || page_up(want) >= end)
		return 0;
	*out = (struct range){ page_up(want), end };
	return 1;
}

/* shmdt(addr) detaches what ipc/shm.c finds: the first System V shared memory VMA at or
 * above addr whose file offset is its distance from addr, and every later VMA of that same
 * segment (device and inode) at its distance too: the pieces mprotect or munmap made of one
 * attachment. One range, from the first piece to the end of the last: a hole between two
 * pieces, mapped since by something else, is reported with them (conservative). The walk
 * starts at addr: nothing below can be detached. */
static unsigned shmdt_change(pid_t tid, uint64_t addr, struct range *out)
{
	unsigned found = 0;
	uint32_t major = 0, minor = 0;
	uint64_t ino = 0;
	struct ipc_maps m;
	struct ipc_vma v;
	int fd;

	if ((addr & (PAGE - 1)) || (fd = maps_open(tid)) < 0)
		return 0;	/* unaligned: EINVAL */
	m.text = false;
	ipc_maps_begin(&m, fd, addr, UINT64_MAX);
	while (ipc_maps_next(&m, &v) > 0) {
		if (v.start < addr || v.start - addr != v.offset || !name_starts(&v, "/SYSV"))
			continue;
		if (!found) {
			found = 1;
			major = v.dev_major, minor = v.dev_minor, ino = v.inode;
			out->start = v.start;
		} else if (v.inode != ino || v.dev_major != major || v.dev_minor != minor) {
			continue;
		}
		out->end = v.end;
	}
	close(fd);
	return found;
}

static bool same_ipc_ns(pid_t tid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)tid);
	return stat(path, &a) == 0 && stat("/proc/thread-self/ns/ipc", &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* shmat(id, addr, flags with SHM_REMAP) maps segment id over [addr, addr + its size)
 * (ipc/shm.c do_shmat; SHM_RND rounds addr down to SHMLBA, the page size on x86-64). The
 * size comes from shmctl(IPC_STAT), which we, root, may always do, but only for a caller
 * in our IPC namespace (an id means nothing in another). A segment that is not there
 * (EINVAL, EIDRM): the call fails, nothing changes. Any other doubt (another namespace,
 * IPC_STAT refused): everything from addr up, conservative. */
static unsigned shmat_change(pid_t tid, const __u64 *a, struct range *out)
{
	uint64_t addr = (a[2] & SHM_RND) ? a[1] & ~(PAGE - 1) : a[1];
	struct shmid_ds ds;

	if (!addr || (addr & (PAGE - 1)))
		return 0;	/* EINVAL */
	if (!same_ipc_ns(tid)) {
		*out = (struct range){ addr, UINT64_MAX };
	} else if (shmctl((int)a[0], IPC_STAT, &ds) == 0) {
		*out = pages(addr, ds.shm_segsz);
	} else if (errno == EINVAL || errno == EIDRM) {
		return 0;
	} else {
		*out = (struct range){ addr, UINT64_MAX };
	}
	return 1;
}

/* The ranges a held call will change (at most two: mremap's old and new places). brk and
 * System V detaches are read from the calling thread's /proc entry (n->pid, in our PID
 * namespace; 0 if it has none there, and then nothing is found) rather than the
 * session's: the address space is the process's either way, a thread's entry still
 * answers once the leader has exited, and an IPC namespace is per thread. */
static unsigned changed(const struct seccomp_notif *n, struct range out[2])
{
	const struct seccomp_data *d = &n->data;
	const __u64 *a = d->args;
	pid_t caller = (pid_t)n->pid;

	switch (d->nr) {
	case __NR_munmap:
	case __NR_madvise:	/* the filter holds only the discarding advices, DONTNEED_LOCKED too */
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
	case __NR_brk:
		return brk_change(caller, a[0], &out[0]);
	case __NR_shmdt:
		return shmdt_change(caller, a[0], &out[0]);
	case __NR_shmat:	/* the filter holds only SHM_REMAP */
		return shmat_change(caller, a, &out[0]);
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

/* Set the Z words, break the leases; true if the call must wait for lease acks (then
 * lease.c answers it later). */
static bool notify(struct emu_session *s, const struct seccomp_notif *n)
{
	struct emu_hold *hold = NULL;
	struct range r[2];
	unsigned k = changed(n, r);

	s->d->ctr.watch_changes++;
	/* the caller still waits (so n->pid, read in /proc by changed(), was still it): the
	 * seccomp man page's rule before acting on what a notification names */
	if (!ours(s, (pid_t)n->pid) ||
	    ioctl(s->supervise, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id))
		return false;
	for (unsigned i = 0; i < k; i++) {
		/* no userfaultfd, or one that cannot watch file mappings: this listener is
		 * the process's MMU notifier too, and the NIC lets go of the range before
		 * the call runs (notifier.h) */
		if (s->uffd < 0 || !(s->uffd_features & UFFD_FEATURE_WP_ASYNC))
			emu_notifier_held_change(s, r[i].start, r[i].end);
		fire(s, r[i]);
		emu_lease_change(s, n->id, r[i].start, r[i].end, &hold);
	}
	return hold != NULL;
}

void emu_watch_answer(struct emu_session *s, uint64_t id)
{
	/* room for a kernel whose record outgrew our header */
	union {
		struct seccomp_notif_resp r;
		uint8_t room[512];
	} out;

	if (s->supervise < 0)
		return;
	memset(&out, 0, sizeof(out));
	out.r.id = id;
	out.r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	/* ENOENT: the caller went meanwhile (killed by a signal, say) */
	if (ioctl(s->supervise, SECCOMP_IOCTL_NOTIF_SEND, &out.r) && errno != ENOENT)
		emu_log(EMU_LOG_WARN, "session %u: answering a held call: %s", s->id,
			strerror(errno));
}

static void serve_one(struct emu_session *s)
{
	/* room for a kernel whose records outgrew our headers (SECCOMP_GET_NOTIF_SIZES) */
	union {
		struct seccomp_notif n;
		uint8_t room[512];
	} in;

	memset(&in, 0, sizeof(in));
	/* The poll said readable; RECV fails with ENOENT when the caller went meanwhile. */
	if (ioctl(s->supervise, SECCOMP_IOCTL_NOTIF_RECV, &in.n))
		return;
	if (!notify(s, &in.n))
		emu_watch_answer(s, in.n.id);
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
