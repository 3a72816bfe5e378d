// SPDX-License-Identifier: GPL-2.0-only
/*
 * rqlat: run-queue latency per cgroup, and who caused it.
 *
 * What is measured.  A task's run-queue wait is the time from the moment it
 * becomes runnable to the sched_switch that gives it a CPU.  It becomes
 * runnable at sched_wakeup / sched_wakeup_new, or at a sched_switch that
 * takes the CPU away while it can still run (preemption, or a yield).
 * The start is on bpf_ktime_get_ns()'s clock (below), kept with the
 * task; the switch-in reads it and zeroes it, in place through the
 * pointer.
 *
 * The clocks.  Both ends mostly read the runqueue's clock, not
 * bpf_ktime_get_ns(), the largest single cost of the hot path.  The
 * scheduler has just updated rq->clock for the enqueue at a wake-up
 * (update_rq_clock() in ttwu_queue(), ttwu_runnable(),
 * sched_ttwu_pending() and wake_up_new_task(), before the tracepoint),
 * and at the start of __schedule() for a switch: rq->clock is then that
 * moment on sched_clock_cpu()'s clock.  A time is rq->clock plus how far
 * the two clocks are apart on that runqueue's CPU.  Every 16th switch on
 * a CPU samples that, bpf_ktime_get_ns() - rq->clock, and the least
 * sample is kept (rq->clock at a switch is only ever late: by the pick
 * since __schedule() updated it, and by much more where the update was
 * skipped, below), let to grow by 1/2048 of the time since it was taken,
 * more than the clocks' rates differ.  A switch writes only a sample
 * below that, so the line the wake-ups of other CPUs read stays shared.
 * Where the CPU kept none in the last 10 ms (idle), bpf_ktime_get_ns()
 * is read and sampled; the raw_tp programs, and kernels without
 * se.cfs_rq (CONFIG_FAIR_GROUP_SCHED), read it at every event.
 *
 * The switch's clock.  __schedule() skips its update where a wake-up
 * that will preempt asked it to (rq_clock_skip_update(): the enqueue has
 * just updated it), and nothing at the tracepoint says so (6.6+ resets
 * the flags before the pick).  A stale clock would read the wait of the
 * task that preempts as zero.  So a switch reads bpf_ktime_get_ns()
 * where the update may have been skipped: a preemption, a CPU coming out
 * of idle, and a switch whose runqueue time is no later than next's
 * start (the clock not updated since next's wake-up).  What is left: a
 * skipped update after another (a second wake-up onto the CPU) reads
 * the switch that much early, and any switch reads the time
 * __schedule() began, early by how much longer its pick took than the
 * quickest; tools/bench/overhead.sh prices the clocks and
 * Documentation/rqlat.rst gives their error.
 *
 * Where the start is kept.  In the task's own local storage (the starts
 * map) where the task has it: the lookup is a load from the task and one
 * from its cache slot, no hash.  Creating it allocates, which is not
 * safe under the runqueue lock the hot path runs in on every kernel
 * (before the local storage used bpf_mem_alloc, kmalloc(GFP_ATOMIC) could
 * wake kswapd and take a runqueue lock): so it is created outside it, for
 * every task at sched_process_fork and, once at start, for the tasks that
 * exist (the seed_starts iterator, which also moves a start already in the
 * hash).  A task without it (the storage's own lock busy in a nested
 * program, or a raw_tp program, which has no trusted task pointer) falls
 * back to the runnable hash under its pid: preallocated, written in place
 * so the hot path never takes a bucket lock, an entry deleted at
 * sched_process_exit.
 *
 * Why not the scheduler's own stamp, task->sched_info.last_queued?  It
 * would save the wake-up hooks, but the natural "now" to subtract it from,
 * rq->clock, is not updated by the __schedule() that follows a wake-up
 * preemption (rq_clock_skip_update()), so exactly the wait of a woken
 * task that preempts a hog would read as zero.  tools/bench/stamp.bpf.c keeps
 * that design as a probe that tools/bench/ prices and compares with this.
 *
 * How it is keyed.  Each wait is recorded for the cgroup that owns the
 * task's cpu controller: task->cgroups->subsys[cpu_cgrp_id]->cgroup, whose
 * kernfs id is the cgroup id userspace sees as the directory's file
 * handle.  On cgroup v2 that is the nearest ancestor with +cpu in its
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
 * MOAT_CULPRIT_IDLE: that is wake-up latency, not contention.  A wait
 * that began with the waiter's own hierarchy throttled (CFS bandwidth:
 * its cgroup or one above it out of quota, at the switch-out or the
 * wake-up that started it) is charged to MOAT_CULPRIT_LIMIT, whoever
 * ran meanwhile: the CPU was not denied it by them but by its limit.
 * One that began before the throttle is charged as any other.
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
#include "hist_slot.bpf.h"

#define TASK_RUNNING	0
#define EEXIST		17

/* Bumped by userspace after each change to the watched map. */
__u32 watch_gen;

