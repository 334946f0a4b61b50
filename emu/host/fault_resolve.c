/* SPDX-License-Identifier: MIT */
/*
 * fault_resolve — one page request resolved against the client's address space (policy
 * in fault.h, RESOLUTION and NOTIFIER): the client's VMAs of the window (ipc/maps.c:
 * PROCMAP_QUERY, else the text), the need checked against them, with a uffd every VMA
 * registered and the VMAs read again until they hold still, then the answer's runs
 * (fault_runs.c). VMAs settled that way serve the batch's later jobs.
 */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "fault_int.h"

#define RACE_MAX	2	/* re-reads after registering before answering anyway */

int fault_grow(void **a, size_t *cap, size_t need, size_t elem)
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

static int vma_push(struct vma_vec *v, const struct fault_vma *m)
{
	if (fault_grow((void **)&v->a, &v->cap, v->n + 1, sizeof(*v->a)))
		return -ENOMEM;
	v->a[v->n++] = *m;
	return 0;
}

struct resolver *fault_resolver_new(bool text)
{
	struct resolver *rs = calloc(1, sizeof(*rs));

	if (rs)
		rs->maps.text = text;
	return rs;
}

void fault_resolver_free(struct resolver *rs)
{
	if (!rs)
		return;
	fault_files_forget(rs, NULL, 0, true);
	free(rs->vmas.a);
	free(rs->again.a);
	free(rs->runs.a);
	free(rs->settled.a);
	free(rs);
}

void fault_batch_begin(struct resolver *rs)
{
	rs->settled.n = 0;
	rs->batch_pid = 0;
}

/* ---- the client's VMAs ---- */

/* Mappings with no pages behind them to copy: the vDSO's data pages (VM_IO|VM_PFNMAP,
 * which hmm_range_fault refuses too) and the vsyscall gate (above 2^47 anyway). */
bool emu_fault_special_vma(const char *name, size_t len)
{
	static const char *const names[] = { "[vvar]", "[vvar_vclock]", "[vsyscall]" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (len == strlen(names[i]) && !memcmp(name, names[i], len))
			return true;
	return false;
}

bool fault_vma_usable(const struct fault_vma *v)
{
	return (v->prot & IPC_VMA_R) && !v->special;
}

/* The VMAs meeting [lo, hi), ascending, into out. 0 or -errno. */
static int collect(struct resolver *rs, int fd, uint64_t lo, uint64_t hi, struct vma_vec *out)
{
	struct ipc_vma v;
	int rc;

	out->n = 0;
	ipc_maps_begin(&rs->maps, fd, lo, hi);
	while ((rc = ipc_maps_next(&rs->maps, &v)) > 0) {
		struct fault_vma m = { .start = v.start, .end = v.end, .prot = v.prot,
			.special = emu_fault_special_vma(v.name, v.name_len) };

		if (vma_push(out, &m))
			return -ENOMEM;
	}
	return rc;
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
	unsigned want = r->access & (IOPT_WRITE | IOPT_ATOMIC) ? IPC_VMA_R | IPC_VMA_W : IPC_VMA_R;

	for (size_t i = 0; i < v->n && cur < end; i++) {
		const struct fault_vma *m = &v->a[i];

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

/* ---- the notifier's registration, and VMAs shared within a batch ---- */

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

		if (!fault_vma_usable(&v->a[i]))
			continue;
		if (ioctl(uffd, UFFDIO_REGISTER, &reg) == 0)
			st->uffd_registered++;
		else
			st->uffd_refused++;
	}
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
static const struct fault_vma *settled_cover(const struct resolver *rs,
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

/* The job's window inside a VMA settled earlier in the batch: that VMA alone is its VMAs. */
static int reuse_settled(struct resolver *rs, const struct fault_vma *cover,
	const struct iopt_req *r, struct emu_fault_stats *st)
{
	int rc;

	rs->vmas.n = 0;
	rc = vma_push(&rs->vmas, cover);
	st->batch_reused++;
	return rc ? rc : check_need(r, &rs->vmas);
}

/* Collect the VMAs and check the need; with a uffd, register and re-read until the VMAs
 * hold still, so that any change after the read is reported as an event. */
static int settle_vmas(struct resolver *rs, struct emu_fault_job *job, int fd,
	struct emu_fault_stats *st)
{
	const struct iopt_req *r = job->req;
	uint64_t lo = r->va, hi = r->va + r->len;
	const struct fault_vma *cover = settled_cover(rs, job, lo, hi);
	bool settled = false;
	int rc;

	if (cover)
		return reuse_settled(rs, cover, r, st);
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

/* ---- one job ---- */

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
		pm_fd = fault_files_fd(rs, job, true);
		if (pm_fd < 0) {
			st->maps_errors++;
			return -EIO;
		}
	}
	rc = fault_runs_build(rs, r, pm_fd, &mapped);
	if (rc)
		return rc == -ENOMEM ? rc : -EIO;
	if (!mapped)
		return -EFAULT;
	fault_runs_fit(&rs->runs, r, job);
	return 0;
}

static int resolve_req(struct resolver *rs, struct emu_fault_job *job,
	struct emu_fault_stats *st)
{
	int fd;

	if (!job->req || !request_ok(job->req))
		return -EINVAL;
	fd = fault_files_fd(rs, job, false);
	if (fd < 0) {
		if (errno == ENOENT || errno == ESRCH)
			return -EFAULT;	/* no process: nothing is mapped */
		st->maps_errors++;
		return -EIO;
	}
	return resolve_fd(rs, job, fd, st);
}

void fault_resolve_job(struct resolver *rs, struct emu_inject *inj, struct emu_fault_job *job,
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
	struct resolver *rs = fault_resolver_new(text_maps);
	struct emu_fault_stats scratch = { 0 };

	if (!rs) {
		job->err = -ENOMEM;
		job->nmaps = 0;
		job->resolved_ns = job->due_ns = now_ns();
		return;
	}
	fault_resolve_job(rs, inj, job, stats ? stats : &scratch);
	fault_resolver_free(rs);
}
