/* SPDX-License-Identifier: MIT */
/*
 * The brick's API between two hosts: odpemu-brick (64 MiB, 32 blocks) on host 1,
 * brick-api-client (api_client.c) on host 0 through libodpemu-brick, both on odpemu's drop-in
 * libraries. Every call and every error of docs/brick.md:
 *  - HELLO: version, capacity, credits; a version the brick does not speak is refused;
 *  - ALLOC: EEXIST, unaligned (EINVAL), the top id, ENOSPC at 33 blocks; FREE of an id
 *    never allocated (ENOENT); UNMAP of a block not mapped (ENXIO); MAP of a block not
 *    allocated (ENOENT), twice on one connection (EBUSY);
 *  - data: RDMA WRITE, READ and a persistent FLUSH through an RW handle, READ through an
 *    RO one; a fresh block reads zeros;
 *  - revocation: WRITE after UNMAP, WRITE through an RO handle, a handle of another
 *    connection, and a handle whose block another initiator FREEd: REM_ACCESS_ERR;
 *  - sharing: RW excludes every other map unless both ask SHARED; RO maps share;
 *    a closed connection's maps are gone;
 *  - LIST: every allocated id as extents, paginated;
 *  - protocol: truncated, garbage, bad magic, another version, an unknown op: each an
 *    error reply naming the request, and the brick keeps serving; STAT counts them;
 *  - odpemu-brick-ctl: a 5 MiB file put into three blocks and got back byte for byte,
 *    list shows them, an unaligned id is refused with exit 1;
 *  - an initiator killed with a block mapped RW: its map is revoked (another maps it RW).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "brick_run.h"
#include "t.h"

/* ---- odpemu-brick-ctl ---- */

/* ctl args... on host 0 against the brick: its exit code, output in *out. */
static int ctl(struct h_env *e, const struct br_brick *b, char **out, const char *const *args)
{
	struct cr_args a = { 0 };

	cr_push(&a, getenv("ODPEMU_BRICK_CTL"), "-a", e->host[1].addr, NULL);
	cr_pushf(&a, "--port=%u", b->port);
	cr_push_list(&a, args);
	return cr_run(e, 0, &a, NULL, out, 60);
}

/* A 5 MiB + 3 byte file put into blocks from 1 GiB on (3 blocks), read back, listed. */
static void ctl_round_trip(struct h_env *e, const struct br_brick *b)
{
	static const char *put[] = { "put", "1G", "brick-api.in", NULL },
		*get[] = { "get", "1G", "5242883", "brick-api.out", NULL },
		*list[] = { "list", NULL }, *bad[] = { "alloc", "0x1001", NULL },
		*stat[] = { "stat", "--json", NULL },
		/* the client left the brick full: three of its blocks go */
		*room[] = { "free", "0x100800000", "0x100c00000", "0x101000000", NULL };
	size_t len = 5242883;
	uint8_t *in = malloc(len), *back = malloc(len + 1);
	char *out = NULL;
	FILE *f = fopen("brick-api.in", "wb");

	for (size_t i = 0; i < len; i++)
		in[i] = (uint8_t)(i * 13 + (i >> 16));
	T_CHECK(f && fwrite(in, 1, len, f) == len && !fclose(f), "writing the input file");
	BR_EQ(ctl(e, b, &out, room), 0, "ctl free: %s", out ? out : "");
	free(out);
	BR_EQ(ctl(e, b, &out, put), 0, "ctl put: %s", out ? out : "");
	free(out);
	BR_EQ(ctl(e, b, &out, get), 0, "ctl get: %s", out ? out : "");
	free(out);
	f = fopen("brick-api.out", "rb");
	T_CHECK(f && fread(back, 1, len + 1, f) == len && !memcmp(in, back, len),
		"ctl get returns what put wrote, byte for byte");
	if (f)
		fclose(f);
	BR_EQ(ctl(e, b, &out, list), 0, "ctl list");
	T_CHECK(out && strstr(out, "0x40000000 +6291456"), "ctl list shows the 3 blocks at 1 GiB: %s",
		out ? out : "");
	free(out);
	BR_EQ(ctl(e, b, &out, stat), 0, "ctl stat --json");
	T_CHECK(out && tr_json_num(out, "d[\"blocks_allocated\"]") == 32 &&
		tr_json_num(out, "d[\"slots\"]") == 32, "ctl stat --json: 32 of 32 blocks: %s",
		out ? out : "");
	free(out);
	BR_EQ(ctl(e, b, &out, bad), 1, "ctl alloc of an unaligned id exits 1");
	T_CHECK(out && strstr(out, "aligned"), "ctl says why: %s", out ? out : "");
	free(out);
	free(in);
	free(back);
	unlink("brick-api.in");
	unlink("brick-api.out");
}

/* An initiator killed with a block mapped RW: the brick sees it go (its daemon ends the
 * connection) and revokes its map, so another may map the block RW. */
static void dead_initiator(struct h_env *e, const struct br_brick *b)
{
	static const char *hold[] = { "hold", "0x40000000", NULL },
		*map[] = { "map", "0x40000000", "rw", NULL };
	struct tr_proc p;
	struct cr_args a;
	char *out = NULL;
	int rc = -1;

	if (br_client_start(e, b, hold, &p, &a)) {
		T_CHECK(0, "the holding initiator starts");
		return;
	}
	T_CHECK(tr_wait_for(&p, "HELD", 20000), "the initiator mapped the block");
	BR_EQ(ctl(e, b, &out, map), 1, "ctl map rw of a block another maps RW: refused");
	T_CHECK(out && strstr(out, "EBUSY"), "  EBUSY: %s", out ? out : "");
	free(out);
	kill(p.pid, SIGKILL);
	cr_collect(&p, &a, 10, &out);
	free(out);
	/* its connection ends within the CM's own bounds (DREQ from its daemon) */
	for (int i = 0; i < 50 && rc != 0; i++) {
		if (i)
			usleep(200 * 1000);
		rc = ctl(e, b, &out, map);
		free(out);
	}
	BR_EQ(rc, 0, "the dead initiator's map is revoked: ctl map rw works within 10 s");
}

/* ---- the test (harness) ---- */

static void body(struct h_env *e)
{
	struct br_brick b;
	char *out = NULL;
	int code;

	unlink("brick-api.img");
	unlink("brick-api.img.meta");
	if (br_start(e, &b, "brick-api.img", "64M", NULL)) {
		T_CHECK(0, "the brick starts");
		return;
	}
	code = br_client(e, &b, NULL, &out, 240);
	/* its lines before the verdict, on stderr as the verdict: a CI log keeps the order */
	fputs(out ? out : "", stderr);
	BR_EQ(code, 0, "the client's checks");
	ctl_round_trip(e, &b);
	dead_initiator(e, &b);
	BR_EQ(br_stop(&b, SIGTERM), 0, "the brick ends cleanly on SIGTERM");
	free(out);
	unlink("brick-api.img");
	unlink("brick-api.img.meta");
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "brick-api", .watchdog_s = 400, .body = body };

	return h_main(argc, argv, &t);
}
