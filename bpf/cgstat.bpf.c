// SPDX-License-Identifier: GPL-2.0-only
/*
 * cgstat: the counters moatd reads of every group, for every cgroup below
 * a root, in one read() instead of a pread() of a file or three per
 * group.  A cgroup iterator (iter/cgroup, v6.1), walked pre-order from
 * the cgroup its link was made on, puts one struct moat_cgstat per
 * cgroup where userspace reads it (below: "Where the records go").
 *
 * Each counter is the one the cgroup file shows, read where the file's
 * show function reads it (v6.1 .. v6.18):
 *
 *  - CPU usage, cgroup v2: cgrp->bstat.cputime.sum_exec_runtime, as
 *    cgroup_base_stat_cputime_show() gives cpu.stat's usage_usec, after
 *    the same rstat flush: once, at the walk's root, which flushes its
 *    whole subtree (cgroup_rstat_flush(), css_rstat_flush() since v6.16:
 *    both sleepable kfuncs, hence iter.s).  Not on v1: rstat keeps no
 *    base stats there (cgroup_account_cputime() charges the default
 *    hierarchy), and cpuacct.usage is a per-CPU counter, whose per-CPU
 *    addresses BPF gets only through a typed per-CPU ksym, which the
 *    verifier looks up in kallsyms; a kernel without
 *    CONFIG_KALLSYMS_ALL (this machine's 6.18) lists no data there.  The
 *    group's scheduling entities' run time came within 0.01% of
 *    cpuacct.usage, not to the ns: moatd reads cpuacct.usage on v1.
 *  - Throttling: the task_group's cfs_bandwidth nr_throttled and
 *    throttled_time, as cpu_cfs_stat_show() (v1) and
 *    cpu_extra_stat_show() (v2) give them.
 *  - Memory, v2: the memcg's page counter, as memory.current gives it.
 *  - Pressure, v2: not the totals cpu.pressure and memory.pressure show,
 *    but whether they can have moved since a given walk ("Pressure"
 *    below), so that userspace reads those files only where they can.
 *
 * A counter is in the record only where the cgroup has that controller's
 * css (MOAT_CGSTAT_*): v1 hierarchies each have their own, and on v2 a
 * controller is on only where its parent's subtree_control enables it.
 *
 * Where the records go.  Not into the seq_file the read() copies out:
 * bpf_seq_read() fills at most 8 pages a read(), and the cgroup iterator
 * cannot take a walk up again in the next read() (it dropped
 * cgroup_mutex between them; cgroup_iter_seq_start() then returns
 * -EOPNOTSUPP), so a walk would end at 682 records.  Each record goes to
 * its place in an array, in the order the walk visits the cgroups, and
 * nr_records counts them, those that found no room too; the read() only
 * drives the walk, and userspace takes the records in one batch lookup.
 * (Not by mapping the array: the kernel maps every page of it at mmap(),
 * and the whole 768 KiB counted in moatd's RSS.)
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "cgstat.h"

/* Set by userspace before load. */
const volatile bool v2;			/* a cgroup2 hierarchy's walk: memory */
const volatile __u64 page_size;
const volatile __u32 nr_cpus;		/* possible CPUs: 0 .. nr_cpus - 1 */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MOAT_CGSTAT_MAX);
	__type(key, __u32);
	__type(value, struct moat_cgstat);
} records SEC(".maps");

/*
 * This walk's records: zeroed by userspace before each read().  A walk
 * runs under cgroup_mutex, one at a time: no atomics.
 */
__u32 nr_records;

extern void cgroup_rstat_flush(struct cgroup *cgrp) __ksym __weak;
extern void css_rstat_flush(struct cgroup_subsys_state *css) __ksym __weak;

/* The css of controller @id in @cgrp's hierarchy; NULL where it has none. */
static __always_inline struct cgroup_subsys_state *css_of(struct cgroup *cgrp, int id)
{
	if (id < 0 || id >= CGROUP_SUBSYS_COUNT)
		return NULL;
	return cgrp->subsys[id];
}

enum flush { FLUSH_NONE, FLUSH_CSS, FLUSH_CGROUP };

