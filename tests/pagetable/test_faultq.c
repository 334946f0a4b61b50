/* SPDX-License-Identifier: MIT */
/* The fault queue, driven single-threaded as nic/ will drive it: merging, fault-around at
 * the domain's edges, failure to every waiter, a request racing an invalidation, cancel,
 * requeue, destroy, prefetch, notify, counters and the latency histogram (caller's clock). */
#include <errno.h>
#include <string.h>

#include "iopt.h"
#include "t.h"
#include "t_pt.h"

struct w {
	struct iopt_waiter w;
	int wakes, status;
};

static void wake_cb(void *cookie, int status)
{
	struct w *x = cookie;

	x->wakes++;
	x->status = status;
}

static void winit(struct w *x)
{
	memset(x, 0, sizeof(*x));
	x->w.fn = wake_cb;
	x->w.cookie = x;
}

static unsigned notified;
static void on_notify(void *arg)
{
	(void)arg;
	notified++;
}

static struct iopt_fq *fq;

static struct iopt *mk(uint64_t va, uint64_t len, uint64_t fa)
{
	struct iopt_config cfg = { .va = va, .len = len, .fault_around = fa, .fq = fq };
	struct iopt *d = NULL;

	T_EQ(iopt_create(&cfg, &d), 0, "create");
	return d;
}

/* Answer r with host = va + delta, all writable. */
static int answer(struct iopt_req *r, uint64_t now)
{
	struct iopt_map m = { r->va, r->len, r->va + 0x100000000000ull, IOPT_READ | IOPT_WRITE };

	return iopt_req_complete(r, &m, 1, now);
}

static void test_merge(void)
{
	struct iopt *d = mk(0, 0, 0);
	struct iopt_req *r[4];
	struct w a, b, c, e;
	struct iopt_xlate x;

	winit(&a); winit(&b); winit(&c); winit(&e);
	notified = 0;
	T_EQ(iopt_fault(d, 0x10100, 8, IOPT_READ, 100, &a.w), 0, "fault a");
	T_EQ(notified, 1, "notify on empty -> non-empty");
	T_EQ(iopt_fault(d, 0x10200, 8, IOPT_READ, 110, &b.w), 0, "same page");
	T_EQ(iopt_fault(d, 0x11000, 8, IOPT_READ, 120, &c.w), 0, "next page: touches, merges");
	T_EQ(iopt_fault(d, 0x10000, 8, IOPT_WRITE, 130, &e.w), 0, "write: separate request");
	T_EQ(notified, 1, "no notify while non-empty");
	T_EQ(atomic_load(&a.w.status), IOPT_WAIT_PENDING, "pending");
	T_EQ(iopt_fq_pop(fq, r, 4), 2, "two requests");
	T_EQ(r[0]->need_va, 0x10000, "merged need start");
	T_EQ(r[0]->need_len, 2 * PG, "merged need covers both pages");
	T_EQ(r[0]->va, 0x10000, "window aligned to 64 KiB");
	T_EQ(r[0]->len, 64 * KiB, "window 64 KiB");
	T_EQ(r[0]->access, IOPT_READ, "read");
	T_EQ(r[1]->access, IOPT_WRITE, "write request");
	/* A miss on a page an in-flight request needs joins it; one it does not need, not. */
	{
		struct w f, g;

		winit(&f); winit(&g);
		T_EQ(iopt_fault(d, 0x11010, 1, IOPT_READ, 140, &f.w), 0, "joins in-flight");
		T_EQ(iopt_fault(d, 0x12000, 1, IOPT_READ, 140, &g.w), 0, "outside in-flight need");
		T_EQ(answer(r[0], 1100), 0, "answer");
		T_EQ(a.wakes + b.wakes + c.wakes + f.wakes, 4, "all four woken once");
		T_EQ(a.status | b.status | c.status | f.status, 0, "success");
		T_EQ(g.wakes, 0, "not g");
		T_EQ(iopt_translate(d, 0x10100, 8, IOPT_READ, &x), 0, "translates now");
		T_EQ(iopt_translate(d, 0x1f000, 8, IOPT_READ, &x), 0, "fault-around filled");
		T_EQ(iopt_fq_pop(fq, r + 2, 2), 1, "g's request");
		T_EQ(answer(r[2], 1200), 0, "answer g (already present: fine)");
		T_EQ(g.wakes, 1, "g woken");
	}
	T_EQ(iopt_req_complete(r[1], NULL, 0, 1300), -EINVAL, "need not covered");
	{
		struct iopt_map ro = { 0x10000, PG, 0x100000010000ull, IOPT_READ };

		T_EQ(iopt_req_complete(r[1], &ro, 1, 1300), -EINVAL, "write need, read-only run");
	}
	{
		struct w h;

		winit(&h);
		T_EQ(iopt_fault(d, 0x10008, 1, IOPT_READ, 1250, &h.w), 0, "read joins the write");
		T_EQ(answer(r[1], 1300), 0, "answer the write");
		T_EQ(h.wakes, 1, "read waiter of the write request woken");
	}
	T_EQ(e.wakes, 1, "write waiter woken");
	{
		struct iopt_counters k;

		iopt_counters_get(d, &k);
		T_EQ(k.page_faults, 3, "page_faults");
		T_EQ(k.fault_merged, 4, "fault_merged");
		T_EQ(k.page_fault_pages, 16, "page_fault_pages: 16 new pages");
		T_EQ(k.fault_latency_ns[9], 1, "1000 ns -> bucket 9");
		T_EQ(k.fault_latency_ns[10], 2, "1060, 1170 ns -> bucket 10");
	}
	T_EQ(iopt_destroy(d), 0, "destroy");
}

