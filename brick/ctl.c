/* SPDX-License-Identifier: MIT */
/*
 * odpemu-brick-ctl — an odpemu-brick from the shell (docs/brick.md): HELLO, the five
 * calls, LIST, STAT, and files moved into and out of blocks with RDMA WRITE, READ and a
 * persistent FLUSH. A plain libodpemu-brick client (include/odpemu/brick.h); each run is
 * one connection, so the maps it makes end with it.
 *
 * Exit status: 0; 1 when the brick, the transport or a local file refused; 2 for a usage
 * error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "odpemu/brick.h"

#define PROG "odpemu-brick-ctl"
#define CHUNK (1u << 20)		/* bytes one RDMA READ or WRITE moves */
#define DEFAULT_HOST "127.0.0.1"
#define DEFAULT_TIMEOUT_MS 5000

struct ctl {
	struct brick_conn *c;
	const char *host, *port;
	int timeout_ms;			/* also how long data operations may take */
	bool json;
};

struct command {
	const char *name;
	const char *args;
	int min_args, max_args;		/* max -1: any number */
	int (*run)(struct ctl *t, int argc, char **argv);
	const char *what;
};

/* ---- messages ---- */

static const char *errname(int err)
{
	const char *n = strerrorname_np(err);

	return n ? n : "?";
}

/* "odpemu-brick-ctl: WHAT: text (ENAME)" for rc, a request's result: the brick's own
 * words when it answered with a status. Returns 1, the exit status. */
static int brick_err(const struct ctl *t, int rc, const char *fmt, ...)
{
	uint32_t status = t->c ? brick_status(t->c) : 0;
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s (%s)\n", status ? brick_status_text(status) : strerror(-rc),
		errname(-rc));
	return 1;
}

/* The same for an error of this side (a file, an argument the library refused). */
static int sys_err(int err, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s (%s)\n", strerror(err), errname(err));
	return 1;
}

static int usage_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see " PROG " -h)\n");
	return 2;
}

/* ---- arguments ---- */

/* A number: decimal or 0x hex, optionally times k, M, G or T (powers of 1024). */
static bool parse_u64(const char *s, uint64_t *out)
{
	int base = s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10;
	unsigned shift = 0;
	uint64_t v;
	char *end;

	if (!(s[0] >= '0' && s[0] <= '9'))
		return false;	/* strtoull would take "-1", " 1" */
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || end == s)
		return false;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end || (shift && v > UINT64_MAX >> shift))
		return false;
	*out = v << shift;
	return true;
}

static int arg_u64(const char *what, const char *s, uint64_t *out)
{
	if (parse_u64(s, out))
		return 0;
	return usage_err("%s '%s' is not a number (decimal or 0x hex, k/M/G/T suffixes)",
			 what, s);
}

/* [off, off + len) must lie inside one block, len > 0. */
static int arg_in_block(uint64_t off, uint64_t len)
{
	if (!len)
		return usage_err("LEN must not be 0");
	if (off >= BRICK_BLOCK_SIZE || len > BRICK_BLOCK_SIZE - off)
		return usage_err("OFFSET %" PRIu64 " + %" PRIu64 " bytes is past the block's "
				 "end (%llu bytes)", off, len, BRICK_BLOCK_SIZE);
	return 0;
}

/* ---- files ---- */

