/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_TASKSCHED_H
#define MOAT_TASKSCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * A thread's scheduling attributes, as sched_getattr(2) reads them and
 * sched_setattr(2) sets them, and what /proc says of the thread.  The
 * kernel keeps them per task: writing them changes nothing kubelet owns.
 *
 * The slice is EEVDF's request size (sched_attr::sched_runtime on a
 * SCHED_NORMAL or SCHED_BATCH task, v6.12+, 857b158dc5e8): 0 asks for
 * the kernel's default (sysctl_sched_base_slice), anything else is a
 * custom slice, clamped to 0.1..100 ms.  sched_getattr() reports the
 * slice in force, not whether it is custom, so a slice is taken as the
 * default when it equals the one the kernel gives a task that asks for
 * none (moat_sched_probe()).  Before 6.12 sched_runtime is ignored for
 * these policies and reads back as 0.
 *
 * Only the journal (journal.h) calls moat_sched_set(): every change is
 * recorded first.
 */

/* The policy's SCHED_RESET_ON_FORK bit, as sched_setscheduler(2) takes it. */
#define MOAT_SCHED_RESET_ON_FORK	0x40000000u

struct moat_sched {
	unsigned int policy;		/* SCHED_*, | MOAT_SCHED_RESET_ON_FORK */
	int nice;
	unsigned long long slice_ns;	/* 0: the kernel's default */
};

/* What /proc/<tid>/stat and status say of a thread. */
struct moat_task {
	pid_t tid, tgid, ppid;
	unsigned long long start;	/* since boot, in clock ticks: with
					   the tid, names one thread for good */
	bool kthread;			/* PF_KTHREAD */
};

/* What this kernel does with the attributes (moat_sched_caps()). */
struct moat_sched_caps {
	bool slice;			/* custom slices are kept */
	unsigned long long base_slice_ns;	/* the default; 0: unknown */
	int err;			/* why the probe could not set one */
};

/**
 * moat_task_read() - what /proc (below the host root) says of thread
 * @tid.  Return: 0, -ENOENT (gone), -EBADMSG, or -errno.
 */
int moat_task_read(pid_t tid, struct moat_task *t);

/**
 * moat_sched_get() - @tid's attributes; a slice equal to the kernel's
 * default reads as 0.  Return: 0 or -errno (-ESRCH: gone).
 */
int moat_sched_get(pid_t tid, struct moat_sched *s);

/** moat_sched_set() - set @tid's attributes (the journal's, only). */
int moat_sched_set(pid_t tid, const struct moat_sched *s);

/**
 * moat_sched_caps() - whether this kernel keeps custom slices, and its
 * default slice: found once per process, the first time it is asked, by
 * setting a custom slice on the calling thread, reading it back and
 * putting the thread's own back.
 */
const struct moat_sched_caps *moat_sched_caps(void);

/* "<policy>/<nice>/<slice ns>", as the journal keeps it; parse it back. */
int moat_sched_format(char *buf, size_t len, const struct moat_sched *s);
int moat_sched_parse(const char *buf, struct moat_sched *s);

/* Whether @a and @b are the same attributes. */
bool moat_sched_equal(const struct moat_sched *a, const struct moat_sched *b);

/* A policy's name: "normal", "batch", "idle", "fifo", ... */
const char *moat_sched_policy_name(unsigned int policy);

#endif /* MOAT_TASKSCHED_H */
