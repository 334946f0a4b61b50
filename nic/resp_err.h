/* SPDX-License-Identifier: MIT */
/*
 * The responder's errors: every request the responder refuses for good, one row each, and
 * what follows from it, applied in one place (resp.c fail()). After any of them an RC
 * responder's QP goes to ERR, as rxe's do (its classes A, C and J all pass through its ERROR
 * state); a UC responder's does only where the uc column says ERR.
 *
 *   name            the error
 *   nak             the NAK code sent for the request's PSN (IBA 9.7.5.2.3, table 45)
 *   recv            the status of the receive WQE being filled, if one is (NONE: none
 *                   completes here; a WQE already taken flushes with the QP)
 *   verr            nic_wc.vendor_err of that receive completion
 *   event           the affiliated asynchronous event on the responder's QP (IBA 11.6.3.1:
 *                   an invalid request is "Invalid Request Local WQ Error", an R_Key
 *                   violation "Local Access Violation WQ Error", a local failure to place
 *                   data "Local WQ Catastrophic Error")
 *   cls             the IBA responder error class (IBA 9.9.3.1), as rxe_resp.c names it
 *   uc              on a UC QP, which sends no NAK: ACCESS or INV_REQ, the message is
 *                   dropped and counted (drop reason UC_ACCESS, UC_INV_REQ) and the QP
 *                   stays in RTS (rxe's class D/E for UC); ERR, a local failure to place
 *                   a receive: as RC, without the NAK (the receive completes in error and
 *                   the QP goes to ERR)
 *   rule            where IBA (or rxe, where it names the case) says so
 */
#ifndef ODPEMU_NIC_RESP_ERR_H
#define ODPEMU_NIC_RESP_ERR_H

#define NIC_RESP_ERRORS(X) \
	X(OPCODE_SEQ,	INVALID_REQ,	NONE,		NONE,		QP_REQ_ERR,	'C',	INV_REQ, \
	  "9.8.3.2: MIDDLE/LAST with no message in progress, FIRST/ONLY inside one") \
	X(UNSUPPORTED,	INVALID_REQ,	NONE,		NONE,		QP_REQ_ERR,	'C',	INV_REQ, \
	  "an opcode the RC responder or its device does not execute: FLUSH, ATOMIC WRITE on " \
	  "a device without them (rxe ERR_UNSUPPORTED_OPCODE)") \
	X(LENGTH,	INVALID_REQ,	NONE,		NONE,		QP_REQ_ERR,	'C',	INV_REQ, \
	  "WRITE payload beyond the RETH DMA length, or its LAST short of it (rxe ERR_LENGTH)") \
	X(RECV_TOO_SMALL, INVALID_REQ,	LOC_LEN_ERR,	RECV_TOO_SMALL,	QP_REQ_ERR,	'C',	ERR, \
	  "a SEND longer than the receive WQE (rxe ERR_LENGTH)") \
	X(MISALIGNED,	INVALID_REQ,	NONE,		NONE,		QP_REQ_ERR,	'C',	INV_REQ, \
	  "an atomic's VA not 8-byte aligned (rxe ERR_MISALIGNED_ATOMIC)") \
	X(INVALIDATE,	INVALID_REQ,	NONE,		NONE,		QP_REQ_ERR,	'J',	INV_REQ, \
	  "10.6.6.1: SEND_WITH_INVALIDATE names no MR of the QP's PD") \
	X(RKEY,		REMOTE_ACCESS,	NONE,		NONE,		QP_ACCESS_ERR,	'C',	ACCESS, \
	  "9.7.5.1.3, 10.6.3.2: R_Key, PD, range or MR access forbid the request") \
	X(QP_ACCESS,	REMOTE_ACCESS,	NONE,		NONE,		QP_ACCESS_ERR,	'C',	ACCESS, \
	  "10.2.4: the QP's remote access flags forbid the operation class") \
	X(HOST_FAULT,	REMOTE_ACCESS,	NONE,		NONE,		QP_ACCESS_ERR,	'C',	ACCESS, \
	  "ODP: the host could not supply a page of the R_Key target (the fault failed)") \
	X(PERSIST,	REMOTE_OP,	NONE,		NONE,		QP_FATAL,	'A',	INV_REQ, \
	  "a persistent FLUSH whose range the host could not make durable (fdatasync failed)") \
	X(RECV_LOCAL,	REMOTE_OP,	LOC_PROT_ERR,	LOCAL_FAULT,	QP_FATAL,	'A',	ERR, \
	  "the receive WQE's buffers cannot be written: L_Key, or a failed fault (rxe ERR_MALFORMED_WQE)")

enum nic_resp_err {
#define NIC_RESP_ERR_ENUM_(name, nak, recv, verr, event, cls, uc, rule) NIC_RERR_##name,
	NIC_RESP_ERRORS(NIC_RESP_ERR_ENUM_)
#undef NIC_RESP_ERR_ENUM_
};

#endif
