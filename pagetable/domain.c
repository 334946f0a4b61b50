/* SPDX-License-Identifier: MIT */
/* Domain lifetime: one translation domain per MR (or one implicit-ODP domain). */
#include <stdlib.h>
#include <string.h>

#include "iopt_int.h"

static int check_config(const struct iopt_config *cfg)
{
	uint64_t fa = cfg->fault_around;

	if (fa && (fa < IOPT_PAGE_SIZE || (fa & (fa - 1))))
		return -EINVAL;
	if (cfg->max_need && cfg->max_need < IOPT_PAGE_SIZE)
		return -EINVAL;
	if (cfg->len && (cfg->va + cfg->len < cfg->va || cfg->va + cfg->len > IOPT_VA_END))
		return -ERANGE;
	if (!cfg->len && cfg->va)
		return -EINVAL;
	return 0;
}

static _Atomic uint64_t next_domain_id;

int iopt_create(const struct iopt_config *cfg, struct iopt **out)
{
	struct iopt *d;
	int rc = check_config(cfg);

	if (rc)
		return rc;
	/* aligned_alloc: the struct holds cache-line aligned fence counters. */
	d = aligned_alloc(64, (sizeof(*d) + 63) & ~(size_t)63);
	if (!d)
		return -ENOMEM;
	memset(d, 0, sizeof(*d));
	d->id = atomic_fetch_add_explicit(&next_domain_id, 1, memory_order_relaxed) + 1;
	d->start = cfg->len ? cfg->va & ~IOPT_PAGE_MASK : 0;
	d->end = cfg->len ? (cfg->va + cfg->len + IOPT_PAGE_MASK) & ~IOPT_PAGE_MASK : IOPT_VA_END;
	d->fault_around = cfg->fault_around ? cfg->fault_around : IOPT_FAULT_AROUND_DEFAULT;
	d->max_need = cfg->max_need ? cfg->max_need : IOPT_MAX_NEED_DEFAULT;
	d->fq = cfg->fq;
	d->owner = cfg->owner;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->fence_lock, NULL);
	if (d->fq)
		iopt_fq_attach(d->fq, 1);
	*out = d;
	return 0;
}

static bool brackets_open(struct iopt *d)
{
	return atomic_load_explicit(&d->inflight[0], memory_order_acquire) ||
	       atomic_load_explicit(&d->inflight[1], memory_order_acquire);
}

int iopt_destroy(struct iopt *d)
{
	if (!d)
		return 0;
	if (brackets_open(d))
		return -EBUSY;
	if (d->fq) {
		int rc = iopt_fq_cancel_domain(d);

		if (rc)
			return rc;
		iopt_fq_attach(d->fq, -1);
	}
	iopt_reclaim_list(d, d->retired);
	if (d->root)
		iopt_table_free_tree(d, d->root);
	free(d->log);
	free((void *)d->ctr.lat);
	pthread_mutex_destroy(&d->lock);
	pthread_mutex_destroy(&d->fence_lock);
	free(d);
	return 0;
}

void *iopt_owner(const struct iopt *d)
{
	return d->owner;
}
