/* SPDX-License-Identifier: MIT */
/* lib/tracer.c: under Yama ptrace_scope 1 every daemon a process opens must be able to read
 * it. The rule (lib_tracer_next) over the sequences a process meets: one device, the same
 * daemon again, a second daemon, more after it. This machine's kernel has no Yama to
 * switch on (PR_SET_PTRACER answers EINVAL), so lib_tracer_allow's prctl calls are not
 * observable here: the rule is what is tested. */
#include "lib_int.h"
#include "t.h"

/* Walk a sequence of opens from no declaration; the declaration after it. */
static pid_t walk(const pid_t *daemons, unsigned n, unsigned *declares)
{
	pid_t declared = 0;

	*declares = 0;
	for (unsigned i = 0; i < n; i++) {
		switch (lib_tracer_next(declared, daemons[i])) {
		case LIB_TRACER_DECLARE_PID: declared = daemons[i]; ++*declares; break;
		case LIB_TRACER_DECLARE_ANY: declared = LIB_TRACER_ANY; ++*declares; break;
		case LIB_TRACER_KEEP: break;
		}
	}
	return declared;
}

static void test_rule(void)
{
	unsigned declares;

	T_EQ(walk((const pid_t[]){ 100 }, 1, &declares), 100, "one device: its daemon named");
	T_EQ(declares, 1, "one declaration");
	T_EQ(walk((const pid_t[]){ 100, 100, 100 }, 3, &declares), 100,
	     "the same daemon again: still only it");
	T_EQ(declares, 1, "declared once");
	T_EQ(walk((const pid_t[]){ 100, 200 }, 2, &declares), LIB_TRACER_ANY,
	     "a second daemon: one named tracer cannot serve both");
	T_EQ(walk((const pid_t[]){ 100, 200, 300, 100 }, 4, &declares), LIB_TRACER_ANY,
	     "more daemons: stays ANY");
	T_EQ(declares, 2, "ANY declared once");
	T_EQ(lib_tracer_next(LIB_TRACER_ANY, 100), LIB_TRACER_KEEP, "ANY covers every daemon");
	T_EQ(lib_tracer_next(0, 100), LIB_TRACER_DECLARE_PID, "nothing declared: name it");
}

int main(void)
{
	test_rule();
	return t_done("lib-tracer");
}
