/* SPDX-License-Identifier: MIT */
/*
 * server — odpemu-brick's state: the store and its allocation map, the rdma_cm listener,
 * and one initiator per connection (docs/brick.md). brick.c parses the command line,
 * serve.c runs the connections and the event loop, ops.c answers requests.
 */
#ifndef ODPEMU_BRICK_SERVER_H
#define ODPEMU_BRICK_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "meta.h"
#include "store.h"
#include "wire.h"

/* Requests an initiator may have in flight (HELLO's credits): the RECVs posted for it. */
#define BRICK_CREDITS 8u
/* Reply buffers: twice the credits, so a reply never waits for an earlier SEND's
 * completion (the initiator may send its next request before that completion is polled). */
#define BRICK_SEND_SLOTS (2u * BRICK_CREDITS)

/* One block mapped by one initiator: its handle is mr (an ODP MR of the initiator's PD
 * over the block's 2 MiB of the file mapping). */
struct brick_mapping {
	uint64_t addr, slot;
	uint32_t flags;		/* BRICK_MAP_* */
	struct ibv_mr *mr;
};

/* What a connection's device can do, asked once per connection. */
struct brick_devcaps {
	bool odp;		/* RC ODP with READ, WRITE (and SEND/RECV) */
	bool flush;		/* FLUSH persistent and global MR access */
	uint8_t max_rd_atom;	/* responder resources the device allows */
};

/* One verbs device the brick serves on, and the backing file's mapping registered there
 * as one ODP MR of the brick's own (local access only): MAP brings a block into memory
 * through it (ODP prefetch), and an eviction is an invalidation of it. Initiators' handles
 * are MRs of their own PDs over the same pages. */
struct brick_device {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *store_mr;	/* NULL when the device has no ODP */
	struct brick_device *next;
};

struct brick_initiator {
	struct brick_server *srv;
	struct brick_device *dev;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct ibv_mr *buf_mr;
	uint8_t *buf;		/* BRICK_CREDITS receive buffers, then the send slots */
	bool send_busy[BRICK_SEND_SLOTS];
	bool established;
	struct brick_devcaps caps;
	struct brick_mapping *maps;
	uint32_t nmaps, capmaps;
	struct brick_initiator *next;
};

struct brick_options {
	const char *file, *meta, *addr, *port;
	uint64_t size;		/* create or extend the file to this (0: its size) */
	uint64_t mem;		/* memory budget (0: none) */
	unsigned max_initiators;
	bool verbose;
};

struct brick_server {
	struct brick_options opt;
	struct brick_store *store;
	struct brick_meta *meta;
	struct rdma_event_channel *events;
	struct rdma_cm_id *listener;
	struct brick_initiator *initiators;
	unsigned ninitiators;
	struct brick_device *devices;
	int timer_fd, signal_fd;
	uint64_t requests, bad_requests;
};

/* serve.c: listen and serve until SIGINT/SIGTERM (0) or the device goes away (-ENODEV). */
int brick_serve(struct brick_server *s);

/* ops.c: answer one request of `in` (len bytes at req) into reply (BRICK_MSG_MAX bytes):
 * the reply's length. */
int brick_answer(struct brick_initiator *in, const void *req, uint32_t len, void *reply);
/* Revoke every map of the initiator (its end). */
void brick_unmap_all(struct brick_initiator *in);

/* brick.c: a line to stderr when -v. */
void brick_log(const struct brick_server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
