/* SPDX-License-Identifier: MIT */
/* Protection domains and memory regions: ibv_reg_mr and its iova variants, rereg, dereg,
 * advise_mr. Every MR also sits on its context's list, so an MR async event (decoherence)
 * can name the client's ibv_mr. */
#include <stdlib.h>
#include <string.h>

#include "compat.h"

/* Access bits odpemu acts on; the rest are refused or ignored as listed below. */
#define CV_ACCESS_KEPT	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
			 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_FLUSH_GLOBAL | \
			 IBV_ACCESS_FLUSH_PERSISTENT | ODPEMU_IBV_ACCESS_LEASE | \
			 IBV_ACCESS_MW_BIND)
/* Accepted and meaningless here: hugepages need no hint, and the optional range (bits
 * 20-29, e.g. Relaxed Ordering) may be ignored by definition (verbs.h:
 * IBV_ACCESS_OPTIONAL_RANGE). */
#define CV_ACCESS_IGNORED (IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE)

static_assert(sizeof(struct ibv_sge) == sizeof(struct odpemu_sge), "sge layout");
static_assert(IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT ==
	      (int)ODPEMU_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, "advice values");

CV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct cv_pd *p;

	if (!context)
		return cv_fail_null(EINVAL);
	if (!(p = calloc(1, sizeof(*p))))
		return cv_fail_null(ENOMEM);
	if (!(p->odp = odpemu_alloc_pd(cv_odp(context)))) {
		free(p);
		return NULL;
	}
	p->pd.context = context;
	p->pd.handle = p->odp->handle;
	return &p->pd;
}

CV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	int rc;

	if (!pd)
		return cv_fail(EINVAL);
	if ((rc = odpemu_dealloc_pd(cv_pd(pd)->odp)))
		return rc;
	free(pd);
	return 0;
}

/* The access bits for libodpemu, or -1 (errno set) for ones odpemu cannot honour. */
static int access_to_odp(unsigned int access)
{
	if (access & ~(CV_ACCESS_KEPT | CV_ACCESS_IGNORED)) {
		errno = (access & IBV_ACCESS_ZERO_BASED) ? EOPNOTSUPP : EINVAL;
		return -1;
	}
	return (int)(access & CV_ACCESS_KEPT);
}

void cv_mr_track(struct cv_context *c, struct cv_mr *m)
{
	pthread_mutex_lock(&c->lock);
	m->next = c->mrs;
	c->mrs = m;
	pthread_mutex_unlock(&c->lock);
}

void cv_mr_untrack(struct cv_context *c, struct cv_mr *m)
{
	pthread_mutex_lock(&c->lock);
	for (struct cv_mr **p = &c->mrs; *p; p = &(*p)->next)
		if (*p == m) {
			*p = m->next;
			break;
		}
	pthread_mutex_unlock(&c->lock);
}

struct cv_mr *cv_mr_find(struct cv_context *c, const struct odpemu_mr *odp)
{
	for (struct cv_mr *m = c->mrs; m; m = m->next)
		if (m->odp == odp)
			return m;
	return NULL;
}

void cv_mr_fill(struct cv_mr *m, struct ibv_pd *pd)
{
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = m->odp->addr;
	m->mr.length = m->odp->length;
	m->mr.handle = m->odp->handle;
	m->mr.lkey = m->odp->lkey;
	m->mr.rkey = m->odp->rkey;
}

/* odpemu addresses an MR by the process's virtual addresses: the iova must be addr. A
 * pinned range becomes MADV_DONTFORK once registered (the registration replaces its
 * mapping, so not before), when fork support is on. */
static struct odpemu_mr *reg(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			     unsigned int access)
{
	int odp_access = access_to_odp(access), rc;
	struct odpemu_mr *mr;
	bool dontfork;

