/* SPDX-License-Identifier: MIT */
/* Private layout of the NIC model, shared by nic/ sources only. */
#ifndef ODPEMU_NIC_INT_H
#define ODPEMU_NIC_INT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nic.h"
#include "roce.h"

#define NIC_MAX_SGE		32
#define NIC_MAX_INLINE		1024	/* an mlx5 send WQE (sq_caps.c) */
#define NIC_PKT_MAX		NIC_PORT_TX_SLOT	/* largest packet: PMTU + headers + ICRC */
#define NIC_QPN_FIRST		0x11u		/* below: reserved (QP0/QP1 and friends) */
#define NIC_MR_SLOTS_MIN	(1u << 12)	/* key = slot << 8 | variant: slots grow */
#define NIC_MR_SLOTS_MAX	(1u << 24)	/* from this many, doubling as they fill */
#define NIC_GRH_LEN		40
#define NIC_PAGE_MASK		(IOPT_PAGE_SIZE - 1)
#define NIC_ACKREQ_EVERY	64		/* AckReq inside long messages */

struct nic_list {
	struct nic_list *prev, *next;
};

static inline void nic_list_init(struct nic_list *h) { h->prev = h->next = h; }
static inline bool nic_list_empty(const struct nic_list *h) { return h->next == h; }
static inline void nic_list_add_tail(struct nic_list *h, struct nic_list *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}
static inline void nic_list_del(struct nic_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}
#define nic_container_of(p, type, member) \
	((type *)(void *)((char *)(p) - offsetof(type, member)))

struct nic_pd {
	struct nic *nic;
	uint32_t client;
	unsigned users;		/* MRs, QPs, SRQs */
};

struct nic_mr {
	struct nic_pd *pd;	/* NULL once deregistered (a zombie may outlive its PD) */
	uint32_t client;	/* the PD's client: whose memory the fault requests are for */
	void *owner;		/* nic_mr_set_owner */
	uint32_t key;		/* lkey == rkey */
	uint64_t va, len;	/* implicit: 0, IOPT_VA_END */
	unsigned access;
	bool odp, implicit, dead;
	bool remote_invalid;	/* SEND_WITH_INVALIDATE named it: no more remote access */
	enum nic_lease lease;	/* ODPEMU_ACCESS_LEASE: lease.c */
	struct iopt *iopt;
	struct nic_list link;	/* nic->mrs or nic->zombies */
	/* Memory windows (mw.c): a window's key entry is a nic_mr too (window names it);
	 * an MR counts the windows bound to it (deregistration waits for none). */
	struct nic_mw *window;
	unsigned windows;
};

/* A memory window (IBA 10.6.7): an rkey of its own in the MR key table. Bound, its key
 * entry (key) describes the window's range and access and borrows the bound MR's page
 * table, so the responder reaches it as it reaches an MR; unbound, its access is none and
 * remote_invalid is set, so every lookup through it is refused. */
struct nic_mw {
	struct nic_mr key;	/* key.window == this; key.pd: the window's PD */
	unsigned type;		/* ODPEMU_MW_TYPE_1 or _2 */
	struct nic_mr *mr;	/* bound to, or NULL */
	struct nic_qp *qp;	/* type 2: the QP it was bound through (IBA 10.6.7.2.3) */
	struct nic_list link;	/* nic->mws */
};

struct nic_cqe_ring {
	struct nic_wc *wc;
	unsigned size, head, count;
};

struct nic_cq {
	struct nic *nic;
	void *owner;			/* nic_cq_set_owner */
	struct nic_cqe_ring ring;	/* unused with ports.cq_write */
	unsigned users;
	enum nic_cq_overrun overrun;
	bool armed, armed_solicited, error;
};

/* A receive WQE (RQ or SRQ), as the engines hold one taken off the queue. */
struct nic_rwqe {
	uint64_t wr_id;
	unsigned num_sge;
	struct nic_sge sge[NIC_MAX_SGE];
};

/* The queue keeps each WQE in a slot of its own size (max_sge SGEs, not NIC_MAX_SGE): a
 * deep queue of one-SGE WQEs costs 32 bytes a WQE, not 528. */
struct nic_rq {
	uint8_t *wqe;			/* size slots of stride bytes (srq.c) */
	size_t stride;
	unsigned size, head, count, max_sge;
};

enum nic_srq_state {
	NIC_SRQ_READY,
	NIC_SRQ_ERR,		/* a WQE it could not take: SRQ_ERR raised, its QPs in ERR */
};

