/* SPDX-License-Identifier: MIT */
/*
 * nic-sim — the deterministic simulation of several NICs (nic/nic.h) in one process.
 *
 * One seed decides everything: the network (loss, duplication, reordering, delay), the host
 * memories (holes, read-only pages, remaps), the fault handler (latency, refusals), the
 * evictions and the workload. Time is virtual: the event loop (main.c) jumps to the earliest
 * of the next packet, the next fault answer, the next NIC deadline and the next workload
 * action. Nothing reads the real clock.
 *
 * Files, one idea each:
 *   pq.c        the priority queue of timed events
 *   net.c       the wire (ports.send), with its seeded impairments
 *   mem.c       host memories: pages, frames, generations; ports.mem_read/mem_write
 *   fault.c     the host fault handler (ports.fault) answering with nic_fault_complete/fail
 *   setup.c     devices, PDs, MRs, CQs, SRQs, QPs; connect, reset, teardown
 *   model.c     the reference model: what each WR must complete with and land
 *   check.c     invariants: failure reporting, memory checks, teardown checks
 *   workload.c  random actions: posts of every WR type, remaps, evictions, resets
 *   main.c      the event loop and the command line
 *
 * HOST ADDRESSES. A client's virtual address space is an arena of pages; each mapping of a
 * page is a frame with a generation number. The host address of (va, generation g) is
 * va | g << 47: the low 47 bits are the virtual address (identity), the high bits name the
 * mapping. The fault handler answers host = va | current generation << 47; a pinned MR keeps
 * the generation it pinned. A remap bumps the generation, so a DMA through a stale
 * translation names a frame that no longer exists, and mem.c reports it (the fence check).
 */
#ifndef ODPEMU_NIC_SIM_H
#define ODPEMU_NIC_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nic.h"
#include "t.h"

#define SIM_PAGE		((uint64_t)4096)
#define SIM_GEN_SHIFT		47
#define SIM_VA_MASK		(((uint64_t)1 << SIM_GEN_SHIFT) - 1)
#define SIM_MAX_NICS		3
#define SIM_MAX_CLIENTS		6
#define SIM_MAX_MRS		12
#define SIM_MAX_QPS		48
#define SIM_MAX_SGE		3
#define SIM_MS			((uint64_t)1000000)	/* ns */
#define SIM_US			((uint64_t)1000)

/* Arena layout of every client (offsets from its base): buffers live in the normal area;
 * the error zone holds holes, read-only and poisoned pages, far enough (SIM_ZONE_GAP) from
 * the normal area that no fault request of a good buffer can merge with one of the zone. */
#define SIM_NORMAL_SIZE		(16ull << 20)
#define SIM_ZONE_GAP		(8ull << 20)
#define SIM_ZONE_SIZE		(1ull << 20)
#define SIM_ARENA_SIZE		(SIM_NORMAL_SIZE + SIM_ZONE_GAP + SIM_ZONE_SIZE)
#define SIM_ARENA_PAGES		(SIM_ARENA_SIZE / SIM_PAGE)

/* Features a run may use; each seed draws a subset of those allowed by --features. */
#define SIM_FEATURES(X) \
	X(LOSS, "seeded packet loss") \
	X(DUP, "packet duplication") \
	X(REORDER, "reordering") \
	X(ODP, "explicit ODP MRs") \
	X(IMPLICIT, "implicit ODP MR") \
	X(PINNED, "pinned MRs") \
	X(RNR_POLICY, "NIC_FAULT_RNR QPs") \
	X(EVICT, "random evictions") \
	X(REMAP, "remaps, unmaps, maps, mprotect") \
	X(ERRORS, "WRs that must fail (keys, ranges, permissions, holes, short RECVs)") \
	X(RESET, "QP resets and re-connects") \
	X(UD, "UD QPs") \
	X(SRQ, "SRQs") \
	X(LARGE, "messages up to 4 MiB") \
	X(ALLOPS, "READ, atomics, FLUSH, ATOMIC_WRITE, WRITE_WITH_IMM, SEND_WITH_INV") \
	X(MULTI, "several QP pairs and three NICs") \
	X(LATE_RECV, "RECVs posted after their SEND (RNR NAKs)") \
	X(RNR_LIMIT, "QPs with rnr_retry < 7 (RNR_RETRY_EXC_ERR allowed)") \
	X(SLOW_FAULTS, "fault latency up to 10 ms") \
	X(CONTENDED, "FETCH_ADD from many QPs on shared counters")
enum sim_feature_bit {
#define SIM_FBIT_(n, d) SIM_FB_##n,
	SIM_FEATURES(SIM_FBIT_)
#undef SIM_FBIT_
	SIM_FB__COUNT
};
#define SIM_F(n) (1u << SIM_FB_##n)
#define SIM_F_ALL ((1u << SIM_FB__COUNT) - 1)

