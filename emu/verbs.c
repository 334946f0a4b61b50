/* SPDX-License-Identifier: MIT */
/*
 * verbs — the control ops of a session: HELLO, queries, PD, MR, advise, completion
 * channels, CQs, injection. QPs and SRQs are in verbs_qp.c. Each handler checks its body
 * (exact size, handles of this session, values) and replies exactly once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clients.h"
#include "host_op.h"
#include "counters.h"
#include "ctl.h"
#include "daemon.h"
#include "ipc_ring.h"
#include "log.h"
#include "nic.h"
#include "host/notifier.h"
#include "ports.h"
#include "rings.h"
#include "session.h"
#include "verbs.h"
#include "host/lease.h"
#include "limits.h"
#include "host/watch.h"


static int ok(struct emu_req *r, const void *body, size_t len)
{
	return emu_ctl_reply(r->s, r->hdr, 0, body, len, NULL, 0);
}

static int ok_fd(struct emu_req *r, const void *body, size_t len, int fd)
{
	int rc = emu_ctl_reply(r->s, r->hdr, 0, body, len, &fd, 1);

	close(fd);	/* the client has its own copy now (or is gone) */
	return rc;
}

/* ---- HELLO ---- */

bool emu_fd_is_anon(int fd, const char *name)
{
	char path[64], link[80], want[80];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	snprintf(want, sizeof(want), "anon_inode:%s", name);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return !strcmp(link, want);
}

/* Is fd a userfaultfd? Anything else (a file, a pipe) would be polled and read as one. */
static bool is_uffd(int fd)
{
	return emu_fd_is_anon(fd, "[userfaultfd]");
}

/* The relay of the client's userfaultfd events must be a SOCK_SEQPACKET socket: records
 * arrive whole. */
static bool is_seqpacket(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	return !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) && type == SOCK_SEQPACKET;
}

/* A pipe that carries events to a client: our write end never blocks the loop; the
 * client's read end blocks, as a kernel event fd does (ibv_get_cq_event and
 * ibv_get_async_event wait unless the client makes it non-blocking itself). The two ends
 * are separate open files, so the flags stay apart. 0 or -1 with errno. */
static int event_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC))
		return -1;
	if (fcntl(p[1], F_SETFL, O_NONBLOCK) == 0)
		return 0;
	close(p[0]);
	close(p[1]);
	return -1;
}

/* HELLO's fds (ipc.h): the process's userfaultfd and its relay socket, or the relay socket
 * alone (the seccomp route). Anything else is ignored: the session works without a
 * notifier. 1 when the userfaultfd came. */
static uint32_t take_notifier(struct emu_req *r, uint32_t flags)
{
	if ((flags & IPC_HELLO_HAS_UFFD) && r->nfds == 2 && is_uffd(r->fds[0]) &&
	    is_seqpacket(r->fds[1])) {
		emu_session_set_uffd(r->s, r->fds[0], r->fds[1]);
		r->fds[0] = r->fds[1] = -1;
		return 1;
	}
	if ((flags & IPC_HELLO_HAS_RELAY) && r->nfds == 1 && is_seqpacket(r->fds[0])) {
		emu_session_set_uffd(r->s, -1, r->fds[0]);
		r->fds[0] = -1;
	}
	return 0;
}

static int op_hello(struct emu_req *r)
{
	const struct ipc_hello_req *q = r->body;
	int rc;

	EMU_WANT_BODY(r, struct ipc_hello_req);
	if (q->flags & IPC_HELLO_HAS_CMD_FD) {
		if (!r->nfds)
			return emu_reply_err(r, -EINVAL, "HELLO: IPC_HELLO_HAS_CMD_FD without it");
		rc = emu_import_take_cmd_fd(r, r->fds[r->nfds - 1]);
		close(r->fds[--r->nfds]);	/* kept, it would hold the connection open */
		if (rc)
			return rc;
	}
	return emu_hello_finish(r, q->flags);
}

int emu_hello_finish(struct emu_req *r, uint32_t flags)
{
	struct emu_session *s = r->s;
	struct ipc_hello_rep rep = { .session = s->id, .daemon_pid = (uint32_t)getpid() };
	int p[2], fds[4], rc;

	if ((rc = emu_session_db(s, &fds[3])))
		return emu_reply_err(r, rc, "doorbell page: %s", strerror(-rc));
	if (event_pipe(p)) {
		rc = -errno;
		close(fds[3]);
		munmap(s->db, sizeof(*s->db));
		s->db = NULL;
		return emu_reply_err(r, rc, "pipe: %s", strerror(-rc));
	}
	snprintf(rep.name, sizeof(rep.name), "%s", s->d->opt.name);
	rep.notifier = take_notifier(r, flags);
	rep.traits = s->d->opt.personality->cq_clean ? IPC_TRAIT_CQ_CLEAN : 0;
	s->event_wr = p[1];
	fds[0] = p[0];
	fds[1] = s->doorbell;
	fds[2] = s->d->status_fd;
	s->hello_done = true;
	emu_ctl_reply(s, r->hdr, 0, &rep, sizeof(rep), fds, 4);
	close(p[0]);
	close(fds[3]);		/* the client has its copy; the mapping stays */
	if (!s->d->port_up)
		emu_session_event(s, ODPEMU_EVENT_PORT_ERR, 1);
	return 0;
}

