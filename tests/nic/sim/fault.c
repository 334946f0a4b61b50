/* SPDX-License-Identifier: MIT */
/* The host fault handler. ports.fault hands over a page request; the answer comes after a
 * seeded latency (0 to 10 ms of virtual time) and is resolved against the host memory as it
 * is at answer time, like hmm_range_fault: the need must be mapped (and writable for a write)
 * and not poisoned, else the request fails (-EFAULT hole or poison, -EACCES read-only); the
 * rest of the window is filled best effort with runs of same-generation, same-permission
 * pages. A completion that raced an invalidation (-EAGAIN) is resolved again a little later,
 * a bounded number of times. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "sim.h"

struct fault_job {
	struct simnic *n;
	uint32_t client;
	struct iopt_req *req;
	unsigned tries;
};

#define FAULT_MAX_TRIES 64

static uint64_t fault_latency(struct sim *s)
{
	const struct fault_cfg *c = &s->cfg.fault;

	if (t_below(&s->rng, 100) < c->zero_lat_pct)
		return 0;
	/* mostly short (minor faults), a tail up to lat_max (major faults) */
	if (t_below(&s->rng, 4))
		return t_below(&s->rng, c->lat_max / 16 + 1);
	return t_below(&s->rng, c->lat_max + 1);
}

void fault_port(void *ctx, uint32_t client, struct iopt_req *req)
{
	struct simnic *n = ctx;
	struct sim *s = n->sim;
	struct fault_job *j = calloc(1, sizeof(*j));

	if (!j)
		abort();
	j->n = n;
	j->client = client;
	j->req = req;
	s->faults++;
	sim_trace(s, "fault nic%d client %u va 0x%" PRIx64 " +0x%" PRIx64 " need 0x%" PRIx64 " +0x%" PRIx64 " access %u flags %u",
		  n->idx, client, req->va, req->len, req->need_va, req->need_len, req->access, req->flags);
	pq_push(&s->fault_q, s->now + fault_latency(s), s->seq++, j);
}

/* Why the need cannot be resolved: 0, -EFAULT or -EACCES. */
static int need_check(struct host *h, const struct iopt_req *r)
{
	bool write = r->access != IOPT_READ;

	if (!r->need_len)
		return 0;
	for (uint64_t a = r->need_va & ~(SIM_PAGE - 1); a < r->need_va + r->need_len; a += SIM_PAGE) {
		struct page *p = host_page(h, a);

		if (!p || p->perm == PERM_NONE || p->poison)
			return -EFAULT;
		if (write && p->perm != PERM_RW)
			return -EACCES;
	}
	return 0;
}

static bool page_usable(const struct page *p)
{
	return p && p->perm != PERM_NONE && !p->poison;
}

/* Runs of usable pages in the window; a run breaks where generation or permission changes. */
static unsigned window_maps(struct host *h, const struct iopt_req *r, struct iopt_map *maps, unsigned cap)
{
	uint64_t start = r->va & ~(SIM_PAGE - 1), end = (r->va + r->len + SIM_PAGE - 1) & ~(SIM_PAGE - 1);
	unsigned n = 0;

	for (uint64_t a = start; a < end && n < cap; a += SIM_PAGE) {
		struct page *p = host_page(h, a);
		unsigned perm;

		if (!page_usable(p))
			continue;
		perm = p->perm == PERM_RW ? IOPT_READ | IOPT_WRITE : IOPT_READ;
		if (n && maps[n - 1].va + maps[n - 1].len == a && maps[n - 1].perm == perm &&
		    maps[n - 1].host + maps[n - 1].len == (a | (uint64_t)p->gen << SIM_GEN_SHIFT)) {
			maps[n - 1].len += SIM_PAGE;
			continue;
		}
		maps[n++] = (struct iopt_map){ a, SIM_PAGE, a | (uint64_t)p->gen << SIM_GEN_SHIFT, perm };
	}
	return n;
}

static void answer(struct sim *s, struct fault_job *j)
{
	struct clientm *c = client_of(s, j->client);
	struct iopt_req *r = j->req;
	int why = c ? need_check(&c->mem, r) : -EFAULT;
	uint64_t pages = (r->len + 2 * SIM_PAGE) / SIM_PAGE;
	struct iopt_map *maps;
	unsigned n;
	int rc;

	if (why) {
		s->faults_refused++;
		sim_trace(s, "fault refused va 0x%" PRIx64 " need 0x%" PRIx64 " +0x%" PRIx64 ": %d",
			  r->va, r->need_va, r->need_len, why);
		rc = nic_fault_fail(j->n->nic, r, why, s->now);
		if (rc)
			sim_fail(s, "nic_fault_fail returned %d", rc);
		free(j);
		return;
	}
	maps = calloc(pages, sizeof(*maps));
	if (!maps)
		abort();
	n = window_maps(&c->mem, r, maps, (unsigned)pages);
	sim_trace(s, "fault answered nic%d va 0x%" PRIx64 " +0x%" PRIx64 ": %u maps", j->n->idx, r->va, r->len, n);
	rc = nic_fault_complete(j->n->nic, r, maps, n, s->now);
	free(maps);
	if (rc == -EAGAIN && ++j->tries < FAULT_MAX_TRIES) {
		/* raced an invalidation: the request is still ours; resolve it again soon */
		pq_push(&s->fault_q, s->now + 1 + t_below(&s->rng, 20 * SIM_US), s->seq++, j);
		return;
	}
	if (rc) {
		sim_fail(s, "nic_fault_complete(va 0x%" PRIx64 " +0x%" PRIx64 ", need 0x%" PRIx64 " +0x%" PRIx64
			 ", %u maps) returned %d after %u tries", r->va, r->len, r->need_va, r->need_len, n, rc, j->tries);
		nic_fault_fail(j->n->nic, r, -EFAULT, s->now);
	}
	free(j);
}

unsigned fault_answer_due(struct sim *s)
{
	unsigned n = 0;
	struct ev e;

	while (!s->failed && pq_next(&s->fault_q) <= s->now && pq_pop(&s->fault_q, &e)) {
		answer(s, e.p);
		n++;
	}
	return n;
}

uint64_t fault_next(const struct sim *s)
{
	return pq_next(&s->fault_q);
}

unsigned fault_pending_for(const struct sim *s, const struct iopt *dom)
{
	unsigned n = 0;

	for (size_t i = 0; i < s->fault_q.n; i++) {
		const struct fault_job *j = s->fault_q.v[i].p;

		n += j->req->dom == dom;
	}
	return n;
}

unsigned fault_pending(const struct sim *s)
{
	return (unsigned)s->fault_q.n;
}
