/* SPDX-License-Identifier: MIT */
/* Protection domains and memory regions. ODP MRs are a daemon call and nothing else; a
 * pinned MR first has its pages moved into shared memory (pin.c) and passes the memfds. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib_int.h"

ODPEMU_EXPORT struct odpemu_pd *odpemu_alloc_pd(struct odpemu_context *context)
{
	struct ipc_handle_rep rep;
	struct lib_call call = { .op = IPC_ALLOC_PD, .rep = &rep, .rep_min = sizeof(rep),
				 .rep_cap = sizeof(rep) };
	struct lib_context *c;
	struct odpemu_pd *pd;
	int rc;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	c = lib_ctx(context);
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	rc = lib_call(c, &call);
	if (!rc) {
		pd->context = context;
		pd->handle = rep.handle;
		pthread_mutex_lock(&c->tab_lock);
		rc = lib_table_add(&c->pds, pd->handle, pd);
		pthread_mutex_unlock(&c->tab_lock);
		if (rc)
			lib_call_destroy(c, IPC_DEALLOC_PD, rep.handle);
	}
	if (rc) {
		free(pd);
		errno = -rc;
		return NULL;
	}
	return pd;
}

ODPEMU_EXPORT int odpemu_dealloc_pd(struct odpemu_pd *pd)
{
	struct lib_context *c;
	int rc;

	if (!pd)
		return lib_fail(EINVAL);
	c = lib_ctx(pd->context);
	rc = lib_destroy_handle(c, IPC_DEALLOC_PD, &c->pds, pd->handle);
	if (rc)
		return lib_fail(-rc);
	free(pd);
	return 0;
}

/* ibv_reg_mr's rules: known bits, and remote write or atomic only with local write. */
static int check_access(int access)
{
	if (access & ~ODPEMU_ACCESS_ALL_MR)
		return -EINVAL;
	if ((access & (ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & ODPEMU_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

union lib_reg_buf {
	struct ipc_reg_mr_req req;
	char bytes[sizeof(struct ipc_reg_mr_req) + IPC_MAX_MR_SEGS * sizeof(struct ipc_mr_seg)];
};

/* Fill the request's segments and fds (duplicates to close) for a pinned MR. Memory the
 * daemon cannot hold (hugetlb, special mappings, shared objects this process cannot open
 * again) is registered by address instead: DMA then follows the current mapping and no
 * decoherence is detected (the daemon counts these: mrs_pinned_by_address). */
static int pin(struct lib_context *c, union lib_reg_buf *b, void *addr, size_t length,
	       int access, int *fds)
{
	struct lib_pin_seg segs[IPC_MAX_MR_SEGS];
	const char *why = "";
	unsigned n = 0;
	int rc = lib_pin_range((uintptr_t)addr, length, access & ODPEMU_ACCESS_LOCAL_WRITE, segs,
			       IPC_MAX_MR_SEGS, &n, &why);

	if (rc == -EOPNOTSUPP) {
		b->req.flags = IPC_REG_MR_BY_ADDRESS;
		return 0;
	}
	if (rc == -E2BIG) {
		lib_set_error(c, "reg_mr %p+%zu: the range spans more than %d mappings; register "
			      "it with ODPEMU_ACCESS_ON_DEMAND", addr, length, IPC_MAX_MR_SEGS);
		return -EINVAL;
	}
	if (rc == -EMFILE || rc == -ENFILE) {
		struct rlimit rl = { 0, 0 };

		getrlimit(RLIMIT_NOFILE, &rl);
		lib_set_error(c, "reg_mr %p+%zu: out of file descriptors (%s, RLIMIT_NOFILE %llu): "
			      "%s; pinning private memory holds a memfd per run of pages: raise the "
			      "limit (ulimit -n) or register fewer, larger ranges", addr, length,
			      rc == -EMFILE ? "EMFILE" : "ENFILE", (unsigned long long)rl.rlim_cur,
			      why);
		return rc;
	}
	if (rc) {
		lib_set_error(c, "reg_mr %p+%zu: %s", addr, length, why);
		return rc;
	}
	for (unsigned i = 0; i < n; i++) {
		b->req.segs[i].len = segs[i].len;
		b->req.segs[i].fd_offset = segs[i].fd_offset;
		fds[i] = segs[i].fd;
	}
	b->req.nsegs = n;
	return 0;
}

/* A by-address MR is made present at once, as a pin would (and an unmapped part fails
 * the registration with EFAULT, as a pin would). 0 or -errno. */
static int prefetch_all(struct odpemu_pd *pd, const struct lib_mr *mr, int access)
{
	enum odpemu_advise_mr_advice advice = (access & ODPEMU_ACCESS_LOCAL_WRITE) ?
		ODPEMU_ADVISE_MR_ADVICE_PREFETCH_WRITE : ODPEMU_ADVISE_MR_ADVICE_PREFETCH;
	uintptr_t at = (uintptr_t)mr->pub.addr, end = at + mr->pub.length;
	const uint32_t chunk = 1u << 30;

	while (at < end) {
		struct odpemu_sge sge[IPC_MAX_ADVISE_SGE];
		uint32_t n = 0;

		for (; n < IPC_MAX_ADVISE_SGE && at < end; n++) {
			uint32_t len = end - at < chunk ? (uint32_t)(end - at) : chunk;

			sge[n] = (struct odpemu_sge){ at, len, mr->pub.lkey };
			at += len;
		}
		if (odpemu_advise_mr(pd, advice, ODPEMU_ADVISE_MR_FLAG_FLUSH, sge, n))
			return -errno;
	}
	return 0;
}

static struct lib_mr *mr_new(struct odpemu_pd *pd, void *addr, size_t length, int access,
			     const struct ipc_reg_mr_rep *rep)
{
	struct lib_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return NULL;
	mr->pub.context = pd->context;
	mr->pub.pd = pd;
	mr->pub.addr = addr;
	mr->pub.length = length;
	mr->pub.handle = rep->handle;
	mr->pub.lkey = rep->lkey;
	mr->pub.rkey = rep->rkey;
	mr->access = access;
	lib_evc_init(&mr->evc);
	return mr;
}

static int reg(struct lib_context *c, union lib_reg_buf *b, int *fds, struct ipc_reg_mr_rep *rep)
{
	struct lib_call call = {
		.op = IPC_REG_MR, .req = b,
		.req_len = sizeof(b->req) + b->req.nsegs * sizeof(struct ipc_mr_seg),
		.fds = fds, .nfds = b->req.nsegs,
		.rep = rep, .rep_min = sizeof(*rep), .rep_cap = sizeof(*rep),
	};

	return lib_call(c, &call);
}

static struct lib_mr *reg_mr(struct odpemu_pd *pd, void *addr, size_t length, int access,
			     int *err)
{
	struct lib_context *c = lib_ctx(pd->context);
	bool implicit = !addr && length == SIZE_MAX && (access & ODPEMU_ACCESS_ON_DEMAND);
	union lib_reg_buf b;
	struct ipc_reg_mr_rep rep = { 0 };
	struct lib_mr *mr;
	int fds[IPC_MAX_MR_SEGS];

	memset(&b, 0, sizeof(b));
	b.req.va = implicit ? 0 : (uint64_t)(uintptr_t)addr;
	b.req.len = implicit ? UINT64_MAX : (uint64_t)length;
	b.req.access = (uint32_t)access;
	b.req.pd = pd->handle;
	lib_seccomp_route(c, addr, length, implicit);	/* where the userfaultfd cannot */
	*err = (access & ODPEMU_ACCESS_LEASE) ? lib_supervise(pd->context, true) : 0;
	if (!*err && !(access & ODPEMU_ACCESS_ON_DEMAND))
		*err = pin(c, &b, addr, length, access, fds);
	if (!*err)
		*err = reg(c, &b, fds, &rep);
	for (unsigned i = 0; i < b.req.nsegs; i++)
		close(fds[i]);
	if (*err)
		return NULL;
	if (!(mr = mr_new(pd, addr, length, access, &rep))) {
		*err = -ENOMEM;
	} else if ((b.req.flags & IPC_REG_MR_BY_ADDRESS) && (*err = prefetch_all(pd, mr, access))) {
		lib_set_error(c, "reg_mr %p+%zu: part of the range is not mapped", addr, length);
		lib_mr_free(mr);
		mr = NULL;
	}
	if (!mr)
		lib_call_destroy(c, IPC_DEREG_MR, rep.handle);
	return mr;
}

ODPEMU_EXPORT struct odpemu_mr *odpemu_reg_mr(struct odpemu_pd *pd, void *addr, size_t length,
					      int access)
{
	struct lib_context *c;
	struct lib_mr *mr;
	int rc;

	if (!pd || !length || check_access(access) ||
	    (addr && (uintptr_t)addr + length < (uintptr_t)addr)) {
		errno = EINVAL;
		return NULL;
	}
	c = lib_ctx(pd->context);
	mr = reg_mr(pd, addr, length, access, &rc);
	if (mr) {
		pthread_mutex_lock(&c->tab_lock);
		rc = lib_table_add(&c->mrs, mr->pub.handle, mr);
		pthread_mutex_unlock(&c->tab_lock);
		if (rc) {
			lib_call_destroy(c, IPC_DEREG_MR, mr->pub.handle);
			lib_mr_free(mr);
			mr = NULL;
		}
	}
	if (!mr) {
		errno = -rc;
		return NULL;
	}
	return &mr->pub;
}

void lib_mr_free(struct lib_mr *mr)
{
	lib_evc_fini(&mr->evc);
	free(mr);
}

ODPEMU_EXPORT int odpemu_dereg_mr(struct odpemu_mr *pub)
{
	struct lib_mr *mr = (struct lib_mr *)pub;
	struct lib_context *c;
	int rc;

	if (!pub)
		return lib_fail(EINVAL);
	c = lib_ctx(pub->context);
	/* and wait for the MR_DECOHERENCE events still held by the app */
	rc = lib_destroy_tracked(c, IPC_DEREG_MR, &c->mrs, pub->handle, &mr->evc);
	if (rc)
		return lib_fail(-rc);
	lib_mr_free(mr);
	return 0;
}

ODPEMU_EXPORT int odpemu_mr_swap_keys(struct odpemu_mr *pub, struct odpemu_mr *old)
{
	struct ipc_mr_swap_req q = { .other = old ? old->handle : 0 };
	struct ipc_reg_mr_rep rep;
	struct lib_call call = { .op = IPC_MR_SWAP_KEYS, .req = &q, .req_len = sizeof(q),
				 .rep = &rep, .rep_min = sizeof(rep), .rep_cap = sizeof(rep) };
	int rc;

	if (!pub || !old || pub == old || pub->context != old->context)
		return lib_fail(EINVAL);
	call.handle = pub->handle;
	if ((rc = lib_call(lib_ctx(pub->context), &call)))
		return lib_fail(-rc);
	old->lkey = pub->lkey;
	old->rkey = pub->rkey;
	pub->lkey = rep.lkey;
	pub->rkey = rep.rkey;
	return 0;
}

ODPEMU_EXPORT int odpemu_restore_mr(struct odpemu_mr *pub)
{
	struct lib_mr *mr = (struct lib_mr *)pub;
	struct lib_context *c;
	union lib_reg_buf b;
	int fds[IPC_MAX_MR_SEGS], rc;
	struct lib_call call = { .op = IPC_RESTORE_MR, .req = &b };

	if (!pub || !(mr->access & ODPEMU_ACCESS_LEASE))
		return lib_fail(EINVAL);
	c = lib_ctx(pub->context);
	memset(&b, 0, sizeof(b));
	b.req.va = (uint64_t)(uintptr_t)pub->addr;
	b.req.len = pub->length;
	b.req.access = (uint32_t)mr->access;
	b.req.pd = pub->pd->handle;
	/* the pages mapped there now, moved into shared memory as at registration */
	if ((rc = pin(c, &b, pub->addr, pub->length, mr->access, fds)))
		return lib_fail(-rc);
	call.handle = pub->handle;
	call.req_len = sizeof(b.req) + b.req.nsegs * sizeof(struct ipc_mr_seg);
	call.fds = fds;
	call.nfds = b.req.nsegs;
	rc = lib_call(c, &call);
	for (unsigned i = 0; i < b.req.nsegs; i++)
		close(fds[i]);
	return rc ? lib_fail(-rc) : 0;
}

ODPEMU_EXPORT int odpemu_advise_mr(struct odpemu_pd *pd, enum odpemu_advise_mr_advice advice,
				   uint32_t flags, const struct odpemu_sge *sg_list,
				   uint32_t num_sge)
{
	struct ipc_advise_req req;
	struct lib_call call = { .op = IPC_ADVISE_MR, .req = &req, .req_len = sizeof(req) };
	int rc;

	if (!pd || !sg_list || !num_sge || num_sge > IPC_MAX_ADVISE_SGE)
		return lib_fail(EINVAL);
	memset(&req, 0, sizeof(req));
	req.advice = (uint32_t)advice;
	req.flags = flags;
	req.nsge = num_sge;
	for (uint32_t i = 0; i < num_sge; i++) {
		req.sge[i].addr = sg_list[i].addr;
		req.sge[i].length = sg_list[i].length;
		req.sge[i].lkey = sg_list[i].lkey;
	}
	call.handle = pd->handle;
	rc = lib_call(lib_ctx(pd->context), &call);
	return rc ? lib_fail(-rc) : 0;
}
