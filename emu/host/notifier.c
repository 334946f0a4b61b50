/* SPDX-License-Identifier: MIT */
/*
 * notifier — the MMU notifier of odpemud: userfaultfd non-cooperative events.
 *
 * The library creates one userfaultfd per client process with the UNMAP, REMOVE and REMAP
 * events (ipc.h IPC_UFFD_FEATURES) and hands every device it opens a duplicate, plus a
 * socket on which its relay thread forwards each event it reads to every device (one VMA
 * can be registered with one userfaultfd only, so every device of the process shares it).
 * Ranges are registered in write-protect mode, and no page is ever write-protected, so the
 * client's ordinary page faults never reach us; only its munmap, madvise(MADV_DONTNEED)
 * and mremap of registered memory do. The kernel makes the unmapping thread wait until the
 * relay has read the event (userfaultfd_event_wait_completion); we invalidate when the
 * relayed copy arrives. Within that window the pages are already gone (UNMAP) and ODP
 * copies go through the live page tables, so none reaches old pages.
 *
 * What gets registered: the fault handler registers every VMA it resolves a fault against
 * (fault.c), so every page an ODP MR's IOPT holds lies in a watched VMA; pinned MRs are
 * registered at creation (their memfd mapping), so their unmap raises MR_DECOHERENCE.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "ipc.h"
#include "log.h"
#include "nic.h"
#include "notifier.h"
#include "session.h"

void emu_notifier_watch(struct emu_session *s, uint64_t va, uint64_t len)
{
	struct uffdio_register reg = {
		.range = { .start = va & ~4095ull,
			   .len = ((va + len + 4095) & ~4095ull) - (va & ~4095ull) },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	if (s->uffd < 0)
		return;
	if (ioctl(s->uffd, UFFDIO_REGISTER, &reg))
		emu_log(EMU_LOG_WARN, "session %u: cannot watch [%#llx, +%#llx): %s; unmaps "
			"there will not be seen", s->id, (unsigned long long)reg.range.start,
			(unsigned long long)reg.range.len, strerror(errno));
}

static void invalidate(struct emu_session *s, uint64_t start, uint64_t end)
{
	if (end <= start)
		return;
	s->d->ctr.invalidations_host++;
	emu_fault_forget_vmas(s->d->fault);
	nic_host_invalidate(s->d->nic, s->id, start, end - start);
}

void emu_notifier_held_change(struct emu_session *s, uint64_t start, uint64_t end)
{
	struct uffd_msg m = { .event = UFFD_EVENT_UNMAP };

	if (end <= start)
		return;
	s->d->ctr.seccomp_invalidations++;
	invalidate(s, start, end);
	if (s->uffd_relay < 0)
		return;
	m.arg.remove.start = start;
	m.arg.remove.end = end;
	/* Non-blocking: the loop must not wait for a client. A full socket (the library's
	 * relay thread stalled for thousands of changes) loses the range for the other
	 * devices: counted and logged, never silent. */
	if (send(s->uffd_relay, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(m)) {
		s->d->ctr.seccomp_relay_drops++;
		emu_log(EMU_LOG_WARN, "session %u: cannot relay the change of [%#llx, %#llx) to "
			"the process's other devices: %s", s->id, (unsigned long long)start,
			(unsigned long long)end, strerror(errno));
	}
}

/* A write-protect fault cannot happen (nothing is protected), but if one did the client
 * thread would wait for us forever: lift the protection and wake it. */
static void unblock(struct emu_session *s, uint64_t addr)
{
	struct uffdio_writeprotect wp = { .range = { addr & ~4095ull, 4096 }, .mode = 0 };

	ioctl(s->uffd, UFFDIO_WRITEPROTECT, &wp);
}

void emu_uffd_read(struct emu_session *s)
{
	struct uffd_msg msg[IPC_UFFD_RELAY_MSGS];

	for (int round = 0; round < 64; round++) {
		ssize_t got = recv(s->uffd_relay, msg, sizeof(msg), MSG_DONTWAIT);

		if (got <= 0)
			return;		/* EAGAIN: all read */
		for (size_t i = 0; i < (size_t)got / sizeof(msg[0]); i++) {
			struct uffd_msg *m = &msg[i];

			s->d->ctr.uffd_events++;
			switch (m->event) {
			case UFFD_EVENT_UNMAP:
				invalidate(s, m->arg.remove.start, m->arg.remove.end);
				break;
			case UFFD_EVENT_REMOVE:
				invalidate(s, m->arg.remove.start, m->arg.remove.end);
				break;
			case UFFD_EVENT_REMAP:
				invalidate(s, m->arg.remap.from, m->arg.remap.from + m->arg.remap.len);
				invalidate(s, m->arg.remap.to, m->arg.remap.to + m->arg.remap.len);
				break;
			case UFFD_EVENT_PAGEFAULT:
				unblock(s, m->arg.pagefault.address);
				break;
			default:
				break;
			}
		}
	}
}
