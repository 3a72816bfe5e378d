/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_SCHEDSTAT_H
#define MOAT_SCHEDSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "rqlat.h"	/* struct moat_rqlat_hist */

/*
 * Run-queue delay without BPF: the scheduler's per-task sched_info
 * (CONFIG_SCHED_INFO), read from /proc/<tid>/schedstat, one file per
 * thread of a cgroup (Documentation/scheduler/sched-stats.rst): the
 * time on the CPU, run_delay (the time spent runnable and waiting) and
 * pcount (the times it ran).  These are the counters the kernel's delay
 * accounting reports as cpu_delay_total and cpu_count over taskstats,
 * but they count with kernel.task_delayacct at its default of 0 (since
 * v5.14, sched_info is collected whenever CONFIG_SCHED_INFO is set), so
 * reading them writes nothing on the node, and needs no capability: the
 * files are world-readable.
 *
 * Each thread's pcount and run_delay grow by the waits it had; a
 * window's growth is put into the histogram as that many waits of their
 * mean length, so the percentile code downstream is the one the BPF
 * source feeds.  Coarser than BPF: one mean per thread and window, and no
 * blame (which cgroup held the CPU is not accounted).  A thread's start
 * time (/proc/<tid>/stat) tells a reused tid from the thread it had.
 */

struct moat_schedstat;

/* A thread's counters at the last read. */
struct moat_ts_task {
	__u32 tid;
	__u64 start;		/* starttime, in clock ticks: a reused tid */
	__u64 count;		/* pcount: waits */
	__u64 delay_ns;		/* run_delay */
};

/* One cgroup's threads at the last read, and what they added up to. */
struct moat_ts_group {
	struct moat_ts_task *tasks;	/* by tid */
	size_t n;
	struct moat_rqlat_hist cum;	/* since the first read */
};

/**
 * moat_schedstat_open() - check that this kernel keeps sched_info where
 * /proc (below the host root) shows it: moatd's own counters, which
 * cannot be zero in a running task.  Return: 0 or -errno (-ENOENT: no
 * /proc/<pid>/schedstat, CONFIG_SCHED_INFO is off; -ENODATA: the kernel
 * counts only with delay accounting or schedstats on, before v5.14),
 * with the reason logged.
 */
int moat_schedstat_open(struct moat_schedstat **out);

/** moat_schedstat_close() - free @ss (NULL is nothing). */
void moat_schedstat_close(struct moat_schedstat *ss);

/**
 * moat_schedstat_task() - @tid's run-queue counters and start time.
 * Return: 0, -ESRCH (gone), or -errno.
 */
int moat_schedstat_task(struct moat_schedstat *ss, pid_t tid,
			struct moat_ts_task *out);

/**
 * moat_schedstat_group() - read the threads of the cgroup at @dir
 * (@v2: cgroup.threads, else tasks), and add their waits since the last
 * read to @g->cum.  A thread seen for the first time only sets its
 * baseline; one that exited between the listing and the read is
 * skipped.  Return: 0 or -errno (-ENOENT: the cgroup is gone).
 */
int moat_schedstat_group(struct moat_schedstat *ss, const char *dir, bool v2,
			 struct moat_ts_group *g);

/**
 * moat_schedstat_parse() - the two lines' fields moat uses: @schedstat
 * ("<on cpu ns> <run_delay ns> <pcount>") into @out->delay_ns and
 * @out->count, and @stat (/proc/<tid>/stat) into @out->start.  The
 * command name in @stat may hold spaces and parentheses: fields are
 * counted from its last ')'.  Return: 0, or -EINVAL naming nothing (the
 * caller says which file).
 */
int moat_schedstat_parse(const char *schedstat, const char *stat,
			 struct moat_ts_task *out);

/** moat_ts_group_free() - free @g's thread table. */
void moat_ts_group_free(struct moat_ts_group *g);

/** moat_ts_add_waits() - @n waits of @total_ns in all into @h. */
void moat_ts_add_waits(struct moat_rqlat_hist *h, __u64 n, __u64 total_ns);

#endif /* MOAT_SCHEDSTAT_H */