static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (!n)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int write_full(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf = (const char *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- data operations ---- */

/* A registered buffer of len bytes. */
static void *reg_buf(struct ctl *t, size_t len, struct ibv_mr **mr)
{
	void *buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);

	if (!buf) {
		sys_err(ENOMEM, "buffer of %zu bytes", len);
		return NULL;
	}
	memset(buf, 0, len);
	if (!(*mr = brick_reg(t->c, buf, len))) {
		sys_err(errno, "register a buffer of %zu bytes", len);
		free(buf);
		return NULL;
	}
	return buf;
}

static void unreg_buf(void *buf, struct ibv_mr *mr)
{
	if (mr)
		ibv_dereg_mr(mr);
	free(buf);
}

/* "odpemu-brick-ctl: put 0x200000: RDMA FLUSH: remote access error (...)" for an operation
 * that completed in error. Returns 1. */
static int wc_err(const char *what, uint64_t id, const char *op, int status)
{
	const char *why = "";

	switch (status) {
	case IBV_WC_REM_ACCESS_ERR: why = " (the brick's NIC refused the handle)"; break;
	case IBV_WC_RETRY_EXC_ERR: why = " (the brick does not answer)"; break;
	case IBV_WC_WR_FLUSH_ERR: why = " (the connection failed before it ran)"; break;
	}
	fprintf(stderr, PROG ": %s 0x%" PRIx64 ": RDMA %s: %s%s\n", what, id, op,
		ibv_wc_status_str((enum ibv_wc_status)status), why);
	return 1;
}

/* Wait for n posted operations (wr_id flush_id the FLUSH, the others op): 0, or 1 after
 * saying what failed first. */
static int reap(struct ctl *t, int n, const char *what, uint64_t id, const char *op,
		uint64_t flush_id)
{
	struct ibv_wc wc[8];
	int rc = 0;

	while (n > 0) {
		int got = brick_poll(t->c, wc, n < 8 ? n : 8, t->timeout_ms);

		if (got < 0)
			return brick_err(t, got, "%s 0x%" PRIx64, what, id);
		if (!got)
			return sys_err(ETIMEDOUT, "%s 0x%" PRIx64 ": RDMA operations", what, id);
		for (int i = 0; i < got; i++)
			if (wc[i].status != IBV_WC_SUCCESS && !rc)
				rc = wc_err(what, id, wc[i].wr_id == flush_id ? "FLUSH" : op,
					    wc[i].status);
		n -= got;
	}
	return rc;
}

/* Unmap id after what (whose result is rc): rc, or 1 when only the unmap failed. */
static int unmap_after(struct ctl *t, uint64_t id, const char *what, int rc)
{
	int urc = brick_unmap(t->c, id);

	if (urc && !rc)
		return brick_err(t, urc, "%s 0x%" PRIx64 ": unmap", what, id);
	return rc;
}

/* One block of put: allocate (EEXIST is fine), map RW, WRITE len bytes in chunks, FLUSH
 * them persistent, unmap. */
static int put_block(struct ctl *t, uint64_t id, const uint8_t *buf, uint32_t len,
		     struct ibv_mr *mr)
{
	struct brick_map m;
	int rc, n = 0;

	if ((rc = brick_alloc(t->c, id)) && rc != -EEXIST)
		return brick_err(t, rc, "put: alloc 0x%" PRIx64, id);
	if ((rc = brick_map(t->c, id, BRICK_RW, &m)))
		return brick_err(t, rc, "put: map 0x%" PRIx64, id);
	for (uint32_t off = 0; off < len && !rc; off += CHUNK)
		if (!(rc = brick_post_write(t->c, &m, off, buf + off,
					    len - off < CHUNK ? len - off : CHUNK, mr, (uint64_t)n)))
			n++;
	/* FLUSH after the WRITEs on the same QP: it makes them durable (docs/brick.md) */
	if (!rc && !(rc = brick_post_flush(t->c, &m, 0, len, BRICK_FLUSH_PERSISTENT,
					   (uint64_t)n)))
		n++;
	if (rc)
		sys_err(-rc, "put 0x%" PRIx64 ": post", id);
	/* what was posted, whatever happened; the FLUSH is the last */
	rc = reap(t, n, "put", id, "WRITE", (uint64_t)(len + CHUNK - 1) / CHUNK) || rc;
	return unmap_after(t, id, "put", rc);
}

/* One block of get: map RO, READ len bytes in chunks, unmap. */
static int get_block(struct ctl *t, uint64_t id, uint8_t *buf, uint32_t len,
		     struct ibv_mr *mr)
{
	struct brick_map m;
	int rc, n = 0;

	if ((rc = brick_map(t->c, id, BRICK_RO, &m)))
		return brick_err(t, rc, "get: map 0x%" PRIx64, id);
	for (uint32_t off = 0; off < len && !rc; off += CHUNK)
		if (!(rc = brick_post_read(t->c, &m, off, buf + off,
					   len - off < CHUNK ? len - off : CHUNK, mr, (uint64_t)n)))
			n++;
	if (rc)
		sys_err(-rc, "get 0x%" PRIx64 ": post", id);
	rc = reap(t, n, "get", id, "READ", UINT64_MAX) || rc;
	return unmap_after(t, id, "get", rc);
}

/* ---- commands ---- */

static int cmd_hello(struct ctl *t, int argc, char **argv)
{
	const struct brick_info *i = brick_conn_info(t->c);

	(void)argc;
	(void)argv;
	printf("version %u\nblock_size %" PRIu64 "\nslots %" PRIu64 "\ncapacity %" PRIu64
	       "\ncredits %u\n", i->version, i->block_size, i->slots,
	       i->slots * i->block_size, i->credits);
	return 0;
}

/* alloc and free: every id, going on past a refusal (not past a dead connection). */
static int each_id(struct ctl *t, int argc, char **argv, const char *what,
		   int (*call)(struct brick_conn *, uint64_t))
{
	uint64_t *ids = calloc((size_t)argc, sizeof(*ids));
	int rc = 0;

	if (!ids)
		return sys_err(ENOMEM, "%s", what);
	for (int i = 0; i < argc && !rc; i++)
		rc = arg_u64("ID", argv[i], &ids[i]);
	for (int i = 0; i < argc && rc != 2; i++) {
		int r = call(t->c, ids[i]);

		if (!r)
			continue;
		rc = brick_err(t, r, "%s 0x%" PRIx64, what, ids[i]);
		if (r == -ECONNRESET || r == -ETIMEDOUT)
			break;
	}
	free(ids);
	return rc;
}

static int cmd_alloc(struct ctl *t, int argc, char **argv)
{
	return each_id(t, argc, argv, "alloc", brick_alloc);
}

static int cmd_free(struct ctl *t, int argc, char **argv)
{
	return each_id(t, argc, argv, "free", brick_free);
}

static int cmd_map(struct ctl *t, int argc, char **argv)
{
	struct brick_map m;
	uint64_t id;
	uint32_t flags;
	int rc;

	if ((rc = arg_u64("ID", argv[0], &id)))
		return rc;
	if (!strcmp(argv[1], "ro"))
		flags = BRICK_RO;
	else if (!strcmp(argv[1], "rw"))
		flags = BRICK_RW;
	else
		return usage_err("map: mode '%s' is neither ro nor rw", argv[1]);
	if (argc > 2 && strcmp(argv[2], "shared"))
		return usage_err("map: '%s' is not 'shared'", argv[2]);
	if (argc > 2)
		flags |= BRICK_SHARED;
	if ((rc = brick_map(t->c, id, flags, &m)))
		return brick_err(t, rc, "map 0x%" PRIx64, id);
	printf("id 0x%" PRIx64 "\naddr 0x%" PRIx64 "\nrkey 0x%" PRIx32 "\nlength %" PRIu64
	       "\nflags %s%s\n", m.id, m.remote_addr, m.rkey, m.length,
	       flags & BRICK_RW ? "rw" : "ro", flags & BRICK_SHARED ? ",shared" : "");
	fflush(stdout);
	return unmap_after(t, id, "map", 0);
}

static int cmd_list(struct ctl *t, int argc, char **argv)
{
	struct brick_range r[256];
	uint64_t from = 0, next, bytes = 0, extents = 0;
	uint32_t n;
	int rc;

	(void)argc;
	(void)argv;
	do {
		if ((rc = brick_list(t->c, from, r, 256, &n, &next)))
			return brick_err(t, rc, "list from 0x%" PRIx64, from);
		for (uint32_t i = 0; i < n; i++) {
			printf("0x%" PRIx64 " +%" PRIu64 "\n", r[i].id, r[i].length);
			bytes += r[i].length;
		}
		extents += n;
		if (next && next <= from)
			return sys_err(EPROTO, "list: the brick went back from 0x%" PRIx64
				       " to 0x%" PRIx64, from, next);
		from = next;
	} while (next);
	printf("total %" PRIu64 " bytes, %" PRIu64 " blocks in %" PRIu64 " extents\n", bytes,
	       (uint64_t)(bytes / BRICK_BLOCK_SIZE), extents);
	return 0;
}

/* The counters as one JSON object (json-c, as odpemu-ctl's --json). */
static void print_json(const uint64_t *v, unsigned n)
{
	struct json_object *o = json_object_new_object();

	for (unsigned i = 0; o && i < n; i++)
		json_object_object_add(o, brick_stat_label(i), json_object_new_uint64(v[i]));
	puts(o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY) : "{}");
	json_object_put(o);
}

