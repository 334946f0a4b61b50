/* SPDX-License-Identifier: MIT */
/*
 * fault — the host fault handler of odpemud: one thread that resolves the NIC's page
 * requests against a client process's real address space and hands the answers back to the
 * loop thread, which alone calls nic_fault_complete() / nic_fault_fail().
 *
 * FLOW. nic/ asks through its fault port; the loop wraps the request in a struct
 * emu_fault_job and resolves it on the spot (emu_fault_resolve_now) when that costs
 * microseconds: PROCMAP_QUERY, or the text of /proc/PID/maps while its last walk parsed
 * few lines (a small process); no hand-off, no wake-up of another thread, which on a
 * 2-vCPU host shared with the clients and a peer daemon costs 50-150 us by itself.
 * Otherwise (a long text, or inline resolution off) it calls emu_fault_submit(). Both draw
 * the injected failure and delay the same way. The thread draws the injected failure and
 * delay (inject.h), resolves, fills the answer fields and queues the job for the loop. The
 * loop takes answers (emu_fault_take) in the order they were resolved and hands them to its
 * answer queue (answers.h), which delivers each to nic/ once its due_ns has passed.
 *
 * WAKING. Each wake-up of the thread takes every queued job (a batch, at most 64), and
 * answers each as soon as it is resolved. A loop that polls says so
 * (emu_fault_set_polling) and looks at emu_fault_answers_waiting() each round: no syscall
 * on either side. Otherwise the eventfd (emu_fault_eventfd) is readable while answers wait,
 * to wake a sleeping loop.
 *
 * WHAT IS KEPT OPEN. The thread keeps each client's /proc/PID/maps (and pagemap) open
 * across jobs, for up to 8 clients (least recently used goes), keyed by the NIC's client id
 * and the pid; emu_fault_forget() closes a gone client's files. Within a batch, a VMA once
 * read, registered and read back unchanged answers the batch's later jobs of the same
 * client that lie inside it without another syscall (counted: batch_reused).
 *
 * RESOLUTION. ODP MRs translate by identity (host address == client va; the daemon copies
 * with process_vm_readv/writev), so every answer map has host == va. The client's VMAs come
 * from /proc/PID/maps through the reader the library shares (ipc/maps.h): the PROCMAP_QUERY
 * ioctl (Linux 6.11+) when the kernel has it, else the text, read and parsed. Measured here
 * (64 KiB window, another process): PROCMAP_QUERY ~0.9 us a job, ~2.2 with a uffd, ~1.4 /
 * 2.8 with 1000 VMAs; text ~0.28 us per maps line below the window (14 us at 30 VMAs, 290
 * us at 1000; twice that with a uffd).
 *  - need [need_va, need_va + need_len): every byte in VMAs with the access's permission
 *    (READ: 'r'; WRITE/ATOMIC: 'r' and 'w'), as hmm_range_fault demands; else the job fails
 *    with -EFAULT (a hole, or [vvar]-like special mapping) or -EACCES (a VMA without the
 *    permission, PROT_NONE included), whichever comes first in address order.
 *  - the rest of the window [va, va + len): best effort. Maps for the readable parts, clipped
 *    to the window and to pages, perm IOPT_READ|IOPT_WRITE where the VMA is writable else
 *    IOPT_READ, adjacent runs of one perm merged, ascending.
 *  - IOPT_REQ_PREFETCH (empty need): what can be mapped; -EFAULT if the window holds no
 *    readable VMA at all.
 *  - IOPT_REQ_NO_FAULT: only the pages present now (/proc/PID/pagemap bit 63; swapped
 *    pages, bit 62, would need a major fault and are left out). A window that is mapped but
 *    has nothing present gets a successful answer with no maps (as mlx5's NO_FAULT advice
 *    succeeds having mapped nothing); -EFAULT only when nothing is mapped at all.
 *  - more than EMU_FAULT_MAX_MAPS runs: the runs around the need are kept (from the need
 *    forwards, then backwards); if the need alone has more, its runs become one IOPT_READ
 *    run (all are readable); prefetches keep the lowest runs. The NIC faults for the rest.
 *
 * NOTIFIER. With job->uffd >= 0 the thread registers, in write-protect mode and without
 * ever write-protecting a page (so no ordinary access is intercepted), every whole VMA it
 * answers with, before answering, so the client's later munmap/mremap/MADV_DONTNEED of any
 * part of it reaches the daemon's notifier as a userfaultfd event. UFFDIO_REGISTER acts on
 * the mm of the process that created the uffd, so the daemon can do it from here. Kernels
 * refuse some VMAs (EINVAL: file-backed private mappings, VM_DROPPABLE; EBUSY: registered on
 * another uffd): they are counted (uffd_refused) and answered anyway. To close the window
 * between reading the maps and registering, the VMAs are read again after registering and
 * the job is resolved again if they changed (at most 3 times; uffd_races counts those).
 *
 * THREADING. emu_fault_submit/take/eventfd/stats are for the loop thread (any one thread);
 * the resolver thread starts with every signal blocked, so signals stay with the loop.
 * Costs: one mutex and, when the thread sleeps, a condition-variable wake per submit; for
 * a polling loop nothing else; for a sleeping one an eventfd write when the out queue goes
 * from empty to non-empty.
 */
