/* SPDX-License-Identifier: MIT */
/*
 * The PROCMAP_QUERY ioctl of /proc/PID/maps (include/uapi/linux/fs.h, Linux 6.11): one
 * VMA per call, by address, without reading the whole text file. Our own copy, used by
 * the maps reader (maps.c, for the daemon's fault handler and the library's registration),
 * since the build machines' headers (Debian 12: 6.1) lack it. The ABI is fixed; `size`
 * versions it. On an older kernel the ioctl fails with ENOTTY and the reader falls back
 * to the text.
 */
#ifndef ODPEMU_IPC_PROCMAP_H
#define ODPEMU_IPC_PROCMAP_H

#include <stdint.h>
#include <sys/ioctl.h>

struct odpemu_procmap_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
_Static_assert(sizeof(struct odpemu_procmap_query) == 104, "procmap_query ABI");
#define ODPEMU_PROCMAP_QUERY	_IOWR('f', 17, struct odpemu_procmap_query)
#define PMQ_READABLE		0x01u
#define PMQ_WRITABLE		0x02u
#define PMQ_EXECUTABLE		0x04u
#define PMQ_SHARED		0x08u
#define PMQ_COVERING_OR_NEXT	0x10u

#endif