struct sim;

/* ---- pq.c: events ordered by (time, sequence) ---- */
struct ev {
	uint64_t t, seq;
	void *p;
};
struct pq {
	struct ev *v;
	size_t n, cap;
};
void pq_push(struct pq *q, uint64_t t, uint64_t seq, void *p);
bool pq_pop(struct pq *q, struct ev *out);
uint64_t pq_next(const struct pq *q);	/* UINT64_MAX when empty */
void pq_free(struct pq *q);

/* ---- a growable FIFO of pointers ---- */
struct fifo {
	void **v;
	size_t head, n, cap;
};
void fifo_push(struct fifo *f, void *p);
void *fifo_peek(const struct fifo *f, size_t i);	/* i-th from the head or NULL */
void *fifo_pop(struct fifo *f);
void fifo_remove(struct fifo *f, size_t i);
void fifo_free(struct fifo *f);

/* ---- net.c ---- */
struct net_cfg {
	unsigned loss_ppm, dup_ppm, reorder_ppm;
	uint64_t delay_min, delay_max;	/* ns */
	uint64_t reorder_extra;		/* ns added to a reordered packet */
};
struct net_stats {
	uint64_t sent, delivered, lost, duplicated, reordered;
};
void net_send_port(void *ctx, const struct nic_gid *dst, const uint8_t *pkt, size_t len);
/* Deliver every packet due at sim->now; returns how many were delivered. */
unsigned net_deliver_due(struct sim *s);
uint64_t net_next(const struct sim *s);
/* Packets in flight between two devices (either direction). */
unsigned net_inflight_between(const struct sim *s, int a, int b);
void net_free(struct sim *s);

/* ---- mem.c ---- */
struct frame {
	uint32_t gen;
	uint32_t pins;		/* pinned MRs holding it */
	struct frame *older;	/* orphans of the same page (still pinned) */
	uint8_t data[SIM_PAGE];	 /* what the NIC and the CPU wrote */
	uint8_t expect[SIM_PAGE]; /* what the model says must be there */
	uint8_t unknown[SIM_PAGE / 8];	/* bytes whose expectation is not known */
};
enum { PERM_NONE = 0, PERM_RO = 1, PERM_RW = 3 };
struct page {
	uint32_t gen;
	uint8_t perm;
	bool poison;		/* mapped, but the fault handler refuses it */
	struct frame *cur;	/* NULL: never touched (all zero) */
	struct frame *old;	/* pinned orphans, newest first */
};
struct busy {
	uint64_t start, end;
	const void *owner;
};
struct host {
	uint32_t client;
	int nic;
	uint64_t base;
	struct page *pages;	/* SIM_ARENA_PAGES */
	struct busy *busy;	/* VA ranges of outstanding WRs */
	size_t nbusy, capbusy;
	uint64_t frames;	/* allocated frames (for the report) */
};
int mem_read_port(void *ctx, uint32_t client, uint64_t host, void *dst, size_t len);
int mem_write_port(void *ctx, uint32_t client, uint64_t host, const void *src, size_t len);
void host_init(struct host *h, uint32_t client, int nic, uint64_t base);
void host_free(struct host *h);
struct page *host_page(struct host *h, uint64_t va);	/* NULL outside the arena */
/* The frame behind a host address (alloc: create a zero frame for a mapped, untouched page);
 * NULL if it no longer exists. */
struct frame *host_frame(struct host *h, uint64_t hostaddr, bool alloc);
/* The application (CPU) writes its own memory: data and expectation. */
void host_cpu_write(struct host *h, uint64_t va, const void *src, size_t len);
bool host_range_perm(struct host *h, uint64_t va, uint64_t len, unsigned perm);
bool host_busy_overlaps(const struct host *h, uint64_t start, uint64_t end);
void host_busy_add(struct host *h, uint64_t start, uint64_t len, const void *owner);
void host_busy_del(struct host *h, const void *owner);
/* Host changes (MMU-notifier order: nic_host_invalidate on every device first). */
void host_remap(struct sim *s, struct host *h, uint64_t va, uint64_t len, unsigned perm);
void host_unmap(struct sim *s, struct host *h, uint64_t va, uint64_t len);
void host_protect(struct sim *s, struct host *h, uint64_t va, uint64_t len, unsigned perm);
void host_evict(struct sim *s, struct host *h, uint64_t va, uint64_t len);
void host_pin(struct host *h, uint64_t va, uint64_t len);
void host_unpin(struct host *h, uint64_t hostaddr, uint64_t len);

