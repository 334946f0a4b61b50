/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the control protocol as odpemud serves it: emu_ctl_serve (receive,
 * header checks, the op table) and every op's handler, for a live session on a daemon with
 * a real NIC (fz_emu.h). The session is the daemon's own: emu_session_accept on one end of
 * a SOCK_SEQPACKET socketpair, the target holding the other end as the client; it ends with
 * emu_session_close and the loop's last completions, as when a client exits.
 *
 * Input: a mode byte, then requests, each [flags][length, 2 bytes LE][that many bytes],
 * sent as one datagram (a length beyond the input takes what is left).
 *   mode bits 0-1: what the session has first: 0 nothing, 1 HELLO, 2-3 HELLO and objects
 *     (PD 1, channel 2, CQ 3 on it, CQ 4, SRQ 5, RC QP 6 in INIT, UD QP 7, RC QP 8 on the
 *     SRQ, ODP MR 9 over the client's memory, pinned MR 10, watch 11);
 *   mode bit 2: page faults inside the client's memory are answered with its pages (else
 *     every fault fails).
 *   flags bit 0: set the header's version and length to the right values; bits 1-4 attach
 *     file descriptors: a sealed memfd (a pinned MR's pages), a SOCK_SEQPACKET socket (a
 *     CM channel), an unsealed memfd, a pipe.
 *
 * Checked for every request, besides ASan/UBSan:
 *  - exactly one reply (none for an empty datagram, which the daemon takes for the end of
 *    the session), echoing the request's op, seq and handle (zeroes when the request is
 *    shorter than a header), with the right length and a status 0 or -errno; an error body
 *    holds a terminated line;
 *  - an error reply changed nothing: the session's objects and the NIC's are the same,
 *    and so is the number of open fds (those the request carried were closed);
 *  - the memory the NIC touches is the client's (fz_emu.h).
 * And for every input: closing the session frees every object (the NIC can be destroyed),
 * the session itself (its polls end), and every file descriptor.
 * `fuzz-ctl --write-corpus=DIR` writes the seed corpus: one request of each op (and
 * malformed ones) after the prologue. ODPEMU_FUZZ_TRACE=1 prints each request's reply and
 * the daemon's log.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "fz_emu.h"
#include "ipc.h"
#include "ipc_ring.h"
#include "session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MEM		(64u * 1024)
#define MEM_AT		0x700000000000ull	/* the client's memory: the corpus names it */
#define PIN_VA		0x10000000ull		/* where the pinned MR says it is */
#define MAX_REQS	24
#define MAX_LEN		(IPC_MAX_MSG + 64)	/* a little more: the truncation path */
#define ATTACH_FDS	4

/* A request's flags (the input's byte), and one of the mode's: answer faults with pages. */
enum { F_FIX = 1, F_MEMFD = 2, F_SOCK = 4, F_FILE = 8, F_PIPE = 16, F_INPUT = 31,
	F_PAGES = 0x100 };

static struct emu_daemon d;
static int proto_fd[ATTACH_FDS];	/* dup'ed for each request that attaches them */
static unsigned fds_at_rest;	/* before the session */
static bool trace;	/* ODPEMU_FUZZ_TRACE */

/* The live session and the client's end of its socket. */
static struct emu_session *sess;
static int client = -1;

/* What the last reply said (the prologue and the corpus read handles and keys in it). */
static struct {
	struct ipc_hdr h;
	uint8_t body[IPC_MAX_MSG];
	size_t len;
} last;

/* ---- one request ---- */

struct census {
	unsigned objs[EMU_OBJ_TYPES];
	struct nic_counters nic;
	bool hello;
	unsigned fds;		/* of the process: a refused request closed what it carried */
};

static void take_census(struct census *c)
{
	memset(c, 0, sizeof(*c));
	for (unsigned t = 1; t < EMU_OBJ_TYPES; t++)
		emu_for_each_obj(o, sess, t)
			c->objs[t]++;
	nic_counters(d.nic, &c->nic);
	c->hello = sess->hello_done;
	c->fds = fz_count_fds();
}

