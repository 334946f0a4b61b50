/* SPDX-License-Identifier: MIT */
/* Host memories. Each client owns an arena of pages; a mapped page is backed by a frame of
 * the page's current generation. The NIC reaches memory only through host addresses
 * (va | generation << 47, see sim.h), so this file can tell a DMA through a live translation
 * from one through a stale one: a frame that was unmapped or remapped is gone (unless a
 * pinned MR still holds it, as a pinned page survives munmap), and any access to a gone
 * frame is the fence violation "data landed after the invalidation returned".
 *
 * Every frame carries the model's expectation of its bytes next to its data; the CPU side
 * (the application filling buffers, a remap bringing new contents) updates both. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static struct frame *frame_new(struct host *h, uint32_t gen)
{
	struct frame *f = calloc(1, sizeof(*f));

	if (!f)
		abort();
	f->gen = gen;
	h->frames++;
	return f;
}

void host_init(struct host *h, uint32_t client, int nic, uint64_t base)
{
	memset(h, 0, sizeof(*h));
	h->client = client;
	h->nic = nic;
	h->base = base;
	h->pages = calloc(SIM_ARENA_PAGES, sizeof(*h->pages));
	if (!h->pages)
		abort();
	for (uint64_t i = 0; i < SIM_ARENA_PAGES; i++)
		h->pages[i].perm = PERM_RW;
}

static void frame_chain_free(struct frame *f)
{
	while (f) {
		struct frame *n = f->older;

		free(f);
		f = n;
	}
}

void host_free(struct host *h)
{
	if (h->pages)
		for (uint64_t i = 0; i < SIM_ARENA_PAGES; i++) {
			free(h->pages[i].cur);
			frame_chain_free(h->pages[i].old);
		}
	free(h->pages);
	free(h->busy);
	memset(h, 0, sizeof(*h));
}

struct page *host_page(struct host *h, uint64_t va)
{
	va &= SIM_VA_MASK;
	if (va < h->base || va - h->base >= SIM_ARENA_SIZE)
		return NULL;
	return &h->pages[(va - h->base) / SIM_PAGE];
}

struct frame *host_frame(struct host *h, uint64_t hostaddr, bool alloc)
{
	struct page *p = host_page(h, hostaddr);
	uint32_t gen = (uint32_t)(hostaddr >> SIM_GEN_SHIFT);

	if (!p)
		return NULL;
	if (gen == p->gen && p->perm != PERM_NONE) {
		if (!p->cur && alloc)
			p->cur = frame_new(h, gen);
		return p->cur;
	}
	for (struct frame *f = p->old; f; f = f->older)
		if (f->gen == gen)
			return f;
	return NULL;
}

/* One port access, page by page. The NIC may touch only live frames (or pinned orphans),
 * never a poisoned page (its fault was refused), and write a read-only page only through a
 * pin taken for writing. */
static int port_access(struct sim *s, struct simnic *n, uint32_t client, uint64_t host,
		       uint8_t *buf, size_t len, bool write)
{
	struct clientm *c = client_of(s, client);

	if (!c || c->nic != n->idx) {
		sim_fail(s, "nic%d: memory access for client %u, not one of its clients", n->idx, client);
		return -EFAULT;
	}
	while (len) {
		size_t off = host & (SIM_PAGE - 1), chunk = SIM_PAGE - off;
		struct page *p = host_page(&c->mem, host);
		struct frame *f = host_frame(&c->mem, host, true);

		if (chunk > len)
			chunk = len;
		if (!p || !f) {
			sim_fail(s, "nic%d %s client %u host 0x%" PRIx64 " (va 0x%" PRIx64 " gen %" PRIu64
				 "): frame gone (unmapped or remapped, current gen %u) — DMA after the invalidation fence",
				 n->idx, write ? "wrote" : "read", client, host, host & SIM_VA_MASK,
				 host >> SIM_GEN_SHIFT, p ? p->gen : 0);
			return -EFAULT;
		}
		if (p->poison && f == p->cur) {
			sim_fail(s, "nic%d touched poisoned page va 0x%" PRIx64 " of client %u (its fault was refused)",
				 n->idx, host & SIM_VA_MASK, client);
			return -EFAULT;
		}
		if (write) {
			if (f == p->cur && p->perm == PERM_RO && !f->pins) {
				sim_fail(s, "nic%d wrote read-only page va 0x%" PRIx64 " of client %u",
					 n->idx, host & SIM_VA_MASK, client);
				return -EFAULT;
			}
			memcpy(f->data + off, buf, chunk);
		} else {
			memcpy(buf, f->data + off, chunk);
		}
		buf += chunk;
		host += chunk;
		len -= chunk;
	}
	return 0;
}

