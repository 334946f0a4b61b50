/* SPDX-License-Identifier: MIT */
/*
 * fault — the host fault handler's insides (what it does: fault.h), shared by its files:
 *   fault.c          the thread, its two queues and the public calls
 *   fault_resolve.c  one job: the request, the client's VMAs (read by ipc/maps.c), the
 *                    need, the userfaultfd registration, VMAs shared within a batch
 *   fault_runs.c     the answer's maps: runs of the window's VMAs (pagemap for NO_FAULT),
 *                    fitted into EMU_FAULT_MAX_MAPS
 *   fault_files.c    the client's /proc files, kept open across jobs
 * A resolver is the scratch and the files of one thread: the fault thread has one, the
 * loop another (inline resolution). Nothing here locks.
 */
#ifndef ODPEMU_EMU_FAULT_INT_H
#define ODPEMU_EMU_FAULT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "fault.h"
#include "maps.h"

#define PAGE		IOPT_PAGE_SIZE
#define PM_CHUNK	512	/* pagemap entries per pread: 4 KiB */
#define FILES_CACHED	8	/* clients whose /proc files a resolver keeps open */

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A VMA as resolution needs it: where, what access, and whether it has pages at all. */
struct fault_vma {
	uint64_t start, end;
	unsigned prot;			/* IPC_VMA_* */
	bool special;			/* emu_fault_special_vma(): no pages to copy */
};

/* Growable arrays, reused job after job. */
struct vma_vec {
	struct fault_vma *a;
	size_t n, cap;
};
struct map_vec {
	struct iopt_map *a;
	size_t n, cap;
};
/* Room for need elements of elem bytes in *a (capacity *cap): 0 or -ENOMEM. */
int fault_grow(void **a, size_t *cap, size_t need, size_t elem);

/* A client's /proc files, kept open across jobs: opening /proc/PID/maps costs more than
 * resolving a job with PROCMAP_QUERY. Keyed by the NIC's client id, which is never reused,
 * and the pid; closed when the loop says the client is gone (emu_fault_forget) or when
 * the slot is wanted for another client (least recently used). */
struct client_files {
	uint32_t client;
	pid_t pid;			/* 0: free slot */
	int maps_fd, pagemap_fd;	/* -1 until first needed */
	uint64_t used;			/* resolver tick of the last use */
};

/* The resolver's scratch, reused job after job by its thread. */
struct resolver {
	struct ipc_maps maps;		/* maps.text: forced, or the kernel has no PROCMAP_QUERY */
	struct vma_vec vmas, again;
	struct map_vec runs;
	/* VMAs settled (read, registered, read again unchanged) during this batch, for
	 * batch_client/batch_pid: a later job of the batch inside one of them needs no
	 * syscall (fault_resolve.c settle_vmas). Emptied at each batch. */
	struct vma_vec settled;
	uint32_t batch_client;
	pid_t batch_pid;		/* 0: nothing settled yet */
	bool batch_uffd;		/* settled with the VMAs registered on a uffd */
	struct client_files files[FILES_CACHED];
	uint64_t tick;
	uint64_t pm[PM_CHUNK];
};

/* fault_resolve.c */
struct resolver *fault_resolver_new(bool text);
void fault_resolver_free(struct resolver *rs);
/* A new batch: VMAs settled so far serve no later job. */
void fault_batch_begin(struct resolver *rs);
/* Resolve one job (injection drawn from inj, which may be NULL), fill its answer, count it
 * in st. */
void fault_resolve_job(struct resolver *rs, struct emu_inject *inj, struct emu_fault_job *job,
	struct emu_fault_stats *st);
/* Whether the answer may map v: readable, and with pages behind it. */
bool fault_vma_usable(const struct fault_vma *v);

/* fault_runs.c */
/* The answer runs of rs->vmas in r's window, clipped to it and to pages, into rs->runs;
 * only the present pages when pm_fd (pagemap) >= 0. *mapped: any usable VMA at all.
 * 0 or -errno. */
int fault_runs_build(struct resolver *rs, const struct iopt_req *r, int pm_fd, bool *mapped);
/* Fit the runs into the job's EMU_FAULT_MAX_MAPS (policy in fault.h). */
void fault_runs_fit(struct map_vec *v, const struct iopt_req *r, struct emu_fault_job *job);

/* fault_files.c */
/* The job's /proc/PID/maps (or pagemap) fd: the caller's, else the cached one (opened on
 * first use). -1 with errno set when it cannot be opened; never closed by the caller. */
int fault_files_fd(struct resolver *rs, const struct emu_fault_job *job, bool pagemap);
/* Close the files of the clients gone[0..n), or of every client when all. */
void fault_files_forget(struct resolver *rs, const uint32_t *gone, unsigned n, bool all);

#endif
