/* SPDX-License-Identifier: MIT */
/* The library's side of the shared rings (ipc_ring.h): attach to a header the daemon
 * initialised, after checking it describes what this side expects, and keep private
 * copies of its geometry so a stray write to shared memory cannot move our slots. */
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib_int.h"

int lib_ring_attach(struct lib_ring *r, void *base, size_t map_len, uint32_t at,
		    uint32_t size, uint32_t min_slot)
{
	struct ipc_ring *h = (struct ipc_ring *)((char *)base + at);
	uint32_t hsize = h->size, hslot = h->slot, hoff = h->offset;

	if ((uint64_t)at + IPC_RING_HDR_BYTES > map_len)
		return -EPROTO;
	if (!hsize || (hsize & (hsize - 1)) || hsize > IPC_RING_MAX || (size && hsize != size))
		return -EPROTO;
	if (hslot < min_slot || hslot % 8 || hoff != at + IPC_RING_HDR_BYTES)
		return -EPROTO;
	if ((uint64_t)hoff + (uint64_t)hsize * hslot > map_len)
		return -EPROTO;
	r->hdr = h;
	r->base = base;
	r->offset = hoff;
	r->size = hsize;
	r->slot = hslot;
	r->head = atomic_load_explicit(&h->prod, memory_order_relaxed);
	return 0;
}

void lib_ring_publish(struct lib_ring *r)
{
	atomic_store_explicit(&r->hdr->prod, r->head, memory_order_release);
}

/* A memfd shorter than the length the daemon announced would SIGBUS us on first touch:
 * check its size before mapping. */
void *lib_map_fd(int fd, size_t len, int *err)
{
	struct stat st;
	void *p = MAP_FAILED;

	if (!len || fstat(fd, &st) || (uint64_t)st.st_size < len)
		*err = -EPROTO;
	else if ((p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
		*err = -errno;
	else
		*err = 0;
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}
