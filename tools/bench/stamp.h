/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Types shared by tools/bench/stamp.bpf.c (a probe of another design for rqlat's
 * hot path) and tools/bench/stamp_attach.c.  The includer provides
 * __u64 and MOAT_HIST_SLOTS (bpf/rqlat.h).
 */
#ifndef MOAT_BPF_STAMP_H
#define MOAT_BPF_STAMP_H

/* Where the switch program stops: stamp_part in tools/bench/stamp.bpf.c. */
enum stamp_part {
	STAMP_PART_ALL,		/* the wait, the cgroup id, the histogram */
	STAMP_PART_WAIT,	/* the wait read and the cursor moved */
	STAMP_PART_CGROUP,	/* + next's cgroup id */
	STAMP_PART_NR,
};

/*
 * With stamp_compare: each switch-in's wait the scheduler's way (b) and
 * rqlat's way (a), side by side.  short_by[i] counts switch-ins where b
 * was below a by 2^i..2^(i+1) ns, long_by[i] above.
 */
struct stamp_counts {
	__u64 both;		/* switch-ins with a wait both ways */
	__u64 a_only;		/* rqlat saw a wait, no stamp (last_queued 0) */
	__u64 b_only;		/* a stamp, no start of rqlat's */
	__u64 b_zero;		/* a > 0, b == 0 */
	__u64 a_100us, a_100us_b_half;	/* a >= 100 us; of them b < a/2 */
	__u64 a_1ms, a_1ms_b_half;	/* a >= 1 ms; of them b < a/2 */
	__u64 sum_a, sum_b;	/* ns, over both */
	__u64 no_storage;	/* a switch-in of a task without storage */
	__u64 no_hist;		/* the histogram map full */
	__u64 short_by[MOAT_HIST_SLOTS];
	__u64 long_by[MOAT_HIST_SLOTS];
};

#endif
