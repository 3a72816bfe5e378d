// SPDX-License-Identifier: GPL-2.0-only
/*
 * rqlat: run-queue latency per cgroup, and who caused it.
 *
 * What is measured.  A task's run-queue wait is the time from the moment it
 * becomes runnable to the moment it gets a CPU.  It becomes runnable at
 * sched_wakeup / sched_wakeup_new, or at a sched_switch that takes the CPU
 * away from it while it can still run (preemption, or a yield with state
 * TASK_RUNNING).  The wait ends at the sched_switch that switches it in.
 * A task that blocks (switched out with a sleeping state, no preemption)
 * forgets its start time, so a later switch-in never sees a stale one.
 *
 * How it is keyed.  Each wait is recorded for the cgroup that owns the
 * task's cpu controller: task->cgroups->subsys[cpu_cgrp_id]->cgroup, whose
 * kernfs id is the cgroup id userspace sees as the directory's inode /
 * file handle.  On cgroup v2 that is the nearest ancestor with +cpu in its
 * parent's subtree_control, i.e. the cgroup whose cpu.max and cpu.weight
 * apply to the task; on a v1 hierarchy (cpu mounted alone or with
 * cpuacct) it is the task's cgroup in that hierarchy.  One code path
 * serves both.
 *
 * How it is attributed.  For cgroups userspace has put in the watched map,
 * each wait is also charged, whole, to the cgroup of the task that held
 * the CPU just before the waiter got it (prev at the ending sched_switch).
 * This is exact when a single cgroup ran on that CPU for the whole wait,
 * which is the case that matters: a wait long enough to hurt is mostly one
 * antagonist's slice.  When several cgroups ran during the wait, all of it
 * goes to the last one; when the waiter migrated, to the last holder of
 * the CPU it ran on.  When prev is the idle task the wait is charged to
 * MOAT_CULPRIT_IDLE: that is wake-up latency, not contention.
 *
 * Maps are per-CPU where they are written on every event, so the hot path
 * takes no lock and no atomic.  Every map is bounded; an event that does
 * not fit is counted in rqlat_drops[], never lost silently.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "core_fixes.bpf.h"
#include "rqlat.h"

#define TASK_RUNNING	0
#define EEXIST		17

/* Runnable-since timestamps of queued tasks, by pid (tid). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MOAT_MAX_RUNNABLE);
	__type(key, __u32);
	__type(value, __u64);
} runnable_since SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MOAT_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct moat_rqlat_hist);
} hists SEC(".maps");

/* Cgroup ids whose waits are charged to culprits; filled by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MOAT_MAX_WATCHED);
	__type(key, __u64);
	__type(value, __u8);
} watched SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MOAT_MAX_BLAME);
	__type(key, struct moat_blame_key);
	__type(value, struct moat_blame_val);
} blame SEC(".maps");

/* Drops are rare; a shared counter with an atomic add is cheap enough. */
__u64 rqlat_drops[MOAT_DROP_NR];

static const struct moat_rqlat_hist zero_hist;
static const struct moat_blame_val zero_blame;

static __always_inline void count_drop(enum moat_rqlat_drop why)
{
	__sync_fetch_and_add(&rqlat_drops[why], 1);
}

static __always_inline __u32 log2_u32(__u32 v)
{
	__u32 r, shift;

	r = (v > 0xFFFF) << 4; v >>= r;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline __u32 hist_slot(__u64 ns)
{
	__u32 hi = ns >> 32;
	__u32 slot = hi ? log2_u32(hi) + 32 : log2_u32(ns);

	return slot < MOAT_HIST_SLOTS ? slot : MOAT_HIST_SLOTS - 1;
}

/*
 * Insert-then-lookup: a per-CPU hash update from BPF sets this CPU's copy
 * and zeroes the others, so a racing insert on another CPU loses nothing.
 */
static __always_inline void *lookup_or_init(void *map, const void *key,
					    const void *zero,
					    enum moat_rqlat_drop why)
{
	void *v = bpf_map_lookup_elem(map, key);
	long err;

	if (v)
		return v;
	err = bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_drop(why);
		return NULL;
	}
	return bpf_map_lookup_elem(map, key);
}

static __always_inline void mark_runnable(__u32 pid, __u64 now, __u64 flags)
{
	long err;

	if (!pid)	/* the idle tasks all have pid 0 and never wait */
		return;
	err = bpf_map_update_elem(&runnable_since, &pid, &now, flags);
	if (err && err != -EEXIST)
		count_drop(MOAT_DROP_START);
}

static __always_inline void record_wait(struct task_struct *next,
					struct task_struct *prev,
					__u32 prev_pid, __u64 wait)
{
	struct moat_rqlat_hist *h;
	struct moat_blame_key bk;
	struct moat_blame_val *bv;
	__u64 cgid = moat_task_cpu_cgroup_id(next);

	h = lookup_or_init(&hists, &cgid, &zero_hist, MOAT_DROP_HIST);
	if (h) {
		h->slots[hist_slot(wait)]++;
		h->count++;
		h->sum_ns += wait;
	}

	if (!bpf_map_lookup_elem(&watched, &cgid))
		return;
	bk.victim = cgid;
	bk.culprit = prev_pid ? moat_task_cpu_cgroup_id(prev) : MOAT_CULPRIT_IDLE;
	bv = lookup_or_init(&blame, &bk, &zero_blame, MOAT_DROP_BLAME);
	if (bv) {
		bv->wait_ns += wait;
		bv->count++;
	}
}

static __always_inline int on_wakeup(struct task_struct *p)
{
	/* Keep the earliest start: a queued task can be woken again. */
	mark_runnable(BPF_CORE_READ(p, pid), bpf_ktime_get_ns(), BPF_NOEXIST);
	return 0;
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 prev_pid = BPF_CORE_READ(prev, pid);
	__u32 next_pid = BPF_CORE_READ(next, pid);
	__u64 *since;

	/*
	 * __schedule() dequeues prev only when it was not preempted and its
	 * state is not TASK_RUNNING; otherwise it stays queued and waits.
	 */
	if (preempt || moat_task_state(prev) == TASK_RUNNING)
		mark_runnable(prev_pid, now, BPF_ANY);
	else if (prev_pid)
		bpf_map_delete_elem(&runnable_since, &prev_pid);

	if (!next_pid)
		return 0;
	since = bpf_map_lookup_elem(&runnable_since, &next_pid);
	if (!since)
		return 0;
	record_wait(next, prev, prev_pid, now > *since ? now - *since : 0);
	bpf_map_delete_elem(&runnable_since, &next_pid);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_btf, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(preempt, prev, next);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup_raw, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_raw, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(preempt, prev, next);
}

char LICENSE[] SEC("license") = "GPL";