#ifdef MOAT_BENCH_PARTS
/*
 * tools/bench/rqlat_parts.bpf.c: where the hot path stops (enum
 * moat_rqlat_part), the benchmark's choice before load.  CUT() is false
 * in moat's own object, which has no cut point.
 */
#include "rqlat_parts.h"
const volatile __u32 bench_parts = MOAT_PART_ALL;
#define CUT(part)	(bench_parts == (part))
#else
#define CUT(part)	false
#endif

/* Drops are rare; a shared counter with an atomic add is cheap enough. */
__u64 rqlat_drops[MOAT_DROP_NR];
/* Starts a tp_btf program kept in the hash: a task without its storage. */
__u64 rqlat_hash_marks;

/* When each task became runnable, by pid; 0 while it runs or sleeps. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MOAT_MAX_TASKS);
	__type(key, __u32);
	__type(value, __u64);
} runnable SEC(".maps");

/* The same, in the task's local storage: see "Where the start is kept". */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MOAT_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct moat_rqlat_cg);
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

/*
 * The task each CPU switched to last and its cgroup, computed for its
 * wait at that switch: at the next switch that task is prev, and blame
 * needs its cgroup.  pid 0 where it was not computed (no wait was
 * recorded).  A task moved to another cgroup while it runs has that
 * slice blamed on the one it started it in.
 */
struct moat_running {
	__u64 cgid;
	__u32 pid;
	__u32 switches;	/* counts them: the clock is sampled at every 16th */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct moat_running);
} running SEC(".maps");

/*
 * Per CPU, indexed by its number (the array sized to the possible CPUs
 * by userspace), read by the wake-ups onto it from any CPU: the least
 * sample lately of bpf_ktime_get_ns() - rq->clock, and when it was
 * taken (0: never).  Written only when a sample is lower (see "The
 * wake-up's clock"); one cache line each.
 */
struct moat_clock {
	__u64 off;
	__u64 at;
	__u64 pad[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct moat_clock);
} clocks SEC(".maps");

#define CLOCK_FRESH_NS	10000000ULL	/* an offset older than this is not used */
#define CLOCK_SLEW_SHIFT 11		/* the offset grows by 1/2048 of the time */
#define CLOCK_SAMPLE_EVERY 16		/* switches a CPU samples its clocks at */

/* A new entry's watch_gen never matches: its first event looks it up. */
static const struct moat_rqlat_cg new_cg = { .watch_gen = ~0U };
static const struct moat_blame_val zero_blame;

static __always_inline void count_drop(enum moat_rqlat_drop why)
{
	__sync_fetch_and_add(&rqlat_drops[why], 1);
}

/*
 * Insert-then-lookup: a per-CPU hash update from BPF sets this CPU's copy
 * and zeroes the others, so a racing insert on another CPU loses nothing.
 */
static __always_inline void *lookup_or_init(void *map, const void *key,
					    const void *init,
					    enum moat_rqlat_drop why)
{
	void *v = bpf_map_lookup_elem(map, key);
	int err;	/* v6.1 zero-extends the helper's int: compare 32 bits */

	if (v)
		return v;
	err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_drop(why);
		return NULL;
	}
	return bpf_map_lookup_elem(map, key);
}

static __always_inline bool is_watched(struct moat_rqlat_cg *cg, __u64 cgid)
{
	__u32 gen = watch_gen;

	if (cg->watch_gen != gen) {
		cg->watched = bpf_map_lookup_elem(&watched, &cgid) != NULL;
		cg->watch_gen = gen;
	}
	return cg->watched;
}

static __always_inline void record_wait(struct task_struct *next,
					struct task_struct *prev,
					__u32 next_pid, __u32 prev_pid,
					struct moat_running *run, __u64 wait,
					bool limit, bool btf)
{
	__u64 cgid = moat_task_cpu_cgroup_id(next, btf);
	__u32 slot = hist_slot(wait);
	struct moat_rqlat_cg *cg;
	struct moat_blame_key bk;
	struct moat_blame_val *bv;
	__u64 culprit = 0;
	bool ran = false;

	barrier_var(cgid);	/* computed here, not sunk past the next test */
	if (CUT(MOAT_PART_CGROUP))
		return;
	if (run) {
		ran = run->pid == prev_pid;
		culprit = run->cgid;
		run->pid = next_pid;
		run->cgid = cgid;
	}
	cg = lookup_or_init(&hists, &cgid, &new_cg, MOAT_DROP_HIST);
	if (!cg)
		return;
	/*
	 * hist_slot() clamps, but clang may test a copy of the register it
	 * then indexes with, and the v6.1 verifier loses the bound on the
	 * copy: pin the value, then test the one that is used.
	 */
	barrier_var(slot);
	if (slot < MOAT_HIST_SLOTS)
		cg->hist.slots[slot]++;
	cg->hist.count++;
	cg->hist.sum_ns += wait;

	if (CUT(MOAT_PART_HIST) || !is_watched(cg, cgid))
		return;
	bk.victim = cgid;
	bk.culprit = limit ? MOAT_CULPRIT_LIMIT :
		     !prev_pid ? MOAT_CULPRIT_IDLE :
		     ran ? culprit : moat_task_cpu_cgroup_id(prev, btf);
	bv = lookup_or_init(&blame, &bk, &zero_blame, MOAT_DROP_BLAME);
	if (bv) {
		bv->wait_ns += wait;
		bv->count++;
	}
}

