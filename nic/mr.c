/* SPDX-License-Identifier: MIT */
/*
 * Memory regions. Every MR translates through its own IO page table (pagetable/): a pinned
 * MR's table is filled once at registration and never changes; an ODP MR's starts empty and
 * is filled by faults and advice; an implicit ODP MR covers the whole 47-bit space.
 *
 * Keys: lkey == rkey == slot << 8 | variant. The 8-bit variant of a slot changes on every
 * registration, so a stale key of a re-registered slot misses (as mlx5's mkey variant).
 * Memory windows (mw.c) take their rkeys from the same table, so one lookup finds either.
 * Slots come from a FIFO of free ones (O(1)), and the table doubles while fewer than a
 * quarter are free, up to 2^24 slots: a slot waits long before its reuse.
 * Deregistration takes the key out of the slot first (new packets NAK), then invalidates the
 * whole table (the fence: DMAs already translating finish first), then destroys the table;
 * while the fault handler still holds one of its requests, the MR waits on nic->zombies.
 */
#include "nic_int.h"

static bool is_implicit(const struct nic_mr_init *in)
{
	return (in->access & ODPEMU_ACCESS_ON_DEMAND) && in->va == 0 && in->len == UINT64_MAX;
}

/* What the device's caps refuse (a personality without them): ODP on a device without
 * ODP, FLUSH access on one without that FLUSH type, is -EOPNOTSUPP (ib_core
 * ib_check_mr_access: IBK_ON_DEMAND_PAGING, IB_DEVICE_FLUSH_GLOBAL/PERSISTENT); an
 * implicit MR without IBV_ODP_SUPPORT_IMPLICIT -EINVAL (mlx5_ib_reg_user_mr via
 * create_user_odp_mr, rxe_odp_mr_init_user). */
static const char *caps_why(const struct nic *nic, const struct nic_mr_init *in, int *err)
{
	uint64_t caps = nic->attr.odp.general_caps, dev = nic->attr.device_cap_flags;

	*err = -EOPNOTSUPP;
	if ((in->access & ODPEMU_ACCESS_ON_DEMAND) && !(caps & ODPEMU_ODP_SUPPORT))
		return "ODP access on a device without ODP (no IBV_ODP_SUPPORT)";
	if (((in->access & ODPEMU_ACCESS_FLUSH_GLOBAL) && !(dev & ODPEMU_DEVICE_FLUSH_GLOBAL)) ||
	    ((in->access & ODPEMU_ACCESS_FLUSH_PERSISTENT) &&
	     !(dev & ODPEMU_DEVICE_FLUSH_PERSISTENT)))
		return "FLUSH access on a device without RDMA FLUSH of that type "
		       "(device_cap_flags_ex lacks FLUSH_GLOBAL/FLUSH_PERSISTENT)";
	*err = -EINVAL;
	if (is_implicit(in) && !(caps & ODPEMU_ODP_SUPPORT_IMPLICIT))
		return "implicit ODP (addr NULL, length SIZE_MAX) on a device without "
		       "IBV_ODP_SUPPORT_IMPLICIT: register explicit ODP ranges";
	return NULL;
}

const char *nic_mr_init_why(const struct nic *nic, const struct nic_mr_init *in)
{
	bool odp = in->access & ODPEMU_ACCESS_ON_DEMAND;
	const char *why;
	int err;

	if (in->access & ~ODPEMU_ACCESS_ALL_MR)
		return "unknown access flags";
	if ((why = caps_why(nic, in, &err)))
		return why;
	/* IBA 10.6.3.1: remote write or atomic access needs local write. */
	if ((in->access & (ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_ATOMIC)) &&
	    !(in->access & ODPEMU_ACCESS_LOCAL_WRITE))
		return "remote write or atomic access needs local write: IBA 10.6.3.1";
	if (is_implicit(in))
		return NULL;
	if (in->len == 0 || in->len > nic->attr.max_mr_size)
		return "length 0 or beyond the device's max_mr_size";
	if (in->va + in->len < in->va || in->va + in->len > IOPT_VA_END)
		return "the range leaves the 47-bit user address space";
	if (odp && (in->access & ODPEMU_ACCESS_LEASE))
		return "a lease is for pinned MRs: an ODP MR follows the mapping by itself";
	if (!odp && (in->host & NIC_PAGE_MASK) != (in->va & NIC_PAGE_MASK))
		return "a pinned MR's host address must share the page offset of its va";
	return NULL;
}