/* ---- queries ---- */

static int op_query_device(struct emu_req *r)
{
	const struct nic_device_attr *a = nic_attr(r->s->d->nic);
	struct ipc_device_rep rep = {
		.max_mr_size = a->max_mr_size, .page_size_cap = a->page_size_cap,
		.vendor_id = a->vendor_id, .vendor_part_id = a->vendor_part_id,
		.hw_ver = a->hw_ver, .max_qp = a->max_qp, .max_qp_wr = a->max_qp_wr,
		.max_sge = a->max_sge, .max_cq = a->max_cq, .max_cqe = a->max_cqe,
		.max_mr = a->max_mr, .max_pd = a->max_pd, .max_srq = a->max_srq,
		.max_srq_wr = a->max_srq_wr, .max_srq_sge = a->max_srq_sge,
		.max_inline_data = a->max_inline_data, .max_qp_rd_atom = a->max_qp_rd_atom,
		.max_qp_init_rd_atom = a->max_qp_init_rd_atom, .max_pkeys = a->max_pkeys,
		.gid_tbl_len = a->gid_tbl_len, .odp_general_caps = a->odp.general_caps,
		.odp_rc_caps = a->odp.rc_odp_caps, .odp_uc_caps = a->odp.uc_odp_caps,
		.odp_ud_caps = a->odp.ud_odp_caps, .max_mw = a->max_mw,
		.max_mcast_grp = a->max_mcast_grp, .max_mcast_qp_attach = a->max_mcast_qp_attach,
		.max_total_mcast_qp_attach = a->max_total_mcast_qp_attach,
		.device_cap_flags = a->device_cap_flags,
	};

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "QUERY_DEVICE has no body");
	memcpy(&rep.node_guid, nic_gid(r->s->d->nic)->raw + 8, 8);
	snprintf(rep.fw_ver, sizeof(rep.fw_ver), "%s", r->s->d->opt.personality->fw_ver);
	return ok(r, &rep, sizeof(rep));
}

static int op_query_port(struct emu_req *r)
{
	struct emu_daemon *d = r->s->d;
	struct ipc_port_rep rep = {
		.state = d->port_up ? ODPEMU_PORT_ACTIVE : ODPEMU_PORT_DOWN,
		.max_mtu = d->opt.personality->max_mtu, .active_mtu = d->netdev.active_mtu,
		.netdev_mtu = d->netdev.mtu, .udp_port = d->opt.port,
		.netdev_ifindex = (uint32_t)d->netdev.ifindex,
		.fault_policy = d->default_policy == NIC_FAULT_RNR ? ODPEMU_FAULT_POLICY_RNR
								   : ODPEMU_FAULT_POLICY_STALL,
		.fault_around = d->opt.fault_around ? d->opt.fault_around : IOPT_FAULT_AROUND_DEFAULT,
	};

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "QUERY_PORT has no body");
	snprintf(rep.netdev, sizeof(rep.netdev), "%s", d->netdev.name);
	snprintf(rep.personality, sizeof(rep.personality), "%s", d->opt.personality->name);
	/* GID 0 is the address the device sends from; the interface's others follow. */
	memcpy(rep.gids[0], d->gid.raw, 16);
	rep.gid_tbl_len = 1;
	for (unsigned i = 0; i < d->netdev.ngids && rep.gid_tbl_len < IPC_MAX_GIDS; i++)
		if (memcmp(d->netdev.gids[i].raw, d->gid.raw, 16))
			memcpy(rep.gids[rep.gid_tbl_len++], d->netdev.gids[i].raw, 16);
	return ok(r, &rep, sizeof(rep));
}

/* ---- PD ---- */

static int op_alloc_pd(struct emu_req *r)
{
	struct emu_obj *o;
	struct ipc_handle_rep rep = { 0 };
	int rc;

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "ALLOC_PD has no body");
	if (!(o = emu_obj_new(r->s, EMU_OBJ_PD)))
		return emu_reply_no_obj(r, "alloc_pd");
	if ((rc = nic_pd_alloc(r->s->d->nic, r->s->id, &o->u.pd))) {
		emu_obj_free(o);
		return emu_reply_nic(r, "alloc_pd", rc, EMU_LIMIT_PD, NULL);
	}
	rep.handle = o->handle;
	return ok(r, &rep, sizeof(rep));
}

