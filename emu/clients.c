/* SPDX-License-Identifier: MIT */
/* clients — see clients.h. */
#include "clients.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "check.h"
#include "daemon.h"
#include "log.h"
#include "session.h"

/* Read 8 bytes at addr of pid as the DMA does: 0, -errno, or -EIO for another value. */
static int32_t test_read(pid_t pid, uint64_t addr, uint64_t want)
{
	uint64_t got = 0;
	struct iovec l = { &got, sizeof(got) }, rm = { (void *)(uintptr_t)addr, sizeof(got) };

	errno = 0;	/* a short read sets none */
	if (process_vm_readv(pid, &l, 1, &rm, 1, 0) != (ssize_t)sizeof(got))
		return errno ? -errno : -EIO;
	return got == want ? 0 : -EIO;
}

static void log_unreadable(const struct emu_session *s)
{
	const struct emu_check_result *r = emu_check_find(&s->d->host, "process_vm");

	emu_log(EMU_LOG_WARN, "session %u: pid %d's memory cannot be read (%s): its ODP MRs "
		"and MRs registered by address will fail (mem_read_errors); remedy: %s", s->id,
		(int)s->pid, strerror(-s->process_vm_err),
		r ? r->row->remedy : "ptrace access to the client");
}

int emu_op_client_info(struct emu_req *r)
{
	const struct ipc_client_info_req *q = r->body;
	struct ipc_client_info_rep rep = { 0 };
	struct emu_session *s = r->s;

	EMU_WANT_BODY(r, struct ipc_client_info_req);
	s->info_reported = true;
	s->uffd_features = q->uffd_features;
	s->notifier = q->notifier <= IPC_NOTIFIER_UFFD_AND_SECCOMP ? q->notifier : IPC_NOTIFIER_NONE;
	s->process_vm_err = test_read(s->pid, q->probe_addr, q->probe_value);
	if (s->process_vm_err)
		log_unreadable(s);
	rep.process_vm_err = s->process_vm_err;
	return emu_ctl_reply(s, r->hdr, 0, &rep, sizeof(rep), NULL, 0);
}

/* /proc/PID/comm without its newline; "" when the process is not in our PID namespace. */
static void comm_of(pid_t pid, char out[16])
{
	char path[64];
	ssize_t n = -1;
	int fd;

	memset(out, 0, 16);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (pid > 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, out, 15);
		close(fd);
	}
	if (n > 0 && out[n - 1] == '\n')
		out[n - 1] = '\0';
}

static void record(const struct emu_session *s, struct ipc_client_rec *o)
{
	memset(o, 0, sizeof(*o));
	o->pid = (uint32_t)s->pid;
	o->session = s->id;
	o->uffd_features = s->uffd_features;
	o->process_vm_err = s->process_vm_err;
	o->notifier = s->notifier;
	o->flags = (s->info_reported ? IPC_CLIENT_REPORTED : 0) |
		   (s->uffd >= 0 ? IPC_CLIENT_NOTIFIER : 0) |
		   (s->supervise >= 0 ? IPC_CLIENT_SUPERVISED : 0);
	comm_of(s->pid, o->comm);
}

int emu_op_clients(struct emu_req *r)
{
	const struct ipc_clients_req *q = r->body;
	static struct {
		struct ipc_clients_rep rep;
		struct ipc_client_rec rec[IPC_MAX_CLIENTS];
	} page;		/* 8 KiB: the loop thread's, one request at a time */
	uint32_t index = 0;

	EMU_WANT_BODY(r, struct ipc_clients_req);
	memset(&page.rep, 0, sizeof(page.rep));
	for (const struct emu_session *s = r->s->d->sessions; s; s = s->next) {
		if (s->dead || !s->hello_done || index++ < q->start)
			continue;
		if (page.rep.n == IPC_MAX_CLIENTS) {
			page.rep.more = 1;
			break;
		}
		record(s, &page.rec[page.rep.n++]);
	}
	return emu_ctl_reply(r->s, r->hdr, 0, &page,
			     sizeof(page.rep) + page.rep.n * sizeof(page.rec[0]), NULL, 0);
}
