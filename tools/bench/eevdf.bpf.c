// SPDX-License-Identifier: GPL-2.0-only
/*
 * eevdf: what the fair scheduler saw while one task waited, for
 * tools/bench/eevdf_probe.c.  Not used by moat.
 *
 * issue 44 asks why nginx, beside batch pods held at the least weights,
 * sometimes waits a tick or more for a CPU.  The kernel's rule
 * (check_preempt_wakeup_fair(), pick_eevdf()) decides at the level where
 * the waiting task's hierarchy and the running one's meet, on the two
 * entities there: eligible (vruntime at or before the queue's weighted
 * average), and the earliest virtual deadline among the eligible, unless
 * the running one is protected.  This probe records those entities and
 * the queue's sums at the watched task's wake-up and at every switch to
 * another task on its CPU while it waits, so the reason can be read from
 * the kernel's own numbers rather than from its code.
 *
 * watch_pid is the task (a thread id).  Reads are CO-RE: cfs_rq's sums
 * are sum_w_vruntime/sum_weight/zero_vruntime on this 6.18 and
 * avg_vruntime/avg_load/min_vruntime before.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "eevdf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 watch_pid;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

/* the watched task while it waits: since when, where, and the task */
__u64 wait_since;
__u32 wait_cpu;
__u64 wait_task;
__u64 lost;

struct cfs_rq___old {
	s64 avg_vruntime;
	u64 avg_load;
	u64 min_vruntime;
	unsigned int nr_running;
} __attribute__((preserve_access_index));

struct cfs_rq___new {
	s64 sum_w_vruntime;
	u64 sum_weight;
	u64 zero_vruntime;
	unsigned int nr_queued;
} __attribute__((preserve_access_index));

static __always_inline void read_se(struct eevdf_se *o, struct sched_entity *se)
{
	struct cfs_rq *q = BPF_CORE_READ(se, my_q);

	o->vruntime = BPF_CORE_READ(se, vruntime);
	o->deadline = BPF_CORE_READ(se, deadline);
	o->vlag = BPF_CORE_READ(se, vlag);
	o->slice = BPF_CORE_READ(se, slice);
	o->weight = BPF_CORE_READ(se, load.weight);
	o->on_rq = BPF_CORE_READ(se, on_rq);
	if (bpf_core_field_exists(se->sched_delayed))
		o->delayed = BPF_CORE_READ(se, sched_delayed);
	if (bpf_core_field_exists(se->custom_slice))
		o->custom_slice = BPF_CORE_READ(se, custom_slice);
	if (q)
		bpf_probe_read_kernel_str(o->name, sizeof(o->name),
					  BPF_CORE_READ(q, tg, css.cgroup, kn, name));
	else
		bpf_probe_read_kernel_str(o->name, sizeof(o->name),
					  (char *)se - bpf_core_field_offset(struct task_struct, se) +
					  bpf_core_field_offset(struct task_struct, comm));
}

/* the entities in @rq's tree, in no particular order */
static __always_inline void read_tree(struct eevdf_event *e, struct cfs_rq *rq)
{
	struct rb_node *stack[EEVDF_QUEUED], *node;
	unsigned long off = bpf_core_field_offset(struct sched_entity, run_node);
	unsigned int sp = 0, i;

	node = BPF_CORE_READ(rq, tasks_timeline.rb_root.rb_node);
	if (node)
		stack[sp++] = node;
	for (i = 0; i < EEVDF_QUEUED; i++) {
		if (!sp || sp > EEVDF_QUEUED)
			break;
		node = stack[--sp];
		if (e->nr_tree >= EEVDF_QUEUED)
			break;
		read_se(&e->tree[e->nr_tree & (EEVDF_QUEUED - 1)],
			(struct sched_entity *)((char *)node - off));
		e->nr_tree++;
		struct rb_node *l = BPF_CORE_READ(node, rb_left), *r = BPF_CORE_READ(node, rb_right);

		if (l && sp < EEVDF_QUEUED)
			stack[sp++] = l;
		if (r && sp < EEVDF_QUEUED)
			stack[sp++] = r;
	}
}