static bool same_census(const struct census *a, const struct census *b)
{
	return !memcmp(a->objs, b->objs, sizeof(a->objs)) && a->hello == b->hello &&
	       a->nic.pds == b->nic.pds && a->nic.mrs == b->nic.mrs && a->nic.cqs == b->nic.cqs &&
	       a->nic.srqs == b->nic.srqs && a->nic.qps == b->nic.qps && a->fds == b->fds;
}

static void send_request(const uint8_t *msg, size_t len, unsigned flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * ATTACH_FDS)];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { (void *)msg, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[ATTACH_FDS];
	unsigned n = 0;

	for (unsigned k = 0; k < ATTACH_FDS; k++)
		if (flags & (F_MEMFD << k))
			fds[n++] = proto_fd[k];
	if (n) {
		struct cmsghdr *c;

		memset(&cm, 0, sizeof(cm));
		m.msg_control = cm.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	if (sendmsg(client, &m, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len)
		abort();	/* the socket has room for one request: a harness failure */
}

/* Read every reply waiting; the fds they carry are closed. Returns how many. */
static unsigned take_replies(void)
{
	unsigned n = 0;

	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
			struct cmsghdr align;
		} cm;
		_Alignas(8) uint8_t buf[IPC_MAX_MSG + 1];
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			.msg_controllen = sizeof(cm.buf) };
		ssize_t got = recvmsg(client, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (got <= 0)		/* none waits, or the daemon closed the session */
			return n;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			for (size_t i = 0; c->cmsg_type == SCM_RIGHTS &&
			     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
				close(fd);
			}
		if ((size_t)got < sizeof(struct ipc_hdr) || (size_t)got > IPC_MAX_MSG ||
		    (m.msg_flags & MSG_TRUNC))
			__builtin_trap();	/* a reply no client can read */
		memcpy(&last.h, buf, sizeof(last.h));
		last.len = (size_t)got - sizeof(last.h);
		memcpy(last.body, buf + sizeof(last.h), last.len);
		n++;
	}
}

/* The reply to msg[0..len) is the one in `last`. */
static void check_reply(const uint8_t *msg, size_t len, const struct census *before)
{
	struct ipc_hdr want = { 0 };
	struct census after;

	if (len >= sizeof(want))
		memcpy(&want, msg, sizeof(want));
	if (last.h.version != IPC_VERSION || last.h.op != want.op || last.h.seq != want.seq ||
	    last.h.handle != want.handle || last.h.len != sizeof(last.h) + last.len ||
	    last.h.status > 0)
		__builtin_trap();	/* a reply that does not answer its request */
	if (last.h.status && last.len == sizeof(struct ipc_err_body) &&
	    !memchr(last.body, 0, IPC_ERR_LEN))
		__builtin_trap();	/* an error line without its end */
	if (!last.h.status)
		return;
	take_census(&after);
	if (after.fds != before->fds) {
		fprintf(stderr, "fuzz-ctl: %u file descriptors open after an error reply, %u "
			"before\n", after.fds, before->fds);
		fz_list_fds();
	}
	if (!same_census(before, &after))
		__builtin_trap();	/* an error reply, yet something changed */
}

/* Send one request and hold the daemon to its answer. Returns the reply's status. */
static int request(const uint8_t *msg, size_t len, unsigned flags)
{
	struct census before;
	unsigned n;

	take_census(&before);
	send_request(msg, len, flags);
	emu_ctl_serve(sess);
	fz_answer_faults(&d, !(flags & F_PAGES));
	n = take_replies();
	if (trace)
		fprintf(stderr, "fuzz-ctl: op %u len %zu -> %u replies, status %d%s%s\n",
			len >= sizeof(struct ipc_hdr) ? ((const struct ipc_hdr *)(const void *)msg)->op : 0,
			len, n, n ? last.h.status : 0, n && last.h.status ? ": " : "",
			n && last.h.status && last.len ? (const char *)last.body : "");
	if (!len) {		/* an empty datagram reads as the end of the session */
		if (n || !sess->dead)
			__builtin_trap();
		return 0;
	}
	if (n != 1)
		__builtin_trap();	/* a request without exactly one reply */
	check_reply(msg, len, &before);
	return last.h.status;
}