int mem_read_port(void *ctx, uint32_t client, uint64_t host, void *dst, size_t len)
{
	struct simnic *n = ctx;

	return port_access(n->sim, n, client, host, dst, len, false);
}

int mem_write_port(void *ctx, uint32_t client, uint64_t host, const void *src, size_t len)
{
	struct simnic *n = ctx;

	return port_access(n->sim, n, client, host, (uint8_t *)src, len, true);
}

static void bits_set(uint8_t *bm, size_t off, size_t len, bool v)
{
	for (size_t i = off; i < off + len; i++) {
		if (v)
			bm[i / 8] |= (uint8_t)(1u << (i % 8));
		else
			bm[i / 8] &= (uint8_t)~(1u << (i % 8));
	}
}

void host_cpu_write(struct host *h, uint64_t va, const void *src, size_t len)
{
	const uint8_t *b = src;

	while (len) {
		size_t off = va & (SIM_PAGE - 1), chunk = SIM_PAGE - off;
		struct page *p = host_page(h, va);
		struct frame *f;

		if (chunk > len)
			chunk = len;
		if (p && p->perm != PERM_NONE) {
			f = host_frame(h, va | (uint64_t)p->gen << SIM_GEN_SHIFT, true);
			memcpy(f->data + off, b, chunk);
			memcpy(f->expect + off, b, chunk);
			bits_set(f->unknown, off, chunk, false);
		}
		b += chunk;
		va += chunk;
		len -= chunk;
	}
}

bool host_range_perm(struct host *h, uint64_t va, uint64_t len, unsigned perm)
{
	for (uint64_t a = va & ~(SIM_PAGE - 1); a < va + (len ? len : 1); a += SIM_PAGE) {
		struct page *p = host_page(h, a);

		if (!p || p->poison || (p->perm & perm) != perm)
			return false;
	}
	return true;
}

bool host_busy_overlaps(const struct host *h, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < h->nbusy; i++)
		if (h->busy[i].start < end && start < h->busy[i].end)
			return true;
	return false;
}

void host_busy_add(struct host *h, uint64_t start, uint64_t len, const void *owner)
{
	if (h->nbusy == h->capbusy) {
		h->capbusy = h->capbusy ? 2 * h->capbusy : 64;
		h->busy = realloc(h->busy, h->capbusy * sizeof(*h->busy));
		if (!h->busy)
			abort();
	}
	h->busy[h->nbusy++] = (struct busy){ start, start + (len ? len : 1), owner };
}

void host_busy_del(struct host *h, const void *owner)
{
	for (size_t i = 0; i < h->nbusy;) {
		if (h->busy[i].owner == owner)
			h->busy[i] = h->busy[--h->nbusy];
		else
			i++;
	}
}

/* MMU-notifier order: every device drops its translations (and waits for its DMAs) before
 * the host changes anything; pinned MRs under the range must say MR_DECOHERENCE. */