struct nic_srq {
	struct nic_pd *pd;
	void *owner;		/* nic_srq_set_owner */
	enum nic_srq_state state;
	struct nic_rq rq;
	unsigned limit;		/* armed when > 0 */
	unsigned users;
};

enum nic_swqe_state {
	NIC_SWQE_POSTED,	/* not sent yet */
	NIC_SWQE_SENDING,	/* some packets sent */
	NIC_SWQE_SENT,		/* all packets sent, awaiting ACK / response */
	NIC_SWQE_DONE,		/* completed (status set), awaiting in-order retirement */
};

struct nic_swqe {
	/* progress: copy_wqe clears everything before wr (a reused slot must not keep
	 * the previous WR's PSNs); wr, sge and inline_data are overwritten as needed */
	uint32_t length;		/* total bytes of the message */
	uint32_t first_psn, npkts;	/* assigned when the first packet goes out */
	bool psn_assigned;
	uint32_t sent;			/* bytes sent (request) or requested (READ) */
	uint32_t landed;		/* READ: bytes of response landed */
	bool rest_prefetched;		/* READ: a landing fault prefetched what was left */
	enum nic_swqe_state state;
	enum odpemu_wc_status status;
	unsigned vendor_err;
	bool signaled;
	struct nic_send_wr wr;		/* sg_list points at sge (or nothing: inline) */
	/* Room for the QP's max_send_sge SGEs and max_inline_data bytes, in arrays of the
	 * send queue (struct nic_sq): a WQE costs what the QP's caps need. */
	struct nic_sge *sge;
	uint8_t *inline_data;
};

/* Absolute, ever-increasing positions; slot = position % size. */
struct nic_sq {
	struct nic_swqe *wqe;
	struct nic_sge *sges;		/* size * max_sge: wqe[i].sge points into it */
	uint8_t *inline_data;		/* size * max_inline: wqe[i].inline_data */
	unsigned size, max_sge, max_inline;
	uint64_t head;		/* oldest not retired */
	uint64_t next;		/* next to send from (head <= next <= tail) */
	uint64_t tail;		/* next free */
};

static inline struct nic_swqe *nic_sq_at(const struct nic_sq *sq, uint64_t pos)
{
	return &sq->wqe[pos % sq->size];
}

/* A responder resource: a READ or atomic kept for duplicate replay (IBA 9.7.5.1.4). */
struct nic_rsrc {
	uint8_t opcode;		/* ROCE_OP_* of the request; 0: free */
	uint32_t psn, last_psn;
	uint64_t va;
	uint32_t rkey, len;
	uint64_t orig;		/* atomic: original value returned */
	uint8_t syndrome;	/* atomic: the ACK syndrome sent */
};

/* A packet held behind a responder page fault (stall policy): its bytes and the parsed
 * view of them, kept so that resuming does not parse it again. */
struct nic_held {
	struct roce_pkt pkt;	/* buf and payload point into buf below */
	uint8_t buf[NIC_PKT_MAX];
};

/*
 * A fault slot: one engine's outstanding page fault and what became of it (the requester,
 * the completer and the responder each have one). The DMA helpers (dma.c) drive it, so no
 * engine can forget a step: a miss while IDLE raises a fault and leaves the slot WAITING;
 * a DMA that starts while the slot is FAILED reports its miss as NIC_DMA_HOST (the host
 * could not supply the page) and puts the slot back to IDLE. An engine only asks
 * nic_fault_poll() before it retries, and cancels with nic_fault_cancel() (fault.c).
 */
enum nic_fault_state {
	NIC_SLOT_IDLE,		/* nothing outstanding: a miss raises a fault */
	NIC_SLOT_WAITING,	/* raised on dom; the waiter is not answered yet */
	NIC_SLOT_FAILED,	/* answered with an error: the next DMA through the slot fails */
};

/* What a persistent FLUSH asked the host, by PSN (resp.c flush_persist). */
enum nic_persist { NIC_PERSIST_NONE, NIC_PERSIST_WAITING, NIC_PERSIST_DONE,
	NIC_PERSIST_FAILED };

struct nic_fault {
	enum nic_fault_state state;
	struct iopt_waiter waiter;
	struct iopt *dom;	/* where waiter is registered (WAITING), or NULL: */
	struct nic_mr *lease_mr;	/* WAITING on this MR's broken lease (lease.c), or */
	enum nic_persist persist;	/* WAITING on the host's persist port */
	uint32_t persist_psn;		/* the FLUSH it is for */
};