static int destroy_reply(struct emu_req *r, enum emu_obj_type type, const char *what)
{
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, type);
	int rc;

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "%s has no body", what);
	if (!o)
		return emu_reply_err(r, -ENOENT, "%s: no such handle %u in this session", what,
				     r->hdr->handle);
	if ((rc = emu_obj_destroy(o)))
		return emu_reply_err(r, rc, "%s: %s", what, rc == -EBUSY ?
				     "still in use (destroy what uses it first)" :
				     rc == -EINVAL && type == EMU_OBJ_MR ? "memory windows are "
				     "bound to it (IBA 10.6.7.2.6: unbind or deallocate them first)" :
				     strerror(-rc));
	return ok(r, NULL, 0);
}

static int op_dealloc_pd(struct emu_req *r) { return destroy_reply(r, EMU_OBJ_PD, "dealloc_pd"); }
static int op_dereg_mr(struct emu_req *r) { return destroy_reply(r, EMU_OBJ_MR, "dereg_mr"); }
static int op_destroy_channel(struct emu_req *r)
{
	return destroy_reply(r, EMU_OBJ_CHANNEL, "destroy_channel");
}
static int op_destroy_cq(struct emu_req *r) { return destroy_reply(r, EMU_OBJ_CQ, "destroy_cq"); }

/* ---- MR ---- */

/* A pinned segment must be a regular file (memfd, shmem, a file): the client's pages.
 * *sealed: it cannot shrink (the library's memfds), so touching it cannot fault. */
static int pin_file(int fd, bool *sealed)
{
	struct stat st;
	int seals;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -EBADF;
	seals = fcntl(fd, F_GET_SEALS);
	*sealed = seals >= 0 && (seals & F_SEAL_SHRINK);
	return 0;
}

/* Map the client's pinned segments contiguously: the daemon's view of the pinned pages,
 * writable when the MR lets the NIC write. *guarded: some segment could shrink. */
static int map_pins(struct emu_req *r, const struct ipc_reg_mr_req *q, void **out, size_t *len,
		    bool *guarded)
{
	uint64_t start = q->va & ~4095ull, end = (q->va + q->len + 4095) & ~4095ull, at = 0;
	int prot = PROT_READ | ((q->access & ODPEMU_ACCESS_LOCAL_WRITE) ? PROT_WRITE : 0);
	char *base;
	bool sealed;

	if (q->nsegs != r->nfds)
		return -EBADF;
	*guarded = false;
	for (unsigned i = 0; i < r->nfds; i++) {
		if (pin_file(r->fds[i], &sealed))
			return -EBADF;
		*guarded |= !sealed;
	}
	base = mmap(NULL, end - start, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		    -1, 0);
	if (base == MAP_FAILED)
		return -ENOMEM;
	for (unsigned i = 0; i < q->nsegs; i++) {
		const struct ipc_mr_seg *g = &q->segs[i];

		if (!g->len || (g->len | g->fd_offset) & 4095 || g->len > end - start - at) {
			munmap(base, end - start);
			return -EINVAL;
		}
		if (mmap(base + at, g->len, prot, MAP_SHARED | MAP_FIXED, r->fds[i],
			 (off_t)g->fd_offset) == MAP_FAILED) {
			int e = errno == ENOMEM ? -ENOMEM : -EINVAL;	/* ENOMEM: the map count */

			munmap(base, end - start);
			return e;
		}
		at += g->len;
	}
	if (at != end - start) {
		munmap(base, end - start);
		return -EINVAL;
	}
	*out = base;
	*len = end - start;
	return 0;
}

/* The MR's host address and what kind of pin it is; 0 or an error reply. */
static int pin_host(struct emu_req *r, const struct ipc_reg_mr_req *q, struct nic_mr_init *init,
		    void **pin, size_t *pin_len)
{
	bool guarded;
	int rc;

	if (!q->len || q->va + q->len < q->va || q->va + q->len > IOPT_VA_END)
		return emu_reply_err(r, -EINVAL, "reg_mr: bad range");
	if (q->flags & IPC_REG_MR_BY_ADDRESS) {
		/* As ODP underneath: the pages are reached through the client's page tables. */
		if (q->nsegs)
			return emu_reply_err(r, -EINVAL, "reg_mr: a by-address MR has no segments");
		init->access |= ODPEMU_ACCESS_ON_DEMAND;
		r->s->d->ctr.mrs_pinned_by_address++;
		return 0;
	}
	if ((rc = map_pins(r, q, pin, pin_len, &guarded)) == -ENOMEM)
		return emu_reply_host_err(r, "reg_mr", "mapping the pinned pages", rc);
	if (rc)
		return emu_reply_err(r, rc, "reg_mr: the pinned segments do not cover the range "
				     "(%u segments, %u fds) or cannot be mapped", q->nsegs, r->nfds);
	init->host = PIN_TAG | (guarded ? PIN_GUARD_TAG : 0) |
		     ((uint64_t)(uintptr_t)*pin + (q->va & 4095));
	if (guarded)
		r->s->d->ctr.mrs_pinned_shared++;
	return 0;
}

