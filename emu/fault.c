/* SPDX-License-Identifier: MIT */
/*
 * fault — the host fault handler thread (see fault.h). Four parts, bottom up: reading the
 * client's VMAs (PROCMAP_QUERY or the text of /proc/PID/maps), checking a request's need,
 * building the answer's maps (pagemap for NO_FAULT), and the thread with its two queues.
 */
#include "fault.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "procmap.h"

#define PAGE		IOPT_PAGE_SIZE
#define MAPS_BUF	8192	/* text read per pread; a longer line is cut (see text_line) */
#define NAME_BUF	4160	/* PATH_MAX and some: a VMA name from PROCMAP_QUERY */
#define PM_CHUNK	512	/* pagemap entries per pread: 4 KiB */
#define RACE_MAX	2	/* re-reads after registering before answering anyway */
#define FILES_CACHED	8	/* clients whose /proc files the thread keeps open */
#define BATCH_MAX	64	/* jobs taken per wake-up */


#define PM_PRESENT	(1ull << 63)	/* Documentation/admin-guide/mm/pagemap.rst */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- growable arrays ---- */

struct vma_vec {
	struct emu_vma *a;
	size_t n, cap;
};
struct map_vec {
	struct iopt_map *a;
	size_t n, cap;
};

static int grow(void **a, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*a, ncap * elem);
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = ncap;
	return 0;
}

static int vma_push(struct vma_vec *v, const struct emu_vma *m)
{
	if (grow((void **)&v->a, &v->cap, v->n + 1, sizeof(*v->a)))
		return -ENOMEM;
	v->a[v->n++] = *m;
	return 0;
}

/* Append [va, end) with perm, merging into the last run when they touch with one perm. */
static int add_run(struct map_vec *v, uint64_t va, uint64_t end, unsigned perm)
{
	struct iopt_map *l = v->n ? &v->a[v->n - 1] : NULL;

	if (l && l->va + l->len == va && l->perm == perm) {
		l->len = end - l->va;
		return 0;
	}
	if (grow((void **)&v->a, &v->cap, v->n + 1, sizeof(*v->a)))
		return -ENOMEM;
	v->a[v->n++] = (struct iopt_map){ .va = va, .len = end - va, .host = va, .perm = perm };
	return 0;
}

/* A client's /proc files, kept open across jobs: opening /proc/PID/maps costs more than
 * resolving a job with PROCMAP_QUERY. Keyed by the NIC's client id, which is never reused,
 * and the pid; closed when the loop says the client is gone (emu_fault_forget) or when
 * the slot is wanted for another client (least recently used). */
struct client_files {
	uint32_t client;
	pid_t pid;			/* 0: free slot */
	int maps_fd, pagemap_fd;	/* -1 until first needed */
	uint64_t used;			/* resolver tick of the last use */
};

/* The resolver's scratch, reused job after job by the thread. */
struct resolver {
	bool text;			/* read the maps as text (forced, or no PROCMAP_QUERY) */
	struct vma_vec vmas, again;
	struct map_vec runs;
	/* VMAs settled (read, registered, read again unchanged) during this batch, for
	 * batch_client/batch_pid: a later job of the batch inside one of them needs no
	 * syscall (see settle_vmas). Emptied at each batch. */
	struct vma_vec settled;
	uint32_t batch_client;
	pid_t batch_pid;		/* 0: nothing settled yet */
	bool batch_uffd;		/* settled with the VMAs registered on a uffd */
	struct client_files files[FILES_CACHED];
	uint64_t tick;
	char buf[MAPS_BUF];
	char name[NAME_BUF];
	uint64_t pm[PM_CHUNK];
};

static struct resolver *resolver_new(bool text)
{
	struct resolver *rs = calloc(1, sizeof(*rs));

	if (rs)
		rs->text = text;
	return rs;
}

static void files_close(struct client_files *c)
{
	if (c->maps_fd >= 0)
		close(c->maps_fd);
	if (c->pagemap_fd >= 0)
		close(c->pagemap_fd);
	*c = (struct client_files){ .maps_fd = -1, .pagemap_fd = -1 };
}

static void resolver_free(struct resolver *rs)
{
	if (!rs)
		return;
	for (unsigned i = 0; i < FILES_CACHED; i++)
		if (rs->files[i].pid)
			files_close(&rs->files[i]);
	free(rs->vmas.a);
	free(rs->again.a);
	free(rs->runs.a);
	free(rs->settled.a);
	free(rs);
}

static void batch_begin(struct resolver *rs)
{
	rs->settled.n = 0;
	rs->batch_pid = 0;
}

