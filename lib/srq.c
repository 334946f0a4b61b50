/* SPDX-License-Identifier: MIT */
/* Shared receive queues: a ring of receive WQEs the library produces (post.c) and the
 * daemon consumes for every QP attached to it. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lib_int.h"

void lib_wq_init(struct lib_wq *wq, uint32_t depth, uint32_t max_sge, uint32_t max_inline)
{
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	wq->depth = depth;
	wq->max_sge = max_sge;
	wq->max_inline = max_inline;
}

/* The ring is a power of two at least the granted depth; a queue takes no more WQEs than
 * it was granted (ENOMEM beyond, as the kernel's providers answer a full queue: rdma-core's
 * full_rq_bad_flow posts max_recv_wr + 1). */
bool lib_wq_room(struct lib_wq *wq)
{
	uint32_t cons = atomic_load_explicit(&wq->ring.hdr->cons, memory_order_acquire);

	return wq->ring.head - cons < wq->depth;
}

/* srq->attr holds the granted sizes. */
int lib_srq_attach(struct lib_srq *srq, void *map, size_t map_len)
{
	int rc = lib_ring_attach(&srq->wq.ring, map, map_len, 0, ipc_pow2(srq->attr.max_wr),
				 ipc_rq_slot(srq->attr.max_sge));

	if (rc)
		return rc;
	lib_wq_init(&srq->wq, srq->attr.max_wr, srq->attr.max_sge, 0);
	lib_evc_init(&srq->evc);
	srq->map = map;
	srq->map_len = map_len;
	return 0;
}

void lib_srq_free(struct lib_srq *srq)
{
	if (srq->map) {
		pthread_spin_destroy(&srq->wq.lock);
		lib_evc_fini(&srq->evc);
		munmap(srq->map, srq->map_len);
	}
	free(srq);
}

static int create(struct lib_context *c, struct odpemu_pd *pd, const struct odpemu_srq_attr *a,
		  struct ipc_create_srq_rep *rep, void **map)
{
	struct ipc_create_srq_req req = {
		.pd = pd->handle, .max_wr = a->max_wr, .max_sge = a->max_sge,
		.srq_limit = a->srq_limit,
	};

	return lib_call_ring(c, IPC_CREATE_SRQ, IPC_DESTROY_SRQ, &req, sizeof(req), rep,
			     sizeof(*rep), &rep->handle, &rep->map_len, map);
}

static struct lib_srq *srq_new(struct lib_context *c, const struct ipc_create_srq_rep *rep,
			       uint32_t limit, void *map, int *err)
{
	struct lib_srq *srq = calloc(1, sizeof(*srq));

	if (!srq) {
		munmap(map, rep->map_len);
		*err = -ENOMEM;
		return NULL;
	}
	srq->attr = (struct odpemu_srq_attr){ rep->max_wr, rep->max_sge, limit };
	*err = lib_srq_attach(srq, map, rep->map_len);
	if (!*err)
		return srq;
	lib_set_error(c, "create_srq: the daemon's ring layout differs from the library's");
	free(srq);
	munmap(map, rep->map_len);
	return NULL;
}

ODPEMU_EXPORT struct odpemu_srq *odpemu_create_srq(struct odpemu_pd *pd,
						   struct odpemu_srq_init_attr *init)
{
	struct ipc_create_srq_rep rep;
	struct lib_context *c;
	struct lib_srq *srq;
	void *map;
	int rc;

	if (!pd || !init || !init->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	c = lib_ctx(pd->context);
	rc = create(c, pd, &init->attr, &rep, &map);
	if (rc || !(srq = srq_new(c, &rep, init->attr.srq_limit, map, &rc))) {
		if (!rc)
			lib_call_destroy(c, IPC_DESTROY_SRQ, rep.handle);
		errno = -rc;
		return NULL;
	}
	srq->pub.context = pd->context;
	srq->pub.srq_context = init->srq_context;
	srq->pub.pd = pd;
	srq->pub.handle = rep.handle;
	srq->pub.priv = srq;
	pthread_mutex_lock(&c->tab_lock);
	rc = lib_table_add(&c->srqs, rep.handle, srq);
	pthread_mutex_unlock(&c->tab_lock);
	if (rc) {
		lib_call_destroy(c, IPC_DESTROY_SRQ, rep.handle);
		lib_srq_free(srq);
		errno = -rc;
		return NULL;
	}
	init->attr.max_wr = rep.max_wr;		/* granted, as ibv_create_srq reports */
	init->attr.max_sge = rep.max_sge;
	return &srq->pub;
}

ODPEMU_EXPORT int odpemu_modify_srq(struct odpemu_srq *pub, struct odpemu_srq_attr *attr, int mask)
{
	struct lib_srq *srq = (struct lib_srq *)pub;
	struct ipc_modify_srq_req req = { 0 };
	struct lib_call call = { .op = IPC_MODIFY_SRQ, .req = &req, .req_len = sizeof(req) };
	struct lib_context *c;
	int rc;

	if (!pub || !attr || mask != ODPEMU_SRQ_LIMIT) {
		if (pub && (mask & ODPEMU_SRQ_MAX_WR))
			lib_set_error(lib_ctx(pub->context), "modify_srq: resizing an SRQ is not "
				      "supported (ODPEMU_SRQ_LIMIT only)");
		return lib_fail(EINVAL);
	}
	req.srq_limit = attr->srq_limit;
	call.handle = pub->handle;
	c = lib_ctx(pub->context);
	rc = lib_call(c, &call);
	if (rc)
		return lib_fail(-rc);
	pthread_mutex_lock(&c->tab_lock);
	srq->attr.srq_limit = attr->srq_limit;
	pthread_mutex_unlock(&c->tab_lock);
	return 0;
}

/* Local: the sizes granted at creation and the limit armed (0 once SRQ_LIMIT_REACHED
 * was read: the limit disarms when it fires). Guarded by tab_lock, as events.c clears
 * it. */
ODPEMU_EXPORT int odpemu_query_srq(struct odpemu_srq *pub, struct odpemu_srq_attr *attr)
{
	struct lib_context *c;

	if (!pub || !attr)
		return lib_fail(EINVAL);
	c = lib_ctx(pub->context);
	pthread_mutex_lock(&c->tab_lock);
	*attr = ((struct lib_srq *)pub)->attr;
	pthread_mutex_unlock(&c->tab_lock);
	return 0;
}

ODPEMU_EXPORT int odpemu_destroy_srq(struct odpemu_srq *pub)
{
	struct lib_srq *srq = (struct lib_srq *)pub;
	struct lib_context *c;
	int rc;

	if (!pub)
		return lib_fail(EINVAL);
	c = lib_ctx(pub->context);
	rc = lib_destroy_tracked(c, IPC_DESTROY_SRQ, &c->srqs, pub->handle, &srq->evc);
	if (rc)
		return lib_fail(-rc);
	lib_srq_free(srq);
	return 0;
}
