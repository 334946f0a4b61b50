/* SPDX-License-Identifier: MIT */
/*
 * rings — the data path in shared memory (ipc_ring.h gives the layout). Each QP (SQ, and RQ
 * unless it has an SRQ), SRQ and CQ has a single-producer/single-consumer ring in a memfd
 * the daemon creates and the client maps. Work requests come in through SQ/RQ/SRQ rings and
 * go into nic/; completions go out through CQ rings, written by nic/ itself (ports.cq_write).
 * The client wrote every slot and index: slots are copied out before they are checked and
 * indexes clamped, so a misbehaving client breaks only its own queues.
 *
 * THREADING. The loop thread only.
 */
#ifndef ODPEMU_EMU_RINGS_H
#define ODPEMU_EMU_RINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc_ring.h"
#include "nic.h"

struct emu_daemon;
struct emu_obj;

/* A ring as the daemon sees it: its own copies of the geometry, never read back. */
/* When a work queue's slot is given back to the client (the cons it sees). */
enum emu_ring_release {
	EMU_RELEASE_ON_COPY,		/* once nic/ took the WQE (SQ, SRQ) */
	EMU_RELEASE_ON_COMPLETION,	/* once the WQE completed (a QP's own RQ: the client then
					 * holds at most max_recv_wr outstanding, as the kernel's
					 * providers answer ENOMEM beyond; rings.c) */
};

struct emu_ring {
	struct ipc_ring *hdr;
	void *base;
	uint32_t offset, size, slot;
	uint32_t idx;			/* daemon's index: cons (SQ/RQ/SRQ) or prod (CQ) */
	enum emu_ring_release release;
	uint32_t retired;		/* EMU_RELEASE_ON_COMPLETION: WQEs completed */
	bool lied;			/* SQ/RQ/SRQ: the producer index claims more than the
					 * ring holds (refused once, ignored while it does) */
};

/* A QP's RQ ring: release slots as receives complete, not as nic/ takes them. */
void emu_ring_release_on_completion(struct emu_ring *r);
/* The QP's reset dropped every receive WQE nic/ held: their slots go back. */
void emu_ring_reset(struct emu_ring *r);

#define EMU_DRAIN_BATCH 32	/* WRs taken from one ring per drain (a send batch is one
				 * nic_post_send_list: one doorbell, one AckReq) */

/* A work request copied out of its slot before it is checked (the client may write the
 * slot meanwhile), and its inline bytes as nic/ takes them (an SGE into the copy). */
struct emu_wr_copy {
	_Alignas(8) unsigned char slot[IPC_MAX_SLOT];
	struct nic_sge inl;
};

/* The daemon's scratch for draining one send queue (in struct emu_daemon: a batch of
 * copies is 128 KiB, too much for the stack). nic_post_send_list reads the WRs' SGE lists
 * and inline bytes from it until it returns. */
struct emu_drain_scratch {
	struct emu_wr_copy sq[EMU_DRAIN_BATCH];
};

/* Create the memfd of o's rings (len bytes), map it as o->map; *fd_out for the client.
 * 0 or -errno of memfd_create/ftruncate/mmap. */
int emu_ring_map(struct emu_obj *o, size_t len, int *fd_out);
/* Initialise the ring header at base + at and r, the daemon's view of it. */
void emu_ring_setup(struct emu_ring *r, void *base, uint32_t at, uint32_t size, uint32_t slot);
/* Take what the clients posted into nic/ — the SQs, RQs and SRQs they marked on their
 * doorbell pages (ipc_db.h), and take their CQ arms; true if anything was. */
bool emu_rings_drain(struct emu_daemon *d);
/* ports.cq_write of the CQ object cq: false when its ring is full. */
bool emu_cq_write(struct emu_obj *cq, const struct nic_wc *wc);
/* Take what the client posted on the QPs that complete into cq (a CQ is its session's):
 * the completions that work earns on the way out (a UD or UC send completes as it is sent)
 * are then in the ring, as a NIC has made them by the time its driver is asked. */
void emu_cq_take_posted(struct emu_obj *cq);
/* Completions in cq's ring the client has not consumed: UINT32_MAX when its consumer
 * index claims more than was produced (a client's lie). */
uint32_t emu_cq_pending(const struct emu_obj *cq);
/* Move cq's ring into a new mapping base of size slots: the pending (<= size, the count
 * emu_cq_pending gave, not read again: the client may move cons meanwhile) completions
 * waiting keep their indices, the arm counters come along, and from here on emu_cq_write
 * produces into the new ring only. The caller unmaps the old one. */
void emu_cq_ring_move(struct emu_obj *cq, void *base, uint32_t size, uint32_t pending);
/* ports.cq_notify of the CQ object cq: its notification goes out with the round's CQ
 * service (its completion is in the ring already). */
void emu_cq_notify_later(struct emu_obj *cq);
/* Once a round: the clients' CQ arm requests (of sessions without a doorbell page: the
 * others' come with their marks), and the notifications nic/ raised. */
void emu_rings_service_cqs(struct emu_daemon *d);

#endif
