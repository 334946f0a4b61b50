/* SPDX-License-Identifier: MIT */
/* brick_run — see brick_run.h. */
#include "brick_run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"

#define LISTEN_MS 20000	/* the brick zeroes free blocks and opens its log first */

static const char *brick_path(void)
{
	const char *p = getenv("ODPEMU_BRICK");

	return p ? p : "odpemu-brick";
}

int br_start(struct h_env *e, struct br_brick *b, const char *file, const char *size,
	     const char *mem)
{
	char *out;

	memset(&b->args, 0, sizeof(b->args));
	b->port = cr_port(e);
	cr_push(&b->args, brick_path(), "--file", file, "--size", size, "-a", e->host[1].addr,
		NULL);
	cr_pushf(&b->args, "--port=%u", b->port);
	if (mem)
		cr_push(&b->args, "--mem", mem, NULL);
	if (cr_start(e, 1, &b->args, NULL, &b->proc))
		return -1;
	b->running = true;
	if (tr_wait_for(&b->proc, "listening on", LISTEN_MS))
		return 0;
	br_stop(b, SIGKILL);
	out = tr_output(&b->proc);
	fprintf(stderr, "---- the brick never listened: %s\n%s\n----\n", cr_cmdline(&b->args), out);
	free(out);
	return -1;
}

int br_stop(struct br_brick *b, int sig)
{
	char *out = NULL;
	int code;

	if (!b->running)
		return -1;
	if (sig)
		kill(b->proc.pid, sig);
	code = cr_collect(&b->proc, &b->args, 20, &out);
	if (code != 0 && code != 128 + SIGKILL)
		fprintf(stderr, "---- the brick exited %d: %s\n%s\n----\n", code,
			cr_cmdline(&b->args), out ? out : "");
	free(out);
	b->running = false;
	return code;
}

int br_pid(const struct br_brick *b)
{
	return b->running ? (int)b->proc.pid : -1;
}

static void client_args(struct h_env *e, const struct br_brick *b, const char *const *args,
			struct cr_args *a)
{
	const char *client = getenv("ODPEMU_BRICK_CLIENT");

	memset(a, 0, sizeof(*a));
	cr_push(a, client ? client : "brick-client", e->host[1].addr, NULL);
	cr_pushf(a, "%u", b->port);
	cr_push_list(a, args);
}

int br_client(struct h_env *e, const struct br_brick *b, const char *const *args, char **out,
	      int timeout_s)
{
	struct cr_args a;

	client_args(e, b, args, &a);
	return cr_run(e, 0, &a, NULL, out, timeout_s);
}

int br_client_start(struct h_env *e, const struct br_brick *b, const char *const *args,
		    struct tr_proc *p, struct cr_args *a)
{
	client_args(e, b, args, a);
	return cr_start(e, 0, a, NULL, p);
}

unsigned long br_status_kib(int pid, const char *field)
{
	char path[64], line[256];
	unsigned long kib = 0;
	size_t len = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':') {
			kib = strtoul(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

unsigned long br_mapping_rss_kib(int pid, const char *name)
{
	char path[64], line[512];
	unsigned long kib = 0, v;
	bool in = false;
	size_t len = strlen(name);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *nl = strchr(line, '\n');
		size_t n;

		if (nl)
			*nl = '\0';
		n = strlen(line);
		/* a VMA's first line starts with its range ("start-end perms ... path"); the
		 * others with a field name and a colon */
		if (strchr(line, ' ') && strchr(line, '-') && strchr(line, '-') < strchr(line, ' '))
			in = n >= len && !strcmp(line + n - len, name);
		else if (in && sscanf(line, "Rss: %lu kB", &v) == 1)
			kib += v;
	}
	fclose(f);
	return kib;
}
