/* SPDX-License-Identifier: MIT */
/* checks — see checks.h. */
#include "checks.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CTRS 4096

const char *const soak_obj_name[SOAK_NOBJ] = { "sessions", "pds", "mrs", "cqs", "srqs", "qps" };

static bool is_odpemud(pid_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!(f = fopen(path, "r")))
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return !strncmp(comm, "odpemud", 7);
}

pid_t soak_daemon_pid(struct h_env *e, int i)
{
	pid_t pid = e->host[i].pid;
	char path[64];
	FILE *f;
	int child;

	if (pid <= 0 || is_odpemud(pid))
		return pid > 0 ? pid : 0;
	/* a launcher that forked: its child */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fscanf(f, "%d", &child) == 1)
		if (is_odpemud(child)) {
			fclose(f);
			return child;
		}
	fclose(f);
	return 0;
}

static void read_fds(pid_t pid, struct soak_hold *h)
{
	char path[64], link[PATH_MAX];
	struct dirent *d;
	DIR *dir;

	h->fds = h->memfd_fds = -1;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(dir = opendir(path)))
		return;
	h->fds = h->memfd_fds = 0;
	while ((d = readdir(dir))) {
		char fd[64 + sizeof(d->d_name)];
		ssize_t n;

		if (d->d_name[0] == '.')
			continue;
		h->fds++;
		snprintf(fd, sizeof(fd), "%s/%s", path, d->d_name);
		if ((n = readlink(fd, link, sizeof(link) - 1)) > 0) {
			link[n] = 0;
			h->memfd_fds += !strncmp(link, "/memfd:", 7);
		}
	}
	closedir(dir);
}

static void read_maps_status(pid_t pid, struct soak_hold *h)
{
	char path[64], line[1024];
	FILE *f;

	h->memfd_maps = h->rss_kib = -1;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if ((f = fopen(path, "r"))) {
		h->memfd_maps = 0;
		while (fgets(line, sizeof(line), f))
			h->memfd_maps += strstr(line, "/memfd:") != NULL;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r"))) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "VmRSS:", 6))
				h->rss_kib = strtol(line + 6, NULL, 10);
		fclose(f);
	}
}

bool soak_ctrs_read(struct odpemu_context *ctx, struct soak_ctrs *out)
{
	out->n = 0;
	if (!(out->c = calloc(MAX_CTRS, sizeof(*out->c))))
		return false;
	out->n = odpemu_query_counters(ctx, ODPEMU_COUNTERS_DEVICE, 0, out->c, MAX_CTRS);
	if (out->n < 0) {
		fprintf(stderr, "soak: device counters: %s\n", strerror(errno));
		out->n = 0;
		return false;
	}
	return true;
}

uint64_t soak_ctr(const struct soak_ctrs *c, const char *name)
{
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->c[i].name, name))
			return c->c[i].value;
	return 0;
}

void soak_ctrs_free(struct soak_ctrs *c)
{
	free(c->c);
	c->c = NULL;
	c->n = 0;
}

bool soak_hold_read(struct odpemu_context *ctx, pid_t pid, struct soak_hold *h)
{
	struct soak_ctrs c;
	bool ok = soak_ctrs_read(ctx, &c);

	memset(h, 0, sizeof(*h));
	for (int i = 0; i < SOAK_NOBJ; i++)
		h->obj[i] = soak_ctr(&c, soak_obj_name[i]);
	soak_ctrs_free(&c);
	read_fds(pid, h);
	read_maps_status(pid, h);
	return ok;
}

bool soak_hold_same(const struct soak_hold *a, const struct soak_hold *b)
{
	return !memcmp(a->obj, b->obj, sizeof(a->obj)) && a->fds == b->fds &&
	       a->memfd_fds == b->memfd_fds && a->memfd_maps == b->memfd_maps;
}

void soak_hold_str(const struct soak_hold *h, char *buf, size_t len)
{
	int n = 0;

	for (int i = 0; i < SOAK_NOBJ && n >= 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s %llu ", soak_obj_name[i],
			      (unsigned long long)h->obj[i]);
	if (n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "fds %ld memfds %ld (mapped %ld) rss %ld MiB",
			 h->fds, h->memfd_fds, h->memfd_maps, h->rss_kib / 1024);
}