static int check_init(const struct nic *nic, const struct nic_mr_init *in, bool *implicit)
{
	int err;

	*implicit = is_implicit(in);
	if (!(in->access & ~ODPEMU_ACCESS_ALL_MR) && caps_why(nic, in, &err))
		return err;
	return nic_mr_init_why(nic, in) ? -EINVAL : 0;
}

/* Double the slot table (from NIC_MR_SLOTS_MIN): the free FIFO keeps its order, the new
 * slots queue behind it. 0 or -ENOMEM (also at NIC_MR_SLOTS_MAX). */
int nic_mr_slots_grow(struct nic *nic)
{
	uint32_t old = nic->mr_cap, cap = old ? old * 2 : NIC_MR_SLOTS_MIN, *f;
	struct nic_mr **slot;
	uint8_t *var;

	if (cap > NIC_MR_SLOTS_MAX)
		return -ENOMEM;
	if (!(f = malloc(cap * sizeof(*f))))
		return -ENOMEM;
	if (!(slot = realloc(nic->mr_slot, cap * sizeof(*slot)))) {
		free(f);
		return -ENOMEM;
	}
	nic->mr_slot = slot;
	if (!(var = realloc(nic->mr_variant, cap))) {
		free(f);
		return -ENOMEM;
	}
	nic->mr_variant = var;
	memset(slot + old, 0, (cap - old) * sizeof(*slot));
	memset(var + old, 0, cap - old);
	for (uint32_t i = 0; i < nic->mr_nfree; i++)
		f[i] = nic->mr_free[(nic->mr_free_head + i) % old];
	for (uint32_t s = old ? old : 1; s < cap; s++)	/* slot 0 never: no key below 256 */
		f[nic->mr_nfree++] = s;
	free(nic->mr_free);
	nic->mr_free = f;
	nic->mr_free_head = 0;
	nic->mr_cap = cap;
	return 0;
}

/* Give entry (an MR, or a window's key entry: mw.c) a key of its own. */
int nic_key_alloc(struct nic *nic, struct nic_mr *mr)
{
	uint32_t s;

	if (nic->mr_nfree < nic->mr_cap / 4 && nic_mr_slots_grow(nic) && !nic->mr_nfree)
		return -ENOMEM;
	s = nic->mr_free[nic->mr_free_head];
	nic->mr_free_head = (nic->mr_free_head + 1) % nic->mr_cap;
	nic->mr_nfree--;
	nic->mr_variant[s]++;
	nic->mr_slot[s] = mr;
	mr->key = s << 8 | nic->mr_variant[s];
	return 0;
}

void nic_key_free(struct nic *nic, uint32_t key)
{
	uint32_t s = key >> 8;

	nic->mr_slot[s] = NULL;
	nic->mr_free[(nic->mr_free_head + nic->mr_nfree++) % nic->mr_cap] = s;
}

/* A pinned MR: install [va, va+len) -> host (the owner pinned it): once, or again at a
 * lease's restore (lease.c). */
int nic_mr_pin(struct nic_mr *mr, uint64_t host)
{
	uint64_t start = mr->va & ~NIC_PAGE_MASK;
	uint64_t end = (mr->va + mr->len + NIC_PAGE_MASK) & ~NIC_PAGE_MASK;
	struct iopt_map m = { start, end - start, host & ~NIC_PAGE_MASK,
		IOPT_READ | IOPT_WRITE };
	long rc = iopt_fill(mr->iopt, &m, 1, IOPT_SEQ_NONE);

	return rc < 0 ? (int)rc : 0;
}

