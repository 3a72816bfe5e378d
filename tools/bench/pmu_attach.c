// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-pmu-attach EVENT...: attach the per-cgroup counter program
 * (bpf/pmu.bpf.c) with up to three events until SIGTERM or SIGINT, so
 * that tools/bench/overhead.sh can measure what it costs.  A benchmark
 * tool, not installed.  Prints "attached" on stderr once it is.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "pmu_bpf.h"

int main(int argc, char **argv)
{
	struct moat_pmu_opts o = {};
	struct moat_pmu *p;
	sigset_t set;
	int i, sig;

	moat_log_init("moat-pmu-attach", MOAT_LOG_INFO);
	if (argc < 2 || argc > MOAT_PMU_EVENTS + 1) {
		fprintf(stderr, "usage: moat-pmu-attach EVENT... (1 to %d libpfm4 event names)\n",
			MOAT_PMU_EVENTS);
		return 2;
	}
	for (i = 1; i < argc; i++)
		o.events[i - 1] = argv[i];
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (moat_pmu_open(&o, &p))
		return 1;
	fprintf(stderr, "attached\n");
	sigwait(&set, &sig);
	moat_pmu_close(p);
	return 0;
}