/*
 * Pressure.  The "some total=" of cpu.pressure and memory.pressure is
 * psi_group.total[PSI_AVGS][s], which the kernel brings up to date only
 * when the file is read (or its averaging work runs, every 2 s), from
 * each CPU's struct psi_group_cpu: times[s], the ns state s lasted, added
 * at each change of the CPU's state for the group (record_times()), and
 * state_mask, the states in force since state_start.  The total moves
 * between two reads of the file only by the CPUs' times[s] moving, or by
 * s being in force on a CPU (get_recent_times(): collect_percpu_times()
 * adds each CPU's delta, weighted).  So where no CPU has s in force and
 * every times[s] is what it was in a walk before userspace last read the
 * file, the file would show the same total, to the us; where not, it may
 * not.  (times[] are u32 and wrap: stalls that add up to a multiple of
 * 2^32 ns, to the ns, between two walks would go unseen.)
 *
 * Each record carries, for s = CPU_SOME and MEM_SOME, a sum over the CPUs
 * of splitmix64(cpu, times[s]) (the same when every CPU's times[s] is;
 * otherwise the same with odds of 2^-64), and whether s is in force on a
 * CPU; userspace keeps the sum of the walk before its last read of the
 * file, and reads the file again only where either says it may differ.
 * At 500 groups in the 6.12 guest the two files a group were 11.5 of
 * 13.7 ms a period (Documentation/performance.rst).
 *
 * A CPU's struct is at group->pcpu + __per_cpu_offset[cpu], as
 * per_cpu_ptr() finds it.  bpf_per_cpu_ptr() takes only a pointer BTF
 * marks __percpu, which pcpu is not in kernels built by GCC (Debian's):
 * the offset is found as the distance from a per-CPU variable, the
 * runqueues, to its copy on that CPU, and the struct is read with
 * bpf_probe_read_kernel().  The verifier finds that variable's address in
 * kallsyms, which lists data with CONFIG_KALLSYMS_ALL only (Debian's
 * kernels have it, this machine's 6.18 not): where the program does not
 * load, userspace loads the one without it and reads the files.
 *
 * The read is not under the CPU's seqcount: a state that changes during
 * it can be missed.  That costs a period: the totals are cumulative, and
 * the change shows in the next walk, which reads the file again.
 */
extern const struct rq runqueues __ksym __weak;

struct psi_scan {
	__u64 pcpu;		/* group->pcpu, a per-CPU address */
	__u64 sig[2];		/* of CPU_SOME, of MEM_SOME */
	__u32 in_force;		/* MOAT_CGSTAT_*_STALLING */
	bool failed;
};

