// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-stamp-attach: attach the probe of tools/bench/stamp.bpf.c (run-queue waits
 * from the scheduler's own stamp) until SIGTERM or SIGINT, for
 * tools/bench/stamp.sh.  A benchmark tool, not installed.  Prints
 * "attached" on stderr once it is.
 *
 *   moat-stamp-attach [--compare] [wait|cgroup|all]
 *
 * The part cuts the switch program as in tools/bench/stamp.h (default all).
 * --compare also runs rqlat's way in the same programs (its wake-up
 * programs attached too) and, on the signal, prints on stdout how the
 * two waits compared, one "name value" per line.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <linux/types.h>
#include "bpf_probe.h"
#include "rqlat.h"
#include "stamp.h"
#include "stamp.skel.h"

static const char *const parts[STAMP_PART_NR] = {
	[STAMP_PART_ALL] = "all", [STAMP_PART_WAIT] = "wait",
	[STAMP_PART_CGROUP] = "cgroup",
};

static void print_slots(const char *name, const __u64 *slots)
{
	for (int i = 0; i < MOAT_HIST_SLOTS; i++)
		if (slots[i])
			printf("%s_2^%d %llu\n", name, i,
			       (unsigned long long)slots[i]);
}

static void print_counts(const struct stamp_counts *c)
{
#define P(f) printf(#f " %llu\n", (unsigned long long)c->f)
	P(both); P(a_only); P(b_only); P(b_zero);
	P(a_100us); P(a_100us_b_half); P(a_1ms); P(a_1ms_b_half);
	P(sum_a); P(sum_b); P(no_storage); P(no_hist);
#undef P
	print_slots("short_by", c->short_by);
	print_slots("long_by", c->long_by);
}

int main(int argc, char **argv)
{
	unsigned int part = STAMP_PART_ALL;
	bool compare = false;
	struct stamp *skel;
	sigset_t set;
	int i, sig, err;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--compare")) {
			compare = true;
			continue;
		}
		for (part = 0; part < STAMP_PART_NR; part++)
			if (!strcmp(argv[i], parts[part]))
				break;
		if (part == STAMP_PART_NR || i != argc - 1) {
			fprintf(stderr, "usage: moat-stamp-attach [--compare] [wait|cgroup|all]\n");
			return 2;
		}
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	skel = stamp__open();
	if (!skel) {
		perror("moat-stamp-attach: open tools/bench/stamp.bpf.c");
		return 1;
	}
	skel->rodata->stamp_part = part;
	skel->rodata->stamp_compare = compare;
	bpf_program__set_autoattach(skel->progs.stamp_wakeup, compare);
	bpf_program__set_autoattach(skel->progs.stamp_wakeup_new, compare);
	bpf_program__set_autoattach(skel->progs.stamp_seed, false);
	err = stamp__load(skel);
	if (!err)
		err = stamp__attach(skel);
	if (!err)	/* storage for the tasks from before, as rqlat does */
		err = moat_bpf_iter_tasks(skel->progs.stamp_seed);
	if (err) {
		fprintf(stderr, "moat-stamp-attach: load and attach: %s\n", strerror(-err));
		stamp__destroy(skel);
		return 1;
	}
	fprintf(stderr, "attached\n");
	sigwait(&set, &sig);
	if (compare)
		print_counts(&skel->bss->counts);
	stamp__destroy(skel);
	return 0;
}