/* The responder's message in progress (IBA 9.8.3.2: MIDDLE and LAST continue it; FIRST,
 * ONLY and the one-packet requests need none). */
enum nic_resp_msg {
	NIC_MSG_NONE,
	NIC_MSG_SEND,		/* a SEND's FIRST landed; recv_off bytes placed */
	NIC_MSG_WRITE,		/* a WRITE's FIRST landed; write says where the next goes */
};

/* Where a WRITE's next packet lands. Computed per packet, committed in one assignment once
 * its payload landed (a faulted packet leaves it as it was). */
struct nic_write {
	struct nic_mr *mr;	/* NULL: a zero-length WRITE; valid while key still finds it */
	uint32_t key;
	uint64_t va;		/* next va */
	uint32_t resid, total;	/* bytes still due, bytes of the whole message */
};

struct nic_resp {
	uint32_t epsn, msn;
	bool nak_sent;			/* sequence NAK or RNR NAK sent for the current gap */
	enum nic_resp_msg msg;
	struct nic_rwqe rwqe;		/* SEND: the receive WQE being filled */
	bool rwqe_held;			/* rwqe is taken and not completed (also across a
					 * fault on the FIRST packet, before msg is SEND) */
	uint32_t recv_off;		/* SEND: bytes placed so far */
	struct nic_write write;		/* WRITE */
	/* READ/atomic resources, a ring of max_dest_rd_atomic */
	struct nic_rsrc *rsrc;
	unsigned nrsrc, rsrc_next;
	/* ODP: the fault of the head packet, and the packets held behind it (stall policy) */
	struct nic_fault fault;
	struct nic_held *held;
	unsigned nheld, held_head;
	unsigned held_size, held_cap;	/* allocated (grown on demand), cfg.stall_queue */
	bool stall_overflowed;		/* packets dropped since the queue filled */
	/* UC (uc.c): the message in progress is being dropped, for uc_drop_why, until its
	 * LAST or the next FIRST/ONLY */
	bool uc_dropping;
	enum nic_drop_reason uc_drop_why;
};

/* The requester: what it has sent. */
struct nic_req {
	uint32_t psn;			/* next PSN to send */
	uint32_t max_sent;		/* one past the highest PSN ever sent */
	unsigned rd_atomic_out;		/* READ/atomic WQEs sent and not completed */
	unsigned noack;			/* packets sent since the last AckReq */
	struct nic_fault fault;		/* gathering a local SGE */
};

/* Why the requester holds back, besides the fault slots (IBA 9.7.5.2): set by the
 * completer, acted on by the requester. */
enum nic_req_wait {
	NIC_REQ_READY,			/* send on */
	NIC_REQ_RNR_TIMER,		/* an RNR NAK: wait until rnr_deadline, then go back */
	NIC_REQ_GO_BACK,		/* resend from resume_psn before anything else */
};

/* The completer: what the responder has answered, and the timers (IBA 9.7.5.2). */
struct nic_comp {
	uint32_t una;			/* oldest unacknowledged PSN */
	uint64_t ack_deadline;		/* UINT64_MAX: off */
	uint64_t rnr_deadline;		/* NIC_REQ_RNR_TIMER only */
	unsigned retry_left, rnr_left;
	enum nic_req_wait wait;
	uint32_t resume_psn;		/* NIC_REQ_RNR_TIMER, NIC_REQ_GO_BACK */
	/* a missing READ/atomic answer already asked for again (comp.c ask_again) */
	uint32_t gap_psn;
	bool gap_asked;
	struct nic_fault fault;		/* landing a READ response or atomic value */
};

struct nic_qp {
	struct nic_pd *pd;
	void *owner;		/* nic_qp_set_owner */
	struct nic *nic;
	uint32_t qpn;
	enum odpemu_qp_type type;
	enum odpemu_qp_state state;
	struct nic_qp_attr attr;	/* last values set by modify */
	struct nic_qp_init init;
	struct nic_cq *scq, *rcq;
	struct nic_srq *srq;
	struct nic_sq sq;
	struct nic_rq rq;
	struct nic_req req;
	struct nic_comp comp;
	struct nic_resp resp;
	struct nic_qp_counters ctr;
	unsigned pmtu;			/* bytes */
	bool runnable;			/* on nic->run */
	bool sq_drained_event_pending;
	struct nic_list link;		/* nic->qps */
	struct nic_list run_link;	/* nic->run */
	struct nic_qp *hash_next;
	uint64_t seq;			/* creation order: nic_tick runs due QPs in it */
	uint32_t timer_pos;		/* 1 + index in nic->timers; 0: not there */
	uint64_t timer_key;		/* <= the earliest of comp's deadlines (timers below) */
	unsigned mcast_groups;		/* multicast groups it is attached to (mcast.c) */
};

