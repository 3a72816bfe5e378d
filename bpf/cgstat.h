/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The record bpf/cgstat.bpf.c writes for each cgroup, read by
 * userspace/lib/cgstat_bpf.c.  The includer provides __u32/__u64.
 */
#ifndef MOAT_BPF_CGSTAT_H
#define MOAT_BPF_CGSTAT_H

/*
 * Room for this many cgroups below a walk's root: the records map's
 * entries (64 bytes each, 1 MiB of kernel memory).  A walk that finds
 * more fails with -E2BIG, and moatd reads each group's files instead.
 */
#define MOAT_CGSTAT_MAX		16384

/* Which of a record's counters this cgroup has, in its hierarchy. */
#define MOAT_CGSTAT_USAGE	(1u << 0)	/* usage_ns: v2 */
#define MOAT_CGSTAT_THROTTLE	(1u << 1)	/* nr_throttled, throttled_ns */
#define MOAT_CGSTAT_MEMORY	(1u << 2)	/* memory_bytes: v2 */
#define MOAT_CGSTAT_PSI		(1u << 3)	/* the *_psi_sig: v2 */
/* A stall in force on a CPU: the pressure file's total moves now. */
#define MOAT_CGSTAT_CPU_STALLING	(1u << 4)
#define MOAT_CGSTAT_MEMORY_STALLING	(1u << 5)

struct moat_cgstat {
	__u64 id;		/* the cgroup's kernfs id: its directory's inode */
	__u64 usage_ns;		/* cpu.stat usage_usec */
	__u64 throttled_ns;	/* cpu.stat throttled_usec / throttled_time */
	__u64 memory_bytes;	/* memory.current */
	__u32 nr_throttled;	/* cpu.stat nr_throttled */
	__u32 has;		/* MOAT_CGSTAT_* */
	/*
	 * Equal in two walks, with no stall in force in the later one:
	 * cpu.pressure's (memory.pressure's) "some total=" did not move
	 * between them (cgstat.bpf.c: "Pressure").
	 */
	__u64 cpu_psi_sig;
	__u64 memory_psi_sig;
};

#endif /* MOAT_BPF_CGSTAT_H */
