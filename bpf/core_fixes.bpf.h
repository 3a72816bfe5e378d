/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel-version differences, in one place, each with the change that
 * caused it.  Everything here is resolved by CO-RE at load time.
 *
 * Each reader takes @btf, a constant after inlining: true in tp_btf
 * programs, whose task pointers the verifier trusts, so fields are read
 * with direct (PROBE_MEM) loads; false in raw_tp programs, whose
 * arguments are plain numbers, so fields are read with
 * bpf_probe_read_kernel().  The compiler drops the other branch.  Direct
 * loads are what keep sched_switch cheap: a probe read is a helper call.
 */
#ifndef MOAT_CORE_FIXES_BPF_H
#define MOAT_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/*
 * commit 2f064a59a11f ("sched: Change task_struct::state"), v5.14, renamed
 * task_struct::state to __state and made it unsigned int.
 */
struct task_struct___pre_5_14 {
	volatile long state;
} __attribute__((preserve_access_index));

static __always_inline long moat_task_state(struct task_struct *t, bool btf)
{
	struct task_struct___pre_5_14 *old = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return btf ? t->__state : BPF_CORE_READ(t, __state);
	return btf ? old->state : BPF_CORE_READ(old, state);
}

static __always_inline __u32 moat_task_pid(struct task_struct *t, bool btf)
{
	return btf ? t->pid : BPF_CORE_READ(t, pid);
}

/* task_struct::on_cpu exists only on CONFIG_SMP kernels. */
static __always_inline bool moat_task_on_cpu(struct task_struct *t, bool btf)
{
	if (!bpf_core_field_exists(t->on_cpu))
		return false;
	return btf ? t->on_cpu : BPF_CORE_READ(t, on_cpu);
}

/*
 * Whether CFS bandwidth has throttled @t's hierarchy on its CPU: its
 * cfs_rq, or one above it, out of quota.  tg_throttle_down() counts a
 * throttle into cfs_rq::throttle_count of every cfs_rq below the one
 * throttled, and tg_unthrottle_up() counts it out (v2.6.39's bandwidth
 * control; v6.18's task-based throttling keeps both).  sched_entity::
 * cfs_rq needs CONFIG_FAIR_GROUP_SCHED, throttle_count
 * CONFIG_CFS_BANDWIDTH: a kernel without them throttles nothing.
 */
static __always_inline bool moat_task_throttled(struct task_struct *t, bool btf)
{
	struct cfs_rq *cfs_rq = NULL;

	if (!bpf_core_field_exists(t->se.cfs_rq) ||
	    !bpf_core_field_exists(cfs_rq->throttle_count))
		return false;
	cfs_rq = btf ? t->se.cfs_rq : BPF_CORE_READ(t, se.cfs_rq);
	if (!cfs_rq)
		return false;
	return (btf ? cfs_rq->throttle_count : BPF_CORE_READ(cfs_rq, throttle_count)) > 0;
}

/*
 * The cpu controller's index into css_set::subsys[] is an enum value that
 * depends on which controllers the kernel was built with, so it is
 * relocated rather than hard-coded.  Kernels without CONFIG_CGROUP_SCHED
 * have no cpu controller: every task is then charged to cgroup id 0.
 *
 * kernfs_node::id became a u64 in commit 67c0496e87d1 ("kernfs: convert
 * kernfs_node->id from union kernfs_node_id to u64"), v5.5; earlier kernels
 * lack BTF for tp_btf anyway and are not supported.
 */
static __always_inline __u64 moat_task_cpu_cgroup_id(struct task_struct *t,
						     bool btf)
{
	struct cgroup_subsys_state *css;
	struct css_set *cset;
	int cpu_id;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, cpu_cgrp_id))
		return 0;
	cpu_id = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);
	if (cpu_id < 0 || cpu_id >= CGROUP_SUBSYS_COUNT)
		return 0;

	if (btf) {
		css = t->cgroups->subsys[cpu_id];
		return css ? css->cgroup->kn->id : 0;
	}
	cset = BPF_CORE_READ(t, cgroups);
	if (!cset || bpf_core_read(&css, sizeof(css), &cset->subsys[cpu_id]))
		return 0;
	return BPF_CORE_READ(css, cgroup, kn, id);
}

#endif /* MOAT_CORE_FIXES_BPF_H */