/* ---- the client's VMAs ---- */

/* Mappings with no pages behind them to copy: the vDSO's data pages (VM_IO|VM_PFNMAP,
 * which hmm_range_fault refuses too) and the vsyscall gate (above 2^47 anyway). */
static bool special_name(const char *name, size_t len)
{
	static const char *const names[] = { "[vvar]", "[vvar_vclock]", "[vsyscall]" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (len == strlen(names[i]) && !memcmp(name, names[i], len))
			return true;
	return false;
}

static const char *parse_hex(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	for (; p < end; p++, digits++) {
		char c = *p;
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') :
			c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;

		if (d == 16)
			break;
		if (digits == 16)
			return NULL;
		v = v << 4 | d;
	}
	*out = v;
	return digits ? p : NULL;
}

/* Skip one space-separated field (offset, dev, inode) and the spaces before it. */
static const char *skip_field(const char *p, const char *end)
{
	if (p == end || *p != ' ')
		return NULL;
	while (p < end && *p == ' ')
		p++;
	if (p == end)
		return NULL;
	while (p < end && *p != ' ')
		p++;
	return p;
}

static int parse_perms(const char *p, unsigned *prot)
{
	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's'))
		return -EINVAL;
	*prot = (p[0] == 'r' ? EMU_VMA_R : 0) | (p[1] == 'w' ? EMU_VMA_W : 0) |
		(p[2] == 'x' ? EMU_VMA_X : 0) | (p[3] == 's' ? EMU_VMA_SHARED : 0);
	return 0;
}

/* fs/proc/task_mmu.c show_map_vma(): "%08lx-%08lx %c%c%c%c %08llx %02x:%02x %lu " then
 * padding and the name. A path's newlines are escaped ("\012"), so a line is one line. */
int emu_maps_parse_line(const char *line, size_t len, struct emu_vma *out)
{
	const char *p = line, *end = line + len;
	struct emu_vma v = { 0 };

	p = parse_hex(p, end, &v.start);
	if (!p || p == end || *p++ != '-')
		return -EINVAL;
	p = parse_hex(p, end, &v.end);
	if (!p || end - p < 5 || *p++ != ' ' || parse_perms(p, &v.prot))
		return -EINVAL;
	p += 4;
	for (int i = 0; i < 3 && p; i++)
		p = skip_field(p, end);
	if (!p || v.start >= v.end)
		return -EINVAL;
	while (p < end && *p == ' ')
		p++;
	v.special = special_name(p, (size_t)(end - p));
	*out = v;
	return 0;
}

/* Where the VMAs come from: PROCMAP_QUERY (one ioctl per VMA, from an address on) or the
 * text (pread from offset 0, consecutive offsets so seq_file continues instead of
 * re-walking the maps each time). */
struct vma_src {
	struct resolver *rs;
	int fd;
	uint64_t next;			/* query: ask about this address next */
	off_t off;			/* text: file offset of buf[len] */
	size_t len, pos;		/* text: bytes in buf, parsed up to pos */
	bool eof, skipping;		/* text: skipping the rest of a cut line */
};

/* The next line of text; 1, 0 at the end, -errno. A line longer than the buffer (a path of
 * thousands of bytes) is returned cut at MAPS_BUF bytes, which keeps every field parsed;
 * the rest of it is skipped. */
