/* SPDX-License-Identifier: MIT */
/*
 * odpemu/brick.h — the initiator's side of odpemu-brick (docs/brick.md), libodpemu-brick.
 *
 * An ordinary libibverbs + librdmacm library: it connects to a brick with rdma_cm (one RC
 * QP per connection), speaks the brick's wire protocol in SEND/RECV on that QP, and moves
 * data with RDMA READ, WRITE and FLUSH on the same QP. On odpemu it runs through the
 * drop-in libraries (odpemu-run), unchanged on any RDMA NIC.
 *
 * Calls return 0 or a negative errno. A brick's refusal maps to the errno of the same
 * meaning (EEXIST, ENOSPC, ENOENT, EBUSY, EINVAL for an unaligned id, ENXIO for an
 * UNMAP of a block this initiator has not mapped, EPROTONOSUPPORT for a version the
 * brick does not speak, EPROTO for a message it could not decode, EOPNOTSUPP for an op
 * it does not know, ENOMEM for the brick out of resources, EIO); brick_status() gives
 * the wire's status of the last reply exactly. -EPROTO with brick_status() 0: the reply
 * could not be decoded, or answered another request (the connection is then dead). A
 * transport failure (the brick or its NIC gone, a request unanswered within the timeout,
 * an operation completed in error: RC leaves the QP in error) is -ECONNRESET or
 * -ETIMEDOUT, after which the connection only closes: every later request and post is
 * -ECONNRESET.
 *
 * Requests are synchronous and one at a time. Data operations are posted
 * (brick_post_*) and reaped (brick_poll), up to brick_conn_depth() in flight, or run
 * synchronously (brick_read/write/flush). Not thread-safe: one connection per thread.
 * Waits sleep in poll() on the CQs' completion channel and the rdma_cm channel, bounded
 * by their timeout: none spins.
 */
#ifndef ODPEMU_BRICK_H
#define ODPEMU_BRICK_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BRICK_BLOCK_SIZE (2ull << 20)
#define BRICK_DEFAULT_PORT "7471"

/* MAP flags (the wire's). */
#define BRICK_RO 0x1u
#define BRICK_RW 0x2u
#define BRICK_SHARED 0x4u

struct brick_conn;

/* What MAP returns: RDMA access to one block, valid until UNMAP (or FREE, or the
 * connection's end). */
struct brick_map {
	uint64_t id;		/* the block's id */
	uint64_t remote_addr;	/* its address in the brick */
	uint32_t rkey;
	uint64_t length;	/* BRICK_BLOCK_SIZE */
	uint32_t flags;
};

struct brick_range {
	uint64_t id;		/* first block id */
	uint64_t length;	/* bytes, a multiple of BRICK_BLOCK_SIZE */
};

struct brick_info {
	uint16_t version;	/* the protocol version in use */
	uint64_t block_size;
	uint64_t slots;		/* capacity in blocks */
	uint32_t credits;
};

struct brick_connect_opts {
	const char *device;	/* verbs device to use (NULL: rdma_cm's choice) */
	int timeout_ms;		/* connect and per-request timeout (0: 5000) */
	uint32_t depth;		/* data operations in flight (0: 32; at most 4096) */
	uint16_t version;	/* protocol version to ask for (0: the library's) */
};

/* Connect to the brick at host:port (port NULL: BRICK_DEFAULT_PORT) and say HELLO.
 * opts may be NULL. Errors: -EHOSTUNREACH (no such host, or no route to it), -ENODEV (no
 * RDMA device for it, or opts->device unknown or not the one that reaches it),
 * -EADDRNOTAVAIL (opts->device has no address of the host's family), -ECONNREFUSED
 * (nothing listens there), -ETIMEDOUT (no answer within the timeout),
 * -EPROTONOSUPPORT (the brick does not speak that version), -EOPNOTSUPP (the local device
 * offers no persistent RDMA FLUSH, device_cap_flags_ex FLUSH_PERSISTENT: writes could not
 * be made durable; mlx5 has none), -EINVAL (opts). */
int brick_connect(const char *host, const char *port, const struct brick_connect_opts *opts,
		  struct brick_conn **out);
/* Close: the brick revokes every map of this connection. */
void brick_close(struct brick_conn *c);
const struct brick_info *brick_conn_info(const struct brick_conn *c);
uint32_t brick_conn_depth(const struct brick_conn *c);
/* The wire status of the last reply (enum brick_status of brick/wire.h, 0: OK;
 * 0 too when the last request got no reply or one that could not be decoded). */
uint32_t brick_status(const struct brick_conn *c);
const char *brick_status_text(uint32_t status);