static int cmd_stat(struct ctl *t, int argc, char **argv)
{
	unsigned count = brick_stat_count(), n;
	uint64_t *v = calloc(count, sizeof(*v));
	int rc;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") && strcmp(argv[i], "-j")) {
			free(v);
			return usage_err("stat: unknown argument '%s' (only --json)", argv[i]);
		}
		t->json = true;
	}
	if (!v)
		return sys_err(ENOMEM, "stat");
	if ((rc = brick_stat(t->c, v, count, &n))) {
		free(v);
		return brick_err(t, rc, "stat");
	}
	if (t->json)
		print_json(v, n);
	else
		for (unsigned i = 0; i < n; i++)
			printf("%s %" PRIu64 "\n", brick_stat_label(i), v[i]);
	free(v);
	return 0;
}

static int open_in(const char *path)
{
	return strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
}

static int open_out(const char *path)
{
	return strcmp(path, "-") ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
				 : STDOUT_FILENO;
}

static void report(const char *what, uint64_t id, uint64_t bytes, uint64_t blocks,
		   double secs, bool to_stdout)
{
	fprintf(to_stdout ? stdout : stderr, "%s 0x%" PRIx64 ": %" PRIu64 " bytes in %" PRIu64
		" blocks, %.3f s, %.1f MB/s\n", what, id, bytes, blocks, secs,
		secs > 0 ? (double)bytes / secs / 1e6 : 0.0);
}