static void notify_all(struct sim *s, struct host *h, uint64_t va, uint64_t len, bool change)
{
	struct clientm *c = client_of(s, h->client);
	unsigned before[SIM_MAX_MRS];

	for (unsigned i = 0; i < c->nmrs; i++)
		before[i] = c->mrs[i].decoherence;
	for (unsigned i = 0; i < s->cfg.nnics; i++)
		nic_host_invalidate(s->nics[i].nic, h->client, va, len);
	for (unsigned i = 0; change && i < c->nmrs; i++) {
		const struct mrm *m = &c->mrs[i];

		if (m->live && !m->odp && m->va < va + len && va < m->va + m->len &&
		    m->decoherence == before[i])
			sim_fail(s, "remap of client %u [0x%" PRIx64 ", +0x%" PRIx64 ") under pinned MR %u: no MR_DECOHERENCE event",
				 h->client, va, len, i);
		if (m->live && m->odp && m->decoherence != before[i])
			sim_fail(s, "ODP MR %u of client %u raised MR_DECOHERENCE", i, h->client);
	}
}

/* The page's current frame leaves: kept as a pinned orphan, or freed. */
static void page_release(struct host *h, struct page *p)
{
	if (p->cur && p->cur->pins) {
		p->cur->older = p->old;
		p->old = p->cur;
	} else {
		free(p->cur);
		if (p->cur)
			h->frames--;
	}
	p->cur = NULL;
}

void host_remap(struct sim *s, struct host *h, uint64_t va, uint64_t len, unsigned perm)
{
	notify_all(s, h, va, len, true);
	for (uint64_t a = va; a < va + len; a += SIM_PAGE) {
		struct page *p = host_page(h, a);
		uint8_t bytes[SIM_PAGE];

		page_release(h, p);
		p->gen++;
		p->perm = (uint8_t)perm;
		t_fill(&s->rng, bytes, sizeof(bytes));
		host_cpu_write(h, a, bytes, sizeof(bytes));
	}
	s->remaps++;
}

void host_unmap(struct sim *s, struct host *h, uint64_t va, uint64_t len)
{
	notify_all(s, h, va, len, true);
	for (uint64_t a = va; a < va + len; a += SIM_PAGE) {
		struct page *p = host_page(h, a);

		page_release(h, p);
		p->gen++;
		p->perm = PERM_NONE;
	}
	s->remaps++;
}

/* mprotect: taking write away must invalidate (the NIC may hold writable entries); giving
 * it back needs nothing (the next write faults and the handler upgrades the entry). The
 * frames stay: a pinned MR keeps working either way, so no decoherence is expected. */
void host_protect(struct sim *s, struct host *h, uint64_t va, uint64_t len, unsigned perm)
{
	if (perm == PERM_RO)
		notify_all(s, h, va, len, false);
	for (uint64_t a = va; a < va + len; a += SIM_PAGE)
		host_page(h, a)->perm = (uint8_t)perm;
}

void host_evict(struct sim *s, struct host *h, uint64_t va, uint64_t len)
{
	for (unsigned i = 0; i < s->cfg.nnics; i++)
		nic_host_invalidate(s->nics[i].nic, h->client, va, len);
	s->evictions++;
}

void host_pin(struct host *h, uint64_t va, uint64_t len)
{
	for (uint64_t a = va & ~(SIM_PAGE - 1); a < va + len; a += SIM_PAGE) {
		struct page *p = host_page(h, a);

		host_frame(h, a | (uint64_t)p->gen << SIM_GEN_SHIFT, true)->pins++;
	}
}

void host_unpin(struct host *h, uint64_t hostaddr, uint64_t len)
{
	uint64_t gen = hostaddr >> SIM_GEN_SHIFT, va = hostaddr & SIM_VA_MASK;

	for (uint64_t a = va & ~(SIM_PAGE - 1); a < va + len; a += SIM_PAGE) {
		struct page *p = host_page(h, a);
		struct frame *f = host_frame(h, a | gen << SIM_GEN_SHIFT, false);

		if (!f || !f->pins)
			abort();	/* the simulation's own bookkeeping broke */
		if (--f->pins || f == p->cur)
			continue;
		for (struct frame **pp = &p->old; *pp; pp = &(*pp)->older)
			if (*pp == f) {
				*pp = f->older;
				break;
			}
		free(f);
		h->frames--;
	}
}