/* A lease needs the process's seccomp listener here (the library hands it over first)
 * and pages the daemon holds: 0 or an error reply. */
static int lease_check(struct emu_req *r, const struct ipc_reg_mr_req *q)
{
	if (!(q->access & ODPEMU_ACCESS_LEASE))
		return 0;
	if (r->s->supervise < 0)
		return emu_reply_err(r, -EINVAL, "reg_mr: a lease needs the process's seccomp "
				     "listener on this daemon (IPC_SUPERVISE first)");
	if (q->flags & IPC_REG_MR_BY_ADDRESS)
		return emu_reply_err(r, -EINVAL, "reg_mr: a lease needs memory the daemon can "
				     "hold (not hugetlb or special mappings)");
	return 0;
}

static int op_reg_mr(struct emu_req *r)
{
	const struct ipc_reg_mr_req *q = r->body;
	struct emu_obj *pd, *o;
	struct nic_mr_init init;
	struct ipc_reg_mr_rep rep = { 0 };
	void *pin = NULL;
	size_t pin_len = 0;
	int rc;

	if (r->len < sizeof(*q) || q->nsegs > IPC_MAX_MR_SEGS ||
	    r->len != sizeof(*q) + q->nsegs * sizeof(q->segs[0]))
		return emu_reply_err(r, -EBADMSG, "REG_MR body of %zu bytes does not match its "
				     "segment count", r->len);
	if (!(pd = emu_obj_get(r->s, q->pd, EMU_OBJ_PD)))
		return emu_reply_err(r, -ENOENT, "reg_mr: no PD %u in this session", q->pd);
	init = (struct nic_mr_init){ .va = q->va, .len = q->len, .access = q->access,
				     .client = r->s->id };	/* the PD may be an import's */
	if (q->flags & ~IPC_REG_MR_BY_ADDRESS)
		return emu_reply_err(r, -EINVAL, "reg_mr: unknown flags %#x", q->flags);
	if ((rc = lease_check(r, q)))
		return rc;
	if (!(q->access & ODPEMU_ACCESS_ON_DEMAND)) {
		if ((rc = pin_host(r, q, &init, &pin, &pin_len)))
			return rc;
	} else if (q->nsegs || q->flags) {
		return emu_reply_err(r, -EINVAL, "reg_mr: an ODP MR has no segments");
	}
	if (!(o = emu_obj_new(r->s, EMU_OBJ_MR))) {
		if (pin)
			munmap(pin, pin_len);
		return emu_reply_no_obj(r, "reg_mr");
	}
	if ((rc = nic_mr_reg(pd->u.pd, &init, &o->u.mr.mr))) {
		emu_obj_free(o);
		if (pin)
			munmap(pin, pin_len);
		return emu_reply_nic(r, "reg_mr", rc, EMU_LIMIT_MR,
				     rc == -EINVAL || rc == -EOPNOTSUPP ?
				     nic_mr_init_why(r->s->d->nic, &init) : NULL);
	}
	nic_mr_set_owner(o->u.mr.mr, o);
	o->u.mr.pin = pin;
	o->u.mr.pin_len = pin_len;
	o->u.mr.va = q->va;
	o->u.mr.len = q->len;
	o->u.mr.access = q->access;
	o->u.mr.pd = pd;
	pd->refs++;
	if (q->access & ODPEMU_ACCESS_LEASE)
		emu_lease_attach(o);	/* the lease reports its decoherence itself */
	else if (pin)
		emu_notifier_watch(r->s, q->va, q->len);
	rep.handle = o->handle;
	rep.lkey = nic_mr_lkey(o->u.mr.mr);
	rep.rkey = nic_mr_rkey(o->u.mr.mr);
	return ok(r, &rep, sizeof(rep));
}

/* IPC_RESTORE_MR: a broken lease re-pointed at the pages the client pinned again (the
 * same request as REG_MR's, for the MR's own range, access and PD). The old pages go
 * once the NIC uses the new ones (nic_mr_lease_restore fills behind the break's fence). */