static int text_line(struct vma_src *s, const char **line, size_t *len)
{
	char *buf = s->rs->buf;

	for (;;) {
		char *start = buf + s->pos, *nl = memchr(start, '\n', s->len - s->pos);
		ssize_t n;

		if (nl) {
			s->pos = (size_t)(nl + 1 - buf);
			if (s->skipping) {
				s->skipping = false;
				continue;
			}
			*line = start;
			*len = (size_t)(nl - start);
			return 1;
		}
		if (s->eof) {
			/* A last line without '\n' (never seen from the kernel). */
			*line = start;
			*len = s->len - s->pos;
			s->pos = s->len;
			return *len && !s->skipping;
		}
		if (s->pos == 0 && s->len == MAPS_BUF) {
			bool cut = !s->skipping;

			s->skipping = true;
			s->pos = s->len;
			if (cut) {
				*line = buf;
				*len = MAPS_BUF;
				return 1;
			}
		}
		memmove(buf, buf + s->pos, s->len - s->pos);
		s->len -= s->pos;
		s->pos = 0;
		n = pread(s->fd, buf + s->len, MAPS_BUF - s->len, s->off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ESRCH ? 0 : -errno;	/* the process is gone */
		s->eof = n == 0;
		s->off += n;
		s->len += (size_t)n;
	}
}

static int text_next(struct vma_src *s, struct emu_vma *v)
{
	const char *line = NULL;
	size_t len = 0;
	int rc = text_line(s, &line, &len);

	if (rc <= 0)
		return rc;
	return emu_maps_parse_line(line, len, v) ? -EPROTO : 1;
}

static int query_next(struct vma_src *s, struct emu_vma *v)
{
	struct odpemu_procmap_query q = {
		.size = sizeof(q), .query_flags = PMQ_COVERING_OR_NEXT, .query_addr = s->next,
		.vma_name_size = NAME_BUF, .vma_name_addr = (uintptr_t)s->rs->name,
	};
	int rc = ioctl(s->fd, ODPEMU_PROCMAP_QUERY, &q);

	if (rc && (errno == E2BIG || errno == ENAMETOOLONG)) {
		/* The name did not fit (E2BIG), or d_path found it longer than PATH_MAX: not
		 * one of the short special names. */
		q.vma_name_size = 0;
		q.vma_name_addr = 0;
		rc = ioctl(s->fd, ODPEMU_PROCMAP_QUERY, &q);
	}
	if (rc)	/* ENOENT: no VMA from here on; ESRCH: the process is gone */
		return errno == ENOENT || errno == ESRCH ? 0 : -errno;
	v->start = q.vma_start;
	v->end = q.vma_end;
	v->prot = (q.vma_flags & PMQ_READABLE ? EMU_VMA_R : 0) |
		(q.vma_flags & PMQ_WRITABLE ? EMU_VMA_W : 0) |
		(q.vma_flags & PMQ_EXECUTABLE ? EMU_VMA_X : 0) |
		(q.vma_flags & PMQ_SHARED ? EMU_VMA_SHARED : 0);
	/* vma_name_size counts the terminating zero. */
	v->special = q.vma_name_size && special_name(s->rs->name, q.vma_name_size - 1);
	s->next = q.vma_end;
	return 1;
}

/* The VMAs meeting [lo, hi), ascending, into out. 0 or -errno. */
static int collect(struct resolver *rs, int fd, uint64_t lo, uint64_t hi, struct vma_vec *out)
{
	struct vma_src s = { .rs = rs, .fd = fd, .next = lo };
	struct emu_vma v;
	int rc;

	out->n = 0;
	while ((rc = rs->text ? text_next(&s, &v) : query_next(&s, &v)) > 0) {
		if (v.end <= lo)
			continue;
		if (v.start >= hi)
			break;
		if (vma_push(out, &v))
			return -ENOMEM;
		if (v.end >= hi)
			return 0;	/* the last one meeting the window: no need to ask on */
	}
	if (rc == -ENOTTY && !rs->text) {
		/* A kernel before 6.11: the text from now on. */
		rs->text = true;
		return collect(rs, fd, lo, hi, out);
	}
	return rc < 0 ? rc : 0;
}

static bool same_vmas(const struct vma_vec *a, const struct vma_vec *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->a[i].start != b->a[i].start || a->a[i].end != b->a[i].end ||
		    a->a[i].prot != b->a[i].prot || a->a[i].special != b->a[i].special)
			return false;
	return true;
}

/* ---- the request ---- */

static bool usable(const struct emu_vma *v)
{
	return (v->prot & EMU_VMA_R) && !v->special;
}

static bool request_ok(const struct iopt_req *r)
{
	uint64_t end = r->va + r->len, need_end = r->need_va + r->need_len;

	if (!r->len || end < r->va || end > IOPT_VA_END || (r->va | r->len) % PAGE)
		return false;
	if (!(r->access & (IOPT_READ | IOPT_WRITE | IOPT_ATOMIC)))
		return false;
	return !r->need_len ||
		(need_end > r->need_va && r->need_va >= r->va && need_end <= end);
}

/* Is the need covered by VMAs with the access's permission? First problem in address order:
 * a hole (or special mapping) is -EFAULT, a VMA without the permission -EACCES. */
static int check_need(const struct iopt_req *r, const struct vma_vec *v)
{
	uint64_t cur = r->need_va, end = r->need_va + r->need_len;
	unsigned want = r->access & (IOPT_WRITE | IOPT_ATOMIC) ? EMU_VMA_R | EMU_VMA_W : EMU_VMA_R;

	for (size_t i = 0; i < v->n && cur < end; i++) {
		const struct emu_vma *m = &v->a[i];

		if (m->end <= cur)
			continue;
		if (m->start > cur || m->special)
			return -EFAULT;
		if ((m->prot & want) != want)
			return -EACCES;
		cur = m->end;
	}
	return cur < end ? -EFAULT : 0;
}

