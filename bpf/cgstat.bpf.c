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
static __always_inline int dump(struct bpf_iter__cgroup *ctx, enum flush flush)
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
	*slot = s;
	return 0;
}

/* v6.16 and later */
SEC("iter.s/cgroup")
int cgstat_css_flush(struct bpf_iter__cgroup *ctx)
{
	return dump(ctx, FLUSH_CSS);
}

/* v6.1 .. v6.15 */
SEC("iter.s/cgroup")
int cgstat_cgroup_flush(struct bpf_iter__cgroup *ctx)
{
	return dump(ctx, FLUSH_CGROUP);
}

SEC("iter/cgroup")
int cgstat_no_flush(struct bpf_iter__cgroup *ctx)
{
	return dump(ctx, FLUSH_NONE);
}

char LICENSE[] SEC("license") = "GPL";