static int op_restore_mr(struct emu_req *r)
{
	const struct ipc_reg_mr_req *q = r->body;
	struct emu_obj *o = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_MR);
	struct nic_mr_init init;
	void *pin = NULL;
	size_t pin_len = 0;
	int rc;

	if (r->len < sizeof(*q) || q->nsegs > IPC_MAX_MR_SEGS ||
	    r->len != sizeof(*q) + q->nsegs * sizeof(q->segs[0]))
		return emu_reply_err(r, -EBADMSG, "RESTORE_MR body of %zu bytes does not match "
				     "its segment count", r->len);
	if (!o || !o->u.mr.lease.on)
		return emu_reply_err(r, -EINVAL, "restore_mr: no leased MR %u", r->hdr->handle);
	if (q->va != o->u.mr.va || q->len != o->u.mr.len || q->pd != o->u.mr.pd->handle ||
	    q->access != o->u.mr.access || (q->flags & IPC_REG_MR_BY_ADDRESS))
		return emu_reply_err(r, -EINVAL, "restore_mr: not the MR's range, PD and "
				     "access, or memory the daemon cannot hold");
	if (nic_mr_lease(o->u.mr.mr) == NIC_LEASE_REVOKED)
		return emu_reply_err(r, -EACCES, "restore_mr: MR %u was revoked (its lease was "
				     "not acknowledged in time)", o->handle);
	if (nic_mr_lease(o->u.mr.mr) != NIC_LEASE_BROKEN)
		return emu_reply_err(r, -EINVAL, "restore_mr: MR %u's lease is not broken",
				     o->handle);
	if (o->u.mr.lease.hold)		/* the pages mapped now are the ones going away */
		return emu_reply_err(r, -EBUSY, "restore_mr: the change that broke MR %u's lease "
				     "waits for its acknowledgement", o->handle);
	init = (struct nic_mr_init){ .va = q->va, .len = q->len, .access = q->access };
	if ((rc = pin_host(r, q, &init, &pin, &pin_len)))
		return rc;
	if ((rc = nic_mr_lease_restore(o->u.mr.mr, init.host))) {
		munmap(pin, pin_len);
		return emu_reply_err(r, rc, "restore_mr: %s", strerror(-rc));
	}
	if (o->u.mr.pin)
		munmap(o->u.mr.pin, o->u.mr.pin_len);
	o->u.mr.pin = pin;
	o->u.mr.pin_len = pin_len;
	r->s->d->ctr.lease_restores++;
	return ok(r, NULL, 0);
}

/* IPC_MR_SWAP_KEYS: two MRs of the session trade keys (ibv_rereg_mr keeps them: the
 * library registers the new translation, PD or access, swaps, and deregisters the old).
 * Leased MRs are refused: their lease follows the pages, not the key. */
static int op_mr_swap_keys(struct emu_req *r)
{
	const struct ipc_mr_swap_req *q = r->body;
	struct emu_obj *a = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_MR), *b;
	struct ipc_reg_mr_rep rep = { 0 };

	if (r->len != sizeof(*q))
		return emu_reply_err(r, -EBADMSG, "MR_SWAP_KEYS body of %zu bytes", r->len);
	b = emu_obj_get(r->s, q->other, EMU_OBJ_MR);
	if (!a || !b || a == b)
		return emu_reply_err(r, -EINVAL, "mr_swap_keys: MRs %u and %u are not two MRs of "
				     "this session", r->hdr->handle, q->other);
	if (a->u.mr.lease.on || b->u.mr.lease.on)
		return emu_reply_err(r, -EBUSY, "mr_swap_keys: a leased MR keeps its keys");
	if (nic_mr_swap_keys(a->u.mr.mr, b->u.mr.mr))
		return emu_reply_err(r, -EINVAL, "mr_swap_keys: MR %u or %u is going away",
				     a->handle, b->handle);
	rep.handle = a->handle;
	rep.lkey = nic_mr_lkey(a->u.mr.mr);
	rep.rkey = nic_mr_rkey(a->u.mr.mr);
	return ok(r, &rep, sizeof(rep));
}

/* ---- MW ---- */

static int op_alloc_mw(struct emu_req *r)
{
	const struct ipc_alloc_mw_req *q = r->body;
	struct ipc_alloc_mw_rep rep = { 0 };
	struct emu_obj *pd, *o;
	int rc;

	if (r->len != sizeof(*q))
		return emu_reply_err(r, -EBADMSG, "ALLOC_MW body of %zu bytes", r->len);
	if (!(pd = emu_obj_get(r->s, q->pd, EMU_OBJ_PD)))
		return emu_reply_err(r, -ENOENT, "alloc_mw: no PD %u in this session", q->pd);
	if (!(o = emu_obj_new(r->s, EMU_OBJ_MW)))
		return emu_reply_no_obj(r, "alloc_mw");
	if ((rc = nic_mw_alloc(pd->u.pd, q->type, &o->u.mw.mw))) {
		emu_obj_free(o);
		return emu_reply_nic(r, "alloc_mw", rc, EMU_LIMIT_MW, rc == -EINVAL ?
				     "memory window type 1 or 2 only" : NULL);
	}
	nic_mw_set_owner(o->u.mw.mw, o);
	o->u.mw.pd = pd;
	pd->refs++;
	rep.handle = o->handle;
	rep.rkey = nic_mw_rkey(o->u.mw.mw);
	return ok(r, &rep, sizeof(rep));
}

