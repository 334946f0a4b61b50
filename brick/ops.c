/* SPDX-License-Identifier: MIT */
/*
 * ops — odpemu-brick's answers to the five calls of BRICK.md, plus HELLO and STAT
 * (docs/brick.md "Wire protocol"). Every answer that changes the allocation map is
 * durable before it is sent (meta.c fdatasyncs its log); a map's handle is an ODP MR of
 * the initiator's own PD, so revoking it is deregistering it: the key stops matching at
 * once and a remote access gets REM_ACCESS_ERR.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "odpemu/verbs_ext.h"
#include "server.h"

static bool aligned(uint64_t addr)
{
	return addr % BRICK_BLOCK == 0;
}

static struct brick_mapping *find_map(struct brick_initiator *in, uint64_t addr)
{
	for (uint32_t i = 0; i < in->nmaps; i++)
		if (in->maps[i].addr == addr)
			return &in->maps[i];
	return NULL;
}

/* Deregister the handle (revocation) and let the block go to the slower tier. */
static void drop_map(struct brick_initiator *in, struct brick_mapping *m)
{
	struct brick_server *s = in->srv;

	if (ibv_dereg_mr(m->mr))
		brick_log(s, "dereg of block 0x%llx's MR failed: %s",
			  (unsigned long long)m->addr, strerror(errno));
	brick_store_release(s->store, m->slot);
	*m = in->maps[--in->nmaps];
}

void brick_unmap_all(struct brick_initiator *in)
{
	while (in->nmaps)
		drop_map(in, &in->maps[in->nmaps - 1]);
	free(in->maps);
	in->maps = NULL;
	in->capmaps = 0;
}

/* ---- HELLO: the version and the brick's shape ---- */

static enum brick_status op_hello(struct brick_initiator *in, const struct brick_req *q,
				  struct brick_reply *r)
{
	if (q->u.hello.min_version > BRICK_WIRE_VERSION ||
	    q->u.hello.max_version < BRICK_WIRE_VERSION ||
	    q->u.hello.min_version > q->u.hello.max_version)
		return BRICK_EVERSION;
	r->u.hello.version = BRICK_WIRE_VERSION;
	r->u.hello.max_msg = BRICK_MSG_MAX;
	r->u.hello.credits = BRICK_CREDITS;
	r->u.hello.block_size = BRICK_BLOCK;
	r->u.hello.slots = brick_store_slots(in->srv->store);
	return BRICK_OK;
}

/* ---- ALLOC and FREE ---- */

static enum brick_status from_errno(int rc)
{
	switch (rc) {
	case 0: return BRICK_OK;
	case -EINVAL: return BRICK_EALIGN;
	case -EEXIST: return BRICK_EEXIST;
	case -ENOSPC: return BRICK_ENOSPC;
	case -ENOENT: return BRICK_ENOENT;
	case -ENOMEM: return BRICK_ENOMEM;
	default: return BRICK_EIO;
	}
}

/* A free slot is all zeros (FREE punches it, and the brick punches every free slot when
 * it starts, covering a kill between FREE's log record and its punch), so ALLOC only
 * records the block. */
static enum brick_status op_alloc(struct brick_initiator *in, const struct brick_req *q,
				  struct brick_reply *r)
{
	uint64_t slot;
	int rc = brick_meta_alloc(in->srv->meta, q->u.block.addr, &slot);

	(void)r;
	if (!rc)
		brick_log(in->srv, "alloc 0x%llx -> slot %llu",
			  (unsigned long long)q->u.block.addr, (unsigned long long)slot);
	return from_errno(rc);
}

/* Every initiator's handle on the block is revoked before the block is freed. */
static void revoke_block(struct brick_server *s, uint64_t addr)
{
	for (struct brick_initiator *in = s->initiators; in; in = in->next) {
		struct brick_mapping *m = find_map(in, addr);

		if (m)
			drop_map(in, m);
	}
}

static enum brick_status op_free(struct brick_initiator *in, const struct brick_req *q,
				 struct brick_reply *r)
{
	struct brick_server *s = in->srv;
	uint64_t slot;
	int rc;

	(void)r;
	if (!aligned(q->u.block.addr))
		return BRICK_EALIGN;
	if ((rc = brick_meta_lookup(s->meta, q->u.block.addr, &slot)))
		return from_errno(rc);
	revoke_block(s, q->u.block.addr);
	if ((rc = brick_meta_free(s->meta, q->u.block.addr, &slot)))
		return from_errno(rc);
	if ((rc = brick_store_discard(s->store, slot)))
		brick_log(s, "punching slot %llu failed: %s (zeroed at the next start)",
			  (unsigned long long)slot, strerror(-rc));
	return BRICK_OK;
}

/* ---- MAP and UNMAP ---- */