/* Register every VMA the answer will use, whole, in write-protect mode: no page is ever
 * write-protected, so the client's accesses never stop, but the registration makes the
 * kernel report unmap/remap/remove of any part of the VMA (userfaultfd(2), ioctl_userfaultfd
 * (2); UFFD_FEATURE_EVENT_* are the client's choice at UFFDIO_API). Re-registering a VMA
 * already registered on the same uffd is a cheap no-op (~0.3 us). */
static void register_vmas(int uffd, const struct vma_vec *v, struct emu_fault_stats *st)
{
	for (size_t i = 0; i < v->n; i++) {
		struct uffdio_register reg = {
			.range = { .start = v->a[i].start, .len = v->a[i].end - v->a[i].start },
			.mode = UFFDIO_REGISTER_MODE_WP,
		};

		if (!usable(&v->a[i]))
			continue;
		if (ioctl(uffd, UFFDIO_REGISTER, &reg) == 0)
			st->uffd_registered++;
		else
			st->uffd_refused++;
	}
}

/* Runs of the present pages of [s, e) (pagemap bit 63), until there are `cap` runs. */
static int add_present(struct resolver *rs, int pm_fd, uint64_t s, uint64_t e, unsigned perm,
	size_t cap)
{
	while (s < e && rs->runs.n < cap) {
		uint64_t want = (e - s) / PAGE < PM_CHUNK ? (e - s) / PAGE : PM_CHUNK;
		ssize_t n = pread(pm_fd, rs->pm, want * sizeof(uint64_t),
			(off_t)(s / PAGE * sizeof(uint64_t)));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(uint64_t))
			return n < 0 && errno != ESRCH ? -errno : 0;	/* gone: nothing present */
		for (size_t i = 0; i < (size_t)n / sizeof(uint64_t); i++, s += PAGE)
			if ((rs->pm[i] & PM_PRESENT) && add_run(&rs->runs, s, s + PAGE, perm))
				return -ENOMEM;
	}
	return 0;
}

/* Answer runs for the usable VMAs, clipped to the window and to pages. *mapped tells
 * whether the window holds any usable VMA at all. */
static int build_runs(struct resolver *rs, const struct iopt_req *r, int pm_fd, bool *mapped)
{
	uint64_t lo = r->va, hi = r->va + r->len;
	/* A prefetch keeps the lowest runs: past one more than fit, the rest would be cut. */
	size_t cap = r->need_len ? SIZE_MAX : EMU_FAULT_MAX_MAPS + 1;

	rs->runs.n = 0;
	*mapped = false;
	for (size_t i = 0; i < rs->vmas.n; i++) {
		const struct emu_vma *v = &rs->vmas.a[i];
		uint64_t s = v->start > lo ? v->start : lo, e = v->end < hi ? v->end : hi;
		unsigned perm = v->prot & EMU_VMA_W ? IOPT_READ | IOPT_WRITE : IOPT_READ;
		int rc;

		s = (s + PAGE - 1) & ~(PAGE - 1);
		e &= ~(PAGE - 1);
		if (!usable(v) || s >= e)
			continue;
		*mapped = true;
		rc = pm_fd >= 0 ? add_present(rs, pm_fd, s, e, perm, cap) :
			add_run(&rs->runs, s, e, perm);
		if (rc)
			return rc;
		if (rs->runs.n >= cap)
			break;
	}
	return 0;
}

static size_t first_meeting(const struct map_vec *v, uint64_t va)
{
	size_t i = 0;

	while (i < v->n && v->a[i].va + v->a[i].len <= va)
		i++;
	return i;
}

/* Fit the runs into the job's EMU_FAULT_MAX_MAPS (policy in fault.h). */
static void fit_runs(struct map_vec *v, const struct iopt_req *r, struct emu_fault_job *job)
{
	size_t first = 0, n = v->n;

	if (n > EMU_FAULT_MAX_MAPS && r->need_len) {
		size_t i0 = first_meeting(v, r->need_va);
		size_t i1 = first_meeting(v, r->need_va + r->need_len - 1);

		if (i1 < n && i1 - i0 >= EMU_FAULT_MAX_MAPS) {
			/* The need's runs touch each other (check_need): one READ run. */
			v->a[i0].len = v->a[i1].va + v->a[i1].len - v->a[i0].va;
			v->a[i0].perm = IOPT_READ;
			memmove(&v->a[i0 + 1], &v->a[i1 + 1], (n - i1 - 1) * sizeof(v->a[0]));
			n -= i1 - i0;
			v->n = n;
		}
		/* From the need forwards (fault-around favours what comes next), then
		 * backwards until the array is full. */
		first = i0 < n ? i0 : 0;
		if (n <= EMU_FAULT_MAX_MAPS)
			first = 0;
		else if (n - first < EMU_FAULT_MAX_MAPS)
			first = n - EMU_FAULT_MAX_MAPS;
	}
	job->nmaps = (unsigned)(n - first < EMU_FAULT_MAX_MAPS ? n - first : EMU_FAULT_MAX_MAPS);
	memcpy(job->maps, &v->a[first], job->nmaps * sizeof(job->maps[0]));
}