/* ---- views: bytes as an MR sees them (pinned: its frames; ODP: the current mapping) ---- */
struct mrm;
uint64_t view_host(struct sim *s, const struct mrm *m, uint64_t va);
bool view_coherent(struct sim *s, const struct mrm *m, uint64_t va, uint64_t len);
void view_read(struct sim *s, const struct mrm *m, uint64_t va, void *dst, size_t len);
void view_expect(struct sim *s, const struct mrm *m, uint64_t va, const void *src, size_t len);
void view_unknown(struct sim *s, const struct mrm *m, uint64_t va, size_t len);
/* Compare data with expectation over the range; false (and the sim fails) on a mismatch. */
bool view_check(struct sim *s, const struct mrm *m, uint64_t va, size_t len, const char *what);

/* ---- fault.c ---- */
struct fault_cfg {
	uint64_t lat_max;		/* ns */
	unsigned zero_lat_pct;		/* answers with no latency */
};
void fault_port(void *ctx, uint32_t client, struct iopt_req *req);
unsigned fault_answer_due(struct sim *s);
uint64_t fault_next(const struct sim *s);
unsigned fault_pending_for(const struct sim *s, const struct iopt *dom);
unsigned fault_pending(const struct sim *s);

/* ---- objects (setup.c) ---- */
struct mrm {
	struct nic_mr *mr;
	int client;
	uint64_t va, len;
	unsigned access;
	bool odp, implicit, zone, live, other_pd, inv;
	uint64_t host;		/* pinned: host address of va */
	uint32_t lkey, rkey;
	unsigned decoherence;	/* MR_DECOHERENCE events seen */
};

struct clientm {
	int nic;
	uint32_t id;
	struct host mem;
	struct nic_pd *pd, *pd2;
	struct mrm mrs[SIM_MAX_MRS];
	unsigned nmrs;
	struct nic_srq *srq;
	struct fifo srq_recvs;	/* struct xrecv posted to the SRQ, any completion order */
	unsigned srq_recv_size;
	uint64_t srq_seq;	/* wr_id sequence of SRQ RECVs */
};

struct xwr;
struct xrecv;

struct qpm {
	struct nic_qp *qp;
	int idx, client, peer;	/* peer: QP index (RC), -1 for UD */
	enum odpemu_qp_type type;
	enum nic_fault_policy policy;
	bool use_srq, srq_sends_only;
	struct nic_cq *scq, *rcq;
	uint32_t qpn;
	uint8_t rnr_retry, retry_cnt, timeout, min_rnr_timer;
	enum odpemu_mtu mtu;
	unsigned access;	/* QP access flags */
	struct fifo sq;		/* struct xwr in post order */
	struct fifo rq;		/* struct xrecv in post order (not SRQ) */
	struct fifo incoming;	/* struct xwr of the peer that consume a RECV here, in order */
	uint64_t wr_seq;
	unsigned sq_len;	/* WRs outstanding (NIC's view bound) */
	/* model state */
	bool sq_err, rq_err;	/* a non-success completion seen on that queue */
	bool flush_sq, flush_rq; /* the QP is (or may be) in ERR: FLUSH acceptable there */
	bool retry_exc_ok;	/* RETRY_EXC_ERR acceptable (the peer went to ERR) */
	bool doomed;		/* an error happened or will: no more posts until reset */
	int reset_stage;	/* 0 none; see setup.c pair_reset_step */
	uint64_t reset_at;
	unsigned incarnation;
	unsigned max_msg;	/* largest SEND this QP may send (its peer's RECV/SRQ size) */
	bool counter_qp;	/* may FETCH_ADD shared counters: kept error-free */
	uint64_t late_until;	/* RECVs posted late keep their order behind this time */
};

/* A send WR as the model predicts it. */
struct seg {
	int mr;			/* index in the client's mrs, -1: bogus lkey */
	uint64_t va;
	uint32_t len;
};
struct xwr {
	uint64_t wr_id;
	int qp;
	enum odpemu_wr_opcode op;
	bool signaled;
	uint32_t len;
	unsigned nseg;
	struct seg seg[SIM_MAX_SGE];
	int rmr;		/* peer client's MR index, -1: bogus rkey */
	uint32_t rkey;
	uint64_t rva;
	uint8_t *data;		/* SEND/WRITE payload, READ result, atomic original value */
	uint8_t rdata[8];	/* atomics, ATOMIC_WRITE: the 8 bytes a success leaves at rva */
	uint64_t compare_add, swap, orig;
	unsigned recv_ok;	/* statuses of the RECV it consumes (0: consumes none) */
	int refs;		/* the send queue, and the peer's incoming FIFO */
	bool inline_data;
	uint8_t flush_type, flush_level;
	uint32_t imm;
	unsigned ok;		/* predicted statuses (bit per enum odpemu_wc_status) */
	bool lands_remote;	/* WRITE*, ATOMIC_WRITE, atomics: a success changes rva */
	bool reserved;		/* its buffers are marked busy (model_reserve) */
	bool lands_local;	/* READ, atomics: a success changes the local segments */
	bool consumes_recv;	/* SEND*, WRITE_WITH_IMM */
	bool ud;
	uint64_t ud_msg;
	int counter;		/* shared counter index, -1 */
	uint64_t posted_at;
};
/* A receive WR. */
struct xrecv {
	uint64_t wr_id;
	int client, qp;		/* qp -1: SRQ */
	unsigned nseg;
	struct seg seg[2];
	uint32_t cap;
	bool ud;
};

