/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_TASKSTATS_H
#define MOAT_TASKSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "journal.h"
#include "rqlat.h"	/* struct moat_rqlat_hist */

/*
 * Run-queue delay without BPF: the kernel's per-task delay accounting
 * (Documentation/accounting/delay-accounting.rst, taskstats.rst), read
 * over generic netlink with libnl-genl, one TASKSTATS_CMD_GET per thread
 * of a cgroup.  Each thread's cpu_count and cpu_delay_total grow by the
 * waits it had; a window's growth is put into the histogram as that many
 * waits of their mean length, so the percentile code downstream is the
 * one the BPF source feeds.  Coarser than BPF: one mean per thread and
 * window, and no blame (which cgroup held the CPU is not accounted).
 *
 * The kernel counts only while kernel.task_delayacct is 1 (its default
 * is 0 since v5.14): moat_taskstats_open() sets it and says what it was,
 * moat_taskstats_close() puts that back.
 */

struct moat_taskstats;

/* A thread's counters at the last read. */
struct moat_ts_task {
	__u32 tid;
	__u64 btime;		/* start, to tell a reused tid */
	__u64 count;		/* cpu_count: waits */
	__u64 delay_ns;		/* cpu_delay_total */
};

/* One cgroup's threads at the last read, and what they added up to. */
struct moat_ts_group {
	struct moat_ts_task *tasks;	/* by tid */
	size_t n;
	struct moat_rqlat_hist cum;	/* since the first read */
};

/**
 * moat_taskstats_open() - connect to the TASKSTATS family and turn on
 * kernel.task_delayacct through @journal, which records its original
 * first (and a crash leaves to the next start's replay).  Return: 0 or
 * -errno (-ENOENT: no taskstats in this kernel), with the reason logged.
 */
int moat_taskstats_open(struct moat_journal *journal,
			struct moat_taskstats **out);

/** moat_taskstats_close() - put kernel.task_delayacct back; close. */
void moat_taskstats_close(struct moat_taskstats *ts);

/**
 * moat_taskstats_task() - @tid's CPU delay counters.
 * Return: 0, -ESRCH (gone), or -errno.
 */
int moat_taskstats_task(struct moat_taskstats *ts, pid_t tid,
			struct moat_ts_task *out);

/**
 * moat_taskstats_group() - read the threads of the cgroup at @dir
 * (@v2: cgroup.threads, else tasks), and add their waits since the last
 * read to @g->cum.  A thread seen for the first time only sets its
 * baseline; one that exited between the listing and the query is
 * skipped.  Return: 0 or -errno (-ENOENT: the cgroup is gone).
 */
int moat_taskstats_group(struct moat_taskstats *ts, const char *dir, bool v2,
			 struct moat_ts_group *g);

/** moat_ts_group_free() - free @g's thread table. */
void moat_ts_group_free(struct moat_ts_group *g);

/** moat_ts_add_waits() - @n waits of @total_ns in all into @h. */
void moat_ts_add_waits(struct moat_rqlat_hist *h, __u64 n, __u64 total_ns);

#endif /* MOAT_TASKSTATS_H */
