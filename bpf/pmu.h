/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What bpf/pmu.bpf.c and userspace share.  One counting perf event per
 * CPU per event (up to MOAT_PMU_EVENTS, in the perf-event arrays ev0,
 * ev1, ev2), read at every context switch; the growth since the last
 * switch on that CPU is charged to the cgroup that was running.
 */
#ifndef MOAT_BPF_PMU_H
#define MOAT_BPF_PMU_H

#define MOAT_PMU_EVENTS		3
#define MOAT_PMU_MAX_CGROUPS	4096

/*
 * Per cgroup, per CPU (a per-CPU hash value).  Userspace reads it while
 * that CPU may be charging it, so a charge is bracketed: the program
 * writes seq_end first and seq last, each one more than before, and a
 * map read copies a value front to back, so a copy taken during a charge
 * has seq != seq_end (with x86's store and load order; userspace reads
 * it again).  Without them a read between two events' stores saw one
 * event's growth and not the other's: a CPI off by a slice.
 */
struct moat_pmu_sum {
	__u64 seq;			/* written last */
	__u64 count[MOAT_PMU_EVENTS];	/* scaled by enabled / running */
	__u64 scaled[MOAT_PMU_EVENTS];	/* charges that needed scaling:
					   the counter was multiplexed */
	__u64 charges;			/* slices charged */
	__u64 seq_end;			/* written first */
};

/* Per CPU: the readings at the last switch. */
struct moat_pmu_last {
	__u64 counter[MOAT_PMU_EVENTS];
	__u64 enabled[MOAT_PMU_EVENTS];
	__u64 running[MOAT_PMU_EVENTS];
};

#endif /* MOAT_BPF_PMU_H */