/* ---- requests the prologue and the corpus make ---- */

static size_t msg(uint8_t *out, unsigned op, uint32_t handle, const void *body, size_t len)
{
	struct ipc_hdr h = { .version = IPC_VERSION, .op = (uint16_t)op,
		.len = (uint32_t)(sizeof(h) + len), .seq = 7, .handle = handle };

	memcpy(out, &h, sizeof(h));
	if (len)
		memcpy(out + sizeof(h), body, len);
	return sizeof(h) + len;
}

static int call(unsigned op, uint32_t handle, const void *body, size_t len, unsigned flags)
{
	uint8_t buf[IPC_MAX_MSG];

	return request(buf, msg(buf, op, handle, body, len), flags);
}

static void must(int status)
{
	if (status)
		abort();	/* the prologue failed: a harness bug, not a finding */
}

static struct ipc_create_qp_req qp_req(uint32_t type, uint32_t srq)
{
	return (struct ipc_create_qp_req){ .pd = 1, .send_cq = 3, .recv_cq = 4, .srq = srq,
		.qp_type = type, .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2,
		.max_recv_sge = 2, .max_inline_data = 64 };
}

static struct ipc_reg_mr_req *pinned_req(uint8_t *buf, size_t *len)
{
	struct ipc_reg_mr_req *q = (struct ipc_reg_mr_req *)(void *)buf;

	memset(buf, 0, sizeof(*q) + sizeof(q->segs[0]));
	*q = (struct ipc_reg_mr_req){ .va = PIN_VA, .len = MEM, .access = ODPEMU_ACCESS_LOCAL_WRITE |
		ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ, .pd = 1, .nsegs = 1 };
	q->segs[0] = (struct ipc_mr_seg){ MEM, 0 };
	*len = sizeof(*q) + sizeof(q->segs[0]);
	return q;
}

static uint32_t odp_lkey;	/* MR 9's, read by the prologue */

static void prologue(unsigned level)
{
	struct ipc_hello_req hello = { IPC_VERSION, 0 };
	struct ipc_create_cq_req cq = { 16, 2 };
	struct ipc_create_srq_req srq = { 1, 8, 2, 0 };
	struct ipc_create_qp_req qp;
	struct ipc_reg_mr_req odp = { .va = MEM_AT, .len = MEM, .access = ODPEMU_ACCESS_LOCAL_WRITE |
		ODPEMU_ACCESS_REMOTE_WRITE | ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_ON_DEMAND,
		.pd = 1 };
	struct ipc_watch_req watch = { MEM_AT, 4096, MEM_AT + 8 };
	struct ipc_modify_qp_req init = { .mask = ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX |
		ODPEMU_QP_PORT | ODPEMU_QP_ACCESS_FLAGS, .attr = { .qp_state = ODPEMU_QPS_INIT,
		.port_num = 1, .qp_access_flags = ODPEMU_ACCESS_REMOTE_WRITE } };
	uint8_t pin[sizeof(struct ipc_reg_mr_req) + sizeof(struct ipc_mr_seg)];
	size_t pin_len;

	if (level == 0)
		return;
	must(call(IPC_HELLO, 0, &hello, sizeof(hello), 0));
	if (level == 1)
		return;
	must(call(IPC_ALLOC_PD, 0, NULL, 0, 0));
	must(call(IPC_CREATE_CHANNEL, 0, NULL, 0, 0));
	must(call(IPC_CREATE_CQ, 0, &cq, sizeof(cq), 0));
	cq.channel = 0;
	must(call(IPC_CREATE_CQ, 0, &cq, sizeof(cq), 0));
	must(call(IPC_CREATE_SRQ, 0, &srq, sizeof(srq), 0));
	qp = qp_req(ODPEMU_QPT_RC, 0);
	must(call(IPC_CREATE_QP, 0, &qp, sizeof(qp), 0));
	qp = qp_req(ODPEMU_QPT_UD, 0);
	must(call(IPC_CREATE_QP, 0, &qp, sizeof(qp), 0));
	qp = qp_req(ODPEMU_QPT_RC, 5);
	must(call(IPC_CREATE_QP, 0, &qp, sizeof(qp), 0));
	must(call(IPC_REG_MR, 0, &odp, sizeof(odp), 0));
	odp_lkey = ((const struct ipc_reg_mr_rep *)(const void *)last.body)->lkey;
	pinned_req(pin, &pin_len);
	must(call(IPC_REG_MR, 0, pin, pin_len, F_MEMFD));
	must(call(IPC_WATCH_CREATE, 0, &watch, sizeof(watch), 0));
	must(call(IPC_MODIFY_QP, 6, &init, sizeof(init), 0));
	if (last.h.handle != 6 || sess->tab->nobjs < 12 || !sess->tab->objs[11])
		abort();
}

