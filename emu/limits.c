/* SPDX-License-Identifier: MIT */
/* limits — see limits.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon.h"
#include "limits.h"
#include "log.h"
#include "maps.h"
#include "nic.h"
#include "session.h"

/* The device limit, its name and what it counts. */
static unsigned device_limit(const struct nic_device_attr *a, enum emu_limit l,
			     const char **name, const char **what)
{
	switch (l) {
	case EMU_LIMIT_QP: *name = "max_qp"; *what = "QPs"; return (unsigned)a->max_qp;
	case EMU_LIMIT_MR: *name = "max_mr"; *what = "MRs"; return (unsigned)a->max_mr;
	case EMU_LIMIT_CQ: *name = "max_cq"; *what = "CQs"; return (unsigned)a->max_cq;
	case EMU_LIMIT_PD: *name = "max_pd"; *what = "PDs"; return (unsigned)a->max_pd;
	case EMU_LIMIT_SRQ: *name = "max_srq"; *what = "SRQs"; return (unsigned)a->max_srq;
	case EMU_LIMIT_MW: *name = "max_mw"; *what = "memory windows"; return (unsigned)a->max_mw;
	default: *name = "handles per session"; *what = "objects in this session";
		 return IPC_DB_HANDLES - 1;
	}
}

static void log_once(struct emu_req *r, enum emu_limit l, const char *msg)
{
	if (r->s->limits_logged & (1u << l))
		return;
	r->s->limits_logged |= 1u << l;
	emu_log(EMU_LOG_WARN, "session %u (pid %d): %s (said once per session)", r->s->id,
		(int)r->s->pid, msg);
}

int emu_reply_limit(struct emu_req *r, const char *op, enum emu_limit l)
{
	const char *name, *what;
	unsigned n = device_limit(nic_attr(r->s->d->nic), l, &name, &what);
	char msg[200];

	if (l == EMU_LIMIT_HANDLES)
		snprintf(msg, sizeof(msg), "%s: %s", op, emu_obj_new_why(r->s));
	else
		snprintf(msg, sizeof(msg), "%s: the device has %s = %u %s already: destroy some "
			 "first (odpemu-ctl devinfo -v lists the limits)", op, name, n, what);
	log_once(r, l, msg);
	return emu_reply_err(r, -ENOMEM, "%s", msg);
}

int emu_reply_no_obj(struct emu_req *r, const char *op)
{
	if (r->s->tab->nobjs >= IPC_DB_HANDLES)
		return emu_reply_limit(r, op, EMU_LIMIT_HANDLES);
	return emu_reply_err(r, -ENOMEM, "%s: the daemon is out of memory", op);
}

int emu_reply_nic(struct emu_req *r, const char *op, int err, enum emu_limit l,
		  const char *why)
{
	if (err == -ENOSPC)
		return emu_reply_limit(r, op, l);
	return emu_reply_err(r, err, "%s: %s", op, why ? why : strerror(-err));
}

/* How many VMAs the daemon has: 0 if unknown. Only on a failure, so the cost does not
 * matter; the text (ipc/maps.c) rather than PROCMAP_QUERY, being the cheaper for every
 * VMA. The reader's state (12 KiB) is on the stack, not from malloc: this runs on the
 * loop thread (the main thread's stack) when memory may be short. */
static long count_vmas(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	struct ipc_maps m;
	struct ipc_vma v;
	long n = 0;
	int rc;

	if (fd < 0)
		return 0;
	m.text = true;
	ipc_maps_begin(&m, fd, 0, UINT64_MAX);
	while ((rc = ipc_maps_next(&m, &v)) > 0)
		n++;
	close(fd);
	return rc < 0 ? 0 : n;
}

/* How many mappings the daemon has, and the most it may have; 0 if unknown. */
static long count_maps(long *max)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");

	*max = 0;
	if (f) {
		if (fscanf(f, "%ld", max) != 1)
			*max = 0;
		fclose(f);
	}
	return count_vmas();
}

int emu_reply_host_err(struct emu_req *r, const char *op, const char *what, int err)
{
	char msg[200];
	struct rlimit rl;
	long max, n;

	if (err == -ENOMEM && (n = count_maps(&max)) && max && n + 16 >= max) {
		snprintf(msg, sizeof(msg), "%s: %s: the daemon has %ld memory mappings, "
			 "vm.max_map_count is %ld (one per ring and per pinned MR): raise it "
			 "(sysctl vm.max_map_count)", op, what, n, max);
		log_once(r, EMU_LIMIT_MAPS, msg);
		return emu_reply_err(r, -ENOMEM, "%s", msg);
	}
	if ((err == -EMFILE || err == -ENFILE) && !getrlimit(RLIMIT_NOFILE, &rl)) {
		snprintf(msg, sizeof(msg), "%s: %s: the daemon is out of file descriptors (%s, "
			 "RLIMIT_NOFILE %llu): raise its limit (ulimit -n, LimitNOFILE=)", op,
			 what, err == -EMFILE ? "EMFILE" : "ENFILE: the system's fs.file-max",
			 (unsigned long long)rl.rlim_cur);
		log_once(r, EMU_LIMIT_FILES, msg);
		return emu_reply_err(r, -ENOMEM, "%s", msg);
	}
	return emu_reply_err(r, err, "%s: %s: %s", op, what, strerror(-err));
}
