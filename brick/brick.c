/* SPDX-License-Identifier: MIT */
/*
 * odpemu-brick — the RDMA passive-target storage brick (docs/brick.md): 2 MiB blocks of
 * a backing file exported over RDMA, a memory budget kept by tiering through ODP, an
 * allocation map that survives kill -9. This file: the command line and start-up.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

static const char usage[] =
	"usage: odpemu-brick --file PATH [options]\n"
	"  -f, --file PATH        backing file of 2 MiB blocks (created when missing)\n"
	"  -s, --size BYTES       make the file this big (k/M/G/T suffixes; a multiple of 2M;\n"
	"                         default: the file's size)\n"
	"  -m, --mem BYTES        memory budget: cold blocks are written back and dropped\n"
	"                         beyond it (default: no budget)\n"
	"      --meta PATH        allocation log (default: FILE.meta)\n"
	"  -a, --addr ADDR        address to listen on (default: any)\n"
	"  -p, --port PORT        rdma_cm port (default " "7471" ")\n"
	"      --max-initiators N connections at once (default 64, at most 256)\n"
	"  -v, --verbose          log requests and connections to stderr\n"
	"  -h, --help             this text\n"
	"Run it on odpemu with odpemu-run (the drop-in libibverbs and librdmacm).\n";

static bool verbose_log;

void brick_log(const struct brick_server *s, const char *fmt, ...)
{
	va_list ap;

	(void)s;
	if (!verbose_log)
		return;
	va_start(ap, fmt);
	fputs("odpemu-brick: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* "64M", "1G", "4096": bytes, or false. */
static bool parse_size(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno || end == text || *text == '-')
		return false;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

static int bad(const char *what, const char *value)
{
	fprintf(stderr, "odpemu-brick: bad %s '%s'\n%s", what, value, usage);
	return 2;
}

enum { OPT_META = 256, OPT_MAX_INITIATORS };

/* 0, or the exit code for the command line (2: usage). */
static int parse_args(int argc, char **argv, struct brick_options *o)
{
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' }, { "size", required_argument, NULL, 's' },
		{ "mem", required_argument, NULL, 'm' }, { "meta", required_argument, NULL, OPT_META },
		{ "addr", required_argument, NULL, 'a' }, { "port", required_argument, NULL, 'p' },
		{ "max-initiators", required_argument, NULL, OPT_MAX_INITIATORS },
		{ "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
		{ 0 } };
	uint64_t n;
	int c;

	*o = (struct brick_options){ .port = "7471", .max_initiators = 64 };
	while ((c = getopt_long(argc, argv, "f:s:m:a:p:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': o->file = optarg; break;
		case 's': if (!parse_size(optarg, &o->size) || o->size % BRICK_BLOCK || !o->size)
				return bad("size (a non-zero multiple of 2M)", optarg);
			break;
		case 'm': if (!parse_size(optarg, &o->mem)) return bad("memory budget", optarg);
			break;
		case OPT_META: o->meta = optarg; break;
		case 'a': o->addr = optarg; break;
		case 'p': if (!parse_size(optarg, &n) || !n || n > 65535) return bad("port", optarg);
			o->port = optarg;
			break;
		case OPT_MAX_INITIATORS:
			if (!parse_size(optarg, &n) || !n || n > 256)
				return bad("initiator count (1..256)", optarg);
			o->max_initiators = (unsigned)n;
			break;
		case 'v': o->verbose = true; break;
		case 'h': fputs(usage, stdout); return -1;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind < argc)
		return bad("argument", argv[optind]);
	if (!o->file) {
		fprintf(stderr, "odpemu-brick: --file is required\n%s", usage);
		return 2;
	}
	return 0;
}

/* Free slots hold zeros: a kill between a FREE's log record and its punch left data in
 * one, which the next ALLOC of that slot must not show. */
static int zero_free_slots(struct brick_server *s)
{
	for (uint64_t i = 0; i < brick_store_slots(s->store); i++) {
		int rc;

		if (!brick_meta_slot_used(s->meta, i) && (rc = brick_store_discard(s->store, i)))
			return rc;
	}
	return 0;
}

static int open_storage(struct brick_server *s, char *meta_path)
{
	struct brick_meta_report rep;
	int rc;

	if ((rc = brick_store_open(s->opt.file, s->opt.size, s->opt.mem, &s->store))) {
		fprintf(stderr, "odpemu-brick: %s: %s\n", s->opt.file, strerror(-rc));
		return rc;
	}
	if ((rc = brick_meta_open(meta_path, brick_store_slots(s->store), &s->meta, &rep))) {
		fprintf(stderr, "odpemu-brick: allocation log %s: %s%s\n", meta_path, strerror(-rc),
			rc == -EBADMSG ? " (corrupt before its end: left as it is)" :
			rc == -EINVAL ? " (made for another file size)" : "");
		return rc;
	}
	if (rep.torn_bytes)
		fprintf(stderr, "odpemu-brick: %s: dropped a torn last record (%llu bytes): a "
			"change that was never answered\n", meta_path,
			(unsigned long long)rep.torn_bytes);
	if ((rc = zero_free_slots(s)))
		fprintf(stderr, "odpemu-brick: zeroing free blocks: %s\n", strerror(-rc));
	return rc;
}

int main(int argc, char **argv)
{
	struct brick_server s = { 0 };
	char meta_path[4096];
	int rc = parse_args(argc, argv, &s.opt);

	if (rc)
		return rc < 0 ? 0 : rc;
	verbose_log = s.opt.verbose;
	if (!s.opt.meta) {
		if ((size_t)snprintf(meta_path, sizeof(meta_path), "%s.meta", s.opt.file) >=
		    sizeof(meta_path))
			return bad("file name (too long)", s.opt.file);
		s.opt.meta = meta_path;
	} else {
		snprintf(meta_path, sizeof(meta_path), "%s", s.opt.meta);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = open_storage(&s, meta_path);
	if (!rc)
		rc = brick_serve(&s);
	brick_meta_close(s.meta);
	brick_store_close(s.store);
	return rc ? 1 : 0;
}
