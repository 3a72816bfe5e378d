/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Types shared by bpf/rqlat.bpf.c and the userspace that reads its maps.
 *
 * The includer provides __u32/__u64: vmlinux.h on the BPF side,
 * <linux/types.h> in userspace.
 */
#ifndef MOAT_BPF_RQLAT_H
#define MOAT_BPF_RQLAT_H

/*
 * Slot i of the wait histogram counts waits w with 2^i <= w < 2^(i+1) ns
 * (slot 0 also takes w = 0 and w = 1).  The last slot is open-ended.
 * 36 slots reach 2^35 ns = 34 s, which covers the 1 us .. 10 s range the
 * controller needs with room to spare.
 */
#define MOAT_HIST_SLOTS 36

struct moat_rqlat_hist {
	__u64 slots[MOAT_HIST_SLOTS];
	__u64 count;
	__u64 sum_ns;
};

/*
 * Value of the per-CPU hists map: the histogram, and this CPU's cached
 * answer to "is this cgroup watched?", valid while watch_gen equals the
 * program's global of that name (userspace bumps it after changing the
 * watched map).  The cache saves a hash lookup on every context switch.
 */
struct moat_rqlat_cg {
	struct moat_rqlat_hist hist;
	__u32 watch_gen;
	__u32 watched;
};

/* Key of the blame map: a watched cgroup and the cgroup that held the CPU. */
struct moat_blame_key {
	__u64 victim;
	__u64 culprit;
};

struct moat_blame_val {
	__u64 wait_ns;
	__u64 count;
};

/*
 * Culprit id for waits that ended with the CPU coming out of idle: nobody
 * held the CPU, the wait is wake-up latency (IPI, idle exit), not
 * contention.  No cgroup has id 0: kernfs ids start at 1.
 */
#define MOAT_CULPRIT_IDLE 0

/*
 * Culprit id for waits that began while CFS bandwidth throttled the
 * waiter's own hierarchy (its cgroup or one above it out of quota): its
 * own limit's, nobody else's.  No cgroup has this id: kernfs ids are a
 * 32-bit generation over a 32-bit inode number, neither all ones.
 */
#define MOAT_CULPRIT_LIMIT (~0ULL)

/* Why an event was not recorded; indexes rqlat_drops[] in .bss. */
enum moat_rqlat_drop {
	MOAT_DROP_START,	/* runnable map full: a task's waits not measured */
	MOAT_DROP_HIST,		/* histogram map full: a cgroup not recorded */
	MOAT_DROP_BLAME,	/* blame map full: a wait not charged */
	MOAT_DROP_NR,
};

/* Default map sizes; userspace may change them before load. */
#define MOAT_MAX_TASKS		65536	/* live tasks that have waited */
/*
 * The same hash where the tp_btf programs keep starts in task storage
 * and the hash only holds a task whose storage could not be made: a
 * preallocated hash is kernel memory charged to moatd's cgroup, 5 MiB at
 * 65536 entries, 320 KiB at this many.
 */
#define MOAT_MAX_TASKS_FALLBACK	4096
#define MOAT_MAX_CGROUPS	4096
#define MOAT_MAX_WATCHED	1024
#define MOAT_MAX_BLAME		16384

#endif /* MOAT_BPF_RQLAT_H */