/* Is the batch memory for this job's client (and its notifier state)? */
static bool same_batch_client(const struct resolver *rs, const struct emu_fault_job *job)
{
	return rs->batch_pid && rs->batch_pid == job->pid && rs->batch_client == job->client &&
		rs->batch_uffd == (job->uffd >= 0);
}

/* A VMA settled earlier in this batch that holds the whole window, or NULL. Reusing it is
 * as safe as answering the job that settled it: with a uffd, any change to it since was
 * reported as an event, which the loop handles before it delivers this answer. */
static const struct emu_vma *settled_cover(const struct resolver *rs,
	const struct emu_fault_job *job, uint64_t lo, uint64_t hi)
{
	if (!same_batch_client(rs, job))
		return NULL;
	for (size_t i = 0; i < rs->settled.n; i++)
		if (rs->settled.a[i].start <= lo && hi <= rs->settled.a[i].end)
			return &rs->settled.a[i];
	return NULL;
}

static void remember_settled(struct resolver *rs, const struct emu_fault_job *job)
{
	if (!same_batch_client(rs, job)) {
		rs->settled.n = 0;
		rs->batch_pid = job->pid;
		rs->batch_client = job->client;
		rs->batch_uffd = job->uffd >= 0;
	}
	for (size_t i = 0; i < rs->vmas.n; i++)
		if (vma_push(&rs->settled, &rs->vmas.a[i]))
			return;	/* no memory: later jobs read the VMAs themselves */
}

/* Collect the VMAs and check the need; with a uffd, register and re-read until the VMAs
 * hold still, so that any change after the read is reported as an event. */
static int settle_vmas(struct resolver *rs, struct emu_fault_job *job, int fd,
	struct emu_fault_stats *st)
{
	const struct iopt_req *r = job->req;
	uint64_t lo = r->va, hi = r->va + r->len;
	const struct emu_vma *cover = settled_cover(rs, job, lo, hi);
	bool settled = false;
	int rc;

	if (cover) {
		rs->vmas.n = 0;
		rc = vma_push(&rs->vmas, cover);
		st->batch_reused++;
		return rc ? rc : check_need(r, &rs->vmas);
	}
	rc = collect(rs, fd, lo, hi, &rs->vmas);
	for (int attempt = 0; !rc; attempt++) {
		struct vma_vec t;

		rc = check_need(r, &rs->vmas);
		if (rc)
			break;
		if (job->uffd < 0) {
			settled = true;
			break;
		}
		register_vmas(job->uffd, &rs->vmas, st);
		if (attempt == RACE_MAX)
			break;	/* still changing: answer with what was registered last */
		rc = collect(rs, fd, lo, hi, &rs->again);
		if (rc)
			break;
		if (same_vmas(&rs->vmas, &rs->again)) {
			settled = true;
			break;
		}
		st->uffd_races++;
		t = rs->vmas;
		rs->vmas = rs->again;
		rs->again = t;
	}
	if (settled)
		remember_settled(rs, job);
	return rc;
}

static int open_proc(pid_t pid, const char *what)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* The job's client's cached files, taking the least recently used slot for a new one. */
static struct client_files *files_of(struct resolver *rs, const struct emu_fault_job *job)
{
	struct client_files *lru = &rs->files[0];

	rs->tick++;
	for (unsigned i = 0; i < FILES_CACHED; i++) {
		struct client_files *c = &rs->files[i];

		if (c->pid && c->pid == job->pid && c->client == job->client) {
			c->used = rs->tick;
			return c;
		}
		if (c->used < lru->used)
			lru = c;
	}
	if (lru->pid)
		files_close(lru);
	*lru = (struct client_files){ .client = job->client, .pid = job->pid, .maps_fd = -1,
		.pagemap_fd = -1, .used = rs->tick };
	return lru;
}

/* The job's /proc/PID/maps (or pagemap) fd: the caller's, else the cached one (opened on
 * first use). -1 with errno set when it cannot be opened; never closed by the caller. */