#define NIC_QP_HASH_MIN 1024

struct nic {
	struct nic_config cfg;
	struct nic_device_attr attr;
	struct iopt_fq *fq;
	uint32_t next_qpn;
	struct nic_qp **qp_hash;	/* qp_hash_size buckets, a power of two >= qps */
	uint32_t qp_hash_size;
	uint64_t qp_seq;
	/* The QPs whose completer has a deadline (ACK timeout, RNR timer): a binary min-heap
	 * on timer_key, which may be earlier than the deadline (a deadline that moved later
	 * is corrected when it reaches the top), never later. Room for every QP is made when
	 * it is created, so arming never allocates; due is nic_tick's scratch. */
	struct nic_qp **timers, **due;
	uint32_t ntimers, timers_cap;
	/* MR keys: mr_slot[slot] for slot in [1, mr_cap); free slots wait in a FIFO ring
	 * (mr_free, from mr_free_head), so a slot is reused as late as possible, and at least
	 * a quarter of them are kept free (the table grows): a stale key misses long after. */
	struct nic_mr **mr_slot;
	uint8_t *mr_variant;		/* per slot: bumps on each registration */
	uint32_t *mr_free;
	uint32_t mr_cap, mr_free_head, mr_nfree;
	struct nic_list qps, mrs, zombies, run, mws;
	struct nic_counters ctr;
	uint64_t now;			/* of the current entry point */
	unsigned depth;			/* re-entrancy guard for run_queue */
	uint8_t pkt[NIC_PKT_MAX];	/* transmit scratch */
	struct roce_icrc_ids icrc_ids;	/* receive: IPv4 Identification corrections */
	uint32_t gsi_psn;		/* QP1's next PSN (UD: informational) */
	struct nic_mcg **mcg;		/* multicast groups with a member (mcast.c), nmcg */
	uint32_t nmcg, mcast_attached;	/* groups; attachments over all groups */
};

/* device.c */
void nic_qp_schedule(struct nic_qp *qp);
void nic_run(struct nic *nic);
void nic_pump_faults(struct nic *nic);
void nic_event(struct nic *nic, enum odpemu_event_type type, struct nic_qp *qp,
	       struct nic_cq *cq, struct nic_srq *srq, struct nic_mr *mr);
struct nic_qp *nic_qp_lookup(struct nic *nic, uint32_t qpn);

/* mr.c */
struct nic_mr *nic_mr_lookup(struct nic *nic, uint32_t key);
int nic_mr_slots_grow(struct nic *nic);
int nic_key_alloc(struct nic *nic, struct nic_mr *entry);
void nic_key_free(struct nic *nic, uint32_t key);
/* mw.c: the local operations of the send queue (IBA 10.6.7.2, 10.6.7.3): 0, or the
 * completion status of the WQE's failure. */
enum odpemu_wc_status nic_mw_bind_wqe(struct nic_qp *qp, const struct nic_send_wr *wr);
enum odpemu_wc_status nic_local_inv_wqe(struct nic_qp *qp, uint32_t rkey);
/* May this QP use the key entry for remote access? An MR's: always (the caller checks PD
 * and access); a window's: when bound, and for type 2 when bound through this QP. */
bool nic_mw_reachable(const struct nic_mr *entry, const struct nic_qp *qp);
/* SEND_WITH_INVALIDATE of a window's rkey (IBA 10.6.7.2.4): false if it may not be. */
bool nic_mw_remote_invalidate(struct nic_mr *entry, const struct nic_qp *qp);
/* A QP goes: the type 2 windows bound through it are unbound. */
void nic_mw_qp_gone(struct nic_qp *qp);
void nic_mr_reap(struct nic *nic);

/* cq.c */
void nic_cq_push(struct nic_cq *cq, const struct nic_wc *wc, bool solicited);

/* srq.c / rq */
int nic_rq_init(struct nic_rq *rq, unsigned max_wr, unsigned max_sge);
/* The oldest WQE into *out, taken off the queue (take) or left on it (peek); false when
 * the queue is empty. */
