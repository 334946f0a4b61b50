/* SPDX-License-Identifier: MIT */
/* odpemu-ctl stat clients — the processes that have a device open and what each could give
 * its daemon when it opened it (odpemu_query_clients): its userfaultfd's features (the
 * notifier: invalidations), whether the daemon can read its memory (ODP MRs, MRs by
 * address; Yama and ptrace rules), its seccomp listener (watches, leases). */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "json.h"
#include "odpemu/odpemu.h"

#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM (1 << 12)	/* Linux 5.19 */
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1ull << 15)		/* Linux 6.7 */
#endif

#define MAX_CLIENTS 4096

/* The features libodpemu asks for, by the names the kernel's header gives them. */
static void feature_names(uint64_t f, char *out, size_t len)
{
	static const struct { uint64_t bit; const char *name; } names[] = {
		{ UFFD_FEATURE_EVENT_UNMAP, "unmap" }, { UFFD_FEATURE_EVENT_REMOVE, "remove" },
		{ UFFD_FEATURE_EVENT_REMAP, "remap" },
		{ UFFD_FEATURE_WP_HUGETLBFS_SHMEM, "wp_shmem" },
		{ UFFD_FEATURE_WP_ASYNC, "wp_async" },
	};
	size_t at = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]) && at < len; i++)
		if (f & names[i].bit)
			at += (size_t)snprintf(out + at, len - at, "%s%s", at ? "," : "",
					       names[i].name);
	if (!at)
		snprintf(out, len, "none");
}

/* How its mapping changes reach the daemon (docs/emu.md, "MMU notifier"). */
static const char *route(const struct odpemu_client_info *c)
{
	if (c->flags & ODPEMU_CLIENT_NOTIFIER)
		return "userfaultfd";
	return c->flags & ODPEMU_CLIENT_NOTIFIER_SECCOMP ? "seccomp" : "none";
}

static void print_one(const struct odpemu_client_info *c)
{
	char feats[96];

	feature_names(c->uffd_features, feats, sizeof(feats));
	printf("  pid %u (%s) session %u\n", c->pid, c->comm[0] ? c->comm : "?", c->session);
	if (!(c->flags & ODPEMU_CLIENT_REPORTED)) {
		printf("    reported nothing (it has not finished opening)\n");
		return;
	}
	if (c->flags & ODPEMU_CLIENT_NOTIFIER_SECCOMP)
		printf("    notifier     on, by the seccomp route (no userfaultfd)\n");
	else
		printf("    notifier     %s (userfaultfd: %s)\n",
		       c->flags & ODPEMU_CLIENT_NOTIFIER ? "on" : "off", feats);
	if (c->process_vm_err)
		printf("    memory       NOT readable by the daemon (%s): its ODP MRs fail\n",
		       strerror(-c->process_vm_err));
	else
		printf("    memory       readable by the daemon\n");
	printf("    seccomp      %s\n", c->flags & ODPEMU_CLIENT_SUPERVISED ?
	       "listener held (watches, leases)" : "no listener (no watch or lease yet)");
}

static void json_one(struct jw *w, const struct odpemu_client_info *c)
{
	char feats[96];

	feature_names(c->uffd_features, feats, sizeof(feats));
	jw_obj(w, NULL);
	jw_u64(w, "pid", c->pid);
	jw_str(w, "comm", c->comm);
	jw_u64(w, "session", c->session);
	jw_bool(w, "reported", c->flags & ODPEMU_CLIENT_REPORTED);
	jw_bool(w, "notifier", c->flags & (ODPEMU_CLIENT_NOTIFIER | ODPEMU_CLIENT_NOTIFIER_SECCOMP));
	jw_str(w, "notifier_route", route(c));
	jw_str(w, "userfaultfd", feats);
	jw_bool(w, "memory_readable", (c->flags & ODPEMU_CLIENT_REPORTED) && !c->process_vm_err);
	jw_i64(w, "process_vm_err", c->process_vm_err);
	jw_bool(w, "seccomp_listener", c->flags & ODPEMU_CLIENT_SUPERVISED);
	jw_end(w);
}

int ctl_stat_clients(struct odpemu_context *ctx, const char *name, struct jw *w)
{
	struct odpemu_client_info *list = calloc(MAX_CLIENTS, sizeof(*list));
	int n = list ? odpemu_query_clients(ctx, list, MAX_CLIENTS) : -1;

	if (n < 0) {
		fprintf(stderr, "%s: cannot list the clients of %s: %s\n", CTL_PROG, name,
			strerror(list ? errno : ENOMEM));
		free(list);
		return 1;
	}
	if (w) {
		jw_obj(w, NULL);
		jw_str(w, "name", name);
		jw_arr(w, "clients");
		for (int i = 0; i < n; i++)
			json_one(w, &list[i]);
		jw_end(w);
		jw_end(w);
	} else {
		printf("dev %s: %d client%s (this odpemu-ctl among them)\n", name, n,
		       n == 1 ? "" : "s");
		for (int i = 0; i < n; i++)
			print_one(&list[i]);
	}
	free(list);
	return 0;
}