static int proc_fd(struct resolver *rs, const struct emu_fault_job *job, bool pagemap)
{
	struct client_files *c;
	int given = pagemap ? job->pagemap_fd : job->maps_fd, *fd;

	if (given >= 0)
		return given;
	c = files_of(rs, job);
	fd = pagemap ? &c->pagemap_fd : &c->maps_fd;
	if (*fd < 0)
		*fd = open_proc(job->pid, pagemap ? "pagemap" : "maps");
	return *fd;
}

/* Close the files of clients the loop has seen go. */
static void forget_clients(struct resolver *rs, const uint32_t *gone, unsigned n, bool all)
{
	for (unsigned i = 0; i < FILES_CACHED; i++) {
		struct client_files *c = &rs->files[i];
		bool drop = all;

		for (unsigned k = 0; k < n && !drop && c->pid; k++)
			drop = c->client == gone[k];
		if (c->pid && drop)
			files_close(c);
	}
}

static bool is_maps_error(int rc)
{
	return rc && rc != -EFAULT && rc != -EACCES && rc != -ENOMEM;
}

static int resolve_fd(struct resolver *rs, struct emu_fault_job *job, int fd,
	struct emu_fault_stats *st)
{
	const struct iopt_req *r = job->req;
	int pm_fd = -1, rc = settle_vmas(rs, job, fd, st);
	bool mapped;

	if (is_maps_error(rc)) {
		st->maps_errors++;
		return -EIO;
	}
	if (rc)
		return rc;
	if (r->flags & IOPT_REQ_NO_FAULT) {
		pm_fd = proc_fd(rs, job, true);
		if (pm_fd < 0) {
			st->maps_errors++;
			return -EIO;
		}
	}
	rc = build_runs(rs, r, pm_fd, &mapped);
	if (rc)
		return rc == -ENOMEM ? rc : -EIO;
	if (!mapped)
		return -EFAULT;
	fit_runs(&rs->runs, r, job);
	return 0;
}

static int resolve_req(struct resolver *rs, struct emu_fault_job *job,
	struct emu_fault_stats *st)
{
	int fd;

	if (!job->req || !request_ok(job->req))
		return -EINVAL;
	fd = proc_fd(rs, job, false);
	if (fd < 0) {
		if (errno == ENOENT || errno == ESRCH)
			return -EFAULT;	/* no process: nothing is mapped */
		st->maps_errors++;
		return -EIO;
	}
	return resolve_fd(rs, job, fd, st);
}

static void resolve_job(struct resolver *rs, struct emu_inject *inj, struct emu_fault_job *job,
	struct emu_fault_stats *st)
{
	struct emu_inject_draw d = { 0 };
	uint64_t t0 = now_ns();

	if (inj)
		emu_inject_draw_job(inj, &d);
	job->nmaps = 0;
	if (d.fail) {
		job->err = -EIO;
		st->injected_fail++;
	} else {
		job->err = resolve_req(rs, job, st);
	}
	st->failed_unmapped += job->err == -EFAULT;
	st->failed_access += job->err == -EACCES;
	job->resolved_ns = now_ns();
	job->due_ns = job->resolved_ns + d.delay_ns;
	st->jobs++;
	st->resolve_ns_total += job->resolved_ns - t0;
	if (job->enqueued_ns && job->enqueued_ns <= t0)
		st->wait_ns_total += t0 - job->enqueued_ns;
}

void emu_fault_resolve(struct emu_inject *inj, bool text_maps, struct emu_fault_job *job,
	struct emu_fault_stats *stats)
{
	struct resolver *rs = resolver_new(text_maps);
	struct emu_fault_stats scratch = { 0 };

	if (!rs) {
		job->err = -ENOMEM;
		job->nmaps = 0;
		job->resolved_ns = job->due_ns = now_ns();
		return;
	}
	resolve_job(rs, inj, job, stats ? stats : &scratch);
	resolver_free(rs);
}

/* ---- the thread and its queues ---- */

#define GONE_MAX	16	/* forgotten clients remembered until the thread's next batch */