bool nic_rq_take(struct nic_rq *rq, struct nic_rwqe *out);
bool nic_rq_peek(const struct nic_rq *rq, struct nic_rwqe *out);
int nic_rq_post(struct nic_rq *rq, const struct nic_recv_wr *wr, const struct nic_device_attr *a);
void nic_srq_check_limit(struct nic_srq *srq);

/* qp.c */
void nic_qp_to_err(struct nic_qp *qp);
void nic_qp_flush(struct nic_qp *qp);
void nic_swqe_complete(struct nic_qp *qp, struct nic_swqe *w, enum odpemu_wc_status st,
		       unsigned verr);
void nic_recv_complete(struct nic_qp *qp, const struct nic_wc *wc, bool solicited);
/* device.c: count a received datagram dropped for why, on the device and on qp (NULL:
 * no QP took it). Every receive-path drop goes through here, so the device's drops are
 * the sum of every reason everywhere. */
void nic_drop(struct nic *nic, struct nic_qp *qp, enum nic_drop_reason why);
/* device.c: the QP number table and the timer heap; room for one more QP in both (at
 * create: 0 or -ENOMEM), so adding never fails. */
int nic_qp_reserve(struct nic *nic);
void nic_qp_hash_add(struct nic *nic, struct nic_qp *qp);
void nic_qp_hash_del(struct nic *nic, struct nic_qp *qp);
/* A completer deadline of qp was set to t (finite): keep the heap's promise. */
void nic_timer_arm(struct nic_qp *qp, uint64_t t);
void nic_timer_del(struct nic_qp *qp);

/* dma.c: copy between a local SGE list or an MR range and a buffer, through the IOPT. */
enum nic_dma_result {
	NIC_DMA_OK = 0,
	NIC_DMA_FAULT,		/* a page is missing: fault raised (see *fault_va) */
	NIC_DMA_BAD_KEY,	/* no such key / dead MR / wrong PD */
	NIC_DMA_RANGE,		/* outside the MR */
	NIC_DMA_ACCESS,		/* MR access flags forbid it */
	NIC_DMA_HOST,		/* the host said -EFAULT, or the fault failed */
};
struct nic_dma_ctx {
	struct nic_qp *qp;
	struct nic_fault *slot;		/* NULL: a fire-and-forget fault (UD receive) */
	bool failed;			/* the slot's fault failed: a miss is NIC_DMA_HOST */
};
static inline struct nic_dma_ctx nic_dma_ctx(struct nic_qp *qp, struct nic_fault *slot)
{
	return (struct nic_dma_ctx){ .qp = qp, .slot = slot };
}
/* buf NULL: translate (and fault) only, copy nothing. */
enum nic_dma_result nic_dma_mr(struct nic_dma_ctx *c, struct nic_mr *mr, uint64_t va,
			       void *buf, uint32_t len, bool to_mem, unsigned iopt_access);
enum nic_dma_result nic_dma_sge(struct nic_dma_ctx *c, const struct nic_sge *sge,
				unsigned num_sge, uint32_t off, void *buf, uint32_t len,
				bool to_mem);
enum nic_dma_result nic_dma_atomic(struct nic_dma_ctx *c, struct nic_mr *mr, uint64_t va,
				   enum odpemu_wr_opcode op, uint64_t compare_add,
				   uint64_t swap, uint64_t *orig);
/* Translate, faulting at the first miss, copy nothing. */
enum nic_dma_result nic_dma_probe(struct nic_dma_ctx *c, struct nic_mr *mr, uint64_t va,
				  uint32_t len, unsigned access);
/* Prefetch the missing pages of a local SGE range, unwatched; the number of requests. */
unsigned nic_dma_sge_prefetch(struct nic_qp *qp, const struct nic_sge *sge, unsigned num_sge,
			      uint32_t off, uint32_t len, bool to_mem);
enum nic_vendor_err nic_dma_verr(enum nic_dma_result res);
uint32_t nic_sge_total(const struct nic_sge *sge, unsigned num_sge);

/* mr.c */
int nic_mr_pin(struct nic_mr *mr, uint64_t host);
/* The host address of va in a pinned MR (its pages are host-contiguous: nic.h); -EFAULT
 * when not translated (a broken lease). */
int nic_mr_host_of(const struct nic_mr *mr, uint64_t va, uint64_t *host);
/* lease.c: a DMA through mr found its lease broken (NIC_DMA_FAULT: the slot waits for the
 * restore) or revoked (NIC_DMA_ACCESS); wake every slot waiting on mr's lease. */
