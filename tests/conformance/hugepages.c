/* SPDX-License-Identifier: MIT */
/* 2 MiB huge pages for the suite's huge-page tests (utils.py reads nr_hugepages). */
#include <stdio.h>
#include <unistd.h>

#include "conformance.h"

#define NR_HUGEPAGES "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
#define FREE_HUGEPAGES "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"

static long saved = -1;	/* nr_hugepages before the reserve, -1: untouched */

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f)
		return -1;
	rc = fprintf(f, "%ld\n", v) < 0;
	return fclose(f) || rc ? -1 : 0;
}

void conf_hugepages_reserve(void)
{
	long nr = read_long(NR_HUGEPAGES), free_pages = read_long(FREE_HUGEPAGES);

	if (geteuid() != 0 || nr < 0 || free_pages < 0 || free_pages >= CONF_HUGEPAGES)
		return;
	if (write_long(NR_HUGEPAGES, nr + CONF_HUGEPAGES - free_pages) == 0)
		saved = nr;
	printf("2 MiB huge pages: %ld free, %ld now (%s)\n", free_pages,
	       read_long(FREE_HUGEPAGES), saved >= 0 ? "reserved for the run" : "cannot reserve");
}

void conf_hugepages_restore(void)
{
	if (saved >= 0 && write_long(NR_HUGEPAGES, saved))
		fprintf(stderr, "could not put nr_hugepages back to %ld\n", saved);
	saved = -1;
}