struct emu_fault {
	struct emu_inject *inj;
	struct resolver *rs;		/* the thread's */
	struct resolver *now_rs;	/* the caller's, for emu_fault_resolve_now */
	struct emu_fault_stats now_stats;	/* ... and its account (caller's thread) */
	bool now_off;			/* emu_fault_set_text_maps or _set_inline(false) */
	int efd;
	pthread_t thread;
	bool joined;
	/* Lock-free looks, for the loop: answers wait (set and cleared under the lock), and
	 * the loop polls without sleeping (then no eventfd write is needed to wake it). */
	atomic_bool answers_waiting;
	atomic_bool loop_polling;
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t wake;		/* jobs queued, clients gone, or stop */
	bool stop;
	bool efd_raised;		/* the eventfd holds a count take() must read */
	struct emu_fault_job *in, **in_tail;
	struct emu_fault_job *out, **out_tail;
	uint32_t gone[GONE_MAX];	/* clients whose files the thread should close */
	unsigned ngone;
	bool gone_overflow;		/* more than GONE_MAX: close every cached file */
	struct emu_fault_stats stats;
};

static void add_stats(struct emu_fault_stats *to, const struct emu_fault_stats *d)
{
	to->jobs += d->jobs;
	to->batches += d->batches;
	to->batch_reused += d->batch_reused;
	to->inline_jobs += d->inline_jobs;
	to->failed_unmapped += d->failed_unmapped;
	to->failed_access += d->failed_access;
	to->injected_fail += d->injected_fail;
	to->maps_errors += d->maps_errors;
	to->uffd_registered += d->uffd_registered;
	to->uffd_refused += d->uffd_refused;
	to->uffd_races += d->uffd_races;
	to->resolve_ns_total += d->resolve_ns_total;
	to->wait_ns_total += d->wait_ns_total;
}

/* Queue an answer. When the out queue goes from empty to non-empty the loop must learn
 * it: a polling loop sees answers_waiting on its next round; a sleeping one is woken by
 * the eventfd. The loop stores loop_polling = false before its last look at
 * answers_waiting and sleeping; we store answers_waiting before looking at loop_polling
 * (both sequentially consistent), so at least one of the two sees the other. */
static void answer_locked(struct emu_fault *f, struct emu_fault_job *job)
{
	bool was_empty = !f->out;
	uint64_t one = 1;

	job->next = NULL;
	*f->out_tail = job;
	f->out_tail = &job->next;
	if (!was_empty)
		return;
	atomic_store(&f->answers_waiting, true);
	if (atomic_load(&f->loop_polling) || f->efd_raised)
		return;
	if (write(f->efd, &one, sizeof(one)) != sizeof(one))
		assert(0 && "eventfd write cannot fail below 2^64 - 1");
	f->efd_raised = true;
}

static void cancel_locked(struct emu_fault *f, struct emu_fault_job *job)
{
	job->err = -ECANCELED;
	job->nmaps = 0;
	job->resolved_ns = job->due_ns = now_ns();
	f->stats.jobs++;
	answer_locked(f, job);
}

static struct emu_fault_job *pop_in_locked(struct emu_fault *f)
{
	struct emu_fault_job *job = f->in;

	f->in = job->next;
	if (!f->in)
		f->in_tail = &f->in;
	return job;
}

/* Take the whole input queue (up to BATCH_MAX) and the forgotten clients, under the lock. */
static unsigned take_batch_locked(struct emu_fault *f, struct emu_fault_job **jobs)
{
	unsigned n = 0;

	forget_clients(f->rs, f->gone, f->ngone, f->gone_overflow);
	f->ngone = 0;
	f->gone_overflow = false;
	while (f->in && n < BATCH_MAX)
		jobs[n++] = pop_in_locked(f);
	return n;
}

/* One wake-up: every queued job is resolved, and each is answered as soon as it is, so
 * the first does not wait for the last. The batch shares the VMAs it settles. */
static void *fault_main(void *arg)
{
	struct emu_fault *f = arg;
	struct emu_fault_job *jobs[BATCH_MAX];

	pthread_mutex_lock(&f->lock);
	for (;;) {
		unsigned n;

		while (!f->in && !f->stop && !f->ngone && !f->gone_overflow)
			pthread_cond_wait(&f->wake, &f->lock);
		if (f->stop)
			break;
		n = take_batch_locked(f, jobs);
		if (!n)
			continue;
		f->stats.batches++;
		batch_begin(f->rs);
		for (unsigned i = 0; i < n; i++) {
			struct emu_fault_stats d = { 0 };

			pthread_mutex_unlock(&f->lock);
			resolve_job(f->rs, f->inj, jobs[i], &d);
			pthread_mutex_lock(&f->lock);
			add_stats(&f->stats, &d);
			answer_locked(f, jobs[i]);
		}
	}
	while (f->in)
		cancel_locked(f, pop_in_locked(f));
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static void fault_free(struct emu_fault *f)
{
	if (f->efd >= 0)
		close(f->efd);
	pthread_cond_destroy(&f->wake);
	pthread_mutex_destroy(&f->lock);
	resolver_free(f->rs);
	resolver_free(f->now_rs);
	free(f);
}

/* The thread starts with every signal blocked: the loop thread handles them. */
static int start_thread(struct emu_fault *f)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&f->thread, NULL, fault_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!rc)
		pthread_setname_np(f->thread, "odpemu-fault");
	return -rc;
}