static int op_dealloc_mw(struct emu_req *r) { return destroy_reply(r, EMU_OBJ_MW, "dealloc_mw"); }

/* The MR of this session whose lkey is `lkey` (nic/'s key table: O(1)). */
static struct emu_obj *mr_by_lkey(struct emu_session *s, uint32_t lkey)
{
	struct emu_obj *mr = nic_mr_owner_by_key(s->d->nic, lkey);

	return mr && mr->type == EMU_OBJ_MR && mr->s == s ? mr : NULL;
}

static int op_advise_mr(struct emu_req *r)
{
	const struct ipc_advise_req *q = r->body;
	struct emu_session *s = r->s;
	int rc = 0;

	EMU_WANT_BODY(r, struct ipc_advise_req);
	if (!emu_obj_get(s, r->hdr->handle, EMU_OBJ_PD) || !q->nsge || q->nsge > IPC_MAX_ADVISE_SGE ||
	    q->flags & ~(uint32_t)ODPEMU_ADVISE_MR_FLAG_FLUSH)
		return emu_reply_err(r, -EINVAL, "advise_mr: bad PD, SGE count or flags");
	s->advise_pending = 0;
	s->advise_err = 0;
	s->advise_waiting = true;	/* ports.c counts the requests handed out meanwhile */
	for (unsigned i = 0; i < q->nsge && !rc; i++) {
		struct emu_obj *mr = mr_by_lkey(s, q->sge[i].lkey);

		if (!mr)
			rc = -EINVAL;
		else
			rc = nic_mr_advise(mr->u.mr.mr, q->advice, q->sge[i].addr, q->sge[i].length,
					   emu_now_ns());
	}
	s->advise_waiting = false;
	if (rc < 0)
		return emu_reply_err(r, rc, "advise_mr: %s", rc == -EOPNOTSUPP ? "not an ODP MR" :
				     rc == -ERANGE ? "range outside the MR" : strerror(-rc));
	if (!(q->flags & ODPEMU_ADVISE_MR_FLAG_FLUSH) || !s->advise_pending)
		return ok(r, NULL, 0);
	s->advise_hdr = *r->hdr;	/* answered by ports.c when the last request is */
	return 0;
}

/* ---- completion channels, CQs ---- */

static int op_create_channel(struct emu_req *r)
{
	struct emu_obj *o;
	struct ipc_handle_rep rep = { 0 };
	int p[2];

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "CREATE_CHANNEL has no body");
	if (event_pipe(p))
		return emu_reply_err(r, -errno, "pipe: %s", strerror(errno));
	if (!(o = emu_obj_new(r->s, EMU_OBJ_CHANNEL))) {
		close(p[0]);
		close(p[1]);
		return emu_reply_no_obj(r, "create_comp_channel");
	}
	o->u.ch.wr_fd = p[1];
	rep.handle = o->handle;
	return ok_fd(r, &rep, sizeof(rep), p[0]);
}

static int op_create_cq(struct emu_req *r)
{
	const struct ipc_create_cq_req *q = r->body;
	struct emu_obj *o, *ch = NULL;
	struct ipc_create_cq_rep rep = { 0 };
	uint32_t size;
	int rc, fd;

	EMU_WANT_BODY(r, struct ipc_create_cq_req);
	if (q->channel && !(ch = emu_obj_get(r->s, q->channel, EMU_OBJ_CHANNEL)))
		return emu_reply_err(r, -ENOENT, "create_cq: no channel %u", q->channel);
	if (!q->cqe || q->cqe > nic_attr(r->s->d->nic)->max_cqe)
		return emu_reply_err(r, -EINVAL, "create_cq: cqe %u not in 1..%u", q->cqe,
				     nic_attr(r->s->d->nic)->max_cqe);
	if (q->flags & ~(uint32_t)IPC_CQ_IGNORE_OVERRUN)
		return emu_reply_err(r, -EINVAL, "create_cq: flags %#x", q->flags);
	if (!(o = emu_obj_new(r->s, EMU_OBJ_CQ)))
		return emu_reply_no_obj(r, "create_cq");
	size = ipc_pow2(q->cqe);
	if ((rc = nic_cq_create(r->s->d->nic, q->cqe, &o->u.cq.cq))) {
		emu_obj_free(o);
		return emu_reply_nic(r, "create_cq", rc, EMU_LIMIT_CQ, NULL);
	}
	if ((rc = emu_ring_map(o, ipc_ring_bytes(size, ipc_cq_slot()), &fd))) {
		nic_cq_destroy(o->u.cq.cq);
		emu_obj_free(o);
		return emu_reply_host_err(r, "create_cq", "its ring", rc);
	}
	emu_ring_setup(&o->u.cq.ring, o->map, 0, size, ipc_cq_slot());
	nic_cq_set_owner(o->u.cq.cq, o);	/* nic/ writes its completions into the ring */
	nic_cq_set_overrun(o->u.cq.cq, q->flags & IPC_CQ_IGNORE_OVERRUN ? NIC_CQ_OVERRUN_IGNORE :
								      NIC_CQ_OVERRUN_ERROR);
	o->u.cq.channel = ch;
	if (ch)
		ch->refs++;
	rep.handle = o->handle;
	rep.cqe = size;
	rep.map_len = (uint32_t)o->map_len;
	return ok_fd(r, &rep, sizeof(rep), fd);
}

