/* SPDX-License-Identifier: MIT */
/*
 * A two-NIC test bench for focused tests and nic-bench: NIC a (10.0.0.1) and NIC b
 * (10.0.0.2) on an in-memory wire (FIFO, optional drop of the n-th packet), host memory =
 * this process's memory (host address = pointer), a fault handler that answers from a
 * queue when pair_run() turns (optionally failing), virtual time that jumps to the next
 * deadline when nothing else is pending. One RC QP pair and one UD QP pair are connected.
 */
#ifndef ODPEMU_TESTS_NIC_PAIR_H
#define ODPEMU_TESTS_NIC_PAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "nic.h"

#define PAIR_PKTQ 4096
#define PAIR_FAULTQ 256

struct pair_pkt {
	int to;			/* 0: a, 1: b */
	uint32_t len;
	uint8_t buf[4096 + 128];
};

struct pair_side {
	struct nic *nic;
	struct nic_pd *pd;
	struct nic_cq *scq, *rcq;
	struct nic_qp *qp;	/* RC */
	struct nic_qp *ud;
	struct nic_gid gid;
	unsigned events[0x200];
	unsigned notified_scq, notified_rcq;	/* ports.cq_notify calls per CQ */
	struct pair_fault { struct iopt_req *req; uint32_t client; } faults[PAIR_FAULTQ];
	unsigned nfaults;
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
	bool eager_faults;	/* answer faults before the next packet (default: once the
				 * wire is empty, i.e. after every packet in flight) */
	uint64_t fault_latency_ns;
	uint64_t faults_answered;
};

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

#endif
