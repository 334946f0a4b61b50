/* SPDX-License-Identifier: MIT */
/*
 * first_touch — the kernel's part of a cold ODP write, as an emu-bench anchor. odpemud
 * writes an ODP region with process_vm_writev, one call per packet; into a page the
 * process has never touched, that call also allocates, zeroes and maps the page. This
 * measures the same call with nothing else around it: a forked child holds a fresh
 * anonymous mapping, the parent writes it chunk by chunk once (cold: every page new) and
 * again (warm). cold / warm is the ceiling of "cold ODP / warm ODP" for a responder whose
 * one thread both populates and copies — what no change inside the daemon's copy loop
 * can beat.
 */
#ifndef ODPEMU_BENCH_FIRST_TOUCH_H
#define ODPEMU_BENCH_FIRST_TOUCH_H

#include <stddef.h>
#include <stdint.h>

struct first_touch {
	double cold_gbps, warm_gbps;	/* bytes/ns over the whole region */
	double cold_ns_page, warm_ns_page;	/* per 4 KiB page */
};

/* Write `bytes` (a multiple of chunk, chunk a multiple of 4 KiB) into a child's fresh
 * mapping, `chunk` bytes per process_vm_writev, twice. 0 or -errno (mmap, fork, a short
 * or failed write); the child is reaped either way. */
int first_touch_measure(size_t bytes, size_t chunk, struct first_touch *out);

#endif