/* ibv_resize_cq (rxe_cq_chk_attr's rules): a new ring, the waiting completions moved into
 * it; the old ring is unmapped here at once (the client unmaps its own mapping). */
static int op_resize_cq(struct emu_req *r)
{
	const struct ipc_resize_cq_req *q = r->body;
	struct ipc_create_cq_rep rep = { 0 };
	uint32_t max = nic_attr(r->s->d->nic)->max_cqe, size, pending;
	struct emu_obj *o;
	void *old_map;
	size_t old_len;
	int rc, fd;

	EMU_WANT_BODY(r, struct ipc_resize_cq_req);
	if (!(o = emu_obj_get(r->s, r->hdr->handle, EMU_OBJ_CQ)))
		return emu_reply_err(r, -ENOENT, "resize_cq: no CQ %u", r->hdr->handle);
	if (!q->cqe || q->cqe > max)
		return emu_reply_err(r, -EINVAL, "resize_cq: cqe %u not in 1..%u", q->cqe, max);
	/* Posted before this request: what it completed counts as waiting (rdma-core's
	 * test_resize_cq posts UD sends, then shrinks below them and wants EINVAL). */
	emu_cq_take_posted(o);
	if ((pending = emu_cq_pending(o)) == UINT32_MAX)
		return emu_reply_err(r, -EPROTO, "resize_cq: the ring's consumer index is ahead "
				     "of its producer");
	if (q->cqe < pending)
		return emu_reply_err(r, -EINVAL, "resize_cq: cqe %u below the %u completions "
				     "waiting: poll them first", q->cqe, pending);
	old_map = o->map;
	old_len = o->map_len;
	size = ipc_pow2(q->cqe);
	if ((rc = emu_ring_map(o, ipc_ring_bytes(size, ipc_cq_slot()), &fd)))
		return emu_reply_host_err(r, "resize_cq", "its new ring", rc);
	emu_cq_ring_move(o, o->map, size, pending);
	munmap(old_map, old_len);
	rep.handle = o->handle;
	rep.cqe = size;
	rep.map_len = (uint32_t)o->map_len;
	return ok_fd(r, &rep, sizeof(rep), fd);
}

/* ---- injection ---- */

static int op_inject(struct emu_req *r)
{
	const struct ipc_inject_req *q = r->body;
	char key[sizeof(q->key) + 1], value[sizeof(q->value) + 1], err[128] = "";
	int rc;

	EMU_WANT_BODY(r, struct ipc_inject_req);
	memcpy(key, q->key, sizeof(q->key));
	key[sizeof(q->key)] = 0;
	memcpy(value, q->value, sizeof(q->value));
	value[sizeof(q->value)] = 0;
	if ((rc = emu_daemon_set_knob(r->s->d, key, value, err, sizeof(err))))
		return emu_reply_err(r, rc, "%s", err);
	emu_log(EMU_LOG_INFO, "session %u set %s=%s", r->s->id, key, value);
	return ok(r, NULL, 0);
}

static int op_get_inject(struct emu_req *r)
{
	const struct ipc_inject_req *q = r->body;
	struct ipc_inject_req rep;
	char err[128] = "";
	int rc;

	EMU_WANT_BODY(r, struct ipc_inject_req);
	memset(&rep, 0, sizeof(rep));
	memcpy(rep.key, q->key, sizeof(rep.key));
	rep.key[sizeof(rep.key) - 1] = 0;
	if ((rc = emu_daemon_get_knob(r->s->d, rep.key, rep.value, sizeof(rep.value), err,
				      sizeof(err))))
		return emu_reply_err(r, rc, "%s", err);
	return ok(r, &rep, sizeof(rep));
}