/* find_matching_se(): walk both up to the run queue they share */
static __always_inline int meet(struct sched_entity **a, struct sched_entity **b)
{
	int da = BPF_CORE_READ(*a, depth), db = BPF_CORE_READ(*b, depth), i;

	for (i = 0; i < 8 && da > db; i++, da--)
		*a = BPF_CORE_READ(*a, parent);
	for (i = 0; i < 8 && db > da; i++, db--)
		*b = BPF_CORE_READ(*b, parent);
	for (i = 0; i < 8; i++) {
		if (!*a || !*b)
			return -1;
		if (BPF_CORE_READ(*a, cfs_rq) == BPF_CORE_READ(*b, cfs_rq))
			return da;
		*a = BPF_CORE_READ(*a, parent);
		*b = BPF_CORE_READ(*b, parent);
		da--;
	}
	return -1;
}

static __always_inline void record(__u32 type, struct task_struct *lc,
				   struct task_struct *other, struct task_struct *prev,
				   __u32 prev_state)
{
	struct sched_entity *a = &lc->se, *b = &other->se, *curr;
	struct eevdf_event *e;
	struct cfs_rq *rq;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts = bpf_ktime_get_ns();
	e->since = wait_since;
	e->type = type;
	e->cpu = wait_cpu;
	e->other_pid = BPF_CORE_READ(other, pid);
	/* after the wake-up's check: whether it asked the running one to go */
	e->other_flags = BPF_CORE_READ(other, thread_info.flags);
	BPF_CORE_READ_STR_INTO(&e->other_comm, other, comm);
	if (prev) {
		e->prev_pid = BPF_CORE_READ(prev, pid);
		e->prev_state = prev_state;
	}
	e->has_vprot = bpf_core_field_exists(a->vprot);
	e->depth = meet(&a, &b);
	if (e->depth >= 0) {
		read_se(&e->lc, a);
		read_se(&e->other, b);
		rq = BPF_CORE_READ(a, cfs_rq);
		curr = BPF_CORE_READ(rq, curr);
		if (curr) {
			e->has_curr = 1;
			read_se(&e->curr, curr);
		}
		read_tree(e, rq);
		if (bpf_core_field_exists(((struct cfs_rq___new *)rq)->sum_w_vruntime)) {
			struct cfs_rq___new *n = (void *)rq;

			e->new_names = 1;
			e->sum_w = BPF_CORE_READ(n, sum_w_vruntime);
			e->sum_weight = BPF_CORE_READ(n, sum_weight);
			e->zero = BPF_CORE_READ(n, zero_vruntime);
		} else {
			struct cfs_rq___old *o = (void *)rq;

			e->sum_w = BPF_CORE_READ(o, avg_vruntime);
			e->sum_weight = BPF_CORE_READ(o, avg_load);
			e->zero = BPF_CORE_READ(o, min_vruntime);
		}
		if (bpf_core_field_exists(((struct cfs_rq___new *)rq)->nr_queued))
			e->nr_queued = BPF_CORE_READ((struct cfs_rq___new *)rq, nr_queued);
		else
			e->nr_queued = BPF_CORE_READ((struct cfs_rq___old *)rq, nr_running);
	}
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void woken(struct task_struct *p)
{
	struct task_struct *curr;

	if (p->pid != watch_pid)
		return;
	wait_since = bpf_ktime_get_ns();
	wait_cpu = BPF_CORE_READ(p, thread_info.cpu);
	wait_task = (__u64)p;
	/*
	 * The wake-up runs on the task's CPU (a queued wake-up) or on
	 * another, with the task's run queue locked: its curr either way.
	 */
	curr = BPF_CORE_READ(p, se.cfs_rq, rq, curr);
	if (curr && BPF_CORE_READ(curr, pid))
		record(EEVDF_WAKE, p, curr, NULL, 0);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(eevdf_wakeup, struct task_struct *p)
{
	woken(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(eevdf_wakeup_new, struct task_struct *p)
{
	woken(p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(eevdf_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	struct task_struct *lc;

	/* preempted: it waits again, from now */
	if (prev->pid == watch_pid && prev_state == 0) {
		wait_since = bpf_ktime_get_ns();
		wait_cpu = bpf_get_smp_processor_id();
		wait_task = (__u64)prev;
	}
	if (!wait_since)
		return 0;
	if (next->pid == watch_pid) {	/* here or where it was moved to */
		record(EEVDF_RUN, next, prev, prev, prev_state);
		wait_since = 0;
	} else if (next->pid && wait_cpu == bpf_get_smp_processor_id()) {
		lc = (struct task_struct *)wait_task;
		record(EEVDF_PICK, lc, next, prev, prev_state);
	}
	return 0;
}