static void test_edges(void)
{
	/* A 40 KiB MR at an odd place: windows are clipped to it. */
	struct iopt *d = mk(0x7000, 10 * PG, 64 * KiB);
	struct iopt *top = mk(IOPT_VA_END - 3 * PG, 3 * PG, 2 * MiB);
	struct iopt_req *r[2];

	T_EQ(iopt_fault(d, 0x7000, 1, IOPT_READ, 0, NULL), 0, "fault at the start");
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "one");
	T_EQ(r[0]->va, 0x7000, "clipped to the domain start");
	T_EQ(r[0]->len, 0x10000 - 0x7000, "up to the aligned window end");
	iopt_req_fail(r[0], -EFAULT, 0);
	T_EQ(iopt_fault(d, 0x10000 + 5 * PG, 1, IOPT_READ, 0, NULL), -ERANGE, "outside the MR");
	T_EQ(iopt_fault(d, 0x10000, PG, IOPT_READ, 0, NULL), 0, "fault at the end");
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "one");
	T_EQ(r[0]->va, 0x10000, "aligned start");
	T_EQ(r[0]->va + r[0]->len, 0x7000 + 10 * PG, "clipped to the domain end");
	iopt_req_fail(r[0], -EFAULT, 0);
	T_EQ(iopt_fault(top, IOPT_VA_END - 1, 1, IOPT_WRITE, 0, NULL), 0, "last byte of 2^47");
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "one");
	T_EQ(r[0]->va, IOPT_VA_END - 3 * PG, "clipped");
	T_EQ(r[0]->len, 3 * PG, "to the top");
	{
		struct iopt_map m = { IOPT_VA_END - 3 * PG, 4 * PG, 0x5000, IOPT_READ | IOPT_WRITE };

		T_EQ(iopt_req_complete(r[0], &m, 1, 0), -ERANGE, "a run beyond the domain");
		m.len = 3 * PG;
		T_EQ(iopt_req_complete(r[0], &m, 1, 0), 0, "answer");
	}
	/* Need capped at max_need (2 MiB default): a 1 GiB DMA faults in pieces. */
	{
		struct iopt *big = mk(0, 0, 0);

		T_EQ(iopt_fault(big, 0x40000000, GiB, IOPT_READ, 0, NULL), 0, "1 GiB miss");
		T_EQ(iopt_fq_pop(fq, r, 2), 1, "one");
		T_EQ(r[0]->need_len, 2 * MiB, "need capped");
		iopt_req_fail(r[0], -EFAULT, 0);
		T_EQ(iopt_destroy(big), 0, "destroy");
	}
	T_EQ(iopt_destroy(d), 0, "destroy");
	T_EQ(iopt_destroy(top), 0, "destroy top");
}

