/* SPDX-License-Identifier: MIT */
/* odpemu-perf — perf.h says how a run goes. */
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

int main(int argc, char **argv)
{
	struct perf_opts o;

	perf_opts_parse(argc, argv, &o);
	srand48((long)time(NULL) ^ (long)getpid());	/* random initial PSNs, as perftest */
	signal(SIGPIPE, SIG_IGN);	/* a peer that died shows as a failed send */
	return o.connect_to ? perf_client(&o) : perf_server(&o);
}
