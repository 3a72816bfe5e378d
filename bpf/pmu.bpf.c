// SPDX-License-Identifier: GPL-2.0-only
/*
 * pmu: hardware (or software) counters per cgroup, for CPI.
 *
 * Userspace opens one counting perf event per CPU for each configured
 * event (cycles, instructions, an LLC-miss event; cpu-clock stands in
 * where there is no PMU) and puts the fds in ev0..ev2.  At every context
 * switch this program reads this CPU's counters with
 * bpf_perf_event_read_value() and charges their growth since the last
 * switch to the cgroup of the task that was running (prev), in the same
 * cgroup id as rqlat's.  When the kernel multiplexed a counter (running <
 * enabled) the growth is scaled by enabled / running, and counted.  The
 * idle task's slices are not charged.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "core_fixes.bpf.h"
#include "pmu.h"

#define EEXIST		17

/* How many of ev0..ev2 userspace filled; set before load. */
const volatile __u32 nr_events = 0;

/* A full sums map is counted here: a cgroup's slices not charged. */
__u64 pmu_drops;

#define EVENT_ARRAY(name)					\
	struct {						\
		__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);	\
		__uint(key_size, sizeof(int));			\
		__uint(value_size, sizeof(__u32));		\
	} name SEC(".maps")

EVENT_ARRAY(ev0);
EVENT_ARRAY(ev1);
EVENT_ARRAY(ev2);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct moat_pmu_last);
} last SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MOAT_PMU_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct moat_pmu_sum);
} sums SEC(".maps");

static const struct moat_pmu_sum zero_sum;

/* @c * @e / @r without overflowing 64 bits for long slices. */
static __always_inline __u64 scale(__u64 c, __u64 e, __u64 r)
{
	return c / r * e + c % r * e / r;
}

/*
 * Read event @i of this CPU; into *@grow the scaled growth since the last
 * switch.  False: no reading, or the first one (nothing to compare).
 */
static __always_inline bool read_event(void *map, __u32 i,
				       struct moat_pmu_last *l, __u64 *grow,
				       bool *scaled)
{
	struct bpf_perf_event_value v;
	__u64 dc, de, dr;
	bool first;

	if (i >= MOAT_PMU_EVENTS ||
	    bpf_perf_event_read_value(map, BPF_F_CURRENT_CPU, &v, sizeof(v)))
		return false;
	first = !l->enabled[i];
	dc = v.counter - l->counter[i];
	de = v.enabled - l->enabled[i];
	dr = v.running - l->running[i];
	l->counter[i] = v.counter;
	l->enabled[i] = v.enabled;
	l->running[i] = v.running;
	if (first || !dr)
		return false;
	*scaled = dr < de;
	*grow = *scaled ? scale(dc, de, dr) : dc;
	return true;
}

static __always_inline void *sum_of(__u64 cgid)
{
	void *s = bpf_map_lookup_elem(&sums, &cgid);
	int err;	/* v6.1 zero-extends the helper's int: compare 32 bits */

	if (s)
		return s;
	err = bpf_map_update_elem(&sums, &cgid, &zero_sum, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		__sync_fetch_and_add(&pmu_drops, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&sums, &cgid);
}

static __always_inline void charge(struct moat_pmu_sum *s, __u32 i, __u64 grow,
				   bool scaled)
{
	if (i >= MOAT_PMU_EVENTS)
		return;
	s->count[i] += grow;
	s->scaled[i] += scaled;
}

static __always_inline int on_switch(struct task_struct *prev, bool btf)
{
	__u64 grow[MOAT_PMU_EVENTS] = {}, cgid;
	bool ok[MOAT_PMU_EVENTS] = {}, scaled[MOAT_PMU_EVENTS] = {};
	struct moat_pmu_last *l;
	struct moat_pmu_sum *s;
	__u32 zero = 0;

	l = bpf_map_lookup_elem(&last, &zero);
	if (!l)
		return 0;
	if (nr_events > 0)
		ok[0] = read_event(&ev0, 0, l, &grow[0], &scaled[0]);
	if (nr_events > 1)
		ok[1] = read_event(&ev1, 1, l, &grow[1], &scaled[1]);
	if (nr_events > 2)
		ok[2] = read_event(&ev2, 2, l, &grow[2], &scaled[2]);
	if (!moat_task_pid(prev, btf) || !(ok[0] || ok[1] || ok[2]))
		return 0;	/* the idle task, or nothing read */
	cgid = moat_task_cpu_cgroup_id(prev, btf);
	s = sum_of(cgid);
	if (!s)
		return 0;
	/* seq_end first, seq last (bpf/pmu.h); the compiler keeps the order */
	s->seq_end = s->seq + 1;
	asm volatile("" ::: "memory");
	if (ok[0])
		charge(s, 0, grow[0], scaled[0]);
	if (ok[1])
		charge(s, 1, grow[1], scaled[1]);
	if (ok[2])
		charge(s, 2, grow[2], scaled[2]);
	s->charges++;
	asm volatile("" ::: "memory");
	s->seq = s->seq_end;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(pmu_switch_btf, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(prev, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(pmu_switch_raw, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(prev, false);
}

char LICENSE[] SEC("license") = "GPL";