/* ---- the session's life ---- */

static void session_open(void)
{
	int sv[2];

	/* Counted now, not once at the start: libFuzzer itself opens pipes between inputs
	 * (to llvm-symbolizer, when it first prints a NEW_FUNC). */
	fds_at_rest = fz_count_fds();
	fz_nic_up(&d);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) ||
	    emu_session_accept(&d, sv[0]))
		abort();
	sess = d.sessions;
	client = sv[1];
}

/* The client goes: the session closes as on its socket's end of file; the loop hands
 * back its polls' last completions, which free it. */
static void session_close(void)
{
	unsigned n;

	if (!sess->dead)
		emu_session_close(sess);
	close(client);
	client = -1;
	for (int i = 0; i < 8 && d.closing_sessions; i++)
		emu_loop_run_once(&d.loop, 0);
	if (d.closing_sessions || d.sessions)
		__builtin_trap();	/* the session outlived its close */
	sess = NULL;
	fz_nic_down(&d);
	fz_knobs_reset(&d);
	if ((n = fz_count_fds()) != fds_at_rest) {
		fprintf(stderr, "fuzz-ctl: %u file descriptors open, %u before the session\n", n,
			fds_at_rest);
		fz_list_fds();
		__builtin_trap();	/* a file descriptor outlived the session, or one closed
					 * that was not the session's */
	}
}

/* ---- the corpus ---- */

struct rec {
	unsigned flags;
	size_t len;
	uint8_t b[MAX_LEN];
};

static size_t put_rec(uint8_t *out, const struct rec *r)
{
	out[0] = (uint8_t)r->flags;
	out[1] = (uint8_t)r->len;
	out[2] = (uint8_t)(r->len >> 8);
	memcpy(out + 3, r->b, r->len);
	return 3 + r->len;
}

static struct rec *rec_msg(struct rec *r, unsigned flags, unsigned op, uint32_t handle,
			   const void *body, size_t len)
{
	r->flags = flags;
	r->len = msg(r->b, op, handle, body, len);
	return r;
}

/* One seed: the mode byte, then up to three requests. */
struct seed {
	const char *name;
	unsigned mode;
	unsigned n;
	struct rec r[3];
};

static int write_seed(const char *dir, const struct seed *s)
{
	static uint8_t out[1 + 3 * (MAX_LEN + 3)];
	char path[4096];
	size_t at = 1;
	FILE *f;
	int rc = 0;

	out[0] = (uint8_t)s->mode;
	for (unsigned i = 0; i < s->n; i++)
		at += put_rec(out + at, &s->r[i]);
	snprintf(path, sizeof(path), "%s/%s", dir, s->name);
	if (!(f = fopen(path, "wb")))
		return 1;
	if (fwrite(out, 1, at, f) != at)
		rc = 1;
	return fclose(f) ? 1 : rc;
}

