/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Types shared by tools/bench/eevdf.bpf.c (what EEVDF saw at each of one
 * task's wake-ups and of the picks while it waited) and
 * tools/bench/eevdf_probe.c.  The includer provides __u64 and friends.
 */
#ifndef MOAT_BENCH_EEVDF_H
#define MOAT_BENCH_EEVDF_H

enum eevdf_ev {
	EEVDF_WAKE,	/* the task queued: the running task's entity beside it */
	EEVDF_PICK,	/* a switch to another task while it waits */
	EEVDF_RUN,	/* its switch-in: the wait is over */
};

/* One scheduling entity, as the kernel keeps it (struct sched_entity). */
struct eevdf_se {
	__u64 vruntime, deadline;
	__s64 vlag;		/* vlag, or vprot while it runs (6.18: a union) */
	__u64 slice;
	__u64 weight;		/* load.weight, scale_load()d on 64-bit */
	__u8 on_rq, delayed, custom_slice;
	char name[21];		/* a group's cgroup, or a task's comm */
};

#define EEVDF_QUEUED 8		/* the queued entities recorded, at most */

/*
 * The run queue where the waiting task's hierarchy and the other task's
 * meet (find_matching_se()), with what avg_vruntime() reads from it.
 */
struct eevdf_event {
	__u64 ts;		/* bpf_ktime_get_ns() */
	__u64 since;		/* when the wait began (its wake-up, or preemption) */
	__u32 type, cpu;
	__u32 other_pid;	/* WAKE: running; PICK: next; RUN: prev */
	__u32 prev_pid;		/* PICK: prev */
	__u32 prev_state;	/* PICK: prev's state (0: preempted) */
	__s32 depth;		/* the meeting level's se depth; -1: none */
	char other_comm[16];
	struct eevdf_se lc, other;	/* the entities at the meeting level */
	struct eevdf_se curr;		/* that cfs_rq's curr, if any */
	__u8 has_curr;
	__u8 new_names;		/* sum_w_vruntime/sum_weight/zero_vruntime */
	__u8 has_vprot;		/* vlag holds vprot while it runs (6.18+) */
	__s64 sum_w;		/* sum_w_vruntime (avg_vruntime before) */
	__u64 sum_weight;	/* sum_weight (avg_load before) */
	__u64 zero;		/* zero_vruntime (min_vruntime before) */
	__u32 nr_queued;
	__u64 other_flags;		/* WAKE: the running task's thread_info.flags */
	__u32 nr_tree;			/* tree[]'s entries */
	struct eevdf_se tree[EEVDF_QUEUED];	/* the queue's tree (curr is not in it) */
};

#endif