static void test_failure_and_race(void)
{
	struct iopt *d = mk(0, 0, 0);
	struct iopt_req *r[2];
	struct w w[5];
	struct iopt_counters k;

	for (int i = 0; i < 5; i++) {
		winit(&w[i]);
		T_EQ(iopt_fault(d, 0x300000 + (uint64_t)i * 100, 1, IOPT_WRITE, 0, &w[i].w), 0, "f");
	}
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "one merged request");
	iopt_req_fail(r[0], -EACCES, 50);
	for (int i = 0; i < 5; i++) {
		T_EQ(w[i].wakes, 1, "every waiter woken once");
		T_EQ(w[i].status, -EACCES, "with the failure");
		T_EQ(atomic_load(&w[i].w.status), -EACCES, "polled status too");
	}

	/* Race: pop (snapshot), invalidate the range, answer: must not install. */
	winit(&w[0]);
	T_EQ(iopt_fault(d, 0x400000, 1, IOPT_READ, 0, &w[0].w), 0, "fault");
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "pop");
	T_EQ(iopt_invalidate(d, 0x400000, PG), 0, "unmap lands while resolving");
	T_EQ(answer(r[0], 0), -EAGAIN, "stale answer refused");
	T_EQ(iopt_snapshot(d, 0x400000, 64 * KiB, NULL, NULL), 0, "nothing installed");
	T_EQ(w[0].wakes, 0, "waiter still waiting");
	/* Invalidation in progress (begin without end): even a fresh snapshot is refused. */
	T_EQ(iopt_invalidate_begin(d, 0x400000, PG), 0, "begin");
	T_EQ(answer(r[0], 0), -EAGAIN, "in progress");
	iopt_req_requeue(r[0]);
	iopt_invalidate_end(d);
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "requeued request comes back");
	T_EQ(answer(r[0], 0), 0, "answer after the invalidation ended");
	T_EQ(w[0].wakes, 1, "woken");
	iopt_counters_get(d, &k);
	T_EQ(k.fault_races, 2, "fault_races");
	T_EQ(k.fault_failed, 1, "fault_failed");
	T_EQ(iopt_destroy(d), 0, "destroy");
}

static void test_cancel_destroy(void)
{
	struct iopt *d = mk(0, 0, 0);
	struct iopt_req *r[2];
	struct w a, b;

	winit(&a); winit(&b);
	T_EQ(iopt_fault(d, 0x500000, 1, IOPT_READ, 0, &a.w), 0, "a");
	T_EQ(iopt_fault(d, 0x500000, 1, IOPT_READ, 0, &b.w), 0, "b");
	T_EQ(iopt_waiter_cancel(d, &a.w), 0, "cancel a");
	T_EQ(iopt_waiter_cancel(d, &a.w), -EALREADY, "cancel twice");
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "pop");
	T_EQ(iopt_destroy(d), -EBUSY, "handler holds a request");
	T_EQ(answer(r[0], 0), 0, "answer");
	T_EQ(a.wakes, 0, "cancelled waiter not woken");
	T_EQ(b.wakes, 1, "b woken");
	T_EQ(iopt_waiter_cancel(d, &b.w), -EALREADY, "cancel after wake");
	winit(&a);
	T_EQ(iopt_fault(d, 0x600000, 1, IOPT_READ, 0, &a.w), 0, "queued");
	T_EQ(iopt_fq_destroy(fq), -EBUSY, "fq with a domain");
	T_EQ(iopt_destroy(d), 0, "destroy cancels queued requests");
	T_EQ(a.wakes, 1, "woken");
	T_EQ(a.status, -ECANCELED, "-ECANCELED");
	T_EQ(iopt_fq_pop(fq, r, 2), 0, "queue empty");
}