#ifndef ODPEMU_EMU_FAULT_H
#define ODPEMU_EMU_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "inject/inject.h"
#include "iopt.h"

#define EMU_FAULT_MAX_MAPS 64

/* One page request, owned by the loop except between submit and take. */
struct emu_fault_job {
	/* filled by the loop: */
	struct iopt_req *req;		/* read only: va, len, need_va, need_len, access, flags
					 * (never dom or seq) */
	pid_t pid;			/* the client */
	int maps_fd;			/* open("/proc/PID/maps", O_RDONLY), kept open by the
					 * caller (the PROCMAP_QUERY ioctl or pread from 0 each
					 * job), or -1: the thread's cached one for (client, pid).
					 * odpemud passes -1 (ports.c); some tests their own */
	int pagemap_fd;			/* open("/proc/PID/pagemap"), read for NO_FAULT jobs only;
					 * -1: the thread's cached one */
	int uffd;			/* the client's userfaultfd, or -1 (see NOTIFIER) */
	uint64_t enqueued_ns;		/* CLOCK_MONOTONIC; stamped by emu_fault_submit */
	/* the answer, filled by the thread: */
	int err;			/* 0; -EFAULT need not mapped; -EACCES need lacks the
					 * permission; -EIO injected failure or unreadable maps;
					 * -EINVAL malformed request; -ECANCELED stopped first */
	unsigned nmaps;
	struct iopt_map maps[EMU_FAULT_MAX_MAPS];
	uint64_t resolved_ns;		/* when resolution ended */
	uint64_t due_ns;		/* resolved_ns + the drawn delay: deliver then */
	/* free for the loop's use: */
	void *owner;
	uint32_t client;		/* the NIC's client id (session) */
	bool advise;			/* counted by a synchronous advise_mr */
	struct emu_fault_job *next;	/* also used by the queues between submit and take, and
					 * by the loop's answer queue (answers.h) after take */
};

struct emu_fault;

/* Start the thread; inj may be NULL (no injection) and must outlive the handler.
 * 0, -ENOMEM, or -errno of eventfd/pthread_create. */
int emu_fault_start(struct emu_inject *inj, struct emu_fault **out);
/* Finish the job being resolved, answer the jobs still queued with -ECANCELED, join.
 * Idempotent. Every job submitted, before or after, is then returned by take(). */
void emu_fault_stop(struct emu_fault *f);
/* Stop, then free. Jobs not yet taken are not freed (they are the loop's). */
void emu_fault_destroy(struct emu_fault *f);

/* Resolve the job now, on the calling thread, if that is cheap: the VMAs come from
 * PROCMAP_QUERY (about 1-3 us a job), or from the text of /proc/PID/maps (0.3 us a line
 * below the window) while the last inline walk of it parsed at most
 * emu_fault_text_inline_lines() lines; and inline resolution is on. True: the answer is filled in (the job is the caller's, never
 * queued; stats count it). False: submit it. Call from one thread only (the loop's); it has
 * its own resolver and files, separate from the thread's. */
