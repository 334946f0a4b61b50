/* SPDX-License-Identifier: MIT */
/* tshark_run — what the Wireshark conformance tests share: whether tshark can run (a CI
 * run must have it), one capture written and decoded field by field, the capture kept
 * only when a check failed. */
#ifndef ODPEMU_TESTS_TSHARK_RUN_H
#define ODPEMU_TESTS_TSHARK_RUN_H

#include <stdint.h>

/* One decoded frame: tshark's tab-separated fields (frame.number first), modifiable. */
typedef void (*tshark_line_fn)(char *line);

/* Decode pcap with `tshark -T fields -e frame.number -e fields[0..n)` plus extra options
 * (may be ""), each output line to on_line; T_EQ that it printed `frames` lines. 0, or -1
 * when tshark could not run or failed. */
int tshark_fields(const char *pcap, const char *extra, const char *const *fields, unsigned n,
		  tshark_line_fn on_line, unsigned frames);

/* The frame of a conformance test named `name`: skip (T_SKIP) without tshark unless
 * CI=true (then fail), write the capture `file` in a fresh directory with write(path,
 * seed), decode(path), remove it unless a check failed; returns t_done(name). */
int tshark_test(const char *name, const char *file, uint64_t seed,
		int (*write)(const char *path, uint64_t seed), int (*decode)(const char *path));

#endif
