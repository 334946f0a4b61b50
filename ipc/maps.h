/* SPDX-License-Identifier: MIT */
/*
 * maps — the one reader of /proc/PID/maps, for the library (its own VMAs: lib/maps.c) and
 * the daemon (a client's, job after job: emu/host/fault_resolve.c; a held brk's or shmdt's
 * caller: emu/host/watch.c; a persistent FLUSH's range: emu/host/persist.c; its own, counted
 * against vm.max_map_count: emu/limits.c). A walk hands over the VMAs that meet [lo, hi),
 * in address order, one at a time, from a descriptor the caller opened and keeps (opening
 * /proc/PID/maps costs more than a whole PROCMAP_QUERY walk).
 *
 * TWO SOURCES, ONE ANSWER. The PROCMAP_QUERY ioctl (Linux 6.11, procmap.h) asks for the
 * VMA covering an address or the next one: as many ioctls as VMAs meet the range, whatever
 * the size of the address space. Before 6.11 the file has no ioctl (ENOTTY), and the walk
 * reads its text instead (lines below lo are parsed and skipped): users run kernels older
 * than ours, so the text is not a curiosity. The walk switches by itself, once, and keeps
 * `text` set so later walks go straight to the text; a caller may also set it beforehand
 * (tests, and readers of every VMA, for which the text is the cheaper of the two).
 *
 * The two agree on every field of every VMA, but for three things. The text escapes a
 * newline in a path ("\012", fs/proc/task_mmu.c show_map_vma via seq_file_path), the ioctl
 * does not. A name longer than PATH_MAX comes back empty from the ioctl (d_path:
 * ENAMETOOLONG), and cut at IPC_MAPS_TEXT_BUF bytes from the text. And the text ends with
 * the vsyscall gate on x86-64 ([vsyscall], get_gate_vma: no VMA of the mm), which the
 * ioctl's lookup never finds; nothing can be mapped there anyway.
 *
 * TEST SWITCH. ODPEMU_MASK naming procmap_query (emu/check.h: the environment profiles)
 * makes every walk of the process read the text, as on a kernel before 6.11: the daemon
 * and the library both honour it.
 *
 * No allocation, no locking: struct ipc_maps is the caller's (about 12 KiB, so not on a
 * small stack), one walk at a time.
 */
#ifndef ODPEMU_IPC_MAPS_H
#define ODPEMU_IPC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A VMA's permissions: the bits of PROCMAP_QUERY's vma_flags (procmap.h), which the text's
 * "rwxp"/"rwxs" column says as well. */
#define IPC_VMA_R	0x01u
#define IPC_VMA_W	0x02u
#define IPC_VMA_X	0x04u
#define IPC_VMA_SHARED	0x08u

struct ipc_vma {
	uint64_t start, end;		/* [start, end), start < end */
	unsigned prot;			/* IPC_VMA_* */
	uint64_t offset;		/* into the file (pgoff in bytes); 0 for anonymous memory */
	uint32_t dev_major, dev_minor;	/* the file's device, 0:0 without a file */
	uint64_t inode;			/* 0 without a file */
	/* As the kernel shows it: a path (maybe ending in " (deleted)"), [heap], [stack],
	 * [vdso], [anon:NAME], ... Not NUL-terminated; valid until the next ipc_maps_next. */
	const char *name;
	size_t name_len;		/* 0: anonymous, or a name the ioctl could not return */
};

#define IPC_MAPS_TEXT_BUF	8192	/* text read per pread; longer lines are cut */
#define IPC_MAPS_NAME_MAX	4160	/* a name from PROCMAP_QUERY: PATH_MAX and some */

struct ipc_maps {
	/* The caller's to set before a walk; the walk sets it when the kernel has no
	 * PROCMAP_QUERY, and it stays set. */
	bool text;
	/* the walk: */
	int fd;
	uint64_t at;			/* the next VMA returned ends above this */
	uint64_t hi;
	bool done;			/* nothing more meets [lo, hi) */
	off_t off;			/* text: file offset of buf[len] */
	size_t len, pos;		/* text: bytes in buf, handed over up to pos */
	bool eof, skipping;		/* text: skipping the rest of a cut line */
	unsigned lines;			/* text: lines parsed by this walk (its cost) */
	char buf[IPC_MAPS_TEXT_BUF];
	char name[IPC_MAPS_NAME_MAX];
};

/* Start a walk over the VMAs meeting [lo, hi) of the maps file fd (/proc/PID/maps, opened
 * O_RDONLY; the text is read with pread from offset 0, so the file offset does not matter
 * and the descriptor can serve walk after walk). Keeps m->text. */
void ipc_maps_begin(struct ipc_maps *m, int fd, uint64_t lo, uint64_t hi);

/* The next VMA of the walk: 1 and *v, 0 at the end (also when the process is gone:
 * ESRCH), or -errno: -EPROTO a line that does not parse, else the ioctl's or pread's. */
int ipc_maps_next(struct ipc_maps *m, struct ipc_vma *v);

/* Parse one line of the text, without its newline, possibly cut short inside its name:
 * "start-end perms offset major:minor inode [name]" (fs/proc/task_mmu.c show_map_vma).
 * 0 or -EINVAL. v->name points into line. */
int ipc_maps_parse_line(const char *line, size_t len, struct ipc_vma *v);

#endif
