/* SPDX-License-Identifier: MIT */
/*
 * Which daemons may read this process's memory under Yama ptrace_scope 1.
 *
 * A daemon DMAs a client's memory with process_vm_readv/writev, which Yama's scope 1 allows
 * only to a tracer the process declared (PR_SET_PTRACER), or to one with CAP_SYS_PTRACE
 * (a daemon run by root). A process declares one tracer: with two devices open (two
 * daemons, e.g. odp0 and odp1 on 127.0.0.1/127.0.0.2 without root), naming the second
 * daemon would take the first one's access away and its DMA would fail. So the second
 * distinct daemon makes the declaration PR_SET_PTRACER_ANY.
 *
 * The trade-off (docs/ci.md, "Yama"): with ANY, every process that may otherwise ptrace this
 * one (same uid, no stricter LSM) may attach to it, as under scope 0 for this process
 * alone; with one device open only that daemon is named. Without Yama (PR_SET_PTRACER
 * answers EINVAL) nothing is declared.
 */
#include <pthread.h>
#include <sys/prctl.h>

#include "lib_int.h"

static pthread_mutex_t tracer_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t tracer_declared;	/* 0: none yet; LIB_TRACER_ANY once two daemons were seen */

enum lib_tracer_step lib_tracer_next(pid_t declared, pid_t daemon)
{
	if (declared == LIB_TRACER_ANY || declared == daemon)
		return LIB_TRACER_KEEP;
	return declared ? LIB_TRACER_DECLARE_ANY : LIB_TRACER_DECLARE_PID;
}

void lib_tracer_allow(pid_t daemon)
{
	pthread_mutex_lock(&tracer_lock);
	switch (lib_tracer_next(tracer_declared, daemon)) {
	case LIB_TRACER_DECLARE_PID:
		if (!prctl(PR_SET_PTRACER, (unsigned long)daemon, 0, 0, 0))
			tracer_declared = daemon;
		break;
	case LIB_TRACER_DECLARE_ANY:
		if (!prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0))
			tracer_declared = LIB_TRACER_ANY;
		break;
	case LIB_TRACER_KEEP:
		break;
	}
	pthread_mutex_unlock(&tracer_lock);
}
