// SPDX-License-Identifier: GPL-2.0-only
/*
 * The floor: empty programs on the tracepoints rqlat's programs use
 * (sched_switch, sched_wakeup, sched_wakeup_new), attached the same way
 * (tp_btf).  What they cost is what any BPF program there costs: the
 * trampoline and the call, which moat cannot make cheaper.
 * tools/bench/overhead.sh measures them in the same run as moat's, and
 * reports moat's cost above this floor: absolute nanoseconds differ
 * threefold between machines of one kind, the difference less.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(floor_wakeup, struct task_struct *p)
{
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(floor_wakeup_new, struct task_struct *p)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