int emu_fault_start(struct emu_inject *inj, struct emu_fault **out)
{
	struct emu_fault *f = calloc(1, sizeof(*f));
	int rc;

	if (!f)
		return -ENOMEM;
	f->inj = inj;
	f->in_tail = &f->in;
	f->out_tail = &f->out;
	atomic_init(&f->answers_waiting, false);
	atomic_init(&f->loop_polling, false);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->wake, NULL);
	f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	f->rs = resolver_new(false);
	f->now_rs = resolver_new(false);
	rc = f->efd < 0 ? -errno : !f->rs || !f->now_rs ? -ENOMEM : start_thread(f);
	if (rc) {
		f->joined = true;
		fault_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

void emu_fault_stop(struct emu_fault *f)
{
	if (f->joined)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	f->joined = true;
}

void emu_fault_destroy(struct emu_fault *f)
{
	if (!f)
		return;
	emu_fault_stop(f);
	fault_free(f);
}

void emu_fault_set_text_maps(struct emu_fault *f, bool text)
{
	/* Read by the thread only after a submit, which orders this store through the lock. */
	f->rs->text = text;
	f->now_rs->text = text;
	f->now_off |= text;
}

void emu_fault_set_inline(struct emu_fault *f, bool on)
{
	f->now_off = !on || f->now_rs->text;
}

void emu_fault_forget_vmas(struct emu_fault *f)
{
	if (f)
		batch_begin(f->now_rs);
}

bool emu_fault_resolve_now(struct emu_fault *f, struct emu_fault_job *job)
{
	/* Only while the VMAs come from PROCMAP_QUERY: a job then costs a few microseconds.
	 * The text of /proc/PID/maps can take hundreds: the thread's work. */
	if (f->now_off || f->now_rs->text)
		return false;
	job->enqueued_ns = now_ns();
	resolve_job(f->now_rs, f->inj, job, &f->now_stats);
	f->now_stats.inline_jobs++;
	/* A kernel without PROCMAP_QUERY was found on this job: the thread from now on. */
	f->now_off = f->now_rs->text;
	return true;
}

void emu_fault_submit(struct emu_fault *f, struct emu_fault_job *job)
{
	job->enqueued_ns = now_ns();
	job->next = NULL;
	pthread_mutex_lock(&f->lock);
	if (f->stop) {
		cancel_locked(f, job);
	} else {
		bool was_empty = !f->in;

		*f->in_tail = job;
		f->in_tail = &job->next;
		/* Only an empty queue can have the thread asleep on it. */
		if (was_empty)
			pthread_cond_signal(&f->wake);
	}
	pthread_mutex_unlock(&f->lock);
}

void emu_fault_forget(struct emu_fault *f, uint32_t client)
{
	forget_clients(f->now_rs, &client, 1, false);
	pthread_mutex_lock(&f->lock);
	if (f->ngone < GONE_MAX)
		f->gone[f->ngone++] = client;
	else
		f->gone_overflow = true;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
}

int emu_fault_eventfd(const struct emu_fault *f)
{
	return f->efd;
}

void emu_fault_set_polling(struct emu_fault *f, bool polling)
{
	atomic_store(&f->loop_polling, polling);
}

bool emu_fault_answers_waiting(struct emu_fault *f)
{
	return atomic_load(&f->answers_waiting);
}

unsigned emu_fault_take(struct emu_fault *f, struct emu_fault_job **out, unsigned max)
{
	unsigned n = 0;
	uint64_t v;

	pthread_mutex_lock(&f->lock);
	while (n < max && f->out) {
		out[n++] = f->out;
		f->out = f->out->next;
	}
	if (!f->out) {
		f->out_tail = &f->out;
		atomic_store(&f->answers_waiting, false);
		if (f->efd_raised && read(f->efd, &v, sizeof(v)) < 0)
			assert(errno == EAGAIN);
		f->efd_raised = false;
	}
	pthread_mutex_unlock(&f->lock);
	return n;
}

void emu_fault_stats_get(struct emu_fault *f, struct emu_fault_stats *out)
{
	pthread_mutex_lock(&f->lock);
	*out = f->stats;
	pthread_mutex_unlock(&f->lock);
	add_stats(out, &f->now_stats);
}