/* BRICK.md's sharing: an RW map excludes every other map of the block unless both ask
 * SHARED; RO maps share freely. */
static bool conflicts(struct brick_server *s, uint64_t addr, uint32_t flags)
{
	for (struct brick_initiator *in = s->initiators; in; in = in->next) {
		struct brick_mapping *m = find_map(in, addr);

		if (m && ((m->flags | flags) & BRICK_MAP_RW) &&
		    !(m->flags & flags & BRICK_MAP_SHARED))
			return true;
	}
	return false;
}

static int mr_access(const struct brick_initiator *in, uint32_t flags)
{
	int access = IBV_ACCESS_REMOTE_READ;

	if (flags & BRICK_MAP_RW) {
		access |= IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
		if (in->caps.flush)
			access |= IBV_ACCESS_FLUSH_GLOBAL | IBV_ACCESS_FLUSH_PERSISTENT;
	}
	if (in->caps.odp)
		access |= IBV_ACCESS_ON_DEMAND;
	return access;
}

/* The block enters the memory tier before its handle goes out: room is made under the
 * budget, then the NIC is asked to fault it in through the brick's own MR over the file
 * (ODP prefetch, synchronous). The handle's MR faults on its first access, cheaply: the
 * pages are in memory. A device without ODP has no such MR: its handles are pinned MRs. */
static void bring_in(struct brick_initiator *in, void *block, uint32_t flags)
{
	struct ibv_mr *store = in->dev->store_mr;
	struct ibv_sge sge = { .addr = (uintptr_t)block, .length = (uint32_t)BRICK_BLOCK,
		.lkey = store ? store->lkey : 0 };

	if (store && ibv_advise_mr(in->dev->pd, (flags & BRICK_MAP_RW) ?
				   IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE : IBV_ADVISE_MR_ADVICE_PREFETCH,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1))
		brick_log(in->srv, "prefetch of a block failed: %s", strerror(errno));
}

static bool grow_maps(struct brick_initiator *in)
{
	uint32_t cap = in->capmaps ? 2 * in->capmaps : 16;
	struct brick_mapping *m;

	if (in->nmaps < in->capmaps)
		return true;
	if (!(m = realloc(in->maps, cap * sizeof(*m))))
		return false;
	in->maps = m;
	in->capmaps = cap;
	return true;
}

static enum brick_status op_map(struct brick_initiator *in, const struct brick_req *q,
				struct brick_reply *r)
{
	struct brick_server *s = in->srv;
	uint64_t addr = q->u.map.addr, slot;
	struct brick_mapping *m;
	struct ibv_mr *mr;
	int rc;

	if (!aligned(addr))
		return BRICK_EALIGN;
	if ((rc = brick_meta_lookup(s->meta, addr, &slot)))
		return from_errno(rc);
	if (find_map(in, addr) || conflicts(s, addr, q->u.map.flags))
		return BRICK_EBUSY;
	if (!grow_maps(in))
		return BRICK_ENOMEM;
	(void)brick_store_enforce(s->store, BRICK_BLOCK);
	mr = ibv_reg_mr(in->pd, brick_store_block(s->store, slot), BRICK_BLOCK,
			mr_access(in, q->u.map.flags));
	if (!mr) {
		brick_log(s, "registering block 0x%llx failed: %s", (unsigned long long)addr,
			  strerror(errno));
		return BRICK_ENOMEM;
	}
	brick_log(s, "map 0x%llx (slot %llu, flags 0x%x): rkey 0x%x, access 0x%x",
		  (unsigned long long)addr, (unsigned long long)slot, q->u.map.flags, mr->rkey,
		  mr_access(in, q->u.map.flags));
	brick_store_pin(s->store, slot);
	bring_in(in, mr->addr, q->u.map.flags);
	m = &in->maps[in->nmaps++];
	*m = (struct brick_mapping){ .addr = addr, .slot = slot, .flags = q->u.map.flags,
		.mr = mr };
	r->u.map = (struct brick_handle){ .addr = (uintptr_t)mr->addr, .rkey = mr->rkey,
		.length = BRICK_BLOCK };
	return BRICK_OK;
}

static enum brick_status op_unmap(struct brick_initiator *in, const struct brick_req *q,
				  struct brick_reply *r)
{
	struct brick_mapping *m;

	(void)r;
	if (!aligned(q->u.block.addr))
		return BRICK_EALIGN;
	if (!(m = find_map(in, q->u.block.addr)))
		return BRICK_ENOTMAPPED;
	drop_map(in, m);
	(void)brick_store_enforce(in->srv->store, 0);
	return BRICK_OK;
}

/* ---- LIST ---- */

static enum brick_status op_list(struct brick_initiator *in, const struct brick_req *q,
				 struct brick_reply *r, struct brick_extent *ext)
{
	r->u.list.ext = ext;
	r->u.list.count = brick_meta_extents(in->srv->meta, q->u.list.from, ext, q->u.list.max,
					     &r->u.list.next);
	return BRICK_OK;
}

