/* SPDX-License-Identifier: MIT */
/* fz_emu — see fz_emu.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fz_emu.h"
#include "log.h"
#include "ports.h"
#include "roce.h"
#include "session.h"
#include "io/udp_int.h"	/* sizeof(struct emu_udp): COUNTERS reads its statistics */

#define MAX_JOBS	4096	/* page requests waiting for an answer, at most */
#define ANSWER_ROUNDS	16

uint64_t fz_sent;

static struct fz_mem {
	uint64_t base, len;
} client_mem[FZ_MAX_CLIENTS];

static struct emu_fault_job *jobs[MAX_JOBS];
static unsigned njobs;

/* ---- the wire ---- */

/* Well formed for some path MTU, sealed for the flow from this device to dst. */
static bool sent_ok(const struct emu_daemon *d, const struct nic_gid *dst, const uint8_t *pkt,
		    size_t len)
{
	static const unsigned pmtus[] = { 256, 512, 1024, 2048, 4096 };
	enum roce_reason why = ROCE_R_BAD_PMTU;
	struct roce_flow4 f4 = { .sport = d->opt.port, .dport = d->opt.port };
	struct roce_flow6 f6 = { .sport = d->opt.port, .dport = d->opt.port };
	struct roce_pkt p;

	for (unsigned i = 0; i < 5 && why != ROCE_R_OK; i++)
		why = roce_parse(pkt, len, pmtus[i], &p);
	/* A UD WR names its destination QP itself: 0 (or a number over 24 bits, cut to 0)
	 * goes out as the application asked, and the receiver drops it (BAD_QPN). */
	if (why == ROCE_R_BAD_QPN && roce_opcode_transport(pkt[0]) == ROCE_UD)
		return true;
	if (why != ROCE_R_OK) {
		fprintf(stderr, "fz_emu: the NIC sent a packet of %zu bytes that does not parse: "
			"%s\n", len, roce_reason_str(why));
		return false;
	}
	if (nic_gid_is_v4(&d->gid) && nic_gid_is_v4(dst)) {
		memcpy(&f4.saddr, d->gid.raw + 12, 4);
		memcpy(&f4.daddr, dst->raw + 12, 4);
		return roce_icrc4_ok(&f4, pkt, len);
	}
	memcpy(f6.saddr, d->gid.raw, 16);
	memcpy(f6.daddr, dst->raw, 16);
	return roce_icrc6_ok(&f6, pkt, len);
}

static void port_send(void *ctx, const struct nic_gid *dst, const uint8_t *pkt, size_t len)
{
	fz_sent++;
	if (!sent_ok(ctx, dst, pkt, len))
		__builtin_trap();	/* the NIC sent a malformed or badly sealed packet */
}

/* ---- host memory ---- */

/* Inside a pinned MR's mapping of client's session (the daemon's view of its pages). */
static bool in_pins(struct emu_daemon *d, uint32_t client, uint64_t at, size_t len)
{
	struct emu_session *s = emu_session_by_id(d, client);

	if (!s)
		return false;
	emu_for_each_obj(mr, s, EMU_OBJ_MR) {
		uint64_t pin = (uint64_t)(uintptr_t)mr->u.mr.pin;

		if (pin && at >= pin && len <= mr->u.mr.pin_len && at - pin <= mr->u.mr.pin_len - len)
			return true;
	}
	return false;
}

static void *host_ptr(struct emu_daemon *d, uint32_t client, uint64_t host, size_t len)
{
	const struct fz_mem *m = client < FZ_MAX_CLIENTS ? &client_mem[client] : NULL;
	uint64_t at = PIN_ADDR(host);

	if (host & PIN_TAG) {
		if (!in_pins(d, client, at, len))
			__builtin_trap();	/* outside every pinned MR of the client */
	} else if (!m || !m->len || host < m->base || len > m->len || host - m->base > m->len - len) {
		__builtin_trap();		/* outside the client's memory */
	}
	return (void *)(uintptr_t)at;
}

static int port_read(void *ctx, uint32_t client, uint64_t host, void *dst, size_t len)
{
	memcpy(dst, host_ptr(ctx, client, host, len), len);
	return 0;
}

static int port_write(void *ctx, uint32_t client, uint64_t host, const void *src, size_t len)
{
	memcpy(host_ptr(ctx, client, host, len), src, len);
	return 0;
}

/* ---- page faults ---- */

/* As ports.c: a job for the request; a synchronous advise_mr of the session counts it. */
static void port_fault(void *ctx, uint32_t client, struct iopt_req *req)
{
	struct emu_session *s = emu_session_by_id(ctx, client);
	struct emu_fault_job *j = calloc(1, sizeof(*j));

	if (!j || njobs == MAX_JOBS)
		abort();
	j->req = req;
	j->client = client;
	j->uffd = j->maps_fd = j->pagemap_fd = -1;
	if (s && s->advise_waiting) {
		j->advise = true;
		s->advise_pending++;
	}
	jobs[njobs++] = j;
}

