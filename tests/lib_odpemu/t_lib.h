/* SPDX-License-Identifier: MIT */
/* Helpers shared by libodpemu's unit tests (prefix t_). */
#ifndef ODPEMU_TESTS_T_LIB_H
#define ODPEMU_TESTS_T_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib_int.h"
#include "t.h"

/* The VMA holding addr (from /proc/self/maps), false if none. */
static inline bool t_vma_at(uintptr_t addr, struct lib_vma *out)
{
	struct lib_vma *v;
	size_t n;
	bool found = false;

	if (lib_maps_read(&v, &n))
		return false;
	for (size_t i = 0; i < n && !found; i++) {
		if (v[i].start <= addr && addr < v[i].end) {
			*out = v[i];
			found = true;
		}
	}
	free(v);
	return found;
}

static inline size_t t_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* An anonymous private mapping of n pages, or NULL. */
static inline void *t_anon(size_t pages)
{
	void *p = mmap(NULL, pages * t_page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* A context with no daemon: a status page in ordinary memory (sleeping as asked) and a
 * real eventfd as the doorbell, so tests can count rings. */
static inline struct lib_context *t_ctx_new(bool sleeping)
{
	struct lib_context *c = lib_ctx_alloc();
	size_t sz = (sizeof(struct ipc_status_page) + 63) & ~(size_t)63;

	if (!c)
		abort();
	c->status = aligned_alloc(64, sz);
	if (!c->status)
		abort();
	memset(c->status, 0, sz);
	c->status->magic = IPC_STATUS_MAGIC;
	c->status->version = IPC_VERSION;
	atomic_store(&c->status->sleeping, sleeping ? 1 : 0);
	c->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->doorbell_fd < 0)
		abort();
	return c;
}

static inline void t_ctx_free(struct lib_context *c)
{
	close(c->doorbell_fd);
	free(c->status);
	lib_ctx_free(c);
}

/* Doorbell rings since the last call (the eventfd's counter). */
static inline uint64_t t_doorbells(struct lib_context *c)
{
	uint64_t v = 0;

	return read(c->doorbell_fd, &v, sizeof(v)) == sizeof(v) ? v : 0;
}

/* A shared mapping of len bytes of a fresh memfd (what the daemon would send). */
static inline void *t_memfd_map(size_t len)
{
	int fd = memfd_create("t-ring", MFD_CLOEXEC);
	void *p;

	if (fd < 0 || ftruncate(fd, (off_t)len))
		abort();
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		abort();
	return p;
}

#endif
