// SPDX-License-Identifier: GPL-2.0-only
/*
 * stamp: a probe of another design for rqlat's hot path, run by
 * tools/bench/stamp.sh to price it and to measure how far its waits agree
 * with rqlat's.  Not used by moat.
 *
 * The design.  The scheduler already stamps a task when it is queued
 * (task->sched_info.last_queued: rq_clock() at enqueue, CONFIG_SCHED_INFO,
 * which TASK_DELAY_ACCT and SCHEDSTATS select) and adds the wait to
 * sched_info.run_delay when the task gets a CPU, and when it leaves a
 * runqueue without running (a migration, which stamps it again on the
 * new one).  So a wait can be read at sched_switch with no program at
 * sched_wakeup and no clock read: rq->clock - next's last_queued (the
 * kernel adds the same after the tracepoint, in sched_info_arrive()),
 * plus what run_delay gained since next last got a CPU (a cursor in the
 * task's storage: the part spent on runqueues it left).  rq is found
 * through next->se.cfs_rq->rq, which CONFIG_FAIR_GROUP_SCHED provides.
 *
 * What it gives up.  rq->clock is not updated by the __schedule() that
 * follows a wake-up preemption (rq_clock_skip_update()): the clock then
 * reads the time of that wake-up, and a wait that ends there reads short
 * by the time the preemption took (see bpf/rqlat.bpf.c).
 *
 * stamp_part (set before load) cuts the switch program after a part, as
 * rqlat's bench_parts does: STAMP_PART_WAIT reads the wait and moves the
 * cursor, STAMP_PART_CGROUP adds next's cgroup id, STAMP_PART_ALL the
 * histogram.  stamp_compare also runs the exact way in the same programs
 * (bpf_ktime_get_ns() at the wake-up or preemption and at the switch;
 * rqlat reads the runqueue's clock where it can, within 1 us of that in
 * 99% of events) and counts, wait by wait, where the two disagree.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "core_fixes.bpf.h"
#include "rqlat.h"
#include "hist_slot.bpf.h"
#include "stamp.h"

#define TASK_RUNNING	0

const volatile __u32 stamp_part = STAMP_PART_ALL;
const volatile bool stamp_compare;

struct stamp_counts counts;

struct stamp_task {
	__u64 cursor;	/* run_delay after next's last switch-in */
	__u64 start;	/* rqlat's start, stamp_compare only */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct stamp_task);
} stamp_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MOAT_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct moat_rqlat_hist);
} stamp_hists SEC(".maps");

static const struct moat_rqlat_hist zero_hist;

static __always_inline void count(__u64 *c)
{
	__sync_fetch_and_add(c, 1);
}

/* log2 slot of a difference, for the counts' histograms */
static __always_inline void count_diff(__u64 *slots, __u64 d)
{
	__u32 slot = hist_slot(d);

	barrier_var(slot);
	if (slot < MOAT_HIST_SLOTS)
		count(&slots[slot]);
}

/* rqlat's wait against this one, for one switch-in */
static __always_inline void compare(__u64 a, __u64 b)
{
	count(&counts.both);
	__sync_fetch_and_add(&counts.sum_a, a);
	__sync_fetch_and_add(&counts.sum_b, b);
	if (a > b)
		count_diff(counts.short_by, a - b);
	else if (b > a)
		count_diff(counts.long_by, b - a);
	if (a && !b)
		count(&counts.b_zero);
	if (a >= 100000) {
		count(&counts.a_100us);
		if (b < a / 2)
			count(&counts.a_100us_b_half);
	}
	if (a >= 1000000) {
		count(&counts.a_1ms);
		if (b < a / 2)
			count(&counts.a_1ms_b_half);
	}
}

SEC("tp_btf/sched_switch")
int BPF_PROG(stamp_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	__u64 lq, now, here, rd, wait, cgid, a_now = 0, a = 0;
	struct moat_rqlat_hist *h;
	struct stamp_task *st;
	bool has_a = false;
	__u32 slot;

	if (stamp_compare) {
		a_now = bpf_ktime_get_ns();
		if (prev->pid &&
		    (preempt || moat_task_state(prev, true) == TASK_RUNNING)) {
			st = bpf_task_storage_get(&stamp_tasks, prev, 0, 0);
			if (st)
				st->start = a_now;
		}
	}
	if (!next->pid)
		return 0;
	st = bpf_task_storage_get(&stamp_tasks, next, 0, 0);
	if (!st) {
		count(&counts.no_storage);
		return 0;
	}
	if (stamp_compare && st->start) {
		a = a_now > st->start ? a_now - st->start : 0;
		has_a = true;
		st->start = 0;
	}
	lq = next->sched_info.last_queued;
	if (!lq) {
		if (has_a)
			count(&counts.a_only);
		return 0;
	}
	now = next->se.cfs_rq->rq->clock;
	here = now > lq ? now - lq : 0;
	rd = next->sched_info.run_delay;
	wait = here;
	if (rd > st->cursor)
		wait += rd - st->cursor;
	st->cursor = rd + here;
	barrier_var(wait);
	if (stamp_part == STAMP_PART_WAIT)
		return 0;
	cgid = moat_task_cpu_cgroup_id(next, true);
	barrier_var(cgid);
	if (stamp_part == STAMP_PART_CGROUP)
		return 0;
	h = bpf_map_lookup_elem(&stamp_hists, &cgid);
	if (!h) {
		bpf_map_update_elem(&stamp_hists, &cgid, &zero_hist, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&stamp_hists, &cgid);
		if (!h) {
			count(&counts.no_hist);
			return 0;
		}
	}
	slot = hist_slot(wait);
	barrier_var(slot);
	if (slot < MOAT_HIST_SLOTS)
		h->slots[slot]++;
	h->count++;
	h->sum_ns += wait;
	if (!stamp_compare)
		return 0;
	if (has_a)
		compare(a, wait);
	else
		count(&counts.b_only);
	return 0;
}

/* rqlat's start, for stamp_compare: attached only then */
static __always_inline int wakeup(struct task_struct *p)
{
	struct stamp_task *st;

	if (moat_task_on_cpu(p, true) || !p->pid)
		return 0;
	st = bpf_task_storage_get(&stamp_tasks, p, 0, 0);
	if (st && !st->start)
		st->start = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(stamp_wakeup, struct task_struct *p)
{
	return wakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(stamp_wakeup_new, struct task_struct *p)
{
	return wakeup(p);
}

/* Storage is created outside the runqueue lock, as rqlat's is. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(stamp_fork, struct task_struct *parent, struct task_struct *child)
{
	bpf_task_storage_get(&stamp_tasks, child, 0,
			     BPF_LOCAL_STORAGE_GET_F_CREATE);
	return 0;
}

/* Run once after attaching: the tasks from before, cursor at run_delay. */
SEC("iter/task")
int stamp_seed(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct stamp_task *st;

	if (!t || !t->pid)
		return 0;
	st = bpf_task_storage_get(&stamp_tasks, t, 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (st && !st->cursor)
		st->cursor = t->sched_info.run_delay;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
