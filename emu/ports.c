/* SPDX-License-Identifier: MIT */
/*
 * ports — nic/'s four ports bound to the real world:
 *  - wire: the UDP socket (udp.c), through the wire injector when one of its knobs is on
 *    (wire.h, both directions), flushed once per loop round. Out: the socket lends nic/
 *    its next batch slot (tx_slot), nic/ gathers the payload straight into it and seals
 *    it back (send_slot), so a payload byte is copied twice on the way out (client memory
 *    -> slot by process_vm_readv or memcpy, slot -> kernel by sendmmsg); while the
 *    injector is on for TX, which keeps a copy of each packet anyway, no slot is lent and
 *    nic/'s packets come by send. In: each datagram the socket delivers goes to nic/ (or
 *    the injector) and nowhere else, a multicast group's (io/mcast.h) with its group, copied twice (kernel -> provided buffer, buffer ->
 *    client memory); what must reach nic/ before it is the loop's step (daemon.c);
 *  - host memory: process_vm_readv/writev into the client for ODP MRs (the kernel walks the
 *    client's current page tables, so an unmapped page is -EFAULT and a remapped one is the
 *    new page, as ODP promises); for pinned MRs, whose pages the daemon maps (host
 *    addresses tagged PIN_TAG), a plain memcpy, or process_vm_*v on the daemon itself for
 *    files the client could truncate (PIN_GUARD_TAG: EFAULT instead of SIGBUS);
 *  - fault handler: jobs for the fault thread (fault.h); its answers come back through
 *    the loop's answer queue (answers.h), which delivers them when their delay is over;
 *  - events: the session's async event pipe; CQ notifications: its channel pipe.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "host/answers.h"
#include "daemon.h"
#include "host/fault.h"
#include "log.h"
#include "nic.h"
#include "host/persist.h"
#include "ports.h"
#include "rings.h"
#include "session.h"
#include "io/udp.h"

/* The session of a client id, through a one-entry cache (emu_session_close clears it). */
static struct emu_session *session_of(struct emu_daemon *d, uint32_t client)
{
	if (d->last_session && d->last_session->id == client)
		return d->last_session;
	return d->last_session = emu_session_by_id(d, client);
}

static void port_send(void *ctx, const struct nic_gid *dst, const uint8_t *pkt, size_t len)
{
	struct emu_daemon *d = ctx;

	if (emu_wire_active(&d->wire, EMU_WIRE_TX))
		emu_wire_pass(&d->wire, EMU_WIRE_TX, dst, 0, NULL, pkt, len, emu_now_ns());
	else
		emu_udp_send(d->udp, dst, d->opt.port, pkt, len);
}

_Static_assert(EMU_UDP_MAX_DATAGRAM >= NIC_PORT_TX_SLOT, "a transmit slot holds any packet");
_Static_assert(EMU_WIRE_PKT_MAX >= EMU_UDP_MAX_DATAGRAM, "the wire injector copies any packet");

/* The socket's next batch slot; none while the injector takes TX packets (it copies them:
 * a packet built in a slot would be copied out of it and the slot left unused). Control
 * requests turn knobs between packets, never while nic/ builds one. */
static uint8_t *port_tx_slot(void *ctx)
{
	struct emu_daemon *d = ctx;

	return emu_wire_active(&d->wire, EMU_WIRE_TX) ? NULL : emu_udp_tx_slot(d->udp);
}

static void port_send_slot(void *ctx, const struct nic_gid *dst, size_t len)
{
	struct emu_daemon *d = ctx;

	emu_udp_send_slot(d->udp, dst, d->opt.port, len);
}

void emu_ports_wire_in(void *arg, const uint8_t *pkt, size_t len, const struct nic_gid *src,
		       uint16_t sport, const struct nic_gid *group)
{
	struct emu_daemon *d = arg;

	if (emu_wire_active(&d->wire, EMU_WIRE_RX))
		emu_wire_pass(&d->wire, EMU_WIRE_RX, src, sport, group, pkt, len, emu_now_ns());
	else
		emu_ports_wire_out(d, EMU_WIRE_RX, src, sport, group, pkt, len);
}

