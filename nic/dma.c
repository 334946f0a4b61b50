/* SPDX-License-Identifier: MIT */
/*
 * The DMA step: every access to host memory translates through the MR's IO page table
 * inside a DMA bracket (pagetable/ fence), then copies through the memory port. A miss
 * raises a page request and reports NIC_DMA_FAULT; the caller (requester or responder)
 * decides whether to stall, RNR-NAK or fail. Nothing is copied outside a bracket, so once
 * an invalidation returns no copy uses the old translation.
 */
#include "nic_int.h"

/* A DMA that starts through a FAILED slot inherits the failure, once: the retried access
 * gets the host's answer instead of faulting again. */
static void take_failure(struct nic_dma_ctx *c)
{
	if (c->slot && c->slot->state == NIC_SLOT_FAILED) {
		c->failed = true;
		c->slot->state = NIC_SLOT_IDLE;
	}
}

/* The slot's waiter goes on the request unless it already waits on one (a duplicate READ
 * replayed while the head packet's fault is out): that fault is raised unwatched. */
static enum nic_dma_result raise_fault(struct nic_dma_ctx *c, struct nic_mr *mr,
				       uint64_t miss, uint64_t need, unsigned access)
{
	struct nic_fault *slot = c->slot && c->slot->state == NIC_SLOT_IDLE ? c->slot : NULL;
	struct iopt_waiter *w = slot ? &slot->waiter : NULL;

	if (c->failed)
		return NIC_DMA_HOST;
	if (w) {
		w->fn = nic_fault_wake;
		w->cookie = c->qp;
		atomic_store(&w->status, IOPT_WAIT_PENDING);
	}
	if (iopt_fault(mr->iopt, miss, need ? need : 1,
		       access == IOPT_READ ? IOPT_READ : IOPT_WRITE, c->qp->nic->now, w))
		return NIC_DMA_HOST;
	if (slot) {
		slot->state = NIC_SLOT_WAITING;
		slot->dom = mr->iopt;
	}
	return NIC_DMA_FAULT;
}

/* Copy the translated extents of one translate call: the MR's memory is its registering
 * client's, which need not be the QP's PD's (a PD shared by an import). */
static int copy_extents(struct nic_qp *qp, const struct nic_mr *mr, const struct iopt_xlate *x,
			uint8_t *buf, bool to_mem)
{
	const struct nic_ports *p = &qp->nic->cfg.ports;
	uint32_t client = mr->client;

	for (unsigned i = 0; i < x->n; i++) {
		int rc = to_mem ? p->mem_write(p->ctx, client, x->ext[i].host, buf, x->ext[i].len)
				: p->mem_read(p->ctx, client, x->ext[i].host, buf, x->ext[i].len);

		if (rc)
			return rc;
		buf += x->ext[i].len;
	}
	return 0;
}

/* nic_dma_mr once the slot's failure is taken (nic_dma_sge takes it once for all SGEs). */
static enum nic_dma_result dma_mr(struct nic_dma_ctx *c, struct nic_mr *mr, uint64_t va,
				  void *buf, uint32_t len, bool to_mem, unsigned access)
{
	enum nic_dma_result res = NIC_DMA_OK;
	uint64_t done = 0;
	struct iopt_dma dma;

	if (va < mr->va || va + len < va || va + len > mr->va + mr->len)
		return NIC_DMA_RANGE;
	iopt_dma_begin(mr->iopt, &dma);
	if (mr->lease >= NIC_LEASE_BROKEN) {	/* checked inside the bracket: the fence */
		iopt_dma_end(&dma);
		return nic_lease_blocked(c, mr);
	}
	while (done < len && res == NIC_DMA_OK) {
		struct iopt_xlate x;
		int rc = iopt_translate(mr->iopt, va + done, len - done, access, &x);

		if (buf && copy_extents(c->qp, mr, &x, (uint8_t *)buf + done, to_mem))
			res = NIC_DMA_HOST;
		done += x.done;
		if (rc == -EFAULT && res == NIC_DMA_OK)
			res = NIC_DMA_FAULT;
		else if (rc && rc != -E2BIG && res == NIC_DMA_OK)
			res = NIC_DMA_HOST;
	}
	iopt_dma_end(&dma);
	if (res == NIC_DMA_FAULT)
		res = raise_fault(c, mr, (va + done) & ~NIC_PAGE_MASK, len - done, access);
	return res;
}

enum nic_dma_result nic_dma_mr(struct nic_dma_ctx *c, struct nic_mr *mr, uint64_t va,
			       void *buf, uint32_t len, bool to_mem, unsigned access)
{
	take_failure(c);
	return dma_mr(c, mr, va, buf, len, to_mem, access);
}

/* Check that [va, va+len) translates for access, raising a fault at the first miss, without
 * copying: a READ response stream must not start before all of it can be sent. */
enum nic_dma_result nic_dma_probe(struct nic_dma_ctx *c, struct nic_mr *mr, uint64_t va,
				  uint32_t len, unsigned access)
{
	return nic_dma_mr(c, mr, va, NULL, len, false, access);	/* translate, copy nothing */
}

/* Atomic read-modify-write of the aligned 8-byte word at va, in one bracket, little-endian
 * host order as the CPU sees it. op: ODPEMU_WR_ATOMIC_CMP_AND_SWP, _FETCH_AND_ADD, or
 * ATOMIC_WRITE (swap is stored). *orig gets the value before. */
