/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * How much of rqlat's hot path runs in tools/bench/rqlat_parts.bpf.c,
 * bpf/rqlat.bpf.c built with its cut points: tools/bench/overhead.sh
 * prices each part by attaching programs cut after it
 * (tools/bench/rqlat_parts.c), each part with the ones before.  moat's
 * own object has no cut point.
 */
#ifndef MOAT_BENCH_RQLAT_PARTS_H
#define MOAT_BENCH_RQLAT_PARTS_H

enum moat_rqlat_part {
	MOAT_PART_ALL,		/* everything: moat's programs */
	MOAT_PART_CLOCK,	/* the clock and the tasks' pids: at a
				   switch the runqueue's clock, next's
				   start looked up to tell a skipped
				   update, bpf_ktime_get_ns() where it
				   may be and at every 16th (the
				   sample); at a wake-up the start from
				   the runqueue's clock */
	MOAT_PART_MARK,		/* + the runnable mark: prev's at a switch,
				   the woken task's at a wake-up */
	MOAT_PART_WAIT,		/* + next's start cleared, the wait */
	MOAT_PART_CGROUP,	/* + next's cgroup id */
	MOAT_PART_HIST,		/* + its histogram; blame's check not run */
	MOAT_PART_NR,
};

#endif