unsigned fz_faults_pending(void)
{
	return njobs;
}

static void resolve(struct emu_fault_job *j, bool fail)
{
	const struct fz_mem *m = j->client < FZ_MAX_CLIENTS ? &client_mem[j->client] : NULL;
	const struct iopt_req *r = j->req;

	j->due_ns = 0;
	if (fail || !m || !m->len || r->va < m->base || r->len > m->len ||
	    r->va - m->base > m->len - r->len) {
		j->err = -EFAULT;
		return;
	}
	j->maps[0] = (struct iopt_map){ r->va, r->len, r->va, IOPT_READ | IOPT_WRITE };
	j->nmaps = 1;
}

void fz_answer_faults(struct emu_daemon *d, bool fail)
{
	for (unsigned round = 0; njobs && round < ANSWER_ROUNDS; round++) {
		unsigned n = njobs;

		njobs = 0;
		for (unsigned k = 0; k < n; k++) {
			resolve(jobs[k], fail || round == ANSWER_ROUNDS - 1);
			emu_answers_add(&d->answers, jobs[k]);
		}
		emu_answers_deliver(d, emu_now_ns());
	}
	if (njobs || d->answers.head)
		__builtin_trap();	/* answers that never end */
}

/* ---- the daemon ---- */

void fz_client_mem(uint32_t client, void *base, size_t len)
{
	if (client >= FZ_MAX_CLIENTS)
		abort();
	client_mem[client] = (struct fz_mem){ (uint64_t)(uintptr_t)base, len };
}

void fz_knobs_reset(struct emu_daemon *d)
{
	emu_inject_fini(&d->inject);
	emu_inject_init(&d->inject, 1);
	emu_wire_rules_init(&d->wire.rules, 1);
	d->default_policy = NIC_FAULT_STALL;
}

void fz_daemon_init(struct emu_daemon *d, bool with_loop)
{
	static const struct emu_options opt = { .name = "fuzz0", .port = ROCE_UDP_PORT,
		.seed = 1 };

	memset(d, 0, sizeof(*d));
	emu_log_level = getenv("ODPEMU_FUZZ_TRACE") ? EMU_LOG_DEBUG : -1;
	d->opt = opt;
	d->opt.personality = nic_personality_at(0);	/* odpemud's default, as its options */
	d->gid = nic_gid_from_v4(0x0a000001u);
	d->listen_fd = d->signal_fd = -1;
	d->port_up = true;
	d->udp = calloc(1, sizeof(*d->udp));	/* no socket: COUNTERS reads zeroes */
	d->status_fd = memfd_create("odpemu-status", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	emu_inject_init(&d->inject, 1);
	if (!d->udp || d->status_fd < 0 || ftruncate(d->status_fd, 4096) ||
	    emu_wire_init(&d->wire, 1, emu_ports_wire_out, d) ||
	    (with_loop && emu_loop_init(&d->loop, 256, EMU_LOOP_URING)))
		abort();
}

void fz_nic_up(struct emu_daemon *d)
{
	/* A small stall queue: odpemud's 256 held packets are 1 MiB per QP to allocate and
	 * free for every input, and these targets receive no packets. */
	struct nic_config cfg = { .gid = d->gid, .udp_sport = d->opt.port,
		.udp_dport = d->opt.port, .stall_queue = 4 };

	/* odpemud's own ports for events and completions; the world's replaced. */
	emu_ports_init(d, &cfg.ports);
	cfg.ports.send = port_send;
	cfg.ports.mem_read = port_read;
	cfg.ports.mem_write = port_write;
	cfg.ports.fault = port_fault;
	cfg.ports.tx_slot = NULL;
	cfg.ports.persist = NULL;
	cfg.ports.persist_cancel = NULL;
	if (nic_create(&cfg, &d->nic))
		abort();
	emu_cm_init(&d->cm, d->nic, &d->gid, 1);
	d->next_client = 1;
}

void fz_nic_down(struct emu_daemon *d)
{
	fz_answer_faults(d, true);
	emu_cm_free(&d->cm);
	if (nic_destroy(d->nic))
		__builtin_trap();	/* a NIC object outlived the sessions that made it */
	d->nic = NULL;
}

unsigned fz_count_fds(void)
{
	unsigned n = 0;

	for (int fd = 0; fd < FZ_MAX_FD; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

void fz_list_fds(void)
{
	for (int fd = 0; fd < FZ_MAX_FD; fd++) {
		char path[64], link[256];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if ((n = readlink(path, link, sizeof(link) - 1)) > 0)
			fprintf(stderr, "fz_emu: fd %d: %.*s\n", fd, (int)n, link);
	}
}