enum nic_dma_result nic_dma_atomic(struct nic_dma_ctx *c, struct nic_mr *mr, uint64_t va,
				   enum odpemu_wr_opcode op, uint64_t compare_add,
				   uint64_t swap, uint64_t *orig)
{
	const struct nic_ports *p = &c->qp->nic->cfg.ports;
	enum nic_dma_result res = NIC_DMA_OK;
	struct iopt_xlate x;
	struct iopt_dma dma;
	uint64_t v, nv;
	int rc;

	take_failure(c);
	if (va < mr->va || va + 8 < va || va + 8 > mr->va + mr->len)
		return NIC_DMA_RANGE;
	iopt_dma_begin(mr->iopt, &dma);
	if (mr->lease >= NIC_LEASE_BROKEN) {
		iopt_dma_end(&dma);
		return nic_lease_blocked(c, mr);
	}
	rc = iopt_translate(mr->iopt, va, 8, IOPT_ATOMIC, &x);
	if (rc == -EFAULT) {
		res = NIC_DMA_FAULT;
	} else if (rc || p->mem_read(p->ctx, mr->client, x.ext[0].host, &v, 8)) {
		res = NIC_DMA_HOST;
	} else {
		nv = op == ODPEMU_WR_ATOMIC_FETCH_AND_ADD ? v + compare_add :
		     op == ODPEMU_WR_ATOMIC_CMP_AND_SWP ? (v == compare_add ? swap : v) : swap;
		if (p->mem_write(p->ctx, mr->client, x.ext[0].host, &nv, 8))
			res = NIC_DMA_HOST;
		*orig = v;
	}
	iopt_dma_end(&dma);
	if (res == NIC_DMA_FAULT)
		res = raise_fault(c, mr, va & ~NIC_PAGE_MASK, 8, IOPT_ATOMIC);
	return res;
}

/* The MR behind an SGE, checked for the local access the DMA needs. */
static enum nic_dma_result sge_mr(struct nic_qp *qp, const struct nic_sge *s, bool to_mem,
				  struct nic_mr **out)
{
	struct nic_mr *mr = nic_mr_lookup(qp->nic, s->lkey);

	if (!mr || mr->pd != qp->pd || mr->window)	/* a window's key is an rkey only */
		return NIC_DMA_BAD_KEY;
	if (to_mem && !(mr->access & ODPEMU_ACCESS_LOCAL_WRITE))
		return NIC_DMA_ACCESS;
	*out = mr;
	return NIC_DMA_OK;
}

enum nic_dma_result nic_dma_sge(struct nic_dma_ctx *c, const struct nic_sge *sge,
				unsigned num_sge, uint32_t off, void *buf, uint32_t len,
				bool to_mem)
{
	uint8_t *b = buf;

	take_failure(c);
	for (unsigned i = 0; i < num_sge && len; i++) {
		uint32_t n;
		struct nic_mr *mr;
		enum nic_dma_result res;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off < len ? sge[i].length - off : len;
		res = sge_mr(c->qp, &sge[i], to_mem, &mr);
		if (res == NIC_DMA_OK)
			res = dma_mr(c, mr, sge[i].addr + off, b, n, to_mem,
				     to_mem ? IOPT_WRITE : IOPT_READ);
		if (res != NIC_DMA_OK)
			return res;
		b += n;
		len -= n;
		off = 0;
	}
	return len ? NIC_DMA_RANGE : NIC_DMA_OK;
}

/* Prefetch, unwatched, what is missing of [off, off+len) of a local SGE list on ODP MRs
 * (iopt_prefetch: one request per SGE, missing pages only). The requester calls it when a
 * READ response faults: mlx5 resolves a requester WQE fault for all of the WQE's data
 * segments at once (odp.c pagefault_data_segments); faulting one fault-around window per resent response stream instead
 * makes the responder send the rest of a large READ once per window. Returns the number
 * of requests raised. */
unsigned nic_dma_sge_prefetch(struct nic_qp *qp, const struct nic_sge *sge, unsigned num_sge,
			      uint32_t off, uint32_t len, bool to_mem)
{
	unsigned raised = 0;

	for (unsigned i = 0; i < num_sge && len; i++) {
		uint32_t n;
		struct nic_mr *mr;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off < len ? sge[i].length - off : len;
		if (sge_mr(qp, &sge[i], to_mem, &mr) == NIC_DMA_OK && mr->odp &&
		    iopt_prefetch(mr->iopt, sge[i].addr + off, n,
				  to_mem ? IOPT_PREFETCH_WRITE : IOPT_PREFETCH, qp->nic->now,
				  NULL) == 0)
			raised++;
		len -= n;
		off = 0;
	}
	return raised;
}

/* The vendor error of a local SGE that could not be used (the WQE completes LOC_PROT_ERR). */
enum nic_vendor_err nic_dma_verr(enum nic_dma_result res)
{
	switch (res) {
	case NIC_DMA_BAD_KEY: return NIC_VERR_BAD_LKEY;
	case NIC_DMA_RANGE: return NIC_VERR_LKEY_RANGE;
	case NIC_DMA_ACCESS: return NIC_VERR_LKEY_ACCESS;
	default: return NIC_VERR_LOCAL_FAULT;
	}
}