static int make_table(struct nic *nic, struct nic_mr *mr)
{
	struct iopt_config cfg = {
		.va = mr->implicit ? 0 : mr->va,
		.len = mr->implicit ? 0 : mr->len,
		.fault_around = nic->cfg.fault_around,
		.fq = nic->fq,
		.owner = mr,
	};

	return iopt_create(&cfg, &mr->iopt);
}

int nic_mr_reg(struct nic_pd *pd, const struct nic_mr_init *in, struct nic_mr **out)
{
	struct nic *nic = pd ? pd->nic : NULL;
	struct nic_mr *mr;
	bool implicit;
	int rc;

	if (!pd || !in || !out)
		return -EINVAL;
	rc = check_init(nic, in, &implicit);
	if (rc)
		return rc;
	if (nic->ctr.mrs >= nic->attr.max_mr)
		return -ENOSPC;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->pd = pd;
	mr->client = in->client ? in->client : pd->client;
	mr->access = in->access;
	mr->odp = in->access & ODPEMU_ACCESS_ON_DEMAND;
	mr->implicit = implicit;
	mr->lease = (in->access & ODPEMU_ACCESS_LEASE) ? NIC_LEASE_COHERENT : NIC_LEASE_NONE;
	mr->va = implicit ? 0 : in->va;
	mr->len = implicit ? IOPT_VA_END : in->len;
	rc = make_table(nic, mr);
	if (!rc && !mr->odp)
		rc = nic_mr_pin(mr, in->host);
	if (!rc)
		rc = nic_key_alloc(nic, mr);
	if (rc) {
		if (mr->iopt)
			iopt_destroy(mr->iopt);
		free(mr);
		return rc;
	}
	nic_list_add_tail(&nic->mrs, &mr->link);
	pd->users++;
	nic->ctr.mrs++;
	*out = mr;
	return 0;
}

int nic_mr_host_of(const struct nic_mr *mr, uint64_t va, uint64_t *host)
{
	struct iopt_xlate x;
	struct iopt_dma dma;
	int rc;

	iopt_dma_begin(mr->iopt, &dma);
	rc = iopt_translate(mr->iopt, va, 1, IOPT_READ, &x);
	iopt_dma_end(&dma);
	if (rc || !x.n)
		return rc ? rc : -EFAULT;
	*host = x.ext[0].host;
	return 0;
}

struct nic_mr *nic_mr_lookup(struct nic *nic, uint32_t key)
{
	uint32_t s = key >> 8;
	struct nic_mr *mr = s < nic->mr_cap ? nic->mr_slot[s] : NULL;

	return mr && mr->key == key && !mr->dead ? mr : NULL;
}

/* rereg keeps the keys on rxe and mlx5 (rdma-core's test_mr_rereg_* exchange the rkey
 * before and use it after): the new registration takes the old one's key and slot, the old
 * one the new's, and the caller then deregisters the old. A packet with the key reaches the
 * new MR from here on; a WRITE in progress under it sees another MR and stops, as a
 * message that outlives its MR does (resp.c). */
int nic_mr_swap_keys(struct nic_mr *a, struct nic_mr *b)
{
	struct nic *nic;
	uint32_t key;

	if (!a || !b || a == b || a->dead || b->dead || !a->pd || !b->pd ||
	    a->pd->nic != b->pd->nic || a->window || b->window)
		return -EINVAL;
	if (a->windows || b->windows)
		return -EINVAL;	/* windows are bound to the old pages: unbind them first */
	nic = a->pd->nic;
	nic->mr_slot[a->key >> 8] = b;
	nic->mr_slot[b->key >> 8] = a;
	key = a->key;
	a->key = b->key;
	b->key = key;
	return 0;
}

uint32_t nic_mr_lkey(const struct nic_mr *mr) { return mr->key; }
uint32_t nic_mr_rkey(const struct nic_mr *mr) { return mr->key; }
struct iopt *nic_mr_iopt(const struct nic_mr *mr) { return mr->iopt; }

