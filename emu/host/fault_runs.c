/* SPDX-License-Identifier: MIT */
/*
 * fault_runs — the answer's maps (policy in fault.h, RESOLUTION): runs of the usable VMAs
 * in the window, clipped to it and to pages, host == va, READ|WRITE where the VMA is
 * writable else READ, adjacent runs of one perm merged; only the present pages for
 * NO_FAULT; then fitted into EMU_FAULT_MAX_MAPS around the need.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "fault_int.h"

#define PM_PRESENT	(1ull << 63)	/* Documentation/admin-guide/mm/pagemap.rst */

/* Append [va, end) with perm, merging into the last run when they touch with one perm. */
static int add_run(struct map_vec *v, uint64_t va, uint64_t end, unsigned perm)
{
	struct iopt_map *l = v->n ? &v->a[v->n - 1] : NULL;

	if (l && l->va + l->len == va && l->perm == perm) {
		l->len = end - l->va;
		return 0;
	}
	if (fault_grow((void **)&v->a, &v->cap, v->n + 1, sizeof(*v->a)))
		return -ENOMEM;
	v->a[v->n++] = (struct iopt_map){ .va = va, .len = end - va, .host = va, .perm = perm };
	return 0;
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

int fault_runs_build(struct resolver *rs, const struct iopt_req *r, int pm_fd, bool *mapped)
{
	uint64_t lo = r->va, hi = r->va + r->len;
	/* A prefetch keeps the lowest runs: past one more than fit, the rest would be cut. */
	size_t cap = r->need_len ? SIZE_MAX : EMU_FAULT_MAX_MAPS + 1;

	rs->runs.n = 0;
	*mapped = false;
	for (size_t i = 0; i < rs->vmas.n; i++) {
		const struct fault_vma *v = &rs->vmas.a[i];
		uint64_t s = v->start > lo ? v->start : lo, e = v->end < hi ? v->end : hi;
		unsigned perm = v->prot & IPC_VMA_W ? IOPT_READ | IOPT_WRITE : IOPT_READ;
		int rc;

		s = (s + PAGE - 1) & ~(PAGE - 1);
		e &= ~(PAGE - 1);
		if (!fault_vma_usable(v) || s >= e)
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

void fault_runs_fit(struct map_vec *v, const struct iopt_req *r, struct emu_fault_job *job)
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