static void test_prefetch(void)
{
	struct iopt *d = mk(0, 0, 0), *nofq;
	struct iopt_config cfg = { 0 };
	struct iopt_req *r[2];
	struct iopt_counters k;
	struct w a;
	struct iopt_map m = { 0x800000, PG, 0x9000, IOPT_READ };

	T_EQ(iopt_fill(d, &m, 1, IOPT_SEQ_NONE), 1, "one page present");
	winit(&a);
	T_EQ(iopt_prefetch(d, 0x800000, PG, IOPT_PREFETCH, 0, &a.w), 1, "nothing missing");
	T_EQ(a.wakes, 0, "waiter untouched");
	T_EQ(iopt_prefetch(d, 0x800000, 4 * PG, IOPT_PREFETCH, 0, &a.w), 0, "sync prefetch");
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "pop");
	T_EQ(r[0]->flags, IOPT_REQ_PREFETCH, "flags");
	T_EQ(r[0]->va, 0x801000, "missing span start");
	T_EQ(r[0]->len, 3 * PG, "missing span");
	T_EQ(r[0]->need_len, 0, "best effort");
	{	/* the host has only one of the three: fine for a prefetch */
		struct iopt_map h = { 0x802000, PG, 0xa000, IOPT_READ };

		T_EQ(iopt_req_complete(r[0], &h, 1, 0), 0, "partial answer");
	}
	T_EQ(a.wakes, 1, "sync prefetch waiter woken");
	T_EQ(iopt_prefetch(d, 0x800000, PG, IOPT_PREFETCH_WRITE, 0, NULL), 0, "write upgrade");
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "pop");
	T_EQ(r[0]->access, IOPT_WRITE, "write prefetch");
	iopt_req_fail(r[0], -EACCES, 0);
	T_EQ(iopt_prefetch(d, 0x900000, PG, IOPT_PREFETCH_NO_FAULT, 0, NULL), 0, "no-fault");
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "pop");
	T_EQ(r[0]->flags, IOPT_REQ_PREFETCH | IOPT_REQ_NO_FAULT, "no-fault flag");
	T_EQ(iopt_req_complete(r[0], NULL, 0, 0), 0, "host has nothing resident");
	T_EQ(iopt_prefetch(d, 0x900000, PG, (enum iopt_advice)7, 0, NULL), -EINVAL, "bad advice");
	iopt_counters_get(d, &k);
	T_EQ(k.page_prefetch, 1, "page_prefetch");
	T_EQ(k.page_faults, 0, "prefetch is not a fault");
	T_EQ(iopt_create(&cfg, &nofq), 0, "domain without fq");
	T_EQ(iopt_prefetch(nofq, 0, PG, IOPT_PREFETCH, 0, NULL), -ENOTSUP, "no fq");
	T_EQ(iopt_destroy(nofq), 0, "destroy");
	T_EQ(iopt_destroy(d), 0, "destroy");
}

/* A waiter callback that faults again (the NIC resumes a QP that misses the next page). */
static struct iopt *reentry_dom;
static int reentry_rc = 1;
static void refault_cb(void *cookie, int status)
{
	(void)cookie;
	(void)status;
	reentry_rc = iopt_fault(reentry_dom, 0xa00000, 1, IOPT_READ, 0, NULL);
}

static void test_reentrant_callback(void)
{
	struct iopt_req *r[2];
	struct iopt_waiter w = { .fn = refault_cb };

	reentry_dom = mk(0, 0, 0);
	T_EQ(iopt_fault(reentry_dom, 0x900000, 1, IOPT_READ, 0, &w), 0, "fault");
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "pop");
	T_EQ(answer(r[0], 0), 0, "answer; callback faults again, no lock held");
	T_EQ(reentry_rc, 0, "nested fault queued");
	T_EQ(iopt_fq_pop(fq, r, 2), 1, "nested request");
	iopt_req_fail(r[0], -EFAULT, 0);
	T_EQ(iopt_destroy(reentry_dom), 0, "destroy");
}

int main(int argc, char **argv)
{
	struct iopt_fq_config cfg = { .notify = on_notify };

	(void)t_seed(argc, argv, 1);
	T_EQ(iopt_fq_create(&cfg, &fq), 0, "fq");
	test_merge();
	test_edges();
	test_failure_and_race();
	test_cancel_destroy();
	test_prefetch();
	test_reentrant_callback();
	T_EQ(iopt_fq_destroy(fq), 0, "fq destroy");
	return t_done("pagetable-faultq");
}