static int cmd_put(struct ctl *t, int argc, char **argv)
{
	uint64_t id, first, bytes = 0, blocks = 0;
	struct ibv_mr *mr = NULL;
	uint8_t *buf;
	double t0;
	int fd, rc;

	(void)argc;
	if ((rc = arg_u64("ID", argv[0], &id)))
		return rc;
	if ((fd = open_in(argv[1])) < 0)
		return sys_err(errno, "put: %s", argv[1]);
	if (!(buf = reg_buf(t, BRICK_BLOCK_SIZE, &mr))) {
		if (fd > STDERR_FILENO)
			close(fd);
		return 1;
	}
	first = id;
	t0 = now_s();
	for (;; id += BRICK_BLOCK_SIZE) {
		ssize_t got = read_full(fd, buf, BRICK_BLOCK_SIZE);

		if (got < 0) {
			rc = sys_err(errno, "put: %s", argv[1]);
			break;
		}
		if (!got || (rc = put_block(t, id, buf, (uint32_t)got, mr)))
			break;
		bytes += (uint64_t)got;
		blocks++;
		if ((uint64_t)got < BRICK_BLOCK_SIZE)
			break;
	}
	if (!rc)
		report("put", first, bytes, blocks, now_s() - t0, true);
	unreg_buf(buf, mr);
	if (fd != STDIN_FILENO)
		close(fd);
	return rc;
}