/* Shared FETCH_ADD counters (linearizability check). */
struct counterm {
	int client, mr;
	uint64_t va, initial;
	uint64_t (*ops)[2];	/* (returned value, add) of successful ops */
	size_t nops, capops;
	uint64_t maybe_add[16];	/* adds of flushed ops that may have executed */
	unsigned nmaybe;
	unsigned inflight;	/* posted, not completed: each may become uncertain */
};

struct simnic {
	struct sim *sim;
	int idx;
	struct nic *nic;
	struct nic_gid gid;
	struct nic_cq *cq[2];
	unsigned mtu_bytes;
};

struct udmsg {
	uint64_t id;
	int src_qp;
	uint32_t src_qpn, len;
	bool bad_qkey;
	unsigned delivered, received;
	uint8_t *data;
};

struct sim_cfg {
	unsigned features;
	unsigned nnics, nclients, npairs, nud;
	unsigned phases, actions_per_phase;
	uint64_t phase_span;		/* ns over which a phase's actions spread */
	struct net_cfg net;
	struct fault_cfg fault;
	unsigned stall_queue, max_inflight;
	uint64_t fault_around;
	unsigned evict_pct, remap_pct, error_pct, reset_pct;
	uint64_t time_bound;		/* virtual ns: beyond it the run hangs */
	uint64_t step_bound;		/* loop iterations */
};

struct sim {
	uint64_t seed;
	struct t_rng rng;
	struct sim_cfg cfg;
	int verbose;
	uint64_t now, seq, steps;
	bool failed;
	char why[512];
	struct simnic nics[SIM_MAX_NICS];
	struct clientm clients[SIM_MAX_CLIENTS];
	struct qpm qps[SIM_MAX_QPS];
	unsigned nqps;
	struct pq net_q, fault_q, action_q;
	struct net_stats net;
	struct counterm counters[4];
	unsigned ncounters;
	struct udmsg **ud;
	size_t nud, capud;
	uint64_t posted, completed, recv_completed, faults, faults_refused, remaps, evictions,
		resets, ud_recvs;
	unsigned phase;
	bool phase_posting;	/* actions of the current phase still to run */
	unsigned large_inflight;
};

/* ---- check.c ---- */
void sim_fail(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sim_trace(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool check_all_memory(struct sim *s);
bool check_teardown(struct sim *s);
unsigned status_bit(enum odpemu_wc_status st);
const char *status_set_str(unsigned set, char *buf, size_t cap);

/* ---- setup.c ---- */
int setup_world(struct sim *s);
void teardown_world(struct sim *s);
struct qpm *qp_by_num(struct sim *s, int nic, uint32_t qpn);
void pair_reset_begin(struct sim *s, struct qpm *q);
void pair_reset_poll(struct sim *s);
bool pair_resets_idle(const struct sim *s);
void event_port(void *ctx, const struct nic_event *ev);
void cq_notify_port(void *ctx, struct nic_cq *cq);
struct clientm *client_of(struct sim *s, uint32_t id);

/* ---- model.c ---- */
void model_predict(struct sim *s, struct qpm *q, struct xwr *w, uint32_t recv_cap, bool recv_bad);
void model_reserve(struct sim *s, struct qpm *q, struct xwr *w);
int model_post_send(struct sim *s, struct qpm *q, struct xwr *w, struct nic_send_wr *wr);
int model_post_send_list(struct sim *s, struct qpm *q, struct xwr **w, struct nic_send_wr *wr,
			 unsigned n);
int model_post_recv(struct sim *s, struct qpm *q, struct xrecv *r, bool srq);
void model_poll_all(struct sim *s);
bool model_quiet(const struct sim *s);
void model_doom(struct sim *s, struct qpm *q);
bool model_check_counters(struct sim *s);
void xwr_free(struct sim *s, struct xwr *w);
void xrecv_free(struct sim *s, struct xrecv *r);

/* ---- workload.c ---- */
void workload_phase(struct sim *s);
unsigned workload_actions_due(struct sim *s);
uint64_t workload_next(const struct sim *s);
void workload_keep_ud_recvs(struct sim *s);
void workload_init(struct sim *s);

#endif