static int write_corpus(const char *dir)
{
	static struct seed s;
	struct ipc_hello_req hello = { IPC_VERSION, 0 };
	struct ipc_create_cq_req cq = { 64, 0 };
	struct ipc_resize_cq_req grow = { 100, 0 }, none = { 0, 0 };
	struct ipc_create_srq_req srq = { 1, 16, 1, 4 };
	struct ipc_modify_srq_req msrq = { 2, 0 };
	struct ipc_create_qp_req qp = qp_req(ODPEMU_QPT_RC, 0);
	struct ipc_modify_qp_req rtr = { .mask = ODPEMU_QP_STATE | ODPEMU_QP_AV |
		ODPEMU_QP_PATH_MTU | ODPEMU_QP_DEST_QPN | ODPEMU_QP_RQ_PSN |
		ODPEMU_QP_MAX_DEST_RD_ATOMIC | ODPEMU_QP_MIN_RNR_TIMER,
		.attr = { .qp_state = ODPEMU_QPS_RTR, .path_mtu = ODPEMU_MTU_1024,
		.dest_qp_num = 0x33, .rq_psn = 5, .max_dest_rd_atomic = 4, .is_global = 1,
		.port_num = 1, .dgid = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 } } };
	struct ipc_reg_mr_req odp = { .va = MEM_AT + 0x4000, .len = 0x2000,
		.access = ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_ON_DEMAND, .pd = 1 };
	struct ipc_reg_mr_req byaddr = { .va = MEM_AT, .len = 0x1000,
		.access = ODPEMU_ACCESS_LOCAL_WRITE, .pd = 1, .flags = IPC_REG_MR_BY_ADDRESS };
	struct ipc_advise_req adv = { .advice = 1, .flags = ODPEMU_ADVISE_MR_FLAG_FLUSH,
		.nsge = 1, .sge = { { MEM_AT + 0x3000, 0x2000, odp_lkey } } };
	struct ipc_counters_req ctr[] = { { IPC_CTR_DEV, 0, 0, 0 }, { IPC_CTR_QP, 0, 0, 0 },
		{ IPC_CTR_MR, 0, 0, 0 }, { IPC_CTR_LIST, 0, 0, 0 }, { IPC_CTR_DEV, 0, 0, 40 },
		{ IPC_CTR_QP, IPC_CTR_ANY, 0x11, 0 } };
	struct ipc_inject_req inj = { "fault-policy", "rnr" }, wire = { "wire-loss", "tx:0.5" };
	struct ipc_watch_req watch = { MEM_AT + 0x100, 64, MEM_AT + 0x200 };
	struct ipc_cm_listen_req listen = { .channel = 12, .ps = 0x0106, .addr = { .port = 7000 } };
	struct ipc_cm_connect_req conn = { .channel = 12, .ps = 0x0106,
		.src = { .gid = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 }, .port = 40000 },
		.dst = { .gid = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 }, .port = 7000 },
		.qp = { .qpn = 0x11, .psn = 9, .qp_type = ODPEMU_QPT_RC, .mtu = ODPEMU_MTU_1024 } };
	struct ipc_cm_private priv = { .len = 8 };
	struct ipc_supervise_req sup = { MEM_AT };
	uint8_t pin[sizeof(struct ipc_reg_mr_req) + sizeof(struct ipc_mr_seg)];
	size_t pin_len;
	int rc = 0;

	mkdir(dir, 0755);
	pinned_req(pin, &pin_len);
	/* One request after the prologue; F_FIX keeps a seed valid when IPC_VERSION moves
	 * (the malformed seeds at the end go without it). */
