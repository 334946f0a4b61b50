/* SPDX-License-Identifier: MIT */
/*
 * A two-NIC test bench for focused tests and nic-bench: NIC a (10.0.0.1) and NIC b
 * (10.0.0.2) on an in-memory wire (FIFO, optional drop of the n-th packet; a packet to a
 * multicast group goes to both NICs, nic_rx_mcast), host memory =
 * this process's memory (host address = pointer), a fault handler that answers from a
 * queue when pair_run() turns (optionally failing), virtual time that jumps to the next
 * deadline when nothing else is pending. One RC QP pair and one UD QP pair are connected.
 *
 * Below pair_new's bench are the frames the focused tests repeat: a registered buffer on
 * each side (pair_bufs), a scatter entry (pair_sge), run until quiet (pair_settle), one
 * completion taken with a check (pair_wc), one WR posted and its completion awaited
 * (pair_send_wc), a UD QP brought to RTS (pair_ud_up).
 */
#ifndef ODPEMU_TESTS_NIC_PAIR_H
#define ODPEMU_TESTS_NIC_PAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "nic.h"
#include "t.h"

#define PAIR_PKTQ 4096
#define PAIR_FAULTQ 256

#define PAIR_TO_GROUP 2		/* pair_pkt.to: both sides, by nic_rx_mcast */
struct pair_pkt {
	int to;			/* 0: a, 1: b, PAIR_TO_GROUP: multicast group `group` */
	int from;
	struct nic_gid group;
	uint32_t len;
	uint8_t buf[4096 + 128];
};

#define PAIR_GSI_KEPT 8
struct pair_mad {
	struct nic_gid src;
	uint32_t src_qp;
	uint8_t mad[NIC_GSI_MAD_LEN];
};

struct pair_side {
	struct nic *nic;
	struct nic_pd *pd;
	struct nic_cq *scq, *rcq;
	struct nic_qp *qp;	/* RC */
	struct nic_qp *ud;
	struct nic_qp *uc;	/* pair_uc_up; NULL until then */
	struct nic_gid gid;
	unsigned events[0x200];
	unsigned notified_scq, notified_rcq;	/* ports.cq_notify calls per CQ */
	struct pair_fault { struct iopt_req *req; uint32_t client; } faults[PAIR_FAULTQ];
	unsigned nfaults;
	struct pair_mad gsi[PAIR_GSI_KEPT];	/* QP1's MADs, ngsi % PAIR_GSI_KEPT the next */
	unsigned ngsi;
	unsigned mcast_joins, mcast_leaves;	/* ports.mcast_member calls */
	/* the persist port (persistent FLUSH): what it was asked, the waiter it holds */
	unsigned persist_calls, persist_cancels;
	uint64_t persist_addr, persist_len;
	bool persist_odp;
	struct iopt_waiter *persist_w;
};

struct pair {
	struct pair_side s[2];
	struct pair_pkt **q;	/* ring of PAIR_PKTQ packets in flight, oldest at qhead */
	unsigned qhead, qcount;
	/* Packet buffers, reused last-freed-first: the few in flight stay in cache, so
	 * nic-bench measures the NIC rather than misses on a 17 MB ring. */
	struct pair_pkt *pool, **spare;
	unsigned nspare;
	uint64_t now;
	uint64_t sent, delivered, dropped;
	/* knobs */
	uint64_t drop_nth;	/* drop the packet numbered drop_nth (1-based); 0 none */
	unsigned drop_mask;	/* drop every packet of these opcodes' bit (opcode & 31) */
	bool fail_faults;	/* answer faults with -EFAULT */
	bool hold_faults;	/* do not answer faults until cleared */
	bool readonly_faults;	/* answer with read-only pages */
	bool no_tx_slot;	/* the wire offers no transmit slot: nic/ builds packets in its
				 * own scratch and send() copies (default: built in place) */
	bool eager_faults;	/* answer faults before the next packet (default: once the
				 * wire is empty, i.e. after every packet in flight) */
	uint64_t fault_latency_ns;
	uint64_t settle_ns;	/* how long pair_settle runs (0: PAIR_SETTLE_NS) */
	uint64_t faults_answered;
	/* the persist port's answer: 0 durable now, 1 later (pair_persist_answer), -errno */
	int persist_rc;
};
/* persist_cancel calls of every pair so far (a pair_free cancels too). */
extern unsigned pair_persist_cancels;
/* Answer side i's pending persist request with status (0 or -errno), as a host would. */
void pair_persist_answer(struct pair *p, int i, int status);

struct pair_qp_opts {
	enum nic_fault_policy policy;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	unsigned access;		/* QP remote access flags */
	enum odpemu_mtu mtu;
	unsigned max_send_wr, max_recv_wr;
	/* nic_config of both NICs (0: the nic defaults), for nic-bench */
	unsigned max_inflight;
	uint64_t fault_around;
};