/* The runqueue @t is queued on, or NULL where the kernel cannot say. */
static __always_inline struct rq *task_rq_of(struct task_struct *t, bool btf)
{
	struct rq *rq = NULL;

	if (!btf || !bpf_core_field_exists(t->se.cfs_rq) ||
	    !bpf_core_field_exists(rq->cpu))
		return NULL;
	return t->se.cfs_rq->rq;
}

/*
 * On @rq's CPU at @now: keep rq->clock's offset if it is below the last
 * one kept, grown by 1/2048 of the time since.
 */
static __always_inline void sample_clock(struct moat_clock *c, struct rq *rq,
					 __u64 now)
{
	__u64 off = now - rq->clock, at = c->at;

	/* signed: the offset is negative where sched_clock is ahead */
	if (at && (__s64)(off - c->off) >= (__s64)((now - at) >> CLOCK_SLEW_SHIFT))
		return;
	c->off = off;
	c->at = now;
}

/* The clocks entry of @cpu, whose runqueue is @rq; NULL without one. */
static __always_inline struct moat_clock *clock_of(struct rq *rq, __u32 cpu)
{
	return rq ? bpf_map_lookup_elem(&clocks, &cpu) : NULL;
}

/* When @t, woken now, was queued, on bpf_ktime_get_ns()'s clock. */
static __always_inline __u64 wakeup_time(struct task_struct *t, bool btf)
{
	struct rq *rq = task_rq_of(t, btf);
	struct moat_clock *c;
	__u64 at, clock, now;

	c = rq ? clock_of(rq, rq->cpu) : NULL;
	if (!c)
		return bpf_ktime_get_ns();
	clock = rq->clock;
	at = c->at;
	/* racy against the CPU's own switch: at most the older sample */
	if (at && (__s64)(clock + c->off - at) < (__s64)CLOCK_FRESH_NS)
		return clock + c->off;
	now = bpf_ktime_get_ns();
	sample_clock(c, rq, now);
	return now;
}

/* Where @t's start is kept: its local storage, or NULL. */
static __always_inline __u64 *task_start(struct task_struct *t, bool btf)
{
	return btf ? bpf_task_storage_get(&starts, t, 0, 0) : NULL;
}

/*
 * @t (@pid) became runnable at @now; @earliest keeps an earlier start.
 * A start's lowest bit says whether the wait began with @t's hierarchy
 * throttled (START_LIMIT): a wait at its own limit.
 */
#define START_LIMIT	1ULL
static __always_inline void mark_runnable(struct task_struct *t, __u32 pid,
					  __u64 now, bool earliest, bool btf)
{
	__u64 *since;

	if (!pid)	/* the idle tasks all have pid 0 and never wait */
		return;
	now = (now & ~START_LIMIT) | (moat_task_throttled(t, btf) ? START_LIMIT : 0);
	since = task_start(t, btf);
	if (!since) {
		if (btf)
			__sync_fetch_and_add(&rqlat_hash_marks, 1);
		since = bpf_map_lookup_elem(&runnable, &pid);
	}
	if (since) {
		if (!earliest || !*since)
			*since = now;
		return;
	}
	if (bpf_map_update_elem(&runnable, &pid, &now, BPF_NOEXIST))
		count_drop(MOAT_DROP_START);
}

/*
 * The switch's time, on bpf_ktime_get_ns()'s clock: rq->clock, which
 * __schedule() has just updated, plus this CPU's offset, where that is
 * fresh (see "The switch's clock"); otherwise bpf_ktime_get_ns(), which
 * samples the offset, as does every 16th switch.  @skipped: the update
 * may have been skipped (a preemption, or the CPU out of idle).
 * *@exact: read from bpf_ktime_get_ns().
 */