static int cmd_get(struct ctl *t, int argc, char **argv)
{
	uint64_t id, first, len, left, blocks = 0;
	bool to_stdout = !strcmp(argv[2], "-");
	struct ibv_mr *mr = NULL;
	uint8_t *buf;
	double t0;
	int fd, rc;

	(void)argc;
	if ((rc = arg_u64("ID", argv[0], &id)) || (rc = arg_u64("LEN", argv[1], &len)))
		return rc;
	if ((fd = open_out(argv[2])) < 0)
		return sys_err(errno, "get: %s", argv[2]);
	if (!(buf = reg_buf(t, BRICK_BLOCK_SIZE, &mr))) {
		if (fd > STDERR_FILENO)
			close(fd);
		return 1;
	}
	first = id;
	t0 = now_s();
	for (left = len; left; id += BRICK_BLOCK_SIZE) {
		uint32_t n = (uint32_t)(left < BRICK_BLOCK_SIZE ? left : BRICK_BLOCK_SIZE);

		if ((rc = get_block(t, id, buf, n, mr)))
			break;
		if (write_full(fd, buf, n)) {
			rc = sys_err(errno, "get: %s", argv[2]);
			break;
		}
		left -= n;
		blocks++;
	}
	if (!rc)
		report("get", first, len, blocks, now_s() - t0, !to_stdout);
	unreg_buf(buf, mr);
	if (fd != STDOUT_FILENO && close(fd) && !rc)
		rc = sys_err(errno, "get: %s", argv[2]);
	return rc;
}

static int cmd_flush(struct ctl *t, int argc, char **argv)
{
	struct brick_map m;
	uint64_t id;
	double t0, t1;
	int rc, st = IBV_WC_SUCCESS;

	(void)argc;
	if ((rc = arg_u64("ID", argv[0], &id)))
		return rc;
	if ((rc = brick_map(t->c, id, BRICK_RW, &m)))
		return brick_err(t, rc, "flush: map 0x%" PRIx64, id);
	t0 = now_s();
	rc = brick_flush(t->c, &m, 0, m.length, BRICK_FLUSH_PERSISTENT, &st);
	t1 = now_s();
	if (rc == -EIO) {
		rc = wc_err("flush", id, "FLUSH", st);
	} else if (rc) {
		rc = sys_err(-rc, "flush 0x%" PRIx64, id);
	} else {
		printf("flush 0x%" PRIx64 ": %" PRIu64 " bytes persistent in %.1f us\n", id,
		       m.length, (t1 - t0) * 1e6);
	}
	return unmap_after(t, id, "flush", rc);
}

/* write and read: one synchronous operation on a map of id. */
static int one_op(struct ctl *t, uint64_t id, uint64_t off, uint8_t *buf, uint32_t len,
		  bool write)
{
	const char *what = write ? "write" : "read", *op = "WRITE";
	struct ibv_mr *mr;
	struct brick_map m;
	int rc, st = IBV_WC_SUCCESS;

	if (!(mr = brick_reg(t->c, buf, len)))
		return sys_err(errno, "%s: register %u bytes", what, len);
	if ((rc = brick_map(t->c, id, write ? BRICK_RW : BRICK_RO, &m))) {
		ibv_dereg_mr(mr);
		return brick_err(t, rc, "%s: map 0x%" PRIx64, what, id);
	}
	if (!write) {
		rc = brick_read(t->c, &m, off, buf, len, mr, &st);
		op = "READ";
	} else if (!(rc = brick_write(t->c, &m, off, buf, len, mr, &st))) {
		rc = brick_flush(t->c, &m, off, len, BRICK_FLUSH_PERSISTENT, &st);
		op = "FLUSH";
	}
	if (rc == -EIO) {
		rc = wc_err(what, id, op, st);
	} else if (rc) {
		rc = sys_err(-rc, "%s 0x%" PRIx64 "+%" PRIu64, what, id, off);
	}
	rc = unmap_after(t, id, what, rc);
	ibv_dereg_mr(mr);
	return rc;
}

static int cmd_write(struct ctl *t, int argc, char **argv)
{
	uint64_t id, off;
	size_t len = strlen(argv[2]);
	uint8_t *buf;
	int rc;

	(void)argc;
	if ((rc = arg_u64("ID", argv[0], &id)) || (rc = arg_u64("OFFSET", argv[1], &off)) ||
	    (rc = arg_in_block(off, len)))
		return rc;
	if (!(buf = (uint8_t *)strdup(argv[2])))
		return sys_err(ENOMEM, "write");
	rc = one_op(t, id, off, buf, (uint32_t)len, true);
	free(buf);
	return rc;
}

