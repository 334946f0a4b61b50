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
	if (status != IOPT_WAIT_PENDING)
		f->state = status ? NIC_SLOT_FAILED : NIC_SLOT_IDLE;
	return f->state;
}

/* Forget the fault: its request may outlive the QP or its traffic, and a failure belongs to
 * the traffic that raised it. */
void nic_fault_cancel(struct nic_fault *f)
{
	if (f->state == NIC_SLOT_WAITING && f->dom)
		(void)iopt_waiter_cancel(f->dom, &f->waiter);
	f->lease_mr = NULL;	/* a lease's wait is only this pointer (lease.c) */
	f->state = NIC_SLOT_IDLE;
}