static __always_inline __u64 switch_time(struct task_struct *t, struct moat_running *run,
					 bool skipped, bool btf, bool *exact)
{
	struct rq *rq = task_rq_of(t, btf);
	struct moat_clock *c = clock_of(rq, bpf_get_smp_processor_id());
	__u64 now, clock;

	*exact = true;
	if (!c)
		return bpf_ktime_get_ns();
	if (!skipped && run && (++run->switches & (CLOCK_SAMPLE_EVERY - 1))) {
		clock = rq->clock;
		/* racy against a wake-up's sample: at most the older one */
		if (c->at && (__s64)(clock + c->off - c->at) < (__s64)CLOCK_FRESH_NS) {
			*exact = false;
			return clock + c->off;
		}
	}
	now = bpf_ktime_get_ns();
	sample_clock(c, rq, now);
	return now;
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next, bool btf)
{
	__u32 prev_pid = moat_task_pid(prev, btf);
	__u32 next_pid = moat_task_pid(next, btf);
	__u64 *since = NULL, wait, start = 0, now;
	struct moat_running *run;
	__u32 zero = 0;
	bool exact;

	barrier_var(prev_pid);	/* read here, as the part says */
	barrier_var(next_pid);
	run = bpf_map_lookup_elem(&running, &zero);
	now = switch_time(next_pid ? next : prev, run, preempt || !prev_pid, btf, &exact);
	if (next_pid) {
		since = task_start(next, btf);
		if (!since)
			since = bpf_map_lookup_elem(&runnable, &next_pid);
		start = since ? *since : 0;
		/*
		 * No later than next's start: the clock was not updated since
		 * its wake-up, a skipped update (a wake-up preemption).
		 */
		if (!exact && start && now <= (start & ~START_LIMIT))
			now = bpf_ktime_get_ns();
	}
	if (CUT(MOAT_PART_CLOCK))
		return 0;
	/*
	 * __schedule() dequeues prev only when it was not preempted and its
	 * state is not TASK_RUNNING; otherwise it stays queued and waits.
	 */
	if (preempt || moat_task_state(prev, btf) == TASK_RUNNING)
		mark_runnable(prev, prev_pid, now, false, btf);
	if (CUT(MOAT_PART_MARK) || !next_pid)
		return 0;
	if (!start) {
		if (run)	/* next's cgroup is not known */
			run->pid = 0;
		return 0;
	}
	*since = 0;
	wait = now > (start & ~START_LIMIT) ? now - (start & ~START_LIMIT) : 0;
	if (CUT(MOAT_PART_WAIT))
		return 0;
	record_wait(next, prev, next_pid, prev_pid, run, wait, start & START_LIMIT, btf);
	return 0;
}

/*
 * A wake-up of a task that is still on a CPU (it set a sleeping state but
 * had not yet switched out) starts no wait: it never left.  Otherwise keep
 * the earliest start: a queued task can be woken again.
 */
static __always_inline int on_wakeup(struct task_struct *p, bool btf)
{
	__u64 now;
	__u32 pid;

	if (moat_task_on_cpu(p, btf))
		return 0;
	now = wakeup_time(p, btf);
	pid = moat_task_pid(p, btf);
	barrier_var(pid);
	if (CUT(MOAT_PART_CLOCK))
		return 0;
	mark_runnable(p, pid, now, true, btf);
	return 0;
}

static __always_inline int on_exit(struct task_struct *p, bool btf)
{
	__u32 pid = moat_task_pid(p, btf);

	bpf_map_delete_elem(&runnable, &pid);
	return 0;
}

/*
 * A new task's start, created outside the runqueue lock: kernel_clone().
 * Named apart from cgroup_events' program on the same tracepoint: the
 * kernel keeps 15 characters of a name, where both would read
 * "sched_process_f".
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(rqlat_fork, struct task_struct *parent,
	     struct task_struct *child)
{
	bpf_task_storage_get(&starts, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	return 0;
}

/*
 * Run once by userspace after attaching: a start for each task that was
 * there before, taking over a start the hash already has for it.
 */
SEC("iter/task")
int seed_starts(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	__u64 *since, *old;
	__u32 pid;

	if (!t || !(pid = t->pid))
		return 0;
	since = bpf_task_storage_get(&starts, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	old = bpf_map_lookup_elem(&runnable, &pid);
	if (since && old) {
		if (!*since)
			*since = *old;
		bpf_map_delete_elem(&runnable, &pid);
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(preempt, prev, next, true);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct *p)
{
	return on_wakeup(p, true);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_btf, struct task_struct *p)
{
	return on_wakeup(p, true);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit_btf, struct task_struct *p)
{
	return on_exit(p, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return on_switch(preempt, prev, next, false);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup_raw, struct task_struct *p)
{
	return on_wakeup(p, false);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_raw, struct task_struct *p)
{
	return on_wakeup(p, false);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_process_exit_raw, struct task_struct *p)
{
	return on_exit(p, false);
}

char LICENSE[] SEC("license") = "GPL";
