/* SPDX-License-Identifier: MIT */
/* tshark_run — see tshark_run.h. */
#include "tshark_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"

int tshark_fields(const char *pcap, const char *extra, const char *const *fields, unsigned n,
		  tshark_line_fn on_line, unsigned frames)
{
	char cmd[8192], line[8192];
	int at = snprintf(cmd, sizeof(cmd), "tshark -r '%s' %s -T fields -E separator=/t "
			  "-E occurrence=f -e frame.number", pcap, extra);
	unsigned lines = 0;
	FILE *p;

	for (unsigned c = 0; c < n && at > 0 && (size_t)at < sizeof(cmd); c++)
		at += snprintf(cmd + at, sizeof(cmd) - (size_t)at, " -e %s", fields[c]);
	if (at <= 0 || (size_t)at >= sizeof(cmd) - 16)
		return -1;
	snprintf(cmd + at, sizeof(cmd) - (size_t)at, " 2>/dev/null");
	if (!(p = popen(cmd, "r")))
		return -1;
	while (fgets(line, sizeof(line), p)) {
		on_line(line);
		lines++;
	}
	T_EQ(lines, frames, "tshark decoded every packet");
	return pclose(p) == 0 ? 0 : -1;
}

static int have_tshark(void)
{
	return system("command -v tshark >/dev/null 2>&1") == 0;
}

int tshark_test(const char *name, const char *file, uint64_t seed,
		int (*write)(const char *path, uint64_t seed), int (*decode)(const char *path))
{
	char dir[] = "/tmp/odpemu-tshark-XXXXXX", pcap[96];
	const char *ci = getenv("CI");

	if (!have_tshark()) {
		if (ci && (!strcmp(ci, "true") || !strcmp(ci, "1"))) {
			fprintf(stderr, "tshark is missing and CI=true: the conformance test must run\n");
			return 1;
		}
		fprintf(stderr, "tshark not installed: skipping (tools/test installs it)\n");
		return T_SKIP;
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(pcap, sizeof(pcap), "%s/%s", dir, file);
	T_CHECK(write(pcap, seed) == 0, "writing %s", pcap);
	T_CHECK(decode(pcap) == 0, "tshark ran");
	if (!t_failures) {
		unlink(pcap);
		rmdir(dir);
	} else {
		fprintf(stderr, "capture kept for inspection: %s\n", pcap);
	}
	return t_done(name);
}