/* ---- views ---- */

static struct host *mr_host(struct sim *s, const struct mrm *m)
{
	return &s->clients[m->client].mem;
}

uint64_t view_host(struct sim *s, const struct mrm *m, uint64_t va)
{
	struct page *p;

	if (!m->odp)
		return m->host + (va - m->va);
	p = host_page(mr_host(s, m), va);
	return va | (p ? (uint64_t)p->gen << SIM_GEN_SHIFT : 0);
}

/* Does m see the pages the CPU sees? An ODP MR always does; a pinned MR stops seeing a
 * page once the host remapped it (decoherence). */
bool view_coherent(struct sim *s, const struct mrm *m, uint64_t va, uint64_t len)
{
	for (uint64_t a = va & ~(uint64_t)(SIM_PAGE - 1); a < va + len; a += SIM_PAGE) {
		struct page *p = host_page(mr_host(s, m), a);

		if (view_host(s, m, a) != (a | (p ? (uint64_t)p->gen << SIM_GEN_SHIFT : 0)))
			return false;
	}
	return true;
}

enum view_op { V_READ, V_EXPECT, V_UNKNOWN, V_CHECK };

/* Apply op to [va, va+len) as m sees it; V_CHECK returns the offset of the first
 * mismatch or -1. */
static long view_walk(struct sim *s, const struct mrm *m, uint64_t va, uint8_t *buf, size_t len,
		      enum view_op op)
{
	struct host *h = mr_host(s, m);
	size_t done = 0;

	while (done < len) {
		uint64_t a = va + done, off = a & (SIM_PAGE - 1);
		size_t chunk = SIM_PAGE - off;
		struct frame *f = host_frame(h, view_host(s, m, a), true);

		if (chunk > len - done)
			chunk = len - done;
		if (!f) {	/* a hole: reads as zero, holds no expectation */
			if (op == V_READ)
				memset(buf + done, 0, chunk);
			done += chunk;
			continue;
		}
		switch (op) {
		case V_READ:
			memcpy(buf + done, f->data + off, chunk);
			break;
		case V_EXPECT:
			memcpy(f->expect + off, buf + done, chunk);
			bits_set(f->unknown, off, chunk, false);
			break;
		case V_UNKNOWN:
			bits_set(f->unknown, off, chunk, true);
			break;
		case V_CHECK:
			for (size_t i = off; i < off + chunk; i++)
				if (!(f->unknown[i / 8] & (1u << (i % 8))) && f->data[i] != f->expect[i])
					return (long)(done + i - off);
			break;
		}
		done += chunk;
	}
	return -1;
}

void view_read(struct sim *s, const struct mrm *m, uint64_t va, void *dst, size_t len)
{
	view_walk(s, m, va, dst, len, V_READ);
}

void view_expect(struct sim *s, const struct mrm *m, uint64_t va, const void *src, size_t len)
{
	view_walk(s, m, va, (uint8_t *)src, len, V_EXPECT);
}

void view_unknown(struct sim *s, const struct mrm *m, uint64_t va, size_t len)
{
	view_walk(s, m, va, NULL, len, V_UNKNOWN);
}

bool view_check(struct sim *s, const struct mrm *m, uint64_t va, size_t len, const char *what)
{
	long bad = view_walk(s, m, va, NULL, len, V_CHECK);
	uint8_t got = 0, want = 0;

	if (bad < 0)
		return true;
	{
		struct frame *f = host_frame(mr_host(s, m), view_host(s, m, va + (uint64_t)bad), true);
		size_t off = (va + (uint64_t)bad) & (SIM_PAGE - 1);

		got = f->data[off];
		want = f->expect[off];
	}
	sim_fail(s, "%s: client %d va 0x%" PRIx64 " (+%ld of %zu): byte 0x%02x, model expects 0x%02x",
		 what, m->client + 1, va + (uint64_t)bad, bad, len, got, want);
	return false;
}
