/* SPDX-License-Identifier: MIT */
/*
 * Fault slots (struct nic_fault, nic_int.h): how an engine learns what became of the page
 * fault it is waiting on. The DMA helpers raise faults into a slot and consume a failure
 * (dma.c); here the engine polls the answer and cancels on a state change. The waiter's
 * status is written by the fault handler's thread (pagetable/ fq), so it is read
 * atomically; the slot itself belongs to the QP's single-threaded engine.
 */
#include "nic_int.h"

/* Record the answer, if it came: WAITING becomes IDLE (resolved: retry) or FAILED (the
 * next DMA through the slot fails). Returns the state after. */
enum nic_fault_state nic_fault_poll(struct nic_fault *f)
{
	int status;

	if (f->state != NIC_SLOT_WAITING)
		return f->state;
	status = atomic_load(&f->waiter.status);
	if (status == IOPT_WAIT_PENDING)
		return f->state;
	if (f->persist == NIC_PERSIST_WAITING) {
		/* the FLUSH reads its answer (resp.c); no DMA inherits it */
		f->persist = status ? NIC_PERSIST_FAILED : NIC_PERSIST_DONE;
		f->state = NIC_SLOT_IDLE;
	} else {
		f->state = status ? NIC_SLOT_FAILED : NIC_SLOT_IDLE;
	}
	return f->state;
}

void nic_fault_wake(void *cookie, int status)
{
	(void)status;	/* kept in the waiter; the engine reads it (nic_fault_poll) */
	nic_qp_schedule(cookie);
}

void nic_fault_park(struct nic_fault *f, struct nic_qp *qp)
{
	f->waiter.fn = nic_fault_wake;
	f->waiter.cookie = qp;
	atomic_store(&f->waiter.status, IOPT_WAIT_PENDING);
	f->dom = NULL;
	f->state = NIC_SLOT_WAITING;
}

/* Forget the fault: its request may outlive the QP or its traffic, and a failure belongs to
 * the traffic that raised it. */
void nic_fault_cancel(struct nic_fault *f, const struct nic_ports *ports)
{
	/* Read the answer first: an answered fault is off its request, and its domain may
	 * already be freed (a deregistered MR's tables go once its faults are answered). */
	if (nic_fault_poll(f) == NIC_SLOT_WAITING && f->dom)
		(void)iopt_waiter_cancel(f->dom, &f->waiter);
	if (f->state == NIC_SLOT_WAITING && f->persist == NIC_PERSIST_WAITING)
		ports->persist_cancel(ports->ctx, &f->waiter);
	f->lease_mr = NULL;	/* a lease's wait is only this pointer (lease.c) */
	f->persist = NIC_PERSIST_NONE;
	f->state = NIC_SLOT_IDLE;
}