bool emu_fault_resolve_now(struct emu_fault *f, struct emu_fault_job *job);
/* Inline jobs share the VMAs they settle, as a batch of the thread does, until this is
 * called: at the start of each loop round, and whenever the host changed its mappings
 * (a notifier event), so no answer rests on VMAs older than both. */
void emu_fault_forget_vmas(struct emu_fault *f);
/* Inline resolution on (the default) or off (every job goes to the thread). */
void emu_fault_set_inline(struct emu_fault *f, bool on);
/* Queue a job (stamps enqueued_ns); takes one mutex, never waits for resolution. */
void emu_fault_submit(struct emu_fault *f, struct emu_fault_job *job);
/* Readable (EFD_NONBLOCK, poll it; do not read it) while answered jobs wait and the loop
 * is not polling. */
int emu_fault_eventfd(const struct emu_fault *f);
/* The loop polls (true: answers are seen through emu_fault_answers_waiting, no eventfd
 * write) or is about to sleep (false; then look at answers_waiting once more before
 * sleeping: an answer queued before the store has not written the eventfd). */
void emu_fault_set_polling(struct emu_fault *f, bool polling);
/* Whether answers wait to be taken; a load, no lock, no syscall. */
bool emu_fault_answers_waiting(struct emu_fault *f);
/* The client's session is gone: close the files kept open for it (at the next wake-up). */
void emu_fault_forget(struct emu_fault *f, uint32_t client);
/* Take up to max answered jobs, in answer order, without blocking; returns the count. */
unsigned emu_fault_take(struct emu_fault *f, struct emu_fault_job **out, unsigned max);

struct emu_fault_stats {
	uint64_t jobs;			/* answered, cancellations included */
	uint64_t batches;		/* wake-ups that took jobs */
	uint64_t batch_reused;		/* jobs answered from a VMA settled earlier in the batch */
	uint64_t inline_jobs;		/* resolved by emu_fault_resolve_now (included in jobs) */
	uint64_t failed_unmapped;	/* -EFAULT */
	uint64_t failed_access;		/* -EACCES */
	uint64_t injected_fail;		/* -EIO by the fail rate */
	uint64_t maps_errors;		/* -EIO: the maps could not be read or parsed */
	uint64_t uffd_registered;	/* UFFDIO_REGISTER calls that succeeded (per VMA per job) */
	uint64_t uffd_refused;		/* ... that the kernel refused */
	uint64_t uffd_races;		/* VMAs changed while registering: resolved again */
	uint64_t resolve_ns_total;	/* time resolving (injected delay not included) */
	uint64_t wait_ns_total;		/* time jobs waited in the queue before resolution */
};
void emu_fault_stats_get(struct emu_fault *f, struct emu_fault_stats *out);

/* ---- below: the pieces, for tests, tools and benchmarks ---- */

/* Force reading the maps as text even where PROCMAP_QUERY works. Call before the first
 * submit (the thread reads the setting without the lock). */
void emu_fault_set_text_maps(struct emu_fault *f, bool text);
/* The text walk length above which faults go to the thread (default 128 lines, ~40 us;
 * 0: only the first job inline, as before). Tests. */
void emu_fault_set_text_inline_lines(struct emu_fault *f, unsigned lines);
unsigned emu_fault_text_inline_lines(const struct emu_fault *f);

/* Resolve one job on the calling thread, as the handler thread would (inject draws and
 * all): inj may be NULL. stats may be NULL. */
void emu_fault_resolve(struct emu_inject *inj, bool text_maps, struct emu_fault_job *job,
	struct emu_fault_stats *stats);

/* Whether a VMA of this name (as /proc/PID/maps shows it: ipc/maps.h) has no pages behind
 * it to copy: [vvar], [vvar_vclock], [vsyscall]. A need that meets one fails with -EFAULT,
 * and the answers leave them out. */
bool emu_fault_special_vma(const char *name, size_t len);

#endif