#define SEED1(nm, md, fl, op, h, body, blen) do { \
		memset(&s, 0, sizeof(s)); \
		s.name = nm; s.mode = md; s.n = 1; \
		rec_msg(&s.r[0], (fl) | F_FIX, op, h, body, blen); \
		rc |= write_seed(dir, &s); \
	} while (0)
	SEED1("hello", 0, 0, IPC_HELLO, 0, &hello, sizeof(hello));
	SEED1("no-hello", 0, 0, IPC_QUERY_DEVICE, 0, NULL, 0);
	SEED1("hello-twice", 1, 0, IPC_HELLO, 0, &hello, sizeof(hello));
	SEED1("query-device", 2, 0, IPC_QUERY_DEVICE, 0, NULL, 0);
	SEED1("query-port", 2, 0, IPC_QUERY_PORT, 0, NULL, 0);
	SEED1("alloc-pd", 2, 0, IPC_ALLOC_PD, 0, NULL, 0);
	SEED1("dealloc-pd-busy", 2, 0, IPC_DEALLOC_PD, 1, NULL, 0);
	SEED1("reg-mr-odp", 2, 0, IPC_REG_MR, 0, &odp, sizeof(odp));
	SEED1("reg-mr-pinned", 2, F_MEMFD, IPC_REG_MR, 0, pin, pin_len);
	SEED1("reg-mr-shared", 2, F_FILE, IPC_REG_MR, 0, pin, pin_len);
	SEED1("reg-mr-no-fd", 2, 0, IPC_REG_MR, 0, pin, pin_len);
	SEED1("reg-mr-by-address", 2, 0, IPC_REG_MR, 0, &byaddr, sizeof(byaddr));
	SEED1("dereg-mr", 2, 0, IPC_DEREG_MR, 9, NULL, 0);
	SEED1("restore-mr", 2, F_MEMFD, IPC_RESTORE_MR, 10, pin, pin_len);
	SEED1("advise-mr", 2 | 4, 0, IPC_ADVISE_MR, 1, &adv, sizeof(adv));
	SEED1("advise-mr-fails", 2, 0, IPC_ADVISE_MR, 1, &adv, sizeof(adv));
	SEED1("create-channel", 2, 0, IPC_CREATE_CHANNEL, 0, NULL, 0);
	SEED1("destroy-channel-busy", 2, 0, IPC_DESTROY_CHANNEL, 2, NULL, 0);
	SEED1("create-cq", 2, 0, IPC_CREATE_CQ, 0, &cq, sizeof(cq));
	SEED1("destroy-cq-busy", 2, 0, IPC_DESTROY_CQ, 4, NULL, 0);
	SEED1("resize-cq", 2, 0, IPC_RESIZE_CQ, 3, &grow, sizeof(grow));
	SEED1("resize-cq-zero", 2, 0, IPC_RESIZE_CQ, 4, &none, sizeof(none));
	SEED1("create-srq", 2, 0, IPC_CREATE_SRQ, 0, &srq, sizeof(srq));
	SEED1("modify-srq", 2, 0, IPC_MODIFY_SRQ, 5, &msrq, sizeof(msrq));
	SEED1("destroy-srq-busy", 2, 0, IPC_DESTROY_SRQ, 5, NULL, 0);
	SEED1("create-qp", 2, 0, IPC_CREATE_QP, 0, &qp, sizeof(qp));
	SEED1("modify-qp-rtr", 2, 0, IPC_MODIFY_QP, 6, &rtr, sizeof(rtr));
	SEED1("query-qp", 2, 0, IPC_QUERY_QP, 6, NULL, 0);
	SEED1("destroy-qp", 2, 0, IPC_DESTROY_QP, 7, NULL, 0);
	for (unsigned i = 0; i < sizeof(ctr) / sizeof(ctr[0]); i++) {
		char name[32];

		ctr[i].id = ctr[i].scope == IPC_CTR_MR && !ctr[i].flags ? 9 :
			    ctr[i].scope == IPC_CTR_QP && !ctr[i].flags ? 6 : ctr[i].id;
		snprintf(name, sizeof(name), "counters-%u", i);
		SEED1(name, 2, 0, IPC_COUNTERS, 0, &ctr[i], sizeof(ctr[i]));
	}
	SEED1("inject", 2, 0, IPC_INJECT, 0, &inj, sizeof(inj));
	SEED1("inject-wire", 2, 0, IPC_INJECT, 0, &wire, sizeof(wire));
	SEED1("get-inject", 2, 0, IPC_GET_INJECT, 0, &wire, sizeof(wire));
	SEED1("supervise-not-seccomp", 2, F_PIPE, IPC_SUPERVISE, 0, &sup, sizeof(sup));
	SEED1("watch-create", 2, 0, IPC_WATCH_CREATE, 0, &watch, sizeof(watch));
	SEED1("watch-destroy", 2, 0, IPC_WATCH_DESTROY, 11, NULL, 0);
	SEED1("lease-ack", 2, 0, IPC_LEASE_ACK, 10, NULL, 0);
	SEED1("cm-channel", 2, F_SOCK, IPC_CM_CHANNEL, 0, NULL, 0);
	SEED1("cm-destroy-none", 2, 0, IPC_CM_DESTROY, 3, NULL, 0);
	SEED1("unknown-op", 2, 0, 99, 0, NULL, 0);

	/* The CM: a channel, then a listener or a connection on it (handle 12). */
	memset(&s, 0, sizeof(s));
	s.name = "cm-listen";
	s.mode = 2;
	s.n = 2;
	rec_msg(&s.r[0], F_FIX | F_SOCK, IPC_CM_CHANNEL, 0, NULL, 0);
	rec_msg(&s.r[1], F_FIX, IPC_CM_LISTEN, 0, &listen, sizeof(listen));
	rc |= write_seed(dir, &s);
	s.name = "cm-connect";
	s.n = 3;
	rec_msg(&s.r[1], F_FIX, IPC_CM_CONNECT, 0, &conn, sizeof(conn));
	rec_msg(&s.r[2], F_FIX, IPC_CM_DISCONNECT, 13, &priv, sizeof(priv));
	rc |= write_seed(dir, &s);

	/* Malformed: version, length field, short, truncated, empty (the session ends; with
	 * fds, which it must close too). */
	memset(&s, 0, sizeof(s));
	s.mode = 2;
	s.n = 1;
	s.name = "bad-version";
	rec_msg(&s.r[0], 0, IPC_QUERY_DEVICE, 0, NULL, 0);
	s.r[0].b[0] = 2;
	rc |= write_seed(dir, &s);
	s.name = "bad-length";
	rec_msg(&s.r[0], 0, IPC_QUERY_DEVICE, 0, NULL, 0);
	s.r[0].b[4] = 99;
	rc |= write_seed(dir, &s);
	s.name = "short";
	s.r[0].len = 6;
	rc |= write_seed(dir, &s);
	s.name = "truncated";
	rec_msg(&s.r[0], F_FIX, IPC_QUERY_DEVICE, 0, NULL, 0);
	s.r[0].len = IPC_MAX_MSG + 8;
	rc |= write_seed(dir, &s);
	s.name = "empty-ends-session";
	s.r[0].len = 0;
	rc |= write_seed(dir, &s);
	s.name = "empty-with-fds";	/* the end of the session, with every kind of fd */
	s.r[0].flags = F_MEMFD | F_SOCK | F_FILE | F_PIPE;
	rc |= write_seed(dir, &s);
	return rc;
}