/* Create both NICs, PDs, CQs and connect the RC and UD QPs. opts may be NULL. */
struct pair *pair_new(const struct pair_qp_opts *opts);
void pair_free(struct pair *p);		/* asserts every object can be destroyed */
/* Deliver packets, answer faults, fire timers until quiet or max_ns of virtual time. */
void pair_run(struct pair *p, uint64_t max_ns);
/* Register an MR on side i (access includes ON_DEMAND for ODP; host = va for pinned). */
struct nic_mr *pair_mr(struct pair *p, int i, void *buf, uint64_t len, unsigned access);
/* Poll one completion from side i's send (send=true) or receive CQ; false if none. */
bool pair_poll(struct pair *p, int i, bool send, struct nic_wc *wc);
int pair_post_recv(struct pair *p, int i, uint64_t wr_id, void *buf, uint32_t len,
		   struct nic_mr *mr);
int pair_post_send(struct pair *p, int i, const struct nic_send_wr *wr);
int pair_post_send_list(struct pair *p, int i, const struct nic_send_wr *wrs, unsigned n,
			unsigned *posted);

struct roce_hdr;
/* Deliver a request crafted by the test to side to's RC QP, from side !to's address. */
void pair_inject(struct pair *p, int to, struct roce_hdr *h, const void *payload, uint32_t len);
/* The same to another QP of side to's NIC. */
void pair_inject_qp(struct pair *p, int to, struct nic_qp *qp, struct roce_hdr *h,
		    const void *payload, uint32_t len);

/* Required attributes of the RC bring-up (IBA table 91), as connect_rc and tests use them. */
#define PAIR_RC_INIT_MASK (ODPEMU_QP_STATE | ODPEMU_QP_PKEY_INDEX | ODPEMU_QP_PORT | \
			   ODPEMU_QP_ACCESS_FLAGS)
#define PAIR_RC_RTR_MASK (ODPEMU_QP_STATE | ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU | \
			  ODPEMU_QP_DEST_QPN | ODPEMU_QP_RQ_PSN | ODPEMU_QP_MAX_DEST_RD_ATOMIC | \
			  ODPEMU_QP_MIN_RNR_TIMER)
#define PAIR_RC_RTS_MASK (ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN | ODPEMU_QP_TIMEOUT | \
			  ODPEMU_QP_RETRY_CNT | ODPEMU_QP_RNR_RETRY | ODPEMU_QP_MAX_QP_RD_ATOMIC)

/* ---- the frames tests repeat ---- */

/* 1 s of virtual time: what a focused test gives an exchange to end in. */
#define PAIR_SETTLE_NS 1000000000ull

/* pair_run for p->settle_ns (PAIR_SETTLE_NS unless a test needs longer). */
void pair_settle(struct pair *p);

/* One buffer on each side, registered: a on side 0, b on side 1, len bytes each,
 * page-aligned. a is filled from fill (0x77 bytes when fill is NULL), b is zeroed. An
 * access of PAIR_NO_MR leaves that side's buffer unregistered (its mr NULL). */
struct pair_bufs {
	uint8_t *a, *b;
	struct nic_mr *ma, *mb;
};
#define PAIR_NO_MR (~0u)
void pair_bufs_new(struct pair *p, struct pair_bufs *x, size_t len, unsigned acc_a,
		   unsigned acc_b, struct t_rng *fill);
/* Deregister (checked) the MRs still set, free both buffers. */
void pair_bufs_free(struct pair_bufs *x);

/* A scatter/gather entry of len bytes at buf in mr. */
struct nic_sge pair_sge(void *buf, uint32_t len, struct nic_mr *mr);
/* One completion from side i's send (send=true) or receive CQ; a failed check "what: no
 * completion" (and status GENERAL_ERR) when there is none. */
struct nic_wc pair_wc(struct pair *p, int i, bool send, const char *what);
/* Post wr on side i's RC QP (checked), pair_settle, and take one send completion of side
 * i (pair_wc): the frame of a one-WR exchange. The caller checks its status. */
struct nic_wc pair_send_wc(struct pair *p, int i, const struct nic_send_wr *wr,
			   const char *what);

/* A UD QP through INIT (with qkey), RTR and RTS (with sq_psn), each step checked. */
void pair_ud_up(struct nic_qp *ud, uint32_t qkey, uint32_t sq_psn);

/* Required attributes of the UC bring-up (IBA table 91): RC's without the RDMA-read, ACK
 * timer and RNR attributes. */
#define PAIR_UC_INIT_MASK PAIR_RC_INIT_MASK
#define PAIR_UC_RTR_MASK (ODPEMU_QP_STATE | ODPEMU_QP_AV | ODPEMU_QP_PATH_MTU | \
			  ODPEMU_QP_DEST_QPN | ODPEMU_QP_RQ_PSN)
#define PAIR_UC_RTS_MASK (ODPEMU_QP_STATE | ODPEMU_QP_SQ_PSN)
/* A UC QP on each side (s[i].uc, on the sides' CQs, with policy and the QP access flags
 * access), connected and in RTS: side i's rq_psn is 300 + i, its sq_psn 300 + !i. */
void pair_uc_up(struct pair *p, enum nic_fault_policy policy, unsigned access);

#endif
