/* SPDX-License-Identifier: MIT */
/*
 * check — what this host lets odpemud (and the libodpemu clients beside it) use: one probe
 * per feature, one report. `odpemud --check` prints it; the daemon logs it at start.
 *
 * A row is one feature: its name (the word ODPEMU_MASK takes), the kernel version or
 * setting it needs, what it is used for, what happens without it, and the remedy. Each
 * probe tries the real thing (a ring set up, a socket option set, a child that reads its
 * parent's memory), never a kernel version, since distributions backport (RHEL 9's 5.14
 * has io_uring from 6.x) and containers refuse what the kernel has.
 *
 * The verdict of a row is AVAILABLE, or what its absence is: FALLBACK (odpemu goes another
 * way, and the row says what degrades) or MISSING (the row says what fails). A row is
 * FATAL when nothing can work without it (no UDP socket): `odpemud --check`
 * then exits 1 with a one-line reason.
 *
 * ODPEMU_MASK=name,name,... is a test switch for environment profiles: the named rows
 * report as absent, as on a host without them. The daemon acts on the rows its event loop
 * needs (io_uring, io_uring_poll_multishot, io_uring_sync_cancel: absent or masked, it
 * runs the epoll loop, emu_check_loop_uring) and procmap_query (the text of
 * /proc/PID/maps, page faults inline only while it is short; the library honours it too,
 * ipc/maps.h); the other rows are only reported so far.
 *
 * The probes are in check_probe.c (check_int.h), one function per row.
 *
 * THREADING. Probes fork children: run before the daemon starts its threads.
 */
#ifndef ODPEMU_EMU_CHECK_H
#define ODPEMU_EMU_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum emu_check_verdict { EMU_CHECK_AVAILABLE, EMU_CHECK_FALLBACK, EMU_CHECK_MISSING };

#define EMU_CHECK_DETAIL 200	/* what a probe saw, one line */

/* A probe: true when the feature works here; detail says what was seen either way. */
typedef bool (*emu_check_probe_fn)(char *detail, size_t len);

/* Who uses a feature: odpemud; odpemud and libodpemu in the client processes (probed
 * here: the same kernel and, in a container, the same profile); or only the tests. */
enum emu_check_who { EMU_CHECK_DAEMON, EMU_CHECK_BOTH, EMU_CHECK_TESTS };

struct emu_check_row {
	const char *name;		/* an ODPEMU_MASK word */
	const char *needs;		/* kernel version, setting or capability */
	const char *used_for;
	enum emu_check_verdict absent;	/* FALLBACK or MISSING */
	const char *without;		/* the fallback in use, or what fails */
	const char *remedy;
	bool fatal;			/* absent: odpemud cannot run */
	enum emu_check_who who;		/* EMU_CHECK_TESTS: not probed at start */
	const char *after;		/* a row that must be available first, or NULL */
	emu_check_probe_fn probe;
};

struct emu_check_result {
	const struct emu_check_row *row;
	enum emu_check_verdict verdict;
	bool masked;			/* reported absent because of ODPEMU_MASK */
	char detail[EMU_CHECK_DETAIL];
};

#define EMU_CHECK_MAX 32

struct emu_check_report {
	struct emu_check_result r[EMU_CHECK_MAX];
	unsigned n;
	int fatal;			/* index of the first fatal row absent, or -1 */
};

/* Every row, in report order; *n their number. */
const struct emu_check_row *emu_check_rows(unsigned *n);
/* Parse an ODPEMU_MASK value (NULL or "": nothing masked) into a bit per row. 0, or
 * -EINVAL with the unknown word and the known ones in err. */
int emu_check_mask_parse(const char *spec, unsigned long *mask, char *err, size_t errlen);
/* Probe every row (the tests' rows only when with_tests), masking those of mask_spec
 * (normally getenv("ODPEMU_MASK")). 0, or -EINVAL (bad mask, said in err). */
int emu_check_run(struct emu_check_report *rep, const char *mask_spec, bool with_tests,
		  char *err, size_t errlen);
/* Whether a row was probed and found available (not masked). */
bool emu_check_available(const struct emu_check_report *rep, const char *name);
/* The result of a row by name, or NULL when it was not probed. */
const struct emu_check_result *emu_check_find(const struct emu_check_report *rep,
					      const char *name);
const char *emu_check_verdict_str(enum emu_check_verdict v);
/* The one-line reason a row is absent: "<row>: <what was seen>; remedy: <remedy>". */
void emu_check_reason(const struct emu_check_result *r, char *buf, size_t len);

/* The report as an aligned table, and the rows not available with their fallback and
 * remedy. */
void emu_check_print(FILE *f, const struct emu_check_report *rep);
/* The report as one JSON document. */
void emu_check_print_json(FILE *f, const struct emu_check_report *rep);
/* `odpemud --check [--json]`: probe, print; 0 odpemud can run (maybe degraded), 1 it
 * cannot (the reason on stderr), 2 a bad ODPEMU_MASK. */
int emu_check_main(bool json);
/* At start: probe (not the tests' rows) into rep, log one info line naming what is
 * degraded and a line per row not available. 0, or -EINVAL for a bad ODPEMU_MASK
 * (logged). */
int emu_check_log_start(struct emu_check_report *rep);
/* The event loop a report allows: io_uring when its rows the loop needs are available,
 * else epoll, with the reason (emu_check_reason of the first row absent) in why. */
bool emu_check_loop_uring(const struct emu_check_report *rep, char *why, size_t len);
/* Why io_uring_setup failed with rc (-errno), on one line: "io_uring: refused (EPERM):
 * <cause>; remedy: <remedy>", the cause found from kernel.io_uring_disabled and this
 * process's seccomp mode. */
void emu_check_io_uring_reason(int rc, char *buf, size_t len);

#endif