/* ---- libFuzzer ---- */

static int memfd(bool sealed)
{
	int fd = memfd_create("fuzz-ctl", MFD_CLOEXEC | (sealed ? MFD_ALLOW_SEALING : 0));

	if (fd < 0 || ftruncate(fd, MEM) ||
	    (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL)))
		abort();
	return fd;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int sv[2], p[2];
	void *mem;

	fz_daemon_init(&d, true);
	mem = mmap((void *)MEM_AT, MEM, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (mem != (void *)MEM_AT || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) ||
	    pipe2(p, O_CLOEXEC))
		abort();
	fz_client_mem(1, mem, MEM);
	proto_fd[0] = memfd(true);
	proto_fd[1] = sv[0];
	proto_fd[2] = memfd(false);
	proto_fd[3] = p[0];
	trace = getenv("ODPEMU_FUZZ_TRACE") != NULL;
	for (int i = 1; i < *argc; i++)
		if (!strncmp((*argv)[i], "--write-corpus=", 15)) {
			int rc;

			session_open();
			prologue(2);		/* odp_lkey */
			session_close();
			rc = write_corpus((*argv)[i] + 15);
			exit(rc);
		}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t m[MAX_LEN];
	unsigned mode;

	if (size < 1)
		return 0;
	mode = data[0];
	session_open();
	prologue(mode & 3);
	data++;
	size--;
	for (unsigned k = 0; k < MAX_REQS && size >= 3 && !sess->dead; k++) {
		unsigned flags = data[0];
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (len > MAX_LEN)
			len = MAX_LEN;
		memcpy(m, data, len);
		data += len;
		size -= len;
		if ((flags & F_FIX) && len >= sizeof(struct ipc_hdr)) {
			struct ipc_hdr *h = (struct ipc_hdr *)(void *)m;

			h->version = IPC_VERSION;
			h->len = (uint32_t)len;
		}
		request(m, len, (flags & F_INPUT) | ((mode & 4) ? F_PAGES : 0));
	}
	session_close();
	return 0;
}