static bool printable(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((b[i] < 0x20 || b[i] > 0x7e) && b[i] != '\n' && b[i] != '\t')
			return false;
	return true;
}

/* hexdump -C's layout: offset, 16 bytes in hex, the same as text. */
static void hexdump(const uint8_t *b, size_t n, uint64_t base)
{
	for (size_t i = 0; i < n; i += 16) {
		printf("%08" PRIx64 " ", base + i);
		for (size_t j = i; j < i + 16; j++) {
			fputs(j == i + 8 ? "  " : " ", stdout);
			if (j < n)
				printf("%02x", b[j]);
			else
				fputs("  ", stdout);
		}
		printf("  |");
		for (size_t j = i; j < i + 16 && j < n; j++)
			putchar(b[j] >= 0x20 && b[j] <= 0x7e ? b[j] : '.');
		printf("|\n");
	}
}

static int cmd_read(struct ctl *t, int argc, char **argv)
{
	uint64_t id, off, len;
	uint8_t *buf;
	int rc;

	(void)argc;
	if ((rc = arg_u64("ID", argv[0], &id)) || (rc = arg_u64("OFFSET", argv[1], &off)) ||
	    (rc = arg_u64("LEN", argv[2], &len)) || (rc = arg_in_block(off, len)))
		return rc;
	if (!(buf = calloc(1, len)))
		return sys_err(ENOMEM, "read");
	if (!(rc = one_op(t, id, off, buf, (uint32_t)len, false))) {
		if (printable(buf, len)) {
			fwrite(buf, 1, len, stdout);
			if (buf[len - 1] != '\n')
				putchar('\n');
		} else {
			hexdump(buf, len, off);
		}
	}
	free(buf);
	return rc;
}

static const struct command commands[] = {
	{ "hello", "", 0, 0, cmd_hello, "the brick's protocol version and capacity" },
	{ "alloc", "ID...", 1, -1, cmd_alloc, "allocate the 2 MiB blocks ID..." },
	{ "free", "ID...", 1, -1, cmd_free, "free them" },
	{ "map", "ID ro|rw [shared]", 2, 3, cmd_map,
	  "map ID, print its handle (rkey, addr), unmap" },
	{ "list", "", 0, 0, cmd_list, "every allocated extent (0x<id> +<bytes>) and the total" },
	{ "stat", "[--json]", 0, 1, cmd_stat, "the brick's counters, one 'name value' a line" },
	{ "put", "ID FILE", 2, 2, cmd_put,
	  "FILE (- for stdin) into the blocks from ID on: alloc, RDMA WRITE,\n"
	  "                              persistent FLUSH; prints bytes and MB/s" },
	{ "get", "ID LEN FILE", 3, 3, cmd_get, "LEN bytes from ID on into FILE (- for stdout)" },
	{ "flush", "ID", 1, 1, cmd_flush, "persistent FLUSH of the whole block; its latency" },
	{ "write", "ID OFFSET STRING", 3, 3, cmd_write,
	  "STRING at OFFSET of block ID, FLUSHed persistent" },
	{ "read", "ID OFFSET LEN", 3, 3, cmd_read, "LEN bytes at OFFSET, as text or hex" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [-a HOST] [-p PORT] [-d DEVICE] [-t TIMEOUT_MS] COMMAND "
		"ARGS...\n\n"
		"  -a, --addr HOST        the brick's address (default " DEFAULT_HOST ")\n"
		"  -p, --port PORT        its rdma_cm port (default " BRICK_DEFAULT_PORT ")\n"
		"  -d, --device DEVICE    the local verbs device to use (default: rdma_cm's "
		"choice)\n"
		"  -t, --timeout MS       connect, request and RDMA timeout (default %d)\n"
		"  -h, --help             this text\n\ncommands:\n", DEFAULT_TIMEOUT_MS);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-6s %-20s %s\n", commands[i].name, commands[i].args,
			commands[i].what);
	fprintf(f, "\nIDs, offsets and lengths are decimal or 0x hex, with k/M/G/T suffixes "
		"(2M = 0x200000).\nA block ID is 2 MiB-aligned. Maps end with the connection, "
		"that is with each run.\nExit status: 0; 1 the brick, the connection or a file "
		"refused; 2 usage.\n");
}