int brick_alloc(struct brick_conn *c, uint64_t id);
int brick_free(struct brick_conn *c, uint64_t id);
int brick_map(struct brick_conn *c, uint64_t id, uint32_t flags, struct brick_map *out);
int brick_unmap(struct brick_conn *c, uint64_t id);
/* Allocated ranges from `from` on: up to max (at most 253 a call) into r; *count filled,
 * *next the id to go on from (0: no more). */
int brick_list(struct brick_conn *c, uint64_t from, struct brick_range *r, uint32_t max,
	       uint32_t *count, uint64_t *next);
/* The brick's counters: the first min(max, brick_stat_count()) into values, that many in
 * *count (count may be NULL); counter i's name is brick_stat_label(i) (NULL past the
 * last). */
int brick_stat(struct brick_conn *c, uint64_t *values, unsigned max, unsigned *count);
unsigned brick_stat_count(void);
const char *brick_stat_label(unsigned i);

/* Local memory for data operations: registered in the connection's PD with
 * IBV_ACCESS_LOCAL_WRITE (NULL and errno on failure). The caller owns the MR: release it
 * with ibv_dereg_mr before brick_close. */
struct ibv_mr *brick_reg(struct brick_conn *c, void *buf, size_t len);
struct ibv_pd *brick_pd(const struct brick_conn *c);

/* Post an RDMA READ (block -> buf) or WRITE (buf -> block) of len bytes at offset off
 * of the map's block, buf inside mr; wr_id comes back from brick_poll. -EINVAL past the
 * block, for len 0, for buf not inside mr (or mr of another PD) and for a wr_id of
 * 0xffffffffffffff00 or above (the library's own); -EAGAIN when depth operations are in
 * flight; -ECONNRESET once the connection is dead. The brick's NIC enforces the map's
 * access: a WRITE through an RO map, or any access after UNMAP, completes in error. */
int brick_post_read(struct brick_conn *c, const struct brick_map *m, uint64_t off, void *buf,
		    uint32_t len, struct ibv_mr *mr, uint64_t wr_id);
int brick_post_write(struct brick_conn *c, const struct brick_map *m, uint64_t off,
		     const void *buf, uint32_t len, struct ibv_mr *mr, uint64_t wr_id);
/* Post a FLUSH of [off, off+len) of the block: persistent (durable in the brick's file
 * when it completes) or global (visible), or both. -EOPNOTSUPP when the local device does
 * not offer that type; otherwise as brick_post_read. */
#define BRICK_FLUSH_PERSISTENT 0x2u
#define BRICK_FLUSH_GLOBAL 0x1u
int brick_post_flush(struct brick_conn *c, const struct brick_map *m, uint64_t off,
		     uint64_t len, uint32_t type, uint64_t wr_id);
/* Reap up to max completions, waiting up to timeout_ms for the first (0: don't wait,
 * -1: no limit; nothing in flight: 0 at once). wc[i].status says each one's fate
 * (IBV_WC_REM_ACCESS_ERR after UNMAP: the handle is revoked). A completion in error kills
 * the connection (RC); the operations still in flight then complete IBV_WC_WR_FLUSH_ERR
 * and are returned too, after which brick_poll is -ECONNRESET. Returns the count (0 on
 * timeout), or a negative errno. */
int brick_poll(struct brick_conn *c, struct ibv_wc *wc, int max, int timeout_ms);

/* Synchronous forms: 0, -EIO with *wc_status set (may be NULL) when the operation
 * completed in error, or another negative errno (-ETIMEDOUT: not completed within the
 * connection's timeout; the connection is then dead). They use a send-queue slot of their
 * own, so they run with depth operations posted; completions of those that come meanwhile
 * wait for brick_poll. */
int brick_read(struct brick_conn *c, const struct brick_map *m, uint64_t off, void *buf,
	       uint32_t len, struct ibv_mr *mr, int *wc_status);
int brick_write(struct brick_conn *c, const struct brick_map *m, uint64_t off,
		const void *buf, uint32_t len, struct ibv_mr *mr, int *wc_status);
int brick_flush(struct brick_conn *c, const struct brick_map *m, uint64_t off, uint64_t len,
		uint32_t type, int *wc_status);

/* Send raw bytes (at most 4096) as one request and take the reply's bytes (for protocol
 * tests): the reply's length, of which the first max bytes are copied to reply, or a
 * negative errno. brick_status() is the reply's status when it decodes, else 0. */
int brick_raw(struct brick_conn *c, const void *req, size_t len, void *reply, size_t max);

#ifdef __cplusplus
}
#endif

#endif