/* ---- STAT ---- */

/* The device's counter `name`, through odpemu's libibverbs (odpemu/verbs_ext.h) when it
 * is the library in use; 0 on others, which have no such call (docs/brick.md). */
static uint64_t device_counter(struct ibv_context *ctx, const char *name)
{
	static odpemu_ibv_query_counters_fn query;
	static bool looked;
	struct odpemu_ibv_counter c[128];
	int n;

	if (!looked) {
		*(void **)&query = dlsym(RTLD_DEFAULT, "odpemu_ibv_query_counters");
		looked = true;
	}
	if (!query || !ctx || (n = query(ctx, c, 128)) < 0)
		return 0;
	for (int i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return c[i].value;
	return 0;
}

static unsigned count_initiators(const struct brick_server *s)
{
	unsigned n = 0;

	for (const struct brick_initiator *in = s->initiators; in; in = in->next)
		n++;
	return n;
}

static enum brick_status op_stat(struct brick_initiator *in, const struct brick_req *q,
				 struct brick_reply *r)
{
	struct brick_server *s = in->srv;
	struct ibv_context *ctx = in->id->verbs;
	struct brick_store_stats st;
	uint64_t *v = r->u.stat;

	(void)q;
	brick_store_stats(s->store, &st);
	v[BRICK_STAT_slots] = st.slots;
	v[BRICK_STAT_blocks_allocated] = brick_meta_count(s->meta);
	v[BRICK_STAT_blocks_mapped] = st.pinned_blocks;
	v[BRICK_STAT_blocks_in_memory] = st.resident_blocks;
	v[BRICK_STAT_blocks_on_file] = brick_meta_count(s->meta) > st.resident_blocks ?
		brick_meta_count(s->meta) - st.resident_blocks : 0;
	v[BRICK_STAT_resident_bytes] = st.resident_bytes;
	v[BRICK_STAT_mem_budget] = s->opt.mem;
	v[BRICK_STAT_evictions] = st.evictions;
	v[BRICK_STAT_written_back_bytes] = st.written_back_bytes;
	v[BRICK_STAT_page_faults] = device_counter(ctx, "page_faults");
	v[BRICK_STAT_invalidations] = device_counter(ctx, "page_invalidations");
	v[BRICK_STAT_prefetches] = device_counter(ctx, "page_prefetch");
	v[BRICK_STAT_flushes] = device_counter(ctx, "flush_persist_syncs") +
		device_counter(ctx, "flush_persist_volatile");
	v[BRICK_STAT_flush_ns_total] = device_counter(ctx, "flush_persist_ns");
	v[BRICK_STAT_initiators] = count_initiators(s);
	v[BRICK_STAT_requests] = s->requests;
	v[BRICK_STAT_bad_requests] = s->bad_requests;
	return BRICK_OK;
}

/* ---- dispatch ---- */

static enum brick_status dispatch(struct brick_initiator *in, const struct brick_req *q,
				  struct brick_reply *r, struct brick_extent *ext)
{
	switch (q->op) {
	case BRICK_OP_HELLO: return op_hello(in, q, r);
	case BRICK_OP_ALLOC: return op_alloc(in, q, r);
	case BRICK_OP_FREE: return op_free(in, q, r);
	case BRICK_OP_MAP: return op_map(in, q, r);
	case BRICK_OP_UNMAP: return op_unmap(in, q, r);
	case BRICK_OP_LIST: return op_list(in, q, r, ext);
	case BRICK_OP_STAT: return op_stat(in, q, r);
	default: return BRICK_EBADOP;
	}
}

int brick_answer(struct brick_initiator *in, const void *req, uint32_t len, void *reply)
{
	struct brick_extent ext[BRICK_LIST_MAX];
	struct brick_req q;
	struct brick_reply r = { 0 };
	enum brick_status st = brick_wire_decode_req(req, len, &q);
	int n;

	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	in->srv->requests++;
	if (st == BRICK_OK)
		st = dispatch(in, &q, &r, ext);
	else
		in->srv->bad_requests++;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	brick_log(in->srv, "%s: %s in %.0f us", brick_op_str(q.op), brick_status_str(st),
		  (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3);
	r.op = q.op;
	r.tag = q.tag;
	r.status = st;
	if ((n = brick_wire_encode_reply(&r, reply, BRICK_MSG_MAX)) < 0) {
		/* an op decode let through but encode refuses: answer it as malformed */
		r = (struct brick_reply){ .op = 0, .tag = q.tag, .status = BRICK_EPROTO };
		n = brick_wire_encode_reply(&r, reply, BRICK_MSG_MAX);
	}
	return n;
}