enum nic_dma_result nic_lease_blocked(struct nic_dma_ctx *c, struct nic_mr *mr);
void nic_lease_wake(struct nic_mr *mr);

/* fault.c */
enum nic_fault_state nic_fault_poll(struct nic_fault *f);
void nic_fault_cancel(struct nic_fault *f, const struct nic_ports *ports);
/* An IDLE slot waits on something other than a page request (a lease, the persist port):
 * WAITING with no domain; its waiter wakes qp when answered. */
void nic_fault_park(struct nic_fault *f, struct nic_qp *qp);
/* A slot's waiter function: the QP (cookie) runs again and polls its slot. */
void nic_fault_wake(void *cookie, int status);

/* wire.c */
/* Send one packet: headers of h, a copy of payload (len bytes), ICRC. */
int nic_xmit(struct nic_qp *qp, const struct nic_gid *dst, const struct roce_hdr *h,
	     const void *payload, uint32_t len);
/* A packet of no QP (QP1's MADs): built, sealed and sent as nic_xmit does. */
int nic_xmit_raw(struct nic *nic, const struct nic_gid *dst, const struct roce_hdr *h,
		 const void *payload, uint32_t len);
/* gsi.c: a packet for QP1, its ICRC checked. */
void nic_gsi_rx(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src);
/* Zero-copy sending: where the payload of a packet with h's opcode goes (in the port's
 * transmit slot, else nic->pkt), to gather into; then nic_xmit_in_place sends it with
 * the headers written around it. Nothing may be sent in between (a gather that faults
 * just never sends: the next packet reuses the slot). */
uint8_t *nic_tx_payload(struct nic *nic, const struct roce_hdr *h);
int nic_xmit_in_place(struct nic_qp *qp, const struct nic_gid *dst, const struct roce_hdr *h,
		      uint32_t len);
/* dst: the IP destination the packet was sent to (this device's address, or a multicast
 * group it joined). */
bool nic_icrc_ok_from(struct nic *nic, const struct nic_gid *src, uint16_t sport,
		      const struct nic_gid *dst, const uint8_t *pkt, size_t len);
/* Every received packet's first steps (nic_rx_from, nic_rx_mcast): the clock, the count,
 * the BTH's destination QP and the ICRC as sent to dst. The destination QPN, or -1 once
 * counted as a drop. */
int32_t nic_rx_begin(struct nic *nic, const uint8_t *pkt, size_t len, const struct nic_gid *src,
		     uint16_t sport, const struct nic_gid *dst, uint64_t now);

/* req.c / comp.c / resp.c */
void nic_req_run(struct nic_qp *qp);
void nic_comp_rx(struct nic_qp *qp, const struct roce_pkt *pkt);
void nic_comp_tick(struct nic_qp *qp, uint64_t now);
void nic_comp_retire(struct nic_qp *qp);
void nic_req_rewind(struct nic_qp *qp, uint32_t psn);
struct nic_gid nic_qp_dgid(const struct nic_qp *qp);
void nic_resp_rx(struct nic_qp *qp, const struct roce_pkt *pkt, const struct nic_gid *src);
void nic_resp_run(struct nic_qp *qp);
/* dst: the IP destination (the GRH's DGID): this device, or the multicast group. */
void nic_ud_rx(struct nic_qp *qp, const struct roce_pkt *pkt, const struct nic_gid *src,
	       const struct nic_gid *dst);
/* device.c: a packet checked (ICRC) and addressed to qp: state, parse, P_Key, transport. */
void nic_rx_qp(struct nic *nic, struct nic_qp *qp, const uint8_t *pkt, size_t len,
	       const struct nic_gid *src, const struct nic_gid *dst);
/* mcast.c: a QP goes: out of every group it is in. */
void nic_mcast_qp_gone(struct nic_qp *qp);
void nic_mcast_free(struct nic *nic);
/* uc.c: may the UC responder execute pkt? false: dropped (counted), with the rest of its
 * message. nic_uc_drop_msg drops pkt and the rest of its message for why. */
bool nic_uc_accept(struct nic_qp *qp, const struct roce_pkt *pkt);
void nic_uc_drop_msg(struct nic_qp *qp, const struct roce_pkt *pkt, enum nic_drop_reason why);

static inline uint64_t nic_ack_timeout_ns(uint8_t timeout)
{
	/* IBA 11.2.4.2: 4.096 us * 2^timeout; 0 = infinite. Capped to keep the shift sane. */
	return timeout ? 4096ull << (timeout > 31 ? 31 : timeout) : UINT64_MAX;
}

#endif
