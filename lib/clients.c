/* SPDX-License-Identifier: MIT */
/*
 * What the client could give its daemon, told once per open (CLIENT_INFO, ipc.h), and the
 * daemon's records of every client (odpemu_query_clients). The report follows HELLO and
 * the tracer declaration (tracer.c), so the daemon's test read of our memory meets the
 * same rules its DMA will.
 */
#include <errno.h>
#include <string.h>

#include "lib_int.h"

/* The word the daemon reads back: any value would do, one that is unlikely by chance. */
static const volatile uint64_t probe_word = 0x6f6470656d752d31ull;	/* "odpemu-1" */

int lib_client_info(struct lib_context *c)
{
	struct ipc_client_info_req req = {
		.uffd_features = c->notifier == IPC_NOTIFIER_UFFD ||
				 c->notifier == IPC_NOTIFIER_UFFD_AND_SECCOMP ? lib_uffd_features() : 0,
		.notifier = c->notifier,
		.probe_addr = (uint64_t)(uintptr_t)&probe_word, .probe_value = probe_word,
	};
	struct ipc_client_info_rep rep;
	struct lib_call call = { .op = IPC_CLIENT_INFO, .req = &req, .req_len = sizeof(req),
		.rep = &rep, .rep_min = sizeof(rep), .rep_cap = sizeof(rep) };
	/* The answer is the daemon's to act on (it logs a failed read with its remedy); a
	 * device whose daemon cannot read us still serves pinned MRs it maps itself. */
	return lib_call(c, &call);
}

struct client_page {
	struct ipc_clients_rep rep;
	struct ipc_client_rec r[IPC_MAX_CLIENTS];
};

static void copy_client(struct odpemu_client_info *o, const struct ipc_client_rec *i)
{
	size_t n = strnlen(i->comm, sizeof(i->comm));

	memset(o, 0, sizeof(*o));
	o->pid = i->pid;
	o->session = i->session;
	o->uffd_features = i->uffd_features;
	o->process_vm_err = i->process_vm_err;
	o->flags = i->flags;
	if (i->notifier == IPC_NOTIFIER_SECCOMP || i->notifier == IPC_NOTIFIER_SECCOMP_RELAYED ||
	    i->notifier == IPC_NOTIFIER_UFFD_AND_SECCOMP)
		o->flags |= ODPEMU_CLIENT_NOTIFIER_SECCOMP;
	memcpy(o->comm, i->comm, n < sizeof(o->comm) ? n : sizeof(o->comm) - 1);
}

ODPEMU_EXPORT int odpemu_query_clients(struct odpemu_context *context,
				       struct odpemu_client_info *out, int max)
{
	struct ipc_clients_req req = { 0 };
	struct client_page page;
	int got = 0;

	if (!context || max < 0 || (max && !out)) {
		errno = EINVAL;
		return -1;
	}
	do {
		struct lib_call call = { .op = IPC_CLIENTS, .req = &req, .req_len = sizeof(req),
			.rep = &page, .rep_min = sizeof(page.rep), .rep_cap = sizeof(page) };
		int rc = lib_call(lib_ctx(context), &call);

		if (!rc && (page.rep.n > IPC_MAX_CLIENTS || call.rep_len != sizeof(page.rep) +
			    page.rep.n * sizeof(struct ipc_client_rec)))
			rc = -EPROTO;
		if (rc) {
			errno = -rc;
			return -1;
		}
		for (uint32_t i = 0; i < page.rep.n && got < max; i++)
			copy_client(&out[got++], &page.r[i]);
		req.start += page.rep.n;
	} while (page.rep.more && page.rep.n && got < max);
	return got;
}