/* splitmix64's finalizer: a change of any bit moves about half of them */
static __always_inline __u64 mix(__u64 x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* bpf_loop()'s callback: CPU @cpu's part of the sums. */
static long psi_cpu(__u32 cpu, void *ctx)
{
	struct psi_scan *x = ctx;
	__u32 some[2] = {
		bpf_core_enum_value(enum psi_states, PSI_CPU_SOME),
		bpf_core_enum_value(enum psi_states, PSI_MEM_SOME),
	};
	const __u32 stalling[2] = { MOAT_CGSTAT_CPU_STALLING,
				    MOAT_CGSTAT_MEMORY_STALLING };
	const struct psi_group_cpu *c;
	const void *copy;
	__u32 mask, times[16], size, i;

	copy = bpf_per_cpu_ptr(&runqueues, cpu);
	if (!copy)
		goto fail;
	c = (const void *)(x->pcpu + ((unsigned long)copy - (unsigned long)&runqueues));
	size = bpf_core_field_size(c->times);
	if (size > sizeof(times) ||
	    bpf_core_read(&mask, sizeof(mask), &c->state_mask) ||
	    bpf_core_read(times, size, &c->times))
		goto fail;
	for (i = 0; i < 2; i++) {
		if (some[i] >= size / sizeof(times[0]))
			goto fail;
		x->sig[i] += mix((__u64)cpu << 32 | times[some[i] & 15]);
		if (mask & 1u << some[i])
			x->in_force |= stalling[i];
	}
	return 0;
fail:
	x->failed = true;
	return 1;
}

/* Pressure's part of @s (above), where this kernel lets it be read. */
static __always_inline void psi_sums(struct cgroup *cgrp, struct moat_cgstat *s)
{
	struct psi_scan x = {};
	struct psi_group *psi;

	if (!bpf_core_field_exists(cgrp->psi))
		return;			/* no CONFIG_PSI */
	psi = BPF_CORE_READ(cgrp, psi);
	if (!psi)			/* psi=0, or the root (psi_system) */
		return;
	if (bpf_core_field_exists(psi->enabled) && !BPF_CORE_READ(psi, enabled))
		return;			/* cgroup.pressure 0: no files */
	x.pcpu = (__u64)BPF_CORE_READ(psi, pcpu);
	if (!x.pcpu || !nr_cpus || bpf_loop(nr_cpus, psi_cpu, &x, 0) < 0 || x.failed)
		return;
	s->cpu_psi_sig = x.sig[0];
	s->memory_psi_sig = x.sig[1];
	s->has |= MOAT_CGSTAT_PSI | x.in_force;
}

/*
 * One cgroup's record.  @flush: the rstat flush kfunc this kernel has, as
 * userspace found in its BTF (a program per kfunc: v6.1 cannot test a
 * kfunc's presence in BPF, and one that calls a kfunc the kernel lacks
 * does not load); FLUSH_NONE on v1, and on a v2 kernel with neither,
 * where usage stays cpu.stat's to read.
 *
 * A css the cgroup points to is an untrusted pointer to the verifier, and
 * the controller's struct around it (container_of) is out of its bounds:
 * the controllers' fields are read with bpf_probe_read_kernel()
 * (BPF_CORE_READ).
 */
static __always_inline int dump(struct bpf_iter__cgroup *ctx, enum flush flush,
				bool psi)
{
	struct cgroup *cgrp = ctx->cgroup;
	struct cgroup_subsys_state *css;
	struct moat_cgstat s = {}, *slot;
	__u32 i;

	if (!cgrp)		/* the walk's end */
		return 0;
	i = nr_records++;
	slot = bpf_map_lookup_elem(&records, &i);
	if (!slot)		/* no room: userspace sees nr_records */
		return 0;
	s.id = cgrp->kn->id;
	if (flush != FLUSH_NONE) {
		if (ctx->meta->seq_num == 0) {
			if (flush == FLUSH_CSS)
				css_rstat_flush(&cgrp->self);
			else
				cgroup_rstat_flush(cgrp);
		}
		s.usage_ns = cgrp->bstat.cputime.sum_exec_runtime;
		s.has |= MOAT_CGSTAT_USAGE;
	}
	css = css_of(cgrp, bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id));
	if (css) {
		struct task_group *tg = container_of(css, struct task_group, css);

		s.nr_throttled = BPF_CORE_READ(tg, cfs_bandwidth.nr_throttled);
		s.throttled_ns = BPF_CORE_READ(tg, cfs_bandwidth.throttled_time);
		s.has |= MOAT_CGSTAT_THROTTLE;
	}
	css = v2 ? css_of(cgrp, bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id)) :
		   NULL;
	if (css) {
		struct mem_cgroup *memcg = container_of(css, struct mem_cgroup, css);

		s.memory_bytes = BPF_CORE_READ(memcg, memory.usage.counter) * page_size;
		s.has |= MOAT_CGSTAT_MEMORY;
	}
	if (psi)
		psi_sums(cgrp, &s);
	*slot = s;
	return 0;
}

/*
 * One program per rstat flush kfunc, and with or without pressure: one
 * that names a kfunc or a per-CPU variable the kernel cannot give it does
 * not load.
 */

/* v6.16 and later */
SEC("iter.s/cgroup")
int cgstat_css_flush_psi(struct bpf_iter__cgroup *ctx)
{
	return dump(ctx, FLUSH_CSS, true);
}

SEC("iter.s/cgroup")
int cgstat_css_flush(struct bpf_iter__cgroup *ctx)
{
	return dump(ctx, FLUSH_CSS, false);
}

/* v6.1 .. v6.15 */
SEC("iter.s/cgroup")
int cgstat_cgroup_flush_psi(struct bpf_iter__cgroup *ctx)
{
	return dump(ctx, FLUSH_CGROUP, true);
}

SEC("iter.s/cgroup")
int cgstat_cgroup_flush(struct bpf_iter__cgroup *ctx)
{
	return dump(ctx, FLUSH_CGROUP, false);
}

/* v1 */
SEC("iter/cgroup")
int cgstat_no_flush(struct bpf_iter__cgroup *ctx)
{
	return dump(ctx, FLUSH_NONE, false);
}

char LICENSE[] SEC("license") = "GPL";
