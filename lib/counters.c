/* SPDX-License-Identifier: MIT */
/* Counters and run-time injection: daemon calls. Counters come in pages of at most
 * IPC_MAX_COUNTERS (one datagram); we ask again from where a page ended while the
 * daemon says there are more and the caller has room. */
#include <string.h>

#include "lib_int.h"

struct ctr_page {
	struct ipc_counters_rep rep;
	struct ipc_counter c[IPC_MAX_COUNTERS];
};

static int scope_of(enum odpemu_counter_scope s, struct ipc_counters_req *req)
{
	switch (s) {
	case ODPEMU_COUNTERS_DEVICE: req->scope = IPC_CTR_DEV; return 0;
	case ODPEMU_COUNTERS_QP: req->scope = IPC_CTR_QP; return 0;
	case ODPEMU_COUNTERS_MR: req->scope = IPC_CTR_MR; return 0;
	case ODPEMU_COUNTERS_ANY_QP: req->scope = IPC_CTR_QP; req->flags = IPC_CTR_ANY; return 0;
	case ODPEMU_COUNTERS_ANY_MR: req->scope = IPC_CTR_MR; req->flags = IPC_CTR_ANY; return 0;
	case ODPEMU_COUNTERS_OBJECTS: req->scope = IPC_CTR_LIST; req->flags = IPC_CTR_ANY; return 0;
	case ODPEMU_COUNTERS_QPS:
		req->scope = IPC_CTR_LIST;
		req->flags = IPC_CTR_ANY | IPC_CTR_ONLY_QPS;
		return 0;
	case ODPEMU_COUNTERS_MRS:
		req->scope = IPC_CTR_LIST;
		req->flags = IPC_CTR_ANY | IPC_CTR_ONLY_MRS;
		return 0;
	default: return -EINVAL;
	}
}

/* One page from index start: 0 or -errno. */
static int fetch(struct lib_context *c, struct ipc_counters_req *req, struct ctr_page *p)
{
	struct lib_call call = {
		.op = IPC_COUNTERS, .req = req, .req_len = sizeof(*req),
		.rep = p, .rep_min = sizeof(p->rep), .rep_cap = sizeof(*p),
	};
	int rc = lib_call(c, &call);

	if (rc)
		return rc;
	if (p->rep.n > IPC_MAX_COUNTERS ||
	    call.rep_len != sizeof(p->rep) + p->rep.n * sizeof(struct ipc_counter))
		return -EPROTO;
	return 0;
}

static void copy_counter(struct odpemu_counter *o, const struct ipc_counter *i)
{
	size_t n = strnlen(i->name, sizeof(i->name));

	if (n >= sizeof(o->name))
		n = sizeof(o->name) - 1;
	memcpy(o->name, i->name, n);
	o->name[n] = '\0';
	o->value = i->value;
}

ODPEMU_EXPORT int odpemu_query_counters(struct odpemu_context *context,
					enum odpemu_counter_scope scope, uint32_t id,
					struct odpemu_counter *out, int max)
{
	struct ipc_counters_req req = { .id = id };
	struct ctr_page page;
	int got = 0, rc;

	if (!context || max < 0 || (max && !out) || scope_of(scope, &req)) {
		errno = EINVAL;
		return -1;
	}
	do {
		rc = fetch(lib_ctx(context), &req, &page);
		if (rc) {
			errno = -rc;
			return -1;
		}
		for (uint32_t i = 0; i < page.rep.n && got < max; i++)
			copy_counter(&out[got++], &page.c[i]);
		req.start += page.rep.n;
	} while (page.rep.more && page.rep.n && got < max);
	return got;
}

ODPEMU_EXPORT int odpemu_get_inject(struct odpemu_context *context, const char *key,
				    char *value, size_t len)
{
	struct ipc_inject_req req, rep;
	struct lib_call call = { .op = IPC_GET_INJECT, .req = &req, .req_len = sizeof(req),
		.rep = &rep, .rep_min = sizeof(rep), .rep_cap = sizeof(rep) };
	size_t n;
	int rc;

	if (!context || !key || !value || !len || strlen(key) >= sizeof(req.key))
		return lib_fail(EINVAL);
	memset(&req, 0, sizeof(req));
	memcpy(req.key, key, strlen(key));
	if ((rc = lib_call(lib_ctx(context), &call)))
		return lib_fail(-rc);
	n = strnlen(rep.value, sizeof(rep.value));
	if (n >= len)
		return lib_fail(ENOSPC);
	memcpy(value, rep.value, n);
	value[n] = '\0';
	return 0;
}

ODPEMU_EXPORT int odpemu_set_inject(struct odpemu_context *context, const char *key,
				    const char *value)
{
	struct ipc_inject_req req;
	struct lib_call call = { .op = IPC_INJECT, .req = &req, .req_len = sizeof(req) };
	int rc;

	if (!context || !key || !value || strlen(key) >= sizeof(req.key) ||
	    strlen(value) >= sizeof(req.value))
		return lib_fail(EINVAL);
	memset(&req, 0, sizeof(req));
	memcpy(req.key, key, strlen(key));
	memcpy(req.value, value, strlen(value));
	rc = lib_call(lib_ctx(context), &call);
	return rc ? lib_fail(-rc) : 0;
}
