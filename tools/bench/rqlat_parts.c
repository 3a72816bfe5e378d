// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-rqlat-parts: attach moat's tp_btf rqlat programs cut after one part
 * of their hot path (tools/bench/rqlat_parts.bpf.c, enum moat_rqlat_part),
 * until SIGTERM or SIGINT, so that tools/bench/overhead.sh prices each
 * part in the run that measures the floor and moat's whole programs.  A benchmark tool,
 * not installed.  Prints "attached" on stderr once it is.
 *
 *   moat-rqlat-parts clock|mark|wait|cgroup|hist
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <linux/types.h>
#include "bpf_probe.h"
#include "rqlat.h"
#include "rqlat_parts.h"
#include "rqlat_parts.skel.h"

static const char *const names[MOAT_PART_NR] = {
	[MOAT_PART_CLOCK] = "clock", [MOAT_PART_MARK] = "mark",
	[MOAT_PART_WAIT] = "wait", [MOAT_PART_CGROUP] = "cgroup",
	[MOAT_PART_HIST] = "hist",
};

int main(int argc, char **argv)
{
	struct rqlat_parts *skel;
	unsigned int part;
	sigset_t set;
	int sig, err;

	for (part = MOAT_PART_CLOCK; argc == 2 && part < MOAT_PART_NR; part++)
		if (!strcmp(argv[1], names[part]))
			break;
	if (argc != 2 || part == MOAT_PART_NR) {
		fprintf(stderr, "usage: moat-rqlat-parts clock|mark|wait|cgroup|hist\n");
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	skel = rqlat_parts__open();
	if (!skel) {
		perror("moat-rqlat-parts: open tools/bench/rqlat_parts.bpf.c");
		return 1;
	}
	skel->rodata->bench_parts = part;
	bpf_program__set_autoload(skel->progs.sched_switch_raw, false);
	bpf_program__set_autoload(skel->progs.sched_wakeup_raw, false);
	bpf_program__set_autoload(skel->progs.sched_wakeup_new_raw, false);
	bpf_program__set_autoload(skel->progs.sched_process_exit_raw, false);
	bpf_program__set_autoattach(skel->progs.seed_starts, false);
	/* as moat's loader does: an entry for each possible CPU */
	bpf_map__set_max_entries(skel->maps.clocks, libbpf_num_possible_cpus());
	err = rqlat_parts__load(skel);
	if (!err)
		err = rqlat_parts__attach(skel);
	if (!err)	/* as moat does (lib/rqlat_bpf.c) */
		err = moat_bpf_iter_tasks(skel->progs.seed_starts);
	if (err) {
		fprintf(stderr, "moat-rqlat-parts: load and attach: %s\n", strerror(-err));
		rqlat_parts__destroy(skel);
		return 1;
	}
	fprintf(stderr, "attached\n");
	sigwait(&set, &sig);
	rqlat_parts__destroy(skel);
	return 0;
}