/* ---- destroy ---- */

static void unref(struct emu_obj *o)
{
	if (o)
		o->refs--;
}

int emu_obj_destroy(struct emu_obj *o)
{
	int rc = 0;

	if (o->refs)
		return -EBUSY;
	if (o->type == EMU_OBJ_MR || o->type == EMU_OBJ_QP)
		emu_counters_retire(o);
	switch (o->type) {
	case EMU_OBJ_PD:
		rc = nic_pd_dealloc(o->u.pd);
		break;
	case EMU_OBJ_MR:
		/* A deregistered MR may live on in nic/ while the fault handler holds one of
		 * its requests: it must not name o, which goes now. */
		nic_mr_set_owner(o->u.mr.mr, NULL);
		if (!(rc = nic_mr_dereg(o->u.mr.mr))) {
			emu_lease_detach(o);
			if (o->u.mr.pin)
				munmap(o->u.mr.pin, o->u.mr.pin_len);
			unref(o->u.mr.pd);
		} else {
			nic_mr_set_owner(o->u.mr.mr, o);
		}
		break;
	case EMU_OBJ_MW:
		if (!(rc = nic_mw_dealloc(o->u.mw.mw)))
			unref(o->u.mw.pd);
		break;
	case EMU_OBJ_CHANNEL:
		close(o->u.ch.wr_fd);
		break;
	case EMU_OBJ_CQ:
		if (!(rc = nic_cq_destroy(o->u.cq.cq)))
			unref(o->u.cq.channel);
		break;
	case EMU_OBJ_SRQ:
	case EMU_OBJ_QP:
		rc = emu_qp_srq_destroy(o);
		break;
	case EMU_OBJ_CM_CHANNEL:
	case EMU_OBJ_CM_LISTEN:
	case EMU_OBJ_CM_CONN:
		emu_cm_obj_destroy(o);
		break;
	case EMU_OBJ_WATCH:
		interval_remove(&o->s->watches, &o->u.watch.node);
		o->s->nwatches--;
		break;
	}
	if (rc)
		return rc;
	if (o->map)
		munmap(o->map, o->map_len);
	emu_obj_free(o);
	return 0;
}

/* ---- the op table ---- */

emu_op_fn emu_op_handler(unsigned op)
{
	static const emu_op_fn table[IPC_OP_MAX] = {
		[IPC_HELLO] = op_hello, [IPC_QUERY_DEVICE] = op_query_device,
		[IPC_QUERY_PORT] = op_query_port, [IPC_ALLOC_PD] = op_alloc_pd,
		[IPC_DEALLOC_PD] = op_dealloc_pd, [IPC_REG_MR] = op_reg_mr,
		[IPC_DEREG_MR] = op_dereg_mr, [IPC_RESTORE_MR] = op_restore_mr, [IPC_ADVISE_MR] = op_advise_mr,
		[IPC_MR_SWAP_KEYS] = op_mr_swap_keys,
		[IPC_CREATE_CHANNEL] = op_create_channel,
		[IPC_DESTROY_CHANNEL] = op_destroy_channel, [IPC_CREATE_CQ] = op_create_cq,
		[IPC_DESTROY_CQ] = op_destroy_cq, [IPC_RESIZE_CQ] = op_resize_cq,
		[IPC_CREATE_SRQ] = emu_op_create_srq,
		[IPC_MODIFY_SRQ] = emu_op_modify_srq, [IPC_DESTROY_SRQ] = emu_op_destroy_srq,
		[IPC_CREATE_QP] = emu_op_create_qp, [IPC_MODIFY_QP] = emu_op_modify_qp,
		[IPC_QUERY_QP] = emu_op_query_qp, [IPC_DESTROY_QP] = emu_op_destroy_qp,
		[IPC_COUNTERS] = emu_op_counters, [IPC_INJECT] = op_inject,
		[IPC_GET_INJECT] = op_get_inject, [IPC_CLIENT_INFO] = emu_op_client_info,
		[IPC_CLIENTS] = emu_op_clients, [IPC_HOST_REPORT] = emu_op_host_report,
		[IPC_ALLOC_MW] = op_alloc_mw, [IPC_DEALLOC_MW] = op_dealloc_mw,
		[IPC_ATTACH_MCAST] = emu_op_attach_mcast, [IPC_DETACH_MCAST] = emu_op_detach_mcast,
	};

	if (op >= IPC_OP_MAX)
		return NULL;
	if (table[op])
		return table[op];
	if (emu_cm_op(op))
		return emu_cm_op(op);
	if (emu_import_op(op))
		return emu_import_op(op);
	return emu_watch_op(op) ? emu_watch_op(op) : emu_lease_op(op);
}