/* Destroy the tables of dead MRs whose fault requests have all been answered. */
void nic_mr_reap(struct nic *nic)
{
	struct nic_list *l = nic->zombies.next;

	while (l != &nic->zombies) {
		struct nic_mr *mr = nic_container_of(l, struct nic_mr, link);

		l = l->next;
		if (iopt_destroy(mr->iopt) == 0) {
			nic_list_del(&mr->link);
			free(mr);
		}
	}
}

int nic_mr_dereg(struct nic_mr *mr)
{
	struct nic *nic;

	if (!mr || mr->dead || mr->window)
		return -EINVAL;
	if (mr->windows)
		return -EINVAL;	/* IBA 10.6.7.2.6, as rxe: unbind (or free) its windows first */
	nic = mr->pd->nic;
	mr->dead = true;
	nic_key_free(nic, mr->key);
	nic_lease_wake(mr);	/* what waits on a broken lease now finds the key gone */
	/* The fence: returns once no DMA uses a translation of this MR. */
	(void)iopt_invalidate(mr->iopt, mr->implicit ? 0 : mr->va & ~NIC_PAGE_MASK,
			      mr->implicit ? IOPT_VA_END : mr->len + (mr->va & NIC_PAGE_MASK));
	nic_list_del(&mr->link);
	nic_list_add_tail(&nic->zombies, &mr->link);
	mr->pd->users--;
	mr->pd = NULL;	/* the PD may go before this zombie: its requests use mr->client */
	nic->ctr.mrs--;
	nic_mr_reap(nic);
	return 0;
}

static enum iopt_advice advice_of(unsigned advice)
{
	return advice == ODPEMU_ADVISE_MR_ADVICE_PREFETCH_WRITE ? IOPT_PREFETCH_WRITE :
	       advice == ODPEMU_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT ? IOPT_PREFETCH_NO_FAULT :
	       IOPT_PREFETCH;
}

int nic_mr_advise(struct nic_mr *mr, unsigned advice, uint64_t va, uint64_t len, uint64_t now)
{
	int rc;

	if (!mr || mr->dead || advice > ODPEMU_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT || !len)
		return -EINVAL;
	if (!mr->odp)
		return -EOPNOTSUPP;	/* ibv_advise_mr on a pinned MR: nothing to do */
	if (advice == ODPEMU_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    !(mr->access & ODPEMU_ACCESS_LOCAL_WRITE))
		return -EACCES;
	if (va < mr->va || va + len < va || va + len > mr->va + mr->len)
		return -ERANGE;
	mr->pd->nic->now = now;
	rc = iopt_prefetch(mr->iopt, va, len, advice_of(advice), now, NULL);
	if (rc < 0)
		return rc;
	nic_pump_faults(mr->pd->nic);
	return 0;
}

void nic_mr_set_client(struct nic_mr *mr, uint32_t client)
{
	mr->client = client;
}

/* The host changed [va, va+len) of client: ODP MRs forget it (and fault again); pinned MRs
 * keep their pages, now orphaned, and the owner learns its cache went stale. */
void nic_host_invalidate(struct nic *nic, uint32_t client, uint64_t va, uint64_t len)
{
	for (struct nic_list *l = nic->mrs.next; l != &nic->mrs; l = l->next) {
		struct nic_mr *mr = nic_container_of(l, struct nic_mr, link);
		uint64_t s = va > mr->va ? va : mr->va;
		uint64_t e = va + len < mr->va + mr->len ? va + len : mr->va + mr->len;

		if (mr->client != client || s >= e || mr->lease != NIC_LEASE_NONE)
			continue;	/* a lease's decoherence is reported by its break */
		if (mr->odp)
			(void)iopt_invalidate(mr->iopt, s, e - s);
		else
			nic_event(nic, ODPEMU_EVENT_MR_DECOHERENCE, NULL, NULL, NULL, mr);
	}
}