/* The one way into nic/ for a received packet (and out to the socket for a sent one that
 * went through the injector). */
void emu_ports_wire_out(void *arg, enum emu_wire_dir dir, const struct nic_gid *peer,
			uint16_t sport, const struct nic_gid *group, const uint8_t *pkt, size_t len)
{
	struct emu_daemon *d = arg;

	if (dir == EMU_WIRE_TX)
		emu_udp_send(d->udp, peer, d->opt.port, pkt, len);
	else if (group)
		nic_rx_mcast(d->nic, pkt, len, peer, sport, group, emu_now_ns());
	else
		nic_rx_from(d->nic, pkt, len, peer, sport, emu_now_ns());
}

/* A group gained its first member QP or lost its last: listen on it, or stop (mcast.h).
 * A join that fails is kept in d->mcast_err for the ATTACH_MCAST that caused it, which
 * then undoes its attach (emu/verbs_qp.c). */
static void port_mcast_member(void *ctx, const struct nic_gid *mgid, bool member)
{
	struct emu_daemon *d = ctx;
	char err[256] = "";

	if (!d->mcast)
		return;		/* stopping: the sockets are gone */
	if (!member) {
		emu_mcast_leave(d->mcast, mgid);
		return;
	}
	d->mcast_err = emu_mcast_join(d->mcast, mgid, err, sizeof(err));
	if (d->mcast_err)
		emu_log(EMU_LOG_WARN, "%s", err);
}

static int port_read(void *ctx, uint32_t client, uint64_t host, void *dst, size_t len)
{
	struct emu_daemon *d = ctx;
	struct emu_session *s;
	struct iovec l = { dst, len }, r = { (void *)(uintptr_t)PIN_ADDR(host), len };

	if ((host & (PIN_TAG | PIN_GUARD_TAG)) == PIN_TAG) {
		memcpy(dst, (const void *)(uintptr_t)PIN_ADDR(host), len);
		return 0;
	}
	if (host & PIN_GUARD_TAG) {
		if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len)
			return 0;
		d->ctr.mem_read_errors++;
		return -EFAULT;
	}
	if (!(s = session_of(d, client)) || process_vm_readv(s->pid, &l, 1, &r, 1, 0) != (ssize_t)len) {
		d->ctr.mem_read_errors++;
		return -EFAULT;
	}
	return 0;
}

