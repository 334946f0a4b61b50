/* SPDX-License-Identifier: MIT */
/*
 * fault_files — the /proc/PID/maps and pagemap of up to FILES_CACHED clients, kept open by
 * a resolver across jobs (fault_int.h struct client_files): opening /proc/PID/maps costs
 * more than resolving a job with PROCMAP_QUERY. The least recently used goes first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "fault_int.h"

static void files_close(struct client_files *c)
{
	if (c->maps_fd >= 0)
		close(c->maps_fd);
	if (c->pagemap_fd >= 0)
		close(c->pagemap_fd);
	*c = (struct client_files){ .maps_fd = -1, .pagemap_fd = -1 };
}

static int open_proc(pid_t pid, const char *what)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* The job's client's cached files, taking the least recently used slot for a new one. */
static struct client_files *files_of(struct resolver *rs, const struct emu_fault_job *job)
{
	struct client_files *lru = &rs->files[0];

	rs->tick++;
	for (unsigned i = 0; i < FILES_CACHED; i++) {
		struct client_files *c = &rs->files[i];

		if (c->pid && c->pid == job->pid && c->client == job->client) {
			c->used = rs->tick;
			return c;
		}
		if (c->used < lru->used)
			lru = c;
	}
	if (lru->pid)
		files_close(lru);
	*lru = (struct client_files){ .client = job->client, .pid = job->pid, .maps_fd = -1,
		.pagemap_fd = -1, .used = rs->tick };
	return lru;
}

int fault_files_fd(struct resolver *rs, const struct emu_fault_job *job, bool pagemap)
{
	struct client_files *c;
	int given = pagemap ? job->pagemap_fd : job->maps_fd, *fd;

	if (given >= 0)
		return given;
	c = files_of(rs, job);
	fd = pagemap ? &c->pagemap_fd : &c->maps_fd;
	if (*fd < 0)
		*fd = open_proc(job->pid, pagemap ? "pagemap" : "maps");
	return *fd;
}

void fault_files_forget(struct resolver *rs, const uint32_t *gone, unsigned n, bool all)
{
	for (unsigned i = 0; i < FILES_CACHED; i++) {
		struct client_files *c = &rs->files[i];
		bool drop = all;

		for (unsigned k = 0; k < n && !drop && c->pid; k++)
			drop = c->client == gone[k];
		if (c->pid && drop)
			files_close(c);
	}
}