static const char *connect_hint(int rc)
{
	switch (rc) {
	case -ECONNREFUSED: return ": is odpemu-brick listening there (-a, -p)?";
	case -ETIMEDOUT: return ": no answer in time (-t to wait longer)";
	case -ENODEV: return ": no RDMA device reaches it (on odpemu: odpemud running, "
			     "the command under odpemu-run; -d names a device)";
	case -EADDRNOTAVAIL: return ": the device (-d) has no address of that family";
	case -EPROTONOSUPPORT: return ": the brick speaks another protocol version";
	case -EOPNOTSUPP: return ": the local RDMA device offers no persistent RDMA FLUSH "
				 "(device_cap_flags_ex FLUSH_PERSISTENT), which makes writes durable "
				 "(ConnectX/mlx5 has none; rxe does)";
	default: return "";
	}
}

/* Global options into t and opts; the command's index in argv, or -1 and *exit_code. */
static int parse_options(int argc, char **argv, struct ctl *t,
			 struct brick_connect_opts *opts, int *exit_code)
{
	static const struct option longs[] = {
		{ "addr", required_argument, NULL, 'a' }, { "port", required_argument, NULL, 'p' },
		{ "device", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 't' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	uint64_t ms;
	int o;

	while ((o = getopt_long(argc, argv, "+a:p:d:t:jh", longs, NULL)) != -1) {
		switch (o) {
		case 'a': t->host = optarg; break;
		case 'p': t->port = optarg; break;
		case 'd': opts->device = optarg; break;
		case 'j': t->json = true; break;
		case 't':
			if (!parse_u64(optarg, &ms) || !ms || ms > INT32_MAX) {
				*exit_code = usage_err("-t '%s' is not a timeout in ms", optarg);
				return -1;
			}
			t->timeout_ms = opts->timeout_ms = (int)ms;
			break;
		case 'h':
			usage(stdout);
			*exit_code = 0;
			return -1;
		default:	/* getopt said what */
			*exit_code = usage_err("bad option");
			return -1;
		}
	}
	if (optind >= argc) {
		*exit_code = usage_err("no command");
		return -1;
	}
	return optind;
}

int main(int argc, char **argv)
{
	struct ctl t = { .host = DEFAULT_HOST, .port = BRICK_DEFAULT_PORT,
			 .timeout_ms = DEFAULT_TIMEOUT_MS };
	struct brick_connect_opts opts = { .timeout_ms = DEFAULT_TIMEOUT_MS };
	const struct command *cmd = NULL;
	int at, nargs, rc = 2;

	if ((at = parse_options(argc, argv, &t, &opts, &rc)) < 0)
		return rc;
	for (size_t i = 0; i < NCOMMANDS && !cmd; i++)
		if (!strcmp(argv[at], commands[i].name))
			cmd = &commands[i];
	if (!cmd)
		return usage_err("unknown command '%s'", argv[at]);
	nargs = argc - at - 1;
	if (nargs < cmd->min_args || (cmd->max_args >= 0 && nargs > cmd->max_args))
		return usage_err("usage: %s %s", cmd->name, cmd->args);
	if ((rc = brick_connect(t.host, t.port, &opts, &t.c))) {
		fprintf(stderr, PROG ": connect to %s:%s: %s (%s)%s\n", t.host, t.port,
			strerror(-rc), errname(-rc), connect_hint(rc));
		return 1;
	}
	rc = cmd->run(&t, nargs, argv + at + 1);
	if (fflush(stdout) && !rc)
		rc = sys_err(errno, "standard output");
	brick_close(t.c);
	return rc;
}