	if (odp_access < 0)
		return NULL;
	if (iova != (uintptr_t)addr)
		return cv_fail_null(EOPNOTSUPP);
	dontfork = !(odp_access & ODPEMU_ACCESS_ON_DEMAND) && cv_fork_enabled();
	if (!(mr = odpemu_reg_mr(cv_pd(pd)->odp, addr, length, odp_access)))
		return NULL;
	cv_fork_mr_registered();
	if (dontfork && (rc = ibv_dontfork_range(addr, length))) {
		odpemu_dereg_mr(mr);
		return cv_fail_null(rc);
	}
	return mr;
}

/* The other half of reg(). */
static int unreg(struct odpemu_mr *mr, unsigned int access)
{
	void *addr = mr->addr;
	size_t length = mr->length;
	int rc = odpemu_dereg_mr(mr);

	if (!rc && addr && !(access & IBV_ACCESS_ON_DEMAND))	/* an import has no addr */
		ibv_dofork_range(addr, length);
	return rc;
}

CV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					  uint64_t iova, unsigned int access)
{
	struct cv_mr *m;

	if (!pd)
		return cv_fail_null(EINVAL);
	if (!(m = calloc(1, sizeof(*m))))
		return cv_fail_null(ENOMEM);
	if (!(m->odp = reg(pd, addr, length, iova, access))) {
		int err = errno;

		free(m);
		return cv_fail_null(err);
	}
	m->access = access;
	cv_mr_fill(m, pd);
	cv_mr_track(cv_ctx(pd->context), m);
	return &m->mr;
}

#undef ibv_reg_mr
CV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
CV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					 uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

CV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					   uint64_t iova, int fd, int access)
{
	(void)pd; (void)offset; (void)length; (void)iova; (void)fd; (void)access;
	return cv_fail_null(EOPNOTSUPP);	/* no device memory to import */
}

CV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct cv_mr *m = (struct cv_mr *)mr;
	int rc;

	if (!mr)
		return cv_fail(EINVAL);
	if ((rc = unreg(m->odp, m->access)))
		return rc;
	cv_mr_untrack(cv_ctx(mr->context), m);
	free(m);
	return 0;
}

/* rdma-core's contract: 0, or a negative ibv_rereg_mr_err_code with errno set. The new
 * registration is made before the old one goes, so a failure leaves the MR as it was.
 * The keys stay, as on rxe and mlx5 (peers keep using the rkey they were given: rdma-core's
 * test_mr_rereg_*): the new registration takes the old one's keys before the old one goes.
 * A leased MR (odpemu's ODPEMU_IBV_ACCESS_LEASE) gets new keys instead. */
CV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			   size_t length, int access)
{
	struct cv_mr *m = (struct cv_mr *)mr;
	struct odpemu_mr *old, *now;
	struct ibv_pd *new_pd;
	unsigned int new_access, old_access = m->access;

	if (!mr || !flags || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != mr->context))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	old = m->odp;
	new_pd = (flags & IBV_REREG_MR_CHANGE_PD) ? pd : mr->pd;
	new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? (unsigned int)access
		: m->access;
	if (!(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
		addr = old->addr;
		length = old->length;
	}
	if (!(now = reg(new_pd, addr, length, (uintptr_t)addr, new_access)))
		return IBV_REREG_MR_ERR_INPUT;
	if (odpemu_mr_swap_keys(now, old) && errno != EBUSY) {
		int err = errno;

		unreg(now, new_access);
		errno = err;
		return IBV_REREG_MR_ERR_CMD;
	}
	pthread_mutex_lock(&cv_ctx(mr->context)->lock);
	m->odp = now;
	m->access = new_access;
	cv_mr_fill(m, new_pd);
	pthread_mutex_unlock(&cv_ctx(mr->context)->lock);
	if (unreg(old, old_access))
		return IBV_REREG_MR_ERR_CMD;
	return 0;
}

int cv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 struct ibv_sge *sg_list, uint32_t num_sge)
{
	return odpemu_advise_mr(cv_pd(pd)->odp, (enum odpemu_advise_mr_advice)advice, flags,
				(const struct odpemu_sge *)sg_list, num_sge);
}