static int port_write(void *ctx, uint32_t client, uint64_t host, const void *src, size_t len)
{
	struct emu_daemon *d = ctx;
	struct emu_session *s;
	struct iovec l = { (void *)src, len }, r = { (void *)(uintptr_t)PIN_ADDR(host), len };

	if ((host & (PIN_TAG | PIN_GUARD_TAG)) == PIN_TAG) {
		memcpy((void *)(uintptr_t)PIN_ADDR(host), src, len);
		return 0;
	}
	if (host & PIN_GUARD_TAG) {
		if (process_vm_writev(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len)
			return 0;
		d->ctr.mem_write_errors++;
		return -EFAULT;
	}
	if (!(s = session_of(d, client)) || process_vm_writev(s->pid, &l, 1, &r, 1, 0) != (ssize_t)len) {
		d->ctr.mem_write_errors++;
		return -EFAULT;
	}
	return 0;
}

/* A job answered here and now (no session to resolve against): delivered by the loop. */
static void fail_later(struct emu_daemon *d, struct emu_fault_job *j, int err)
{
	j->err = err;
	j->due_ns = emu_now_ns();
	emu_answers_add(&d->answers, j);
}

static void port_fault(void *ctx, uint32_t client, struct iopt_req *req)
{
	struct emu_daemon *d = ctx;
	struct emu_session *s = session_of(d, client);
	struct emu_fault_job *j = calloc(1, sizeof(*j));

	if (!j) {
		/* nic/ must get an answer to every page request, and without memory there
		 * is nowhere to keep this one: abort loudly rather than lose it (a lost
		 * request would hang its QP without a word). */
		emu_log(EMU_LOG_ERR, "out of memory for a page request: aborting");
		abort();
	}
	j->req = req;
	j->enqueued_ns = emu_now_ns();
	j->pid = s ? s->pid : 0;
	j->uffd = j->maps_fd = j->pagemap_fd = -1;	/* the resolver's cached /proc files */
	j->client = client;
	if (!s) {
		fail_later(d, j, -EFAULT);
		return;
	}
	if (s->advise_waiting) {
		j->advise = true;
		s->advise_pending++;
	}
	j->uffd = s->uffd;
	if (emu_fault_resolve_now(d->fault, j)) {
		j->uffd = -1;	/* the session's, not the job's */
		emu_answers_add(&d->answers, j);
		return;
	}
	if (s->uffd >= 0)
		j->uffd = dup(s->uffd);	/* the session may go before the thread is done */
	emu_fault_submit(d->fault, j);
}

/* The emu object of the nic object an event names (its owner: no scan). */
static struct emu_obj *obj_of(const struct nic_event *ev)
{
	if (ev->qp)
		return nic_qp_owner(ev->qp);
	if (ev->cq)
		return nic_cq_owner(ev->cq);
	if (ev->srq)
		return nic_srq_owner(ev->srq);
	return ev->mr ? nic_mr_owner(ev->mr) : NULL;
}

static void port_event(void *ctx, const struct nic_event *ev)
{
	struct emu_obj *o = obj_of(ev);

	(void)ctx;
	if (o)
		emu_session_event(o->s, ev->type, o->handle);
}

static void port_cq_notify(void *ctx, struct nic_cq *cq)
{
	struct emu_obj *o = nic_cq_owner(cq);

	(void)ctx;
	if (o)
		emu_cq_notify_later(o);	/* sent by the loop's CQ service (rings.c) */
}

static bool port_cq_write(void *ctx, struct nic_cq *cq, const struct nic_wc *wc)
{
	struct emu_obj *o = nic_cq_owner(cq);

	(void)ctx;
	return o && emu_cq_write(o, wc);
}

/* QP1's MADs go to the connection manager. */
static void port_gsi_rx(void *ctx, const struct nic_gsi_dgram *dg)
{
	struct emu_daemon *d = ctx;

	emu_cm_rx(&d->cm, dg, emu_now_ns());
}

/* A persistent FLUSH: an ODP MR's range is the client's memory, a pinned MR's the
 * daemon's own mapping of the client's pages (the same file, for shared memory). */
static int port_persist(void *ctx, uint32_t client, bool odp, uint64_t addr, uint64_t len,
			struct iopt_waiter *w)
{
	struct emu_daemon *d = ctx;
	struct emu_session *s;

	if (!d->persist)
		return 0;	/* not started yet: no FLUSH can come before the loop runs */
	if (!odp)
		return emu_persist_request(d->persist, getpid(), PIN_ADDR(addr), len, w);
	if (!(s = session_of(d, client)))
		return -ENODEV;
	return emu_persist_request(d->persist, s->pid, addr, len, w);
}

static void port_persist_cancel(void *ctx, struct iopt_waiter *w)
{
	struct emu_daemon *d = ctx;

	if (d->persist)
		emu_persist_cancel(d->persist, w);
}

void emu_ports_init(struct emu_daemon *d, struct nic_ports *p)
{
	*p = (struct nic_ports){ .ctx = d, .send = port_send, .mem_read = port_read,
		.mem_write = port_write, .fault = port_fault, .event = port_event,
		.cq_notify = port_cq_notify, .cq_write = port_cq_write, .tx_slot = port_tx_slot,
		.send_slot = port_send_slot, .gsi_rx = port_gsi_rx, .persist = port_persist,
		.persist_cancel = port_persist_cancel, .mcast_member = port_mcast_member };
}
