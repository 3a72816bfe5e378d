/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_ACTUATOR_H
#define MOAT_ACTUATOR_H

#include <stdbool.h>
#include "journal.h"

/*
 * Actuators: each turns one control value, in one unit, into the cgroup
 * files that hold it on cgroup v2 or v1, reads it back, and puts back the
 * original through the journal.  Every write goes through
 * moat_kfile_write(), so the original is on disk before the first one.
 *
 *   cpu_max      CPUs; INFINITY: no limit.  v2 cpu.max "<quota> <period>"
 *                or "max <period>"; v1 cpu.cfs_quota_us (-1: none) over
 *                cpu.cfs_period_us, which moat never changes.
 *   cpu_weight   cgroup v2 weight, 1..10000.  v1 cpu.shares, converted
 *                as kubelet does: shares = weight * 1024 / 100.  A
 *                weight under the kernel's least (v2 1, v1 2 shares) and
 *                over 0 is the least.
 *   cpu_idle     0 or 1: SCHED_IDLE for the whole group (v5.15+, v1 and
 *                v2 "cpu.idle").  The kernel resets the weight on each
 *                write, so the weight is journaled and restored with it.
 *   cpu_prio     the two above as one scale: a weight as cpu_weight, or 0
 *                for cpu.idle = 1.  Needs cpu.idle (v5.15+).  A weight
 *                clears cpu.idle before it writes the weight, and a restore
 *                puts cpu.idle back first: while a group is idle the
 *                kernel refuses writes to its weight.
 *   cpu_burst    seconds of CPU time a group may carry over from periods
 *                it did not use its quota in (v5.14+): v2 cpu.max.burst,
 *                v1 cpu.cfs_burst_us, in us.  At most the quota.
 *   memory_high  bytes; INFINITY: "max".  v2 only: v1 has no memory.high,
 *                and its memory.limit_in_bytes would OOM-kill where
 *                memory.high reclaims, so moat does not touch it.
 *
 * A target is a cgroup directory, in the hierarchy of the actuator's
 * controller, and whether that hierarchy is cgroup v2.
 */
struct moat_actuator {
	const char *name;
	const char *unit;
	/*
	 * The files it may write: [0] on v1, [1] on v2; NULL-terminated, in
	 * the order a restore puts them back.
	 */
	const char *files[2][3];
	int (*read)(const char *dir, bool v2, double *val);
	int (*apply)(struct moat_journal *j, const char *dir, bool v2,
		     double val);
};

extern const struct moat_actuator moat_act_cpu_max;
extern const struct moat_actuator moat_act_cpu_weight;
extern const struct moat_actuator moat_act_cpu_idle;
extern const struct moat_actuator moat_act_cpu_prio;
extern const struct moat_actuator moat_act_memory_high;
extern const struct moat_actuator moat_act_cpu_burst;

/**
 * moat_cpu_max_get() - the CFS quota and period at @dir, in us; a quota
 * of -1 is none.  Return: 0, -EBADMSG, or the read's -errno.
 */
int moat_cpu_max_get(const char *dir, bool v2, long long *quota,
		     long long *period);

/**
 * moat_act_supported() - whether @a has a file at @dir on this kernel.
 */
bool moat_act_supported(const struct moat_actuator *a, const char *dir,
			bool v2);

/**
 * moat_act_restore() - put back the originals of @a's files at @dir.
 * Return: as moat_journal_restore().
 */
int moat_act_restore(const struct moat_actuator *a, struct moat_journal *j,
		     const char *dir, bool v2);

#endif /* MOAT_ACTUATOR_H */
